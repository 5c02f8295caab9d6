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
    j0 = sp.Symbol("j", integer=True, nonnegative=True)  # over 0..n an index may be declared only what 0..n implies
    for wrong in (sp.Sum(_a[j], (j, 1, _n - 1)), sp.Sum(_a[j0], (j0, 0, _n)), sp.Sum(2 * _a[j], (j, 1, _n)),
                  sp.Sum(_a[j + 1], (j, 1, _n))):
        assert not _rewrite_sum(wrong).verified, wrong


_k = sp.Symbol("k", integer=True, nonnegative=True)


def _generalised(prove, statement, symbols):
    pf = Proof("generalisation", statement=statement)
    fact = prove(pf)
    general = pf.generalisation(fact, symbols)
    return pf, general


def test_a_generalised_step_rewrites_at_any_admissible_value():
    # Σ_{i ≤ k} 1 = k for a symbol k proved from nothing about k, then used at k = n + 1.
    def prove(pf):
        return pf.identity(sp.Sum(1, (_i, 1, _k)), _k)
    target = sp.Eq(sp.Sum(1, (_i, 1, _n + 1)), _n + 1, evaluate=False)
    pf, general = _generalised(prove, target, [_k])
    pf.rewrite(target.lhs, target.rhs, [general])
    assert pf.finish().verified


def test_generalisation_refuses_a_fact_that_rests_on_an_assumption_about_the_symbol():
    target = sp.Eq(_n**2, 9, evaluate=False)
    def prove(pf):
        three = pf.assume(sp.Eq(_k, 3))
        return pf.rewrite(_k**2, 9, [three])
    pf, general = _generalised(prove, target, [_k])
    pf.rewrite(_n**2, 9, [general])
    d = pf.finish()
    assert not d.verified and any("mentions" in o.detail for o in d.check.outcomes)


def test_generalisation_refuses_a_citation_a_hypothesis_and_an_unchecked_assumption():
    inner = Proof("k-is-three", statement=sp.Eq(_k**2, 9, evaluate=False))
    three = inner.assume(sp.Eq(_k, 3))
    inner.rewrite(_k**2, 9, [three])
    cited = inner.finish()
    assert cited.verified  # proved given k = 3: not for every k
    pf = Proof("generalise-citation", statement=sp.Eq(_n**2, 9, evaluate=False))
    general = pf.generalisation(pf.cite(cited), [_k])
    pf.rewrite(_n**2, 9, [general])
    assert not pf.finish().verified
    even = sp.Symbol("e", integer=True, even=True)  # a pattern would not check evenness
    pf = Proof("generalise-even", statement=sp.Eq(sp.cos(sp.pi * _n), 1, evaluate=False))
    general = pf.generalisation(pf.identity(sp.cos(sp.pi * even), 1), [even])
    pf.rewrite(sp.cos(sp.pi * _n), 1, [general])
    d = pf.finish()
    # the pattern checks evenness: n (any integer) does not match it, so the lemma does not apply
    assert not d.verified and d.check.outcomes[-1].detail.startswith("after 0 rewrite") or \
        "refuted" in d.check.outcomes[-1].detail
    pf = Proof("generalise-hypothesis", statement=sp.Eq(_n, 3, evaluate=False))
    hyp = pf.hypothesis(sp.Eq(_k, 3))
    general = pf.generalisation(hyp, [_k])
    d = pf.finish()
    assert not d.verified


_W, _x, _U, _Q = (sp.IndexedBase(name, real=True) for name in ("W", "x", "U", "Q"))
_p = sp.Symbol("p", integer=True, positive=True)
_c = sp.Symbol("c", integer=True, positive=True)


def _columns(rhs):
    """Σ_c U_{c,n}² rewritten with U_{p,m} := Σ_{a≤m} W_ap x_a: a sum inserted inside a renamed sum."""
    lhs = sp.Sum(_U[_c, _n] ** 2, (_c, 1, _n))
    pf = Proof("columns", statement=sp.Eq(lhs, rhs, evaluate=False))
    definition = pf.define(_U[_p, _m], sp.Sum(_W[_i, _p] * _x[_i], (_i, 1, _m)), forall=[_p, _m])
    pf.rewrite(lhs, rhs, [definition])
    return pf.finish()


def test_a_sum_inserted_inside_a_renamed_sum_does_not_capture_its_index():
    assert _columns(sp.Sum(sp.Sum(_W[_i, _c] * _x[_i], (_i, 1, _n)) ** 2, (_c, 1, _n))).verified
    assert not _columns(sp.Sum(sp.Sum(_W[_c, _c] * _x[_c], (_c, 1, _n)) ** 2, (_c, 1, _n))).verified
    assert not _columns(sp.Sum(sp.Sum(_W[_c, _i] * _x[_i], (_i, 1, _n)) ** 2, (_c, 1, _n))).verified


def test_a_pattern_over_two_symbols_rewrites_where_one_of_them_is_zero():
    def empty(value):
        r = sp.Symbol("r", integer=True, positive=True)
        pf = Proof("empty-row", statement=sp.Eq(_Q[r, 0], value, evaluate=False))
        definition = pf.define(_Q[_p, _m], sp.Sum(_W[_p, _i] ** 2, (_i, 1, _m)), forall=[_p, _m])
        pf.rewrite(_Q[r, 0], value, [definition])
        return pf.finish()

    assert empty(0).verified
    assert not empty(1).verified and not empty(_W[1, 1] ** 2).verified
