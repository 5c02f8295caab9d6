"""The kurtosis of q·k under a fully specified component model.

Each component is X = μ + σZ with Z standardised and symmetric (E[Z] = E[Z³] = 0, E[Z²] = 1,
E[Z⁴] = β, the family's kurtosis). The product P = q_i k_i has raw moments E[P^r] = E[q^r] E[k^r]
by independence; the score S = Σ_{i=1}^{d_k} P_i is a sum of d_k iid terms, whose fourth central
moment μ₄(S) = d_k μ₄ + 3d_k(d_k − 1) μ₂² is proved by induction on d_k. So

    κ(S) = μ₄(S) / μ₂(S)² = κ(P)/d_k + 3(d_k − 1)/d_k.

The numeric layer's variance test uses this κ as a floor under the sample's (``numeric.null_moments``).
"""
from __future__ import annotations

import sympy as sp

from proofs.engine import Derivation, Proof, Result
from proofs.theorems.dot_product import D_K, MU_K, MU_Q, VAR_K, VAR_Q

BETA_Q, BETA_K = sp.symbols("beta_q beta_k", positive=True)  # E[Z⁴] of each standardised family
KAPPA = sp.Function("kappa")  # κ(X) = μ₄(X) / μ₂(X)²
MU2, MU4 = sp.Function("mu_2"), sp.Function("mu_4")  # central moments
S, P = sp.symbols("S P")  # the score q·k, one product term q_i k_i
M2, M3, M4 = sp.symbols("m_2 m_3 m_4")  # E[Y²], E[Y³], E[Y⁴] of one centred term Y


def sum_fourth_moment(n):
    """μ₄ of a sum of n iid centred terms: n μ₄ + 3n(n − 1) μ₂² (what the induction proves)."""
    return n * M4 + 3 * n * (n - 1) * M2**2


def raw_moments(mean, variance, beta) -> list[sp.Expr]:
    """E[X^r], r = 0..4, for X = mean + √variance·Z: expand (mean + σZ)^r and take E[Z^j] term by term."""
    z = sp.Symbol("Z")
    z_moments = {0: 1, 1: 0, 2: 1, 3: 0, 4: beta}
    sigma = sp.sqrt(variance)
    out = []
    for r in range(5):
        poly = sp.Poly(sp.expand((mean + sigma * z) ** r), z)
        out.append(sp.expand(sum(c * z_moments[j] for (j,), c in poly.terms())))
    return out


def _central(raw: list[sp.Expr]) -> tuple[sp.Expr, sp.Expr]:
    """(μ₂, μ₄) of a variable with raw moments ``raw``: E[(X − m)^r] expanded by the binomial theorem."""
    x = sp.Symbol("X")
    m = raw[1]

    def central(r):
        poly = sp.Poly(sp.expand((x - m) ** r), x)
        return sp.expand(sum(c * raw[j] for (j,), c in poly.terms()))

    return central(2), central(4)


def dot_product_kurtosis(*, fourth_moment_of_sum=sum_fourth_moment) -> Derivation:
    """``fourth_moment_of_sum(n)`` may replace the closed form the induction proves (to see a wrong one refused)."""
    raw_q, raw_k = raw_moments(MU_Q, VAR_Q, BETA_Q), raw_moments(MU_K, VAR_K, BETA_K)
    raw_p = [sp.expand(a * b) for a, b in zip(raw_q, raw_k)]
    mu2_p, mu4_p = _central(raw_p)
    kappa_p = mu4_p / mu2_p**2

    pf = Proof(
        "dot-product-kurtosis",
        "Kurtosis of the dot product under the null model",
        sp.Eq(KAPPA(S), kappa_p / D_K + 3 * (D_K - 1) / D_K),
        ["q_i, k_i (i = 1..d_k) mutually independent", "q_i = μ_q + σ_q Z, k_i = μ_k + σ_k Z', Z and Z' "
         "standardised, symmetric, with E[Z⁴] = β_q, E[Z'⁴] = β_k"],
    )
    z = sp.Symbol("Z")
    pf.premise("definition", "a component is its mean plus σ times a standardised symmetric variable",
               sp.Symbol("q_i"), MU_Q + sp.sqrt(VAR_Q) * z)
    pf.equal("binomial expansion", "E[q_i⁴] = μ_q⁴ + 6μ_q²σ_q² + β_q σ_q⁴ (odd moments of Z vanish)",
             raw_q[4], MU_Q**4 + 6 * MU_Q**2 * VAR_Q + BETA_Q * VAR_Q**2)
    pf.equal("independence", "E[P^r] = E[q_i^r] E[k_i^r]; at r = 2: (σ_q² + μ_q²)(σ_k² + μ_k²)",
             raw_p[2], (VAR_Q + MU_Q**2) * (VAR_K + MU_K**2))
    pf.equal("definition of variance", "μ₂(P) = E[P²] − E[P]² is the variance the dot-product derivation found",
             mu2_p, VAR_Q * VAR_K + MU_Q**2 * VAR_K + MU_K**2 * VAR_Q)

    # μ₄ of a sum of d iid centred terms, by induction on d. Y a centred term, T the sum of d of them.
    d = sp.Symbol("d", integer=True, positive=True)
    m2, m3, m4 = M2, M3, M4
    t3, t4 = sp.symbols("T_3 T_4")  # E[T³], E[T⁴]
    claim4 = fourth_moment_of_sum
    pf.equal("base case d = 1", "μ₄ of one term is its own μ₄", claim4(1), m4)
    pf.premise("induction hypothesis", "μ₄(T_d) = d μ₄ + 3d(d − 1) μ₂², and μ₂(T_d) = d μ₂ (variances add)",
               t4, claim4(d))
    y, tt = sp.symbols("Y T")
    # E[(T + Y)⁴] term by term: T and Y independent and centred, so E[T]E[Y³] = E[T³]E[Y] = 0.
    moments_t = {0: 1, 1: 0, 2: d * m2, 3: t3, 4: claim4(d)}
    moments_y = {0: 1, 1: 0, 2: m2, 3: m3, 4: m4}
    fourth = sp.Poly(sp.expand((tt + y) ** 4), tt, y)
    step = sp.expand(sum(c * moments_t[i] * moments_y[j] for (i, j), c in fourth.terms()))
    pf.equal("induction step", "E[(T_d + Y)⁴] = μ₄(T_d) + 6 μ₂(T_d) μ₂ + μ₄ = (d + 1)μ₄ + 3(d + 1)d μ₂²",
             step, claim4(d + 1))

    mu2_s, mu4_s = D_K * mu2_p, claim4(D_K).subs({m4: mu4_p, m2: mu2_p})
    kappa_s = sp.simplify(mu4_s / mu2_s**2)  # the result: from the steps above, not typed again
    pf.equal("definition of kurtosis", "κ(S) = μ₄(S)/μ₂(S)² = κ(P)/d_k + 3(d_k − 1)/d_k",
             kappa_s, kappa_p / D_K + 3 * (D_K - 1) / D_K)
    pf.equal("cross-check", "normal components with zero means: κ(P) = 9, so κ(S) = 3 + 6/d_k",
             kappa_s.subs({MU_Q: 0, MU_K: 0, BETA_Q: 3, BETA_K: 3}), 3 + 6 / D_K)
    return pf.finish(Result(kurtosis=kappa_s, symbols=(D_K, MU_Q, MU_K, VAR_Q, VAR_K, BETA_Q, BETA_K)))
