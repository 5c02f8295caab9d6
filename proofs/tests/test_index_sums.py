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


def test_a_free_symbol_named_like_a_canonical_index_is_not_captured():
    # The canonical names were once Symbols k0, k1, …: a free k0 then met Σ_a M[a, k0] renamed to Σ_k0 M[k0, k0].
    k0 = sp.Symbol("k0", integer=True, nonnegative=True)
    assert not index_sums.same(_s(M[a, k0], a), _s(M[a, a], a))[0]
    assert index_sums.same(_s(M[a, k0], a), _s(M[b, k0], b))[0]


def test_a_delta_sifts_only_an_index_shown_in_range():
    x, r = sp.symbols("x r", integer=True, nonnegative=True)
    f = sp.IndexedBase("f")
    # x may be ≥ n: then Σ_{y<n} δ_xy f_y = 0, not f_x.
    assert not index_sums.same(_s(sp.KroneckerDelta(x, b) * f[b], b), f[x])[0]
    # n = x + r + 1 puts x in 0..n − 1.
    assert index_sums.same(_s(sp.KroneckerDelta(x, b) * f[b], b, hi=x + r), f[x])[0]
    # Summed over a range inside y's, the outer index may be sifted; over a wider one it may not.
    assert index_sums.same(sp.Sum(sp.KroneckerDelta(a, b) * f[b], (a, 0, n - 1), (b, 0, n - 1)), _s(f[a], a))[0]
    assert not index_sums.same(sp.Sum(sp.KroneckerDelta(a, b) * f[b], (a, 0, n), (b, 0, n - 1)),
                               sp.Sum(f[a], (a, 0, n)))[0]
