"""The engine's exact evaluation of finite sums (identity._finite_sums): written-out numeric ranges, constant
summands and δ-sifts are exact for every integer range (Karr's convention), so their identities need no
simplify and no confirmation probes; a sift whose index may fall outside the range, a reversed numeric
range and a sum over several indices are not evaluated by the wrong rule."""
from __future__ import annotations

import pytest
import sympy as sp

from proofs.identity import _finite_sums, identity

k, j = sp.symbols("k j", integer=True)  # integers of either sign
n = sp.Symbol("n", integer=True, positive=True)
r = sp.Symbol("r", integer=True, nonnegative=True)
z = sp.IndexedBase("z", real=True)
f = sp.Function("f")


@pytest.mark.parametrize("expr,value", [
    (sp.Sum(sp.exp(z[k]) * sp.KroneckerDelta(k, n), (k, 1, n + r)), sp.exp(z[n])),  # 1 ≤ n ≤ n + r
    (sp.Sum(sp.KroneckerDelta(n, k), (k, 1, n + r)), 1),
    (sp.Sum(z[k], (k, 1, 0)), 0),
    (sp.Product(z[k], (k, 1, 0)), 1),
    (sp.Sum(z[k] ** 2, (k, 2, 4)), z[2] ** 2 + z[3] ** 2 + z[4] ** 2),
    (sp.Sum(2, (k, 2, n)), 2 * (n - 1)),
    (sp.Sum(1, (k, 1, j)), j),  # Karr: Σ_{1..j} 1 = −Σ_{j+1..0} 1 = j for j < 0 too
    (sp.Sum(1, (k, 1, n), (j, 1, r)), n * r),
])
def test_what_holds_for_every_range_is_evaluated(expr, value):
    assert sp.expand(_finite_sums(expr) - value) == 0


@pytest.mark.parametrize("expr", [
    sp.Sum(sp.exp(z[k]) * sp.KroneckerDelta(k, n), (k, 1, j)),  # n may exceed j
    sp.Sum(f(k) * sp.KroneckerDelta(k, j), (k, 1, n)),  # j may be 0 or negative
    sp.Sum(z[k] * sp.KroneckerDelta(k, n + r + 1), (k, 1, n + r)),  # past the top
    sp.Sum(z[k] * sp.KroneckerDelta(k, sp.Symbol("x", real=True)), (k, 1, n)),  # x need not be an integer
    sp.Sum(z[k], (k, 3, 1)),  # a reversed numeric range: Karr's −z₂, not written out forwards
    sp.Sum(1, (k, 1, j), (j, 1, n)),  # the inner range depends on the outer index: no product of counts
    sp.Sum(z[k], (k, sp.Rational(1, 2), 3)),  # not an integer range
])
def test_what_may_not_hold_is_left_alone(expr):
    assert _finite_sums(expr) == expr


def test_several_indices_are_not_read_as_the_first_alone():
    # A rule that looked only at limits[0] would give n for Σ_{k ≤ n} Σ_{j ≤ r} 1.
    assert sp.expand(_finite_sums(sp.Sum(1, (k, 1, n), (j, 1, r)))) == n * r
    assert _finite_sums(sp.Sum(z[k], (k, 1, 2), (j, 1, 2))) == sp.Sum(z[k], (k, 1, 2), (j, 1, 2))


@pytest.mark.parametrize("lhs,rhs", [
    (sp.Sum(sp.exp(z[k]) * sp.KroneckerDelta(k, n), (k, 1, n + r)), sp.exp(z[n])),
    (sp.Sum(2, (k, 2, n)), 2 * n - 2),
    (sp.Sum(1, (k, 1, n), (j, 1, r)), n * r),
])
def test_their_identities_are_exact_not_simplify_confirmed(lhs, rhs):
    ok, why = identity(lhs, rhs)
    assert ok and "confirmed" not in why, why


@pytest.mark.parametrize("lhs,rhs", [
    (sp.Sum(sp.exp(z[k]) * sp.KroneckerDelta(k, n), (k, 1, j)), sp.exp(z[n])),
    (sp.Sum(f(k) * sp.KroneckerDelta(k, j), (k, 1, n)), f(j)),
    (sp.Sum(z[k], (k, 3, 1)), z[2]),
    (sp.Sum(1, (k, 1, n), (j, 1, r)), n),
    (sp.Sum(1, (k, 1, j)), sp.Abs(j)),
])
def test_false_ones_are_refused(lhs, rhs):
    assert not identity(lhs, rhs)[0]
