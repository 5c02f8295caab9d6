"""The symbols the attention-backward claim is stated in: index form over symbolic sizes (1-based).

Forward: S = scale·QKᵀ, P_ab = exp(S_ab) / Σ_l exp(S_al) row by row, O = PV; upstream gradient dO.
Backward: dV = Pᵀ dO, dP = dO Vᵀ, dS the pullback of dP through each row's softmax, with the
row correction D_a = Σ_k P_ak dP_ak = Σ_c dO_ac O_ac, dQ = scale·dS K, dK = scale·dSᵀ Q.
"""
from __future__ import annotations

import sympy as sp

from proofs import notation as nt

N_Q, N_K = nt.N_Q, nt.N_K
D_HEAD, D_V = sp.Symbol("d", integer=True, positive=True), nt.D_V
SCALE = sp.Symbol("scale", positive=True)
A_IDX, B_IDX = sp.symbols("a b", integer=True, positive=True)  # the entry (a, b) a conjunct is about
I_IDX, K_IDX, C_IDX, L_IDX = sp.symbols("i k c l", integer=True, positive=True)  # summation indices
R_GAP = sp.Symbol("r", integer=True, nonnegative=True)  # N_k = b + r: key b is one of the N_k keys

S, P, O, D = (sp.IndexedBase(x, real=True) for x in ("S", "P", "O", "D"))
Q, K, V = (sp.IndexedBase(x, real=True) for x in ("Q", "K", "V"))
dO, dP, dS, dV, dQ, dK = (sp.IndexedBase(x, real=True) for x in ("dO", "dP", "dS", "dV", "dQ", "dK"))


def _eq(lhs, rhs):
    return sp.Eq(lhs, rhs, evaluate=False)


def row_sum(body, index, size):
    return sp.Sum(body, (index, 1, size))


def conjuncts() -> tuple:
    """attention-backward, in order: dV; dP; dS as the pullback through row a's softmax; dS's closed form;
    D from dP; D from dO and O; dQ; dK."""
    a, b, i, k, c = A_IDX, B_IDX, I_IDX, K_IDX, C_IDX
    return (_eq(dV[a, b], row_sum(P[i, a] * dO[i, b], i, N_Q)),
            _eq(dP[a, b], row_sum(dO[a, c] * V[b, c], c, D_V)),
            _eq(sp.Derivative(row_sum(dP[a, k] * P[a, k], k, N_K), S[a, b]), dS[a, b]),
            _eq(dS[a, b], P[a, b] * (dP[a, b] - D[a])),
            _eq(D[a], row_sum(P[a, k] * dP[a, k], k, N_K)),
            _eq(D[a], row_sum(dO[a, c] * O[a, c], c, D_V)),
            _eq(dQ[a, b], SCALE * row_sum(dS[a, k] * K[k, b], k, N_K)),
            _eq(dK[a, b], SCALE * row_sum(dS[i, a] * Q[i, b], i, N_Q)))
