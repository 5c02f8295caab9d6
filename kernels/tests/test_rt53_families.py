"""Red team rt53's escaped families, each answered by a design (the mutants each alone catches are in kernels/mutants.py,
judged by test_mutants.py): a training step's shapes in every run (two entries, 512-2048 queries over as many keys,
GQA, the backward of q, k and v on sampled rows of dO), and packed documents among the structured masks, each slice
with documents of its own."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from kernels import mutants
from kernels.harness import generate as gen
from kernels.harness import masks, paths
from kernels.harness.features import offered
from kernels.harness.peers import sdpa_math

SDPA = offered(F.scaled_dot_product_attention)
DTYPES = ("float32", "float16", "bfloat16")
TRAINING_MUTANTS = ["training_dq_of_the_last_entry", "training_causal_gqa_backward_without_causal",
                    "training_key_padding_of_entry_zero_in_backward"]


def _steps(dtypes=DTYPES, features=SDPA, thorough=False):
    return [p for d in dtypes for p in paths.training(0, d, dtypes, features, thorough)]


def test_each_run_judges_every_training_step_once_at_training_shapes_in_its_dtypes_in_turn():
    steps = _steps()
    assert len(steps) == len(paths.TRAINING_STEPS) and {p.dtype for p in steps} == set(DTYPES)
    lo, hi = paths.TRAINING_LENGTHS
    for p in steps:
        assert p.batch >= 2 and lo <= min(p.n_q, p.n_k) and max(p.n_q, p.n_k) <= hi and p.grads == "qkv"
        assert p.relation == gen.GRADIENTS and p.path == paths.TRAINING and gen.sampled_rows(p) is not None
    assert any(p.causal and p.q_heads // p.kv_heads >= 3 and p.kv_heads == 2 for p in steps)  # causal GQA
    assert any(p.mask == "(B, 1, 1, Nk)" and p.mask_padding for p in steps)  # each entry's own key padding
    # a run of one dtype judges every step in it, a thorough run each step in every dtype; none without a backward
    assert len(_steps(("float16",))) == len(steps) and len(_steps(thorough=True)) == len(DTYPES) * len(steps)
    assert _steps(features=SDPA - {"backward"}) == []
    # the steps come with the covering problems of a pass, and a run may keep them alone
    assert {p.path for p in paths.problems(0, "float32", ("float32",), SDPA, kept=("training",))} == {paths.TRAINING}
    assert paths.chosen_paths(["training"]) == ("training",)


@pytest.mark.parametrize("name", TRAINING_MUTANTS)
def test_a_training_step_rejects_a_backward_wrong_at_training_shapes_alone(name):
    impl = getattr(mutants, name)
    steps = _steps()
    assert all(not gen.failed(gen.check_problem(sdpa_math, p)[0]) for p in steps)
    assert any(gen.failed(gen.check_problem(impl, p)[0]) for p in steps)
    # the same step at 511 queries is passed: the bug is of the training shapes alone
    small = [p for p in steps if gen.failed(gen.check_problem(impl, p)[0])][0]
    small = gen.Problem(**{**small.__dict__, "n_q": 511, "path": None})
    assert not gen.failed(gen.check_problem(impl, small)[0])


def test_packed_documents_are_causal_within_documents_of_each_slices_own():
    g = torch.Generator().manual_seed(0)
    m = masks.near_structured_mask((3, 2, 40, 40), masks.PACKED + masks.EXACT, g)  # (B, Hq, Nq, Nk)
    slices = m.reshape(-1, 40, 40)
    assert all(mutants._packed_documents(s) for s in slices)  # causal runs, a document starting past row 0
    assert bool((slices & ~torch.ones(40, 40, dtype=torch.bool).tril()).any()) is False and bool(m.any(-1).all())
    assert len({tuple(s.flatten().tolist()) for s in slices}) > 1  # each slice its own documents
    # more queries than keys: the rows past the last key see the last document's keys
    wide = masks.near_structured_mask((1, 1, 9, 5), masks.PACKED + masks.EXACT, g)[0, 0]
    assert bool(wide.any(-1).all()) and bool((wide[5:] == wide[4]).all())
    # and the covering rows meet them, exact and one entry off
    near = [paths.problem(r, 0, i) for i, r in enumerate(paths.rows(0, SDPA)) if r["mask"] == paths.NEAR]
    assert {masks.PACKED, masks.PACKED + masks.EXACT} <= {p.mask_near for p in near}
    # of a mask of its own per batch entry where the row allows (rank 4, two entries or more)
    assert any(p.mask_near.startswith(masks.PACKED) and p.mask == paths.PACKED_FORM and p.batch >= 2
               for p in near if p.mask_near)


def test_packed_documents_reject_a_kernel_reading_every_slices_documents_from_the_first():
    impl = mutants.packed_documents_of_the_first_slice
    packed = [gen.Problem(2, 2, 2, 37, 37, 8, 8, False, "float32", mask=form, mask_near=near, seed=seed)
              for form in ("(B, Hq, Nq, Nk)", "(B, 1, Nq, Nk)") for near in (masks.PACKED, masks.PACKED + masks.EXACT)
              for seed in range(3)]
    assert all(not gen.failed(gen.check_problem(sdpa_math, p)[0]) for p in packed)
    assert any(gen.failed(gen.check_problem(impl, p)[0]) for p in packed)
    # the other structures, one slice repeated but for one entry, are passed (causal, a sliding window, ...)
    others = [gen.Problem(2, 2, 2, 37, 37, 8, 8, False, "float32", mask="(B, Hq, Nq, Nk)", mask_near=near, seed=1)
              for near in masks.NEAR_STRUCTURES if not near.startswith(masks.PACKED)]
    assert all(not gen.failed(gen.check_problem(impl, p)[0]) for p in others)


def test_a_dropout_backward_must_leave_the_callers_generator_where_it_was():
    """Each dropout row with gradients draws from the generator between its forward and its backward: a backward
    rewinding it to regenerate the keep mask (right gradients, the caller's draws repeated) is rejected."""
    features = offered(F.scaled_dot_product_attention)
    rows = [p for p in paths.problems(0, "float32", ("float32",), features)
            if p.relation == gen.DROPOUT_LAW and p.grads][:2]
    assert rows
    for p in rows:
        assert not gen.failed(gen.check_problem(sdpa_math, p)[0])
        outcome = gen.check_problem(mutants.dropout_backward_rewinds_the_rng, p)[0]
        assert gen.failed(outcome) and "moved the caller's generator (CPU)" in outcome.detail


def test_each_paths_gradient_row_on_many_threads_rejects_a_backward_dropping_the_keys_left_over_per_thread():
    impl = mutants.backward_dq_drops_the_leftover_keys_past_four_threads
    rows = [p for p in paths.threaded(0, "float32", DTYPES, SDPA) if p.relation == gen.GRADIENTS]
    assert {p.threads for p in rows} == set(paths.PATH_THREAD_COUNTS)
    assert {p.causal for p in rows} == {True, False}  # (every other one causal)
    assert any(gen.failed(gen.check_problem(impl, p)[0]) for p in rows)
    # on one thread the same rows are passed
    assert not any(gen.failed(gen.check_problem(impl, gen.Problem(**{**p.__dict__, "threads": 1}))[0])
                   for p in rows[:6])
