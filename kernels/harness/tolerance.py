"""The low-precision tolerance rule, in one place.

An implementation's error against the float64 golden value may be at most MULT times the error
that the plain same-precision reference (``reference.attention`` run in the inputs' dtype) makes
on the same inputs, plus a small floor. This is the rule of FlashAttention's tests
(tests/test_flash_attn.py: "numerical error at most twice the numerical error of a PyTorch
implementation"; hopper/test_flash_attn.py adds the floor below) and of PyTorch's
test/test_transformers.py (golden in float64, reference in the low precision, threshold from the
reference's own error).
"""
from __future__ import annotations

import torch

# FlashAttention's factor: a kernel may be twice as inaccurate as the plain reference. Kernels that
# accumulate in float32 are usually *more* accurate than a float16/bfloat16 reference; in float32
# the two make errors of the same kind and size, and the floor below carries the difference.
MULT = 2.0

# The floor, in roundings at the magnitude |x| + 0.3 (FlashAttention-3's form: its floor
# 2·|fl(x + 0.3) - 0.3 - x| is at most one rounding, eps·(|x| + 0.3)). It covers a plain reference
# that happens to be exact (one query row, an all-ones V) while a kernel rounds once more.
# Why float32 gets more: the rule above assumes a kernel computes in a wider type than its inputs
# (float32 inside a float16 kernel), so it beats the plain reference. A float32 kernel has no
# wider type; every fused step (folded scale, exp/exp2, per-block rescale, final division) rounds
# at the output's scale. Measured: with one rounding of floor, torch's own CPU kernel broke the
# float32 bound within 20 seeds (9.1e-7 against 2 × 2.2e-7 + 4.3e-7). PyTorch's test_transformers likewise floors
# float32 far higher than the half types (absolute 1e-5 ≈ 84 eps against 1e-3 ≈ 1 eps for
# float16). 16 roundings still refuses a float32 kernel computing in float16 inside by ~100×.
FLOOR_OFFSET = 0.3
FLOOR_ROUNDINGS = {torch.float16: 1.0, torch.bfloat16: 1.0, torch.float32: 16.0,
                   torch.float64: 16.0}  # (judged against longdouble: float64.py; no wider type inside, as float32)

# The floor also counts roundings of the scores. Where a row's scores are of size 10⁴, rounding them
# dominates the error (reference.golden_and_sensitivity: about u·R, and for a backward that
# recomputes P = exp(S - lse), reference.gradient_score_sensitivities). In a half type the plain
# reference rounds its scores in that half type, far more coarsely than a kernel accumulating them
# in float32, so the reference's own error covers the kernel's. In float32 both round the scores in
# float32, with signs of their own, and 2× the reference's error is no bound: measured on torch's
# SDPA math backend, 1.65× it at one seed of 20 (mixed-rows-causal: the kernel's error 4.1 u·R, the
# reference's 1.1 u·R), and on its flash backward 0.99× (dv, additive masks, scale 0.3: 3.6 u·R).
# A score passes four roundings on its way into P: the product q·k, the scale, the shift by the
# max (or lse) and exp. So every dtype gets SCORE_ROUNDINGS float32 roundings: 4 eps(float32) · max R.
SCORE_ROUNDINGS = 4.0
SCORE_EPS = torch.finfo(torch.float32).eps  # scores are accumulated in float32 in every dtype here but float64


# An implementation that declares a log-sum-exp merge (declare_merge below: FlashAttention-2's split-K
# decode combine, out = Σ_i exp(lse_i - lse) o_i) makes one error the plain softmax cannot: it never divides by the
# sum of its weights again, so a rounding of lse_i or of lse scales the whole output instead of cancelling out.
# Each is rounded once at its own size, |δ| ≤ u·|lse| (u = eps/2 of the accumulator; lse_i and lse differ by the
# log of a part's weight, and a part of tiny weight moves nothing), so the weight exp(lse_i - lse) is off by a
# factor e^ε with |ε| ≤ 2u|lse|, and the output by at most 2u·|lse|·Σ_i w_i |o_i| ≤ 2u·|lse|·Σ_j P_j |V_j|
# (reference.lse_sizes). Measured on kernels.harness.designs.split_k_lse, float32, the extreme case (scores near
# 6089, two keys in different splits 6.9 apart): 1.08e-4 where the plain reference errs 1.3e-6, this term 1.8e-3.
LSE_ROUNDINGS = 2.0

# How an implementation merges partial results: rescaled by their maxima and divided by the summed weights once
# (FlashAttention's online softmax, the plain softmax: the default), or by their log-sum-exp, never renormalised
# (FlashAttention-2's split-K decode combine). Only a declared log-sum-exp merge gets LSE_ROUNDINGS.
ONLINE_SOFTMAX, LOG_SUM_EXP = "online-softmax", "log-sum-exp"
MERGE_ATTRIBUTE = "rounding_merge"
WRAPPED = "_attention_impl"  # the attribute a harness wrapper (generate._marking) names the impl it calls by


def declare_merge(impl, merge: str):
    """Declare how impl merges partial results: ONLINE_SOFTMAX (the default) or LOG_SUM_EXP."""
    if merge not in (ONLINE_SOFTMAX, LOG_SUM_EXP):
        raise ValueError(f"merge must be {ONLINE_SOFTMAX!r} or {LOG_SUM_EXP!r}, got {merge!r}")
    setattr(impl, MERGE_ATTRIBUTE, merge)
    return impl


def merge_for(impl) -> str:
    return getattr(getattr(impl, WRAPPED, impl), MERGE_ATTRIBUTE, ONLINE_SOFTMAX)


def score_eps(dtype: torch.dtype) -> float:
    return eps(torch.float64) if dtype == torch.float64 else SCORE_EPS


def eps(dtype: torch.dtype) -> float:
    return torch.finfo(dtype).eps


def max_abs_error(observed: torch.Tensor, golden: torch.Tensor) -> float:
    """max |observed - golden| in float64; non-finite where golden is finite counts as infinite."""
    diff = (observed.double() - golden.double()).abs()
    if diff.numel() == 0:
        return 0.0
    both_inf = torch.isinf(observed.double()) & torch.isinf(golden.double()) & (observed.double() == golden.double())
    diff = torch.where(both_inf, torch.zeros_like(diff), diff)
    diff = torch.nan_to_num(diff, nan=float("inf"))
    return float(diff.max())


def _largest(x: torch.Tensor | float) -> float:
    if isinstance(x, torch.Tensor):
        return float(x.double().abs().max()) if x.numel() else 0.0
    return abs(x)


def floor(dtype: torch.dtype, size: torch.Tensor | float, sensitivity: torch.Tensor | float = 0.0,
          unit: float = 1.0, lse_size: torch.Tensor | float = 0.0) -> float:
    """FLOOR_ROUNDINGS roundings in ``dtype`` at the magnitude max|size| + 0.3·``unit``, and one at the spacing of
    its subnormals, plus SCORE_ROUNDINGS float32 (float64 inputs: float64) roundings of the scores (at the largest
    score ``sensitivity`` of the output).
    ``unit`` is the scale v was drawn at (v times 2^-k: generate's small-values regime). The offset 0.3 stands for
    outputs of v's unit scale, so it scales with v as the kernel's and the reference's roundings do (a power of two
    changes no rounding above the subnormals); below the least normal a rounding is one subnormal spacing at any
    magnitude, the least error a correct store of a float16 output of 1e-6 makes (red team rt51: a store flushing
    those to 0 erred by 1e-6, under a floor of 2.9e-4 at the offset of unit scale).
    ``lse_size`` (reference.lse_sizes, nonzero only for an impl that declares a log-sum-exp merge) adds
    LSE_ROUNDINGS roundings of unit roundoff at it."""
    subnormal = torch.finfo(dtype).smallest_normal * eps(dtype)  # (float16: 2^-24 ≈ 6e-8)
    return (FLOOR_ROUNDINGS[dtype] * (eps(dtype) * (_largest(size) + FLOOR_OFFSET * unit) + subnormal)
            + SCORE_ROUNDINGS * score_eps(dtype) * _largest(sensitivity)
            + LSE_ROUNDINGS * score_eps(dtype) / 2 * _largest(lse_size))


def bound(dtype: torch.dtype, reference_error: float, size, sensitivity=0.0, unit: float = 1.0,
          lse_size=0.0) -> float:
    """The allowed error: MULT × the plain same-precision reference's error + the floor at ``size``
    (the golden value, or for gradients the size of the terms they are summed from), the score
    ``sensitivity`` (forward outputs), v's ``unit`` and a declared log-sum-exp merge's ``lse_size`` (floor)."""
    return MULT * reference_error + floor(dtype, size, sensitivity, unit, lse_size)
