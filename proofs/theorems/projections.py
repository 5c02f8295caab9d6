"""Q, K, V projections: the shape contract, the fused QKV GEMM, parameter counts, asymmetry."""
from __future__ import annotations

import numbers
from typing import Callable

import sympy as sp

from proofs.engine import Derivation, Proof, Result
from proofs.validate import as_dimension

B, T, D_MODEL, D_K, D_V = sp.symbols("B T d_model d_k d_v", integer=True, positive=True)

# Splits the fused output X·W_QKV (T × (2 d_k + d_v)) back into (Q, K, V).
Split = Callable[[sp.Matrix, int, int], tuple[sp.Matrix, sp.Matrix, sp.Matrix]]


def _matrix(name: str, rows: int, cols: int) -> sp.Matrix:
    return sp.Matrix(rows, cols, lambda i, j: sp.Symbol(f"{name}_{i + 1}{j + 1}", real=True))


def _shape(value, name: str) -> tuple:
    if not isinstance(value, (tuple, list)) or not value:
        raise ValueError(f"{name} must be a non-empty tuple of dimensions, got {value!r}")
    dims = []
    for d in value:
        if isinstance(d, sp.Symbol) and d.is_integer and d.is_positive:
            dims.append(d)
        elif isinstance(d, (numbers.Integral, sp.Integer)) and not isinstance(d, bool) and int(d) >= 1:
            dims.append(sp.Integer(int(d)))
        else:
            raise ValueError(f"{name} must hold positive integers or positive integer symbols, got {value!r}")
    return tuple(dims)


def projected_shape(x_shape, w_shape) -> tuple:
    """Shape of X·W for X of shape (..., d_in) and W of shape (d_in, d_out): (..., d_out)."""
    xs, ws = _shape(x_shape, "x_shape"), _shape(w_shape, "w_shape")
    if len(ws) != 2:
        raise ValueError(f"w_shape must be (d_in, d_out), got {w_shape!r}")
    if sp.simplify(xs[-1] - ws[0]) != 0:
        raise ValueError(f"w_shape {w_shape!r} does not match the last dimension of x_shape {x_shape!r}")
    return xs[:-1] + (ws[1],)


def batched_projection(X: list[sp.Matrix], W: sp.Matrix) -> list[sp.Matrix]:
    """[B, T, d_model] · [d_model, d_k]: one GEMM per batch element (X as a list of T×d_model)."""
    return [x * W for x in X]


def projection_shapes() -> Derivation:
    pf = Proof("projection-shapes", "Projections keep batch and sequence dimensions",
               sp.Eq(sp.Symbol("shape(XW)"), sp.Tuple(B, T, D_K)),
               ["X ∈ ℝ^{B×T×d_model}, W ∈ ℝ^{d_model×d_k}"])
    pf.holds("shape rule of the batched GEMM", "[B, T, d_model]·[d_model, d_k] → [B, T, d_k] (symbolic sizes)",
             sp.Tuple(*projected_shape((B, T, D_MODEL), (D_MODEL, D_K))), sp.Tuple(B, T, D_K),
             lambda: projected_shape((B, T, D_MODEL), (D_MODEL, D_K)) == (B, T, D_K))
    b, t, dm, dk = 2, 3, 2, 2
    X = [_matrix(f"x{i + 1}", t, dm) for i in range(b)]
    W = _matrix("w", dm, dk)
    Y = batched_projection(X, W)
    pf.holds("matrix product", f"explicit B = {b}, T = {t}, d_model = {dm}, d_k = {dk}: Y has shape [{b}, {t}, {dk}]",
             sp.Tuple(len(Y), *Y[0].shape), sp.Tuple(b, t, dk),
             lambda: (len(Y), *Y[0].shape) == (b, t, dk) == projected_shape((b, t, dm), (dm, dk)))
    # Token (b, t) alone determines output row (b, t): the GEMM acts on the feature axis only.
    pf.equal("row-wise action", "Y[b, t, :] = X[b, t, :]·W for every b, t",
             sp.Matrix.vstack(*Y), sp.Matrix.vstack(*[x.row(i) * W for x in X for i in range(t)]))

    def no_mixing() -> tuple[bool, str]:
        for b1 in range(b):
            for t1 in range(t):
                others = {s for b2 in range(b) for t2 in range(t) if (b2, t2) != (b1, t1) for s in X[b2].row(t2)}
                if Y[b1].row(t1).free_symbols & others:
                    return False, f"output row ({b1}, {t1}) depends on another token"
        return True, "∂Y[b, t]/∂X[b', t'] = 0 for (b', t') ≠ (b, t): no token or batch mixing"

    pf.holds("independence of rows", "no output row depends on another token, so T and B are unchanged",
             sp.Symbol("∂Y[b,t]/∂X[b',t']"), 0, no_mixing)
    return pf.finish(Result(shape=sp.Tuple(B, T, D_K)))


def split_blocks(Y: sp.Matrix, d_k: int, d_v: int) -> tuple[sp.Matrix, sp.Matrix, sp.Matrix]:
    """Slice X·[W_Q | W_K | W_V] into Q = Y[:, :d_k], K = Y[:, d_k:2d_k], V = Y[:, 2d_k:]."""
    return Y[:, :d_k], Y[:, d_k:2 * d_k], Y[:, 2 * d_k:2 * d_k + d_v]


def fused_qkv_projection(split: Split | None = None, *, t: int = 2, d_model: int = 3, d_k: int = 2) -> Derivation:
    """X·[W_Q | W_K | W_V] (+ [b_Q | b_K | b_V]) sliced equals the three projections.

    ``split(Y, d_k, d_v)`` defaults to the block slicing; pass another to have it judged
    (an interleaved slicing is refused).
    """
    split = split or split_blocks
    t, d_model, d_k = (int(as_dimension(v, n)) for v, n in ((t, "t"), (d_model, "d_model"), (d_k, "d_k")))
    d_v = d_k
    pf = Proof("fused-qkv-projection", "The fused QKV projection equals three projections",
               sp.Eq(sp.Symbol("split(X[W_Q|W_K|W_V])"), sp.Symbol("(XW_Q, XW_K, XW_V)")),
               [f"explicit symbolic X ({t}×{d_model}), W_Q, W_K, W_V ({d_model}×{d_k}), biases"])
    X = _matrix("x", t, d_model)
    Ws = [_matrix(n, d_model, d) for n, d in (("wq", d_k), ("wk", d_k), ("wv", d_v))]
    bs = [_matrix(n, 1, d) for n, d in (("bq", d_k), ("bk", d_k), ("bv", d_v))]
    W_qkv, b_qkv = sp.Matrix.hstack(*Ws), sp.Matrix.hstack(*bs)
    ones = sp.ones(t, 1)
    pf.holds("shape rule", f"W_QKV is {d_model}×(2·{d_k} + {d_v}); X·W_QKV is {t}×{2 * d_k + d_v}",
             sp.Tuple(*(X * W_qkv).shape), sp.Tuple(t, 2 * d_k + d_v),
             lambda: (X * W_qkv).shape == (t, 2 * d_k + d_v))
    pf.equal("block matrix product", "split(X·W_QKV) = (XW_Q, XW_K, XW_V), entrywise",
             list(split(X * W_qkv, d_k, d_v)), [X * W for W in Ws])
    pf.equal("block matrix product", "with bias: split(X·W_QKV + 1·b_QKV) = (XW_Q + 1b_Q, XW_K + 1b_K, XW_V + 1b_V)",
             list(split(X * W_qkv + ones * b_qkv, d_k, d_v)), [X * W + ones * b for W, b in zip(Ws, bs)])
    return pf.finish(Result(W_qkv=W_qkv, b_qkv=b_qkv))


def parameter_count(d_model, d_k, *, bias: bool = False, matrices: int = 1):
    """Trainable parameters of ``matrices`` projections d_model → d_k (with optional bias)."""
    if not isinstance(bias, bool):
        raise ValueError(f"bias must be True or False, got {bias!r}")
    if isinstance(matrices, bool) or not isinstance(matrices, numbers.Integral) or matrices < 1:
        raise ValueError(f"matrices must be a positive integer, got {matrices!r}")
    dm, dk = _shape((d_model,), "d_model")[0], _shape((d_k,), "d_k")[0]
    return matrices * (dm * dk + (dk if bias else 0))


def projection_parameter_count() -> Derivation:
    pf = Proof("projection-parameter-count", "Parameter counts of the Q, K, V projections",
               sp.Eq(sp.Symbol("params(W_Q, W_K, W_V)"), 3 * D_MODEL * D_K),
               ["W_Q, W_K, W_V ∈ ℝ^{d_model×d_k}; a bias adds d_k each"])

    def counted(dm: int, dk: int, bias: bool) -> int:
        W = _matrix("w", dm, dk)
        b = _matrix("b", 1, dk) if bias else sp.zeros(1, 0)
        return len(W.free_symbols | b.free_symbols)

    for bias in (False, True):
        formula = parameter_count(D_MODEL, D_K, bias=bias)
        pf.holds("counting entries", f"one projection{' with bias' if bias else ''}: "
                 f"{sp.sstr(formula)} parameters, counted on explicit matrices for d_model, d_k ≤ 4",
                 sp.Symbol("params"), formula,
                 lambda f=formula, bias=bias: all(counted(m, k, bias) == f.subs({D_MODEL: m, D_K: k})
                                                  for m in range(1, 5) for k in range(1, 5)))
    fused = 3 * D_MODEL * D_MODEL + 3 * D_MODEL  # nn.Linear(d_model, 3·d_model, bias=True)
    pf.equal("block matrix", "fused Linear(d_model, 3·d_model, bias) has as many parameters as three separate ones",
             fused, parameter_count(D_MODEL, D_MODEL, bias=True, matrices=3))
    gpt2 = {D_MODEL: 768, D_K: 768}
    pf.equal("substitution, d_model = d_k = 768", "GPT-2 small: 768 × 768 = 589,824 per matrix",
             parameter_count(D_MODEL, D_K).subs(gpt2), 589_824)
    pf.equal("substitution, d_model = d_k = 768", "GPT-2 small: W_Q, W_K, W_V together hold 1,769,472 weights",
             parameter_count(D_MODEL, D_K, matrices=3).subs(gpt2), 1_769_472)
    pf.equal("substitution, d_model = d_k = 768", "with GPT-2's biases (c_attn): 1,771,776",
             parameter_count(D_MODEL, D_K, bias=True, matrices=3).subs(gpt2), 1_771_776)
    return pf.finish(Result(per_matrix=parameter_count(D_MODEL, D_K),
                            per_matrix_bias=parameter_count(D_MODEL, D_K, bias=True),
                            qkv=parameter_count(D_MODEL, D_K, matrices=3),
                            qkv_bias=parameter_count(D_MODEL, D_K, bias=True, matrices=3),
                            gpt2_per_matrix=sp.Integer(589_824), gpt2_qkv=sp.Integer(1_769_472),
                            symbols=(D_MODEL, D_K)))


def scores(X: sp.Matrix, W_Q: sp.Matrix, W_K: sp.Matrix) -> sp.Matrix:
    """S = (XW_Q)(XW_K)ᵀ = X (W_Q W_Kᵀ) Xᵀ."""
    return (X * W_Q) * (X * W_K).T


def score_asymmetry(n: int = 2, d_k: int = 2, tokens: int = 2) -> Derivation:
    """S = X W_Q W_Kᵀ Xᵀ is symmetric for every X exactly when M = W_Q W_Kᵀ is symmetric."""
    n, d_k, tokens = (int(as_dimension(v, name)) for v, name in ((n, "n"), (d_k, "d_k"), (tokens, "tokens")))
    pf = Proof("score-asymmetry", "Scores are symmetric for all inputs iff W_Q W_Kᵀ is symmetric",
               sp.Equivalent(sp.Symbol("S = Sᵀ for all X"), sp.Symbol("W_Q W_Kᵀ = W_K W_Qᵀ")),
               [f"X ∈ ℝ^{{N×n}}, W_Q, W_K ∈ ℝ^{{n×d_k}} (explicit n = {n}, d_k = {d_k}, N = {tokens})"])
    X = _matrix("x", tokens, n)
    W_Q, W_K = _matrix("wq", n, d_k), _matrix("wk", n, d_k)
    Mf = _matrix("m", n, n)  # M = W_Q W_Kᵀ as free symbols: every S is X M Xᵀ
    pf.equal("associativity", "S = (XW_Q)(XW_K)ᵀ = X (W_Q W_Kᵀ) Xᵀ = X M Xᵀ",
             scores(X, W_Q, W_K), X * (W_Q * W_K.T) * X.T)
    S = X * Mf * X.T
    pf.equal("transpose of a product", "S − Sᵀ = X (M − Mᵀ) Xᵀ", S - S.T, X * (Mf - Mf.T) * X.T)

    def only_if() -> tuple[bool, str]:
        # Two tokens x = e_a, y = e_b read off S_12 − S_21 = M_ab − M_ba.
        for a in range(n):
            for b in range(n):
                E2 = sp.Matrix.vstack(sp.eye(n).row(a), sp.eye(n).row(b))
                S2 = E2 * Mf * E2.T
                if sp.expand(S2[0, 1] - S2[1, 0] - (Mf[a, b] - Mf[b, a])) != 0:
                    return False, f"tokens e_{a + 1}, e_{b + 1}"
        return True, "for X = [e_a; e_b]: S_12 − S_21 = M_ab − M_ba, so symmetric S for all X forces M = Mᵀ"

    pf.holds("choice of X", "only if: unit-vector tokens expose every entry of M − Mᵀ", sp.Symbol("M − Mᵀ"),
             sp.zeros(n, n), only_if)
    A = sp.Matrix(d_k, d_k, lambda i, j: sp.Symbol(f"a_{min(i, j) + 1}{max(i, j) + 1}", real=True))
    M_sym = W_Q * (W_Q * A).T
    pf.equal("M symmetric", "if: W_K = W_Q·A with A = Aᵀ (W_K ≠ W_Q in general) gives M = Mᵀ, hence S = Sᵀ",
             M_sym, M_sym.T)
    M_trap = W_Q * W_Q.T
    pf.equal("symmetry trap", "W_Q = W_K (q = x, k = x is W = I) gives M = Mᵀ, hence s_ij = s_ji",
             M_trap, M_trap.T)
    M = W_Q * W_K.T
    from proofs.seed_data import SEED_W_K, SEED_W_Q, SEED_X

    seed_S = scores(SEED_X, SEED_W_Q, SEED_W_K)
    pf.holds("the seed's weights", "the seed's X, W_Q, W_K give S = [[3, 2], [6, 4]]: S_12 = 2 ≠ S_21 = 6",
             seed_S, seed_S.T, lambda: (seed_S != seed_S.T, f"S = {seed_S.tolist()}"), "≠")
    return pf.finish(Result(scores=X * M * X.T, M=M, difference=X * (M - M.T) * X.T, seed_scores=seed_S))
