"""The kurtosis of q·k under the null model: known exactly once the components are specified.

Under H0 the component model (family, means, variances, ν) is fully given, so the fourth moment
of q·k needs no estimate; the sample's plug-in κ is biased low and unstable for heavy tails at
small n. How the variance test uses this κ (as a floor under the plug-in) is in
``numeric.statistics``.

Derivation (SymPy, lambdified once): a component is X = μ + σZ with Z standardised and symmetric,
so E[Z] = E[Z³] = 0, E[Z²] = 1, E[Z⁴] = β (the family's kurtosis). The raw moments of the product
P = q_i k_i are E[P^r] = E[q^r] E[k^r] (independence), its central moments follow, and for the sum
S of d iid such terms μ₂(S) = d μ₂ and μ₄(S) = d μ₄ + 3d(d-1) μ₂², so

    κ(S) = μ₄(S) / μ₂(S)² = κ(P)/d + 3(d-1)/d.
"""
from __future__ import annotations

from functools import lru_cache

import sympy as sp

from numeric import arguments


def component_kurtosis(distribution: str, nu: float | None = None) -> float:
    """E[Z⁴] of the standardised family: normal 3, uniform 9/5, Rademacher 1, Student-t 3(ν-2)/(ν-4)
    (from E[t⁴] = 3ν²/((ν-2)(ν-4)) and Var t = ν/(ν-2))."""
    arguments.distribution(distribution)
    if distribution == "student-t":
        nu = arguments.nu(nu)
        return 3 * (nu - 2) / (nu - 4)
    return {"normal": 3.0, "uniform": 1.8, "rademacher": 1.0}[distribution]


def _raw_moments(mean, variance, beta):
    """E[X^r], r = 0..4, for X = mean + √variance·Z, Z standardised, symmetric, E[Z⁴] = beta."""
    sigma = sp.sqrt(variance)
    z = (1, 0, 1, 0, beta)
    return [sp.expand(sum(sp.binomial(r, j) * mean ** (r - j) * sigma**j * z[j] for j in range(r + 1)))
            for r in range(5)]


@lru_cache(maxsize=1)
def kurtosis_expression():
    """(κ of q·k as a SymPy expression, its symbols (d, μ_q, μ_k, σ_q², σ_k², β_q, β_k))."""
    d = sp.Symbol("d_k", positive=True)
    mq, mk = sp.symbols("mu_q mu_k", real=True)
    vq, vk, bq, bk = sp.symbols("sigma_q2 sigma_k2 beta_q beta_k", positive=True)
    raw = [a * b for a, b in zip(_raw_moments(mq, vq, bq), _raw_moments(mk, vk, bk))]  # E[P^r]
    m = raw[1]
    mu2 = sp.expand(raw[2] - m**2)
    mu4 = sp.expand(raw[4] - 4 * m * raw[3] + 6 * m**2 * raw[2] - 3 * m**4)
    kappa = (d * mu4 + 3 * d * (d - 1) * mu2**2) / (d * mu2) ** 2
    return kappa, (d, mq, mk, vq, vk, bq, bk)


@lru_cache(maxsize=1)
def _kurtosis_function():
    kappa, symbols = kurtosis_expression()
    return sp.lambdify(symbols, kappa, "math")


def dot_product_kurtosis(d_k: int, q, k) -> float:
    """κ of q·k over d_k iid component pairs; ``q`` and ``k`` are ``sampling.Components``."""
    d_k = arguments.positive_int(d_k, "d_k")
    return float(_kurtosis_function()(d_k, q.mean, k.mean, q.variance, k.variance,
                                      component_kurtosis(q.distribution, q.nu),
                                      component_kurtosis(k.distribution, k.nu)))
