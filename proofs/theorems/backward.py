"""The backward pass of attention, derived by the chain rule from the softmax Jacobian.

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

from proofs.engine import Derivation, Proof, Result, identity
from proofs.theorems.softmax import jacobian_in_weights, softmax_jacobian
from proofs.validate import as_dimension

SCALE = sp.Symbol("scale", positive=True)

# dS from (P, dP): the rule under test; the default is the derived one.
DsRule = Callable[[sp.Matrix, sp.Matrix], sp.Matrix]


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


def attention_backward(rule: DsRule | None = None, *, n_q: int = 2, n_k: int = 3, d: int = 2) -> Derivation:
    """Derive the backward identities on symbolic matrices (default 2×3 queries/keys, head dim 2).

    ``rule(P, dP) -> dS`` defaults to the derived P ∘ (dP − D); pass another to have it
    judged (dropping the −D correction is refused).
    """
    rule = rule or ds_rule
    n_q, n_k, d = int(as_dimension(n_q, "n_q")), int(as_dimension(n_k, "n_k")), int(as_dimension(d, "d"))
    d_v = d
    pf = Proof("attention-backward", "Backward pass of attention",
               sp.Eq(sp.Symbol("dS"), sp.Symbol("P ∘ (dP − rowsum(dO ∘ O))")),
               [f"S = scale·QKᵀ, P = softmax(S) by rows, O = PV; Q {n_q}×{d}, K {n_k}×{d}, V {n_k}×{d_v}, "
                "all entries symbolic", "upstream gradient dO = ∂L/∂O"])
    ids = backward_identities(n_q, n_k, d, d_v)
    Q, K, V, dO = ids.Q, ids.K, ids.V, ids.dO
    pf.premise("chain rule", "any scalar loss enters through O; its gradient there is dO, so take L = Σ dO ∘ O",
               sp.Symbol("L"), sp.Symbol("Σ_ic dO_ic O_ic"))

    # P as free symbols: the matrix-product layers are polynomial, so these steps are cheap.
    Pf = _matrix("p", n_q, n_k, positive=True)
    L_of_P = sum((dO.multiply_elementwise(Pf * V)))
    pf.equal("differentiation of O = PV", "dV = ∂L/∂V = Pᵀ dO",
             sp.Matrix(n_k, d_v, lambda j, c: sp.diff(L_of_P, V[j, c])), Pf.T * dO)
    pf.equal("differentiation of O = PV", "dP = ∂L/∂P = dO Vᵀ",
             sp.Matrix(n_q, n_k, lambda i, j: sp.diff(L_of_P, Pf[i, j])), dO * V.T)

    # Softmax layer, from the softmax-Jacobian theorem: dS_i = J(P_i)ᵀ dP_i with J = diag(a) − a aᵀ.
    pf.holds("softmax-jacobian", f"the Jacobian used below is the derived one: ∂softmax/∂z = diag(a) − aaᵀ, "
             f"n = {n_k}", sp.Symbol("J"), sp.Symbol("diag(a) − a aᵀ"), lambda: softmax_jacobian(n_k).verified)
    dPf = _matrix("dp", n_q, n_k, real=True)
    via_jacobian = sp.Matrix.vstack(*[(jacobian_in_weights(Pf.row(i).T).T * dPf.row(i).T).T for i in range(n_q)])
    pf.equal("softmax Jacobian (softmax-jacobian)", "dS_i = J(P_i)ᵀ dP_i equals P ∘ (dP − D), D_i = Σ_j P_ij dP_ij",
             via_jacobian, rule(Pf, dPf))
    pf.equal("O = PV", "the row correction in output terms: Σ_j P_ij dP_ij = Σ_c dO_ic O_ic",
             row_correction(Pf, dO * V.T), sp.Matrix([sum(dO[i, c] * (Pf * V)[i, c] for c in range(d_v))
                                                      for i in range(n_q)]))

    # End to end through the exponentials: differentiate L(S) with P = softmax(S) written out.
    Sf = _matrix("s", n_q, n_k, real=True)
    P_of_S = row_softmax(Sf)
    L_of_S = sum(dO.multiply_elementwise(P_of_S * V))
    by_diff = sp.Matrix(n_q, n_k, lambda i, j: sp.diff(L_of_S, Sf[i, j]))
    by_rule = rule(P_of_S, dO * V.T)
    # One probe suffices to refute; the symbolic reduction to zero is the proof, and probing
    # these exponential quotients at 40 digits is what costs time.
    pf.holds("chain rule through softmax", "∂L/∂S, differentiated through the exponentials, equals dS",
             by_diff, by_rule, lambda: identity(by_diff, by_rule, probes=1))

    # Score layer S = scale·QKᵀ: linear, so its pullback of any upstream G is exact to check.
    G = _matrix("G", n_q, n_k, real=True)
    L_lin = sum(G.multiply_elementwise(SCALE * Q * K.T))
    pf.equal("differentiation of S = scale·QKᵀ", "∂/∂Q Σ G ∘ S = scale·G K",
             sp.Matrix(n_q, d, lambda i, c: sp.diff(L_lin, Q[i, c])), SCALE * G * K)
    pf.equal("differentiation of S = scale·QKᵀ", "∂/∂K Σ G ∘ S = scale·Gᵀ Q",
             sp.Matrix(n_k, d, lambda j, c: sp.diff(L_lin, K[j, c])), SCALE * G.T * Q)
    pf.premise("chain rule", "with G = dS: dQ = scale·dS K, dK = scale·dSᵀ Q", sp.Symbol("dQ"),
               SCALE * sp.Symbol("dS") * sp.Symbol("K"))
    return pf.finish(ids)
