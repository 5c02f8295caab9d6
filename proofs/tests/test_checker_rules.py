"""The checker's generalisation, truncation and matrix-definition rules: each proves what it should
and refuses a wrong use."""
import sympy as sp

from proofs.engine import Proof

x, y = sp.symbols("x y", real=True)
n = sp.Symbol("n", integer=True, positive=True)
k = sp.Symbol("k", integer=True, nonnegative=True)
f = sp.Function("f")
e = sp.IndexedBase("e", positive=True)


def _eq(a, b):
    return sp.Eq(a, b, evaluate=False)


def test_a_generalised_step_rewrites_as_a_pattern():
    pf = Proof("t-general", statement=_eq(f(y + 1) - f(y), 2 * y + 1))
    square = pf.define(f(x), x**2, forall=[x])
    lemma = pf.rewrite(f(x + 1) - f(x), 2 * x + 1, [square], forall=[x])
    pf.rewrite(f(y + 1) - f(y), 2 * y + 1, [lemma])
    d = pf.finish()
    assert d.verified and d.computations == [], d.reasons


def test_a_step_resting_on_a_premise_about_its_symbol_is_not_generalised():
    pf = Proof("t-general-bad", statement=_eq(y, 1))
    one = pf.assume(_eq(x, 1))
    lemma = pf.rewrite(x, 1, [one], forall=[x])  # true of this x, not of every x
    pf.rewrite(y, 1, [lemma])
    d = pf.finish()
    assert not d.verified
    assert any("not generalised" in r and "mentions x" in r for r in d.reasons)


def test_a_pattern_enforces_every_declared_assumption_even_primality():
    p, g = sp.Symbol("p", prime=True), sp.Function("g")
    pf = Proof("t-prime", statement=_eq(g(4), 1))
    pf.rewrite(g(4), 1, [pf.assume(_eq(g(p), 1), forall=[p])])  # an assumption over primes
    assert not pf.finish().verified  # 4 is not prime: the pattern does not match it
    pf = Proof("t-prime-5", statement=_eq(g(5), 1))
    pf.rewrite(g(5), 1, [pf.assume(_eq(g(p), 1), forall=[p])])
    assert pf.finish().verified


def test_truncation_cuts_an_indicator_sum_within_its_range():
    m = sp.Symbol("m", integer=True, nonnegative=True)
    indicator = sp.Piecewise((1, k <= m), (0, True))
    full = sp.Sum(e[k] * indicator, (k, 0, m + n))
    pf = Proof("t-trunc", statement=_eq(full, sp.Sum(e[k], (k, 0, m))))
    pf.truncation(full, sp.Sum(e[k], (k, 0, m)))
    d = pf.finish()
    assert d.verified and d.computations == [], d.reasons


def test_truncation_refuses_a_cut_past_the_range_or_the_wrong_way():
    m = sp.Symbol("m", integer=True, nonnegative=True)
    past = sp.Sum(e[k] * sp.Piecewise((1, k <= m + 1), (0, True)), (k, 0, m))  # m + 1 > hi: not cut
    pf = Proof("t-trunc-past", statement=_eq(past, sp.Sum(e[k], (k, 0, m + 1))))
    pf.truncation(past, sp.Sum(e[k], (k, 0, m + 1)))
    assert not pf.finish().verified
    upper = sp.Sum(e[k] * sp.Piecewise((1, k >= m), (0, True)), (k, 0, m + n))  # keeps k ≥ m: no prefix
    pf = Proof("t-trunc-ge", statement=_eq(upper, sp.Sum(e[k], (k, 0, m))))
    pf.truncation(upper, sp.Sum(e[k], (k, 0, m)))
    assert not pf.finish().verified


def test_a_matrix_symbol_may_be_defined_and_its_definition_is_listed():
    Q = sp.MatrixSymbol("Q", 1, 2)
    good = sp.ImmutableMatrix([[1, 2]]) * 2
    for stated, proved in ((sp.ImmutableMatrix([[2, 4]]), True), (sp.ImmutableMatrix([[2, 5]]), False)):
        pf = Proof("t-matrix", statement=_eq(Q, stated))
        pf.rewrite(Q, stated, [pf.define(Q, good)])
        d = pf.finish()
        assert d.verified is proved, d.reasons
        if proved:
            assert "definition" in d.trust_base


def test_a_pattern_instance_may_be_zero_where_its_symbol_allows_it_and_not_elsewhere():
    g = sp.Function("g")
    a, b = sp.Symbol("a", integer=True, nonnegative=True), sp.Symbol("b", integer=True, positive=True)
    for zero_ok, symbol in ((True, a), (False, b)):
        pf = Proof("t-zero", statement=_eq(g(2, 0), 2))
        pf.rewrite(g(2, 0), 2, [pf.define(g(n, symbol), n + symbol, forall=[n, symbol])])
        assert pf.finish().verified is zero_ok


def test_linearity_swaps_indices_of_one_same_range_and_no_others():
    a, b = sp.symbols("a b", integer=True, nonnegative=True)
    m = sp.Symbol("m", integer=True, positive=True)
    g = sp.IndexedBase("g", real=True)
    swapped_same = (sp.Sum(g[a, b] * e[a], (a, 0, n), (b, 0, n)), sp.Sum(g[b, a] * e[b], (a, 0, n), (b, 0, n)))
    swapped_other = (sp.Sum(g[a, b] * e[a], (a, 0, n), (b, 0, m)), sp.Sum(g[b, a] * e[b], (a, 0, n), (b, 0, m)))
    for (lhs, rhs), proved in ((swapped_same, True), (swapped_other, False)):
        pf = Proof("t-fubini", statement=_eq(lhs, rhs))
        pf.linearity(lhs, rhs)
        assert pf.finish().verified is proved


def test_a_step_resting_on_a_citation_about_its_symbol_is_not_generalised():
    inner = Proof("t-inner", statement=_eq(x + 1, 2))
    inner.rewrite(x + 1, 2, [inner.assume(_eq(x, 1))])  # proved, given the assumption x = 1
    inner = inner.finish()
    assert inner.verified
    pf = Proof("t-cite-general", statement=_eq(y + 1, 2))
    lemma = pf.cite(inner)
    general = pf.rewrite(x + 1, 2, [lemma], forall=[x])  # would make every x equal 1
    pf.rewrite(y + 1, 2, [general])
    d = pf.finish()
    assert not d.verified and any("premises mention x" in r for r in d.reasons)


def test_instance_takes_admissible_values_only():
    j = sp.Symbol("j", integer=True, positive=True)
    d = sp.IndexedBase("d", real=True)
    u = sp.Symbol("u", positive=True)
    for value, proved in ((n + 1, True), (sp.Integer(0), False), (sp.Rational(1, 2), False)):
        pf = Proof("t-instance", statement=sp.Le(sp.Abs(d[value]), u, evaluate=False))
        bounded = pf.assume(sp.Le(sp.Abs(d[j]), u, evaluate=False), forall=[j])
        pf.instance(bounded, {j: value})
        assert pf.finish().verified is (proved and value != 0), value


def test_peeling_the_last_factor_of_a_product():
    k_ = sp.Symbol("K", integer=True, positive=True)  # not "k": one name is one symbol in a relation
    f_ = sp.IndexedBase("f", real=True)
    good = (sp.Product(f_[k], (k, 1, k_)), sp.Product(f_[k], (k, 1, k_ - 1)) * f_[k_])
    bad = (sp.Product(f_[k], (k, 1, k_)), sp.Product(f_[k], (k, 1, k_ - 1)) * f_[k_ - 1])
    for (lhs, rhs), proved in ((good, True), (bad, False)):
        pf = Proof("t-peel", statement=_eq(lhs, rhs))
        pf.truncation(lhs, rhs, peel=k_)
        assert pf.finish().verified is proved


def test_a_cited_theorem_generalises_over_a_symbol_its_premises_leave_free():
    inner = Proof("t-inner-free", statement=_eq((x + 1)**2, x**2 + 2 * x + 1))
    inner.identity((x + 1)**2, x**2 + 2 * x + 1)
    inner = inner.finish()
    pf = Proof("t-cite-free", statement=_eq((y + 1)**2, y**2 + 2 * y + 1))
    general = pf.rewrite((x + 1)**2, x**2 + 2 * x + 1, [pf.cite(inner)], forall=[x])
    pf.rewrite((y + 1)**2, y**2 + 2 * y + 1, [general])
    d = pf.finish()
    assert d.verified, d.reasons


def test_an_induction_step_resting_on_a_cited_assumption_about_k_is_refused():
    kk = sp.Symbol("k", integer=True, positive=True)
    inner = Proof("t-inner-k", statement=_eq(2 * kk, 2))
    inner.rewrite(2 * kk, 2, [inner.assume(_eq(kk, 1))])  # true only at k = 1
    inner = inner.finish()
    P = sp.Eq(2 * n, 2 * n, evaluate=False)  # a trivially true P, so only the citation check can refuse
    pf = Proof("t-ind-cite", statement=P)
    hyp = pf.hypothesis(sp.Eq(2 * (kk - 1), 2 * (kk - 1), evaluate=False))
    cited_ = pf.cite(inner)
    step = pf.rewrite(2 * kk, 2 * kk, [cited_])
    pf.induction(P, n, 0, pf.identity(sp.Integer(0), sp.Integer(0)), step, hyp, step_var=kk)
    d = pf.finish()
    assert any("rests on citation" in o.detail for o in d.check.outcomes if not o.passed)


def test_an_empty_range_sums_to_zero_and_a_short_one_is_not_empty():
    m = sp.Symbol("m", integer=True, positive=True)
    for limits, value, proved in (((k, m, m - 1), 0, True), ((k, m, m), 0, False)):
        pf = Proof("t-empty", statement=_eq(sp.Sum(e[k], limits), value))
        pf.truncation(sp.Sum(e[k], limits), value)
        assert pf.finish().verified is proved


# --- a Limit is shown defined only where a rewrite's premise states its value --------------------------------------

_d = sp.Symbol("d", integer=True, positive=True)
_lim = sp.Limit(sp.Symbol("a"), _d, sp.oo)  # an opaque limit, as the scale trap states one
_zeta = sp.IndexedBase("zeta", real=True)
_j = sp.Symbol("j", integer=True, positive=True)


def _limit_proof(value, *, premises=("limit", "zero"), zero=0, rule="rewrite"):
    """Limit(a, d, ∞) = ``value``, from lim = Σ_{j=1}^{n} ζ_j / n (stated, "limit") and ζ_j = ``zero`` (∀ j, "zero")."""
    pf = Proof("t-limit", statement=_eq(_lim, value), assumptions=["a limit stated"])
    stated = {"limit": pf.cite_external(_eq(_lim, sp.Sum(_zeta[_j], (_j, 1, n)) / n), "a limit theorem"),
              "zero": pf.cite_external(_eq(_zeta[_j], zero), "its inputs' limits", forall=[_j]),
              "elsewhere": pf.cite_external(_eq(_lim, sp.Limit(sp.Symbol("b"), _d, sp.oo)), "another limit")}
    using = [stated[p] for p in premises]
    if rule == "rewrite":
        pf.rewrite(_lim, value, using)
    elif rule == "identity":
        pf.identity(_lim, value)
    else:
        pf.chain(using, _lim, "=", value)
    return pf.finish()


def test_a_limit_stated_by_a_premise_is_rewritten_to_its_value():
    d = _limit_proof(0)
    assert d.verified and d.computations == [], d.reasons


def test_a_limit_whose_value_no_premise_states_is_not_shown_defined():
    for d in (_limit_proof(0, premises=("zero",)), _limit_proof(_lim, premises=()), _limit_proof(0, rule="identity"),
              _limit_proof(0, premises=("limit", "zero"), rule="chain")):
        assert not d.verified
        assert any("not shown defined" in s.detail or "stated by no premise" in s.detail for s in d.failed_steps), \
            [s.detail for s in d.failed_steps]


def test_a_limit_rewritten_to_another_limit_is_not_shown_defined():
    d = _limit_proof(sp.Limit(sp.Symbol("b"), _d, sp.oo), premises=("elsewhere",))
    assert not d.verified and "stated by no premise" in d.failed_steps[0].detail, d.reasons


def test_a_limit_with_the_wrong_value_is_refuted():
    assert not _limit_proof(1).verified  # Σ 0 / n = 0, not 1
    assert not _limit_proof(0, zero=_j).verified  # ζ_j = j: the limit is (n + 1)/2
