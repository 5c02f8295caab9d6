"""The generator draws from the whole space, judges, shrinks and prints a runnable reproduction."""
from __future__ import annotations

import math
from dataclasses import replace

import torch

from kernels.harness import generate as gen
from kernels.harness.features import offered
from kernels.harness.peers import sdpa_math
from kernels.mutants import head_dim_tail_dropped

ALL = frozenset({"causal", "gqa", "backward", "attn_mask", "dropout_p"})


def test_draws_depend_on_seed_dtype_and_index_only_and_cover_the_space():
    problems = [gen.draw(0, i, "float32", ALL) for i in range(400)]
    assert problems == [gen.draw(0, i, "float32", ALL) for i in range(400)]
    assert problems != [gen.draw(1, i, "float32", ALL) for i in range(400)]
    assert {p.relation for p in problems} == set(gen.RELATIONS)
    assert {p.layout for p in problems} == set(gen.LAYOUTS)
    assert {p.mask for p in problems} == set(gen.MASK_FORMS) | {None}
    assert any(p.empty for p in problems) and any(max(p.n_q, p.n_k) > 2048 for p in problems)
    assert any(p.head_dim % 2 for p in problems) and any(p.head_dim > 256 for p in problems)
    assert any(p.scale is not None and p.scale < 0 for p in problems)
    assert {p.grads for p in problems if p.relation == gen.GRADIENTS} == set(gen.GRAD_SUBSETS)
    dropout = [p.dropout_p for p in problems if p.relation == gen.DROPOUT_LAW]
    assert dropout and all(0 < p < 1 for p in dropout) and max(dropout) > 0.5
    assert all(p.batch * p.q_heads * p.n_q * p.n_k <= gen.MAX_SCORES for p in problems)


def test_draws_respect_the_features_an_impl_lacks():
    problems = [gen.draw(0, i, "float16", frozenset()) for i in range(200)]
    assert all(p.mask is None and not p.causal and p.q_heads == p.kv_heads and p.dropout_p == 0 for p in problems)
    assert {p.relation for p in problems} == {gen.AGREEMENT, gen.METAMORPHIC}


def test_a_correct_impl_passes_drawn_problems():
    for problem, outcome, refused, repro in gen.generated_checks(sdpa_math, [torch.float32, torch.bfloat16], "cpu", 0,
                                                                  0, ALL, problems=8):
        assert refused is None or problem.empty, (problem, refused)
        assert not gen.failed(outcome), (problem.describe(), outcome)


def test_a_failure_shrinks_and_its_reproduction_runs_and_fails_again():
    big = gen.Problem(2, 4, 2, 37, 53, 33, 33, False, "float32", layout="permuted", mask="(B, 1, Nq, Nk)", seed=5)
    outcome, _ = gen.check_problem(head_dim_tail_dropped, big)
    assert gen.failed(outcome)
    small, small_outcome = gen.shrink(head_dim_tail_dropped, big, seconds=60)
    assert gen.failed(small_outcome)
    size = lambda p: p.batch * p.q_heads * p.n_q * p.n_k * p.head_dim
    assert size(small) < size(big) and small.mask is None and small.layout == "contiguous"
    assert small.head_dim % 8 or small.value_dim % 8  # the bug's condition survives shrinking
    code = gen.reproduction(head_dim_tail_dropped, small)
    printed = []
    exec(code, {"print": printed.append})
    assert gen.failed(printed[0])


def test_refusals_are_reported_not_failed():
    def refuses(q, k, v, **kw):
        raise ValueError("head dim > 256 unsupported")
    outcome, refused = gen.check_problem(refuses, gen.draw(0, 0, "float32", ALL))
    assert refused and "unsupported" in refused and not gen.failed(outcome)


def test_a_wrong_answer_is_a_failure_not_a_refusal():
    """The harness's own check of what came back (a list, a wrong shape) is not the impl refusing."""
    problem = gen.draw(0, 0, "float32", ALL)
    for wrong in (lambda q, k, v, **kw: q.tolist(), lambda q, k, v, **kw: q[..., :1]):
        outcome, refused = gen.check_problem(wrong, problem)
        assert refused is None and gen.failed(outcome), outcome


def test_the_budget_bounds_the_time_and_zero_draws_nothing():
    assert list(gen.generated_checks(sdpa_math, [torch.float32], "cpu", 0, 0, ALL)) == []
    import time
    start = time.perf_counter()
    drawn = list(gen.generated_checks(sdpa_math, [torch.float32], "cpu", 0, 2.0, ALL))
    assert drawn and time.perf_counter() - start < 2.0 + 30  # one problem may run past the deadline
