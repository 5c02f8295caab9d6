"""Red team rt57's escapes, each answered by a design (README, "Red team rt57"): a mutant only that design catches.

- A key block's P·V summed in float16 before the float32 accumulator (rt57's bug_pv_half): the weights are not yet
  normalised, so a block's sum overflows where the output, a weighted mean of v, fits. The large-values regime
  (generate._large_outputs) makes float16's v positive and near half its range.
- Per-thread splits merged by halves (rt57's bug_threads_tree_merge): lost one where the thread count is not a power
  of two; the threaded rows ran at 8, 16 and 32. They now run at 6, 12 and 24 (paths.PATH_THREAD_COUNTS), the drawn
  thread problems at 2, 3 and 7.
- A boolean mask of equal counts, its first and last rows equal, read as key padding (rt57's bug_padding_detector):
  a near structure was one entry off, so its count changed; it is now one row off with its count kept.
- A 31-bit per-call dropout seed (rt57's bug_dropout_seed31): the thorough run's seed-space case (5·2^15 calls).
- float64 inputs beside a float32 additive mask computed in float32 (rt57's bug_f32mask_workdtype): every other
  float64 forward row with an additive mask takes it in float32."""
from __future__ import annotations

from dataclasses import replace

import pytest

from kernels import mutants
from kernels.harness import generate as gen
from kernels.harness import references
from kernels.harness.features import offered
from kernels.harness.peers import PEERS


def _verdict(impl, problem) -> bool:
    """True: judged and passed; False: judged and failed (a refusal is neither)."""
    o, refused = gen.check_problem(impl, problem)
    assert refused is None, (problem.describe(), o)
    return not gen.failed(o)


def test_a_block_s_values_summed_in_float16_fail_the_large_values_first_draw():
    problem = gen.draw(0, gen.REGIMES.index("large-values"), "float16", offered(mutants.block_values_in_float16))
    assert problem.large_values and problem.relation == gen.AGREEMENT and not problem.dropout_p, problem
    assert not _verdict(mutants.block_values_in_float16, problem), problem.describe()
    # the design, not the shape: the same problem with v as drawn passes the mutant
    assert _verdict(mutants.block_values_in_float16, replace(problem, large_values=False)), problem.describe()
    for correct in (references.blocked_attention, references.PlainAttention()):
        assert _verdict(correct, problem), (correct, problem.describe())
    full = gen.draw(0, gen.REGIMES.index("large-values"), "float16", offered(PEERS["sdpa-math"][0]))
    for correct in (PEERS["sdpa-math"][0], references.full_attention):
        assert _verdict(correct, full), (correct, full.describe())


def test_split_k_splits_per_thread_merged_by_halves_fail_the_threaded_rows_at_counts_not_powers_of_two():
    """rt57's bug_threads_tree_merge: the decode path's splits, one per thread from four on, merged by halves. Each
    path's threaded rows (paths.threaded) now run at 6, 12 and 24 threads: the decode rows fail it, and the same
    rows at 8, 16 and 32 threads (the counts before) pass it."""
    from kernels.harness import paths

    features = offered(mutants.decode_splits_per_thread_merged_by_halves)
    rows = paths.threaded(0, "float32", ("float32",), features)
    assert {p.threads for p in rows} == set(paths.PATH_THREAD_COUNTS) and all(
        t > 4 and t & (t - 1) for t in paths.PATH_THREAD_COUNTS)
    caught = [p for p in rows if not _verdict(mutants.decode_splits_per_thread_merged_by_halves, p)]
    assert caught, [p.describe() for p in rows]
    for p in caught:
        for threads in (8, 16, 32):
            assert _verdict(mutants.decode_splits_per_thread_merged_by_halves, replace(p, threads=threads)), p.describe()
        assert _verdict(PEERS["sdpa-math"][0], p), p.describe()


def test_a_mask_read_as_key_padding_by_its_counts_fails_a_near_key_padding_row():
    """rt57's bug_padding_detector: a boolean mask whose first and last rows agree and whose rows see as many keys
    each, read as key padding. A near structure (masks.near_structured_mask) is now off by a pair of entries in one
    middle row, its counts the structure's: the covering rows of near key padding fail it; the same masks off by one
    entry (the design before: the count changed, and the heuristic declined) pass it."""
    import torch

    from kernels.harness import masks, paths

    mutant = mutants.boolean_mask_of_equal_counts_read_as_key_padding
    g = torch.Generator().manual_seed(0)
    m = masks.near_structured_mask((2, 9, 13), "key padding", g)  # (Hq, Nq, Nk)
    counts = m.sum(-1)
    assert (counts == counts[..., :1]).all() and (m[..., 0, :] == m[..., -1, :]).all() and not (m == m[..., :1, :]).all()
    features = offered(mutant)
    near = [p for dt in ("float32", "float16", "bfloat16") for p in paths.problems(0, dt, ("float32", "float16", "bfloat16"), features)
            if p.mask_near == "key padding" and p.relation == gen.AGREEMENT]
    assert near
    caught = [p for p in near if not _verdict(mutant, p)]
    assert caught, [p.describe() for p in near]
    for p in caught:
        assert _verdict(references.full_attention, p), p.describe()


@pytest.mark.long("slow statistics")
def test_a_31_bit_dropout_seed_fails_the_thorough_seed_space_case():
    """rt57's bug_dropout_seed31: a per-call seed of 31 bits repeats a mask after about 2^16 calls, past the default
    run's 2^14 (power 0.06). The thorough run's seed-space case makes 5·2^15 calls (power 0.998); SDPA passes it."""
    import torch

    from kernels.harness import crosscall
    from kernels.harness.cases import SEED_SPACE, THOROUGH_CASES
    from kernels.harness.subject import Subject

    case = next(c for c in THOROUGH_CASES if c.kind == SEED_SPACE)
    assert crosscall.seed_repeat_power(31, crosscall.THOROUGH_SEED_CALLS) > 0.99
    assert crosscall.seed_repeat_power(31, crosscall.SEED_CALLS) < 0.1
    bad = crosscall.dropout_seed_space(Subject(mutants.dropout_seed_31_bits, case, torch.float32, "cpu", 0))
    assert bad.discrepancy > bad.bound, bad
    good = crosscall.dropout_seed_space(Subject(PEERS["sdpa-math"][0], case, torch.float32, "cpu", 0))
    assert good.discrepancy <= good.bound, good


def test_float64_beside_a_float32_mask_computed_in_float32_fails_the_float64_masked_rows():
    """rt57's bug_f32mask_workdtype: float64 q, k, v beside a float32 additive mask computed in float32. Every other
    float64 forward row with an additive mask now takes it in float32 (paths.problem): those rows fail it, and the
    same rows with a float64 mask pass it; SDPA (which computes in float64) passes them."""
    from kernels.harness import paths

    mutant = mutants.float64_beside_a_float32_mask_in_float32
    dtypes = ("float32", "float16", "bfloat16")
    rows = [p for dt in dtypes for p in paths.problems(0, dt, dtypes, offered(mutant))
            if p.dtype == "float64" and p.mask_dtype == "float32"]
    assert len(rows) >= 6 and all(p.relation == gen.AGREEMENT for p in rows)
    for p in rows[:3]:
        assert not _verdict(mutant, p), p.describe()
        assert _verdict(mutant, replace(p, mask_dtype=None)), p.describe()
        assert _verdict(PEERS["sdpa-math"][0], p), p.describe()


def test_a_float32_mask_beside_float64_q_may_be_refused_wherever_it_is_given():
    """torch's documentation asks for "a float mask of the same type as query" (red team rt59's base refuses a float32
    mask beside float64 q, and torch's own flash CPU backend computes one wrongly: FINDINGS.md 17). A design refusing
    it everywhere is honest; one refusing it only at a storage offset, where it accepts it contiguous, fails."""
    from kernels.harness import paths

    def _refuses(q, mask, strided_only):
        wide = mask is not None and mask.is_floating_point() and mask.dtype != q.dtype
        return wide and (not strided_only or mask.storage_offset() != 0)

    def everywhere(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        if _refuses(q, attn_mask, strided_only=False):
            raise RuntimeError("attn_mask dtype must match query dtype")
        return PEERS["sdpa-math"][0](q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                                     scale=scale, enable_gqa=enable_gqa)

    def strided_only(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        if _refuses(q, attn_mask, strided_only=True):
            raise RuntimeError("attn_mask dtype must match query dtype")
        return PEERS["sdpa-math"][0](q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                                     scale=scale, enable_gqa=enable_gqa)

    dtypes = ("float32", "float16", "bfloat16")
    rows = [p for dt in dtypes for p in paths.problems(0, dt, dtypes, offered(everywhere))
            if p.dtype == "float64" and p.mask_dtype == "float32"]
    assert rows
    for p in rows[:3]:
        o, refused = gen.check_problem(everywhere, p)
        assert refused is not None and not gen.failed(o), (p.describe(), o)
        strided = replace(p, mask_storage="offset")
        o, refused = gen.check_problem(strided_only, strided)
        assert refused is None and gen.failed(o) and "refused an input SDPA accepts" in o.detail, (strided.describe(), o)
