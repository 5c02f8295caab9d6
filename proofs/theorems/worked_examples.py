"""The seeds' worked examples in exact arithmetic.

The derivations prove the exact values (integers, √2, e) from the seeds' printed inputs
(``proofs.seed_data``) and carry them in ``.result``; the seed audit sets every decimal the
seeds print beside them.
"""
from __future__ import annotations

import sympy as sp

from proofs.engine import Derivation, Proof, Result
from proofs.seed_data import (PRINTED_K, PRINTED_Q, PRINTED_S, PRINTED_SCALED_3, PRINTED_V, SEED_DK_3,
                              SEED_SCORES_3, SEED_VALUES_3, SEED_W_K, SEED_W_Q, SEED_W_V, SEED_X)


def row_softmax(S: sp.Matrix) -> sp.Matrix:
    return sp.Matrix(S.rows, S.cols, lambda i, j: sp.exp(S[i, j]) / sum(sp.exp(x) for x in S.row(i)))


def two_token_values() -> Result:
    """Exact Q, K, V, S, S/√2, A, Z of the N = 2 example."""
    Q, K, V = SEED_X * SEED_W_Q, SEED_X * SEED_W_K, SEED_X * SEED_W_V
    S = Q * K.T
    scaled = S / sp.sqrt(Q.cols)
    A = row_softmax(scaled)
    return Result(Q=Q, K=K, V=V, S=S, scaled=scaled, A=A, Z=A * V,
                  exps=scaled.applyfunc(sp.exp), sums=[sum(sp.exp(x) for x in scaled.row(i)) for i in range(2)])


def three_token_values() -> Result:
    """Exact scaled scores, weights A and z₁ of the 3-token example."""
    scaled = SEED_SCORES_3 / sp.sqrt(SEED_DK_3)
    A = row_softmax(scaled)
    return Result(scaled=scaled, A=A, z1=(A.row(0) * SEED_VALUES_3).T, exps=[sp.exp(x) for x in scaled.row(0)],
                  sum1=sum(sp.exp(x) for x in scaled.row(0)))


def seed_worked_example_2_token() -> Derivation:
    """The N = 2 example of the first seed: exact Q, K, V, S as printed; exact S/√2, A and Z."""
    pf = Proof("seed-worked-example-2-token", "The seed's N = 2 worked example, exactly",
               sp.Eq(sp.Symbol("Z"), sp.Symbol("softmax(XW_Q (XW_K)ᵀ/√2) XW_V")),
               ["X, W_Q, W_K, W_V as printed in 000_6dc9c20305ca48b8.txt", "d_k = d_v = 2"])
    t = two_token_values()
    pf.equal("matrix product", "Q = X W_Q is the printed [[1, 1], [2, 2]]", t.Q, PRINTED_Q)
    pf.equal("matrix product", "K = X W_K is the printed [[2, 1], [0, 2]]", t.K, PRINTED_K)
    pf.equal("matrix product", "V = X W_V is the printed [[1, 3], [2, 2]]", t.V, PRINTED_V)
    pf.equal("matrix product", "S = QKᵀ is the printed [[3, 2], [6, 4]]", t.S, PRINTED_S)
    pf.equal("division by √2", "S/√2 = [[3/√2, √2], [3√2, 2√2]]", t.scaled,
             sp.Matrix([[3 / sp.sqrt(2), sp.sqrt(2)], [3 * sp.sqrt(2), 2 * sp.sqrt(2)]]))
    # Two keys: a_1 = 1/(1 + e^{s_2 − s_1}), so every weight is a logistic of a score gap.
    logistic = lambda g: 1 / (1 + sp.exp(-g))  # noqa: E731
    pf.equal("softmax of two logits", "A = [[σ(1/√2), σ(−1/√2)], [σ(√2), σ(−√2)]], σ(g) = 1/(1 + e^{−g})", t.A,
             sp.Matrix([[logistic(1 / sp.sqrt(2)), logistic(-1 / sp.sqrt(2))],
                        [logistic(sp.sqrt(2)), logistic(-sp.sqrt(2))]]))
    pf.equal("softmax normalisation", "each row of A sums to 1", t.A * sp.ones(2, 1), sp.ones(2, 1))
    pf.equal("matrix product, rows sum to 1", "Z = AV = [[1 + A_12, 3 − A_12], [1 + A_22, 3 − A_22]]", t.Z,
             sp.Matrix([[1 + t.A[0, 1], 3 - t.A[0, 1]], [1 + t.A[1, 1], 3 - t.A[1, 1]]]))
    return pf.finish(t)


def seed_worked_example_3_token() -> Derivation:
    """The 3-token example of the second seed: exact scaled scores, row-1 weights and z₁."""
    pf = Proof("seed-worked-example-3-token", "The seed's 3-token worked example, exactly",
               sp.Eq(sp.Symbol("z_1"), sp.Symbol("Σ_j α_1j v_j")),
               ["raw scores [[4, 2, 0], [1, 3, −1], [2, 0, 4]], d_k = 4, as printed in 002_84043d61bb2cf99b.txt",
                "v₁ = (1, 2), v₂ = (3, 0), v₃ = (0, 4)"])
    h = three_token_values()
    pf.equal("division by √4 = 2", "the scaled scores are the printed [[2, 1, 0], [0.5, 1.5, −0.5], [1, 0, 2]]",
             h.scaled, PRINTED_SCALED_3)
    e = sp.E
    pf.equal("softmax", "row 1: α₁ = (e², e, 1)/(e² + e + 1)", h.A.row(0),
             sp.Matrix([[e**2, e, 1]]) / (e**2 + e + 1))
    pf.equal("softmax normalisation", "every row of A sums to 1", h.A * sp.ones(3, 1), sp.ones(3, 1))
    pf.equal("z₁ = Σ_j α_1j v_j", "z₁ = ((e² + 3e), (2e² + 4))/(e² + e + 1)", h.z1,
             sp.Matrix([e**2 + 3 * e, 2 * e**2 + 4]) / (e**2 + e + 1))
    return pf.finish(h)
