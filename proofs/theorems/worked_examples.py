"""The seeds' worked examples in exact arithmetic.

The derivations prove the exact values (integers, √2, e) from the seeds' printed inputs
(``proofs.seed_data``), against the printed matrices the catalogue states, and carry them in ``.result``; the seed audit sets every decimal the
seeds print beside them.
"""
from __future__ import annotations

import sympy as sp

from proofs.engine import Derivation, Proof, Result
from proofs.seed_data import SEED_DK_3, SEED_SCORES_3, SEED_VALUES_3, SEED_W_K, SEED_W_Q, SEED_W_V, SEED_X


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


def _matrix_symbol(name: str, m: sp.Matrix) -> sp.MatrixSymbol:
    return sp.MatrixSymbol(name, *m.shape)


def seed_worked_example_2_token() -> Derivation:
    """The N = 2 example of the first seed: exact Q, K, V, S as printed; exact S/√2, A and Z."""
    pf = Proof("seed-worked-example-2-token")
    t = two_token_values()
    stated = lambda name, m: pf.claimed(_matrix_symbol(name, m))  # noqa: E731
    for name, rule in (("Q", "X W_Q"), ("K", "X W_K"), ("V", "X W_V"), ("S", "QKᵀ")):
        pf.equal("matrix product", f"{name} = {rule} is the printed {stated(name, t[name]).tolist()}", t[name],
                 stated(name, t[name]), subject=_matrix_symbol(name, t[name]))
    pf.equal("division by √2", "S/√2 in exact form", t.scaled, stated("S/√2", t.scaled),
             subject=_matrix_symbol("S/√2", t.scaled))
    # Two keys: a_1 = 1/(1 + e^{s_2 − s_1}), so every weight is a logistic of a score gap.
    pf.equal("softmax of two logits", "A: each weight a logistic σ(g) = 1/(1 + e^{−g}) of a scaled-score gap",
             t.A, stated("A", t.A), subject=_matrix_symbol("A", t.A))
    pf.equal("softmax normalisation", "each row of A sums to 1", t.A * sp.ones(2, 1), sp.ones(2, 1))
    pf.equal("matrix product, rows sum to 1", "Z = AV = [[1 + A_12, 3 − A_12], [1 + A_22, 3 − A_22]]", t.Z,
             stated("Z", t.Z), subject=_matrix_symbol("Z", t.Z))
    return pf.finish(t)


def seed_worked_example_3_token() -> Derivation:
    """The 3-token example of the second seed: exact scaled scores, row-1 weights and z₁."""
    pf = Proof("seed-worked-example-3-token")
    h = three_token_values()
    for name, value, rule, what in (("S/√d_k", h.scaled, "division by √4 = 2", "the scaled scores are as printed"),
                                    ("α_1", h.A.row(0), "softmax", "row 1: α₁ = (e², e, 1)/(e² + e + 1)"),
                                    ("z_1", h.z1, "z₁ = Σ_j α_1j v_j", "z₁ = ((e² + 3e), (2e² + 4))/(e² + e + 1)")):
        subject = _matrix_symbol(name, value)
        pf.equal(rule, what, value, pf.claimed(subject), subject=subject)
    pf.equal("softmax normalisation", "every row of A sums to 1", h.A * sp.ones(3, 1), sp.ones(3, 1))
    return pf.finish(h)
