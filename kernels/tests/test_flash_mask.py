"""flash_attention with attn_mask against float64 torch SDPA, under the same-precision-reference rule.

The rule and the references are test_flash.py's (kernels/harness/tolerance.py states the rule):
the golden value is torch's SDPA in float64 with the same mask, the plain reference is
softmax(scale · Q Kᵀ + mask) V in the inputs' dtype. Masks are bool (True = attend) or additive,
in every shape that broadcasts to (B, Hq, Nq, Nk), and in odd strides. A row whose every key is
hidden gets output 0, lse −∞ and zero gradients: torch 2.13's SDPA on CPU gives 0 there (checked
below, so a change in torch shows up here).
"""
import pytest
import torch

import kernels.flash.api as api
from kernels.flash import flash_attention
from kernels.tests.test_flash import (DTYPES, assert_within_rule, check_against_references, make_inputs,
                                      run_flash, run_reference)

B, HQ, HKV, NQ, NK = 2, 4, 2, 70, 90


def random_bool_mask(shape, *, seed, keep=0.7, empty_rows=(3, 64)):
    """True = attend with probability ``keep``; the listed query rows hide every key."""
    gen = torch.Generator().manual_seed(seed)
    mask = torch.rand(shape, generator=gen) < keep
    for row in empty_rows:
        mask[..., row, :] = False
    return mask


def random_additive_mask(shape, dtype, *, seed, empty_rows=(3, 64)):
    """Finite biases of a few units, −∞ for about a fifth of the pairs, every key of the
    listed rows −∞."""
    gen = torch.Generator().manual_seed(seed)
    mask = 2 * torch.randn(shape, generator=gen)
    mask = mask.masked_fill(torch.rand(shape, generator=gen) < 0.2, float("-inf"))
    for row in empty_rows:
        mask[..., row, :] = float("-inf")
    return mask.to(dtype)


def test_torch_sdpa_gives_zero_on_rows_with_no_visible_key():
    """The convention followed here is torch's (measured, torch 2.13 CPU): output 0, gradients 0."""
    q, k, v, dout = make_inputs(1, 1, 1, 4, 6, 8, torch.float32, seed=0)
    for mask in (torch.tensor([[False] * 6] + [[True] * 6] * 3),
                 torch.tensor([[float("-inf")] * 6] + [[0.0] * 6] * 3)):
        out, _, (dq, _, _) = run_reference(q, k, v, dout, is_causal=False, golden=True, attn_mask=mask)
        assert (out[..., 0, :] == 0).all() and (dq[..., 0, :] == 0).all()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_bool_mask(dtype):
    q, k, v, dout = make_inputs(B, HQ, HKV, NQ, NK, 40, dtype, seed=1)
    mask = random_bool_mask((B, HQ, NQ, NK), seed=1)
    out, lse, (dq, _, _) = check_against_references(q, k, v, dout, is_causal=False, attn_mask=mask)
    # Rows with no visible key: exactly 0, −∞, and no gradient.
    for t in (out, dq):
        assert (t[..., [3, 64], :] == 0).all()
    assert (lse[..., [3, 64]] == float("-inf")).all()
    assert torch.isfinite(lse[..., 4]).all()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("mask_dtype", ["float32", "q's dtype"])
def test_additive_mask(dtype, mask_dtype):
    q, k, v, dout = make_inputs(B, HQ, HKV, NQ, NK, 40, dtype, seed=2)
    mask = random_additive_mask((B, 1, NQ, NK), torch.float32 if mask_dtype == "float32" else dtype, seed=2)
    out, lse, _ = check_against_references(q, k, v, dout, is_causal=False, attn_mask=mask, with_lse_grad=True)
    assert (out[..., [3, 64], :] == 0).all() and (lse[..., [3, 64]] == float("-inf")).all()


@pytest.mark.parametrize("shape", [(NQ, NK), (1, NK), (NQ, 1), (B, 1, 1, NK), (HQ, NQ, NK), (1, HQ, NQ, NK),
                                   (B, HQ, 1, NK)], ids=str)
def test_every_broadcast_shape(shape):
    """SDPA's broadcasting from 2 to 4 dims; the head dim is the query heads' (GQA: 4 over 2)."""
    q, k, v, dout = make_inputs(B, HQ, HKV, NQ, NK, 32, torch.float16, seed=3)
    mask = random_bool_mask(shape, seed=3, empty_rows=())
    if shape[-2] == NQ:  # an empty row, where the shape has rows
        mask[..., 5, :] = False
    check_against_references(q, k, v, dout, is_causal=False, attn_mask=mask)


def test_odd_strides_and_broadcast_views_are_read_in_place(monkeypatch):
    """A transposed (Nk-major) mask and an expanded view: the kernels get a view of the
    caller's storage (stride 0 along broadcast dims), never a (B, Hq, Nq, Nk) copy; the
    results equal those of the same mask made contiguous."""
    q, k, v, dout = make_inputs(B, HQ, HKV, NQ, NK, 32, torch.float32, seed=4)
    base = random_additive_mask((NK, NQ), torch.float32, seed=4, empty_rows=()).mT  # (NQ, NK), strides (1, NQ)
    views = {"transposed": base, "expanded": base.expand(B, HQ, NQ, NK)}
    seen = []
    forward = api.attention_forward

    def spy(*args, extras, **kw):
        seen.append(extras.mask)
        return forward(*args, extras=extras, **kw)

    monkeypatch.setattr(api, "attention_forward", spy)
    expected = run_flash(q, k, v, dout, is_causal=False, attn_mask=base.contiguous())
    for name, mask in views.items():
        got = run_flash(q, k, v, dout, is_causal=False, attn_mask=mask)
        kernel_mask = seen[-1]
        assert kernel_mask.data_ptr() == base.data_ptr(), name
        assert kernel_mask.stride()[:2] == (0, 0) and kernel_mask.stride()[2:] == (1, NQ), name
        for a, b in zip((got[0], got[1], *got[2]), (expected[0], expected[1], *expected[2])):
            torch.testing.assert_close(a, b, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_causal_as_a_bool_mask_equals_is_causal(dtype):
    """The top-left causal mask passed as attn_mask gives is_causal's results bit for bit:
    the blocks is_causal skips contribute exp2(−∞) = 0 and rescale by exp2(0) = 1."""
    q, k, v, dout = make_inputs(1, 2, 1, 100, 77, 32, dtype, seed=5)
    causal = torch.ones(100, 77, dtype=torch.bool).tril()
    a = run_flash(q, k, v, dout, is_causal=True)
    b = run_flash(q, k, v, dout, is_causal=False, attn_mask=causal)
    for x, y in zip((a[0], a[1], *a[2]), (b[0], b[1], *b[2])):
        torch.testing.assert_close(x, y, rtol=0, atol=0)


def test_rule_rejects_a_kernel_that_ignores_the_mask():
    """The check above can fail: the unmasked output is far outside the masked bound."""
    q, k, v, dout = make_inputs(1, 2, 2, 40, 50, 16, torch.float16, seed=6)
    mask = random_bool_mask((40, 50), seed=6, empty_rows=())
    unmasked = flash_attention(q, k, v)
    golden, _, _ = run_reference(q, k, v, dout, is_causal=False, golden=True, attn_mask=mask)
    plain, _, _ = run_reference(q, k, v, dout, is_causal=False, attn_mask=mask)
    with pytest.raises(AssertionError, match="exceeds bound"):
        assert_within_rule("out", unmasked, golden, plain, torch.float16)


def test_mask_of_one_head_is_read_for_that_head_in_the_backward():
    """A mask that differs per query head, with GQA: the dK/dV kernel loops over the query
    heads of a group and must switch mask head with them (a mask indexed by the KV head,
    or by the first head of the group, gives wrong dk/dv while out stays right)."""
    q, k, v, dout = make_inputs(1, 4, 1, 64, 64, 16, torch.float32, seed=7)
    mask = torch.zeros(1, 4, 64, 64, dtype=torch.bool)
    for h in range(4):  # head h sees only keys [16h, 16h + 16)
        mask[:, h, :, 16 * h:16 * h + 16] = True
    check_against_references(q, k, v, dout, is_causal=False, attn_mask=mask)


def test_large_negative_additive_mask_is_not_a_hidden_key():
    """A finite −1e4 bias on every key of a row still attends (SDPA does not treat it as
    −∞): that row is a softmax of its (shifted) scores, not an empty row of zeros."""
    q, k, v, dout = make_inputs(1, 1, 1, 10, 20, 16, torch.float32, seed=8)
    mask = torch.zeros(10, 20)
    mask[2] = -1e4
    out, lse, _ = check_against_references(q, k, v, dout, is_causal=False, attn_mask=mask)
    assert out[..., 2, :].abs().sum() > 0 and -1e4 - 10 < float(lse[..., 2]) < -1e4 + 10
