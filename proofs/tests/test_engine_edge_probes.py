"""The probes start at the edge of every symbol's domain, and a value evalf knows only roughly decides nothing.

A red team of the checker (2026-12-04) found no escape, but two weak spots: SymPy's closed form of
Σ_{k=0}^s (−1)^k C(s, k) is 0, false at s = 0, and random probes seldom draw s = 0 (under load the old engine
ran out of its budget on 11 of 17 renamings instead of refuting them); and an evalf result of fewer than 20 bits
counted as 0 ± its size, so a quadrature coming back as 1.0000 agreed with 0."""
from __future__ import annotations

import pytest
import sympy as sp

from proofs.identity import _Undefined, _agree, _edge_value, identity

k = sp.Symbol("k", integer=True)


@pytest.mark.parametrize("name", ["s", "t", "u", "d", "e1"])  # names the old engine's random probes left undecided
def test_a_closed_form_wrong_at_the_range_start_is_refuted_there(name):
    s = sp.Symbol(name, integer=True, nonnegative=True)
    ok, detail = identity(sp.Sum((-1) ** k * sp.binomial(s, k), (k, 0, s)), 0)
    assert ok is False and detail.startswith(f"refuted at {name}=0"), detail


@pytest.mark.parametrize("name", ["s", "t", "nn"])
def test_a_closed_form_wrong_at_the_second_value_is_refuted_there(name):
    s = sp.Symbol(name, integer=True, nonnegative=True)
    ok, detail = identity(sp.Sum((-1) ** k * k * sp.binomial(s, k), (k, 0, s)), 0)
    assert ok is False and detail.startswith(f"refuted at {name}=1"), detail


def test_true_sums_over_the_same_ranges_still_pass():
    s = sp.Symbol("s", integer=True, nonnegative=True)
    assert identity(sp.Sum(1 + 0 * k, (k, 0, s)), s + 1)[0] is True
    assert identity(sp.Sum(k, (k, 0, s)), s * (s + 1) / 2)[0] is True


@pytest.mark.parametrize("assumptions, first, second", [
    ({"integer": True, "nonnegative": True}, 0, 1), ({"integer": True, "positive": True}, 1, 2),
    ({"integer": True, "negative": True}, -1, -2), ({"real": True}, 0, 1), ({"positive": True}, 1, 2),
    ({"integer": True, "even": True, "positive": True}, 2, 4)])
def test_the_edge_values_respect_the_assumptions(assumptions, first, second):
    sym = sp.Symbol("v", **assumptions)
    assert (_edge_value(sym, 0), _edge_value(sym, 1)) == (first, second)


def test_a_rough_nonzero_value_decides_nothing():
    t = sp.Symbol("t", real=True)
    rough = sp.Integral(sp.Abs(t), (t, -1, 1))  # = 1; evalf at 40 digits gives 1.0000 with 19 bits
    with pytest.raises(_Undefined):  # (the old engine: 0 ± 1, agreeing with 0)
        _agree(rough, sp.Integer(0))
