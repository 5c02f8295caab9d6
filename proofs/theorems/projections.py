"""Q, K, V projections: the shape contract, the fused QKV GEMM, parameter counts, asymmetry."""
from __future__ import annotations

import numbers
from typing import Callable

import sympy as sp

from proofs import notation as nt
from proofs.checker import conjuncts
from proofs.engine import Derivation, Proof, Result
from proofs.validate import as_dimension

B, T, D_MODEL, D_K, D_V = sp.symbols("B T d_model d_k d_v", integer=True, positive=True)

# (c, block, d_k, d_v) -> the fused column that column c of block 0 (Q), 1 (K), 2 (V) is read from.
Split = Callable[[sp.Expr, int, sp.Expr, sp.Expr], sp.Expr]


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


# Index forms (1-based for the batched projection, 0-based where MatrixSymbol entries are used).
X_TOK, W_PROJ, Y_PROJ = sp.IndexedBase("X", real=True), sp.IndexedBase("W", real=True), sp.IndexedBase("Y")
_b, _t, _c, _r, _k, _b2, _t2 = sp.symbols("b t c r k b' t'", integer=True, positive=True)


def _other_token() -> sp.Expr:
    """∂Y[b, t, c]/∂X[b', t', r]: the derivative of an output entry by an entry of any token."""
    return sp.Derivative(Y_PROJ[_b, _t, _c], X_TOK[_b2, _t2, _r])


def projection_shapes() -> Derivation:
    """Y[b, t, c] = Σ_r X[b, t, r] W[r, c] for any B, T, d_model, d_k: ∂Y[b, t, c]/∂X[b', t', r] =
    δ_bb' δ_tt' ∂Y[b, t, c]/∂X[b, t, r], so output row (b, t) depends on token (b, t) only."""
    pf = Proof("projection-shapes")
    target = pf.stated(_other_token())
    gemm = pf.define(Y_PROJ[_b, _t, _c], sp.Sum(X_TOK[_b, _t, _k] * W_PROJ[_k, _c], (_k, 1, D_MODEL)),
                     "the batched GEMM [B, T, d_model]·[d_model, d_k]: entry (b, t, c) of XW", forall=[_b, _t, _c])
    delta = sp.KroneckerDelta
    sifted = sp.Sum(delta(_b, _b2) * delta(_t, _t2) * delta(_k, _r) * W_PROJ[_k, _c], (_k, 1, D_MODEL))
    own = sp.Sum(delta(_k, _r) * W_PROJ[_k, _c], (_k, 1, D_MODEL))
    diff = pf.rewrite(target.lhs, sifted, [gemm], "differentiate the sum term by term: ∂X[b, t, k]/∂X[b', t', r] = "
                      "δ_bb' δ_tt' δ_kr", label="differentiation")
    out = pf.linearity(sifted, delta(_b, _b2) * delta(_t, _t2) * own, "δ_bb' δ_tt' do not depend on k: out of the sum",
                       label="linearity of Σ")
    same = pf.rewrite(target.rhs, delta(_b, _b2) * delta(_t, _t2) * own, [gemm], "the same derivative within token "
                      "(b, t)", label="differentiation")
    pf.chain([diff, out, same], target.lhs, "=", target.rhs, "so an output row depends on its own token only: "
             "the GEMM acts on the feature axis", label="independence of rows")
    return pf.finish(Result(shape=sp.Tuple(*projected_shape((B, T, D_MODEL), (D_MODEL, D_K)))))


def split_blocks(Y: sp.Matrix, d_k: int, d_v: int) -> tuple[sp.Matrix, sp.Matrix, sp.Matrix]:
    """Slice X·[W_Q | W_K | W_V] into Q = Y[:, :d_k], K = Y[:, d_k:2d_k], V = Y[:, 2d_k:] (``block_column``'s
    layout, on an explicit matrix)."""
    cols = lambda block, width: [int(block_column(c, block, d_k, d_v)) for c in range(width)]  # noqa: E731
    return Y[:, cols(0, d_k)], Y[:, cols(1, d_k)], Y[:, cols(2, d_v)]


def block_column(c, block: int, d_k, d_v):
    """The fused column that column c of block 0 (Q), 1 (K) or 2 (V) is read from: c + block·d_k (0-based)."""
    return c + block * d_k


# Fused QKV in 0-based entries of MatrixSymbols with symbolic sizes.
COL = sp.Symbol("c", integer=True, nonnegative=True)  # a column of Q, K or V
ROW = sp.Symbol("t", integer=True, nonnegative=True)  # a token
_FREE = sp.Symbol("u", integer=True, nonnegative=True)  # d_k − 1 − c ≥ 0
_rr, _col = sp.symbols("r col", integer=True, nonnegative=True)
fused, fused_bias, w_qkv, b_qkv = (sp.Function(n) for n in ("F", "F_b", "W_QKV", "b_QKV"))
split_parts = {name: sp.Function(name) for name in ("Q̂", "K̂", "V̂", "Q̂_b", "K̂_b", "V̂_b")}


FUSED_X = sp.IndexedBase("X", real=True)  # X[t, r], T × d_model
FUSED_W = tuple(sp.IndexedBase(name, real=True) for name in ("W_Q", "W_K", "W_V"))  # W[r, c], d_model × (d_k, d_k, d_v)
FUSED_B = tuple(sp.IndexedBase(name, real=True) for name in ("b_Q", "b_K", "b_V"))  # b[c]


def projected_entry(W: sp.IndexedBase, t=None, c=None) -> sp.Expr:
    """(XW)[t, c] = Σ_{r=0}^{d_model − 1} X[t, r] W[r, c] (0-based)."""
    t, c = (ROW if t is None else t), (COL if c is None else c)
    return sp.Sum(FUSED_X[t, _rr] * W[_rr, c], (_rr, 0, nt.D_MODEL - 1))


def fused_qkv_projection(split: Split | None = None) -> Derivation:
    """X·[W_Q | W_K | W_V] (+ [b_Q | b_K | b_V]) sliced equals the three projections, for symbolic T, d_model,
    d_k, d_v.

    ``split(c, block, d_k, d_v)`` (the fused column of column c of block 0, 1, 2) defaults to
    ``block_column``; pass another to have it judged (an interleaved 3c + block is refused).
    """
    split = split or block_column
    pf = Proof("fused-qkv-projection")
    (W_Q, W_K, W_V), (b_Q, b_K, b_V) = FUSED_W, FUSED_B
    dk = nt.D_K
    names = ("Q̂", "K̂", "V̂")
    # Defined from the slices down to the hstack, so every definition is listed in the verdict.
    parts = [pf.define(split_parts[n](ROW, COL), fused(ROW, split(COL, block, dk, nt.D_V)),
                     f"{n}: column c of block {block} of the fused product, as the implementation slices it",
                     forall=[ROW, COL]) for block, n in enumerate(names)]
    parts += [pf.define(split_parts[n + "_b"](ROW, COL), fused_bias(ROW, split(COL, block, dk, nt.D_V)),
                        f"{n} with bias: the same slice of X·W_QKV + 1·b_QKV", forall=[ROW, COL])
              for block, n in enumerate(names)]
    product = pf.define(fused(ROW, _col), sp.Sum(FUSED_X[ROW, _rr] * w_qkv(_rr, _col), (_rr, 0, nt.D_MODEL - 1)),
                        "F = X·W_QKV, entry (t, col)", forall=[ROW, _col])
    biased = pf.define(fused_bias(ROW, _col), fused(ROW, _col) + b_qkv(_col), "F_b = X·W_QKV + 1·b_QKV",
                       forall=[ROW, _col])
    hstack = pf.define(w_qkv(_rr, _col), sp.Piecewise((W_Q[_rr, _col], _col <= dk - 1),
                                                      (W_K[_rr, _col - dk], _col <= 2 * dk - 1),
                                                      (W_V[_rr, _col - 2 * dk], True)),
                       "W_QKV = [W_Q | W_K | W_V] (columns 0-based)", forall=[_rr, _col])
    bstack = pf.define(b_qkv(_col), sp.Piecewise((b_Q[_col], _col <= dk - 1), (b_K[_col - dk], _col <= 2 * dk - 1),
                                                 (b_V[_col - 2 * dk], True)),
                       "b_QKV = [b_Q | b_K | b_V]", forall=[_col])
    within = pf.assume(sp.Eq(nt.D_K, COL + 1 + _FREE, evaluate=False),
                       "c is a column of Q and K: d_k = c + 1 + u, u ≥ 0")
    for block, n in enumerate(names):
        for bias in (False, True):
            name = n + ("_b" if bias else "")
            stated = pf.stated(split_parts[name](ROW, COL))
            using = [parts[block + 3 * bias], product, hstack] + ([biased, bstack] if bias else []) + \
                ([within] if block < 2 else [])
            pf.rewrite(stated.lhs, stated.rhs, using, f"{name}(t, c) = {nt.inline(stated.rhs)}: the slice reads "
                       f"block {block} of the hstack", label="block matrix product")
    return pf.finish(Result(weights=FUSED_W, biases=FUSED_B))


def parameter_count(d_model, d_k, *, bias: bool = False, matrices: int = 1):
    """Trainable parameters of ``matrices`` projections d_model → d_k (with optional bias)."""
    if not isinstance(bias, bool):
        raise ValueError(f"bias must be True or False, got {bias!r}")
    if isinstance(matrices, bool) or not isinstance(matrices, numbers.Integral) or matrices < 1:
        raise ValueError(f"matrices must be a positive integer, got {matrices!r}")
    dm, dk = _shape((d_model,), "d_model")[0], _shape((d_k,), "d_k")[0]
    return matrices * (dm * dk + (dk if bias else 0))


entries = sp.Function("entries")  # entries(m, n): the number of entries of an m × n matrix
_m, _n = sp.symbols("m n", integer=True, positive=True)


def projection_parameter_count() -> Derivation:
    """params(k, m, n, β): k projections m → n, with a bias when β = 1; counted entry by entry."""
    pf = Proof("projection-parameter-count")
    count = pf.define(entries(_m, _n), sp.Sum(1, (_r, 1, _m), (_c, 1, _n)), "an m × n matrix: one entry per (r, c)",
                      forall=[_m, _n])
    with_bias = sp.Symbol("beta", integer=True, nonnegative=True)
    kind = pf.define(nt.params(_k, _m, _n, with_bias), _k * (entries(_m, _n) + with_bias * entries(1, _n)),
                     "k projections W ∈ ℝ^{m×n}, each with its bias b ∈ ℝ^{1×n} when β = 1: one parameter per entry",
                     forall=[_k, _m, _n, with_bias])
    counted = pf.rewrite(entries(_m, _n), _m * _n, [count], "Σ_{r ≤ m} Σ_{c ≤ n} 1 = mn", forall=[_m, _n],
                         label="counting entries")
    for c in conjuncts(pf.statement):
        pf.rewrite(c.lhs, c.rhs, [kind, counted], nt.inline(c), label="counting entries")
    for formula, args in ((parameter_count(D_MODEL, D_K), (1, D_MODEL, D_K, 0)),
                          (parameter_count(D_MODEL, D_K, bias=True), (1, D_MODEL, D_K, 1)),
                          (parameter_count(D_MODEL, D_K, matrices=3), (3, D_MODEL, D_K, 0)),
                          (parameter_count(768, 768, bias=True, matrices=3), (3, 768, 768, 1))):
        pf.rewrite(nt.params(*args), formula, [kind, counted], f"parameter_count gives params{args}",
                   label="parameter_count")
    pf.identity(3 * D_MODEL * D_MODEL + 3 * D_MODEL, parameter_count(D_MODEL, D_MODEL, bias=True, matrices=3),
                "fused Linear(d_model, 3·d_model, bias) has as many parameters as three separate ones",
                label="block matrix")
    gpt2 = {D_MODEL: 768, D_K: 768}
    return pf.finish(Result(per_matrix=parameter_count(D_MODEL, D_K),
                            per_matrix_bias=parameter_count(D_MODEL, D_K, bias=True),
                            qkv=parameter_count(D_MODEL, D_K, matrices=3),
                            qkv_bias=parameter_count(D_MODEL, D_K, bias=True, matrices=3),
                            gpt2_per_matrix=parameter_count(D_MODEL, D_K).subs(gpt2),
                            gpt2_qkv=parameter_count(D_MODEL, D_K, matrices=3).subs(gpt2),
                            symbols=(D_MODEL, D_K)))


def scores(X: sp.Matrix, W_Q: sp.Matrix, W_K: sp.Matrix) -> sp.Matrix:
    """S = (XW_Q)(XW_K)ᵀ = X (W_Q W_Kᵀ) Xᵀ."""
    return (X * W_Q) * (X * W_K).T


SEED_SCORES = sp.MatrixSymbol("S^seed", 2, 2)
TOKEN_P, TOKEN_Q = sp.symbols("p q", integer=True, nonnegative=True)


def score_matrices():
    """X (N × n) and M = W_Q W_Kᵀ (n × n) as MatrixSymbols of the catalogue's symbolic sizes."""
    return sp.MatrixSymbol("X", nt.N_TOK, nt.N), sp.MatrixSymbol("M", nt.N, nt.N)


def score_asymmetry() -> Derivation:
    """S = X M Xᵀ: (S − Sᵀ)_pq = (X (M − Mᵀ) Xᵀ)_pq for any N, n, so S is symmetric for every X when M is
    (and, with unit-vector tokens, only then); the seed's weights give S_12 = 2 ≠ 6 = S_21."""
    pf = Proof("score-asymmetry")
    X, M = score_matrices()
    S = X * M * X.T
    gap = next(c for c in conjuncts(pf.statement) if not c.has(SEED_SCORES))  # S_pq − S_qp = (X(M − Mᵀ)Xᵀ)_pq
    pf.linearity(gap.lhs, gap.rhs, "S_pq − S_qp = Σ_aΣ_b X_pa (M_ab − M_ba) X_qb: the sums split and the indices "
                 "of the second swap", label="transpose of a product")
    from proofs.seed_data import SEED_W_K, SEED_W_Q, SEED_X

    Xs, Wq, Wk = (sp.MatrixSymbol(name, *m.shape) for name, m in (("X^seed", SEED_X), ("W_Q^seed", SEED_W_Q),
                                                                   ("W_K^seed", SEED_W_K)))
    scores_def = pf.define(SEED_SCORES, sp.ImmutableMatrix(scores(*(sp.Matrix(m.as_explicit()) for m in (Xs, Wq, Wk)))),
                           "the seed's scores S = (XW_Q)(XW_K)ᵀ, entry by entry")
    inputs = [pf.define(sym, sp.ImmutableMatrix(m), f"the seed's {name}, as printed")
              for sym, m, name in ((Xs, SEED_X, "X"), (Wq, SEED_W_Q, "W_Q"), (Wk, SEED_W_K, "W_K"))]
    for i, j in ((0, 1), (1, 0)):
        entry = pf.stated(SEED_SCORES[i, j])
        pf.rewrite(entry.lhs, entry.rhs, [scores_def, *inputs], f"the seed's X, W_Q, W_K: S_{i + 1}{j + 1} = "
                   f"{entry.rhs}", label="matrix product")
    seed_S = scores(SEED_X, SEED_W_Q, SEED_W_K)
    return pf.finish(Result(scores=S, M=M, difference=X * (M - M.T) * X.T, seed_scores=seed_S))
