"""Triton's fused-attention tutorial test, its rules ported to flash_attention.

Source: triton-lang/triton, python/tutorials/06-fused-attention.py, ``test_op`` (read at commit
dc6ee3ed and at the newer version with the Z/H/N_CTX/HEAD_DIM/causal/mode parametrization). Its rules:
- inputs q, k, v ~ N(0, 0.5²) in float16, shape (Z, H, N_CTX, HEAD_DIM), torch.manual_seed(20),
  sm_scale = 0.5, upstream gradient dout ~ N(0, 1);
- the reference: p = (q kᵀ)·sm_scale in float16, −∞ above the diagonal when causal (tril of an
  N_CTX × N_CTX matrix: square, so top-left and bottom-right causal coincide), softmax of
  p.float() cast back to float16, ref_out = p v in float16, gradients by autograd through that;
- the comparison: torch.testing.assert_close(tri, ref, atol=1e-2, rtol=0) for the output and
  for dv, dk and dq.
Upstream parametrizes Z ∈ {1, 4}, H ∈ {2, 48}, N_CTX ∈ {128, 1024, 4096}, HEAD_DIM ∈ {64, 128},
causal ∈ {False, True}. Here, interpreted on CPU: every (Z, H) at N_CTX = 128 (H = 48 at
HEAD_DIM 64 only), N_CTX = 1024 once (slow), 4096 not at all (minutes per call interpreted).
"""
import pytest
import torch

from kernels.flash import flash_attention

SM_SCALE = 0.5
ATOL = 1e-2


def tutorial_inputs(z, h, n_ctx, head_dim):
    torch.manual_seed(20)
    q, k, v = (torch.empty((z, h, n_ctx, head_dim), dtype=torch.float16).normal_(mean=0.0, std=0.5)
               for _ in range(3))
    return q, k, v, torch.randn_like(q)


def tutorial_reference(q, k, v, causal):
    """The tutorial's torch reference, in float16 except the softmax (float32, cast back)."""
    n_ctx = q.shape[2]
    p = torch.matmul(q, k.transpose(2, 3)) * SM_SCALE  # (Z, H, N, N) float16
    if causal:
        p = p.masked_fill(torch.tril(torch.ones(n_ctx, n_ctx)) == 0, float("-inf"))
    p = torch.softmax(p.float(), dim=-1).half()
    return torch.matmul(p, v)  # (Z, H, N, D) float16


def out_and_grads(fn, q, k, v, dout):
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    out = fn(*leaves)
    return (out.detach(), *torch.autograd.grad(out, leaves, dout))


def run_test_op(z, h, n_ctx, head_dim, causal):
    q, k, v, dout = tutorial_inputs(z, h, n_ctx, head_dim)
    ref = out_and_grads(lambda *t: tutorial_reference(*t, causal), q, k, v, dout)
    tri = out_and_grads(lambda *t: flash_attention(*t, is_causal=causal, scale=SM_SCALE), q, k, v, dout)
    for name, a, b in zip(("out", "dq", "dk", "dv"), tri, ref):
        torch.testing.assert_close(a, b, atol=ATOL, rtol=0, msg=lambda m: f"{name}: {m}")


CASES = [(z, h, 128, d, causal) for z, h in ((1, 2), (4, 2), (1, 48)) for d in (64, 128) for causal in (False, True)
         if not (h == 48 and d == 128)]


@pytest.mark.parametrize("z, h, n_ctx, head_dim, causal", CASES,
                         ids=[f"Z{z}-H{h}-N{n}-D{d}-{'causal' if c else 'full'}" for z, h, n, d, c in CASES])
def test_op(z, h, n_ctx, head_dim, causal):
    run_test_op(z, h, n_ctx, head_dim, causal)


@pytest.mark.slow
def test_op_1024():
    run_test_op(1, 2, 1024, 64, True)


def test_op_rule_rejects_a_wrong_scale():
    """The tutorial's atol can fail: the default scale 1/√64 = 0.125 instead of 0.5 is caught."""
    q, k, v, dout = tutorial_inputs(1, 2, 128, 64)
    ref = tutorial_reference(q, k, v, True)
    with pytest.raises(AssertionError):
        torch.testing.assert_close(flash_attention(q, k, v, is_causal=True), ref, atol=ATOL, rtol=0)
