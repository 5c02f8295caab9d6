"""The index-form reducer: true identities for every size are accepted, false ones refused."""
import pytest
import sympy as sp

from proofs import index_sums

n, m = sp.symbols("n m", integer=True, positive=True)
a, b, c, k = sp.symbols("a b c k", integer=True, nonnegative=True)
M, N = sp.MatrixSymbol("M", n, n), sp.MatrixSymbol("N", n, m)


def _s(body, *idx, hi=n - 1):
    return sp.Sum(body, *((x, 0, hi) for x in idx))


@pytest.mark.parametrize("lhs, rhs", [
    (_s(M[a, a], a), sp.Trace(M).rewrite(sp.Sum)),                                    # renaming
    (_s(M[a, b] * sp.KroneckerDelta(a, b), a, b), _s(M[c, c], c)),                       # sifting
    (2 * _s(M[a, a], a), _s(2 * M[c, c], c)),                                           # constants leave the sum
    (_s(M[a, b] + M[b, a], a, b), 2 * _s(M[a, b], a, b)),                               # linearity + renaming
    (_s(M[0, a] * _s(N[a, c], c, hi=m - 1), a), sp.Sum(M[0, k] * N[k, c], (k, 0, n - 1), (c, 0, m - 1))),  # nesting
])
def test_true_identities_are_accepted(lhs, rhs):
    ok, detail = index_sums.same(lhs, rhs)
    assert ok, detail


@pytest.mark.parametrize("lhs, rhs", [
    (_s(M[a, b], a), _s(M[b, a], a)),                          # transposed entry
    (_s(M[a, a], a), 2 * _s(M[a, a], a)),                      # a factor changed
    (_s(M[a, b] ** 2, a, b), _s(M[a, b] * M[b, a], a, b)),     # tr(MMᵀ) against tr(M²)
    (_s(M[a, b] * sp.KroneckerDelta(a, b), a, b), _s(M[a, b], a, b)),  # a delta dropped
    (_s(M[a, a], a), _s(M[a, a], a, hi=n - 2)),                 # a different range
])
def test_false_identities_are_refused(lhs, rhs):
    ok, detail = index_sums.same(lhs, rhs)
    assert not ok and "differ" in detail
