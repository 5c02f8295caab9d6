"""The twelfth red team (rt36: 10 attempts on a snapshot with the as-written rule and the floor/power gate, 7 "proved",
plain "proved" with nothing listed, one root cause): SymPy's number-kind handlers of Mul and Pow, both whitelisted,
answer wrongly where a value is an integer or a rational by coincidence: (3/2)^t "not an integer" (it is 2 at
t = log 2 / log(3/2)), x² "not rational" for an irrational x (√2² = 2), n/3 "not an integer" for an even n (6/3 = 2).
SymPy derives "non-zero" from such a fact, and used it three ways: a δ rebuilt as 0 when an index was renamed
(identity), |x² − 2| > 0 (sign), a vanishing denominator "non-zero" (definedness). Rule now (identity.py, beside the
fact gate): for Mul and Pow only the closure answers stay (True of integer, rational, algebraic); every other answer of
those and of irrational, even, odd, prime, composite is unknown. Their certificates are in ``redteam12/``."""
import json
from pathlib import Path

import pytest
import sympy as sp

from proofs.checker import check
from proofs.identity import fact

HERE = Path(__file__).parent / "redteam12"


@pytest.mark.parametrize("name, why", [
    ("rt36_delta_pow", "does not simplify to 0"),      # Σ_{k=2}^{2} δ((3/2)^t, k) = 0 for t > 0
    ("rt36_delta_irr", "does not simplify to 0"),      # Σ_{k=2}^{2} δ(x², k) = 0 for an irrational x
    ("rt36_delta_mul", "does not simplify to 0"),      # Σ_{k=2}^{2} δ(n/(2m + 3), k) = 0 for an even n
    ("rt36_sign_irr_abs", "not shown > 0"),            # 0 < |x² − 2|
    ("rt36_sign_pow_abs", "not shown > 0"),            # 0 < |(3/2)^t − 2|
    ("rt36_sign_mul_abs", "not shown > 0"),            # 0 < |n/3 − 2|
    ("rt36_defined_mul", "not shown non-zero"),        # (n²/9 − 4)/(n/3 − 2) = n/3 + 2, 0/0 at n = 6
])
def test_the_red_teams_certificates_are_refused(name, why):
    verdict = check(json.loads((HERE / f"{name}.json").read_text(encoding="utf-8")))
    assert not verdict.proved and why in verdict.line, verdict.line


def test_only_closure_facts_of_products_and_powers():
    t = sp.Symbol("t", positive=True)
    x = sp.Symbol("x", irrational=True)
    n = sp.Symbol("n", even=True)
    assert (sp.Rational(3, 2) ** t).is_integer is None and fact(sp.Rational(3, 2) ** t - 2, "zero") is None
    assert (x ** 2).is_rational is None and sp.KroneckerDelta(x ** 2, 2) != 0
    assert (n / 3).is_integer is None and fact(n / 3 - 2, "zero") is None
    # the closure facts the rules use stay: products and powers of integers are integers
    k, m = sp.Symbol("k", integer=True), sp.Symbol("m", integer=True, nonnegative=True)
    assert fact(k * (k + 1), "integer") is True and fact(2 ** m, "integer") is True and fact(k ** 2, "rational") is True
