"""dropout-axis-periods: the keep masks of one (batch, head) slice uncorrelated at every lag along the keys on the
decode path (Nq = 1) and along the queries past 2¹⁶. It rejects a 16-bit row counter and a decode path restarting its
RNG offset in each key split (of 1024, and of 1000 or 1536 keys, periods no power-of-two lag test sees), passes SDPA
math and the references in every dtype, and its statistic is calibrated (the docstring's z-tests at α / 72 604)."""
from __future__ import annotations

import math

import pytest
import torch

from kernels import mutants
from kernels.harness import dropout as drop
from kernels.harness import dropout_lags, peers, references, verify_attention
from kernels.harness.cases import LONG_AXES, THOROUGH_CASES, standard_cases
from kernels.harness.invariants import DROPOUT, INVARIANTS
from kernels.mutants import MUTANTS

INVARIANT = "dropout-axis-periods"
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def _verdicts(impl, dtypes, invariants=(INVARIANT,), seed: int = 0) -> dict:
    report = verify_attention(impl, dtypes=dtypes, invariants=list(invariants), generate_seconds=0, seed=seed)
    assert report.judged, f"{invariants} never ran"
    return {(c.invariant, c.dtype): c for c in report.checks}


def _split_mutant(split: int):
    """The decode mutant with another split size (a non-power-of-two one: the period no 2^k lag test sees)."""
    impl = type(f"_DecodeOffsetRestartsEvery{split}", (mutants._DecodeOffsetRestartsPerSplit,), {"split": split})()
    return mutants._full_mutant(impl, f"decode_dropout_offset_restarts_every_{split}", f"split of {split} keys")


@pytest.mark.parametrize("fn", [mutants.dropout_row_counter_16_bits, mutants.decode_dropout_offset_restarts_per_split],
                         ids=["row-counter-16-bits", "decode-offset-restarts-per-split"])
def test_each_mutant_is_registered_with_its_catcher(fn):
    assert any(m.fn is fn and m.caught_by == INVARIANT for m in MUTANTS)


def test_rejects_a_16_bit_row_counter_at_row_lag_65536_in_every_dtype():
    """z = √(8·4096) = 181 at lag 65 536 (comment above dropout_lags.PERIOD_P)."""
    for (_, dtype), check in _verdicts(mutants.dropout_row_counter_16_bits, DTYPES).items():
        assert not check.passed and "rows: " in check.detail and "worst lag 65536, z = +181" in check.detail, (
            dtype, check.detail)


@pytest.mark.parametrize("split", [1024, 1000, 1536])
def test_rejects_a_decode_path_restarting_its_offset_per_split(split):
    """A period of 1024, 1000 or 1536 keys at Nq = 1: z ≈ √(4097 - split) at lag split (55, 56, 51)."""
    fn = mutants.decode_dropout_offset_restarts_per_split if split == 1024 else _split_mutant(split)
    dtypes = DTYPES if split == 1024 else [torch.float32]
    for (_, dtype), check in _verdicts(fn, dtypes).items():
        decode = check.detail.split(";")[0]
        assert not check.passed and f"worst lag {split}, z = +" in decode, (dtype, check.detail)
        z = float(decode.rsplit("z = ", 1)[1])
        assert z > 0.9 * math.sqrt(dropout_lags.PERIOD_DECODE_KEYS - split), (split, z)


@pytest.mark.parametrize("impl", [peers.sdpa_math, references.full_attention], ids=["sdpa-math", "full-attention"])
def test_passes_correct_implementations_in_every_dtype(impl):
    checks = _verdicts(impl, DTYPES)
    assert {d for _, d in checks} == {"float32", "float16", "bfloat16"}
    assert all(c.passed for c in checks.values()), [c.detail for c in checks.values()]


@pytest.mark.long("mutant sweep")
def test_only_this_check_catches_the_mutants_among_the_fixed_dropout_checks():
    """Each mutant passes every other fixed dropout invariant (dropout-seed-space, 2¹⁴ calls, left out for its cost:
    neither mutant touches the per-call seed; generated-dropout's drawn problems were run by hand: none failed).
    About 22 CPU-s."""
    others = [i.name for i in INVARIANTS if DROPOUT in i.needs and i.name not in
              (INVARIANT, "dropout-seed-space", "generated-dropout")]
    for fn in (mutants.dropout_row_counter_16_bits, mutants.decode_dropout_offset_restarts_per_split):
        checks = _verdicts(fn, [torch.float32], others)
        assert len({name for name, _ in checks}) >= 10
        assert all(c.passed for c in checks.values()), [(c.invariant, c.detail) for c in checks.values()
                                                         if not c.passed]


def test_threshold_is_bonferroni_over_every_lag_of_both_parts():
    """3097 decode lags (4097 keys, ≥ 1000 pairs) and 69 507 row lags (69 632 rows × 8 keys): α / 72 604."""
    n_decode = dropout_lags.PERIOD_DECODE_KEYS - dropout_lags.SLICE_MIN_PAIRS
    n_rows = dropout_lags.PERIOD_ROWS - math.ceil(dropout_lags.SLICE_MIN_PAIRS / dropout_lags.PERIOD_ROW_KEYS)
    assert (n_decode, n_rows) == (3097, 69507)
    assert drop._z(drop.ALPHA / (n_decode + n_rows)) == pytest.approx(6.76, abs=0.01)


@pytest.mark.long("slow statistics")
def test_null_calibration_of_the_lag_statistic():
    """Independent fair bits of both parts' shapes over 20 seeds: the largest |z| stays below the threshold (6.76),
    and below 5.6 (measured: 5.04; the expected largest of 72 604 two-sided |z| is about 4.6). About 10 CPU-s."""
    threshold = drop._z(drop.ALPHA / 72604)
    largest = 0.0
    for seed in range(20):
        g = torch.Generator().manual_seed(seed)
        for shape in ((dropout_lags.PERIOD_DECODE_KEYS, 1), (dropout_lags.PERIOD_ROWS, dropout_lags.PERIOD_ROW_KEYS)):
            bits = (torch.rand(shape, generator=g, dtype=torch.float64) < 0.5).double()
            largest = max(largest, float(dropout_lags.period_z(bits).abs().max()))
    assert largest < 5.6 < threshold, largest


def test_planted_periods_give_the_stated_z():
    """A period of 1000 keys: √3097 = 55.7 at lag 1000, the largest; rows repeating at 65 536: √32 768 = 181."""
    g = torch.Generator().manual_seed(0)
    keys = (torch.rand(1000, generator=g) < 0.5).double()[torch.arange(dropout_lags.PERIOD_DECODE_KEYS) % 1000, None]
    z = dropout_lags.period_z(keys)
    assert int(z.abs().argmax()) + 1 == 1000 and float(z[999]) == pytest.approx(math.sqrt(3097), rel=0.01)
    rows = (torch.rand(2 ** 16, 8, generator=g) < 0.5).double()[torch.arange(dropout_lags.PERIOD_ROWS) % 2 ** 16]
    z = dropout_lags.period_z(rows)
    assert int(z.abs().argmax()) + 1 == 2 ** 16 and float(z[2 ** 16 - 1]) == pytest.approx(181.0, rel=0.01)


# The larger run's part: the LONG_AXES case (thorough only), the decode path's keys at every lag up to 15 385 and at
# the powers of two up to 2¹⁶ (comment above dropout_lags.PERIOD_LONG_DECODE_KEYS). Test names with "thorough" run in
# the long tier (conftest.py).

def _long_axes_case():
    return [c for c in THOROUGH_CASES if c.kind == LONG_AXES]


def test_long_axes_case_is_added_by_the_larger_run_only():
    assert len(_long_axes_case()) == 1 and not any(c.kind == LONG_AXES for c in standard_cases(thorough=False))
    assert {i.name for i in INVARIANTS if i.runs_on(_long_axes_case()[0]) and DROPOUT in i.needs} == {INVARIANT}


def _long_verdicts(impl, dtypes) -> dict:
    report = verify_attention(impl, dtypes=dtypes, invariants=[INVARIANT], cases=_long_axes_case())
    assert report.judged
    return {c.dtype: c for c in report.checks}


def test_thorough_part_rejects_a_16_bit_key_offset_on_the_decode_path():
    """Keys j and j + 65 536 sharing a draw at Nq = 1: head 16's χ²₈ ≈ 0 (z ≥ 15 against 6.53)."""
    for dtype, check in _long_verdicts(mutants.dropout_mask_repeats_past_65536_keys, DTYPES).items():
        assert not check.passed and "at Nq = 1: worst lag 2^16" in check.detail, (dtype, check.detail)


def test_thorough_part_rejects_a_decode_split_of_6000_keys():
    """Past the default's 3097 lags: z = √(16 385 - 6000) = 102 at lag 6000."""
    check = _long_verdicts(_split_mutant(6000), [torch.float32])["float32"]
    assert not check.passed and "worst lag 6000, z = +10" in check.detail, check.detail


@pytest.mark.parametrize("impl", [peers.sdpa_math, references.full_attention], ids=["sdpa-math", "full-attention"])
def test_thorough_part_passes_correct_implementations_in_every_dtype(impl):
    checks = _long_verdicts(impl, DTYPES)
    assert set(checks) == {"float32", "float16", "bfloat16"}
    assert all(c.passed for c in checks.values()), [c.detail for c in checks.values()]
