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
    ("a41", "does not simplify to 0"),     # Π_{k=5}^{n+4} 0 = 0, through simplify
    ("a42", "does not simplify to 0"),     # ... and on to 1 = 0
    ("a44", "does not simplify to 0"),     # d_k = 2 d_k
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
    assert not ok and "does not simplify" in why
    assert identity(sp.Product(0, (k, 1, m)), sp.Integer(0))[0]


# Root causes C and D: a binder's variable declared something its range does not imply, where the binder has no range.
def test_a_lambda_variable_may_carry_no_facts():
    _refused("a40", "λ-variable")  # (t ↦ |t|)(−1) = −1, with t declared positive
    t = sp.Symbol("t")
    assert read(text(sp.Lambda(t, sp.Abs(t)))) == sp.Lambda(t, sp.Abs(t))


def test_a_derivative_in_an_integer_variable_is_refused():
    with pytest.raises(CertificateError, match="declared an integer"):  # d/dn sin(πn) = 0, sin(πn) built as 0
        read("Derivative(sin(Mul(pi, Symbol('n', integer=True))), Symbol('n', integer=True))")
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
