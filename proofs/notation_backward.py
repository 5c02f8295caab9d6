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
# The entry of each linear layer's gradient, its own pair: each conjunct holds over its own matrix's range
# (dV over N_k × d_v, dQ over N_q × d, …), which one shared (a, b) in range of all of them would narrow.
ENTRY = {name: sp.symbols(f"a_{name} b_{name}", integer=True, positive=True) for name in ("V", "P", "Q", "K")}
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
    (av, bv), (ap, bp), (aq, bq), (ak, bk) = (ENTRY[n] for n in ("V", "P", "Q", "K"))
    return (_eq(dV[av, bv], row_sum(P[i, av] * dO[i, bv], i, N_Q)),
            _eq(dP[ap, bp], row_sum(dO[ap, c] * V[bp, c], c, D_V)),
            _eq(sp.Derivative(row_sum(dP[a, k] * P[a, k], k, N_K), S[a, b]), dS[a, b]),
            _eq(dS[a, b], P[a, b] * (dP[a, b] - D[a])),
            _eq(D[a], row_sum(P[a, k] * dP[a, k], k, N_K)),
            _eq(D[a], row_sum(dO[a, c] * O[a, c], c, D_V)),
            _eq(dQ[aq, bq], SCALE * row_sum(dS[aq, k] * K[k, bq], k, N_K)),
            _eq(dK[ak, bk], SCALE * row_sum(dS[i, ak] * Q[i, bk], i, N_Q)))
