"""The statistics: streamed moments, the variance test's error model, Holm."""
import itertools
import math

import numpy as np
import pytest
import sympy as sp
from scipy import stats as sps
from sympy.stats import Normal, Uniform, moment

from numeric import null_moments
from proofs.theorems.null_kurtosis import raw_moments
from numeric.sampling import Components
from numeric.statistics import Moments, holm, mean_test, variance_power, variance_std_error, variance_test


def test_merged_moments_equal_direct_moments():
    x = np.random.default_rng(0).standard_t(5, size=(3, 1000)) + 7.0
    parts = [Moments.of(x[:, a:b]) for a, b in ((0, 1), (1, 300), (300, 301), (301, 1000))]
    merged, direct = Moments.combine(parts), Moments.of(x)
    for field in ("mean", "m2", "m3", "m4"):
        np.testing.assert_allclose(getattr(merged, field), getattr(direct, field), rtol=1e-10)
    assert merged.n == 1000


def test_variance_of_sample_variance_matches_its_exact_formula():
    # Var(s²) = σ⁴(κ - (n-3)/(n-1))/n holds exactly; compare the plug-in version with the spread
    # of s² over many uniform samples (κ = 1.8): 2000 replicates give it to ~±3%.
    rng = np.random.default_rng(1)
    n = 50
    x = rng.uniform(-1, 1, size=(2000, n))
    s2 = x.var(axis=1, ddof=1)
    kappa, sigma4 = 1.8, (1 / 3) ** 2
    exact = sigma4 * (kappa - (n - 3) / (n - 1)) / n
    assert abs(s2.var(ddof=1) / exact - 1) < 0.1


def test_two_point_distribution_keeps_a_positive_honest_error():
    # Rademacher, d_k = 1: q·k = ±1, the sample variance hardly moves; the plug-in kurtosis is ≥ 1,
    # so the standard error is ≈ √2/n, not 0, and the true claim is not rejected.
    x = np.random.default_rng(2).choice([-1.0, 1.0], size=100_000)
    m = Moments.of(x)
    se = variance_std_error(m)
    assert 0 < se < 10 / m.n
    assert not variance_test(m, 1.0, 0.001).rejects(0.001)
    assert variance_test(m, 1.02, 0.001).rejects(0.001)
    assert variance_test(m, 0.98, 0.001).rejects(0.001)


def test_degenerate_sample():
    m = Moments.of(np.full(10, 3.0))
    assert variance_test(m, 0.0, 0.01).p_value == 1.0
    assert variance_test(m, 1.0, 0.01).p_value == 0.0
    assert mean_test(m, 3.0, 0.01).p_value == 1.0 and mean_test(m, 3.1, 0.01).p_value == 0.0


def test_ci_contains_estimate_and_p_value_matches_ci():
    x = np.random.default_rng(3).normal(2.0, 3.0, size=5000)
    m = Moments.of(x)
    t = variance_test(m, 9.0, 0.01)
    lo, hi = t.ci
    assert lo < t.estimate < hi
    # Inverting the test: a claim at the CI edge has p = alpha.
    assert math.isclose(variance_test(m, hi, 0.01).p_value, 0.01, rel_tol=1e-6)
    # The same holds with a null-model κ: CI and p-value share one standard error.
    tn = variance_test(m, 9.0, 0.01, null_kurtosis=5.0)
    assert tn.std_error > t.std_error
    assert math.isclose(variance_test(m, tn.ci[0], 0.01, null_kurtosis=5.0).p_value, 0.01, rel_tol=1e-6)
    tm = mean_test(m, 2.0, 0.01)
    assert math.isclose(mean_test(m, tm.ci[1], 0.01).p_value, 0.01, rel_tol=1e-6)


def test_holm_against_hand_computed_values():
    adjusted, rejected = holm([0.01, 0.04, 0.03, 0.005], 0.05)
    np.testing.assert_allclose(adjusted, [0.03, 0.06, 0.06, 0.02])
    assert rejected.tolist() == [True, False, False, True]


def test_power_formula():
    assert variance_power(0.0, 0.02, 0.001) == 1.0
    assert variance_power(1.0, 0.02, 0.001) < 0.01
    assert variance_power(0.002, 0.02, 0.001) > 0.99


def test_null_kurtosis_is_a_floor_never_a_ceiling():
    x = np.random.default_rng(4).standard_t(5, size=2000)
    m = Moments.of(x)
    plug_in = variance_std_error(m)
    assert variance_std_error(m, null_kurtosis=1.0) == plug_in  # below the sample's κ: the sample's stays
    assert variance_std_error(m, null_kurtosis=float(m.kurtosis) + 10) > plug_in
    for bad in (0.5, float("nan")):
        with pytest.raises(ValueError, match="null_kurtosis"):
            variance_std_error(m, null_kurtosis=bad)


@pytest.mark.parametrize("family, make", [("normal", lambda mu, v: Normal("x", mu, sp.sqrt(v))),
                                          ("uniform", lambda mu, v: Uniform("x", mu - sp.sqrt(3 * v),
                                                                            mu + sp.sqrt(3 * v)))])
def test_component_raw_moments_match_sympy_stats(family, make):
    mu, v = sp.Rational(-3, 4), sp.Rational(4, 3)  # √(3v) rational: the uniform's bounds stay exact
    beta = sp.nsimplify(null_moments.component_kurtosis(family))
    mine = raw_moments(mu, v, beta)  # the derivation's own expansion (proofs.theorems.null_kurtosis)
    assert [sp.simplify(a - moment(make(mu, v), r)) for r, a in enumerate(mine)] == [0] * 5


def test_student_t_component_kurtosis_matches_scipy():
    for nu in (4.5, 5, 10, 30):
        assert math.isclose(null_moments.component_kurtosis("student-t", nu), sps.t(nu).stats(moments="k") + 3,
                            rel_tol=1e-12)
    with pytest.raises(ValueError, match="nu"):
        null_moments.component_kurtosis("student-t", 4)


def _exact_kurtosis(values, probs):
    mean = np.dot(probs, values)
    return np.dot(probs, (values - mean) ** 4) / np.dot(probs, (values - mean) ** 2) ** 2


@pytest.mark.parametrize("d_k", [1, 2, 3])
def test_dot_product_kurtosis_by_enumeration(d_k):
    # Shifted Rademacher components: q·k takes finitely many values, so its kurtosis is exact by
    # enumerating all 4^d_k sign patterns — an independent check of the product and sum steps.
    q, k = Components("rademacher", 0.5, 2.0), Components("rademacher", -1.0, 0.25)
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=2 * d_k)))  # (4^d_k, 2 d_k)
    qs = q.mean + math.sqrt(q.variance) * signs[:, :d_k]
    ks = k.mean + math.sqrt(k.variance) * signs[:, d_k:]
    values = (qs * ks).sum(axis=1)
    want = _exact_kurtosis(values, np.full(len(values), 1 / len(values)))
    assert math.isclose(null_moments.dot_product_kurtosis(d_k, q, k), want, rel_tol=1e-12)


def test_dot_product_kurtosis_of_uniform_product_by_integration():
    # q ~ U(-1, 2), k ~ U(0, 1): κ of q·k by direct integration of the product's density.
    x, y = sp.symbols("x y")
    mean = sp.integrate(x * y, (x, -1, 2), (y, 0, 1)) / 3
    central = [sp.integrate((x * y - mean) ** r, (x, -1, 2), (y, 0, 1)) / 3 for r in (2, 4)]
    q, k = Components("uniform", 0.5, 0.75), Components("uniform", 0.5, 1 / 12)
    assert math.isclose(null_moments.dot_product_kurtosis(1, q, k), float(central[1] / central[0] ** 2),
                        rel_tol=1e-12)


def test_dot_product_kurtosis_limits():
    normal = Components("normal")
    assert null_moments.dot_product_kurtosis(1, normal, normal) == 9.0  # E[(qk)⁴] = E[q⁴]E[k⁴] = 3·3
    # The sum of many iid terms tends to a normal: κ → 3.
    assert abs(null_moments.dot_product_kurtosis(10**6, normal, normal) - 3) < 1e-5
    t5 = Components("student-t", nu=5)
    assert null_moments.dot_product_kurtosis(1, t5, t5) == 81.0
