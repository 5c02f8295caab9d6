"""Every deliberately wrong implementation is refused by the invariant it targets, in every dtype its
bug shows in; the correct implementations the mutants are cut from pass the whole harness."""
from __future__ import annotations

import pytest

from kernels.harness import generate as gen
from kernels.harness import verify_attention
from kernels.harness.features import offered
from kernels.harness.invariants import INVARIANTS
from kernels.mutants import MUTANTS, blocked_attention, full_attention, manual_backward_attention


FIXED = [m for m in MUTANTS if m.caught_by not in gen.RELATIONS]
GENERATED = [m for m in MUTANTS if m.caught_by in gen.RELATIONS]
PROBLEMS = 8  # drawn problems of the targeted relation per dtype (seed 0), whatever the machine's speed


@pytest.mark.parametrize("mutant", FIXED, ids=[m.name for m in FIXED])
def test_mutant_is_refused_by_the_invariant_it_targets_in_every_dtype(mutant):
    """Only the targeted invariant runs (the whole run per mutant would cost minutes of CI)."""
    report = verify_attention(mutant.fn, dtypes=mutant.dtypes, backward=mutant.backward,
                              invariants=[mutant.caught_by])
    assert report.judged, f"{mutant.caught_by} never ran on {mutant.name}"
    for dtype in report.dtypes:
        named = {c.invariant for c in report.failures if c.dtype == dtype}
        assert mutant.caught_by in named, (
            f"{mutant.name} ({mutant.bug_class}) in {dtype} passed {mutant.caught_by}:\n{report}")


@pytest.mark.parametrize("mutant", GENERATED, ids=[m.name for m in GENERATED])
def test_generated_problems_refuse_the_mutants_only_they_reach_in_every_dtype(mutant):
    """A fixed number of drawn problems (not a time budget), so the verdict does not depend on load."""
    features = offered(mutant.fn, backward=mutant.backward)
    for dtype in mutant.dtypes:
        judged = list(gen.generated_checks(mutant.fn, [dtype], "cpu", 0, 0, features, only={mutant.caught_by},
                                           problems=PROBLEMS, shrink_seconds=0))
        assert len(judged) == PROBLEMS
        assert any(refused is None and gen.failed(o) for _, o, refused, _ in judged), (mutant.name, dtype)


def test_at_least_fifteen_distinct_bug_classes():
    assert len({m.bug_class for m in MUTANTS}) == len(MUTANTS) >= 15
    assert len({m.fn for m in MUTANTS}) == len(MUTANTS)


def test_every_invariant_names_some_mutant():
    """Each invariant is the expected catcher of at least one bug: none is a check that cannot fail."""
    assert {m.caught_by for m in MUTANTS} == {i.name for i in INVARIANTS}


@pytest.mark.parametrize("correct, backward", [(blocked_attention, False), (manual_backward_attention, True),
                                               (full_attention, True)],
                         ids=["blocked-online-softmax", "hand-written-backward", "full-signature"])
def test_the_correct_implementations_the_mutants_are_cut_from_pass(correct, backward):
    """So a mutant fails for its bug alone. (The blocked loop's backward is autograd through a Python
    loop: slow, and not what its mutants change, so only its forward is judged here.)"""
    report = verify_attention(correct, backward=backward)
    assert report.passed, "\n".join(report.failure_lines())
