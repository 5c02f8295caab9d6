"""The eleventh red team (rt35: 12 attempts on a snapshot of the checker, 6 "proved"), two families:

- SymPy's handlers of floor, ceiling and a power give wrong facts for complex arguments (⌊x + iy⌋ "not real", though
  ⌊½ + i/2⌋ = 0; x^i "not real" for x < 0, though (−1)^i = e^(−π)), and the fact gate trusted those classes whole:
  a 0/0 was "defined", a Γ pole "off the poles", and δ(⌊x + iy⌋, 0) was built as 0. Rule now: floor and ceiling
  (like Max and Min) give facts only of arguments shown real, a power only to an exponent shown real, both when the
  rules ask and when SymPy builds (identity._trusted_node, _gated_ask).
- The meaning of an expectation operator (what is random) was checked per certificate, so a citation could join two
  meanings: X·E(Y) = Y·E(X). Rule now: a verdict carries its operators' meanings and a citing certificate must agree.
Their certificates are in ``redteam11/``, replayed as written (the seventh attempt, Σ_{k=1}^{n} 1 = n for every integer n,
is true under SymPy's Karr convention for reversed ranges, which the checker's trust base and the README now state)."""
import json
from pathlib import Path

import pytest
import sympy as sp

from proofs.checker import check
from proofs.identity import fact

HERE = Path(__file__).parent / "redteam11"


@pytest.mark.parametrize("name, why", [
    ("floor_delta", "not the premise at these values"),      # g(⌊x + iy⌋) = 0 from g(v) := δ(v, 0)
    ("floor_pole", "not shown non-zero"),                    # (F² + F)/F = F + 1, F = ⌊x + iy⌋
    ("floor_gamma", "not shown off 0, −1, −2"),              # Γ(F + 1) = F·Γ(F)
    ("powI_pole", "not shown non-zero"),                     # (w² + w)/w = w + 1, w = x^i − e^(−π), x < 0
    ("powI_delta", "not the premise at these values"),       # g(x^i − e^(−π)) = 0
    ("lin_cross", "one set of random symbols"),              # X·E(Y) = Y·E(X)
])
def test_the_red_teams_certificates_are_refused(name, why):
    verdict = check(json.loads((HERE / f"{name}.json").read_text(encoding="utf-8")))
    assert not verdict.proved and why in verdict.line, verdict.line


def test_no_fact_of_floor_or_a_power_at_a_complex_argument():
    x, y = sp.Symbol("x", real=True), sp.Symbol("y", real=True)
    neg = sp.Symbol("x", negative=True)
    assert sp.floor(sp.Rational(1, 2) + sp.I / 2) == 0  # the counterexample itself
    assert fact(sp.floor(x + sp.I * y), "zero") is None and fact(sp.ceiling(x + sp.I * y), "real") is None
    assert fact(neg ** sp.I - sp.exp(-sp.pi), "zero") is None
    assert sp.KroneckerDelta(sp.floor(x + sp.I * y), 0) != 0  # not built as 0 on a wrong fact
    # controls: real arguments and real exponents keep their facts
    assert fact(sp.floor(x), "integer") is True and fact(sp.exp(x) ** 2, "positive") is True
    assert fact(sp.Symbol("n", integer=True) ** 2 + 1, "positive") is True
