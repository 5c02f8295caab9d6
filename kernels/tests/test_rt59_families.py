"""Red team rt59's largest family, answered by a design (README, "Red team rt59"): half-precision results rounded
toward zero or +∞ on one path (gradients, masked, strided, rank ≠ 4, long prefill, long causal) stayed inside the
magnitude rule, and the rounding-bias test looked only at the outputs of a few fixed cases. Every float16/bfloat16
output and gradient judged against its golden value is now also judged for the bias of its rounding
(kernels.harness.rounding_direction; subject.against and subject.gradients_against)."""
from __future__ import annotations

import math

import pytest
import torch

from kernels import mutants
from kernels.harness import rounding_direction as rd
from kernels.harness import verify_attention
from kernels.harness.cases import DEFAULT_CASES
from kernels.harness.references import manual_backward_attention
from kernels.harness.subject import Subject

HALF = ("float16", "bfloat16")


def _rounded(x: torch.Tensor, dtype, mode: str) -> torch.Tensor:
    r = x.to(dtype)
    if mode == "nearest":
        return r
    if mode == "toward zero":
        return torch.where(r.double().abs() > x.abs(), torch.nextafter(r, torch.zeros_like(r)), r)
    return torch.where(r.double() < x, torch.nextafter(r, torch.full_like(r, math.inf)), r)  # toward +∞


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_the_statistic_rejects_directed_rounding_and_passes_rounding_to_nearest(dtype):
    gold = torch.randn(128, 16, generator=torch.Generator().manual_seed(0), dtype=torch.float64)  # (rows, n)
    z = {mode: rd.bias_test(_rounded(gold, dtype, mode), gold, dtype)[0]
         for mode in ("nearest", "toward zero", "toward +inf")}
    assert z["nearest"] <= rd.z_critical() < min(z["toward zero"], z["toward +inf"]), z


def test_rows_that_round_alike_count_once():
    """An output of identical rows (a query broadcast over heads, a tiny scale) is one rounding repeated: its
    standard error would be 0 and any nonzero mean 'significant'. Counted once, it is too few rows to test."""
    row = torch.randn(1, 16, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    gold = row.expand(256, 16)  # (rows, n)
    z, _, seen = rd.bias_test(gold.to(torch.bfloat16), gold, torch.bfloat16)
    assert z == 0 and "1 distinct rows" in seen, seen


def test_the_plain_reference_s_own_bias_is_allowed_and_no_more():
    """The low-precision rule's yardstick, for bias: a result as biased as the same-precision reference passes;
    the same result beside an unbiased reference fails."""
    gold = torch.randn(256, 16, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    biased = _rounded(gold, torch.bfloat16, "toward zero")
    assert rd.bias_test(biased, gold, torch.bfloat16, plain=biased)[0] <= rd.z_critical()
    assert rd.bias_test(biased, gold, torch.bfloat16, plain=gold.to(torch.bfloat16))[0] > rd.z_critical()


def test_cancelled_elements_are_left_out():
    """Where the exact value is a small fraction of its terms' absolute sum, the error is the arithmetic's."""
    gold = torch.tensor([[1.0, 1e-3]], dtype=torch.float64)
    assert rd.uncancelled(gold, torch.tensor([[1.0, 1.0]], dtype=torch.float64)).tolist() == [[True, False]]
    assert rd.uncancelled(gold, 1.0) is None  # no size per element: nothing to tell cancelled ones by


@pytest.mark.parametrize("mutant, invariant, case", [
    (mutants.gradients_truncated_half, "backward-agreement", "square"),
    (mutants.masked_output_truncated_half, "attn-mask", "long-gqa"),
], ids=["gradients", "masked-output"])
def test_a_half_result_rounded_toward_zero_fails_only_with_the_design(monkeypatch, mutant, invariant, case):
    """Each mutant fails its invariant in both half types; with the design switched off (no result judged for
    bias) the same checks pass it: within one ulp, it is inside the magnitude rule."""
    cases = [c for c in DEFAULT_CASES if c.name == case]
    report = verify_attention(mutant, dtypes=list(HALF), cases=cases, invariants=[invariant])
    assert {f.dtype for f in report.failures if f.invariant == invariant} == set(HALF), report
    assert all("rounding bias" in f.detail for f in report.failures), report
    monkeypatch.setattr(rd, "judged", lambda out: False)
    assert verify_attention(mutant, dtypes=list(HALF), cases=cases, invariants=[invariant]).passed


def test_a_correct_hand_written_backward_is_not_biased():
    """The design's own false-alarm check on the reference the gradient mutant is cut from."""
    case = next(c for c in DEFAULT_CASES if c.name == "square")
    for dtype in (torch.float16, torch.bfloat16):
        s = Subject(manual_backward_attention, case, dtype, "cpu", 0)
        got, gold, plain = s.gradients
        for g, g64, gp, size in zip(got, gold, plain, s.gradient_sizes.sizes):
            assert rd.bias_test(g, g64, dtype, rd.uncancelled(g64, size), gp)[0] <= rd.z_critical()


@pytest.mark.parametrize("half", [torch.float16, torch.bfloat16])
def test_autocast_inputs_carry_bits_below_the_half_type_that_round_back(half):
    """rt59's autocast_trunc_cast: the autocast rows gave float32 inputs holding half values exactly, so a cast by
    truncation was the same cast. Now the bits below the half type round back to the half values, to nearest only."""
    from kernels.harness.callers import below_half

    x = torch.randn(4096, generator=torch.Generator().manual_seed(3)).to(half)
    x[:3] = torch.tensor([0.0, float("inf"), float("nan")]).to(half)
    moved = below_half(x.float(), half)
    assert torch.equal(moved.to(half)[3:], x[3:]) and moved[:2].tolist() == x[:2].float().tolist()
    assert (moved[3:] != x[3:].float()).float().mean() > 0.99  # every finite nonzero value moved
    truncated = (moved.view(torch.int32) & -65536).view(torch.float32).to(torch.bfloat16)  # a cast dropping bits
    if half == torch.bfloat16:
        assert (truncated[3:] != x[3:]).float().mean() > 0.4


def _autocast_rows(dtype: str):
    from kernels.harness import callers, generate as gen, paths
    from kernels.harness.features import offered

    features = offered(mutants.autocast_inputs_truncated)
    return [p for p in paths.threaded(0, dtype, HALF, features) if p.caller == callers.AUTOCAST
            and p.relation == gen.AGREEMENT]


@pytest.mark.parametrize("dtype", HALF)
def test_a_truncating_autocast_cast_fails_an_autocast_row_only_with_the_bits(monkeypatch, dtype):
    from kernels.harness import callers, generate as gen

    rows = _autocast_rows(dtype)
    verdicts = [gen.failed(gen.check_problem(mutants.autocast_inputs_truncated, p)[0]) for p in rows]
    assert any(verdicts), [p.describe() for p in rows]
    monkeypatch.setattr(callers, "below_half", lambda x, half: x)
    assert not any(gen.failed(gen.check_problem(mutants.autocast_inputs_truncated, p)[0]) for p in rows)


def test_parameters_are_given_to_half_the_drawn_gradient_problems_and_their_gradients_judged(monkeypatch):
    """rt59's parameter_detached: q, k, v as torch.nn.Parameter. The mutant unwrapping them fails such a problem and
    passes the same problem given plain tensors."""
    from dataclasses import replace

    from kernels.harness import generate as gen
    from kernels.harness.features import offered

    features = offered(mutants.parameters_unwrapped, backward=True)
    drawn = [gen.draw(0, i, "float32", features) for i in range(len(gen.REGIMES), len(gen.REGIMES) + 64)]
    grads = [p for p in drawn if p.relation == gen.GRADIENTS]
    assert {p.leaves for p in grads} == set(gen.LEAVES), [p.leaves for p in grads]
    problem = next(p for p in grads if p.leaves == gen.PARAMETERS)
    assert "torch.nn.Parameter" not in problem.describe() and "parameters" in problem.describe()
    assert gen.failed(gen.check_problem(mutants.parameters_unwrapped, problem)[0]), problem.describe()
    assert not gen.failed(gen.check_problem(mutants.parameters_unwrapped, replace(problem, leaves="tensors"))[0])
