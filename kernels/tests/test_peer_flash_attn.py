"""FlashAttention's output and gradient test, its rules and shapes ported to flash_attention.

Source: Dao-AILab/flash-attention, hopper/test_flash_attn.py ``test_flash_attn_output`` (read at
commit 01afd16d) and, for dropout, tests/test_flash_attn.py ``test_flash_attn_output`` of
FlashAttention 2 (dropout_p ∈ {0, 0.17}, checked with the dropout mask the kernel used, and the
kept fraction within 0.01 of 1 − p; its dropout rule is from memory of that file, not re-read).
The rules:
- the reference ``out_ref`` is attention computed in float32 from the low-precision inputs
  (upcast), returned in their dtype; ``out_pt`` is the same attention computed in the low
  precision itself with the scale moved from q to k (reorder_ops), to estimate the error of
  merely reordering the operations;
- the test: max|out − out_ref| <= 2·max|out_pt − out_ref| + fwd_atol, with
  fwd_atol = 2·max|(out_ref + 0.3 − 0.3) − out_ref| (two roundings at |x| + 0.3, in the dtype);
  the same for dq, dk, dv against autograd through out_ref and out_pt, dout ~ N(0, 1);
- dtypes bfloat16 and float16; mha / mqa / gqa with 6 query heads over 6 / 1 / 2 KV heads;
  head dims d ∈ {64, 96, 128, 192, 256} and value head dims Dv ∈ {256, 512, d} for d <= 64,
  {128, d} for 128 < d <= 192 (Dv = 512 is out of this kernel's range, <= 256: left out);
- the awkward (seqlen_q, seqlen_k) pairs below, and causal with Nq ≠ Nk.

Causal alignment: FlashAttention (>= 2.1) aligns the causal mask bottom-right, query i sees key
j iff j <= i + Nk − Nq; SDPA and flash_attention's is_causal align it top-left, j <= i. They
coincide only when Nq = Nk. So FlashAttention's causal case is run here as flash_attention with
the bottom-right mask given as a bool attn_mask (tril with diagonal Nk − Nq, is_causal=False);
rows i < Nq − Nk then see no key, and both FlashAttention's reference and flash_attention give
them output 0 (e.g. (239, 1): 238 empty rows). flash_attention's own is_causal=True is also run
against the same references with the top-left mask, for every pair.

Shrunk for the interpreter: batch 1 (upstream 9), two causal kinds per pair (FlashAttention's
bottom-right always, no mask or top-left in turn), one (d, Dv, dtype, head layout) per case
rotating through the lists above instead of their full product, and the longest pairs
((1024, 1024) up to (4224, 4224), (512, 256)) left out, and (799, 3), (384, 256), (640, 128),
(256, 512) marked slow (CI runs them).
"""
import math

import pytest
import torch

from kernels.flash import flash_attention
from kernels.tests.test_flash_dropout import keep_mask

# FlashAttention 2's pairs (tests/test_flash_attn.py), the ones it also runs with dropout
FA2_SEQLENS = [(113, 203), (128, 217), (113, 211), (108, 256), (256, 512), (512, 256)]
SEQLENS = [(1, 1), (64, 128), (128, 192), (239, 1), (113, 203), (113, 128), (128, 217), (113, 211), (108, 256)]
SLOW_SEQLENS = [(799, 3), (384, 256), (640, 128), (256, 512)]
HEAD_DIMS = [(64, 64), (64, 256), (96, 96), (128, 128), (192, 128), (192, 192), (256, 256)]  # (d, Dv)
MHA_TYPES = {"mha": 6, "mqa": 1, "gqa": 2}  # KV heads under 6 query heads
DTYPES = [torch.bfloat16, torch.float16]
CAUSAL = ["none", "bottom-right", "top-left"]
BATCH, HEADS = 1, 6


def cases(seqlens, *, start=0):
    """Two cases per pair: d/Dv, dtype and head layout rotate with the case number,
    so every value of each list is met; dropout 0.17 on one causal kind of each of FlashAttention
    2's pairs (its dropout test's; a dropped one-key row is not in its rule's reach: the kernel's
    D = rowsum(dO ∘ O) uses O rounded to the dtype, exact without dropout, O = v, but not
    with it, O = v/(1 − p), while the references' dq is exactly 0)."""
    out = []
    # FlashAttention's own causal (bottom-right) for every pair, and "none" or "top-left" in turn
    kinds = [(s, c) for j, s in enumerate(seqlens) for c in ("bottom-right", CAUSAL[(j + start) % 2 * 2])]
    for i, ((nq, nk), causal) in enumerate(kinds, start=start):
        d, dv = HEAD_DIMS[i % len(HEAD_DIMS)]
        # the keep mask is read with one-hot values, Dv = Nk, so Nk within the kernel's head dims
        dropout = 0.17 if (nq, nk) in FA2_SEQLENS and causal == "bottom-right" and nk <= 256 else 0.0
        out.append((nq, nk, causal, d, dv, DTYPES[i % 2], list(MHA_TYPES)[i % 3], dropout))
    return out


def case_id(c):
    nq, nk, causal, d, dv, dtype, mha, p = c
    return f"{nq}x{nk}-{causal}-d{d}-dv{dv}-{str(dtype)[6:]}-{mha}" + (f"-dropout{p}" if p else "")


def causal_mask(nq, nk, causal):
    """The visible pairs (Nq, Nk) bool, or None for no mask."""
    if causal == "none":
        return None
    diagonal = nk - nq if causal == "bottom-right" else 0
    return torch.ones(nq, nk, dtype=torch.bool).tril(diagonal=diagonal)


def attention_ref(q, k, v, visible, *, keep=None, dropout_p=0.0, upcast=True, reorder_ops=False):
    """FlashAttention's reference rule on (B, H, N, D) tensors: computed in float32 (upcast) or in
    the inputs' dtype with the scale moved to k (reorder_ops); fully masked rows give 0; the
    result in the inputs' dtype."""
    dtype = q.dtype
    if upcast:
        q, k, v = q.float(), k.float(), v.float()
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    d = q.shape[-1]
    scores = q @ (k / math.sqrt(d)).mT if reorder_ops else (q / math.sqrt(d)) @ k.mT  # (B, H, Nq, Nk)
    if visible is not None:
        scores = scores.masked_fill(~visible, float("-inf"))
    empty = (scores == float("-inf")).all(-1, keepdim=True)
    attention = torch.softmax(scores.masked_fill(empty, 0.0), dim=-1).masked_fill(empty, 0.0).to(v.dtype)
    if keep is not None:
        attention = attention.masked_fill(~keep, 0.0)
    return (attention @ (v * (1.0 / (1.0 - dropout_p)))).to(dtype)


def rounding_atol(x):
    """2·max|(x + 0.3 − 0.3) − x| in x's dtype: FlashAttention's absolute slack, evaluated as its
    CUDA tests evaluate it (each operation in float32, its result rounded to the dtype: about
    two roundings at |x| + 0.3). torch on CPU instead rounds the scalar 0.3 to the dtype first,
    which makes the slack vanish at x = 0 (then a single-key row, whose dq is exactly 0 in the
    references, would have to be exactly 0 in the kernel too)."""
    f = x.float()
    y = (f + 0.3).to(x.dtype).float()
    z = (y - 0.3).to(x.dtype).float()
    return 2 * float((z - f).to(x.dtype).abs().max())


def run_case(nq, nk, causal, d, dv, dtype, mha, dropout_p):
    torch.manual_seed(0)
    hkv = MHA_TYPES[mha]
    # FlashAttention's (B, S, H, D) layout, handed over as (B, H, S, D) views: strided inputs
    q, k, v = (torch.randn(BATCH, n, h, dim).to(dtype).transpose(1, 2)
               for n, h, dim in ((nq, HEADS, d), (nk, hkv, d), (nk, hkv, dv)))
    g = torch.randn(BATCH, HEADS, nq, dv).to(dtype)
    visible = causal_mask(nq, nk, causal)
    seed, keep = 1234, None
    if dropout_p:
        keep = keep_mask(q, k, p=dropout_p, seed=seed, attn_mask=visible, is_causal=causal == "top-left")
        kept = float(keep[(visible if visible is not None else torch.ones(nq, nk, dtype=torch.bool))
                          .expand_as(keep)].float().mean())
        assert abs((1 - kept) - dropout_p) <= 0.01 or keep.numel() < 10_000  # FA2's check, where N is large

    def flash(*t):
        torch.manual_seed(seed)
        if causal == "top-left":
            return flash_attention(*t, dropout_p=dropout_p, is_causal=True, enable_gqa=True)
        return flash_attention(*t, attn_mask=visible, dropout_p=dropout_p, enable_gqa=True)

    leaves = [t.detach().clone().requires_grad_(True) for t in (q, k, v)]
    ref_leaves = [t.detach().clone().requires_grad_(True) for t in (q, k, v)]
    out = flash(*leaves)
    out_ref = attention_ref(*ref_leaves, visible, keep=keep, dropout_p=dropout_p)
    out_pt = attention_ref(*ref_leaves, visible, keep=keep, dropout_p=dropout_p, upcast=False, reorder_ops=True)
    results = [("out", out.detach(), out_ref.detach(), out_pt.detach())]
    grads = torch.autograd.grad(out, leaves, g)
    grads_ref = torch.autograd.grad(out_ref, ref_leaves, g)
    grads_pt = torch.autograd.grad(out_pt, ref_leaves, g)
    results += list(zip(("dq", "dk", "dv"), grads, grads_ref, grads_pt))
    if causal != "none" and nq > nk and causal == "bottom-right":
        assert (out[:, :, :nq - nk] == 0).all()  # rows that see no key
    for name, x, ref, pt in results:
        err, pt_err = float((x - ref).abs().max()), float((pt - ref).abs().max())
        bound = 2 * pt_err + rounding_atol(ref)
        assert err <= bound, f"{name}: max error {err:.3g} > 2 × {pt_err:.3g} + {rounding_atol(ref):.3g}"


CASES = cases(SEQLENS)
SLOW_CASES = cases(SLOW_SEQLENS, start=len(CASES))


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_flash_attn_output(case):
    run_case(*case)


@pytest.mark.slow
@pytest.mark.parametrize("case", SLOW_CASES, ids=[case_id(c) for c in SLOW_CASES])
def test_flash_attn_output_long(case):
    run_case(*case)


def test_the_rule_rejects_top_left_where_flash_attn_means_bottom_right():
    """The alignment matters and the rule sees it: flash_attention's top-left is_causal judged
    against FlashAttention's bottom-right reference fails on (113, 203)."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, n, 64).half() for n in (113, 203, 203))
    visible = causal_mask(113, 203, "bottom-right")
    out = flash_attention(q, k, v, is_causal=True)
    ref = attention_ref(q, k, v, visible)
    pt = attention_ref(q, k, v, visible, upcast=False, reorder_ops=True)
    assert float((out - ref).abs().max()) > 2 * float((pt - ref).abs().max()) + rounding_atol(ref)


def test_every_list_value_is_met():
    met = CASES + SLOW_CASES
    assert {(c[3], c[4]) for c in met} == set(HEAD_DIMS)
    assert {c[5] for c in met} == set(DTYPES) and {c[6] for c in met} == set(MHA_TYPES)
    assert {c[2] for c in met} == set(CAUSAL) and {c[7] for c in met} == {0.0, 0.17}
    # each of FlashAttention 2's pairs here is also run with dropout
    assert {(c[0], c[1]) for c in met if c[7]} == {s for s in set(FA2_SEQLENS) & set(SEQLENS + SLOW_SEQLENS)
                                                   if s[1] <= 256}
