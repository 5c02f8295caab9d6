"""Moments of the dot product q·k and what scaling does to them.

The general result is proved by induction on the dimension d: S_d = S_{d−1} + q_d k_d, with
S_{d−1} a function of the first d − 1 components and so independent of (q_d, k_d). Base case
and step are identities over symbolic means and variances; the seeds' zero-mean, unit-variance
case is substituted last.
"""
from __future__ import annotations

import sympy as sp
from sympy import stats

from proofs.claims import cited
from proofs.engine import ASSUMPTION, DEFINITION, HYPOTHESIS, Derivation, Proof, Result
from proofs.moments import IndependentMoments
from proofs.notation import (C_IDX, D_K, Cov, MU_K, MU_Q, SCALE_S, VAR_K, VAR_Q, E, I, J, KI, QI, S, Std, Var)
from proofs.validate import as_dimension, as_mean, as_variance

__all__ = ["D_K", "E", "MU_K", "MU_Q", "S", "Std", "VAR_K", "VAR_Q", "Var", "dot_product_moments",
           "general_moments", "seed_variance", "distribution_free", "scaled_unit_variance", "dk_scaling_trap",
           "prescaled_query"]

_D = sp.Symbol("d", integer=True, positive=True)  # the induction variable
S_D, S_PREV = sp.Symbol("S_d"), sp.Symbol("S_{d-1}")


def _component_pairs(n: int) -> tuple[list[sp.Symbol], list[sp.Symbol]]:
    return list(sp.symbols(f"q_1:{n + 1}")), list(sp.symbols(f"k_1:{n + 1}"))


def _induction(pf: Proof) -> tuple[sp.Expr, sp.Expr]:
    """E[S_d] and Var(S_d) by induction on d, for symbolic means and variances; returns them at d = d_k."""
    q, k = sp.IndexedBase("q"), sp.IndexedBase("k")
    pf.premise("definition", "the score is the sum of the d_k component products; S_d its first d terms",
               S, sp.Sum(q[I] * k[I], (I, 1, D_K)), kind=DEFINITION)
    pf.premise("definition", "S_1 = q_1 k_1 and S_d = S_{d−1} + q_d k_d", S_D, S_PREV + q[_D] * k[_D], kind=DEFINITION)
    pf.premise("independence", "all components are independent, so S_{d−1} (a function of components 1..d−1) "
               "is independent of (q_d, k_d), and E of a product of independent factors factorises",
               sp.Symbol("E[XY]"), sp.Symbol("E[X] E[Y]"), kind=ASSUMPTION)
    qd, kd = sp.symbols("q_d k_d")
    pair = IndependentMoments({qd: (MU_Q, VAR_Q), kd: (MU_K, VAR_K)})
    # The formulas are computed from one pair, not typed: m = E[q_d k_d], v = Var(q_d k_d).
    m, v = pair.E(qd * kd), pair.var(qd * kd)
    mean_d, var_d = _D * m, _D * v

    base_mean = pf.equal("independence", "base case d = 1: E[S_1] = E[q_1 k_1] = E[q_1] E[k_1]", pair.E(qd * kd),
                         mean_d.subs(_D, 1), subject=E(sp.Symbol("S_1")))
    base_var = pf.equal("independence", "base case d = 1: Var(S_1) = E[q_1²] E[k_1²] − (E[q_1] E[k_1])²", pair.var(qd * kd),
                        var_d.subs(_D, 1), subject=Var(sp.Symbol("S_1")))
    pf.premise("induction hypothesis", "E[S_{d−1}] = (d − 1) E[q k] and Var(S_{d−1}) = (d − 1) Var(q k)",
               sp.Tuple(E(S_PREV), Var(S_PREV)), sp.Tuple(mean_d.subs(_D, _D - 1), var_d.subs(_D, _D - 1)),
               kind=HYPOTHESIS)
    ops = IndependentMoments({S_PREV: (mean_d.subs(_D, _D - 1), var_d.subs(_D, _D - 1)), qd: (MU_Q, VAR_Q),
                              kd: (MU_K, VAR_K)})
    step_mean = pf.equal("linearity of expectation", "step: E[S_{d−1} + q_d k_d] = (d − 1) E[q k] + E[q k] = d E[q k]",
                         ops.E(S_PREV + qd * kd), mean_d, subject=E(S_D))
    # Shown unreduced, E[S_{d−1} q_d k_d] − E[S_{d−1}] E[q_d k_d], so the report shows what cancels.
    cov = sp.Add(ops.E(S_PREV * qd * kd), -ops.E(S_PREV) * ops.E(qd * kd), evaluate=False)
    no_cov = pf.equal("independence", "step: Cov(S_{d−1}, q_d k_d) = E[S_{d−1} q_d k_d] − E[S_{d−1}] E[q_d k_d] = 0",
                      cov, 0, subject=Cov(S_PREV, qd * kd))
    step_var = pf.equal("Var(X + Y) = Var X + Var Y + 2 Cov(X, Y)",
                        "step: Var(S_{d−1} + q_d k_d) = (d − 1) Var(q k) + Var(q k) + 2·0 = d Var(q k)",
                        ops.var(S_PREV + qd * kd), var_d, subject=Var(S_D))

    def induction() -> tuple[bool, str]:
        ok = base_mean and base_var and step_mean and no_cov and step_var
        return ok, ("base case d = 1 and step d − 1 → d checked above" if ok else "base case or step failed")

    mean, variance = sp.expand(mean_d.subs(_D, D_K)), sp.expand(var_d.subs(_D, D_K))
    pf.holds("induction on d", "E[S] = d_k E[q k] for every d_k ≥ 1", mean_d.subs(_D, D_K), mean, induction,
             subject=E(S))
    pf.holds("induction on d", "Var(S) = d_k Var(q k) for every d_k ≥ 1", var_d.subs(_D, D_K), variance, induction,
             subject=Var(S))
    return mean, variance


def _expanded_small_d(mean: sp.Expr, variance: sp.Expr):
    def check() -> tuple[bool, str]:
        # Independent of the induction: expand the whole sum over 2d variables at d = 1..4.
        for n in range(1, 5):
            qs, ks = _component_pairs(n)
            ops_n = IndependentMoments({**{x: (MU_Q, VAR_Q) for x in qs}, **{x: (MU_K, VAR_K) for x in ks}})
            s = sum(a * b for a, b in zip(qs, ks))
            for got, want, name in ((ops_n.E(s), mean.subs(D_K, n), "E"), (ops_n.var(s), variance.subs(D_K, n), "Var")):
                if sp.expand(got - want) != 0:
                    return False, f"{name} at d={n}: expanded {got}, formula {want}"
        return True, "full expansion agrees at d = 1, 2, 3, 4"
    return check


def _general(pf: Proof) -> tuple[sp.Expr, sp.Expr]:
    mean, variance = _induction(pf)
    pf.holds("explicit expansion", "cross-check: expand E and Var over all components for d = 1..4",
             Var(S), variance, _expanded_small_d(mean, variance))
    return mean, variance


def general_moments() -> Derivation:
    """E[q·k] and Var(q·k) for independent components with symbolic means and variances, any d_k."""
    pf = Proof("dot-product-moments")
    mean, variance = _general(pf)
    pf.equal("collecting terms", "Var(S) in the stated form", variance, pf.claimed(Var(S)), subject=Var(S))
    return pf.finish(Result(mean=mean, variance=variance, std=sp.sqrt(variance)))


def dot_product_moments(*, d=None, mean_q=0, mean_k=0, var_q=1, var_k=1) -> Derivation:
    """E[q·k] and Var(q·k) for q, k with independent components.

    The general formulas are derived first (symbolic d_k, means and variances, by induction);
    the given values are substituted last. ``d=None`` keeps the dimension symbolic.
    ``.result`` holds ``mean``, ``variance`` and ``std``.
    """
    d = D_K if d is None else as_dimension(d, "d")
    values = {MU_Q: as_mean(mean_q, "mean_q"), MU_K: as_mean(mean_k, "mean_k"),
              VAR_Q: as_variance(var_q, "var_q"), VAR_K: as_variance(var_k, "var_k"), D_K: d}
    general = cited("dot-product-moments")
    mean, variance = (sp.expand(x.subs(values)) for x in (general.result.mean, general.result.variance))
    pf = Proof("dot-product-moments[instance]", statement=sp.And(sp.Eq(E(S), mean, evaluate=False),
                                                       sp.Eq(Var(S), variance, evaluate=False)),
               assumptions=["q_i, k_i (i = 1..d_k) mutually independent",
                            f"E[q_i] = {values[MU_Q]}, Var(q_i) = {values[VAR_Q]}, E[k_i] = {values[MU_K]}, "
                            f"Var(k_i) = {values[VAR_K]}, d_k = {d}"])
    pf.cite(general)
    _substitute(pf, general, values)
    return pf.finish(Result(mean=mean, variance=variance, std=sp.sqrt(variance)))


def _doit(expr):
    return sp.sympify(expr).doit()


def _substitute(pf: Proof, general: Derivation, values: dict) -> None:
    """The general formulas at the given values: the substitution is the last step, shown as such."""
    keys = [k for k in (MU_Q, MU_K, VAR_Q, VAR_K, D_K) if values[k] != k]
    at = lambda expr: sp.Subs(expr, tuple(keys), tuple(values[k] for k in keys)) if keys else expr  # noqa: E731
    for name, subject in (("mean", E(S)), ("variance", Var(S))):
        general_form = general.result[name]
        pf.equal("substitution", f"the general {name} at the given means, variances and d_k", at(general_form),
                 sp.expand(general_form.subs(values)), subject=subject, where=_doit)


def seed_variance() -> Derivation:
    """The seeds' case: zero mean, unit variance gives E = 0, Var = d_k, Std = √d_k."""
    general = cited("dot-product-moments")
    pf = Proof("dot-product-variance")
    pf.cite(general)
    values = {MU_Q: 0, MU_K: 0, VAR_Q: 1, VAR_K: 1, D_K: D_K}
    _substitute(pf, general, values)
    variance = sp.expand(general.result.variance.subs(values))
    pf.premise("definition", "the standard deviation is the square root of the variance", Std(S), sp.sqrt(Var(S)),
               kind=DEFINITION)
    pf.equal("square root of the variance", "Std(S) = √Var(S) at the seeds' values",
             sp.sqrt(sp.Subs(general.result.variance, (MU_Q, MU_K, VAR_Q, VAR_K), (0, 0, 1, 1))), sp.sqrt(variance),
             subject=Std(S), where=_doit)
    return pf.finish(Result(mean=sp.expand(general.result.mean.subs(values)), variance=variance,
                            std=sp.sqrt(variance)))


def distribution_free() -> Derivation:
    """Only means and variances enter: cited from the general derivation, cross-checked by integration."""
    pf = Proof("dot-product-distribution-free")
    general = cited("dot-product-moments")
    pf.cite(general, sp.Eq(Var(S), pf.statement.rhs, evaluate=False))
    # A Normal query component and a Uniform key component: their densities from sympy.stats, every
    # moment integrated over the joint density f_q(x) f_k(y) (independence). The formula is fed only the
    # marginal means and variances. Numbers keep the integrals fast.
    x, y = sp.symbols("x y", real=True)
    fq = stats.density(stats.Normal("q", 1, 2))(x)
    fk = stats.density(stats.Uniform("k", 0, 3))(y).rewrite(sp.Piecewise)
    moment = lambda expr: sp.integrate(sp.integrate(expr * fq, (x, -sp.oo, sp.oo)) * fk, (y, 0, 3))  # noqa: E731
    mq, mk = moment(x), moment(y)
    at = {MU_Q: mq, VAR_Q: moment(x**2) - mq**2, MU_K: mk, VAR_K: moment(y**2) - mk**2, D_K: 1}
    pf.equal("integration", "E[qk], q ~ Normal(1, 2²), k ~ Uniform(0, 3), equals the general mean at their means",
             moment(x * y), general.result.mean.subs(at))
    pf.equal("integration", "Var(qk) for the same pair equals the general variance at their means and variances",
             moment(x**2 * y**2) - moment(x * y) ** 2, general.result.variance.subs(at))
    return pf.finish(Result(variance=general.result.variance))


def _scaled_variance(claim_id: str, divisor: sp.Expr) -> tuple[Proof, sp.Expr]:
    base = cited("dot-product-variance")
    pf = Proof(claim_id)
    c = sp.Symbol("c", positive=True)
    y = sp.Symbol("Y")
    ops = IndependentMoments({y: (sp.Symbol("m_Y", real=True), sp.Symbol("s_Y", positive=True))})
    pf.equal("Var(cY) = c² Var(Y)", "scaling a random variable scales its variance by c²",
             ops.var(y / c), ops.var(y) / c**2, subject=Var(y / c))
    pf.cite(base, sp.Eq(Var(S), D_K, evaluate=False))
    variance = sp.simplify(base.result.variance / divisor**2)
    pf.equal("substitution", f"c = {divisor}, Var(S) = d_k: Var(S / c) = Var(S) / c²",
             (ops.var(y) / c**2).subs({sp.Symbol("s_Y", positive=True): base.result.variance, c: divisor}),
             variance, subject=Var(S / divisor))
    return pf, variance


def scaled_unit_variance() -> Derivation:
    pf, variance = _scaled_variance("scaled-score-unit-variance", sp.sqrt(D_K))
    return pf.finish(Result(variance=variance))


def dk_scaling_trap() -> Derivation:
    pf, variance = _scaled_variance("dk-scaling-trap", D_K)
    limit = sp.limit(variance, D_K, sp.oo)
    pf.holds("limit", "Var(S / d_k) = 1/d_k → 0 as d_k → ∞", sp.Limit(variance, D_K, sp.oo), limit,
             lambda: (limit.is_number and limit.is_finite, f"the limit evaluates to {limit}"),
             subject=sp.Limit(Var(S / D_K), D_K, sp.oo))
    return pf.finish(Result(variance=variance, limit=limit))


def prescaled_query(n_q: int = 2, n_k: int = 3, d: int = 2) -> Derivation:
    """((sQ)Kᵀ)_ij = s (QKᵀ)_ij: scaling Q before the GEMM equals scaling the scores, any head dimension."""
    pf = Proof("prescaled-query")
    entry = sp.Sum((SCALE_S * QI[I, C_IDX]) * KI[J, C_IDX], (C_IDX, 1, D_K))
    pf.premise("definition of the matrix product", "((sQ)Kᵀ)_ij = Σ_c (s q_ic) k_jc", sp.Symbol("((sQ)Kᵀ)_ij"),
               entry, kind=DEFINITION)
    pf.equal("linearity of the sum", "the scale s does not depend on c and leaves the sum", sp.factor_terms(entry),
             SCALE_S * sp.Sum(QI[I, C_IDX] * KI[J, C_IDX], (C_IDX, 1, D_K)), subject=entry)
    Q, K = sp.Matrix(n_q, d, sp.symbols(f"q:{n_q * d}")), sp.Matrix(n_k, d, sp.symbols(f"k:{n_k * d}"))
    pf.equal("bilinearity of the matrix product", f"cross-check: (sQ)Kᵀ = s(QKᵀ) on explicit {n_q}×{d}, {n_k}×{d}",
             (SCALE_S * Q) * K.T, SCALE_S * (Q * K.T))
    pf.equal("substitution", "with s = 1/√d_k: (Q/√d_k)Kᵀ = QKᵀ/√d_k",
             (Q / sp.sqrt(D_K)) * K.T, (Q * K.T) / sp.sqrt(D_K))
    return pf.finish(Result(scores=SCALE_S * (Q * K.T)))
