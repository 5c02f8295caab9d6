"""The kurtosis of q·k under the null model: known exactly once the components are specified.

Under H0 the component model (family, means, variances, ν) is fully given, so the fourth moment
of q·k needs no estimate; the sample's plug-in κ is biased low and unstable for heavy tails at
small n. How the variance test uses this κ (as a floor under the plug-in) is in
``numeric.statistics``. The expression is the one the ``dot-product-kurtosis`` derivation proved
(``proofs.theorems.null_kurtosis``), lambdified once; this module adds only each family's β = E[Z⁴].
"""
from __future__ import annotations

from functools import lru_cache

import sympy as sp

from numeric import arguments
from proofs.claims import proved


def component_kurtosis(distribution: str, nu: float | None = None) -> float:
    """E[Z⁴] of the standardised family: normal 3, uniform 9/5, Rademacher 1, Student-t 3(ν-2)/(ν-4)
    (from E[t⁴] = 3ν²/((ν-2)(ν-4)) and Var t = ν/(ν-2))."""
    arguments.distribution(distribution)
    if distribution == "student-t":
        nu = arguments.nu(nu)
        return 3 * (nu - 2) / (nu - 4)
    return {"normal": 3.0, "uniform": 1.8, "rademacher": 1.0}[distribution]


@lru_cache(maxsize=1)
def _kurtosis_function():
    """κ(q·k) over (d_k, μ_q, μ_k, σ_q², σ_k², β_q, β_k), as proved."""
    r = proved("dot-product-kurtosis").result
    return sp.lambdify(r.symbols, r.kurtosis, "math")


def dot_product_kurtosis(d_k: int, q, k) -> float:
    """κ of q·k over d_k iid component pairs; ``q`` and ``k`` are ``sampling.Components``."""
    d_k = arguments.positive_int(d_k, "d_k")
    return float(_kurtosis_function()(d_k, q.mean, k.mean, q.variance, k.variance,
                                      component_kurtosis(q.distribution, q.nu),
                                      component_kurtosis(k.distribution, k.nu)))
