"""Scores in real self-attention: q and k come from the same token, so they are not independent.

With q = W_Qᵀx, k = W_Kᵀx and x ~ N(0, I_n), the score is the quadratic form
q·k = xᵀMx with M = W_Q W_Kᵀ, so E[q·k] = tr M and Var(q·k) = tr(MMᵀ) + tr(M²).
For two independent tokens x, y: q·k = xᵀMy, E = 0 and Var = tr(MMᵀ). The seeds instead
assume q and k have independent zero-mean unit-variance components (E = 0, Var = d_k).

Both are proved for every n over the entries of M (traces written as sums), by inductions over
partial sums that the checker replays; the Gaussian enters only through E[x_a^r] for r ≤ 4 and
independence across components. ``score_moments``/``distinct_score_moments`` compute the same
moments at an explicit size by Gaussian moments (``StandardGaussian``), for tests and the seed audit.
"""
from __future__ import annotations

from math import prod
from typing import Callable, Iterable

import sympy as sp

from proofs import notation as nt
from proofs.checker import substitute
from proofs.engine import Derivation, Proof, Result
from proofs.validate import as_dimension

E = sp.Function("E")
Var = sp.Function("Var")
tr = sp.Function("tr")

EXPLICIT_N = 3  # the explicit size whose expressions `.result` carries



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


def self_attention_variance_sums(M, n):
    """Σ_ab M_ab² + Σ_ab M_ab M_ba = tr(MMᵀ) + tr(M²): what the theorem concludes Var(xᵀMx) equals."""
    return (sp.Sum(M[_ra, _rb] ** 2, (_rb, 1, n), (_ra, 1, n))
            + sp.Sum(M[_ra, _rb] * M[_rb, _ra], (_rb, 1, n), (_ra, 1, n)))


def self_attention_score_moments(variance: Callable | None = None, *, n: int = EXPLICIT_N) -> Derivation:
    """E[xᵀMx] = Σ_a M_aa = tr M, Var(xᵀMx) = tr(MMᵀ) + tr(M²), E[xᵀWWᵀx] = ‖W‖_F² for x ~ N(0, I_n), any n.

    By induction on n over the leading blocks G_m = Σ_{a,b≤m} x_a M_ab x_b = G_{m−1} + x_m L_m + M_mm x_m²,
    L_m = Σ_{b<m} (M_mb + M_bm) x_b, with x_m independent of G_{m−1} and L_m and its normal moments
    E[x] = E[x³] = 0, E[x²] = 1, E[x⁴] = 3; E[L_m²] = Σ_{b<m} (M_mb + M_bm)² by an inner induction,
    generalised. ``variance(M, n)`` (default ``self_attention_variance_sums``) is what the last step
    concludes; forgetting tr(M²) is refused. ``.result`` holds the explicit n×n expressions (n = ``n``),
    read off the proved statement, and its index forms.
    """
    n_explicit = int(as_dimension(n, "n"))
    pf = _self_attention_proof(variance or self_attention_variance_sums)
    M = coupling_matrix(n_explicit)
    size = nt.N

    def explicit(expr):
        return sp.expand(expr.subs(size, n_explicit).doit().replace(
            lambda e: isinstance(e, sp.Indexed) and e.base == M_E,
            lambda e: M[int(e.indices[0]) - 1, int(e.indices[1]) - 1]))

    mean, var = pf.claimed(nt.E(XMX)), pf.claimed(nt.Var(XMX))
    return pf.finish(Result(M=M, mean=explicit(mean), variance=explicit(var), mean_index_form=mean,
                            variance_index_form=var))


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


# ---- one token, any n: checked rule applications ------------------------------------------------------------
XMX, XWX = sp.Symbol("xᵀMx"), sp.Symbol("xᵀWWᵀx")
W_E = sp.IndexedBase("W", real=True)
G_P = sp.IndexedBase("G", real=True)   # G_m = Σ_{a≤m} x_a Σ_{b≤m} M_ab x_b
L_P = sp.IndexedBase("L", real=True)   # L_{p,t} = Σ_{b≤t} c_pb x_b  (a row's linear form)
LQ = sp.IndexedBase("K", real=True)    # K_{p,t} = Σ_{b≤t} c_pb²
D_P = sp.IndexedBase("D", real=True)   # D_m = Σ_{a≤m} M_aa
V_P = sp.IndexedBase("V", real=True)   # V_m = Σ_{a≤m}Σ_{b≤m} (M_ab² + M_ab M_ba)
U_P = sp.IndexedBase("U", real=True)   # U_{c,t} = Σ_{a≤t} W_ac x_a
WQ = sp.IndexedBase("H", real=True)    # H_{c,t} = Σ_{a≤t} W_ac²
_gc = sp.Symbol("c", integer=True, positive=True)
_gt0 = sp.Symbol("t", integer=True, nonnegative=True)
E_, Var_ = nt.E, nt.Var
REC = "the recursion that defines a finite sum: Σ_{i=1}^{m} a_i = Σ_{i=1}^{m−1} a_i + a_m"


def _peel(pf, body, i, forall, what):
    return pf.cite_external(sp.Eq(sp.Sum(body, (i, 1, _pm1)), sp.Sum(body, (i, 1, _pm1 - 1)) + body.subs(i, _pm1)),
                            REC, what, forall=forall)


def _row_square(pf, name, lin, sq, coef, moments, e_zero):
    """E[lin[p,t]²] = sq[p,t] for lin[p,t] = Σ_{b≤t} coef(p,b) x_b, sq[p,t] = Σ_{b≤t} coef(p,b)², generalised."""
    mean_x, sq_x, ind = moments
    def_l = pf.define(lin[_pr, _pm0], sp.Sum(coef(_pr, _rb) * X_T[_rb], (_rb, 1, _pm0)), f"{name}: a row's linear form",
                      forall=[_pr, _pm0])
    def_q = pf.define(sq[_pr, _pm0], sp.Sum(coef(_pr, _rb) ** 2, (_rb, 1, _pm0)), f"{name}: its squared coefficients",
                      forall=[_pr, _pm0])
    split_l = _peel(pf, coef(_pr, _rb) * X_T[_rb], _rb, [_pr, _pm1], "peel")
    split_q = _peel(pf, coef(_pr, _rb) ** 2, _rb, [_pr, _pm1], "peel")
    ind_l = pf.assume(sp.Eq(E_(lin[_pr, _pm1 - 1] * X_T[_pm1]), E_(lin[_pr, _pm1 - 1]) * E_(X_T[_pm1])),
                      "independence: x_m and a form in x_1..x_{m−1}", forall=[_pr, _pm1])
    claim = sp.Eq(E_(lin[_gr, _gt0] ** 2), sq[_gr, _gt0], evaluate=False)
    l0 = pf.rewrite(lin[_gr, 0], 0, [def_l], "the empty form")
    base = pf.rewrite(E_(lin[_gr, 0] ** 2), sq[_gr, 0], [l0, e_zero, def_q], "base case t = 0")
    hyp = pf.hypothesis(substitute(claim, {_gt0: _gt - 1}))
    prev, new = lin[_gr, _gt - 1], coef(_gr, _gt) * X_T[_gt]
    peel = pf.rewrite(lin[_gr, _gt], prev + new, [def_l, split_l], "peel the last term")
    square = pf.linearity(E_((prev + new) ** 2), E_(prev**2) + 2 * coef(_gr, _gt) * E_(prev * X_T[_gt])
                          + coef(_gr, _gt) ** 2 * E_(X_T[_gt] ** 2), "linearity", operator=E_, random=[X_T, lin])
    step = pf.rewrite(E_(lin[_gr, _gt] ** 2), sq[_gr, _gt], [peel, square, ind_l, mean_x, sq_x, hyp, def_q, split_q],
                      "step")
    general = pf.generalisation(pf.induction(claim, _gt0, 0, base, step, hyp, step_var=_gt), [_gr, _gt0],
                                f"{name} for every row and length")
    return general, def_l, def_q


def _self_attention_proof(variance):
    n = nt.N
    pf = Proof("self-attention-score-moments")
    st_mean, st_var, st_w = pf.claimed(E_(XMX)), pf.claimed(Var_(XMX)), pf.claimed(E_(XWX))
    cM = lambda p, b: M_E[p, b] + M_E[b, p]  # noqa: E731
    def_s = pf.define(XMX, sp.Sum(X_T[_ra] * sp.Sum(M_E[_ra, _rb] * X_T[_rb], (_rb, 1, n)), (_ra, 1, n)), "xᵀMx")
    def_g = pf.define(G_P[_pm0], sp.Sum(X_T[_ra] * sp.Sum(M_E[_ra, _rb] * X_T[_rb], (_rb, 1, _pm0)), (_ra, 1, _pm0)),
                      "G_m", forall=[_pm0])
    def_d = pf.define(D_P[_pm0], sp.Sum(M_E[_ra, _ra], (_ra, 1, _pm0)), "D_m", forall=[_pm0])
    h = M_E[_ra, _rb] ** 2 + M_E[_ra, _rb] * M_E[_rb, _ra]
    def_v = pf.define(V_P[_pm0], sp.Sum(h, (_rb, 1, _pm0), (_ra, 1, _pm0)), "V_m", forall=[_pm0])
    def_var = pf.define(Var_(_X), E_(_X**2) - E_(_X) ** 2, "Var", forall=[_X])
    outer_g = pf.cite_external(sp.Eq(def_g.rhs.subs(_pm0, _pm1),
                                     sp.Sum(X_T[_ra] * sp.Sum(M_E[_ra, _rb] * X_T[_rb], (_rb, 1, _pm1)), (_ra, 1, _pm1 - 1))
                                     + sp.Sum(X_T[_pm1] * M_E[_pm1, _rb] * X_T[_rb], (_rb, 1, _pm1))), REC,
                               "peel row m: Σ_{a≤m} x_a Σ_{b≤m} M_ab x_b = Σ_{a≤m−1} x_a Σ_{b≤m} M_ab x_b + "
                               "Σ_{b≤m} x_m M_mb x_b", forall=[_pm1])
    inner_g = _peel(pf, M_E[_pr, _rb] * X_T[_rb], _rb, [_pr, _pm1], "peel column m of a row")
    inner_g2 = _peel(pf, X_T[_pr] * M_E[_pr, _rb] * X_T[_rb], _rb, [_pr, _pm1], "peel column m of row m")
    peel_d = _peel(pf, M_E[_ra, _ra], _ra, [_pm1], "peel")
    hm = lambda a, b: M_E[a, b] ** 2 + M_E[a, b] * M_E[b, a]  # noqa: E731
    peel_v = pf.cite_external(sp.Eq(sp.Sum(h, (_rb, 1, _pm1), (_ra, 1, _pm1)),
                                    sp.Sum(h, (_rb, 1, _pm1 - 1), (_ra, 1, _pm1 - 1))
                                    + sp.Sum(hm(_ra, _pm1), (_ra, 1, _pm1 - 1)) + sp.Sum(hm(_pm1, _rb), (_rb, 1, _pm1 - 1))
                                    + hm(_pm1, _pm1)), REC + " (in both indices)", "2-D peel", forall=[_pm1])
    mean_x = pf.assume(sp.Eq(E_(X_T[_pr]), 0), "E[x_p] = 0", forall=[_pr])
    sq_x = pf.assume(sp.Eq(E_(X_T[_pr] ** 2), 1), "E[x_p²] = 1", forall=[_pr])
    cube_x = pf.assume(sp.Eq(E_(X_T[_pr] ** 3), 0), "E[x_p³] = 0 (normal)", forall=[_pr])
    four_x = pf.assume(sp.Eq(E_(X_T[_pr] ** 4), 3), "E[x_p⁴] = 3 (normal)", forall=[_pr])
    e_zero = pf.linearity(E_(0), 0, "E(0)", operator=E_)
    rows, def_l, def_k = _row_square(pf, "L", L_P, LQ, cM, (mean_x, sq_x, None), e_zero)

    Pm, xm, c = G_P[n - 1], X_T[n], M_E[n, n]
    Lm = L_P[n, n - 1]
    ind = [pf.assume(sp.Eq(E_(a * b), E_(a) * E_(b)), "independence: x_m and functions of x_1..x_{m−1}", forall=[_pm1])
           for a, b in ((X_T[_pm1] ** 2, L_P[_pm1, _pm1 - 1] ** 2), (X_T[_pm1], G_P[_pm1 - 1] * L_P[_pm1, _pm1 - 1]),
                        (X_T[_pm1] ** 2, G_P[_pm1 - 1]), (X_T[_pm1] ** 3, L_P[_pm1, _pm1 - 1]),
                        (X_T[_pm1], L_P[_pm1, _pm1 - 1]))]
    # G_n = G_{n−1} + x_n L_{n,n−1} + M_nn x_n²
    A = (sp.Sum(X_T[_ra] * (sp.Sum(M_E[_ra, _rb] * X_T[_rb], (_rb, 1, n - 1)) + M_E[_ra, n] * xm), (_ra, 1, n - 1))
         + sp.Sum(xm * M_E[n, _rb] * X_T[_rb], (_rb, 1, n - 1)) + c * xm**2)
    new = Pm + xm * Lm + c * xm**2
    Bx = (sp.Sum(X_T[_ra] * sp.Sum(M_E[_ra, _rb] * X_T[_rb], (_rb, 1, n - 1)), (_ra, 1, n - 1))
          + sp.Sum(xm * cM(n, _rb) * X_T[_rb], (_rb, 1, n - 1)) + c * xm**2)
    peel_g = pf.chain([pf.rewrite(G_P[n], A, [def_g, outer_g, inner_g, inner_g2], "peel row and column n"),
                       pf.linearity(A, Bx, "regroup: x_n Σ_b (M_nb + M_bn) x_b"),
                       pf.rewrite(Bx, new, [def_g, def_l], "G_{n−1} + x_n L_{n,n−1} + M_nn x_n²")],
                      G_P[n], "=", new, "G_n = G_{n−1} + x_n L_{n,n−1} + M_nn x_n²")
    ind_xl = ind[4]
    # E[G_n] = D_n by induction on n.
    mean_claim = sp.Eq(E_(G_P[n]), D_P[n], evaluate=False)
    g0 = pf.rewrite(G_P[0], 0, [def_g], "G_0 = 0")
    base = pf.rewrite(E_(G_P[0]), D_P[0], [g0, e_zero, def_d], "base case")
    hyp = pf.hypothesis(substitute(mean_claim, {n: n - 1}))
    lin1 = pf.linearity(E_(new), E_(Pm) + E_(xm * Lm) + c * E_(xm**2), "linearity", operator=E_, random=[X_T, G_P, L_P])
    step = pf.rewrite(E_(G_P[n]), D_P[n], [peel_g, lin1, ind_xl, mean_x, sq_x, hyp, def_d, peel_d], "step")
    mean_g = pf.induction(mean_claim, n, 0, base, step, hyp, "E[G_n] = D_n")
    # Var(G_n) = V_n by induction on n.
    var_claim = sp.Eq(Var_(G_P[n]), V_P[n], evaluate=False)
    base = pf.rewrite(Var_(G_P[0]), V_P[0], [g0, def_var, e_zero, def_v], "base case")
    hyp = pf.hypothesis(substitute(var_claim, {n: n - 1}))
    sq = pf.linearity(E_(new**2), E_(Pm**2) + E_(xm**2 * Lm**2) + c**2 * E_(xm**4) + 2 * E_(Pm * xm * Lm)
                      + 2 * c * E_(Pm * xm**2) + 2 * c * E_(xm**3 * Lm), "linearity", operator=E_,
                      random=[X_T, G_P, L_P])
    e2 = pf.rewrite(E_(Pm**2), Var_(Pm) + E_(Pm) ** 2, [def_var], "E[G²] = Var(G) + E[G]²")
    raw = V_P[n - 1] + LQ[n, n - 1] + 2 * c**2
    step_raw = pf.rewrite(Var_(G_P[n]), raw, [def_var, peel_g, sq, lin1, *ind, mean_x, sq_x, cube_x, four_x, e2, hyp, rows],
                          "Var(G_{n−1}) + E[L²] + 3M_nn² + 2M_nn E[G] − (E[G] + M_nn)²")
    A2 = peel_v.rhs.subs(_pm1, n)
    B2 = (sp.Sum(h, (_rb, 1, n - 1), (_ra, 1, n - 1)) + sp.Sum(cM(n, _rb) ** 2, (_rb, 1, n - 1)) + 2 * c**2)
    peel_vn = pf.chain([pf.rewrite(V_P[n], A2, [def_v, peel_v], "peel"), pf.linearity(A2, B2, "regroup"),
                        pf.rewrite(B2, raw, [def_v, def_k], "V_{n−1} + K_{n,n−1} + 2M_nn²")], V_P[n], "=", raw, "V_n")
    step = pf.chain([step_raw, peel_vn], Var_(G_P[n]), "=", V_P[n], "step")
    var_g = pf.induction(var_claim, n, 0, base, step, hyp, "Var(G_n) = V_n")
    whole = pf.rewrite(XMX, G_P[n], [def_s, def_g], "xᵀMx = G_n")
    pf.rewrite(E_(XMX), st_mean, [whole, mean_g, def_d], "E = Σ_a M_aa")
    v_n = pf.rewrite(Var_(XMX), def_v.rhs.subs(_pm0, n), [whole, var_g, def_v], "Var = V_n")
    concluded = variance(M_E, n)
    pf.chain([v_n, pf.linearity(def_v.rhs.subs(_pm0, n), concluded, "split the sum")], Var_(XMX), "=", concluded,
             "Var = tr(MMᵀ) + tr(M²)")
    # W_Q = W_K = W: xᵀWWᵀx = Σ_c (Σ_a W_ac x_a)².
    cw = lambda p, b: W_E[b, p]  # noqa: E731  row p of Wᵀ
    cols, def_u, def_h = _row_square(pf, "U", U_P, WQ, cw, (mean_x, sq_x, None), e_zero)
    def_w = pf.define(XWX, sp.Sum(sp.Sum(W_E[_ra, _gc] * X_T[_ra], (_ra, 1, n)) ** 2, (_gc, 1, nt.D_K)),
                      "xᵀWWᵀx = ‖Wᵀx‖² = Σ_c (Σ_a W_ac x_a)²")
    wu = pf.rewrite(XWX, sp.Sum(U_P[_gc, n] ** 2, (_gc, 1, nt.D_K)), [def_w, def_u], "the columns' forms")
    spread = pf.linearity(E_(sp.Sum(U_P[_gc, n] ** 2, (_gc, 1, nt.D_K))), sp.Sum(E_(U_P[_gc, n] ** 2), (_gc, 1, nt.D_K)),
                          "linearity", operator=E_, random=[U_P])
    out = pf.rewrite(sp.Sum(E_(U_P[_gc, n] ** 2), (_gc, 1, nt.D_K)), st_w, [cols, def_h], "Σ_c Σ_a W_ac²")
    pf.chain([pf.rewrite(E_(XWX), E_(sp.Sum(U_P[_gc, n] ** 2, (_gc, 1, nt.D_K))), [wu], "E of it"), spread, out],
             E_(XWX), "=", st_w, "E[xᵀWWᵀx] = ‖W‖_F²")
    return pf


