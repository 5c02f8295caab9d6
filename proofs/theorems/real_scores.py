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
from proofs.checker import substitute
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


# ---- two independent tokens, any n: checked rule applications ----------------------------------------------------
XMY = sp.Symbol("xᵀMy")  # the score q·k = xᵀMy of two tokens
X_T, Y_T = sp.IndexedBase("x", real=True), sp.IndexedBase("y", real=True)  # the tokens' components
M_E = sp.IndexedBase("M", real=True)  # the entries of M = W_Q W_Kᵀ
Z_ROW = sp.IndexedBase("z", real=True)  # z_a = Σ_b M_ab y_b = (My)_a
Z_PART = sp.IndexedBase("Z", real=True)  # Z_{a,m} = Σ_{b≤m} M_ab y_b
T_PART = sp.IndexedBase("T", real=True)  # T_m = Σ_{a≤m} x_a z_a
M_SQ = sp.IndexedBase("Q", real=True)  # Q_{a,m} = Σ_{b≤m} M_ab²
EZ_PART = sp.IndexedBase("R", real=True)  # R_m = Σ_{a≤m} E[z_a²]
_ra, _rb = sp.symbols("a b", integer=True, positive=True)  # summation indices
_pr = sp.Symbol("p", integer=True, positive=True)  # a row, in patterns
_pm0 = sp.Symbol("m", integer=True, nonnegative=True)
_pm1 = sp.Symbol("m", integer=True, positive=True)
_gr = sp.Symbol("r", integer=True, positive=True)  # a row, generalised
_gt = sp.Symbol("t", integer=True, positive=True)  # an inner length, generalised
_gu = sp.Symbol("u", integer=True, positive=True)  # an outer length, generalised
_X = sp.Symbol("X")


def distinct_variance_sum(M, n):
    """Σ_{a=1}^{n} Σ_{b=1}^{n} M_ab² = tr(MMᵀ): what the theorem concludes Var(xᵀMy) equals."""
    return sp.Sum(sp.Sum(M[_ra, _rb] ** 2, (_rb, 1, n)), (_ra, 1, n))


def distinct_token_score_moments(variance: Callable | None = None, *, n: int = EXPLICIT_N) -> Derivation:
    """E[xᵀMy] = 0, Var(xᵀMy) = Σ_ab M_ab² = tr(MMᵀ) for independent x, y ~ N(0, I_n), any n.

    Two inductions over partial sums, each generalised (∀) so the other can use it: E[Z_{r,t}²] = Σ_{b≤t} M_rb²
    for the row sums z_r = Z_{r,n}, and E[T_u²] = Σ_{a≤u} E[z_a²] for T_u = Σ_{a≤u} x_a z_a. ``variance(M, n)``
    (default ``distinct_variance_sum``) is what the last step concludes; pass another to have it judged.
    ``.result`` holds the explicit n×n expressions (n = ``n``) for the numeric layer, read off the statement.
    """
    formula = variance or distinct_variance_sum
    n_explicit = int(as_dimension(n, "n"))
    size = nt.N
    pf = Proof("distinct-token-score-moments")
    E_, Var_ = nt.E, nt.Var
    def_s = pf.define(XMY, sp.Sum(X_T[_ra] * sp.Sum(M_E[_ra, _rb] * Y_T[_rb], (_rb, 1, size)), (_ra, 1, size)),
                      "q·k = (W_Qᵀx)·(W_Kᵀy) = xᵀ(My) = Σ_a x_a Σ_b M_ab y_b, M = W_Q W_Kᵀ")
    def_big_z = pf.define(Z_PART[_pr, _pm0], sp.Sum(M_E[_pr, _rb] * Y_T[_rb], (_rb, 1, _pm0)),
                          "Z_{p,m} = Σ_{b≤m} M_pb y_b", forall=[_pr, _pm0])
    def_z = pf.define(Z_ROW[_pr], Z_PART[_pr, size], "z_p = (My)_p = Z_{p,n}", forall=[_pr])
    def_t = pf.define(T_PART[_pm0], sp.Sum(X_T[_ra] * Z_ROW[_ra], (_ra, 1, _pm0)), "T_m = Σ_{a≤m} x_a z_a",
                      forall=[_pm0])
    def_q = pf.define(M_SQ[_pr, _pm0], sp.Sum(M_E[_pr, _rb] ** 2, (_rb, 1, _pm0)), "Q_{p,m} = Σ_{b≤m} M_pb²",
                      forall=[_pr, _pm0])
    def_r = pf.define(EZ_PART[_pm0], sp.Sum(E_(Z_ROW[_ra] ** 2), (_ra, 1, _pm0)), "R_m = Σ_{a≤m} E[z_a²]",
                      forall=[_pm0])
    def_var = pf.define(Var_(_X), E_(_X**2) - E_(_X) ** 2, "the variance: Var(X) = E(X²) − E(X)²", forall=[_X])
    recursion = "the recursion that defines a finite sum: Σ_{i=1}^{m} a_i = Σ_{i=1}^{m−1} a_i + a_m"
    splits = [pf.cite_external(sp.Eq(sp.Sum(body, (i, 1, _pm1)), sp.Sum(body, (i, 1, _pm1 - 1)) + body.subs(i, _pm1)),
                               recursion, f"the sum of {body} peeled at m", forall=[_pr, _pm1] if body.has(_pr) else [_pm1])
              for body, i in ((M_E[_pr, _rb] * Y_T[_rb], _rb), (M_E[_pr, _rb] ** 2, _rb),
                              (X_T[_ra] * Z_ROW[_ra], _ra), (E_(Z_ROW[_ra] ** 2), _ra))]
    split_z, split_q, split_t, split_r = splits
    mean_x = pf.assume(sp.Eq(E_(X_T[_pr]), 0), "x ~ N(0, I_n): E[x_p] = 0", forall=[_pr])
    sq_x = pf.assume(sp.Eq(E_(X_T[_pr] ** 2), 1), "x ~ N(0, I_n): E[x_p²] = 1", forall=[_pr])
    mean_y = pf.assume(sp.Eq(E_(Y_T[_pr]), 0), "y ~ N(0, I_n): E[y_p] = 0", forall=[_pr])
    sq_y = pf.assume(sp.Eq(E_(Y_T[_pr] ** 2), 1), "y ~ N(0, I_n): E[y_p²] = 1", forall=[_pr])
    ind_zy = pf.assume(sp.Eq(E_(Z_PART[_pr, _pm1 - 1] * Y_T[_pm1]), E_(Z_PART[_pr, _pm1 - 1]) * E_(Y_T[_pm1])),
                       "independence: Z_{p,m−1} (y_1..y_{m−1}) and y_m", forall=[_pr, _pm1])
    ind_txz = pf.assume(sp.Eq(E_(T_PART[_pm1 - 1] * X_T[_pm1] * Z_ROW[_pm1]),
                              E_(X_T[_pm1]) * E_(T_PART[_pm1 - 1] * Z_ROW[_pm1])),
                        "independence: x_m and (T_{m−1}, z_m), functions of x_1..x_{m−1} and y", forall=[_pm1])
    ind_xz2 = pf.assume(sp.Eq(E_(X_T[_pm1] ** 2 * Z_ROW[_pm1] ** 2), E_(X_T[_pm1] ** 2) * E_(Z_ROW[_pm1] ** 2)),
                        "independence: x_m and z_m (a function of y)", forall=[_pm1])
    ind_xz = pf.assume(sp.Eq(E_(X_T[_pr] * Z_ROW[_pr]), E_(X_T[_pr]) * E_(Z_ROW[_pr])),
                       "independence: x_p and z_p (a function of y)", forall=[_pr])
    e_zero = pf.linearity(E_(0), 0, "E of the constant 0", operator=E_)

    # E[Z_{r,t}²] = Q_{r,t} by induction on t, then for every r and t.
    inner = sp.Eq(E_(Z_PART[_gr, _gt] ** 2), M_SQ[_gr, _gt], evaluate=False)
    first = M_E[_gr, 1] * Y_T[1]
    z1 = pf.rewrite(Z_PART[_gr, 1], first, [def_big_z], "Z_{r,1} = M_r1 y_1")
    lin1 = pf.linearity(E_(first**2), M_E[_gr, 1] ** 2 * E_(Y_T[1] ** 2), "M_r1 is a constant", operator=E_,
                        random=[Y_T])
    base = pf.rewrite(E_(Z_PART[_gr, 1] ** 2), M_SQ[_gr, 1], [z1, lin1, sq_y, def_q], "base case t = 1: M_r1² E[y_1²]")
    hyp = pf.hypothesis(substitute(inner, {_gt: _gt - 1}), "E[Z_{r,t−1}²] = Q_{r,t−1}")
    prev, new = Z_PART[_gr, _gt - 1], M_E[_gr, _gt] * Y_T[_gt]
    peel = pf.rewrite(Z_PART[_gr, _gt], prev + new, [def_big_z, split_z], "Z_{r,t} = Z_{r,t−1} + M_rt y_t")
    square = pf.linearity(E_((prev + new) ** 2), E_(prev**2) + 2 * M_E[_gr, _gt] * E_(prev * Y_T[_gt])
                          + M_E[_gr, _gt] ** 2 * E_(Y_T[_gt] ** 2), "linearity; M_rt is a constant", operator=E_,
                          random=[Y_T, Z_PART])
    step = pf.rewrite(E_(Z_PART[_gr, _gt] ** 2), M_SQ[_gr, _gt],
                      [peel, square, ind_zy, mean_y, sq_y, hyp, def_q, split_q],
                      "step: E[Z²] + 2M E[Z]E[y_t] + M² E[y_t²] = Q_{r,t−1} + M_rt²")
    rows = pf.generalisation(pf.induction(inner, _gt, 1, base, step, hyp, "for every t ≥ 1"), [_gr, _gt],
                             "E[Z_{r,t}²] = Σ_{b≤t} M_rb² for every row r and length t")
    row = pf.generalisation(pf.rewrite(E_(Z_ROW[_gr] ** 2), M_SQ[_gr, size], [def_z, rows], "E[z_r²] = Q_{r,n}"),
                            [_gr], "E[z_r²] = Σ_b M_rb² for every row r")

    # E[T_u²] = R_u by induction on u, then for every u.
    outer = sp.Eq(E_(T_PART[_gu] ** 2), EZ_PART[_gu], evaluate=False)
    t0 = pf.rewrite(T_PART[0], 0, [def_t], "T_0 is the empty sum")
    base = pf.rewrite(E_(T_PART[0] ** 2), EZ_PART[0], [t0, e_zero, def_r], "base case u = 0: 0 = 0")
    hyp = pf.hypothesis(substitute(outer, {_gu: _gu - 1}), "E[T_{u−1}²] = R_{u−1}")
    prev, new = T_PART[_gu - 1], X_T[_gu] * Z_ROW[_gu]
    peel = pf.rewrite(T_PART[_gu], prev + new, [def_t, split_t], "T_u = T_{u−1} + x_u z_u")
    square = pf.linearity(E_((prev + new) ** 2), E_(prev**2) + 2 * E_(prev * new) + E_(X_T[_gu] ** 2 * Z_ROW[_gu] ** 2),
                          "linearity", operator=E_, random=[X_T, Z_ROW, T_PART])
    step = pf.rewrite(E_(T_PART[_gu] ** 2), EZ_PART[_gu],
                      [peel, square, ind_txz, ind_xz2, mean_x, sq_x, hyp, def_r, split_r],
                      "step: E[T²] + 2E[x_u]E[T z_u] + E[x_u²]E[z_u²] = R_{u−1} + E[z_u²]")
    sums = pf.generalisation(pf.induction(outer, _gu, 0, base, step, hyp, "for every u ≥ 0"), [_gu],
                             "E[T_u²] = Σ_{a≤u} E[z_a²] for every u")

    # Back to q·k = T_n.
    whole = pf.rewrite(XMY, T_PART[size], [def_s, def_t, def_z, def_big_z], "xᵀMy = Σ_a x_a z_a = T_n")
    spread = sp.Sum(E_(X_T[_ra] * Z_ROW[_ra]), (_ra, 1, size))
    mean_t = pf.chain([pf.rewrite(E_(T_PART[size]), E_(sp.Sum(X_T[_ra] * Z_ROW[_ra], (_ra, 1, size))), [def_t], "T_n"),
                       pf.linearity(E_(sp.Sum(X_T[_ra] * Z_ROW[_ra], (_ra, 1, size))), spread, "linearity of E",
                                    operator=E_, random=[X_T, Z_ROW]),
                       pf.rewrite(spread, 0, [ind_xz, mean_x], "E[x_a z_a] = E[x_a] E[z_a] = 0")],
                      E_(T_PART[size]), "=", 0, "E[T_n] = 0")
    pf.rewrite(E_(XMY), pf.claimed(E_(XMY)), [whole, mean_t], "E[xᵀMy] = E[T_n] = 0")
    concluded = formula(M_E, size)
    pf.rewrite(Var_(XMY), concluded, [def_var, whole, mean_t, sums, def_r, row, def_q],
               "Var = E[T_n²] − E[T_n]² = Σ_a E[z_a²] = Σ_a Σ_b M_ab²")

    M = coupling_matrix(n_explicit)
    stated = pf.claimed(Var_(XMY))
    explicit = stated.subs(size, n_explicit).doit().replace(
        lambda e: isinstance(e, sp.Indexed) and e.base == M_E, lambda e: M[int(e.indices[0]) - 1, int(e.indices[1]) - 1])
    return pf.finish(Result(M=M, mean=pf.claimed(E_(XMY)), variance=sp.expand(explicit), variance_index_form=stated))
