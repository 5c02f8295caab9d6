"""The checker's rules, one behaviour per test; each changed rule is shown still refusing a wrong use."""
import sympy as sp

from proofs.engine import Proof

_i = sp.Symbol("i", integer=True, positive=True)
_m = sp.Symbol("m", integer=True, nonnegative=True)
_n = sp.Symbol("n", integer=True, positive=True)
_a, _T = sp.IndexedBase("a", real=True), sp.IndexedBase("T", real=True)


def _rewrite_sum(rhs):
    pf = Proof("rewrite-sum", statement=sp.Eq(_T[_n], rhs, evaluate=False))
    definition = pf.define(_T[_m], sp.Sum(_a[_i], (_i, 1, _m)), forall=[_m])
    pf.rewrite(_T[_n], rhs, [definition])
    return pf.finish()


def test_a_sum_a_definition_inserts_matches_the_same_sum_over_another_index_structurally():
    j = sp.Symbol("j", integer=True, positive=True)
    d = _rewrite_sum(sp.Sum(_a[j], (j, 1, _n)))
    assert d.verified
    assert "sides identical" in d.check.outcomes[0].detail  # renamed after rewriting: no probes needed


def test_rewriting_into_a_sum_still_refuses_another_range_or_summand():
    j = sp.Symbol("j", integer=True, positive=True)
    for wrong in (sp.Sum(_a[j], (j, 1, _n - 1)), sp.Sum(_a[j], (j, 0, _n)), sp.Sum(2 * _a[j], (j, 1, _n)),
                  sp.Sum(_a[j + 1], (j, 1, _n))):
        assert not _rewrite_sum(wrong).verified, wrong
