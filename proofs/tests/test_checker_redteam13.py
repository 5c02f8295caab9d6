"""The thirteenth red team (rt38p: about 85 attempts on a snapshot of main, 9 forgeries plain "proved", 3 families, and
2 reader findings). Each family is closed by one rule, and its certificates are in ``redteam13/``:

- SymPy's summation of an infinite series is not trusted (identity.py, ``_forward_ranges``): Σ_{k=−5}^{∞} k/2^k is
  built as −258 by SymPy 1.14 (it is −256), and the probe evaluated it by the same closed form.
- A Σ index bound again inside its term (Σ_t d/dt, Σ_t ∫ dt) keeps its own declared facts when the engine renames it
  (``_canonical``: with the range's "integer" sin(πt) was built as 0), no term of such a Σ is taken by substitution
  (``term_at``, the one function that writes out, sifts and peels), and SymPy's doit/simplify is not asked of it.
- A linearity step generalised by its own ``forall`` keeps its random names (checker: they were overwritten by its
  premises', none): E(X·Z) = Z·E(X) over Z could be instantiated at Z = X.
- The reader refuses a bare decimal (Integer(2.9) was read as 2, Rational(0.1) as a binary fraction) and the
  application of anything but an undefined function (an applied λ is built by SymPy with capture)."""
import json
from pathlib import Path

import pytest
import sympy as sp

from proofs import identity
from proofs.checker import check

HERE = Path(__file__).parent / "redteam13"


@pytest.mark.parametrize("name, why", [
    ("rt38_forgery_infinite_sum", "does not simplify to 0"),  # Σ_{k=-5}^{∞} k/2^k = -258 (it is -256)
    ("rt38_forgery_infinite_sum_b", "does not simplify to 0"),  # Σ_{k=-1}^{∞} k/2^k = -2 (it is 0)
    ("rt38_forgery_infinite_sum_c", "does not simplify to 0"),  # Σ_{k=-2}^{∞} k²/3^k = 39 (it is 40.5)
    ("rt38_forgery_infinite_sum_d", "does not simplify to 0"),  # Σ_{k=-1}^{∞} k/2^k < -1 through a chain
    ("rt38_forgery_infinite_sum_f", "does not simplify to 0"),  # Σ_{k=-1}^{∞} (k+1)/2^k = 2 (it is 4)
    ("rt38_forgery_enum_derivative", "does not simplify to 0"),  # Σ_{t=1}^{1} d/dt sin(πt) = 0 (it is -π)
    ("rt38_forgery_enum_integral", "does not simplify to 0"),  # Σ_{t=1}^{1} ∫_0^{1/2} sin(πt) dt = 0 (it is 1/π)
    ("rt38_forgery_linearity_generalised", "refuted"),  # E(XY) = X·E(Y) for random X, Y
    ("rt38_forgery_linearity_instance", "taken as non-random"),  # E(X²) = X·E(X)
    ("rt38_finding_float_literal", "bare decimal"),  # Integer(2.9)·x = 2·x
    ("rt38_finding_float_literal_b", "bare decimal"),  # 1/10 < Rational(0.1)
    ("rt38_finding_lambda_capture", "undefined function is applied"),  # (λy. Σ_{k≤3} y·k)(k) = 14
])
def test_the_red_teams_certificates_are_refused(name, why):
    verdict = check(json.loads((HERE / f"{name}.json").read_text(encoding="utf-8")))
    assert not verdict.proved and why in verdict.line, verdict.line


def test_a_true_infinite_sum_and_a_true_term_by_term_sum_still_decide_as_they_should():
    """The rules refuse what they cannot show, and no more: a finite Σ of derivatives in a fresh index is still
    written out, and a Σ whose index no inner binder binds is still summed."""
    t, x = sp.Symbol("t"), sp.Symbol("x")
    k = sp.Symbol("k", integer=True)
    assert identity.identity(sp.Sum(sp.Derivative(sp.sin(x * k), x), (k, 1, 2)),
                             sp.cos(x) + 2 * sp.cos(2 * x))[0]
    assert identity.identity(sp.Sum(k, (k, 1, 4)), 10)[0]
    assert identity.term_at(sp.Derivative(sp.sin(sp.pi * t), t), t, 1) is None
    assert identity.term_at(sp.sin(sp.pi * t) + t, t, 2) == 2
