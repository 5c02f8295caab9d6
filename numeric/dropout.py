"""Monte Carlo confirmation of the dropout laws and of the rounding-bias claim.

Every claimed value comes from the proved SymPy result, lambdified (``numeric.derived.proved``):
the kept fraction 1 - p and rescale 1/(1 - p) (dropout-kept-fraction), the mean Σ_j P_j v_j
(dropout-unbiased), the variance p/(1 - p) Σ_j P_j² v_j² (dropout-variance), and the mean and
variance of round-to-nearest's error and truncation's mean (round-to-nearest-unbiased). Each
verdict is a stated test at ``alpha`` (Student-t for a mean, the log-variance test for a
variance), several per claim combined by Holm's method.
"""
from __future__ import annotations

import time
from functools import lru_cache

import numpy as np
import sympy as sp

from numeric import arguments
from numeric.derived import proved
from numeric.evidence import Confirmation, from_test, sweep
from numeric.registry import confirms
from numeric.statistics import Moments, mean_test, variance_test


@lru_cache(maxsize=None)
def _laws():
    from proofs.theorems import dropout as d

    kept = proved("dropout-kept-fraction").result
    mean = proved("dropout-unbiased").result["mean"]
    var = proved("dropout-variance").result["variance"]
    return (sp.lambdify(d.p, kept["keep"], "numpy"), sp.lambdify(d.p, kept["rescale"], "numpy"),
            sp.lambdify((d.P, d.v, d.n), mean, "numpy"), sp.lambdify((d.p, d.P, d.v, d.n), var, "numpy"))


def _one_based(x: np.ndarray) -> np.ndarray:
    # The derivation indexes keys j = 1..n; the lambdified sum reads x[1..n].
    return np.concatenate([[np.nan], x])


def _problem(rng, n_keys):
    """One attention row: weights P = softmax of normal scores, values v ~ N(0, 1)."""
    s = rng.normal(size=n_keys)
    P = np.exp(s - s.max())
    return P / P.sum(), rng.normal(size=n_keys)


def _check(p, n_samples, n_keys, alpha):
    p = arguments.real(p, "p")
    if not 0 < p < 1:
        raise ValueError(f"p must be a drop probability in (0, 1), got {p!r}")
    return p, arguments.n_samples(n_samples), arguments.positive_int(n_keys, "n_keys"), arguments.alpha(alpha)


def _outputs(rng, P, v, p, rescale, n_samples):
    """o = Σ_j P_j M_j v_j · rescale for n_samples independent masks M ~ Bernoulli(1 - p)."""
    masks = rng.random((n_samples, P.size)) >= p
    return (masks * (P * v)).sum(axis=1) * rescale


def _sampled_outputs(seed, p, n_keys, n_samples):
    """One attention row (P, v) of n_keys keys and n_samples dropout outputs o of it, with the derived rescale."""
    rng = np.random.default_rng(seed)
    P, v = _problem(rng, n_keys)
    return P, v, _outputs(rng, P, v, p, _laws()[1](p), n_samples)


@confirms("dropout-kept-fraction", n_samples=20_000)
def dropout_kept_fraction(*, seed=0, n_samples=200_000, p=0.25, alpha=0.001) -> Confirmation:
    p, n_samples, _, alpha = _check(p, n_samples, 1, alpha)
    started = time.perf_counter()
    keep, rescale, _, _ = _laws()
    kept = (np.random.default_rng(seed).random(n_samples) >= p).astype(np.float64)
    details = [
        from_test("dropout-kept-fraction", f"kept fraction = 1 - p = {keep(p):g}", mean_test(Moments.of(kept), keep(p),
                                                                                               alpha), alpha),
        from_test("dropout-kept-fraction", f"E[M/(1 - p)] = 1 with the derived rescale {rescale(p):g}",
                  mean_test(Moments.of(kept * rescale(p)), 1.0, alpha), alpha),
    ]
    return sweep("dropout-kept-fraction", f"p = {p:g}: kept fraction and rescale", details, alpha, started, n_samples)


@confirms("dropout-unbiased", n_samples=20_000)
def dropout_unbiased(*, seed=0, n_samples=200_000, p=0.25, n_keys=8, alpha=0.001) -> Confirmation:
    p, n_samples, n_keys, alpha = _check(p, n_samples, n_keys, alpha)
    started = time.perf_counter()
    P, v, o = _sampled_outputs(seed, p, n_keys, n_samples)
    claimed = _laws()[2](_one_based(P), _one_based(v), n_keys)
    c = from_test("dropout-unbiased", f"E[o] = Σ P_j v_j = {claimed:.6g} (n = {n_keys} keys, p = {p:g})",
                  mean_test(Moments.of(o), claimed, alpha), alpha)
    c.seconds = time.perf_counter() - started
    return c


@confirms("dropout-variance", n_samples=20_000)
def dropout_variance(*, seed=0, n_samples=200_000, p=0.25, n_keys=8, alpha=0.001) -> Confirmation:
    p, n_samples, n_keys, alpha = _check(p, n_samples, n_keys, alpha)
    started = time.perf_counter()
    P, v, o = _sampled_outputs(seed, p, n_keys, n_samples)
    claimed = _laws()[3](p, _one_based(P), _one_based(v), n_keys)
    c = from_test("dropout-variance", f"Var[o] = p/(1 - p) Σ P_j² v_j² = {claimed:.6g} (n = {n_keys}, p = {p:g})",
                  variance_test(Moments.of(o), claimed, alpha), alpha)
    c.seconds = time.perf_counter() - started
    return c


@lru_cache(maxsize=None)
def _rounding_laws() -> tuple[float, float, float]:
    r = proved("round-to-nearest-unbiased").result
    h = r["h"]
    return float(r["rn_mean"]), float(r["rn_variance"].subs(h, 1)), float(r["truncation_mean"])


def rounding_errors(x: np.ndarray, dtype=np.float16) -> tuple[np.ndarray, np.ndarray]:
    """(round-to-nearest error, truncation-toward-zero error) of x in ``dtype``, in ulps of x."""
    rn = x.astype(dtype)
    toward_zero = np.where(np.abs(rn.astype(np.float64)) > np.abs(x), np.nextafter(rn, dtype(0)), rn)
    ulp = np.exp2(np.floor(np.log2(np.abs(x)))) * np.finfo(dtype).eps
    return (rn.astype(np.float64) - x) / ulp, (toward_zero.astype(np.float64) - x) / ulp


@confirms("round-to-nearest-unbiased", n_samples=20_000)
def round_to_nearest_unbiased(*, seed=0, n_samples=200_000, alpha=0.001) -> Confirmation:
    """float16 rounding of float64 values of random sign and binade (within float16's normal range)."""
    n_samples, alpha = arguments.n_samples(n_samples), arguments.alpha(alpha)
    started = time.perf_counter()
    rng = np.random.default_rng(seed)
    x = rng.choice([-1.0, 1.0], n_samples) * rng.uniform(1, 2, n_samples) * np.exp2(rng.integers(-10, 10, n_samples))
    rn, trunc = rounding_errors(x)
    rn_mean, rn_var, trunc_mean = _rounding_laws()
    trunc_toward_zero = trunc * np.sign(x)  # -1/2 in the direction of x: toward zero
    details = [
        from_test("round-to-nearest-unbiased", "E[RN(x) - x] = 0 ulp", mean_test(Moments.of(rn), rn_mean, alpha), alpha),
        from_test("round-to-nearest-unbiased", f"Var[RN(x) - x] = {rn_var:.6g} ulp²",
                  variance_test(Moments.of(rn), rn_var, alpha), alpha),
        from_test("round-to-nearest-unbiased", f"E[trunc(x) - x] = {trunc_mean:g} ulp toward zero",
                  mean_test(Moments.of(trunc_toward_zero), trunc_mean, alpha), alpha),
    ]
    return sweep("round-to-nearest-unbiased", "float16 rounding of float64 values", details, alpha, started,
                 n_samples)
