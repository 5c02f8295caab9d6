"""Every deliberately wrong implementation is refused by the invariant it targets, in every dtype its
bug shows in; the correct implementations the mutants are cut from (kernels.harness.references)
pass the whole harness."""
from __future__ import annotations

import ast
import inspect

import pytest
import torch

from kernels import mutants
from kernels.harness import generate as gen
from kernels.harness import paths
from kernels.harness import references, verify_attention
from kernels.harness.features import offered
from kernels.harness.cases import DEFAULT_CASES
from kernels.harness.invariants import INVARIANTS
from kernels.mutants import MUTANTS


FIXED = [m for m in MUTANTS if m.caught_by not in gen.RELATIONS]
GENERATED = [m for m in MUTANTS if m.caught_by in gen.RELATIONS]
# drawn problems of the targeted relation per dtype (seed 0), whatever the machine's speed: the regimes
# (drawn first, generated-agreement) and 8 more
PROBLEMS = len(gen.REGIMES) + 8


@pytest.mark.parametrize("mutant", FIXED, ids=[m.name for m in FIXED])
def test_mutant_is_refused_by_the_invariant_it_targets_in_every_dtype(mutant):
    """Only the targeted invariant runs (the whole run per mutant would cost minutes of CI)."""
    report = verify_attention(mutant.fn, dtypes=mutant.dtypes, backward=mutant.backward,
                              invariants=[mutant.caught_by], first_failure=True)
    assert report.judged, f"{mutant.caught_by} never ran on {mutant.name}"
    for dtype in report.dtypes:
        named = {c.invariant for c in report.failures if c.dtype == dtype}
        assert mutant.caught_by in named, (
            f"{mutant.name} ({mutant.bug_class}) in {dtype} passed {mutant.caught_by}:\n{report}")


@pytest.mark.parametrize("mutant", GENERATED, ids=[m.name for m in GENERATED])
def test_generated_problems_of_a_run_over_the_mutants_dtypes_refuse_the_mutants_only_they_reach(mutant):
    """The run over the mutant's dtypes, each dtype's pass with its own covering rows as the default run's (the
    float64's dealt over them), at most a fixed number of drawn problems besides (not a time budget, so the verdict does
    not depend on load); the draws stop at the first failure. (Once each dtype alone: a run of one dtype judges every
    row of the array in it, so each mutant caught late cost three whole arrays, and CI's run neared its limit.)"""
    features = offered(mutant.fn, backward=mutant.backward)
    judged = gen.generated_checks(mutant.fn, list(mutant.dtypes), "cpu", 0, 0, features, only={mutant.caught_by},
                                  covering=paths.after_regimes(0, mutant.dtypes, features),
                                  problems=PROBLEMS, shrink_seconds=0)
    assert any(refused is None and gen.failed(o) for _, o, refused, _ in judged), mutant.name


def test_at_least_fifteen_distinct_bug_classes():
    assert len({m.bug_class for m in MUTANTS}) == len(MUTANTS) >= 15
    assert len({m.fn for m in MUTANTS}) == len(MUTANTS)


def test_every_invariant_names_some_mutant():
    """Each invariant is the expected catcher of at least one bug: none is a check that cannot fail."""
    assert {m.caught_by for m in MUTANTS} == {i.name for i in INVARIANTS}


_DECODE = [c for c in DEFAULT_CASES if c.name == "decode-4097"]


# The 16-key blocked loop's float32 error grows with its sequential block accumulations: past about 10⁵ keys it leaves
# the bound (README, "Precision of long sequential loops": a true finding about that design, not a false alarm). The
# batched long decodes (up to 2¹⁷ keys in float32, added this stop) reach it; its mutants are not long-decode bugs.
_BLOCKED_REGIMES = tuple(r for r in gen.REGIMES if r not in gen.BATCHED_DECODE)


@pytest.mark.parametrize("correct, options", [
    (references.blocked_attention, {"backward": False, "regimes": _BLOCKED_REGIMES}),
    (references.PlainAttention(), {"backward": False}),
    (references.manual_backward_attention, {}),
    (references.full_attention, {}),
    # the only shape on which it is not the blocked loop: one query over 4097 keys, five splits
    (references.SplitKVAttention(), {"backward": False, "cases": _DECODE}),
], ids=["blocked-online-softmax", "plain", "hand-written-backward", "full-signature", "split-kv-decode"])
def test_the_correct_implementations_the_mutants_are_cut_from_pass(correct, options):
    """So a mutant fails for its bug alone. (The blocked loop's backward is autograd through a Python
    loop: slow, and not what its mutants change, so only its forward is judged; likewise the plain
    and split-KV ones, whose mutants are forward bugs.)"""
    report = verify_attention(correct, **options)
    assert report.judged and report.passed, "\n".join(report.failure_lines())


def test_references_hold_no_bug_switches():
    """A reference is correct code only: no ``bugs`` flags or mutant names in it, so each mutant's
    bug is written in kernels/mutants.py, where it is cut from the reference."""
    source = inspect.getsource(references)
    assert "bugs" not in source and not any(m.name in source for m in MUTANTS)


def test_each_class_mutant_overrides_few_steps_of_one_reference():
    """A mutant cut as a subclass changes one step (two where the bug needs the path that shows it:
    blocks visited backwards with the guard gone; finfo.min with the rows it zeroes; p as keep
    probability in the draw and the rescale)."""
    bases = (references.BlockedAttention, references.PlainAttention, references.SplitKVAttention,
             references.ManualBackwardAttention, references.FullAttention)
    tree = ast.parse(inspect.getsource(mutants))
    # An autograd.Function beside a function mutant (a wrong backward) is a helper, not a cut of a reference.
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef) and node.name != "Mutant"
               and not issubclass(getattr(mutants, node.name), torch.autograd.Function)}
    assert len(classes) >= 45
    for name, node in classes.items():
        assert len(getattr(mutants, name).__bases__) == 1 and getattr(mutants, name).__bases__[0] in bases, name
        methods = [n.name for n in node.body if isinstance(n, ast.FunctionDef)]
        assert 1 <= len(methods) <= 2, (name, methods)
        for method in methods:
            assert any(hasattr(b, method) for b in bases), f"{name}.{method} overrides no step of a reference"
