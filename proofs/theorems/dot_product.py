"""Moments of the dot product q·k and what scaling does to them."""
from __future__ import annotations

import sympy as sp
from sympy import stats

from proofs.engine import Derivation, Proof, Result
from proofs.moments import IndependentMoments
from proofs.validate import as_dimension, as_mean, as_variance

E = sp.Function("E")
Var = sp.Function("Var")
Std = sp.Function("Std")
S = sp.Symbol("S")  # the raw score q·k

D_K = sp.Symbol("d_k", integer=True, positive=True)
_I = sp.Symbol("i", integer=True, positive=True)
MU_Q, MU_K = sp.symbols("mu_q mu_k", real=True)
VAR_Q, VAR_K = sp.symbols("sigma_q^2 sigma_k^2", positive=True)


def _component_pairs(n: int) -> tuple[list[sp.Symbol], list[sp.Symbol]]:
    return list(sp.symbols(f"q_1:{n + 1}")), list(sp.symbols(f"k_1:{n + 1}"))


def dot_product_moments(*, d=None, mean_q=0, mean_k=0, var_q=1, var_k=1) -> Derivation:
    """E[q·k] and Var(q·k) for q, k with independent components.

    ``d=None`` keeps the dimension as the symbol d_k; the other arguments take numbers
    or SymPy expressions. ``.result`` holds ``mean``, ``variance`` and ``std``.
    """
    d = D_K if d is None else as_dimension(d, "d")
    mq, mk = as_mean(mean_q, "mean_q"), as_mean(mean_k, "mean_k")
    vq, vk = as_variance(var_q, "var_q"), as_variance(var_k, "var_k")

    term_mean = mq * mk
    term_var = vq * vk + mq**2 * vk + mk**2 * vq
    mean, variance = sp.expand(d * term_mean), sp.expand(d * term_var)

    pf = Proof(
        "dot-product-moments",
        "Moments of the dot product",
        sp.And(sp.Eq(E(S), mean), sp.Eq(Var(S), variance)),
        ["q_i, k_i (i = 1..d_k) mutually independent",
         f"E[q_i] = {mq}, Var(q_i) = {vq}, E[k_i] = {mk}, Var(k_i) = {vk}"],
    )
    q, k = sp.IndexedBase("q"), sp.IndexedBase("k")
    pf.premise("definition", "the score is a sum of d_k component products",
               S, sp.Sum(q[_I] * k[_I], (_I, 1, d)))

    # One representative pair (q_i, k_i) and a second pair (q_j, k_j), j != i.
    qi, ki, qj, kj = sp.symbols("q_i k_i q_j k_j")
    ops = IndependentMoments({qi: (mq, vq), ki: (mk, vk), qj: (mq, vq), kj: (mk, vk)})

    pf.equal("independence", "E[q_i k_i] = E[q_i] E[k_i]", ops.E(qi * ki), term_mean)
    pf.equal("linearity of expectation", "E[S] = sum of the d_k term means",
             sp.Sum(ops.E(qi * ki), (_I, 1, d)).doit(), mean)
    pf.equal("definition of variance + independence",
             "Var(q_i k_i) = E[q_i^2] E[k_i^2] - (E[q_i] E[k_i])^2", ops.var(qi * ki), term_var)
    pf.equal("independence", "terms are uncorrelated: Cov(q_i k_i, q_j k_j) = 0 for i != j",
             ops.cov(qi * ki, qj * kj), 0)
    pf.equal("Bienaymé", "Var(S) = sum of the d_k term variances",
             sp.Sum(ops.var(qi * ki), (_I, 1, d)).doit(), variance)

    def expanded_small_d() -> tuple[bool, str]:
        # The general formula at d = 1..4, by expanding the whole sum over 2d variables.
        for n in range(1, 5):
            qs, ks = _component_pairs(n)
            ops_n = IndependentMoments({**{x: (mq, vq) for x in qs}, **{x: (mk, vk) for x in ks}})
            s = sum(a * b for a, b in zip(qs, ks))
            for got, want, name in ((ops_n.E(s), n * term_mean, "E"), (ops_n.var(s), n * term_var, "Var")):
                if sp.expand(got - want) != 0:
                    return False, f"{name} at d={n}: expanded {got}, formula {want}"
        return True, "full expansion agrees at d = 1, 2, 3, 4"

    pf.holds("explicit expansion", "cross-check: expand Var(q·k) over all components for small d",
             Var(S), variance, expanded_small_d)
    return pf.finish(Result(mean=mean, variance=variance, std=sp.sqrt(variance)))


def general_moments() -> Derivation:
    return dot_product_moments(mean_q=MU_Q, mean_k=MU_K, var_q=VAR_Q, var_k=VAR_K)


def seed_variance() -> Derivation:
    """The seeds' case: zero mean, unit variance gives E = 0, Var = d_k, std = √d_k."""
    general = dot_product_moments()
    pf = Proof("dot-product-variance", "Var(q·k) = d_k under the seeds' assumptions",
               sp.And(sp.Eq(E(S), 0), sp.Eq(Var(S), D_K), sp.Eq(Std(S), sp.sqrt(D_K))),
               ["q_i, k_i independent", "E[q_i] = E[k_i] = 0, Var(q_i) = Var(k_i) = 1"])
    pf.steps.extend(general.steps)
    pf.equal("substitution", "E[S] = 0", general.result.mean, 0)
    pf.equal("substitution", "Var(S) = d_k", general.result.variance, D_K)
    pf.equal("square root of a positive variance", "Std(S) = √d_k", general.result.std, sp.sqrt(D_K))
    return pf.finish(Result(mean=general.result.mean, variance=general.result.variance, std=general.result.std))


def distribution_free() -> Derivation:
    """Only means and variances enter: Normal and Uniform components agree, via sympy.stats."""
    pf = Proof("dot-product-distribution-free", "The moments need only means and variances",
               sp.Eq(Var(S), D_K * (VAR_Q * VAR_K + MU_Q**2 * VAR_K + MU_K**2 * VAR_Q)),
               ["components independent", "any distributions with finite variance (shown: Normal, Uniform)"])
    mu, v = sp.Symbol("mu", real=True), sp.Symbol("v", positive=True)
    families = {
        "Normal": stats.Normal("X", mu, sp.sqrt(v)),
        "Uniform": stats.Uniform("X", mu - sp.sqrt(3 * v), mu + sp.sqrt(3 * v)),
    }
    for name, x in families.items():
        pf.equal("sympy.stats", f"{name}(mean mu, variance v) has mean mu", stats.E(x), mu)
        pf.equal("sympy.stats", f"{name}(mean mu, variance v) has variance v", stats.variance(x), v)
    # The product of a Normal and a Uniform, integrated by sympy.stats itself (numbers keep it fast).
    qn, ku = stats.Normal("q", 1, 2), stats.Uniform("k", 0, 3)
    mq, vq, mk, vk = 1, 4, sp.Rational(3, 2), sp.Rational(3, 4)
    formula = dot_product_moments(d=1, mean_q=mq, mean_k=mk, var_q=vq, var_k=vk).result
    pf.equal("sympy.stats", "E[qk], q ~ Normal(1, 2^2), k ~ Uniform(0, 3), equals the moment formula",
             stats.E(qn * ku), formula.mean)
    pf.equal("sympy.stats", "Var(qk) for the same pair equals the moment formula",
             stats.variance(qn * ku), formula.variance)
    general = general_moments()
    pf.holds("general theorem", "the general derivation used means and variances only", Var(S),
             general.result.variance, lambda: (general.verified, "dot-product-moments is " + general.verdict))
    return pf.finish(Result(variance=general.result.variance))


def _scaled_variance(claim_id: str, title: str, divisor: sp.Expr, expected: sp.Expr) -> Derivation:
    base = dot_product_moments()
    c = sp.Symbol("c", positive=True)
    y = sp.Symbol("Y")
    ops = IndependentMoments({y: (sp.Symbol("m_Y", real=True), sp.Symbol("s_Y", positive=True))})
    pf = Proof(claim_id, title, sp.Eq(Var(S / divisor), expected),
               ["q_i, k_i independent, zero mean, unit variance"])
    pf.equal("Var(cY) = c² Var(Y)", "scaling a random variable scales its variance by c²",
             ops.var(c * y), c**2 * ops.var(y))
    pf.holds("Var(q·k) = d_k", "from dot-product-variance", Var(S), base.result.variance,
             lambda: (base.verified and sp.expand(base.result.variance - D_K) == 0, "derived, " + base.verdict))
    pf.equal("substitution", f"Var(S / {divisor}) = Var(S) / ({divisor})²",
             base.result.variance / divisor**2, expected)
    return pf.finish(Result(variance=sp.simplify(base.result.variance / divisor**2)))


def scaled_unit_variance() -> Derivation:
    return _scaled_variance("scaled-score-unit-variance", "Dividing by √d_k restores unit variance",
                            sp.sqrt(D_K), sp.Integer(1))


def dk_scaling_trap() -> Derivation:
    return _scaled_variance("dk-scaling-trap", "Dividing by d_k shrinks the variance to 1/d_k",
                            D_K, 1 / D_K)


def prescaled_query(n_q: int = 2, n_k: int = 3, d: int = 2) -> Derivation:
    """(sQ)Kᵀ = s(QKᵀ): scaling Q before the GEMM equals scaling the scores."""
    s = sp.Symbol("s", positive=True)
    Q, K = sp.Matrix(n_q, d, sp.symbols(f"q:{n_q * d}")), sp.Matrix(n_k, d, sp.symbols(f"k:{n_k * d}"))
    pf = Proof("prescaled-query", "Pre-scaling Q equals scaling the scores",
               sp.Eq(sp.MatrixSymbol("Q_s", n_q, n_k), sp.MatrixSymbol("S_s", n_q, n_k)),
               [f"explicit symbolic Q ({n_q}×{d}), K ({n_k}×{d}), scale s"])
    pf.equal("bilinearity of the matrix product", f"(sQ)Kᵀ = s(QKᵀ), entrywise ({n_q}×{n_k})",
             (s * Q) * K.T, s * (Q * K.T))
    pf.equal("substitution", "with s = 1/√d_k: (Q/√d_k)Kᵀ = QKᵀ/√d_k",
             (Q / sp.sqrt(D_K)) * K.T, (Q * K.T) / sp.sqrt(D_K))
    return pf.finish(Result(scores=s * (Q * K.T)))
