"""Q, K, V projections: the shape contract, the fused QKV GEMM, parameter counts, asymmetry."""
from __future__ import annotations

import numbers
from typing import Callable

import sympy as sp
from sympy.matrices.expressions.matexpr import MatrixElement

from proofs import index_sums
from proofs import notation as nt
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
    pf = Proof("projection-shapes")
    shape = sp.Tuple(*projected_shape((B, T, D_MODEL), (D_MODEL, D_K)))
    pf.holds("shape rule of the batched GEMM", "[B, T, d_model]·[d_model, d_k] → [B, T, d_k] (symbolic sizes)",
             shape, shape, lambda: (len(shape) == 3, f"shape {tuple(shape)}"), subject=nt.shape(sp.Symbol("XW")))
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

    pf.holds("independence of rows", f"no output row depends on another token (explicit B = {b}, T = {t}): "
             "each row is one token's GEMV", sp.Symbol("∂Y[b,t]/∂X[b',t'], (b',t') ≠ (b,t)"), 0, no_mixing)
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
    pf = Proof("fused-qkv-projection")
    plain, biased = (pf.stated(sp.Symbol(name)) for name in ("split(X[W_Q|W_K|W_V])",
                                                             "split(X[W_Q|W_K|W_V] + 1[b_Q|b_K|b_V])"))
    # The given sizes, then d_v ≠ d_k both ways: the slicing must hold for every shape, not one.
    for t_, dm, dk, dv in ((t, d_model, d_k, d_v), (1, 2, 1, 3), (3, 2, 3, 1)):
        X = _matrix("x", t_, dm)
        Ws = [_matrix(n, dm, d) for n, d in (("wq", dk), ("wk", dk), ("wv", dv))]
        bs = [_matrix(n, 1, d) for n, d in (("bq", dk), ("bk", dk), ("bv", dv))]
        W_qkv, b_qkv = sp.Matrix.hstack(*Ws), sp.Matrix.hstack(*bs)
        if (t_, dm, dk, dv) == (t, d_model, d_k, d_v):
            result = Result(W_qkv=W_qkv, b_qkv=b_qkv)
        ones = sp.ones(t_, 1)
        shape = f"X {t_}×{dm}, W_Q, W_K {dm}×{dk}, W_V {dm}×{dv}"
        pf.holds("shape rule", f"{shape}: X·W_QKV is {t_}×{2 * dk + dv}", sp.Tuple(*(X * W_qkv).shape),
                 sp.Tuple(t_, 2 * dk + dv), lambda X=X, W=W_qkv, t_=t_, dk=dk, dv=dv: (X * W).shape == (t_, 2 * dk + dv))
        sizes = {nt.SEQ: t_, nt.D_MODEL: dm, D_K: dk, nt.D_V: dv}
        named = {"X": X, "W_Q": Ws[0], "W_K": Ws[1], "W_V": Ws[2], "b_Q": bs[0], "b_K": bs[1], "b_V": bs[2]}
        stated = lambda rel, sizes=sizes, named=named: [nt.explicit(e, sizes, named) for e in rel.rhs]  # noqa: E731
        pf.equal("block matrix product", f"{shape}: split(X·W_QKV) = (XW_Q, XW_K, XW_V), entrywise",
                 list(split(X * W_qkv, dk, dv)), stated(plain), establishes=plain)
        pf.equal("block matrix product", f"{shape}: with bias, split(X·W_QKV + 1·b_QKV) = (XW_Q + 1b_Q, XW_K + 1b_K, "
                 "XW_V + 1b_V)", list(split(X * W_qkv + ones * b_qkv, dk, dv)), stated(biased), establishes=biased)
    return pf.finish(result)


def parameter_count(d_model, d_k, *, bias: bool = False, matrices: int = 1):
    """Trainable parameters of ``matrices`` projections d_model → d_k (with optional bias)."""
    if not isinstance(bias, bool):
        raise ValueError(f"bias must be True or False, got {bias!r}")
    if isinstance(matrices, bool) or not isinstance(matrices, numbers.Integral) or matrices < 1:
        raise ValueError(f"matrices must be a positive integer, got {matrices!r}")
    dm, dk = _shape((d_model,), "d_model")[0], _shape((d_k,), "d_k")[0]
    return matrices * (dm * dk + (dk if bias else 0))


def projection_parameter_count() -> Derivation:
    pf = Proof("projection-parameter-count")
    W, b_, gpt2_w = sp.Symbol("W"), sp.Symbol("b"), sp.Symbol("W^{GPT-2}")
    qkv, gpt2_qkv = sp.symbols("W_Q W_K W_V"), sp.symbols("W_Q^{GPT-2} W_K^{GPT-2} W_V^{GPT-2}")

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
                                                  for m in range(1, 5) for k in range(1, 5)),
                 subject=nt.params(W, b_) if bias else nt.params(W))
    pf.equal("three projections", "Q, K and V: three times one projection", parameter_count(D_MODEL, D_K, matrices=3),
             pf.claimed(nt.params(*qkv)), subject=nt.params(*qkv))
    fused = 3 * D_MODEL * D_MODEL + 3 * D_MODEL  # nn.Linear(d_model, 3·d_model, bias=True)
    pf.equal("block matrix", "fused Linear(d_model, 3·d_model, bias) has as many parameters as three separate ones",
             fused, parameter_count(D_MODEL, D_MODEL, bias=True, matrices=3))
    gpt2 = {D_MODEL: 768, D_K: 768}
    pf.equal("substitution, d_model = d_k = 768", "GPT-2 small: d_model·d_k per matrix",
             sp.Subs(parameter_count(D_MODEL, D_K), (D_MODEL, D_K), (768, 768)), pf.claimed(nt.params(gpt2_w)),
             subject=nt.params(gpt2_w), where=lambda e: sp.sympify(e).doit())
    pf.equal("substitution, d_model = d_k = 768", "GPT-2 small: W_Q, W_K, W_V together",
             sp.Subs(parameter_count(D_MODEL, D_K, matrices=3), (D_MODEL, D_K), (768, 768)),
             pf.claimed(nt.params(*gpt2_qkv)), subject=nt.params(*gpt2_qkv), where=lambda e: sp.sympify(e).doit())
    pf.equal("substitution, d_model = d_k = 768", "with GPT-2's biases (c_attn): 1,771,776",
             parameter_count(D_MODEL, D_K, bias=True, matrices=3).subs(gpt2), 1_771_776)
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


def score_asymmetry(n: int = 2, d_k: int = 2, tokens: int = 2) -> Derivation:
    """S = X W_Q W_Kᵀ Xᵀ is symmetric for every X exactly when M = W_Q W_Kᵀ is symmetric."""
    n, d_k, tokens = (int(as_dimension(v, name)) for v, name in ((n, "n"), (d_k, "d_k"), (tokens, "tokens")))
    pf = Proof("score-asymmetry")
    iff = next(c for c in sp.And.make_args(pf.statement) if isinstance(c, sp.Equivalent))
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

    only = pf.holds("choice of X", f"only if: unit-vector tokens expose every entry of M − Mᵀ (n = {n})",
                    sp.Symbol("M − Mᵀ"), sp.zeros(n, n), only_if)
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
    sizes = {nt.N_TOK: tokens, nt.N: n}
    sym = sp.Matrix(n, n, lambda i, j: Mf[min(i, j), max(i, j)])  # a generic symmetric M

    def truth(prop, M) -> bool:
        """Does the stated proposition hold identically in X (every X) for this M?"""
        if isinstance(prop, sp.Not):
            return not truth(prop.args[0], M)
        if isinstance(prop, sp.Ne):
            return not truth(sp.Eq(prop.lhs, prop.rhs, evaluate=False), M)
        if not isinstance(prop, sp.Eq):
            raise ValueError(f"cannot decide the proposition {prop}")
        diff = nt.explicit(prop.lhs - prop.rhs, sizes, {"X": X, "M": M})
        return all(sp.expand(e) == 0 for e in diff)

    # Any sizes, in index form: the stated S-side with M symmetric vanishes entrywise; with unit-vector
    # tokens its (1, 2) entry is the stated M-side's (α, β) entry.
    s_side = next(p for p in iff.args if any(m.name == "X" for m in p.atoms(sp.MatrixSymbol)))
    m_side = next(p for p in iff.args if p is not s_side)
    Mg = next(m for m in m_side.atoms(sp.MatrixSymbol))
    Xg = next(m for m in s_side.atoms(sp.MatrixSymbol) if m.name == "X")
    p_, q_, alpha, beta = sp.symbols("p q alpha beta", integer=True, nonnegative=True)
    if_any = pf.holds("transpose of a product", "if, any sizes: M = Mᵀ makes every entry of X M Xᵀ − X Mᵀ Xᵀ vanish",
                      (s_side.lhs - s_side.rhs)[p_, q_], 0,
                      lambda: index_sums.same((s_side.lhs - s_side.rhs).xreplace({Mg: (Mg + Mg.T) / 2})[p_, q_], 0))
    unit = (s_side.lhs - s_side.rhs)[0, 1].replace(
        lambda e: isinstance(e, MatrixElement) and e.parent == Xg,
        lambda e: sp.KroneckerDelta(e.j, alpha if e.i == 0 else beta))  # tokens e_α, e_β
    only_any = pf.holds("choice of X", "only if, any sizes: tokens e_α, e_β give (S − Sᵀ)_12 = (M − Mᵀ)_αβ",
                        unit, (m_side.lhs - m_side.rhs)[alpha, beta],
                        lambda: index_sums.same(unit, (m_side.lhs - m_side.rhs)[alpha, beta]))

    def both_ways() -> tuple[bool, str]:
        lhs, rhs = iff.args
        rows = {name: (truth(lhs, M), truth(rhs, M)) for name, M in (("symmetric M", sym), ("generic M", Mf))}
        ok = only and if_any and only_any and all(a == b for a, b in rows.values())
        return ok, "; ".join(f"{name}: sides {a} and {b}" for name, (a, b) in rows.items()) + \
            ("; both directions for any sizes (above)" if if_any and only_any else "; a general direction failed")

    pf.holds("iff", "the stated sides agree: any sizes, by the two directions above; and at n = 2 both hold for a "
             "generic symmetric M, both fail for a generic M", iff.args[0], iff.args[1], both_ways, "⟺", establishes=iff)
    for (i, j), name in (((0, 1), "S_12^seed"), ((1, 0), "S_21^seed")):
        pf.equal("matrix product", f"the seed's X, W_Q, W_K: {name[:4]} = {seed_S[i, j]}", seed_S[i, j],
                 pf.claimed(sp.Symbol(name)), subject=sp.Symbol(name))
    pf.holds("the seed's weights", "so the seed's scores are not symmetric: S_12 ≠ S_21",
             seed_S, seed_S.T, lambda: (seed_S != seed_S.T, f"S = {seed_S.tolist()}"), "≠")
    return pf.finish(Result(scores=X * M * X.T, M=M, difference=X * (M - M.T) * X.T, seed_scores=seed_S))
