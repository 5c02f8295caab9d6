"""The tenth red team's family against the checker (rt33): the checker transformed a conclusion (rewrote it, distributed
E or Σ, put a value in for an induction's variable, truncated a sum) and only then asked whether it was defined, and
SymPy cancels as it builds (B·B⁻¹ is 1, 0·x is 0): f(B)·B = 1 came out "proved" from f(x) := 1/x, with B = 0 allowed.

Design rule now: a step's conclusion is shown defined *as written*, before any rule transforms it; its conditions (a
denominator non-zero, a log's argument positive, …) are read off it then, and a rewrite maps each condition's own
expression through itself (sound: the step holds under its premises). Each premise right side a rewrite puts in brings
its conditions as written at the values put in. Each test shows a refusal and a control that passes once the missing
condition holds. The red team's own certificates were lost with its working directory; these are rebuilt, one per
mechanism it named. Measured against the checker before the rule (4f145cb): the definition, rewrite, linearity and
g(−∞, −∞) certificates and the two-meanings-of-E citation were "proved"; the induction and truncation ones were
refused already, for other reasons (a failed base step; the engine's own check), and stay as tests of the rule."""
import pytest
import sympy as sp

from proofs.checker import check
from proofs.tests.certs import cert, eq, prem, step

f, E = sp.Function("f"), sp.Function("E")
x = sp.Symbol("x")
n = sp.Symbol("n", integer=True, nonnegative=True)
k = sp.Symbol("k", integer=True, positive=True)
X = sp.Symbol("X")


def _u(positive):
    return sp.Symbol("u", positive=True) if positive else sp.Symbol("u")


def _step(verdict, sid):
    return next(o for o in verdict.outcomes if o.id == sid)


def _judged(v, positive, sid="S1", why="not shown defined as written"):
    """Proved exactly when u > 0 is declared; otherwise refused at ``sid`` for ``why``."""
    assert v.proved is positive, v.line
    if not positive:
        assert why in _step(v, sid).detail, _step(v, sid).detail


@pytest.mark.parametrize("positive", [False, True])
def test_a_definition_put_in_at_its_pole(positive):
    u = _u(positive)
    statement = eq(sp.Mul(f(u), u, evaluate=False), 1)  # f(u)·u = 1 from f(x) := 1/x: u = 0 is a pole
    v = check(cert(statement, [prem("D1", "definition", eq(f(x), 1 / x), forall=[x])],
                   [step("S1", "rewrite", statement, ["D1"])]))
    assert v.proved is positive, v.line
    if not positive:
        assert "not shown defined" in _step(v, "S1").detail and "premise put it in" in _step(v, "S1").detail


@pytest.mark.parametrize("positive", [False, True])
def test_a_conclusion_undefined_as_written_that_a_rewrite_would_cancel(positive):
    u = _u(positive)
    c = sp.Symbol("c")
    statement = eq(sp.Mul(1 / u, c, evaluate=False), 1)  # (1/u)·c = 1 with c := u: u·u⁻¹ is built as 1
    v = check(cert(statement, [prem("D1", "definition", eq(c, u))], [step("S1", "rewrite", statement, ["D1"])]))
    _judged(v, positive, "S1")


@pytest.mark.parametrize("positive", [False, True])
def test_linearity_does_not_pull_a_pole_out_of_the_expectation(positive):
    u = _u(positive)
    statement = eq(sp.Mul(E(X / u), u, evaluate=False), E(X))  # E(X/u)·u = E(X): u/u cancels once 1/u is out of E
    v = check(cert(statement, [], [step("S1", "linearity", statement, operator=sp.srepr(E), random=[sp.srepr(X)])]))
    _judged(v, positive, "S1")


@pytest.mark.parametrize("positive", [False, True])
def test_an_induction_over_a_statement_with_a_pole(positive):
    u = _u(positive)
    def P(m):
        return eq(sp.Sum(1 / u, (sp.Symbol("j", integer=True), 1, m)), m / u)
    hyp, base, ind = P(k - 1), P(sp.Integer(0)), P(k)
    v = check(cert(P(n), [prem("H", "hypothesis", hyp)], [
        step("S1", "identity", base),
        step("S2", "rewrite", ind, ["H"]),
        {**step("S3", "induction", P(n), ["S1", "S2", "H"]), "var": sp.srepr(n), "base": sp.srepr(sp.Integer(0)),
         "step_var": sp.srepr(k)}]))
    _judged(v, positive, "S3")


@pytest.mark.parametrize("positive", [False, True])
def test_truncation_does_not_drop_a_pole(positive):
    u, m = _u(positive), sp.Symbol("m", integer=True, nonnegative=True)
    j = sp.Symbol("j", integer=True)
    indicator = sp.Piecewise((1, sp.Le(j, m)), (0, True))
    # Σ_{j=1}^{m+1} [j ≤ m]·(u/u) … written so: the summand's 1/u is there before the sum is cut
    lhs = sp.Sum(sp.Mul(indicator, 1 / u, u + 1, evaluate=False), (j, 1, m + 1))
    statement = eq(lhs, sp.Sum(sp.Mul(1 / u, u + 1, evaluate=False), (j, 1, m)))
    v = check(cert(statement, [], [step("S1", "truncation", statement)]))
    _judged(v, positive, "S1")


def test_a_running_maximum_may_be_minus_infinity_but_not_both():
    """The online-softmax merge is used at m = −∞ (its identity element): an instance where only one maximum is −∞
    is defined; one where both are builds −∞ − (−∞) = nan, and is refused."""
    a, b = sp.Symbol("a", extended_real=True), sp.Symbol("b", extended_real=True)
    g = sp.Function("g")
    y = sp.Symbol("y", real=True)
    body = sp.exp(a - sp.Max(a, b))
    ok = eq(g(-sp.oo, y), 0)
    v = check(cert(ok, [prem("D1", "definition", eq(g(a, b), body), forall=[a, b])], [step("S1", "rewrite", ok, ["D1"])]))
    assert v.proved, v.line
    bad = eq(g(-sp.oo, -sp.oo), 1)
    v = check(cert(bad, [prem("D1", "definition", eq(g(a, b), body), forall=[a, b])], [step("S1", "rewrite", bad, ["D1"])]))
    assert not v.proved and "nan" in _step(v, "S1").detail, v.line


# --- the same red team's other findings, each closed by a rule of its own

def test_names_that_print_alike_are_two_symbols_no_reader_could_tell_apart():
    for a, b in [("x1", "x₁"), ("x_1", "x1"), ("ϕ", "φ")]:
        statement = eq(sp.Symbol(a), sp.Symbol(b))
        v = check(cert(statement, [], [step("S1", "identity", statement)]))
        assert not v.proved and "print alike" in v.line, v.line
    statement = eq(sp.Symbol("x1") + sp.Symbol("x2"), sp.Symbol("x2") + sp.Symbol("x1"))  # control: x1, x2 differ
    assert check(cert(statement, [], [step("S1", "identity", statement)])).proved


def _linear(statement, random, claim):
    return cert(statement, [], [step("S1", "linearity", statement, operator=sp.srepr(E), random=[sp.srepr(random)])],
                claim=claim)


def test_one_operator_keeps_one_meaning_of_random_across_citations():
    Y = sp.Symbol("Y")
    a = _linear(eq(E(X * Y), X * E(Y)), Y, "t-a")                 # X pulled out of E: a constant
    b = _linear(eq(E(X + 1), E(X) + 1), X, "t-b")                 # X random
    both = sp.And(eq(E(X * Y), X * E(Y)), eq(E(X + 1), E(X) + 1))
    steps = [{**step("S1", "citation", eq(E(X * Y), X * E(Y))), "certificate": a},
             {**step("S2", "citation", eq(E(X + 1), E(X) + 1)), "certificate": b}]
    v = check(cert(both, [], steps))
    assert not v.proved and "one set of random symbols" in v.line, v.line
    for one, part in ((a, eq(E(X * Y), X * E(Y))), (b, eq(E(X + 1), E(X) + 1))):  # control: either alone is proved
        assert check(cert(part, [], [{**step("S1", "citation", part), "certificate": one}])).proved


def test_the_nest_flag_only_skips_an_attempt_it_decides_nothing():
    """Linearity's ``nest`` goes straight to the nested distribution: a false sum identity is still refused, a true
    one still proved, and a flag that is not a boolean is refused."""
    i, j = sp.Symbol("i", integer=True), sp.Symbol("j", integer=True)
    a, b = sp.IndexedBase("a"), sp.IndexedBase("b")
    m = sp.Symbol("m", integer=True, positive=True)
    lhs = sp.Sum(a[i] * b[j], (i, 1, m), (j, 1, m))
    for rhs, proved in ((sp.Sum(a[i], (i, 1, m)) * sp.Sum(b[j], (j, 1, m)), True),
                        (sp.Sum(a[i], (i, 1, m)) * sp.Sum(b[j], (j, 1, m)) + 1, False)):
        statement = eq(lhs, rhs)
        v = check(cert(statement, [], [step("S1", "linearity", statement, nest=True)]))
        assert v.proved is proved, v.line
    statement = eq(lhs, sp.Sum(a[i], (i, 1, m)) * sp.Sum(b[j], (j, 1, m)))
    v = check(cert(statement, [], [step("S1", "linearity", statement, nest="yes")]))
    assert not v.proved and "nest is true or false" in v.line, v.line
