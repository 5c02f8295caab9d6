"""Moments of the dot product q·k and what scaling does to them.

Everything is derived from definitions the checker rewrites: S = Σ_{i=1}^{d_k} q_i k_i, the
partial sums T_m = Σ_{i=1}^{m} q_i k_i, Var(X) = E(X²) − E(X)², Std(X) = √Var(X); from the
components' means and variances; and from independence, stated as the instances the proof uses
(E[q_i k_i] = E[q_i] E[k_i], E[q_i² k_i²] = E[q_i²] E[k_i²], E[T_{m−1} q_m k_m] = E[T_{m−1}] E[q_m k_m]).
E[S] and Var(S) follow by induction on d_k: T_0 = 0, and
T_m = T_{m−1} + q_m k_m (the recursion that defines a finite sum, cited) with T_{m−1} independent
of the m-th pair. Nothing is computed outside the checker's rules.
"""
from __future__ import annotations

import sympy as sp

from proofs.checker import substitute
from proofs.claims import cited
from proofs.engine import Derivation, Fact, Proof, Result
from proofs.notation import (C_IDX, D_K, MU_K, MU_Q, SCALE_S, VAR_K, VAR_Q, E, I, J, KI, QI, S, Std, Var)
from proofs.validate import as_dimension, as_mean, as_variance

__all__ = ["D_K", "E", "MU_K", "MU_Q", "S", "Std", "VAR_K", "VAR_Q", "Var", "dot_product_moments",
           "general_moments", "seed_variance", "distribution_free", "scaled_unit_variance", "dk_scaling_trap",
           "prescaled_query", "EPSILON"]

# Components q_i, k_i and the partial scores T_m = Σ_{i ≤ m} q_i k_i.
Q_C, K_C, T_PART = sp.IndexedBase("q", real=True), sp.IndexedBase("k", real=True), sp.IndexedBase("T", real=True)
_I = sp.Symbol("i", integer=True, positive=True)
_M0 = sp.Symbol("m", integer=True, nonnegative=True)  # T_m is defined from T_0 = 0 on
_M1 = sp.Symbol("m", integer=True, positive=True)  # the m-th pair, m ≥ 1
_X = sp.Symbol("X")  # any random quantity (the definitions of Var and Std hold for every one)
EPSILON = sp.Symbol("epsilon", positive=True)  # the limit's ε: Var(S/d_k) < ε once ε d_k > 1


def _moments(pf: Proof, mean_q, mean_k, var_q, var_k, *, score=S, key=K_C, partial=T_PART, def_var=None,
             key_moments=None) -> tuple[Fact, Fact, Fact, sp.Expr, sp.Expr]:
    """(Var's definition, E(S) = d_k mean_q mean_k, Var(S) = d_k v) as checked facts, for components with the given
    means and variances; v = (var_q + mean_q²)(var_k + mean_k²) − mean_q² mean_k² is what the steps need.
    ``score``, ``key``, ``partial``: the names of S = Σ q_i k_i, of the key's components and of the partial sums (another
    dot product of q, the gap q·(k_1 − k_2) for one); ``def_var``: Var's definition if the proof has it already;
    ``key_moments``: the facts E[k_i] = mean_k and Var(k_i) = var_k (∀ i), if derived, instead of assumed."""
    d, T_PART, K_C, S = D_K, partial, key, score  # noqa: N806 (the names below are the default ones')

    def _term(i):
        return Q_C[i] * K_C[i]

    def _partial(top):
        return sp.Sum(_term(_I), (_I, 1, top))

    def_s = pf.define(S, _partial(d), f"the score: {S} = Σ_{{i=1}}^{{d_k}} q_i {K_C}_i")
    def_t = pf.define(T_PART[_M0], _partial(_M0), f"the partial score {T_PART}_m = Σ_{{i=1}}^{{m}} q_i {K_C}_i "
                      f"({T_PART}_0 = 0)", forall=[_M0])
    if def_var is None:
        def_var = pf.define(Var(_X), E(_X**2) - E(_X) ** 2, "the variance: Var(X) = E(X²) − E(X)²", forall=[_X])
    split = pf.cite_external(sp.Eq(_partial(_M1), _partial(_M1 - 1) + _term(_M1)),
                             "the recursion that defines a finite sum: Σ_{i=1}^{m} a_i = Σ_{i=1}^{m−1} a_i + a_m",
                             f"Σ_{{i=1}}^{{m}} q_i {K_C}_i = Σ_{{i=1}}^{{m−1}} q_i {K_C}_i + q_m {K_C}_m, m ≥ 1", forall=[_M1])
    ind_pair = pf.assume(sp.Eq(E(_term(_I)), E(Q_C[_I]) * E(K_C[_I])),
                         f"independence: q_i and {K_C}_i are independent, so E[q_i {K_C}_i] = E[q_i] E[{K_C}_i]",
                         forall=[_I])
    ind_sq = pf.assume(sp.Eq(E(Q_C[_I] ** 2 * K_C[_I] ** 2), E(Q_C[_I] ** 2) * E(K_C[_I] ** 2)),
                       f"independence: q_i² and {K_C}_i² are independent", forall=[_I])
    ind_rest = pf.assume(sp.Eq(E(T_PART[_M1 - 1] * _term(_M1)), E(T_PART[_M1 - 1]) * E(_term(_M1))),
                         f"independence: {T_PART}_{{m−1}}, a function of the pairs 1..m−1, is independent of "
                         f"q_m {K_C}_m",
                         forall=[_M1])
    mq = pf.assume(sp.Eq(E(Q_C[_I]), mean_q), f"E[q_i] = {mean_q}", forall=[_I])
    mk = pf.assume(sp.Eq(E(K_C[_I]), mean_k), f"E[{K_C}_i] = {mean_k}", forall=[_I]) if key_moments is None else \
        key_moments[0]
    vq = pf.assume(sp.Eq(Var(Q_C[_I]), var_q), f"Var(q_i) = {var_q}", forall=[_I])
    vk = pf.assume(sp.Eq(Var(K_C[_I]), var_k), f"Var({K_C}_i) = {var_k}", forall=[_I]) if key_moments is None else \
        key_moments[1]
    pair_mean = mean_q * mean_k
    v = (var_q + mean_q**2) * (var_k + mean_k**2) - pair_mean**2

    # Var(T_d) = d v by induction on d, from T_0 = 0.
    claim = sp.Eq(Var(T_PART[d]), d * v, evaluate=False)
    zero = pf.rewrite(T_PART[0], 0, [def_t], "T_0 is the empty sum")
    e_zero = pf.linearity(E(0), 0, "E of the constant 0", operator=E)
    base = pf.rewrite(Var(T_PART[0]), substitute(claim, {d: 0}).rhs, [zero, def_var, e_zero],
                      "base case d = 0: Var(0) = E(0) − E(0)² = 0")
    hyp = pf.hypothesis(substitute(claim, {d: d - 1}), "induction hypothesis: Var(T_{d−1}) = (d − 1) v")
    prev, pair = T_PART[d - 1], _term(d)
    s1 = pf.rewrite(T_PART[d], prev + pair, [def_t, split], "T_d = T_{d−1} + q_d k_d")
    s2 = pf.rewrite(Var(T_PART[d]), E((prev + pair) ** 2) - E(prev + pair) ** 2, [s1, def_var],
                    "the definition of Var at T_d = T_{d−1} + q_d k_d")
    s3 = pf.linearity(E((prev + pair) ** 2), E(prev**2) + 2 * E(prev * pair) + E(Q_C[d] ** 2 * K_C[d] ** 2),
                      "E[(T + P)²] = E[T²] + 2E[TP] + E[P²] (linearity)", operator=E, random=[Q_C, K_C, T_PART])
    s4 = pf.linearity(E(prev + pair), E(prev) + E(pair), "linearity", operator=E, random=[Q_C, K_C, T_PART])
    s5 = pf.rewrite(E(prev * pair), E(prev) * E(pair), [ind_rest], "T_{d−1} is independent of q_d k_d")
    s6 = pf.rewrite(E(prev**2), Var(prev) + E(prev) ** 2, [def_var], "E[X²] = Var(X) + E[X]²")
    s7 = pf.rewrite(E(pair), pair_mean, [ind_pair, mq, mk], "E[q_d k_d] = E[q_d] E[k_d]")
    cq = pf.rewrite(E(Q_C[d] ** 2), Var(Q_C[d]) + E(Q_C[d]) ** 2, [def_var], "E[q_d²] = Var(q_d) + E[q_d]²")
    ck = pf.rewrite(E(K_C[d] ** 2), Var(K_C[d]) + E(K_C[d]) ** 2, [def_var], "E[k_d²] = Var(k_d) + E[k_d]²")
    s8 = pf.rewrite(E(Q_C[d] ** 2 * K_C[d] ** 2), (var_q + mean_q**2) * (var_k + mean_k**2),
                    [ind_sq, cq, ck, vq, vk, mq, mk], "E[q_d² k_d²] = E[q_d²] E[k_d²] (independence)")
    step = pf.rewrite(Var(T_PART[d]), d * v, [s2, s3, s4, s5, s6, hyp, s7, s8],
                      "step: (d − 1)v + E[T]² + 2E[T]E[P] + E[P²] − (E[T] + E[P])² = d v; E[T_{d−1}] cancels")
    variance_t = pf.induction(claim, d, 0, base, step, hyp, "Var(T_d) = d v for every d ≥ 0")

    # E(T_d) = d μ_q μ_k by induction on d: linearity and E[q_d k_d] = E[q_d] E[k_d] in the step.
    claim_mean = sp.Eq(E(T_PART[d]), d * pair_mean, evaluate=False)
    base_mean = pf.rewrite(E(T_PART[0]), substitute(claim_mean, {d: 0}).rhs, [zero, e_zero], "base case d = 0")
    hyp_mean = pf.hypothesis(substitute(claim_mean, {d: d - 1}), "induction hypothesis: E[T_{d−1}] = (d − 1) μ_q μ_k")
    step_mean = pf.rewrite(E(T_PART[d]), d * pair_mean, [s1, s4, hyp_mean, s7], "step: E[T_{d−1}] + E[q_d k_d]")
    mean_t = pf.induction(claim_mean, d, 0, base_mean, step_mean, hyp_mean, "E[T_d] = d μ_q μ_k for every d ≥ 0")

    whole = pf.rewrite(S, T_PART[d], [def_s, def_t], "S = T_{d_k}")
    mean = pf.rewrite(E(S), d * pair_mean, [whole, mean_t], "E(S) = E(T_{d_k}) = d_k μ_q μ_k")
    variance = pf.rewrite(Var(S), d * v, [whole, variance_t], "Var(S) = Var(T_{d_k}) = d_k v")
    return def_var, mean, variance, sp.expand(d * pair_mean), d * v


def _stated_from(pf: Proof, mean_fact: Fact, var_fact: Fact) -> None:
    """The statement's E(S) and Var(S) conjuncts, in the form it states them."""
    pf.rewrite(E(S), pf.claimed(E(S)), [mean_fact], "E[S] in the stated form")
    pf.rewrite(Var(S), pf.claimed(Var(S)), [var_fact], "Var(S) in the stated form")


def general_moments() -> Derivation:
    """E[q·k] and Var(q·k) for independent components with symbolic means and variances, any d_k."""
    pf = Proof("dot-product-moments")
    _, mean_fact, var_fact, mean, variance = _moments(pf, MU_Q, MU_K, VAR_Q, VAR_K)
    _stated_from(pf, mean_fact, var_fact)
    mean, variance = pf.claimed(E(S)), pf.claimed(Var(S))
    return pf.finish(Result(mean=mean, variance=variance, std=sp.sqrt(variance)))


def dot_product_moments(*, d=None, mean_q=0, mean_k=0, var_q=1, var_k=1) -> Derivation:
    """E[q·k] and Var(q·k) for q, k with independent components of the given means and variances.

    Proved for a symbolic d_k from the definitions (see ``general_moments``); an explicit ``d`` enters
    last, as the assumption d_k = d. ``.result`` holds ``mean``, ``variance`` and ``std``.
    """
    dim = None if d is None else as_dimension(d, "d")
    values = (as_mean(mean_q, "mean_q"), as_mean(mean_k, "mean_k"), as_variance(var_q, "var_q"),
              as_variance(var_k, "var_k"))
    mean = sp.expand(D_K * values[0] * values[1])
    variance = sp.expand(D_K * ((values[2] + values[0] ** 2) * (values[3] + values[1] ** 2)
                                - values[0] ** 2 * values[1] ** 2))
    if dim is not None:
        mean, variance = sp.expand(mean.subs(D_K, dim)), sp.expand(variance.subs(D_K, dim))
    pf = Proof("dot-product-moments[instance]", statement=sp.And(sp.Eq(E(S), mean, evaluate=False),
                                                                 sp.Eq(Var(S), variance, evaluate=False)),
               assumptions=["q_i, k_i (i = 1..d_k) mutually independent",
                            f"E[q_i] = {values[0]}, Var(q_i) = {values[2]}, E[k_i] = {values[1]}, "
                            f"Var(k_i) = {values[3]}" + ("" if dim is None else f", d_k = {dim}")])
    _, mean_fact, var_fact, _, _ = _moments(pf, *values)
    at = [] if dim is None else [pf.assume(sp.Eq(D_K, dim), f"the dimension: d_k = {dim}")]
    pf.rewrite(E(S), mean, [mean_fact, *at], "E[S] at the given values")
    pf.rewrite(Var(S), variance, [var_fact, *at], "Var(S) at the given values")
    return pf.finish(Result(mean=mean, variance=variance, std=sp.sqrt(variance)))


def seed_variance() -> Derivation:
    """The seeds' case: the general moments (cited) at zero mean and unit variance, substituted last:
    E = 0, Var = d_k, Std = √d_k."""
    general = cited("dot-product-moments")
    pf = Proof("dot-product-variance")
    mean_fact, var_fact = (pf.cite(general, sp.Eq(f(S), general.result[key], evaluate=False))
                           for f, key in ((E, "mean"), (Var, "variance")))
    values = [pf.assume(sp.Eq(symbol, value), f"the seeds' {what}: {symbol} = {value}")
              for symbol, value, what in ((MU_Q, 0, "zero mean"), (MU_K, 0, "zero mean"),
                                          (VAR_Q, 1, "unit variance"), (VAR_K, 1, "unit variance"))]
    pf.rewrite(E(S), pf.claimed(E(S)), [mean_fact, *values], "E[S] = d_k μ_q μ_k at the seeds' values")
    seed_var = pf.rewrite(Var(S), pf.claimed(Var(S)), [var_fact, *values], "Var(S) at the seeds' values")
    def_std = pf.define(Std(_X), sp.sqrt(Var(_X)), "the standard deviation: Std(X) = √Var(X)", forall=[_X])
    pf.rewrite(Std(S), pf.claimed(Std(S)), [def_std, seed_var], "Std(S) = √Var(S) = √d_k")
    return pf.finish(Result(mean=pf.claimed(E(S)), variance=pf.claimed(Var(S)), std=pf.claimed(Std(S))))


def distribution_free() -> Derivation:
    """Var(q·k) is the general formula, whose derivation uses only the components' means, variances and
    independence (its premises): no distribution enters, so any with those moments gives it."""
    pf = Proof("dot-product-distribution-free")
    general = cited("dot-product-moments")
    pf.cite(general, sp.Eq(Var(S), pf.statement.rhs, evaluate=False))
    return pf.finish(Result(variance=general.result.variance))


def _scaled_variance(claim_id: str, divisor: sp.Expr, statement=None) -> tuple[Proof, Fact, sp.Expr]:
    """Var(S / divisor) from the definition of Var, linearity of E and the seeds' E[S] = 0, Var(S) = d_k
    (``statement`` for an id outside the catalogue)."""
    base = cited("dot-product-variance")
    pf = Proof(claim_id, statement=statement)
    var_s = pf.cite(base, sp.Eq(Var(S), D_K, evaluate=False))
    mean_s = pf.cite(base, sp.Eq(E(S), 0, evaluate=False))
    def_var = pf.define(Var(_X), E(_X**2) - E(_X) ** 2, "the variance: Var(X) = E(X²) − E(X)²", forall=[_X])
    fact, variance = scaled_variance(pf, S, divisor, D_K, var_s, mean_s, def_var)
    return pf, fact, variance


def scaled_variance(pf: Proof, score, divisor: sp.Expr, variance, var_fact: Fact, mean_fact: Fact,
                    def_var: Fact) -> tuple[Fact, sp.Expr]:
    """Var(score / divisor) = variance / divisor² as a checked fact, from Var(score) = variance (``var_fact``),
    E(score) = 0 (``mean_fact``), Var's definition and linearity of E; and its right side."""
    second = pf.linearity(E(score**2 / divisor**2), E(score**2) / divisor**2, "the constant 1/c² leaves E",
                          operator=E, random=[score])
    first = pf.linearity(E(score / divisor), E(score) / divisor, "the constant 1/c leaves E", operator=E,
                         random=[score])
    unscaled = pf.rewrite(Var(score / divisor), E(score**2) / divisor**2 - E(score) ** 2 / divisor**2,
                          [def_var, second, first], f"Var({score}/c) = E[{score}²]/c² − E[{score}]²/c²")
    square = pf.rewrite(E(score**2), Var(score) + E(score) ** 2, [def_var], f"E[{score}²] = Var({score}) + E[{score}]²")
    scaled = variance / divisor**2
    fact = pf.rewrite(Var(score / divisor), scaled, [unscaled, square, var_fact, mean_fact],
                      f"Var({score}/c) = {variance}/c², c = {divisor}")
    return fact, scaled


def scaled_unit_variance() -> Derivation:
    pf, _, variance = _scaled_variance("scaled-score-unit-variance", sp.sqrt(D_K))
    return pf.finish(Result(variance=variance))


def dk_scaling_trap() -> Derivation:
    """Var(S/d_k) = 1/d_k, and its limit 0 in ε–N form: Var(S/d_k) < ε for every d_k > 1/ε."""
    pf, fact, variance = _scaled_variance("dk-scaling-trap", D_K)
    past = pf.assume(sp.Gt(EPSILON * D_K, 1), "past the limit's N = 1/ε: ε d_k > 1 (any ε > 0)")
    pf.rewrite(Var(S / D_K), EPSILON, [fact, past], "1/d_k < ε once ε d_k > 1", relation_="<")
    return pf.finish(Result(variance=variance, limit=sp.Integer(0)))


def prescaled_query(n_q: int = 2, n_k: int = 3, d: int = 2) -> Derivation:
    """((sQ)Kᵀ)_ij = s (QKᵀ)_ij: the scale leaves the sum over c by linearity, any head dimension.

    ``.result.scores`` is the proved right-hand side written out for explicit n_q × d and n_k × d
    matrices of symbols, for the numeric layer to evaluate."""
    pf = Proof("prescaled-query")
    lhs, rhs = pf.statement.lhs, pf.statement.rhs
    pf.linearity(lhs, rhs, "the scale s does not depend on c and leaves the sum")
    n_q, n_k, d = (int(as_dimension(x, name)) for x, name in ((n_q, "n_q"), (n_k, "n_k"), (d, "d")))
    q_sym = sp.Matrix(n_q, d, sp.symbols(f"q:{n_q * d}"))
    k_sym = sp.Matrix(n_k, d, sp.symbols(f"k:{n_k * d}"))

    def entry(i, j):
        e = rhs.subs({I: i + 1, J: j + 1, D_K: d}).doit()
        return e.replace(lambda x: isinstance(x, sp.Indexed),
                         lambda x: (q_sym if x.base == QI else k_sym)[int(x.indices[0]) - 1, int(x.indices[1]) - 1])

    return pf.finish(Result(scores=sp.Matrix(n_q, n_k, entry)))
