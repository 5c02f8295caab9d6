"""The backward pass of attention, derived by the chain rule from the softmax Jacobian.

The claim is stated in index form over symbolic sizes (``proofs.notation_backward``). The softmax
layer, the one whose correctness depends on the number of keys N_k, is proved by rule applications
for any N_k: the pullback of dP through a row's softmax, differentiated from the softmax's definition,
equals the dS rule under test (a definition premise), and that rule equals P ∘ (dP − D). The four
linear layers and the two forms of D are still established by named computations (index-sum
reductions, ``proofs.index_sums``): no checker rule reorders nested sums or sifts a δ inside a binder.

Forward: S = scale·QKᵀ, P = softmax(S) row-wise, O = PV. With the upstream gradient
dO = ∂L/∂O, the gradients FlashAttention's backward kernel computes are
dV = Pᵀ dO, dP = dO Vᵀ, dS = P ∘ (dP − D) with D_i = Σ_j P_ij dP_ij = Σ_c dO_ic O_ic,
dQ = scale·dS K, dK = scale·dSᵀ Q.

The loss is taken as L = Σ dO ∘ O, the linear functional whose gradient in O is dO:
every gradient of a scalar loss through O is of this form (chain rule), so nothing is
lost by it, and differentiating it is an honest computation, not an assertion.
"""
from __future__ import annotations

from typing import Callable

import sympy as sp

from proofs import index_sums
from proofs import notation_backward as nb
from proofs.engine import Derivation, Proof, Result
from proofs.validate import as_dimension

SCALE = sp.Symbol("scale", positive=True)

# dS_ab from (P, dP, a, b, N_k), P and dP indexed by (row, key): the rule under test, judged for any N_k;
# the default is the derived one.
DsRule = Callable[[sp.IndexedBase, sp.IndexedBase, sp.Expr, sp.Expr, sp.Expr], sp.Expr]


def ds_entry(P, dP, a, b, n_k) -> sp.Expr:
    """dS_ab = P_ab (dP_ab − D_a), D_a = Σ_{k ≤ n_k} P_ak dP_ak: the softmax backward with the row correction."""
    k = nb.K_IDX
    return P[a, b] * (dP[a, b] - sp.Sum(P[a, k] * dP[a, k], (k, 1, n_k)))


def _matrix(name: str, rows: int, cols: int, **assumptions) -> sp.Matrix:
    return sp.Matrix(rows, cols, lambda i, j: sp.Symbol(f"{name}_{i + 1}{j + 1}", **assumptions))


def row_softmax(S: sp.Matrix) -> sp.Matrix:
    """Softmax of every row of S, written with explicit exponentials."""
    rows = []
    for i in range(S.rows):
        e = [sp.exp(x) for x in S.row(i)]
        total = sum(e)
        rows.append([x / total for x in e])
    return sp.Matrix(rows)


def row_correction(P: sp.Matrix, dP: sp.Matrix) -> sp.Matrix:
    """D_i = Σ_j P_ij dP_ij, one entry per query row (a column vector)."""
    return sp.Matrix([sum(P[i, j] * dP[i, j] for j in range(P.cols)) for i in range(P.rows)])


def ds_rule(P: sp.Matrix, dP: sp.Matrix) -> sp.Matrix:
    """dS = P ∘ (dP − D): the softmax backward with the row correction D."""
    D = row_correction(P, dP)
    return sp.Matrix(P.rows, P.cols, lambda i, j: P[i, j] * (dP[i, j] - D[i]))


def backward_identities(n_q: int = 2, n_k: int = 3, d: int = 2, d_v: int = 2) -> Result:
    """The backward identities over explicit symbol matrices, ready to lambdify.

    ``Q`` (n_q×d), ``K`` (n_k×d), ``V`` (n_k×d_v), ``dO`` (n_q×d_v) and ``scale`` are the
    inputs; ``P``, ``O``, ``dV``, ``dP``, ``D``, ``dS``, ``dQ``, ``dK`` are expressions in them.
    ``D`` is written both ways: ``D`` = rowsum(dO ∘ O), ``D_from_dP`` = rowsum(P ∘ dP).
    """
    n_q, n_k = int(as_dimension(n_q, "n_q")), int(as_dimension(n_k, "n_k"))
    d, d_v = int(as_dimension(d, "d")), int(as_dimension(d_v, "d_v"))
    Q, K = _matrix("q", n_q, d, real=True), _matrix("k", n_k, d, real=True)
    V, dO = _matrix("v", n_k, d_v, real=True), _matrix("g", n_q, d_v, real=True)
    P = row_softmax(SCALE * Q * K.T)  # (n_q, n_k)
    O = P * V  # (n_q, d_v)
    dP = dO * V.T  # (n_q, n_k)
    D = sp.Matrix([sum(dO[i, c] * O[i, c] for c in range(d_v)) for i in range(n_q)])  # (n_q, 1)
    dS = sp.Matrix(n_q, n_k, lambda i, j: P[i, j] * (dP[i, j] - D[i]))
    return Result(Q=Q, K=K, V=V, dO=dO, scale=SCALE, P=P, O=O, dV=P.T * dO, dP=dP, D=D,
                  D_from_dP=row_correction(P, dP), dS=dS, dQ=SCALE * dS * K, dK=SCALE * dS.T * Q)


# ---------------------------------------------------------------- legacy computations (named in the verdict)
_i, _j, _c = sp.symbols("i_1 j_1 c_1", integer=True, positive=True)


def _loss():
    """L = Σ_ic dO_ic O_ic with O = PV written out: the linear functional whose gradient in O is dO."""
    P, V, dO = nb.P, nb.V, nb.dO
    return sp.Sum(dO[_i, _c] * sp.Sum(P[_i, _j] * V[_j, _c], (_j, 1, nb.N_K)), (_i, 1, nb.N_Q), (_c, 1, nb.D_V))


def _score_functional():
    """Σ_ij dS_ij S_ij with S = scale·QKᵀ written out: the pullback through S of the upstream dS."""
    Q, K, dS = nb.Q, nb.K, nb.dS
    return sp.Sum(dS[_i, _j] * nb.SCALE * sp.Sum(Q[_i, _c] * K[_j, _c], (_c, 1, nb.D_HEAD)),
                  (_i, 1, nb.N_Q), (_j, 1, nb.N_K))


_gap_a, _gap_b = sp.symbols("r_a r_b", integer=True, nonnegative=True)


def _entry(lhs, rhs, rows, cols):
    """index_sums.same on an entry (a, b) of a rows × cols gradient: rows = a + r_a, cols = b + r_b puts the
    entry in range, which is what lets a δ sift onto a and b."""
    at = {rows: nb.A_IDX + _gap_a, cols: nb.B_IDX + _gap_b}
    return index_sums.same(sp.sympify(lhs).subs(at), sp.sympify(rhs).subs(at))


def dv_by_index_sums():
    """∂L/∂V_ab reduced by index_sums equals the stated (Pᵀ dO)_ab, (a, b) in N_k × d_v."""
    return _entry(sp.diff(_loss(), nb.V[nb.A_IDX, nb.B_IDX]), nb.conjuncts()[0].rhs, nb.N_K, nb.D_V)


def dp_by_index_sums():
    """∂L/∂P_ab (P as this layer's input) reduced by index_sums equals the stated (dO Vᵀ)_ab, (a, b) in N_q × N_k."""
    return _entry(sp.diff(_loss(), nb.P[nb.A_IDX, nb.B_IDX]), nb.conjuncts()[1].rhs, nb.N_Q, nb.N_K)


def d_from_do_by_index_sums():
    """Σ_k P_ak (dO Vᵀ)_ak = Σ_c dO_ac (PV)_ac: the stated D with dP = dO Vᵀ and O = PV written out."""
    a, k, c = nb.A_IDX, nb.K_IDX, nb.C_IDX
    from_dp = sp.Sum(nb.P[a, k] * sp.Sum(nb.dO[a, _c] * nb.V[k, _c], (_c, 1, nb.D_V)), (k, 1, nb.N_K))
    from_do = sp.Sum(nb.dO[a, c] * sp.Sum(nb.P[a, _j] * nb.V[_j, c], (_j, 1, nb.N_K)), (c, 1, nb.D_V))
    return index_sums.same(from_dp, from_do)


def dq_by_index_sums():
    """∂/∂Q_ab Σ dS ∘ S reduced by index_sums equals the stated scale·(dS K)_ab, (a, b) in N_q × d."""
    return _entry(sp.diff(_score_functional(), nb.Q[nb.A_IDX, nb.B_IDX]), nb.conjuncts()[6].rhs, nb.N_Q, nb.D_HEAD)


def dk_by_index_sums():
    """∂/∂K_ab Σ dS ∘ S reduced by index_sums equals the stated scale·(dSᵀ Q)_ab, (a, b) in N_k × d."""
    return _entry(sp.diff(_score_functional(), nb.K[nb.A_IDX, nb.B_IDX]), nb.conjuncts()[7].rhs, nb.N_K, nb.D_HEAD)


# ---------------------------------------------------------------- the derivation

def attention_backward(rule: DsRule | None = None) -> Derivation:
    """The backward identities for any sizes. ``rule(P, dP, a, b, N_k) -> dS_ab`` defaults to the derived
    P_ab (dP_ab − D_a); pass another to have it judged for a symbolic number of keys (a rule that drops −D,
    or that is right only for N_k ≤ 3, is refused)."""
    rule = rule or ds_entry
    pf = Proof("attention-backward")
    dv, dp, pullback, ds_closed, d_from_dp, d_from_do, dq, dk = nb.conjuncts()
    x, y = sp.symbols("x y", integer=True, positive=True)
    a, b, k, l, r, n_k = nb.A_IDX, nb.B_IDX, nb.K_IDX, nb.L_IDX, nb.R_GAP, nb.N_K
    S, P, dP, D, dS = nb.S, nb.P, nb.dP, nb.D, nb.dS
    softmax = pf.define(P[x, y], sp.exp(S[x, y]) / sp.Sum(sp.exp(S[x, l]), (l, 1, n_k)),
                        "P = softmax(S) row by row", forall=[x, y])
    correction = pf.define(D[x], sp.Sum(P[x, k] * dP[x, k], (k, 1, n_k)), "D_a = Σ_k P_ak dP_ak", forall=[x])
    under_test = pf.define(dS[x, y], rule(P, dP, x, y, n_k), "dS: the rule under test", forall=[x, y])
    in_range = pf.assume(sp.Eq(n_k, b + r, evaluate=False), "1 ≤ b ≤ N_k: N_k = b + r with r ≥ 0")

    # The pullback through row a's softmax, differentiated from the definition (N_k = b + r written out).
    total = sp.Sum(sp.exp(S[a, l]), (l, 1, b + r))
    row = sp.Sum(dP[a, k] * sp.exp(S[a, k]) / total, (k, 1, b + r))
    derivative = sp.Derivative(row, S[a, b])
    differentiated = derivative.doit()
    quotient = pf.identity(derivative, differentiated, "quotient and chain rule: ∂S_ak/∂S_ab = δ_kb")
    sifted_total = sp.Sum(sp.exp(S[a, l]) * sp.KroneckerDelta(b, l), (l, 1, b + r))
    split = pf.linearity(differentiated, sp.Sum(sp.exp(S[a, k]) * sp.KroneckerDelta(b, k) * dP[a, k], (k, 1, b + r))
                         / total - sp.Sum(sp.exp(S[a, k]) * dP[a, k], (k, 1, b + r)) * sifted_total / total ** 2,
                         "the sum over k splits; factors free of k leave it")
    sifts = [pf.identity(sifted_total, sp.exp(S[a, b]), "sifting: Σ_l δ_bl exp(S_al) = exp(S_ab), 1 ≤ b ≤ N_k"),
             pf.identity(sp.Sum(sp.exp(S[a, k]) * sp.KroneckerDelta(b, k) * dP[a, k], (k, 1, b + r)),
                         sp.exp(S[a, b]) * dP[a, b], "sifting: Σ_k δ_bk exp(S_ak) dP_ak = exp(S_ab) dP_ab")]
    pulled = pf.linearity(row, sp.Sum(dP[a, k] * sp.exp(S[a, k]), (k, 1, b + r)) / total,
                          "the row's softmax denominator leaves the sum over k")
    layer = [softmax, correction, under_test, in_range, quotient, split, *sifts, pulled]
    pf.rewrite(pullback.lhs, pullback.rhs, layer, "dS_ab = Σ_k dP_ak ∂P_ak/∂S_ab is the rule under test, any N_k")
    pf.rewrite(ds_closed.lhs, ds_closed.rhs, layer, "the rule under test is P_ab (dP_ab − D_a), any N_k")
    pf.rewrite(d_from_dp.lhs, d_from_dp.rhs, [correction], "D by its definition")

    for conjunct, check in ((dv, dv_by_index_sums), (dp, dp_by_index_sums), (d_from_do, d_from_do_by_index_sums),
                            (dq, dq_by_index_sums), (dk, dk_by_index_sums)):
        pf.computation(conjunct, check, check.__doc__.strip(), name=check.__name__)
    return pf.finish(Result(rule=rule(P, dP, a, b, n_k)))
