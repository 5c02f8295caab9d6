import math

import pytest
import sympy as sp

from proofs.theorems.dot_product import D_K
from proofs.theorems.scale_limits import DELTA, N_KEYS, scale_trap_limits


def test_scale_trap_limits_are_proved():
    d = scale_trap_limits()
    assert d.verified, [(s.description, s.detail) for s in d.failed_steps]
    assert sp.simplify(d.result.logit_variance_dk - 1 / D_K) == 0


@pytest.mark.parametrize("kw", [{"uniform_divisor": sp.sqrt(D_K)}, {"onehot_divisor": sp.sqrt(D_K)},
                                {"onehot_divisor": D_K}])
def test_wrong_scalings_do_not_reach_the_limits(kw):
    assert not scale_trap_limits(**kw).verified


def test_tail_bound_lambdifies():
    d = scale_trap_limits()
    f = sp.lambdify((D_K, N_KEYS, DELTA), d.result.uniform_tail_bound, "math")
    assert math.isclose(f(1000, 4, 0.5), 4 / (1000 * 0.25))


@pytest.mark.parametrize("bad", ["sqrt", -1, sp.Symbol("x"), 0])
def test_bad_divisor_is_a_value_error(bad):
    with pytest.raises(ValueError, match="uniform_divisor"):
        scale_trap_limits(uniform_divisor=bad)
