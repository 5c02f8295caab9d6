"""The scale trap as a limit in d_k, under the seeds' assumptions.

One query, n keys; raw scores s_j = q·k_j with every component of q, k_1, …, k_n independent,
zero mean, unit variance. Logits are z_j = s_j / c(d_k). The statement writes the limit in
probability as Limit(·, d_k, ∞); each is established by a rewrite from a cited theorem that states
it (the checker shows a Limit defined only so), its hypotheses shown by checked steps:

* c = d_k: E[z_j] = 0, Var(z_j) = 1/d_k (derived), below any η > 0 once d_k is large; Chebyshev and a
  union bound give P(max_j |z_j| > δ) ≤ n·Var(z_j)/δ² < η (checked), so each z_k → 0 in probability
  (Chebyshev, cited); softmax is continuous, so a_j → e⁰ / Σ_{k=1}^{n} e⁰ = 1/n (the continuous mapping
  theorem, cited; the value computed by the checker).
* c = 1: the gap z_1 − z_2 = Σ_i q_i (k_1i − k_2i) has Var = 2 d_k (derived as for q·k, with
  κ_i = k_1i − k_2i of variance 2), past any M once d_k is large; by the CLT with the portmanteau
  theorem and a union bound every gap → ∞ in probability, so e^{−g_j} → 0 for the gaps g_j below the
  largest logit (cited); a_max = 1/(1 + Σ_j e^{−g_j}) is continuous in them, so a_max → 1/(1 + 0) = 1
  (the continuous mapping theorem, cited): one-hot.
"""
from __future__ import annotations

import sympy as sp

from proofs import notation as nt
from proofs.claims import cited
from proofs.engine import CITED, Derivation, Fact, Proof, Result
from proofs.theorems.dot_product import _X as _XR
from proofs.theorems.dot_product import D_K, E, S, Std, Var, _moments, scaled_variance

N_KEYS = nt.N_KEYS
DELTA = sp.Symbol("delta", positive=True)
T = sp.Symbol("t", positive=True)  # a fixed gap threshold
GAMMA = sp.Symbol("gamma", positive=True)  # smallest gap between the top logit and the rest


def _divisor(value, name: str) -> sp.Expr:
    try:
        expr = sp.sympify(value, strict=True)
    except (sp.SympifyError, TypeError):
        raise ValueError(f"{name} must be a positive SymPy expression in d_k, got {value!r}") from None
    if not isinstance(expr, sp.Expr) or expr.free_symbols - {D_K} or expr.is_positive is not True:
        raise ValueError(f"{name} must be a positive expression in d_k only, got {value!r}")
    return expr


_J = sp.Symbol("j", integer=True, positive=True)
_K = sp.Symbol("k", integer=True, positive=True)
_X = sp.Symbol("x", integer=True, positive=True)  # the ∀-index of a limit stated for every logit or gap
_I = sp.Symbol("i", integer=True, positive=True)  # a component
ETA = sp.Symbol("eta", positive=True)  # a tolerance on a probability
LEVEL = sp.Symbol("M", positive=True)  # a level the gap's variance passes
ZETA = sp.IndexedBase("zeta", real=True)  # ζ_k: the limit in probability of the logit z_k (divided by c_u)
NU = sp.IndexedBase("nu", real=True)  # ν_j: the limit in probability of e^{−g_j}, g_j the j-th gap below the top logit
PR = sp.Function("P", real=True)  # a probability (a real number)
KEY_1, KEY_2 = sp.IndexedBase("k1", real=True), sp.IndexedBase("k2", real=True)  # the components of k_1, k_2
KAPPA = sp.IndexedBase("kappa", real=True)  # κ_i = k_1i − k_2i
GAP_PARTIAL = sp.IndexedBase("U", real=True)  # U_m = Σ_{i ≤ m} q_i κ_i
GAP = sp.Symbol("G")  # the raw gap s_1 − s_2 = Σ_i q_i κ_i
_EV_ONE, _EV_MAX = sp.Symbol("|z_j| > delta"), sp.Symbol("max|z_j| > delta")  # events, by name
_CMT = ("continuous mapping theorem (Mann and Wald, 1943; van der Vaart, Asymptotic Statistics, 1998, Theorem 2.3): "
        "g continuous at the limit, X → x in probability ⇒ g(X) → g(x) in probability")


def _key_difference(pf: Proof, def_var: Fact) -> tuple[Fact, Fact]:
    """E[κ_i] = 0 and Var(κ_i) = 2 for κ_i = k_1i − k_2i (∀ i), from the keys' independent zero-mean, unit-variance
    components: linearity of E and E[k_1i k_2i] = E[k_1i] E[k_2i]."""
    i = _I
    def_kappa = pf.define(KAPPA[i], KEY_1[i] - KEY_2[i], "κ_i = k_1i − k_2i: the gap s_1 − s_2 = Σ_i q_i κ_i",
                          forall=[i])
    m1, m2 = (pf.assume(sp.Eq(E(key[i]), 0), f"E[{key}_i] = 0", forall=[i]) for key in (KEY_1, KEY_2))
    v1, v2 = (pf.assume(sp.Eq(Var(key[i]), 1), f"Var({key}_i) = 1", forall=[i]) for key in (KEY_1, KEY_2))
    both = pf.assume(sp.Eq(E(KEY_1[i] * KEY_2[i]), E(KEY_1[i]) * E(KEY_2[i])),
                     "independence: the keys k_1 and k_2 are independent, so E[k_1i k_2i] = E[k_1i] E[k_2i]", forall=[i])
    lin = pf.linearity(E(KEY_1[i] - KEY_2[i]), E(KEY_1[i]) - E(KEY_2[i]), "linearity", operator=E,
                       random=[KEY_1, KEY_2])
    mean = pf.rewrite(E(KAPPA[i]), 0, [def_kappa, lin, m1, m2], "E[κ_i] = E[k_1i] − E[k_2i] = 0", forall=[i])
    sq = pf.linearity(E((KEY_1[i] - KEY_2[i]) ** 2), E(KEY_1[i] ** 2) - 2 * E(KEY_1[i] * KEY_2[i]) + E(KEY_2[i] ** 2),
                      "E[(k_1i − k_2i)²] = E[k_1i²] − 2E[k_1i k_2i] + E[k_2i²] (linearity)", operator=E,
                      random=[KEY_1, KEY_2])
    spread = pf.rewrite(Var(KAPPA[i]), E(KEY_1[i] ** 2) - 2 * E(KEY_1[i]) * E(KEY_2[i]) + E(KEY_2[i] ** 2)
                        - (E(KEY_1[i]) - E(KEY_2[i])) ** 2, [def_kappa, def_var, sq, lin, both],
                        "Var(κ_i) = E[κ_i²] − E[κ_i]², expanded; k_1 and k_2 independent")
    seconds = [pf.rewrite(E(key[i] ** 2), Var(key[i]) + E(key[i]) ** 2, [def_var], f"E[{key}_i²] = Var + E²")
               for key in (KEY_1, KEY_2)]
    variance = pf.rewrite(Var(KAPPA[i]), 2, [spread, *seconds, v1, v2, m1, m2], "Var(κ_i) = 1 + 1 = 2", forall=[i])
    return mean, variance


def scale_trap_limits(*, uniform_divisor=D_K, onehot_divisor=1) -> Derivation:
    """Divide by d_k: weights → uniform; do not divide: weights → one-hot (d_k → ∞), in probability.

    What is checked: the variances (derived from the components' moments), the tail bound's algebra, that Var(z_j)
    and the tail fall below any η > 0 (and the gap's variance past any M) once d_k is large, the value of each
    limit from the limits of the logits or gaps. What is cited: Chebyshev's inequality (a zero-mean variable whose
    variance → 0 → 0 in probability), the CLT with the portmanteau theorem and the union bound (the gaps → ∞ in
    probability), the continuous mapping theorem (softmax is continuous). A limit's value comes from a premise that
    states it, whose conditions the checked steps show; so the divisors may be replaced to be judged: √d_k in
    either place is refused (it keeps the logits' variance at 1: no step shows it → 0, or the gaps' → ∞).
    """
    c_u, c_1 = _divisor(uniform_divisor, "uniform_divisor"), _divisor(onehot_divisor, "onehot_divisor")
    pf = Proof("scale-trap-limits")
    eps = sp.Symbol("epsilon", positive=True)
    base = cited("dot-product-variance")
    var_s = pf.cite(base, sp.Eq(Var(S), D_K, evaluate=False))
    mean_s = pf.cite(base, sp.Eq(E(S), 0, evaluate=False))
    def_var = pf.define(Var(_XR), E(_XR**2) - E(_XR) ** 2, "the variance: Var(X) = E(X²) − E(X)²", forall=[_XR])

    # --- divide by c_u = d_k: the logits collapse to 0 -----------------------------------------------
    # z_j = s_j / c_u, each s_j = q·k_j a score S of dot-product-variance (E 0, Var d_k)
    var_fact, var_u = scaled_variance(pf, S, c_u, D_K, var_s, mean_s, def_var)
    mean_u = pf.linearity(E(S / c_u), E(S) / c_u, "E[z_j] = E[s_j]/c", operator=E, random=[S])
    pf.rewrite(E(S / c_u), 0, [mean_u, mean_s], "E[z_j] = 0")
    past = pf.assume(sp.Gt(ETA * DELTA**2 * D_K, N_KEYS), "any δ, η > 0, and d_k past N = n/(η δ²): η δ² d_k > n")
    pf.rewrite(Var(S / c_u), ETA * DELTA**2 / N_KEYS, [var_fact, past],
               "Var(z_j) < ηδ²/n once η δ² d_k > n: Var(z_j) → 0", relation_="<")
    chebyshev = pf.cite_external(sp.Le(PR(_EV_ONE), Var(S / c_u) / DELTA**2, evaluate=False), "Chebyshev's inequality",
                                 "P(|z_j| > δ) ≤ Var(z_j)/δ² (E[z_j] = 0), alike for every j (identically distributed)")
    union = pf.cite_external(sp.Le(PR(_EV_MAX), sp.Sum(PR(_EV_ONE), (_J, 1, N_KEYS)), evaluate=False),
                             "the union bound (Boole's inequality)", "P(max_j |z_j| > δ) ≤ Σ_j P(|z_j| > δ)")
    at_least_0 = pf.cite_external(sp.Le(0, PR(_EV_ONE), evaluate=False), "Kolmogorov's axioms: a probability is ≥ 0",
                                  "P(|z_j| > δ) ≥ 0")
    tail = N_KEYS * var_u / DELTA**2
    valued = pf.rewrite(Var(S / c_u) / DELTA**2, var_u / DELTA**2, [var_fact], f"Var(z_j)/δ² = {var_u / DELTA**2}")
    one = pf.chain([chebyshev, valued], PR(_EV_ONE), "≤", var_u / DELTA**2, "P(|z_j| > δ) ≤ Var(z_j)/δ²")
    alike = pf.identity(sp.Sum(PR(_EV_ONE), (_J, 1, N_KEYS)), N_KEYS * PR(_EV_ONE), "n equal terms")
    n_fold = pf.bound([pf.sign(N_KEYS, "≤", N_KEYS, "n ≤ n"), one], "mul", N_KEYS * PR(_EV_ONE), "≤", tail,
                      "n P(|z_j| > δ) ≤ n Var(z_j)/δ²", nonnegative=[at_least_0])
    bound = pf.chain([union, alike, n_fold], PR(_EV_MAX), "≤", tail,
                     f"Chebyshev + union bound: P(max_j |z_j| > δ) ≤ n · Var(z_j)/δ² = {tail}")
    vanishing = pf.rewrite(tail, ETA, [past], f"{tail} < η once η δ² d_k > n", relation_="<")
    pf.chain([bound, vanishing], PR(_EV_MAX), "<", ETA, "P(max_j |z_j| > δ) < η for d_k past n/(η δ²): "
             "max_j |z_j| → 0 in probability")
    to_zero = pf.cite_external(sp.Eq(ZETA[_X], 0), "Chebyshev's inequality: E[X] = 0 and Var(X) → 0 give X → 0 in "
                               "probability (convergence in mean square implies convergence in probability; e.g. "
                               "Grimmett and Stirzaker, Probability and Random Processes, 3rd ed., 2001, §7.2)",
                               "ζ_x, the limit in probability of the logit z_x, is 0: E[z_x] = 0 and Var(z_x) < ηδ²/n "
                               "for every η once d_k is large (checked above)", forall=[_X])
    softmax = sp.exp(ZETA[_J]) / sp.Sum(sp.exp(ZETA[_K]), (_K, 1, N_KEYS))
    mapped = pf.cite_external(sp.Eq(sp.Limit(nt.A_J, D_K, sp.oo), softmax, evaluate=False), _CMT,
                              "a_j = e^{z_j} / Σ_k e^{z_k} is continuous in z: its limit in probability is softmax(ζ)_j")
    pf.rewrite(sp.Limit(nt.A_J, D_K, sp.oo), 1 / N_KEYS, [mapped, to_zero],
               "a_j → e⁰ / Σ_{k=1}^{n} e⁰ = 1/n in probability")
    # the softmax bounds at every |z| ≤ δ, for the numeric layer: their algebra checked
    upper, lower = 1 / (N_KEYS * sp.exp(-2 * DELTA)), 1 / (N_KEYS * sp.exp(2 * DELTA))
    zk = sp.IndexedBase("z", real=True)
    weight = sp.exp(zk[_J]) / sp.Sum(sp.exp(zk[_K]), (_K, 1, N_KEYS))
    pulled = sp.factor_terms(sp.expand(sp.Sum(sp.exp(zk[_K] - zk[_J]), (_K, 1, N_KEYS)), power_exp=True))
    pf.identity(1 / pulled, weight, "any n: Σ_k e^{z_k − z_j} = e^{−z_j} Σ_k e^{z_k}, so a_j = 1 / Σ_k e^{z_k − z_j}")
    width = sp.expand(upper - 1 / N_KEYS)
    pf.identity(n_times(width) - n_times(1 / N_KEYS - lower), (sp.exp(DELTA) - sp.exp(-DELTA)) ** 2,
                "(e^{2δ} − 1) − (1 − e^{−2δ}) = (e^δ − e^{−δ})² ≥ 0: the wider side of [e^{−2δ}/n, e^{2δ}/n] about 1/n "
                "is (e^{2δ} − 1)/n")
    solved = sp.solve(sp.Eq(width, eps), DELTA)
    if len(solved) == 1:
        pf.identity(width.subs(DELTA, solved[0]), eps, f"(e^{{2δ}} − 1)/n = ε at δ_ε = {solved[0]}")

    # --- divide by c_1 = 1: the gaps between logits blow up -----------------------------------------
    mean_kappa, var_kappa = _key_difference(pf, def_var)
    _, mean_g, var_g, _, _ = _moments(pf, 0, 0, 1, 2, score=GAP, key=KAPPA, partial=GAP_PARTIAL, def_var=def_var,
                                      key_moments=(mean_kappa, var_kappa))
    named = pf.rewrite(Var(GAP), 2 * D_K, [var_g], "Var(s_1 − s_2) = 2 d_k: the gap is G = Σ_i q_i κ_i")
    var_gap_fact, var_gap = scaled_variance(pf, GAP, c_1, 2 * D_K, named, mean_g, def_var)
    def_std = pf.define(Std(_XR), sp.sqrt(Var(_XR)), "the standard deviation: Std(X) = √Var(X)", forall=[_XR])
    std_gap = sp.sqrt(var_gap)
    pf.rewrite(Std(GAP / c_1), std_gap, [def_std, var_gap_fact], f"Std(z_1 − z_2) = √Var(z_1 − z_2) = {std_gap}")
    beyond = pf.assume(sp.Gt(2 * D_K, LEVEL), "any M > 0, and d_k past N = M/2: 2 d_k > M")
    pf.rewrite(LEVEL, Var(GAP / c_1), [var_gap_fact, beyond], "Var(z_1 − z_2) > M once 2 d_k > M: the gap's spread "
               "→ ∞", relation_="<")
    pf.premise("central limit theorem + portmanteau", "the gap's d_k i.i.d. terms have finite variance (2, checked), "
               "so (z_1 − z_2)/Std → N(0, 1) in distribution and limsup P(|z_1 − z_2|/Std ≤ ε) ≤ P(|N(0, 1)| ≤ ε) "
               "= erf(ε/√2)", PR(sp.Symbol("|z_1 - z_2| <= t")), sp.erf(eps / sp.sqrt(2)), "≤", kind=CITED,
               reference="central limit theorem (Lindeberg–Lévy) with the portmanteau theorem")
    pf.premise("exchangeability + union bound", "the n(n − 1)/2 pairwise gaps are distributed alike (i.i.d. keys), so "
               "P(some |z_i − z_j| ≤ t) ≤ n(n − 1)/2 · P(|z_1 − z_2| ≤ t)",
               PR(sp.Symbol("min gap <= t")), N_KEYS * (N_KEYS - 1) / 2 * PR(sp.Symbol("|z_1 - z_2| <= t")), "≤",
               kind=CITED, reference="the union bound (Boole's inequality)")
    to_none = pf.cite_external(sp.Eq(NU[_X], 0), "central limit theorem (Lindeberg–Lévy) with the portmanteau theorem "
                               "and the union bound: Std(z_1 − z_2) → ∞ (checked) gives P(|z_1 − z_2| ≤ t) → 0 for "
                               "every t, and with it P(some |z_i − z_j| ≤ t) ≤ n(n − 1)/2 · P(|z_1 − z_2| ≤ t) → 0",
                               "ν_x, the limit in probability of e^{−g_x}, g_x ≥ 0 the x-th gap below the largest "
                               "logit, is 0: P(e^{−g_x} > ε) = P(g_x < log(1/ε)) → 0 for every ε > 0", forall=[_X])
    z = sp.symbols("z_1:4", real=True)
    a1 = sp.exp(z[0]) / sum(sp.exp(v) for v in z)
    pf.identity(a1, 1 / (1 + sp.exp(-(z[0] - z[1])) + sp.exp(-(z[0] - z[2]))),
                "division by e^{z_1}, with z_1 the largest (n = 3): a_1 = 1/(1 + Σ_{j>1} e^{−(z_1 − z_j)})")
    largest = 1 / (1 + sp.Sum(NU[_J], (_J, 1, N_KEYS - 1)))
    top = pf.cite_external(sp.Eq(sp.Limit(nt.A_MAX, D_K, sp.oo), largest, evaluate=False), _CMT,
                           "a_max = 1/(1 + Σ_{j=1}^{n−1} e^{−g_j}) (division by the largest e^{z}) is continuous in the "
                           "e^{−g_j}: its limit in probability is 1/(1 + Σ_j ν_j)")
    pf.rewrite(sp.Limit(nt.A_MAX, D_K, sp.oo), 1, [top, to_none], "a_max → 1/(1 + Σ_{j=1}^{n−1} 0) = 1 in "
               "probability: one-hot")
    # (only values the steps above checked: a floor or a Gaussian gap probability typed here would be neither)
    return pf.finish(Result(logit_variance_dk=var_u, uniform_tail_bound=tail, uniform_gap_bound=width,
                            gap_std_unscaled=std_gap, symbols=(D_K, N_KEYS, DELTA, T, GAMMA)))


def n_times(expr: sp.Expr) -> sp.Expr:
    return sp.expand(N_KEYS * expr)
