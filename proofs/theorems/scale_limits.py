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

from proofs import notation as nt
from proofs.claims import cited
from proofs.engine import ASSUMPTION, CITED, DEFINITION, HYPOTHESIS, Derivation, Proof, Result
from proofs.moments import IndependentMoments
from proofs.theorems.dot_product import D_K, S, Var

N_KEYS = nt.N_KEYS
DELTA = sp.Symbol("delta", positive=True)
T = sp.Symbol("t", positive=True)  # a fixed gap threshold
GAMMA = sp.Symbol("gamma", positive=True)  # smallest gap between the top logit and the rest
P = nt.P


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


def _increasing(x: sp.Symbol) -> tuple[bool, str]:
    """exp is increasing: its derivative exp(x) is positive for every real x."""
    return bool(sp.diff(sp.exp(x), x).is_positive), "d/dx eˣ = eˣ > 0 for real x"


def _gap_variance(pf: Proof) -> sp.Expr:
    """Var of the raw gap s_1 − s_2 = Σ_i q_i (k_1i − k_2i), by induction on d_k (no formula cited)."""
    q, k1, k2 = sp.symbols("q_d k_1d k_2d")
    term = q * (k1 - k2)
    unit = {x: (0, 1) for x in (q, k1, k2)}
    one = IndependentMoments(unit).var(term)
    pf.equal("independence", "one term q_i(k_1i − k_2i) of the gap has variance E[q²]E[(k_1 − k_2)²] = 2",
             one, sp.Integer(2), subject=Var(term))
    d, g_prev = sp.Symbol("d", integer=True, positive=True), sp.Symbol("G_{d-1}")
    pf.premise("induction hypothesis", "the gap over the first d − 1 components has mean 0 and variance (d − 1)·Var(term)",
               Var(g_prev), (d - 1) * one, kind=HYPOTHESIS)
    ops = IndependentMoments({g_prev: (0, (d - 1) * one), **unit})
    cov = pf.equal("independence", "G_{d−1} and the d-th term are uncorrelated", ops.cov(g_prev, term), 0)
    step = pf.equal("Var(X + Y) = Var X + Var Y + 2 Cov(X, Y)", "step: Var(G_{d−1} + q_d(k_1d − k_2d)) = d·Var(term)",
                    ops.var(g_prev + term), d * one)
    variance = (d * one).subs(d, D_K)
    pf.holds("induction on d", "Var(s_1 − s_2) = 2 d_k (base case d = 1 is the one-term variance)", variance, variance,
             lambda: (cov and step and one.is_positive, "base case and step checked above"),
             subject=Var(sp.Symbol("s_1 - s_2")))
    return variance


def scale_trap_limits(*, uniform_divisor=D_K, onehot_divisor=1) -> Derivation:
    """Divide by d_k: weights → uniform; do not divide: weights → one-hot (d_k → ∞), in probability.

    What is checked: the variances (derived), the tail bounds' algebra and limits, the softmax
    bounds; what is cited: Chebyshev, the union bound, the CLT with the portmanteau theorem.
    The divisors may be replaced to be judged: √d_k in either place is refused (it keeps the
    logits' variance at 1, so neither limit holds).
    """
    c_u, c_1 = _divisor(uniform_divisor, "uniform_divisor"), _divisor(onehot_divisor, "onehot_divisor")
    pf = Proof("scale-trap-limits")
    eps = sp.Symbol("epsilon", positive=True)
    base = cited("dot-product-variance")
    pf.cite(base, sp.Eq(Var(S), D_K, evaluate=False))
    pf.premise("definition", "logits z_j = s_j / c with s_j = q·k_j; weights a = softmax(z); n fixed as d_k → ∞",
               sp.Symbol("z_j"), sp.Symbol("s_j") / sp.Symbol("c"), kind=DEFINITION)

    # --- divide by c_u = d_k: the logits collapse to 0 -----------------------------------------------
    var_u = sp.simplify(base.result.variance / c_u**2)
    pf.equal("Var(cY) = c² Var(Y)", f"Var(z_j) = Var(s_j) / ({c_u})²", base.result.variance / c_u**2, var_u,
             subject=Var(sp.Symbol("z_j")))
    pf.premise("Chebyshev's inequality", "P(|z_j| > δ) ≤ Var(z_j)/δ² (E[z_j] = 0)", P(sp.Symbol("|z_j| > delta")),
               var_u / DELTA**2, "≤", kind=CITED, reference="Chebyshev's inequality")
    pf.premise("union bound", "P(max_j |z_j| > δ) ≤ Σ_j P(|z_j| > δ)", P(sp.Symbol("max|z_j| > delta")),
               sp.Symbol("Σ_j P(|z_j| > δ)"), "≤", kind=CITED, reference="the union bound (Boole's inequality)")
    tail = N_KEYS * var_u / DELTA**2
    pf.equal("Chebyshev + union bound", "P(max_j |z_j| > δ) ≤ n · Var(z_j)/δ²", N_KEYS * (var_u / DELTA**2), tail)
    x = sp.Symbol("x", real=True)
    pf.holds("exp is increasing", "so every |z| ≤ δ puts each e^{z_k − z_j} in [e^{−2δ}, e^{2δ}] and "
             "a_j = 1/Σ_k e^{z_k − z_j} in [e^{−2δ}/n, e^{2δ}/n]", sp.exp(x), 0, lambda: _increasing(x), ">")
    upper, lower = 1 / (N_KEYS * sp.exp(-2 * DELTA)), 1 / (N_KEYS * sp.exp(2 * DELTA))
    z = sp.symbols("z_1:4", real=True)
    a1 = sp.exp(z[0]) / sum(sp.exp(v) for v in z)
    zk, k_idx, j_idx = sp.IndexedBase("z", real=True), sp.Symbol("k", integer=True, positive=True), \
        sp.Symbol("j", integer=True, positive=True)
    weight = sp.exp(zk[j_idx]) / sp.Sum(sp.exp(zk[k_idx]), (k_idx, 1, N_KEYS))
    pulled = sp.factor_terms(sp.expand(sp.Sum(sp.exp(zk[k_idx] - zk[j_idx]), (k_idx, 1, N_KEYS)), power_exp=True))
    pf.equal("division by e^{z_j}", "any n: Σ_k e^{z_k − z_j} = e^{−z_j} Σ_k e^{z_k}, so a_j = 1 / Σ_k e^{z_k − z_j}",
             1 / pulled, weight)

    width = sp.expand(upper - 1 / N_KEYS)
    pf.equal("completing the square", "(e^{2δ} − 1) − (1 − e^{−2δ}) = (e^δ − e^{−δ})² ≥ 0, so the wider side is "
             "|a_j − 1/n| ≤ (e^{2δ} − 1)/n", n_times(width) - n_times(1 / N_KEYS - lower),
             (sp.exp(DELTA) - sp.exp(-DELTA)) ** 2)
    solved = sp.solve(sp.Eq(width, eps), DELTA)
    delta_eps = solved[0] if len(solved) == 1 else None
    pf.holds("solving for δ", f"|a_j − 1/n| ≤ ε once every |z| ≤ δ_ε = {delta_eps}", sp.Symbol("delta_epsilon"),
             delta_eps, lambda: (delta_eps is not None and delta_eps.is_positive,
                                 f"(e^{{2δ}} − 1)/n = ε at δ = {delta_eps} > 0"))
    tail_eps = tail.subs(DELTA, delta_eps) if delta_eps is not None else sp.nan
    pf.holds("limit", "P(max_j |a_j − 1/n| > ε) ≤ n·Var(z)/δ_ε² → 0 as d_k → ∞, for every ε > 0 and fixed n",
             sp.Limit(tail_eps, D_K, sp.oo), 0, _limit_is(tail_eps, D_K, sp.oo, 0, "the tail bound at δ_ε"))
    centre = sp.limit(upper, DELTA, 0)
    pf.holds("limit", f"both bounds e^{{±2δ}}/n close on {centre} as δ → 0: a_j → {centre} in probability",
             sp.Limit(upper, DELTA, 0), centre,
             lambda: (centre == sp.limit(lower, DELTA, 0), f"upper and lower bounds → {centre}"),
             subject=sp.Limit(nt.A_J, D_K, sp.oo))

    # --- divide by c_1 = 1: the gaps between logits blow up -----------------------------------------
    pf.premise("independence", "all components of q, k_1, …, k_n are independent with mean 0 and variance 1, so "
               "E of a product of distinct components factorises", sp.Symbol("E[XY]"), sp.Symbol("E[X] E[Y]"),
               kind=ASSUMPTION)
    gap_var = _gap_variance(pf)
    std_gap = sp.sqrt(gap_var) / c_1
    pf.equal("Var(cY) = c² Var(Y)", f"Std(z_1 − z_2) = √Var(s_1 − s_2)/({c_1})", sp.sqrt(gap_var / c_1**2), std_gap)
    pf.holds("limit", "Std(z_1 − z_2) → ∞ as d_k → ∞", sp.Limit(std_gap, D_K, sp.oo), sp.oo,
             _limit_is(std_gap, D_K, sp.oo, sp.oo, "Std of the gap"))
    pf.premise("central limit theorem + portmanteau", "the gap's d_k i.i.d. terms have finite variance (checked: 2), so "
               "(z_1 − z_2)/Std → N(0, 1) in distribution and limsup P(|z_1 − z_2|/Std ≤ ε) ≤ P(|N(0, 1)| ≤ ε) "
               "= erf(ε/√2)", P(sp.Symbol("|z_1 - z_2| <= t")), sp.erf(eps / sp.sqrt(2)), "≤", kind=CITED,
               reference="central limit theorem (Lindeberg–Lévy) with the portmanteau theorem")
    pf.holds("limit", "t/Std(z_1 − z_2) → 0, so |z_1 − z_2| ≤ t implies |z_1 − z_2|/Std ≤ ε for large d_k",
             sp.Limit(T / std_gap, D_K, sp.oo), 0, _limit_is(T / std_gap, D_K, sp.oo, 0, "t/Std"))
    pf.holds("limit", "erf(ε/√2) → 0 as ε → 0, so P(|z_1 − z_2| ≤ t) → 0 for every fixed t",
             sp.Limit(sp.erf(eps / sp.sqrt(2)), eps, 0), 0, _limit_is(sp.erf(eps / sp.sqrt(2)), eps, 0, 0, "erf(ε/√2)"))
    gauss = sp.erf(T / (sp.sqrt(2) * std_gap))
    pf.holds("limit", "cross-check with a Gaussian gap: P(|z_1 − z_2| ≤ t) = erf(t/(√2·Std)) → 0",
             sp.Limit(gauss, D_K, sp.oo), 0, _limit_is(gauss, D_K, sp.oo, 0, "erf(t/(√2·Std))"))
    pf.premise("exchangeability + union bound", "the n(n − 1)/2 pairwise gaps are distributed alike (i.i.d. keys), so "
               "P(some |z_i − z_j| ≤ t) ≤ n(n − 1)/2 · P(|z_1 − z_2| ≤ t) → 0 for fixed n",
               P(sp.Symbol("min gap <= t")), N_KEYS * (N_KEYS - 1) / 2 * P(sp.Symbol("|z_1 - z_2| <= t")), "≤",
               kind=CITED, reference="the union bound (Boole's inequality)")
    pf.equal("division by e^{z_1}", "with z_1 the largest (n = 3): a_1 = 1/(1 + Σ_{j>1} e^{−(z_1 − z_j)})",
             a1, 1 / (1 + sp.exp(-(z[0] - z[1])) + sp.exp(-(z[0] - z[2]))))
    pf.holds("exp is increasing", "each gap ≥ γ gives e^{−(z_1 − z_j)} ≤ e^{−γ}, so max_j a_j ≥ 1/(1 + (n − 1)e^{−γ})",
             sp.exp(x), 0, lambda: _increasing(x), ">")
    floor = 1 / (1 + (N_KEYS - 1) * sp.exp(-GAMMA))
    top = sp.limit(floor, GAMMA, sp.oo)
    pf.holds("limit", f"1/(1 + (n − 1)e^{{−γ}}) → {top} as γ → ∞ and a_max ≤ 1: with every gap > t w.p. → 1, "
             "a_max → 1 in probability (one-hot)", sp.Limit(floor, GAMMA, sp.oo), top,
             lambda: (top.is_number and top.is_finite, f"the floor's limit is {top}"), subject=sp.Limit(nt.A_MAX, D_K, sp.oo))
    return pf.finish(Result(logit_variance_dk=var_u, uniform_tail_bound=tail, uniform_gap_bound=width,
                            gap_std_unscaled=std_gap, onehot_floor=floor, gaussian_gap_probability=gauss,
                            symbols=(D_K, N_KEYS, DELTA, T, GAMMA)))


def n_times(expr: sp.Expr) -> sp.Expr:
    return sp.expand(N_KEYS * expr)
