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


def _entries(product) -> sp.ImmutableMatrix:
    """A matrix expression written out entry by entry (in its factors' entries), so that a definition
    rewrites into explicit matrices: its MatrixSymbols made explicit first (SymPy's as_explicit of a product
    sums symbolically, seconds for a 2 × 4 · 4 × 2)."""
    explicit = {m: sp.Matrix(m.as_explicit()) for m in product.atoms(sp.MatrixSymbol)}
    return sp.ImmutableMatrix(product.xreplace(explicit).doit())


def _softmax_rows(T: sp.MatrixSymbol, rows=None) -> sp.ImmutableMatrix:
    """The row-wise softmax of the matrix T, entry by entry in T's entries (the given rows only)."""
    rows = range(T.rows) if rows is None else rows
    return sp.ImmutableMatrix([[sp.exp(T[i, j]) / sp.Add(*(sp.exp(T[i, k]) for k in range(T.cols)))
                                for j in range(T.cols)] for i in rows])


def seed_worked_example_2_token() -> Derivation:
    """The N = 2 example of the first seed: exact Q, K, V, S as printed; exact S/√2, A and Z."""
    pf = Proof("seed-worked-example-2-token")
    t = two_token_values()
    Q, K, V, S, scaled, A, Z = (_matrix_symbol(name, t[key]) for name, key in (
        ("Q", "Q"), ("K", "K"), ("V", "V"), ("S", "S"), ("S/√2", "scaled"), ("A", "A"), ("Z", "Z")))
    X, W = _matrix_symbol("X", SEED_X), {n: _matrix_symbol(n, m) for n, m in (("W_Q", SEED_W_Q), ("W_K", SEED_W_K),
                                                                              ("W_V", SEED_W_V))}
    # Defined from the outputs down to the printed inputs, so every definition is listed in the verdict.
    defs = {name: pf.define(_matrix_symbol(name, t[name]), _entries(X * W["W_" + name]), f"{name} = X W_{name}")
            for name in ("Q", "K", "V")}
    defs["S"] = pf.define(S, _entries(Q * K.T), "the raw scores S = QKᵀ")
    defs["S/√2"] = pf.define(scaled, _entries(S / sp.sqrt(Q.cols)), f"scaled by √d_k, d_k = {Q.cols}")
    defs["A"] = pf.define(A, _softmax_rows(scaled), "A = softmax of each row of S/√2")
    defs["Z"] = pf.define(Z, _entries(A * V), "Z = AV")
    inputs = [pf.define(X, sp.ImmutableMatrix(SEED_X), "the seed's X, as printed")]
    inputs += [pf.define(W[n], sp.ImmutableMatrix(m), f"the seed's {n}, as printed")
               for n, m in (("W_Q", SEED_W_Q), ("W_K", SEED_W_K), ("W_V", SEED_W_V))]
    proved = {}
    for name, rule in (("Q", "X W_Q"), ("K", "X W_K"), ("V", "X W_V")):
        M = _matrix_symbol(name, t[name])
        proved[name] = pf.rewrite(M, pf.claimed(M), [defs[name], inputs[0], inputs[("Q", "K", "V").index(name) + 1]],
                                  f"{name} = {rule} is the printed {pf.claimed(M).tolist()}", label="matrix product")
    proved["S"] = pf.rewrite(S, pf.claimed(S), [defs["S"], proved["Q"], proved["K"]], "S = QKᵀ as printed",
                             label="matrix product")
    proved["S/√2"] = pf.rewrite(scaled, pf.claimed(scaled), [defs["S/√2"], proved["S"]], "S/√2 in exact form",
                                label="division by √2")
    # Two keys: a_1 = 1/(1 + e^{s_2 − s_1}), so every weight is a logistic of a score gap.
    proved["A"] = pf.rewrite(A, pf.claimed(A), [defs["A"], proved["S/√2"]], "A: each weight a logistic "
                             "σ(g) = 1/(1 + e^{−g}) of a scaled-score gap", label="softmax of two logits")
    pf.rewrite(_entries(A * sp.ones(2, 1)), sp.ones(2, 1), [proved["A"]], "each row of A sums to 1",
               label="softmax normalisation")
    pf.rewrite(Z, pf.claimed(Z), [defs["Z"], proved["A"], proved["V"]],
               "Z = AV = [[1 + A_12, 3 − A_12], [1 + A_22, 3 − A_22]]", label="matrix product, rows sum to 1")
    return pf.finish(t)


def seed_worked_example_3_token() -> Derivation:
    """The 3-token example of the second seed: exact scaled scores, row-1 weights and z₁."""
    pf = Proof("seed-worked-example-3-token")
    h = three_token_values()
    scaled, alpha, z = (_matrix_symbol(name, value) for name, value in (
        ("S/√d_k", h.scaled), ("α_1", h.A.row(0)), ("z_1", h.z1)))
    raw, values = _matrix_symbol("S", SEED_SCORES_3), _matrix_symbol("V", SEED_VALUES_3)
    d_scaled = pf.define(scaled, _entries(raw / sp.sqrt(SEED_DK_3)), f"the scores scaled by √d_k, d_k = {SEED_DK_3}")
    d_alpha = pf.define(alpha, _softmax_rows(scaled, rows=[0]), "row 1 of the softmax of the scaled scores")
    d_z = pf.define(z, _entries((alpha * values).T), "z₁ = Σ_j α_1j v_j")
    d_raw = pf.define(raw, sp.ImmutableMatrix(SEED_SCORES_3), "the seed's raw scores, as printed")
    d_values = pf.define(values, sp.ImmutableMatrix(SEED_VALUES_3), "the seed's values v₁, v₂, v₃ (rows)")
    s = pf.rewrite(scaled, pf.claimed(scaled), [d_scaled, d_raw], "the scaled scores are as printed",
                   label="division by √4 = 2")
    a = pf.rewrite(alpha, pf.claimed(alpha), [d_alpha, s], "row 1: α₁ = (e², e, 1)/(e² + e + 1)", label="softmax")
    pf.rewrite(_entries(alpha * sp.ones(3, 1)), sp.ones(1, 1), [a], "row 1 of A sums to 1", label="softmax normalisation")
    pf.rewrite(z, pf.claimed(z), [d_z, a, d_values], "z₁ = ((e² + 3e), (2e² + 4))/(e² + e + 1)",
               label="z₁ = Σ_j α_1j v_j")
    return pf.finish(h)
