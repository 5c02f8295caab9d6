"""The families a fresh red team's default-run escapes came from (kernels/harness FINDINGS: round 8 of
the harness), each closed by a change to what the generator or the contract draws or checks, and
shown here rejecting a mutant of kernels.mutants that only the new draw or check reaches."""
from __future__ import annotations

import logging
import os
import sys
import warnings

import pytest
import torch

from kernels import mutants
from kernels.harness import verify_attention
from kernels.harness.references import full_attention


def _process_changing(change):
    def impl(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        change()
        return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    impl.__name__ = impl.__qualname__ = f"changes_{change.__name__}"
    return impl


def _logging_level():
    logging.getLogger().setLevel(logging.CRITICAL)


def _environment():
    os.environ["ATTENTION_PROOFS_RT8"] = "1"


def _sys_path():
    sys.path.append("/nonexistent/rt8")


def _warnings_filter():
    warnings.simplefilter("ignore")


@pytest.mark.parametrize("change", [_warnings_filter, _logging_level, _environment, _sys_path],
                         ids=["warnings", "logging", "environ", "sys.path"])
def test_python_process_state_in_global_state(change):
    """Each kind of Python process state a call may change is seen, named, and put back (compared after a
    first run: the harness's lazy imports set some of it themselves, KMP_DUPLICATE_LIB_OK for one)."""
    verify_attention(full_attention, dtypes=["float32"], invariants=["global-state-unchanged"])
    before = (list(warnings.filters), logging.getLogger().level, dict(os.environ), list(sys.path))
    report = verify_attention(_process_changing(change), dtypes=["float32"], invariants=["global-state-unchanged"])
    assert not report.passed, report.failure_lines()
    assert (list(warnings.filters), logging.getLogger().level, dict(os.environ), list(sys.path)) == before


def test_python_process_state_unchanged_by_a_correct_impl():
    report = verify_attention(full_attention, dtypes=["float32"], invariants=["global-state-unchanged"])
    assert report.passed, report.failure_lines()


def test_warnings_mutant_caught_only_by_global_state():
    report = verify_attention(mutants.warnings_silenced_process_wide, dtypes=["float32"],
                              invariants=["global-state-unchanged", "reference-agreement", "inputs-untouched"])
    assert {c.invariant for c in report.failures} == {"global-state-unchanged"}, report.failure_lines()


@pytest.mark.parametrize("fn", [mutants.saved_probabilities_freed_after_backward,
                                mutants.probabilities_in_shape_workspace,
                                mutants.saved_probabilities_rescaled_in_place],
                         ids=lambda f: f.__name__)
def test_gradient_sequences_are_fixed_checks(fn):
    """The three sequences the gradients item names, once only drawn, fail a default run's fixed checks
    (no drawn problem), and the backward paths the other fixed checks take do not see them."""
    report = verify_attention(fn, dtypes=["float32"], generate_seconds=0,
                              invariants=["gradient-sequences", "backward-agreement", "gradient-subsets"])
    assert {c.invariant for c in report.failures} == {"gradient-sequences"}, report.failure_lines()


def test_scale_zero_backward_is_a_fixed_check():
    report = verify_attention(mutants.backward_zero_scale_as_default, dtypes=["float32"], generate_seconds=0,
                              invariants=["gradient-sequences"])
    assert not report.passed


@pytest.mark.parametrize("fn", [mutants.rank3_gqa_heads_tiled, mutants.kv_batch_broadcast_as_groups],
                         ids=lambda f: f.__name__)
def test_contract_space_rank3_gqa_and_kv_broadcast(fn):
    """Rank-3 inputs with Hkv ≠ Hq under enable_gqa, and k, v of batch 1 against q's batch: inputs SDPA
    accepts (measured) that the fixed cases never give; the regimes' first draws (every run) catch the
    mutants reading them wrongly, in every dtype, and the fixed GQA and agreement checks do not."""
    from kernels.harness import generate as gen

    drawn = verify_attention(fn, backward=False, invariants=[gen.AGREEMENT], generate_seconds=1e-9, first_failure=True)
    assert set(drawn.dtypes) <= {c.dtype for c in drawn.failures}, drawn.failure_lines()  # (float64: covering rows)
    fixed = verify_attention(fn, dtypes=["float32"], backward=False, generate_seconds=0,
                             invariants=["reference-agreement", "gqa-equals-repeated-mha", "strided-inputs"])
    assert fixed.passed, fixed.failure_lines()


LONG = [(mutants.causal_key_positions_int16, "generated-agreement"),
        (mutants.split_kv_decode_256_splits, "generated-agreement"),
        (mutants.backward_64_key_tiles, "generated-gradients"),
        (mutants.dropout_skipped_past_2048_keys, "generated-dropout"),
        (mutants.split_kv_nan_sanitised, "generated-agreement"),
        (mutants.backward_grid_capped, "generated-gradients"),
        (mutants.mask_gradient_of_query_zero, "generated-gradients")]


@pytest.mark.parametrize("fn, relation", LONG, ids=[fn.__name__ for fn, _ in LONG])
def test_cheap_long_problems_every_run(fn, relation):
    """Limits that sit at lengths only the long regimes reach (int16 positions past 32767, 256 splits of
    1024, 64 backward key tiles of 128, a long-KV path's dropout, NaN on the split-K path): the regimes'
    first draws, judged on every run whatever its budget, catch them (float32 here; every dtype in the
    mutant sweep)."""
    report = verify_attention(fn, dtypes=["float32"], invariants=[relation], generate_seconds=1e-9, first_failure=True)
    assert report.failed_invariants == {relation}, report.failure_lines()


def test_dropout_problems_draw_tiny_p_and_every_gradient_subset_with_a_learned_mask():
    """A default run's dropout problems (seed 0, every dtype) include p < 0.01, and each requires_grad
    subset of q, k, v with and without an additive mask requiring grad."""
    from kernels.harness import generate as gen
    from kernels.harness.features import offered

    features = offered(full_attention)
    for dtype in ("float32", "float16", "bfloat16"):
        drawn = [gen.draw(0, i, dtype, features) for i in range(len(gen.REGIMES) + gen.DEFAULT_DRAWN)]
        dropout = [p for p in drawn if p.relation == gen.DROPOUT_LAW]
        assert min(p.dropout_p for p in dropout) < 0.01, dtype
        pairs = {(p.grads, p.mask_grad) for p in dropout}
        assert {g for g, _ in pairs} >= set(gen.GRAD_SUBSETS) and sum(m for _, m in pairs) >= 4, (dtype, pairs)


DROPOUT = [mutants.dropout_ignored_in_value_only_backward, mutants.mask_gradient_ignores_dropout,
           mutants.dropout_skipped_below_half_percent]


@pytest.mark.parametrize("fn", DROPOUT, ids=lambda f: f.__name__)
def test_dropout_beside_gradient_subsets_learned_masks_and_tiny_p(fn):
    """Dropout crossed with the axes the harness checked one at a time: the default run's dropout problems
    (float32) catch each, and the fixed dropout checks (all of q, k, v requiring grad, p = 0.1 and up,
    no learned mask) do not."""
    from kernels.harness import generate as gen

    drawn = verify_attention(fn, dtypes=["float32"], invariants=[gen.DROPOUT_LAW], first_failure=True)
    assert drawn.failed_invariants == {gen.DROPOUT_LAW}, drawn.failure_lines()
    fixed = verify_attention(fn, dtypes=["float32"], generate_seconds=0,
                             invariants=["dropout-forward-backward", "dropout-forward-backward-masked",
                                         "dropout-mask-law", "attn-mask-bias-gradient", "gradient-subsets"])
    assert fixed.passed, fixed.failure_lines()


def test_float64_judged_against_longdouble():
    """float64 inputs are judged in every run (its float32 pass), against numpy's longdouble: SDPA's math
    backend and the reference pass, float64 computed with float32 accumulators fails by 1e7 times."""
    import numpy as np

    from kernels.harness import float64
    from kernels.harness.peers import sdpa_math

    assert np.finfo(np.longdouble).eps < np.finfo(np.float64).eps, "x86-64's 80-bit longdouble expected here"
    q, k, v = (torch.randn(1, 2, 3, 4, dtype=torch.float64) for _ in range(3))
    exact = float64.golden(q, k, v)
    assert abs(exact.astype(np.float64) - ref_attention(q, k, v)).max() < 1e-14  # the same function
    for fn in (sdpa_math, full_attention):
        report = verify_attention(fn, dtypes=["float32"], invariants=["float64-agreement"])
        assert report.passed and "refused" not in report.checks[0].detail, report.checks[0].detail
    caught = verify_attention(mutants.float64_computed_in_float32, dtypes=["float32"], invariants=["float64-agreement"])
    assert not caught.passed and caught.checks[0].discrepancy > 1e5 * caught.checks[0].bound


def ref_attention(q, k, v):
    from kernels.harness import reference as ref

    return ref.attention(q, k, v).numpy()


def test_one_dim_mask_square_is_drawn_every_run():
    """The rank regime's first draw is square, so a 1-D (Nk,) mask there could be read along the queries:
    every run catches a kernel that does so (before, only square draws among 22 lengths did, now and then)."""
    from kernels.harness import generate as gen

    fn = mutants.one_dim_mask_read_along_queries_when_square
    report = verify_attention(fn, backward=False, invariants=[gen.AGREEMENT], generate_seconds=1e-9, first_failure=True)
    assert {c.dtype for c in report.failures} == set(report.dtypes), report.failure_lines()
