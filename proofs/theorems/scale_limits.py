"""The scale trap as a limit in d_k, under the seeds' assumptions.

One query, n keys; raw scores s_j = q·k_j with every component of q, k_1, …, k_n independent,
zero mean, unit variance. Logits are z_j = s_j / c(d_k).

* c = d_k: Var(z_j) = 1/d_k → 0. Chebyshev and a union bound give max_j |z_j| → 0 in
  probability; softmax is squeezed between e^{−2δ}/n and e^{2δ}/n when every |z_j| ≤ δ, so the
  weights → (1/n, …, 1/n) in probability (hence in distribution).
* c = 1: the gap z_1 − z_2 = Σ_i q_i (k_1i − k_2i) has standard deviation √(2 d_k) → ∞ and, by the
  CLT, a non-degenerate limit shape, so P(|gap| ≤ t) → 0 for every t; the largest weight is at
  least 1/(1 + (n − 1)e^{−γ}) with γ the smallest gap to the maximum, so it → 1 in probability:
  the weights → one-hot.
"""
from __future__ import annotations

import sympy as sp

from proofs.engine import Derivation, Proof, Result
from proofs.moments import IndependentMoments
from proofs.theorems.dot_product import D_K, dot_product_moments

N_KEYS = sp.Symbol("n", integer=True, positive=True)
DELTA = sp.Symbol("delta", positive=True)
T = sp.Symbol("t", positive=True)  # a fixed gap threshold
GAMMA = sp.Symbol("gamma", positive=True)  # smallest gap between the top logit and the rest
P = sp.Function("P")


def _divisor(value, name: str) -> sp.Expr:
    try:
        expr = sp.sympify(value, strict=True)
    except (sp.SympifyError, TypeError):
        raise ValueError(f"{name} must be a positive SymPy expression in d_k, got {value!r}") from None
    if not isinstance(expr, sp.Expr) or expr.free_symbols - {D_K} or expr.is_positive is not True:
        raise ValueError(f"{name} must be a positive expression in d_k only, got {value!r}")
    return expr


def _limit_is(expr, var, point, want, name: str):
    def check() -> tuple[bool, str]:
        got = sp.limit(expr, var, point)
        return got == want, f"{name} → {got}"
    return check


def scale_trap_limits(*, uniform_divisor=D_K, onehot_divisor=1) -> Derivation:
    """Divide by d_k: weights → uniform; do not divide: weights → one-hot (d_k → ∞).

    The divisors may be replaced to be judged: √d_k in either place is refused (it keeps
    the logits' variance at 1, so neither limit holds).
    """
    c_u, c_1 = _divisor(uniform_divisor, "uniform_divisor"), _divisor(onehot_divisor, "onehot_divisor")
    pf = Proof("scale-trap-limits", "Scale by 1/d_k → uniform weights; no scaling → one-hot",
               sp.And(sp.Eq(sp.Limit(sp.Symbol("a_j"), D_K, sp.oo), 1 / N_KEYS),
                      sp.Eq(sp.Limit(sp.Symbol("a_max"), D_K, sp.oo), 1)),
               ["one query, n ≥ 2 keys; all components of q, k_1, …, k_n independent, mean 0, variance 1",
                "limits in probability as d_k → ∞, for fixed n"])
    var_s = dot_product_moments().result.variance  # Var(q·k) = d_k, derived
    # --- divide by c_u = d_k: the logits collapse to 0 -----------------------------------------------
    var_u = sp.simplify(var_s / c_u**2)
    pf.equal("Var(cY) = c² Var(Y), Var(q·k) = d_k", f"Var(z_j) = d_k / ({c_u})²", var_u, D_K / c_u**2)
    tail = N_KEYS * var_u / DELTA**2
    pf.premise("Chebyshev + union bound", "P(max_j |z_j| > δ) ≤ Σ_j Var(z_j)/δ² = n·Var(z_j)/δ²",
               P(sp.Symbol("max|z_j| > delta")), tail, "≤")
    pf.holds("limit", "the tail bound → 0 as d_k → ∞, for every fixed δ > 0 and n", sp.Limit(tail, D_K, sp.oo), 0,
             _limit_is(tail, D_K, sp.oo, 0, "n·Var(z)/δ²"))
    z = sp.symbols("z_1:4", real=True)
    a1 = sp.exp(z[0]) / sum(sp.exp(x) for x in z)
    pf.equal("division by e^{z_j}", "a_j = 1 / Σ_k e^{z_k − z_j} (n = 3): each exponent lies in [−2δ, 2δ] "
             "when every |z| ≤ δ", a1, 1 / sum(sp.exp(x - z[0]) for x in z))
    pf.premise("monotonicity of exp", "so e^{−2δ}/n ≤ a_j ≤ e^{2δ}/n", sp.Symbol("a_j"),
               sp.exp(2 * DELTA) / N_KEYS, "≤")
    pf.equal("completing the square", "(e^{2δ} − 1) − (1 − e^{−2δ}) = (e^δ − e^{−δ})² ≥ 0, so "
             "|a_j − 1/n| ≤ (e^{2δ} − 1)/n", (sp.exp(2 * DELTA) - 1) - (1 - sp.exp(-2 * DELTA)),
             (sp.exp(DELTA) - sp.exp(-DELTA)) ** 2)
    gap_u = (sp.exp(2 * DELTA) - 1) / N_KEYS
    pf.holds("limit", "(e^{2δ} − 1)/n → 0 as δ → 0: for every ε pick δ, then P(max_j |a_j − 1/n| > ε) "
             "≤ n·Var(z)/δ² → 0", sp.Limit(gap_u, DELTA, 0), 0, _limit_is(gap_u, DELTA, 0, 0, "(e^{2δ} − 1)/n"))

    # --- divide by c_1 = 1: the gaps between logits blow up -----------------------------------------
    q, k1, k2, qj, k1j, k2j = sp.symbols("q_i k_1i k_2i q_j k_1j k_2j")
    ops = IndependentMoments({x: (0, 1) for x in (q, k1, k2, qj, k1j, k2j)})
    term, other = q * (k1 - k2), qj * (k1j - k2j)
    pf.equal("independence", "one term of the gap s_1 − s_2 = Σ_i q_i (k_1i − k_2i) has variance 2",
             ops.var(term), 2)
    pf.equal("independence", "terms i ≠ j are uncorrelated", ops.cov(term, other), 0)
    std_gap = sp.sqrt(2 * D_K) / c_1
    pf.equal("Bienaymé, Var(cY) = c² Var(Y)", f"Std(z_1 − z_2) = √(2 d_k)/({c_1})",
             sp.sqrt(sp.Sum(ops.var(term), (sp.Symbol("i"), 1, D_K)).doit()) / c_1, std_gap)
    pf.holds("limit", "Std(z_1 − z_2) → ∞ as d_k → ∞", sp.Limit(std_gap, D_K, sp.oo), sp.oo,
             _limit_is(std_gap, D_K, sp.oo, sp.oo, "Std of the gap"))
    pf.premise("CLT + portmanteau", "the gap over its std → N(0, 1) in distribution (i.i.d. terms, variance 2), "
               "so for fixed t: limsup P(|z_1 − z_2| ≤ t) ≤ P(|N(0, 1)| ≤ ε) = erf(ε/√2) for every ε > 0",
               P(sp.Symbol("|z_1 - z_2| <= t")), sp.erf(sp.Symbol("epsilon") / sp.sqrt(2)), "≤")
    eps = sp.Symbol("epsilon", positive=True)
    pf.holds("limit", "erf(ε/√2) → 0 as ε → 0, so P(|z_1 − z_2| ≤ t) → 0", sp.Limit(sp.erf(eps / sp.sqrt(2)), eps, 0),
             0, _limit_is(sp.erf(eps / sp.sqrt(2)), eps, 0, 0, "erf(ε/√2)"))
    gauss = sp.erf(T / (sp.sqrt(2) * std_gap))
    pf.holds("limit", "cross-check with a Gaussian gap: P(|z_1 − z_2| ≤ t) = erf(t/(√2·Std)) → 0",
             sp.Limit(gauss, D_K, sp.oo), 0, _limit_is(gauss, D_K, sp.oo, 0, "erf(t/(√2·Std))"))
    pf.equal("division by e^{z_1}", "with z_1 the largest (n = 3): a_1 = 1/(1 + Σ_{j>1} e^{−(z_1 − z_j)})",
             a1, 1 / (1 + sp.exp(-(z[0] - z[1])) + sp.exp(-(z[0] - z[2]))))
    floor = 1 / (1 + (N_KEYS - 1) * sp.exp(-GAMMA))
    pf.premise("monotonicity of exp + union bound", "every gap ≥ γ gives max_j a_j ≥ 1/(1 + (n − 1)e^{−γ}); "
               "P(some gap ≤ t) ≤ n(n − 1)/2 · P(|z_1 − z_2| ≤ t) → 0", sp.Symbol("max_j a_j"), floor, "≥")
    pf.holds("limit", "1/(1 + (n − 1)e^{−γ}) → 1 as γ → ∞: the largest weight → 1 in probability (one-hot)",
             sp.Limit(floor, GAMMA, sp.oo), 1, _limit_is(floor, GAMMA, sp.oo, 1, "the floor on max a_j"))
    return pf.finish(Result(logit_variance_dk=var_u, uniform_tail_bound=tail, uniform_gap_bound=gap_u,
                            gap_std_unscaled=std_gap, onehot_floor=floor, gaussian_gap_probability=gauss,
                            symbols=(D_K, N_KEYS, DELTA, T, GAMMA)))
