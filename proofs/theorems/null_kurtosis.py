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

from proofs.engine import ASSUMPTION, DEFINITION, HYPOTHESIS, Derivation, Proof, Result
from proofs.notation import D_K, MU_K, MU_Q, P_TERM, S, VAR_K, VAR_Q, kappa, mu_2, mu_4

BETA_Q, BETA_K = sp.symbols("beta_q beta_k", positive=True)  # E[Z⁴] of each standardised family
M2, M4 = mu_2(P_TERM), mu_4(P_TERM)  # of one centred product term


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
    pf = Proof("dot-product-kurtosis")
    raw_q, raw_k = raw_moments(MU_Q, VAR_Q, BETA_Q), raw_moments(MU_K, VAR_K, BETA_K)
    raw_p = [sp.expand(a * b) for a, b in zip(raw_q, raw_k)]
    mu2_p, mu4_p = _central(raw_p)

    z = sp.Symbol("Z")
    pf.premise("definition", "a component is its mean plus σ times a standardised symmetric variable Z "
               "(E[Z] = E[Z³] = 0, E[Z²] = 1, E[Z⁴] = β)", sp.Symbol("q_i"), MU_Q + sp.sqrt(VAR_Q) * z,
               kind=DEFINITION)
    pf.premise("independence", "q_i and k_i are independent, so E[P^r] = E[q_i^r] E[k_i^r] for P = q_i k_i",
               sp.Symbol("E[(q_i k_i)^r]"), sp.Symbol("E[q_i^r] E[k_i^r]"), kind=ASSUMPTION)
    pf.equal("binomial expansion", "E[q_i⁴] = μ_q⁴ + 6μ_q²σ_q² + β_q σ_q⁴ (odd moments of Z vanish)",
             raw_q[4], MU_Q**4 + 6 * MU_Q**2 * VAR_Q + BETA_Q * VAR_Q**2)
    pf.equal("definition of variance", "μ₂(P) = E[P²] − E[P]² is the variance the dot-product derivation found",
             mu2_p, VAR_Q * VAR_K + MU_Q**2 * VAR_K + MU_K**2 * VAR_Q)

    # μ₄ of a sum of d iid centred terms, by induction on d: T_d the sum of d terms, Y one more.
    d = sp.Symbol("d", integer=True, positive=True)
    m3, t3 = sp.symbols("m_3 T_3")  # E[Y³], E[T_d³]: they cancel against E[T_d] = E[Y] = 0
    claim4 = fourth_moment_of_sum
    base = pf.equal("base case d = 1", "μ₄ of one term is its own μ₄", claim4(1), M4, subject=mu_4(sp.Symbol("T_1")))
    pf.premise("induction hypothesis", "μ₄(T_d) = d μ₄ + 3d(d − 1) μ₂², and μ₂(T_d) = d μ₂ (variances add)",
               mu_4(sp.Symbol("T_d")), claim4(d), kind=HYPOTHESIS)
    y, tt = sp.symbols("Y T")
    # E[(T + Y)⁴] term by term: T and Y independent and centred, so E[T]E[Y³] = E[T³]E[Y] = 0.
    moments_t = {0: 1, 1: 0, 2: d * M2, 3: t3, 4: claim4(d)}
    moments_y = {0: 1, 1: 0, 2: M2, 3: m3, 4: M4}
    fourth = sp.Poly(sp.expand((tt + y) ** 4), tt, y)
    step_value = sp.expand(sum(c * moments_t[i] * moments_y[j] for (i, j), c in fourth.terms()))
    step = pf.equal("induction step", "E[(T_d + Y)⁴] = μ₄(T_d) + 6 μ₂(T_d) μ₂ + μ₄ = (d + 1)μ₄ + 3(d + 1)d μ₂²",
                    step_value, claim4(d + 1), subject=mu_4(sp.Symbol("T_{d+1}")))
    pf.holds("induction on d", "μ₄(S) = d_k μ₄(P) + 3d_k(d_k − 1)μ₂(P)² for every d_k ≥ 1", claim4(D_K),
             pf.claimed(mu_4(S)), lambda: (base and step and sp.expand(claim4(D_K) - pf.claimed(mu_4(S))) == 0,
                                           "base case and step checked above; the closed form is the stated one"),
             subject=mu_4(S))
    kappa_s = claim4(D_K) / (D_K * M2) ** 2
    pf.equal("definition of kurtosis", "κ(S) = μ₄(S)/μ₂(S)² with μ₂(S) = d_k μ₂(P) and κ(P) = μ₄(P)/μ₂(P)²",
             kappa_s, pf.claimed(kappa(S)), subject=kappa(S), where=lambda e: e.subs(kappa(P_TERM), M4 / M2**2))
    explicit = sp.simplify(kappa_s.subs({M4: mu4_p, M2: mu2_p}))  # the result: from the steps above
    pf.equal("cross-check", "normal components with zero means: κ(P) = 9, so κ(S) = 3 + 6/d_k",
             explicit.subs({MU_Q: 0, MU_K: 0, BETA_Q: 3, BETA_K: 3}), 3 + 6 / D_K)
    return pf.finish(Result(kurtosis=explicit, symbols=(D_K, MU_Q, MU_K, VAR_Q, VAR_K, BETA_Q, BETA_K)))
