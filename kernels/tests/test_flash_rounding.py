"""bfloat16 results are rounded to nearest, ties to even, as torch rounds them.

Triton 3.9's interpreter converts float32 to bfloat16 by truncation (shared/TRITON_ON_CPU.md:
2093 of 4096 random values differ from torch's conversion, every one toward zero), so a
kernel that relied on ``.to(tl.bfloat16)`` stored results biased toward zero on CPU, and
the backward's D = rowsum(dO ∘ O) inherited that bias into dq and dk. Every store path of
the kernels goes through ``tiles.round_to``, which rounds on the float32 bit pattern; these
tests compare what a kernel stores with torch's own conversion of the same float32 values,
bit for bit.
"""
import pytest
import torch
import triton
import triton.language as tl

from kernels.decode import flash_decode
from kernels.flash import flash_attention, runtime
from kernels.flash.tiles import store_tile

N = 4096


@triton.jit
def _store_kernel(X, Y, n, BLOCK: tl.constexpr):
    """Y[i] = X[i] (float32) through the kernels' own store path, one row of BLOCK."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n, other=0.0)
    store_tile(Y, x[None, :], tl.zeros([1], dtype=tl.int32), offs, 0, 1, 1, n)


def stored_as_bf16(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty(x.shape, dtype=torch.bfloat16)
    _store_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    return y


def float32_values() -> torch.Tensor:
    """Random values over many binades, every tie and near-tie, and the special values."""
    gen = torch.Generator().manual_seed(0)
    random = torch.randn(N, generator=gen) * torch.exp2(torch.randint(-30, 30, (N,), generator=gen).float())
    # bit patterns whose low 16 bits sit at and around the halfway point 0x8000, odd and even
    # upper halves: ties must go to even, one ulp either side must not
    upper = torch.randint(0x0001, 0x7F7F, (256,), generator=gen, dtype=torch.int32) << 16
    lows = torch.tensor([0x7FFF, 0x8000, 0x8001, 0x0000, 0xFFFF], dtype=torch.int32)
    ties = (upper[:, None] | lows[None, :]).reshape(-1).view(torch.float32)
    specials = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 3.3895314e38, -3.3895314e38,
                             3.4028235e38, 1e-45, -1e-45, 1.1754942e-38, 9.2e-41, 1.0, -1.0])
    # a NaN whose payload sits in the low bits only: adding 0x7FFF would carry it into infinity
    low_nan = torch.tensor([0x7F800001, 0xFF800001 - 2**32], dtype=torch.int32).view(torch.float32)
    return torch.cat([random, ties, -ties, specials, low_nan])


def same_bits(a: torch.Tensor, b: torch.Tensor) -> int:
    """How many elements differ bit for bit (all NaNs count as equal: torch's NaN is canonical)."""
    differ = a.view(torch.int16) != b.view(torch.int16)
    return int((differ & ~(a.isnan() & b.isnan())).sum())


def test_store_rounds_to_nearest_even_bit_for_bit():
    x = float32_values()
    assert same_bits(stored_as_bf16(x), x.to(torch.bfloat16)) == 0


def test_the_bit_comparison_sees_truncation():
    """Truncating (the interpreter's conversion) differs in about half of the values."""
    x = float32_values()
    truncated = (x.view(torch.int32) & ~0xFFFF).view(torch.float32).to(torch.bfloat16)
    assert same_bits(truncated, x.to(torch.bfloat16)) > N // 4


@pytest.mark.skipif(not runtime.interpreting(), reason="compiled, bfloat16 dots run in bfloat16, so the "
                                                      "float32 kernel is no reference bit for bit")
def test_kernel_outputs_are_the_float32_results_rounded_by_torch():
    """Interpreted, a bfloat16 call computes in float32 on the bfloat16 values (upcast after
    loading), so its output, lse and dv (which does not depend on the rounded O) must be the
    float32 kernel's on the same values, converted by torch. So must split-KV decoding's."""
    gen = torch.Generator().manual_seed(1)
    q, k, v, dout = (torch.randn(1, 2, n, 40, generator=gen).to(torch.bfloat16) for n in (70, 90, 90, 70))
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    leaves32 = [t.float().requires_grad_(True) for t in (q, k, v)]
    out, lse = flash_attention(*leaves, is_causal=True, return_lse=True)
    out32, lse32 = flash_attention(*leaves32, is_causal=True, return_lse=True)
    assert same_bits(out, out32.to(torch.bfloat16)) == 0
    assert torch.equal(lse, lse32)
    (dv,) = torch.autograd.grad(out, leaves[2], dout)
    (dv32,) = torch.autograd.grad(out32, leaves32[2], dout.float())
    assert same_bits(dv, dv32.to(torch.bfloat16)) == 0
    with torch.no_grad():
        dec = flash_decode(q[:, :, :3], k, v, num_splits=2)
        dec32 = flash_decode(q[:, :, :3].float(), k.float(), v.float(), num_splits=2)
    assert same_bits(dec, dec32.to(torch.bfloat16)) == 0
