"""Two small rules that replace attention-backward's last named computation (D from dO and O):

* the engine's sift under an enclosing Σ (identity._sift_enclosed): in Σ_{j=lo}^{hi} F(j), a Σ_{k=lo'}^{hi'} δ(k, j) g(k)
  is g(j) when lo..hi is shown not reversed and shown inside lo'..hi';
* linearity's interchange of a Σ over independent finite ranges (checker._fubini): Σ_j Σ_c f = Σ_c Σ_j f.

Each proves what holds, and refuses what is false: an outer range past the inner one, an outer range that may be
reversed (Karr), a changed summand, ranges that depend on each other, infinite ranges."""
from __future__ import annotations

import pytest
import sympy as sp

from proofs.engine import Proof
from proofs.identity import _finite_sums, identity

n = sp.Symbol("n", integer=True, positive=True)
d = sp.Symbol("d", integer=True, positive=True)
r = sp.Symbol("r", integer=True, nonnegative=True)
m = sp.Symbol("m", integer=True)  # either sign: Σ_{j=1}^{m} may be reversed
j, k, c = sp.symbols("j k c", integer=True, positive=True)
ji, ki = sp.symbols("j k", integer=True)  # indices of a range that may be reversed: declared no more than integers
z, v, w = (sp.IndexedBase(x, real=True) for x in ("z", "v", "w"))
delta = sp.KroneckerDelta


def _eq(a, b):
    return sp.Eq(a, b, evaluate=False)


# ------------------------------------------------------------------ the sift under an enclosing Σ

@pytest.mark.parametrize("lhs,rhs", [
    (sp.Sum(z[j] * sp.Sum(delta(j, k) * v[k, c], (k, 1, n)), (j, 1, n)), sp.Sum(z[j] * v[j, c], (j, 1, n))),
    (sp.Sum(z[j] * sp.Sum(delta(k, j) * v[k], (k, 1, n + r)), (j, 2, n)), sp.Sum(z[j] * v[j], (j, 2, n))),  # inside
    # through a Σ between them that binds another index
    (sp.Sum(z[j] * sp.Sum(w[c] * sp.Sum(delta(j, k) * v[k, c], (k, 1, n)), (c, 1, d)), (j, 1, n)),
     sp.Sum(z[j] * sp.Sum(w[c] * v[j, c], (c, 1, d)), (j, 1, n))),
])
def test_a_delta_of_an_enclosing_index_in_range_is_sifted(lhs, rhs):
    ok, why = identity(lhs, rhs)
    assert ok and "confirmed" not in why, why


@pytest.mark.parametrize("lhs,rhs", [
    # j = n + 1 is past the inner range: its inner sum is 0, not v_{n+1}
    (sp.Sum(z[j] * sp.Sum(delta(j, k) * v[k], (k, 1, n)), (j, 1, n + 1)), sp.Sum(z[j] * v[j], (j, 1, n + 1))),
    # m < 0: Karr's Σ_{j=1}^{m} runs over m + 1 .. 0, outside 1..m's inner reading; the sides differ in sign
    (sp.Sum(z[ji] * sp.Sum(delta(ji, ki) * v[ki], (ki, 1, m)), (ji, 1, m)), sp.Sum(z[ji] * v[ji], (ji, 1, m))),
    # a changed summand: δ(k, j + 1) sifts to v_{j+1}, not v_j
    (sp.Sum(z[j] * sp.Sum(delta(j + 1, k) * v[k], (k, 1, n + 1)), (j, 1, n)), sp.Sum(z[j] * v[j], (j, 1, n))),
    # the inner range starts past the outer one's start: j = 1 is not in 2..n
    (sp.Sum(z[j] * sp.Sum(delta(j, k) * v[k], (k, 2, n)), (j, 1, n)), sp.Sum(z[j] * v[j], (j, 1, n))),
])
def test_a_delta_whose_index_may_leave_the_inner_range_is_not_sifted(lhs, rhs):
    assert not identity(lhs, rhs)[0]


def test_the_false_ones_are_false():
    # the refused identities above are false at a point, not merely undecided
    at = {n: 2, m: -2}
    values = {z[x]: x + 10 for x in range(-3, 5)} | {v[x]: 3 * x + 1 for x in range(-3, 5)}
    for lhs, rhs in [
        (sp.Sum(z[j] * sp.Sum(delta(j, k) * v[k], (k, 1, n)), (j, 1, n + 1)), sp.Sum(z[j] * v[j], (j, 1, n + 1))),
        (sp.Sum(z[ji] * sp.Sum(delta(ji, ki) * v[ki], (ki, 1, m)), (ji, 1, m)), sp.Sum(z[ji] * v[ji], (ji, 1, m))),
    ]:
        assert (lhs.subs(at).doit() - rhs.subs(at).doit()).xreplace(values) != 0


def test_an_index_bound_again_between_is_another_variable():
    # The middle Σ binds j again, over 1..n + 1: its δ(j, k) is its own j, which may be n + 1, past the inner keys
    # 1..n (so it sifts nothing); the outer Σ over 1..n may not sift it as if it were the outer j.
    middle = sp.Sum(w[j] * sp.Sum(delta(j, k) * v[k], (k, 1, n)), (j, 1, n + 1))
    expr = sp.Sum(z[j] * middle, (j, 1, n))
    assert _finite_sums(expr) == expr
    assert not identity(expr, sp.Sum(z[j] * sp.Sum(w[j] * v[j], (j, 1, n + 1)), (j, 1, n)))[0]


# ------------------------------------------------------------------ Σ_j Σ_c = Σ_c Σ_j, independent finite ranges

def _linearity(lhs, rhs, **kw):
    pf = Proof("t-interchange", statement=_eq(lhs, rhs))
    pf.linearity(lhs, rhs, **kw)
    return pf.finish()


def test_sums_over_independent_finite_ranges_commute():
    f = z[j] * w[c] * v[j, c]
    proof = _linearity(sp.Sum(f, (j, 1, n), (c, 1, d)), sp.Sum(f, (c, 1, d), (j, 1, n)))
    assert proof.verified and proof.computations == [], proof.reasons
    nested = _linearity(sp.Sum(z[j] * sp.Sum(w[c] * v[j, c], (c, 1, d)), (j, 1, n)), sp.Sum(f, (c, 1, d), (j, 1, n)),
                        nest=True)  # Σ_{c,j}: w_c, varying in c alone, leaves the sum over j
    assert not nested.verified  # nested the other way (Σ_c w_c Σ_j …): the interchange is a step of its own


@pytest.mark.parametrize("lhs,rhs", [
    # dependent ranges: Σ_{j=1}^{n} Σ_{c=1}^{j} is not Σ_{c=1}^{j} Σ_{j=1}^{n} (whose outer j is free)
    (sp.Sum(z[j] * w[c], (c, 1, j), (j, 1, n)), sp.Sum(z[j] * w[c], (j, 1, n), (c, 1, j))),
    # a changed summand
    (sp.Sum(z[j] * v[j, c], (j, 1, n), (c, 1, d)), sp.Sum(z[c] * v[j, c], (c, 1, d), (j, 1, n))),
    # the ranges swapped between the indices
    (sp.Sum(z[j] * v[j, c], (j, 1, n), (c, 1, d)), sp.Sum(z[j] * v[j, c], (j, 1, d), (c, 1, n))),
    # infinite ranges: a_jc = δ(j, c) − δ(j, c + 1) sums to 0 over c ≥ 0 then j ≥ 1, to −1 over j ≥ 1 then c ≥ 0
    (sp.Sum(delta(j, m) - delta(j, m + 1), (m, 0, sp.oo), (j, 1, sp.oo)),
     sp.Sum(delta(j, m) - delta(j, m + 1), (j, 1, sp.oo), (m, 0, sp.oo))),
])
def test_sums_are_not_interchanged_where_that_is_false(lhs, rhs):
    assert not _linearity(lhs, rhs).verified
