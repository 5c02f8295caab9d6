"""Every deliberately wrong implementation is refused, and named by the invariant it breaks."""
from __future__ import annotations

import pytest

from kernels.harness import verify_attention
from kernels.harness.invariants import INVARIANTS
from kernels.mutants import MUTANTS, blocked_attention, manual_backward_attention


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
def test_mutant_is_refused_by_the_right_invariant_in_every_dtype(mutant):
    report = verify_attention(mutant.fn, dtypes=mutant.dtypes, backward=mutant.backward)
    assert not report.passed, f"{mutant.name} ({mutant.bug_class}) passed"
    for dtype in report.dtypes:
        named = {c.invariant for c in report.failures if c.dtype == dtype}
        assert mutant.caught_by in named, (
            f"{mutant.name} ({mutant.bug_class}) in {dtype} was refused by {sorted(named)}, not by {mutant.caught_by}")


def test_at_least_fifteen_distinct_bug_classes():
    assert len({m.bug_class for m in MUTANTS}) == len(MUTANTS) >= 15
    assert len({m.fn for m in MUTANTS}) == len(MUTANTS)


def test_every_invariant_names_some_mutant():
    """Each invariant is the expected catcher of at least one bug: none is a check that cannot fail."""
    assert {m.caught_by for m in MUTANTS} == {i.name for i in INVARIANTS}


@pytest.mark.parametrize("correct, backward", [(blocked_attention, False), (manual_backward_attention, True)],
                         ids=["blocked-online-softmax", "hand-written-backward"])
def test_the_correct_implementations_the_mutants_are_cut_from_pass(correct, backward):
    """So a mutant fails for its bug alone. (The blocked loop's backward is autograd through a Python
    loop: slow, and not what its mutants change, so only its forward is judged here.)"""
    report = verify_attention(correct, backward=backward)
    assert report.passed, str(report)
