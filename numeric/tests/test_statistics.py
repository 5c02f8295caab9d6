"""The statistics: streamed moments, the variance test's error model, Holm."""
import math

import numpy as np

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
