"""Dropout at the extremes: p far below 0.1, dropout uniforms in a half dtype, the per-call seed space, and
masks past 65 535 (batch, head) slices. Each check rejects the mutant built for it and passes the plain
reference (kernels.harness.references.full_attention); the statistics' sizes and powers are the ones their
docstrings state."""
from __future__ import annotations

import pytest
import torch

from kernels import mutants
from kernels.harness import crosscall, dropout_lags, references, verify_attention
from kernels.mutants import MUTANTS

HALF = [torch.float16, torch.bfloat16]


def _verdicts(impl, invariant: str, dtypes) -> dict:
    report = verify_attention(impl, dtypes=dtypes, invariants=[invariant], generate_seconds=0)
    assert report.judged, f"{invariant} never ran"
    return {c.dtype: c for c in report.checks if c.invariant == invariant}


@pytest.mark.parametrize("fn, invariant", [
    (mutants.dropout_skipped_below_1e4, "dropout-tiny-p"),
    (mutants.dropout_uniforms_in_input_dtype, "dropout-tiny-p"),
    (mutants.dropout_seed_24_bits, "dropout-seed-space"),
    (mutants.dropout_slice_offset_wraps_at_65535, "dropout-many-slices"),
], ids=["skipped-below-1e-4", "half-dtype-uniforms", "seed-24-bits", "slice-offset-wraps"])
def test_each_mutant_is_registered_with_its_catcher(fn, invariant):
    assert any(m.fn is fn and m.caught_by == invariant for m in MUTANTS)


def test_tiny_p_rejects_dropout_skipped_below_1e4():
    """No weight dropped at p = 1e-5: 84 drops expected, P(0) = e⁻⁸⁴."""
    check = _verdicts(mutants.dropout_skipped_below_1e4, "dropout-tiny-p", [torch.float32])["float32"]
    assert not check.passed and "p=1e-05: dropped 0 of" in check.detail, check.detail


@pytest.mark.parametrize("dtype", HALF, ids=["float16", "bfloat16"])
def test_tiny_p_rejects_uniforms_drawn_in_the_half_dtype(dtype):
    name = str(dtype).removeprefix("torch.")
    check = _verdicts(mutants.dropout_uniforms_in_input_dtype, "dropout-tiny-p", [dtype])[name]
    assert not check.passed, check.detail


def test_tiny_p_passes_the_plain_reference_in_every_dtype():
    checks = _verdicts(references.full_attention, "dropout-tiny-p", None)
    assert set(checks) == {"float32", "float16", "bfloat16"}
    assert all(c.passed for c in checks.values()), [c.detail for c in checks.values()]


def test_tiny_p_sizes_give_the_stated_power():
    """8, 1, 1 calls of 2²⁰ weights; power ≥ 0.99 against twice the drop rate, 1 against none dropped and
    against torch's float16 uniforms (p + 2⁻¹²)."""
    per_call = 2 ** 20
    assert [crosscall.tiny_p_calls(p) for p in crosscall.TINY_PS] == [8, 1, 1]
    for p in crosscall.TINY_PS:
        n = crosscall.tiny_p_calls(p) * per_call
        assert crosscall.tiny_p_power(n, p, 2 * p) >= crosscall.TINY_POWER
        assert crosscall.tiny_p_power(n, p, 0.0) == pytest.approx(1.0)
        assert crosscall.tiny_p_power(n, p, p + 2 ** -12) > 1 - 1e-9
        assert crosscall.tiny_p_power(n, p, p) < 1e-6  # its own level: α / 3


def test_torch_half_uniforms_are_as_the_tiny_p_comment_says():
    """The measured quantisation the check's comment quotes: torch.rand in float16 is 0 with probability
    2⁻¹² (bfloat16 2⁻⁹), so P(u < 1e-5) is 25× p in float16 (binomial sd of the estimate: 3e-6, 1e-5)."""
    g = torch.Generator().manual_seed(0)
    for dtype, zero in ((torch.float16, 2 ** -12), (torch.bfloat16, 2 ** -9)):
        u = torch.rand(2 ** 22, generator=g, dtype=dtype)
        assert abs(float((u < 1e-5).double().mean()) - (1e-5 + zero)) < 6 * (zero / 2 ** 22) ** 0.5


@pytest.mark.long("slow statistics")
def test_seed_space_rejects_a_24_bit_seed_and_passes_the_reference():
    """2¹⁴ calls each (about 2.6 CPU-s for the reference): power 0.9997 against 24 bits."""
    assert crosscall.seed_repeat_power(24) > 0.999 and crosscall.seed_repeat_power(24, crosscall.DISTINCT_CALLS) < 0.05
    bad = _verdicts(mutants.dropout_seed_24_bits, "dropout-seed-space", [torch.float32])["float32"]
    assert not bad.passed, bad.detail
    good = _verdicts(references.full_attention, "dropout-seed-space", [torch.float32])["float32"]
    assert good.passed, good.detail


def test_many_slices_rejects_an_offset_wrapping_at_65535_and_passes_the_reference():
    bad = _verdicts(mutants.dropout_slice_offset_wraps_at_65535, "dropout-many-slices", [torch.float32])["float32"]
    assert not bad.passed and "worst lag 65535" in bad.detail, bad.detail
    good = _verdicts(references.full_attention, "dropout-many-slices", [torch.float32])["float32"]
    assert good.passed, good.detail


def test_slice_lag_z_is_standard_under_independence_and_sees_a_planted_period():
    """Independent fair bits: no |z| past the Bonferroni threshold; a copy of slices at period 40 000
    (the last 29 632 slices repeat the first): z ≈ √(16·29 632) = 689."""
    g = torch.Generator().manual_seed(1)
    b, h, n_q, n_k = dropout_lags.SLICE_SHAPE
    bits = (torch.rand(b * h, n_q * n_k, generator=g) < 0.5).double()  # (slices, draws)
    threshold = 6.75
    z = dropout_lags._slice_lag_z(bits - bits.mean())
    assert len(z) == b * h - 63 and float(z.abs().max()) < threshold
    bits[40000:] = bits[:b * h - 40000]
    z = dropout_lags._slice_lag_z(bits - bits.mean())
    assert int(z.abs().argmax()) + 1 == 40000 and float(z[39999]) > 600
