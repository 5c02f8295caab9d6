import sympy as sp

from proofs.engine import Proof
from proofs.tests.derived import derived
from proofs.theorems import rounding_bias as rb


def test_rounding_bias_is_proved_by_rules_alone():
    d = derived("round-to-nearest-unbiased")
    assert d.verified, d.reasons
    assert d.computations == []
    assert d.result.truncation_mean == sp.Rational(-1, 2) and d.result.rn_variance == rb.h**2 / 12


def _mean_zero_with(error):
    """The unbiasedness step of the theorem, for another rounding's error in (B, W)."""
    pf = Proof("rounding-bias-wrong", statement=sp.Eq(rb.E(rb.ERR_RN), 0, evaluate=False))
    rn = pf.define(rb.ERR_RN, error)
    moments = [pf.assume(sp.Eq(rb.E(rb.B), sp.Rational(1, 2))), pf.assume(sp.Eq(rb.E(rb.W), sp.Rational(1, 2)))]
    lin = pf.linearity(rb.E(error), sp.expand(error).subs({rb.B: rb.E(rb.B), rb.W: rb.E(rb.W)}), operator=rb.E,
                       random=[rb.B, rb.W])
    pf.rewrite(rb.E(rb.ERR_RN), 0, [rn, lin, *moments])
    return pf.finish()


def test_a_rounding_that_is_not_to_nearest_is_not_unbiased():
    assert _mean_zero_with((rb.B - rb.W) * rb.h / 2).verified  # the theorem's error: the test can pass
    for wrong in ((1 - (rb.B + rb.W) / 2) * rb.h,  # always up
                  (rb.B - rb.W) * rb.h / 2 + rb.h / 4,  # ties and the upper half pushed up
                  (rb.B - 2 * rb.W) * rb.h / 2):  # the lower half's error doubled
        assert not _mean_zero_with(wrong).verified, wrong
