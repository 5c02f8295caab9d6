"""flash_attention against float64 torch SDPA, under the same-precision-reference rule.

Tolerance (kernels/harness/tolerance.py states the rule once; these tests call it): the
kernel's max error against the float64 golden value may be at most k = 2 times the error
that plain attention computed in the inputs' own dtype makes on the same inputs, plus a floor
of a few roundings of the dtype at the magnitude of the result (for gradients, at the size
of the terms they are summed from, reference.gradient_term_sizes, since those can cancel to
0). The factor 2 is FlashAttention's; the floor covers a plain reference that happens to be
exact. The golden values come from torch's own SDPA in float64, so the semantics checked
(scale, top-left causal with Nq ≠ Nk, GQA head mapping) are torch's.

On CPU the kernels run under Triton's interpreter (conftest), at lengths of a few hundred;
tests marked gpu repeat the checks compiled on CUDA at larger sizes.
"""
from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from kernels.flash import flash_attention, runtime
from kernels.flash.backward import attention_backward
from kernels.flash.forward import attention_forward
from kernels.harness import reference, tolerance

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
DEVICE = "cpu"


def make_inputs(b, hq, hkv, nq, nk, d, dtype, *, seed=0, device=DEVICE, dv=None):
    """q, k, v and an upstream gradient, drawn in float64 and rounded once; v and the
    gradient have head dim ``dv`` (default d)."""
    gen = torch.Generator().manual_seed(seed)
    dv = d if dv is None else dv
    shapes = ((b, hq, nq, d), (b, hkv, nk, d), (b, hkv, nk, dv), (b, hq, nq, dv))
    return tuple(torch.randn(*s, generator=gen, dtype=torch.float64).to(device=device, dtype=dtype) for s in shapes)


def scaled_scores(q, k, *, is_causal, scale, attn_mask=None):
    """scale · Q Kᵀ (+ an additive attn_mask) with −∞ where causality or a bool attn_mask
    hides a key, in q's dtype. (B, Hq, Nq, Nk)"""
    k = reference.repeat_kv(k, q.shape[1])  # (B, Hq, Nk, D)
    s = (q * scale) @ k.transpose(-2, -1)  # (B, Hq, Nq, Nk)
    if is_causal:
        s = s.masked_fill(~reference.causal_mask(q.shape[2], k.shape[2], q.device), float("-inf"))
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        s = s.masked_fill(~attn_mask, float("-inf"))
    elif attn_mask is not None:
        s = s + attn_mask.to(s.dtype)
    return s


def empty_rows(s):
    """Rows of scores with no visible key (every score −∞). (B, Hq, Nq, 1)"""
    return (s == float("-inf")).all(-1, keepdim=True)


def masked_softmax(s):
    """softmax over keys, 0 on rows with no visible key (SDPA's convention), with finite
    gradients there too (a plain softmax of an all −∞ row is NaN, and so is its gradient)."""
    empty = empty_rows(s)
    return torch.softmax(s.masked_fill(empty, 0.0), dim=-1).masked_fill(empty, 0.0)


def masked_lse(s):
    """logsumexp over keys, −∞ on rows with no visible key (as the kernel returns). (B, Hq, Nq)"""
    empty = empty_rows(s)
    return torch.logsumexp(s.masked_fill(empty, 0.0), dim=-1).masked_fill(empty[..., 0], float("-inf"))


def plain_attention(q, k, v, *, is_causal, scale, attn_mask=None):
    """The plain same-precision reference: softmax(scale · Q Kᵀ + mask) V in q's dtype, as
    reference.attention computes it, with an attn_mask. (B, Hq, Nq, Dv)"""
    if attn_mask is None:
        return reference.attention(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=True)
    p = masked_softmax(scaled_scores(q, k, is_causal=is_causal, scale=scale, attn_mask=attn_mask))
    return p @ reference.repeat_kv(v, q.shape[1])


def term_sizes(q, k, v, dout, *, is_causal, scale=None, attn_mask=None):
    """reference.gradient_term_sizes, with the attn_mask's weights P: every factor of the
    chain rule replaced by its absolute value (float64), the size rounding acts on."""
    if attn_mask is None:
        return reference.gradient_term_sizes(q, k, v, dout, is_causal=is_causal, scale=scale, enable_gqa=True)
    q, k, v, dout = (t.double() for t in (q, k, v, dout))
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    p = masked_softmax(scaled_scores(q, k, is_causal=is_causal, scale=scale, attn_mask=attn_mask))
    return reference.chain_rule_gradients(q.abs(), k.abs(), v.abs(), dout.abs(), p,
                                          lambda p, dp: p * (dp + (p * dp).sum(-1, keepdim=True)),
                                          scale=abs(scale), enable_gqa=True)


def run_flash(q, k, v, dout, *, is_causal, scale=None, with_lse_grad=False, attn_mask=None):
    """Output, lse and (dq, dk, dv) of flash_attention; the loss is <out, dout> (+ Σ lse)."""
    leaves = [t.detach().clone().requires_grad_(True) for t in (q, k, v)]
    out, lse = flash_attention(*leaves, attn_mask=attn_mask, is_causal=is_causal, scale=scale, enable_gqa=True,
                               return_lse=True)
    loss = (out.float() * dout.float()).sum() + (lse.masked_fill(lse.isinf(), 0).sum() if with_lse_grad else 0)
    grads = torch.autograd.grad(loss, leaves)
    return out.detach(), lse.detach(), grads


def run_reference(q, k, v, dout, *, is_causal, scale=None, with_lse_grad=False, golden=False, attn_mask=None):
    """The same quantities by autograd: torch SDPA in float64 (golden) or plain attention in q's dtype."""
    dtype = torch.float64 if golden else q.dtype
    leaves = [t.detach().to(dtype).requires_grad_(True) for t in (q, k, v)]
    scale_ = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    mask = attn_mask
    if attn_mask is not None and attn_mask.dtype != torch.bool:
        mask = attn_mask.to(dtype)  # SDPA takes an additive mask in the inputs' dtype
    if golden:
        out = F.scaled_dot_product_attention(*leaves, attn_mask=mask, is_causal=is_causal, scale=scale_,
                                             enable_gqa=True)
    else:
        out = plain_attention(*leaves, is_causal=is_causal, scale=scale_, attn_mask=mask)
    lse = masked_lse(scaled_scores(leaves[0], leaves[1], is_causal=is_causal, scale=scale_, attn_mask=mask))
    loss = (out * dout.to(dtype)).sum() + (lse.masked_fill(lse.isinf(), 0).sum() if with_lse_grad else 0)
    grads = torch.autograd.grad(loss, leaves)
    return out.detach(), lse.detach(), grads


def assert_within_rule(name, observed, golden, plain, dtype, size=None):
    """error(observed) <= 2·error(plain same-precision reference) + floor, the floor in
    roundings at the magnitude `size` (default: golden), as kernels.harness.tolerance states."""
    err = tolerance.max_abs_error(observed, golden)
    bound = tolerance.bound(dtype, tolerance.max_abs_error(plain, golden), golden if size is None else size)
    assert err <= bound, f"{name} ({dtype}): max error {err:.3g} exceeds bound {bound:.3g}"
    return err, bound


def check_against_references(q, k, v, dout, *, is_causal, scale=None, with_lse_grad=False, attn_mask=None):
    dtype = q.dtype
    kw = dict(is_causal=is_causal, scale=scale, with_lse_grad=with_lse_grad, attn_mask=attn_mask)
    out, lse, grads = run_flash(q, k, v, dout, **kw)
    g_out, g_lse, g_grads = run_reference(q, k, v, dout, golden=True, **kw)
    p_out, p_lse, p_grads = run_reference(q, k, v, dout, **kw)
    assert out.dtype == dtype and out.shape == (*q.shape[:3], v.shape[3])
    assert lse.dtype == torch.float32 and lse.shape == q.shape[:3]
    assert_within_rule("out", out, g_out, p_out, dtype)
    # The lse is float32 whatever the inputs; its plain reference is torch.logsumexp in their dtype.
    assert_within_rule("lse", lse, g_lse, p_lse, dtype)
    # Gradients are sums of terms that can cancel (one key: dS = P∘(dP − D) = 0 exactly), so
    # their floor sits at the size of the terms, not of the (possibly zero) result.
    sizes = term_sizes(q, k, v, dout, is_causal=is_causal, scale=scale, attn_mask=attn_mask)
    for name, g, gg, pg, size, t in zip(("dq", "dk", "dv"), grads, g_grads, p_grads, sizes, (q, k, v)):
        assert g.dtype == dtype and g.shape == t.shape
        assert_within_rule(name, g, gg, pg, dtype, size)
    return out, lse, grads


# -- the rule itself can fail ---------------------------------------------------------------

def test_rule_rejects_a_kernel_that_drops_a_rescale():
    """An output that forgets the exp(m_old − m_new) rescale on one block fails the rule."""
    q, k, v, dout = make_inputs(1, 1, 1, 8, 16, 16, torch.float32, seed=3)
    golden = F.scaled_dot_product_attention(q.double(), k.double(), v.double())
    plain = reference.attention(q, k, v)
    s = (q.double() @ k.double().mT) / 4  # (1, 1, 8, 16)
    first, second = s[..., :8], s[..., 8:]
    m1, m = first.amax(-1, keepdim=True), s.amax(-1, keepdim=True)
    acc = torch.exp(first - m1) @ v.double()[..., :8, :] + torch.exp(second - m) @ v.double()[..., 8:, :]
    l = torch.exp(first - m1).sum(-1, keepdim=True) + torch.exp(second - m).sum(-1, keepdim=True)
    with pytest.raises(AssertionError, match="exceeds bound"):
        assert_within_rule("out", (acc / l).float(), golden, plain, torch.float32)


# -- forward, lse and backward ------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
def test_matches_float64_reference(dtype, is_causal):
    """Lengths that are no block multiple, Nq < Nk, GQA, a padded head dim (40 -> 64)."""
    q, k, v, dout = make_inputs(1, 4, 2, 70, 113, 40, dtype, seed=1)
    check_against_references(q, k, v, dout, is_causal=is_causal)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_causal_with_more_queries_than_keys(dtype):
    """Top-left causal with Nq > Nk: rows past Nk see every key (as SDPA); none is empty."""
    q, k, v, dout = make_inputs(2, 2, 2, 150, 67, 32, dtype, seed=2)
    check_against_references(q, k, v, dout, is_causal=True)


@pytest.mark.parametrize("n_q, n_k", [(1, 147), (113, 203), (1, 1), (65, 64)])
def test_backward_at_lengths_that_are_no_block_multiple(n_q, n_k):
    q, k, v, dout = make_inputs(1, 2, 2, n_q, n_k, 64, torch.float16, seed=n_q + n_k)
    check_against_references(q, k, v, dout, is_causal=True)


@pytest.mark.parametrize("heads_q, heads_kv", [(6, 2), (4, 1)], ids=["gqa", "mqa"])
def test_gqa_gradients_sum_over_each_group(heads_q, heads_kv):
    q, k, v, dout = make_inputs(1, heads_q, heads_kv, 67, 90, 32, torch.float32, seed=heads_q)
    check_against_references(q, k, v, dout, is_causal=True)
    # The same gradients as MHA on repeated K, V with the per-head gradients summed per group.
    _, _, (dq, dk, dv) = run_flash(q, k, v, dout, is_causal=True)
    group = heads_q // heads_kv
    rep = [t.repeat_interleave(group, dim=1) for t in (k, v)]
    _, _, (dq_mha, dk_mha, dv_mha) = run_flash(q, *rep, dout, is_causal=True)
    torch.testing.assert_close(dq, dq_mha, rtol=0, atol=0)
    for g, g_mha in ((dk, dk_mha), (dv, dv_mha)):
        summed = g_mha.reshape(g.shape[0], heads_kv, group, *g.shape[2:]).sum(2)  # (B, Hkv, Nk, D)
        torch.testing.assert_close(g, summed, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("d, dv, is_causal", [(40, 72, True), (64, 16, False), (32, 128, True)],
                         ids=["40-72-causal", "64-16-full", "32-128-causal"])
def test_value_head_dim_differs_from_query_head_dim(dtype, d, dv, is_causal):
    """Dv ≠ D, as SDPA allows: out and dv are (…, Dv), dq and dk (…, D); with GQA and tails."""
    q, k, v, dout = make_inputs(1, 4, 2, 70, 90, d, dtype, seed=d + dv, dv=dv)
    check_against_references(q, k, v, dout, is_causal=is_causal)


def test_lse_is_differentiable():
    """∂lse/∂s = softmax(s): a loss through the returned lse gets the right gradients."""
    q, k, v, dout = make_inputs(1, 2, 1, 40, 75, 16, torch.float32, seed=4)
    check_against_references(q, k, v, dout, is_causal=True, with_lse_grad=True)


def test_explicit_scale_and_extreme_negative_scores():
    """Every visible score near −1e4, rows nearly one-hot: a finite mask sentinel (−1e4 and the
    like) would win here, and a backward that recomputed P from differently rounded scores
    than the forward's (or from a natural lse converted to base 2) would move p_max off 1 by
    ~1e-3 where the plain reference keeps it exact (measured: dv 7× over the bound)."""
    gen = torch.Generator().manual_seed(5)
    q = -(1 + 0.05 * torch.randn(1, 2, 70, 32, generator=gen))
    k = 1 + 0.05 * torch.randn(1, 2, 70, 32, generator=gen)
    v, dout = torch.randn(1, 2, 70, 32, generator=gen), torch.randn(1, 2, 70, 32, generator=gen)
    check_against_references(q, k, v, dout, is_causal=True, scale=1e4 / 32)


def test_default_scale_is_one_over_sqrt_head_dim():
    q, k, v, _ = make_inputs(1, 1, 1, 20, 30, 48, torch.float32, seed=6)
    torch.testing.assert_close(flash_attention(q, k, v), flash_attention(q, k, v, scale=48 ** -0.5), rtol=0, atol=0)
    assert not torch.allclose(flash_attention(q, k, v), flash_attention(q, k, v, scale=1.0))


@pytest.mark.parametrize("head_dim", [16, 80, 96, 256])
def test_head_dims(head_dim):
    q, k, v, dout = make_inputs(1, 1, 1, 33, 70, head_dim, torch.float16, seed=head_dim)
    check_against_references(q, k, v, dout, is_causal=False)


def test_non_contiguous_inputs_give_the_contiguous_result():
    """(B, N, H, D) storage seen as (B, H, N, D), and a last-dim stride of 2: no copy, same bits."""
    q, k, v, dout = make_inputs(1, 4, 2, 70, 90, 32, torch.float16, seed=7)
    q_t = q.transpose(1, 2).contiguous().transpose(1, 2)  # strides of a (B, N, H, D) tensor
    k_s = torch.zeros(*k.shape[:3], 64, dtype=k.dtype)
    k_s[..., ::2] = k
    k_s = k_s[..., ::2]  # last-dim stride 2
    v_t = v.transpose(1, 2).contiguous().transpose(1, 2)
    dout_t = dout.transpose(1, 2).contiguous().transpose(1, 2)
    assert not (q_t.is_contiguous() or k_s.is_contiguous() or v_t.is_contiguous())
    out, lse, grads = run_flash(q, k, v, dout, is_causal=True)
    out_nc, lse_nc, grads_nc = run_flash(q_t, k_s, v_t, dout_t, is_causal=True)
    for a, b in zip((out, lse, *grads), (out_nc, lse_nc, *grads_nc)):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_rows_with_no_visible_key_give_zero_like_torch():
    """Top-left causal never empties a row (key 0 is always visible), so the public API cannot
    produce one; with zero keys the launcher can. Such rows get output 0 and lse −∞, which is
    what torch's SDPA returns on CPU for a row whose mask hides every key, and no NaN."""
    q, k, v, dout = make_inputs(1, 2, 2, 70, 1, 16, torch.float32, seed=11)
    k0, v0 = k[:, :, :0], v[:, :, :0]  # (1, 2, 0, 16)
    out = torch.full_like(q, float("nan"))
    lse2 = torch.full(q.shape[:3], float("nan"))
    attention_forward(q, k0, v0, out, lse2, scale=0.25, is_causal=True)
    hidden = torch.zeros(70, 1, dtype=torch.bool)  # every key masked
    torch_out = F.scaled_dot_product_attention(q, k, v, attn_mask=hidden, scale=0.25)
    torch.testing.assert_close(torch_out, torch.zeros_like(q), rtol=0, atol=0)
    torch.testing.assert_close(out, torch_out, rtol=0, atol=0)
    assert (lse2 == float("-inf")).all()
    dq = torch.full_like(q, float("nan"))
    attention_backward(q, k0, v0, out, lse2, dout, None, dq, torch.empty_like(k0), torch.empty_like(v0),
                       scale=0.25, is_causal=True)
    torch.testing.assert_close(dq, torch.zeros_like(q), rtol=0, atol=0)


def _tile_shapes():
    """The (BLOCK_M, BLOCK_N) shapes the GPU's autotuning may pick, other than the interpreter's."""
    shapes = {(bm, bn) for bm, bn, _, _ in runtime._FORWARD + runtime._BACKWARD}
    return sorted(shapes - {(64, 64)})


@pytest.mark.parametrize("n_q, n_k", [(70, 93), (93, 70)])
@pytest.mark.parametrize("tiles", _tile_shapes(), ids=lambda t: f"{t[0]}x{t[1]}")
def test_gpu_tile_shapes_run_interpreted(tiles, n_q, n_k):
    """Loop bounds (causal diagonal, tails) with BLOCK_M != BLOCK_N, as only a GPU would pick them."""
    q, k, v, dout = make_inputs(1, 2, 1, n_q, n_k, 32, torch.float16, seed=12)
    scale = 32 ** -0.5
    out, lse2 = torch.empty_like(q), torch.empty(q.shape[:3])
    attention_forward(q, k, v, out, lse2, scale=scale, is_causal=True, tiles=tiles)
    grads = [torch.empty_like(t) for t in (q, k, v)]
    attention_backward(q, k, v, out, lse2, dout, None, *grads, scale=scale, is_causal=True, tiles=tiles)
    g_out, g_lse, g_grads = run_reference(q, k, v, dout, is_causal=True, golden=True)
    p_out, p_lse, p_grads = run_reference(q, k, v, dout, is_causal=True)
    assert_within_rule("out", out, g_out, p_out, q.dtype)
    assert_within_rule("lse", lse2 * math.log(2), g_lse, p_lse, q.dtype)
    sizes = reference.gradient_term_sizes(q, k, v, dout, is_causal=True, enable_gqa=True)
    for name, g, gg, pg, size in zip(("dq", "dk", "dv"), grads, g_grads, p_grads, sizes):
        assert_within_rule(name, g, gg, pg, q.dtype, size)


# -- out-of-bounds safety -------------------------------------------------------------------

MARGIN = 3


def guarded(shape, fill, dtype):
    """A view of `shape` inside a buffer with MARGIN extra elements on both sides of every dim,
    everything outside the view set to `fill`. Returns (view, buffer)."""
    buffer = torch.full([n + 2 * MARGIN for n in shape], fill, dtype=dtype)
    view = buffer[tuple(slice(MARGIN, MARGIN + n) for n in shape)]
    return view, buffer


def outside(view, buffer):
    """The buffer's guard region (everything except the view), flattened."""
    inside = torch.zeros_like(buffer, dtype=torch.bool)
    inside[tuple(slice(MARGIN, MARGIN + n) for n in view.shape)] = True
    return buffer[~inside]


@pytest.mark.parametrize("dtype, is_causal", [(torch.float32, False), (torch.bfloat16, True)],
                         ids=["float32-full", "bfloat16-causal"])
def test_no_out_of_bounds_reads_or_writes(dtype, is_causal):
    """Inputs live inside NaN-filled buffers, so any unmasked read leaks NaN into a result;
    outputs are poisoned with NaN before launch, so any unwritten element stays NaN; the
    outputs' guard regions must still be all NaN after, so no write went outside."""
    shape_q, shape_kv = (2, 2, 70, 40), (2, 1, 77, 40)  # tails in both lengths, D padded to 64, GQA
    plain = make_inputs(*shape_q[:2], shape_kv[1], shape_q[2], shape_kv[2], 40, dtype, seed=8)
    inputs = []
    for t in plain:
        view, _ = guarded(t.shape, float("nan"), dtype)
        view.copy_(t)
        inputs.append(view)
    q, k, v, dout = inputs
    scale = 40 ** -0.5
    out, out_buf = guarded(shape_q, float("nan"), dtype)
    lse2, lse_buf = guarded(shape_q[:3], float("nan"), torch.float32)
    attention_forward(q, k, v, out, lse2, scale=scale, is_causal=is_causal)
    grads = [guarded(t.shape, float("nan"), dtype) for t in (q, k, v)]
    attention_backward(q, k, v, out, lse2, dout, None, *(g for g, _ in grads), scale=scale, is_causal=is_causal)

    for name, view, buf in (("out", out, out_buf), ("lse2", lse2, lse_buf),
                            *((n, g, b) for n, (g, b) in zip(("dq", "dk", "dv"), grads))):
        assert not view.isnan().any(), f"{name}: NaN inside: an element unwritten or an unmasked read"
        assert outside(view, buf).isnan().all(), f"{name}: the guard region was written"
    # And the guarded run computes exactly what the public API computes on contiguous inputs.
    ref_out, ref_lse, ref_grads = run_flash(*plain, is_causal=is_causal, scale=scale)
    for a, b in zip((out, lse2 * math.log(2), *(g for g, _ in grads)), (ref_out, ref_lse, *ref_grads)):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_guard_check_sees_a_stray_write():
    view, buf = guarded((2, 3), float("nan"), torch.float32)
    view.fill_(1.0)
    assert outside(view, buf).isnan().all()
    buf[0, 0] = 0.0
    assert not outside(view, buf).isnan().all()


def test_no_floating_point_exceptions_in_the_kernels():
    """Padded rows see no key at all (the tail query block runs masked): the kernels guard
    −∞ − (−∞), 0/0 and log 0. The interpreter computes with NumPy, so make NumPy raise on
    any invalid, divide-by-zero or overflowing operation while they run."""
    q, k, v, dout = make_inputs(1, 2, 2, 70, 77, 16, torch.float32, seed=9)
    with np.errstate(all="raise"):
        out, lse, grads = run_flash(q, k, v, dout, is_causal=True)
    assert all(t.isfinite().all() for t in (out, lse, *grads))
    with np.errstate(all="raise"), pytest.raises(FloatingPointError):  # the check can fail
        np.array([-np.inf]) - np.array([-np.inf])


# -- shapes drawn by hypothesis -------------------------------------------------------------

@settings(max_examples=5, deadline=None, derandomize=True)
@given(batch=st.integers(1, 2), heads_kv=st.integers(1, 2), group=st.integers(1, 3),
       n_q=st.integers(1, 130), n_k=st.integers(1, 130), head_dim=st.sampled_from([16, 24, 40, 64]),
       dtype=st.sampled_from(DTYPES), is_causal=st.booleans(), seed=st.integers(0, 2**16))
def test_random_shapes(batch, heads_kv, group, n_q, n_k, head_dim, dtype, is_causal, seed):
    q, k, v, dout = make_inputs(batch, heads_kv * group, heads_kv, n_q, n_k, head_dim, dtype, seed=seed)
    check_against_references(q, k, v, dout, is_causal=is_causal)


# -- CPU without the interpreter ------------------------------------------------------------

def test_cpu_tensors_without_the_interpreter_raise_and_say_how():
    env = {key: val for key, val in os.environ.items() if key != "TRITON_INTERPRET"}
    code = ("import torch\nfrom kernels import flash_attention\nx = torch.randn(1, 1, 4, 16)\n"
            "try:\n    flash_attention(x, x, x)\nexcept RuntimeError as e:\n    print(e)\n")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "TRITON_INTERPRET=1" in result.stdout


# -- compiled on a GPU, larger -----------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("shape", [(2, 8, 2, 1023, 1024, 128), (1, 4, 4, 113, 2047, 256), (3, 6, 3, 1, 4099, 80)],
                         ids=["gqa-1023x1024-d128", "113x2047-d256", "1x4099-d80"])
def test_gpu_matches_float64_reference(dtype, is_causal, shape):
    q, k, v, dout = make_inputs(*shape, dtype, seed=sum(shape), device="cuda")
    check_against_references(q, k, v, dout, is_causal=is_causal)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_gpu_no_out_of_bounds_writes(dtype):
    b, hq, hkv, nq, nk, d = 2, 4, 2, 1000, 777, 96
    q, k, v, dout = make_inputs(b, hq, hkv, nq, nk, d, dtype, seed=10, device="cuda")
    out = torch.full((b, hq, nq + 2 * MARGIN, d + 2 * MARGIN), float("nan"), dtype=dtype, device="cuda")
    lse = torch.full((b, hq, nq + 2 * MARGIN), float("nan"), device="cuda")
    out_view, lse_view = out[:, :, MARGIN:-MARGIN, MARGIN:-MARGIN], lse[:, :, MARGIN:-MARGIN]
    attention_forward(q, k, v, out_view, lse_view, scale=d ** -0.5, is_causal=True)
    assert not out_view.isnan().any() and not lse_view.isnan().any()
    assert out[:, :, :MARGIN].isnan().all() and out[:, :, -MARGIN:].isnan().all()
    assert out[..., :MARGIN].isnan().all() and out[..., -MARGIN:].isnan().all()
    assert lse[..., :MARGIN].isnan().all() and lse[..., -MARGIN:].isnan().all()
