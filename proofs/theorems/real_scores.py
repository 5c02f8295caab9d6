"""Scores in real self-attention: q and k come from the same token, so they are not independent.

With q = W_Qᵀx, k = W_Kᵀx and x ~ N(0, I_n), the score is the quadratic form
q·k = xᵀMx with M = W_Q W_Kᵀ, so E[q·k] = tr M and Var(q·k) = tr(MMᵀ) + tr(M²) (Isserlis).
For two independent tokens x, y: q·k = xᵀMy, E = 0 and Var = tr(MMᵀ). The seeds instead
assume q and k have independent zero-mean unit-variance components (E = 0, Var = d_k).
"""
from __future__ import annotations

from itertools import product
from math import prod
from typing import Callable, Iterable

import sympy as sp
from sympy import stats

from proofs import index_sums
from proofs import notation as nt
from proofs.engine import ASSUMPTION, CITED, DEFINITION, Derivation, Proof, Result
from proofs.validate import as_dimension

E = sp.Function("E")
Var = sp.Function("Var")
tr = sp.Function("tr")

Formula = Callable[[sp.Matrix], sp.Expr]
EXPLICIT_N = 3  # the explicit size whose expressions `.result` carries

_n = sp.Symbol("n", integer=True, positive=True)
_a, _b = sp.symbols("a b", integer=True, positive=True)
_M = sp.IndexedBase("M")


def _double_factorial(p: int) -> int:
    return prod(range(p - 1, 0, -2)) if p > 0 else 1


class StandardGaussian:
    """E[.] for polynomials in independent N(0, 1) variables.

    A monomial factorises by independence; E[x^p] = (p − 1)!! for even p and 0 for odd p.
    """

    def __init__(self, variables: Iterable[sp.Symbol]):
        self.variables = list(variables)

    @staticmethod
    def raw_moment(power: int) -> int:
        return 0 if power % 2 else _double_factorial(power)

    def E(self, expr: sp.Expr) -> sp.Expr:
        poly = sp.Poly(sp.expand(expr), *self.variables)
        return sp.expand(sum((coeff * prod(self.raw_moment(p) for p in powers) for powers, coeff in poly.terms()),
                             sp.Integer(0)))

    def var(self, expr: sp.Expr) -> sp.Expr:
        return sp.expand(self.E(expr**2) - self.E(expr) ** 2)


def _vector(name: str, n: int) -> sp.Matrix:
    return sp.Matrix([sp.Symbol(f"{name}_{i + 1}", real=True) for i in range(n)])


def coupling_matrix(n: int) -> sp.Matrix:
    """M = W_Q W_Kᵀ as an explicit n×n matrix of symbols m_ab."""
    n = int(as_dimension(n, "n"))
    return sp.Matrix(n, n, lambda i, j: sp.Symbol(f"m_{i + 1}{j + 1}", real=True))


def trace_formulas(M: sp.Matrix) -> Result:
    return Result(tr_M=M.trace(), tr_MMT=(M * M.T).trace(), tr_M2=(M * M).trace())


def score_moments(n: int) -> Result:
    """Same token: the score xᵀMx for x ~ N(0, I_n), computed by Gaussian moments.

    Returns ``M`` (explicit n×n symbols), ``x``, ``score``, ``mean`` and ``variance``,
    expressions in the entries of M; lambdify over ``list(M)``.
    """
    M = coupling_matrix(n)
    x = _vector("x", M.rows)
    score = (x.T * M * x)[0]
    gauss = StandardGaussian(x)
    return Result(M=M, x=x, score=score, mean=gauss.E(score), variance=gauss.var(score))


def distinct_score_moments(n: int) -> Result:
    """Two independent tokens: the score xᵀMy for x, y ~ N(0, I_n) independent."""
    M = coupling_matrix(n)
    x, y = _vector("x", M.rows), _vector("y", M.rows)
    score = (x.T * M * y)[0]
    gauss = StandardGaussian(list(x) + list(y))
    return Result(M=M, x=x, y=y, score=score, mean=gauss.E(score), variance=gauss.var(score))


def _isserlis(a: int, b: int, c: int, d: int) -> int:
    delta = lambda i, j: int(i == j)  # noqa: E731
    return delta(a, b) * delta(c, d) + delta(a, c) * delta(b, d) + delta(a, d) * delta(b, c)


def _check_gaussian_moments(n: int = 3) -> tuple[bool, str]:
    """Raw moments against sympy.stats, then Isserlis on every index tuple for size n."""
    X = stats.Normal("X", 0, 1)
    for p in range(1, 5):
        if stats.E(X**p) != StandardGaussian.raw_moment(p):
            return False, f"E[X^{p}] = {stats.E(X**p)} by sympy.stats, {StandardGaussian.raw_moment(p)} by rule"
    x = _vector("x", n)
    gauss = StandardGaussian(x)
    for idx in product(range(n), repeat=4):
        got = gauss.E(prod(x[i] for i in idx))
        if got != _isserlis(*idx):
            return False, f"E[x_{idx}] = {got}, Isserlis gives {_isserlis(*idx)}"
    for idx in product(range(n), repeat=2):
        if gauss.E(x[idx[0]] * x[idx[1]]) != int(idx[0] == idx[1]):
            return False, f"E[x_{idx}] is not δ"
    return True, f"E[X^p] for p ≤ 4 agree with sympy.stats; Isserlis holds on all {n ** 4} tuples (n = {n})"


def _index_form_checks(index_form: sp.Expr, explicit: Callable[[int], sp.Expr], stated=None, sizes=(1, 2, 3)):
    """The general-n index form, with n set to small values and expanded, equals the explicit computation
    and, when given, the stated trace formula at the same n."""
    def check() -> tuple[bool, str]:
        for k in sizes:
            M = coupling_matrix(k)
            value = index_form.subs(_n, k).doit().replace(lambda e: isinstance(e, sp.Indexed),
                                                          lambda e: M[e.indices[0] - 1, e.indices[1] - 1])
            if sp.expand(value - explicit(k)) != 0:
                return False, f"n = {k}: index form gives {value}, explicit computation {explicit(k)}"
            claimed = None if stated is None else nt.explicit(stated, {nt.N: k}, {"M": M})
            if stated is not None and sp.expand(claimed - value) != 0:
                return False, f"n = {k}: the stated {stated} is {claimed}, the index form {value}"
        return True, (f"index form agrees with the explicit Gaussian computation at n = {sizes}"
                      + ("" if stated is None else f" and with the stated {stated}"))
    return check


def _sum2(expr: sp.Expr) -> sp.Expr:
    return sp.Sum(expr, (_a, 1, _n), (_b, 1, _n))


INDEX_FORM = Result(
    tr_M=sp.Sum(_M[_a, _a], (_a, 1, _n)),
    tr_MMT=_sum2(_M[_a, _b] ** 2),
    tr_M2=_sum2(_M[_a, _b] * _M[_b, _a]),
)


# ---- index form for any n: sums over 0..n−1 with Kronecker deltas (reduced by proofs.index_sums) ----------------
_IDX = sp.symbols("a b c d", integer=True, nonnegative=True)


def _coupling(n=nt.N) -> sp.MatrixSymbol:
    return sp.MatrixSymbol("M", n, n)


def _sum(body, *indices) -> sp.Sum:
    return sp.Sum(body, *((x, 0, nt.N - 1) for x in indices))


def _reduce(s: sp.Sum) -> sp.Expr:
    return index_sums.reduce(s)


def _product(s1: sp.Sum, s2: sp.Sum) -> sp.Sum:
    """Distributivity: (Σ_a f)(Σ_c g) = Σ_{a,c} f g for distinct indices."""
    if {lim[0] for lim in s1.limits} & {lim[0] for lim in s2.limits}:
        raise ValueError("the two sums must use distinct indices")
    return sp.Sum(s1.function * s2.function, *s1.limits, *s2.limits)


def _same_sums(lhs: sp.Expr, stated: sp.Expr) -> tuple[bool, str]:
    """The reduced index form equals the stated trace formula, written out as sums (any n)."""
    return index_sums.same(lhs, sp.sympify(stated).rewrite(sp.Sum))


def _seed_weights() -> tuple[sp.Matrix, sp.Matrix]:
    """W_Q, W_K of the seed's N = 2 example (000_6dc9c20305ca48b8.txt), both 4×2."""
    from proofs.seed_data import SEED_W_K, SEED_W_Q

    return SEED_W_Q, SEED_W_K


def self_attention_score_moments(variance: Formula | None = None, *, n: int = EXPLICIT_N) -> Derivation:
    """E[xᵀMx] = tr M, Var(xᵀMx) = tr(MMᵀ) + tr(M²) for x ~ N(0, I_n).

    ``variance(M)`` defaults to the derived formula; pass another to have it judged
    (forgetting tr(M²) is refused).
    """
    formula = variance or (lambda M: (M * M.T).trace() + (M * M).trace())
    n = int(as_dimension(n, "n"))
    pf = Proof("self-attention-score-moments")
    xmx = sp.Symbol("xᵀMx")
    pf.premise("definition", "q = W_Qᵀx, k = W_Kᵀx, M = W_Q W_Kᵀ", sp.Symbol("M"), sp.Symbol("W_Q W_Kᵀ"),
               kind=DEFINITION)
    r = score_moments(n)
    M, x = r.M, r.x
    W_Q = sp.Matrix(n, 2, lambda i, j: sp.Symbol(f"wq_{i + 1}{j + 1}", real=True))
    W_K = sp.Matrix(n, 2, lambda i, j: sp.Symbol(f"wk_{i + 1}{j + 1}", real=True))
    pf.equal("definition of the dot product", f"q·k = (W_Qᵀx)·(W_Kᵀx) = xᵀ(W_Q W_Kᵀ)x (n = {n}, d_k = 2)",
             ((W_Q.T * x).T * (W_K.T * x))[0], (x.T * (W_Q * W_K.T) * x)[0])
    pf.premise("Isserlis / Wick", "for x ~ N(0, I): E[x_a x_b] = δ_ab and "
               "E[x_a x_b x_c x_d] = δ_ab δ_cd + δ_ac δ_bd + δ_ad δ_bc", sp.Symbol("E[x_a x_b x_c x_d]"),
               sp.Symbol("δ_ab δ_cd + δ_ac δ_bd + δ_ad δ_bc"), kind=CITED,
               reference="Isserlis' theorem (Isserlis, 1918)")
    pf.holds("Gaussian moments", "the premise, checked: E[x_a x_b x_c x_d] on every index tuple (n = 3)",
             sp.Symbol("E[x_a x_b x_c x_d]"), sp.Symbol("δ_ab δ_cd + δ_ac δ_bd + δ_ad δ_bc"), _check_gaussian_moments)
    t = trace_formulas(M)
    pf.equal("linearity + E[x_a x_b] = δ_ab", f"E[xᵀMx] = Σ_a M_aa = tr M (n = {n}, explicit entries)",
             r.mean, t.tr_M)
    pf.equal("Isserlis", f"Var(xᵀMx) = tr(MMᵀ) + tr(M²) (n = {n}, explicit entries)", r.variance, formula(M))
    # Any n: E and E[(xᵀMx)²] as sums over indices, reduced by linearity and sifting with Isserlis' pairings.
    a, b, c, d = _IDX
    Mg, delta = _coupling(), sp.KroneckerDelta
    mean_any = _reduce(_sum(Mg[a, b] * delta(a, b), a, b))
    pf.holds("linearity + E[x_a x_b] = δ_ab + sifting", f"any n: E[xᵀMx] = Σ_ab M_ab δ_ab = {mean_any} = tr M",
             E(xmx), pf.claimed(E(xmx)), lambda: _same_sums(mean_any, pf.claimed(E(xmx))), subject=E(xmx))
    second = _reduce(_sum(Mg[a, b] * Mg[c, d] * (delta(a, b) * delta(c, d) + delta(a, c) * delta(b, d)
                                                 + delta(a, d) * delta(b, c)), a, b, c, d))
    var_any = second - _product(mean_any, mean_any.xreplace({mean_any.limits[0][0]: c}))
    pf.holds("Isserlis + sifting", "any n: Var = E[(xᵀMx)²] − (E xᵀMx)², the δ_ab δ_cd pairing cancelling (tr M)²: "
             "Σ_ab M_ab² + Σ_ab M_ab M_ba = tr(MMᵀ) + tr(M²)", Var(xmx), pf.claimed(Var(xmx)),
             lambda: _same_sums(var_any, pf.claimed(Var(xmx))), subject=Var(xmx))
    pf.holds("sifting by δ (index form)", "cross-check: the index form at n = 1, 2, 3 against the explicit "
             "Gaussian computation", Var(xmx), INDEX_FORM.tr_MMT + INDEX_FORM.tr_M2,
             _index_form_checks(INDEX_FORM.tr_MMT + INDEX_FORM.tr_M2, lambda k: score_moments(k).variance,
                                pf.claimed(Var(xmx))))
    pf.holds("sifting by δ (index form)", "cross-check: E's index form at n = 1, 2, 3 against the explicit computation",
             E(xmx), INDEX_FORM.tr_M,
             _index_form_checks(INDEX_FORM.tr_M, lambda k: score_moments(k).mean, pf.claimed(E(xmx))))

    # Where the seeds' independence assumption (E = 0) breaks.
    W = W_Q
    pf.equal("substitution W_Q = W_K = W", "E[q·k] = tr(WWᵀ) = ‖W‖_F², a sum of squares: > 0 unless W = 0",
             r.mean.subs(dict(zip(M, W * W.T))), sum(w**2 for w in W))
    ww = E(sp.Symbol("xᵀWWᵀx"))
    pf.equal("substitution W_Q = W_K = W", f"the stated {pf.claimed(ww)} at the same W (n = {n}, d_k = 2)",
             r.mean.subs(dict(zip(M, W * W.T))), nt.explicit(pf.claimed(ww), {nt.N: n, nt.D_K: 2}, {"W": W}),
             establishes=pf.stated(ww))
    seed_Q, seed_K = _seed_weights()
    seed = trace_formulas(seed_Q * seed_K.T)
    pf.holds("substitution: the seed's W_Q, W_K", "E[q·k] = tr M = 1 and Var = 8 + 5 = 13 for the seed's weights, "
             "not the E = 0, Var = d_k = 2 of the independence assumption",
             sp.Tuple(seed.tr_M, seed.tr_MMT + seed.tr_M2), sp.Tuple(1, 13),
             lambda: (seed.tr_M == 1 and seed.tr_MMT + seed.tr_M2 == 13,
                      f"tr M = {seed.tr_M}, tr(MMᵀ) + tr(M²) = {seed.tr_MMT + seed.tr_M2}"))
    # Any other n: score_moments(n) builds the same expressions.
    return pf.finish(Result(M=M, mean=r.mean, variance=r.variance, mean_index_form=INDEX_FORM.tr_M,
                            variance_index_form=INDEX_FORM.tr_MMT + INDEX_FORM.tr_M2))


def distinct_token_score_moments(variance: Formula | None = None, *, n: int = EXPLICIT_N) -> Derivation:
    """E[xᵀMy] = 0, Var(xᵀMy) = tr(MMᵀ) for independent x, y ~ N(0, I_n)."""
    formula = variance or (lambda M: (M * M.T).trace())
    n = int(as_dimension(n, "n"))
    pf = Proof("distinct-token-score-moments")
    xmy = sp.Symbol("xᵀMy")
    r = distinct_score_moments(n)
    M = r.M
    pf.premise("definition", "q = W_Qᵀx, k = W_Kᵀy, M = W_Q W_Kᵀ", sp.Symbol("M"), sp.Symbol("W_Q W_Kᵀ"),
               kind=DEFINITION)
    pf.premise("independence + E[x_a x_b] = δ_ab", "E[x_a y_b] = 0 and E[x_a x_c y_b y_d] = δ_ac δ_bd",
               sp.Symbol("E[x_a x_c y_b y_d]"), sp.Symbol("δ_ac δ_bd"), kind=ASSUMPTION)
    mean_index = sp.Sum(_M[_a, _b] * sp.Symbol("E[x_a]") * sp.Symbol("E[y_b]"), (_a, 1, _n), (_b, 1, _n))
    a, b, c, d = _IDX
    Mg, delta = _coupling(), sp.KroneckerDelta
    mu_x, mu_y = sp.symbols("E[x_a] E[y_b]", real=True)
    pf.equal("linearity + independence", "any n: E[xᵀMy] = Σ_ab M_ab E[x_a] E[y_b], and E[x_a] = 0",
             _sum(Mg[a, b] * mu_x * mu_y, a, b), 0, subject=E(xmy), where=lambda e: sp.sympify(e).subs(mu_x, 0))
    second = _reduce(_sum(Mg[a, b] * Mg[c, d] * delta(a, c) * delta(b, d), a, b, c, d))
    pf.holds("independence + sifting", f"any n: Var = Σ_abcd M_ab M_cd E[x_a x_c] E[y_b y_d] − 0² = {second} = tr(MMᵀ)",
             Var(xmy), pf.claimed(Var(xmy)), lambda: _same_sums(second, pf.claimed(Var(xmy))), subject=Var(xmy))
    pf.equal("linearity", f"cross-check: E[xᵀMy] = 0 (n = {n}, explicit)", r.mean, 0)
    pf.equal("sifting by δ", f"cross-check: Var(xᵀMy) = Σ_ab M_ab² = tr(MMᵀ) (n = {n}, explicit entries)", r.variance,
             formula(M))
    pf.holds("sifting by δ (index form)", "cross-check: the index form at n = 1, 2, 3 against the explicit computation",
             Var(xmy), INDEX_FORM.tr_MMT,
             _index_form_checks(INDEX_FORM.tr_MMT, lambda k: distinct_score_moments(k).variance, pf.claimed(Var(xmy))))
    # The seeds' Var = d_k is recovered when W_Q and W_K have orthonormal columns.
    c, s = sp.Rational(3, 5), sp.Rational(4, 5)
    W_Q = sp.Matrix([[1, 0], [0, 1], [0, 0]])
    W_K = sp.Matrix([[c, 0], [s, 0], [0, 1]])
    pf.holds("orthonormal columns", "W_Qᵀ W_Q = W_Kᵀ W_K = I (n = 3, d_k = 2) gives Var = tr(MMᵀ) = d_k = 2, "
             "the seeds' value", sp.Symbol("Var"), 2,
             lambda: (W_Q.T * W_Q == sp.eye(2) and W_K.T * W_K == sp.eye(2)
                      and r.variance.subs(dict(zip(M, W_Q * W_K.T))) == 2, "Var = tr(MMᵀ) = 2"))
    # Any other n: distinct_score_moments(n) builds the same expressions.
    return pf.finish(Result(M=M, mean=r.mean, variance=r.variance, variance_index_form=INDEX_FORM.tr_MMT))
