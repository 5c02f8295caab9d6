"""The seventh red team's families against the checker (rt31: SymPy's Product handlers and simplify ignore an empty
range, λ and derivative variables declared what no range implies), each closed by a design rule. Its certificates
are in ``redteam7/`` (replayed as written; each forgery was "proved" on the checker before the change, a01 and a02b
in some of SymPy's inference orders)."""
import json
from pathlib import Path

import pytest
import sympy as sp

from proofs.checker import check
from proofs.identity import fact, identity
from proofs.srepr import CertificateError, read, text

HERE = Path(__file__).parent / "redteam7"
k, n = sp.Symbol("k", integer=True), sp.Symbol("n", integer=True, nonnegative=True)


def _refused(name, why):
    verdict = check(json.loads((HERE / f"{name}.json").read_text(encoding="utf-8")))
    assert not verdict.proved, verdict.line
    assert why in verdict.line, verdict.line


# Root cause A/B: Π_{k=1}^{n} 0 is "zero" to SymPy at n = 0, where the empty product is 1, and simplify makes it 0;
# a product of positive terms over 1..0 is "non-positive" in some inference orders. A Product's facts are trusted, and
# simplify may see it, only over ranges shown non-empty (hi ≥ lo).
@pytest.mark.parametrize("name, why", [
    ("a25", "not shown real"),             # Π_{k=1}^{n} 0 ≤ 0 for n ≥ 0
    ("a27_prodlt1", "not shown real"),     # Π_{k=1}^{n} 0 < 1
    ("a27_sumlt12", "not shown real"),     # Σ_{j=0}^{n} Π_{k=1}^{j} 0 < 1/2 (it is 1)
    ("a41", "refuted at n=0"),             # Π_{k=5}^{n+4} 0 = 0, through simplify (1 at n = 0, the range's edge)
    ("a42", "refuted at n=0"),             # ... and on to 1 = 0
    ("a44", "refuted at d_k=1, n=0"),      # d_k = 2 d_k
    ("a01", "not shown real"),             # Π_{k=1}^{0} (k + 8) < 0
    ("a02b", "not shown real"),            # 0 ≤ −Π_{k=1}^{0} (k + 8)
])
def test_an_empty_product_is_not_taken_for_its_factor(name, why):
    _refused(name, why)


def test_a_product_over_a_range_shown_non_empty_keeps_its_facts():
    m = sp.Symbol("m", integer=True, positive=True)
    assert fact(sp.Product(0, (k, 1, m)), "zero") is True  # 1..m holds a term
    assert fact(sp.Product(0, (k, 1, n)), "zero") is None  # 1..n may be empty
    assert fact(sp.Product(2, (k, 1, n)), "positive") is None  # not shown, though true: a premise may state it
    ok, why = identity(sp.Product(0, (k, 1, n)), sp.Integer(0))
    assert not ok and why.startswith("refuted at n=0")  # the empty product, 1
    assert identity(sp.Product(0, (k, 1, m)), sp.Integer(0))[0]


# Root causes C and D: a binder's variable declared something its range does not imply, where the binder has no range.
def test_a_lambda_variable_may_carry_no_facts():
    _refused("a40", "as SymPy built it")  # (t ↦ |t|)(−1) = −1, t declared positive: |t| read as t is refused first
    tp = sp.Symbol("t", positive=True)
    with pytest.raises(CertificateError, match="λ-variable t is declared"):  # nothing rebuilt, the variable refused
        read(f"Lambda(Tuple({text(tp)}), Mul(Integer(2), {text(tp)}))")
    t = sp.Symbol("t")
    assert read(text(sp.Lambda(t, sp.Abs(t)))) == sp.Lambda(t, sp.Abs(t))


def test_a_derivative_in_an_integer_variable_is_refused():
    with pytest.raises(CertificateError, match="as SymPy built it"):  # d/dn sin(πn) = 0: sin(πn) is read as 0
        read("Derivative(sin(Mul(pi, Symbol('n', integer=True))), Symbol('n', integer=True))")
    with pytest.raises(CertificateError, match="declared an integer"):  # d/dn n² = 2n: nothing rebuilt
        read("Derivative(Pow(Symbol('n', integer=True), Integer(2)), Symbol('n', integer=True))")
    x = sp.Symbol("x", real=True)
    assert read(text(sp.Derivative(x**2, x))) == sp.Derivative(x**2, x)


def test_the_sign_rule_shows_each_denominator_as_written_non_zero():
    """(x² − x)/x ≤ x − 1 for every real x: b − a expands to 0, and the identity rule already refused the same sides."""
    from proofs.checker import _decide_order, _Refused

    x = sp.Symbol("x", real=True)
    for small, big in (((x**2 - x) / x, x - 1), (1 / x, 1 / x + 1)):
        with pytest.raises(_Refused, match="denominator x is not shown non-zero"):
            _decide_order("≤", small, big, [])
    p = sp.Symbol("p", positive=True)
    assert _decide_order("≤", (p**2 - p) / p, p - 1, [])  # a positive denominator is defined


def test_json_text_with_an_integer_past_pythons_digit_limit_is_a_verdict_not_a_traceback():
    from proofs.checker import check

    verdict = check('{"claim": ' + "9" * 5000 + "}")
    assert not verdict.proved and "not JSON" in verdict.line


def test_a_denominator_shown_non_zero_by_an_assumption_makes_the_step_rest_on_it():
    """The sign step cites no premise; x > 0, the claim's assumption, shows its denominator non-zero, so the verdict
    lists the assumption; without it the step fails."""
    from proofs.engine import Proof

    x = sp.Symbol("x", real=True)
    statement = sp.Le((x**2 - x) / x, x - 1, evaluate=False)
    pf = Proof("demo", statement=statement)
    pf.assume(sp.Gt(x, 0, evaluate=False), "x > 0")
    pf.sign((x**2 - x) / x, "≤", x - 1)
    d = pf.finish()
    assert d.verified and "assumption x > 0" in d.verdict_line, d.verdict_line
    pf = Proof("demo", statement=statement)
    pf.sign((x**2 - x) / x, "≤", x - 1)
    assert not pf.finish().verified


# What stop 31 left open, each closed as a family: the text a certificate shows is the tree the checker reads (no
# Float, no node SymPy rebuilds, names from one alphabet), and the verdict line says of each entry what kind of trust it
# is (its ∀, "cited", "unchecked computation").
@pytest.mark.parametrize("name, why", [
    ("a04", "a Float"),                          # Float('0.1', precision=4), read as 13/128: "0.1 = 13/128"
    ("a05", "BRAILLE PATTERN BLANK"),            # x⠀ := x + 1 shown as x = x + 1
    ("a28", "LATIN SMALL LETTER ALPHA"),         # α < ɑ with no premise, shown as α < α
    ("a37", "SMALL ROMAN NUMERAL ONE"),          # 0 ≤ ⅰ², shown as 0 ≤ i²
    ("a03", "one operator, one set of random symbols"),  # E(XY) = X·E(Y) (Y random) and E(X + 1) (X random)
])
def test_what_a_certificate_shows_is_what_is_checked(name, why):
    _refused(name, why)


def test_sympy_may_evaluate_nothing_as_a_certificate_is_read():
    w, x = "Symbol('w', infinite=True)", "Symbol('x', real=True)"
    for written in (f"Add({w}, Mul(Integer(-1), {w}))", f"Mul({x}, Pow({x}, Integer(-1)))",  # w − w as 0, x/x as 1
                    "Pow(Integer(2), Integer(3))", f"Abs(Pow({x}, Integer(2)))"):
        with pytest.raises(CertificateError, match="as SymPy built it"):
            read(written)
    for e in (-sp.Symbol("x", real=True) / 2, sp.Rational(-3, 7) * sp.Symbol("y") ** 2 + 1):
        assert read(text(e)) == e  # the writer's own form (−½x is written −1·½·x) reads back


def test_the_verdict_line_says_what_kind_of_trust_each_entry_is():
    from proofs.tests.certs import cert, eq, prem, step
    from proofs.checker import write
    x, f = sp.Symbol("x", real=True), sp.Function("f")
    v = check(cert(sp.And(eq(f(1), 0), eq(f(2), 0)), premises=[prem("A1", "assumption", eq(f(x), 0), forall=[x])],
                   steps=[step("S1", "instance", eq(f(1), 0), ["A1"], mapping=[[write(x), "Integer(1)"]]),
                          step("S2", "instance", eq(f(2), 0), ["A1"], mapping=[[write(x), "Integer(2)"]])]))
    assert v.proved and v.line == "proved, given assumption Eq(f(x), 0) (for all x)", v.line  # a45
    one = eq(sp.Integer(1), 2)
    v = check(cert(one, steps=[step("S1", "computation", one, name="checked_by_identity_engine",
                                    source="proofs/identity_engine.py:identity", outcome=True, detail="")]))
    assert v.line.startswith("proved, given unchecked computation checked_by_identity_engine"), v.line  # a29
    a = sp.Symbol("a")
    v = check(cert(eq(a + 1, 2), premises=[prem("C1", "cited", eq(a, 1), reference="checked by the identity engine")],
                   steps=[step("S1", "rewrite", eq(a + 1, 2), ["C1"])]))
    assert v.line == "proved, given cited checked by the identity engine: Eq(a, 1)", v.line  # a35


def test_a_refutation_prints_enough_digits_to_differ():
    ok, why = identity(sp.Rational(3, 10), sp.Rational(3, 10) + sp.Rational(1, 10**12))
    assert not ok and "0.300000000000000" in why and "0.300000000001000" in why, why  # a13: not "0.300000 vs 0.300000"


def test_check_piped_into_head_leaves_no_traceback(tmp_path):
    import subprocess
    import sys
    many = tmp_path / "many.json"  # more lines than a pipe's buffer holds, so the writes after head left fail
    many.write_text(json.dumps([json.loads((HERE / "a04.json").read_text(encoding="utf-8"))] * 2000), encoding="utf-8")
    out = subprocess.run(f"{sys.executable} -m proofs check {many} | head -1", shell=True, capture_output=True,
                         text=True, timeout=600)
    assert out.stdout.startswith("FAIL") and out.stdout.count("\n") == 1, out.stdout
    assert "Traceback" not in out.stderr and "BrokenPipe" not in out.stderr, out.stderr
