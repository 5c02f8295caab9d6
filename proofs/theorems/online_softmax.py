"""Online softmax (Milakov & Gimelshein 2018; FlashAttention): blocks merge exactly.

A block of scores s_j with values v_j is summarised by a state (m, l, o): a reference
m, the rescaled sum l = Σ exp(s_j - m) and the normalised output o = Σ exp(s_j - m) v_j / l.
"""
from __future__ import annotations

from typing import Callable

import sympy as sp

from proofs.engine import Derivation, Proof, Result

# Symbols of two states; downstream layers lambdify the merge over exactly these.
M1, L1, O1, M2, L2, O2 = sp.symbols("m_1 l_1 o_1 m_2 l_2 o_2", real=True)
STATE_SYMBOLS = (M1, L1, O1, M2, L2, O2)
IDENTITY_STATE = (-sp.oo, sp.Integer(0), sp.Integer(0))

Merge = Callable[..., tuple]


def merge(m1, l1, o1, m2, l2, o2, *, reference=None):
    """The rescaling identity: m = max(m1, m2), l = e^{m1-m} l1 + e^{m2-m} l2,
    o = (e^{m1-m} l1 o1 + e^{m2-m} l2 o2) / l. Any reference works; max only avoids overflow."""
    m = sp.Max(m1, m2) if reference is None else reference
    w1, w2 = sp.exp(m1 - m) * l1, sp.exp(m2 - m) * l2
    l = w1 + w2
    return m, l, (w1 * o1 + w2 * o2) / l


def _block(prefix: str, size: int, dim: int):
    scores = list(sp.symbols(f"{prefix}_1:{size + 1}", real=True))
    values = [sp.Matrix(sp.symbols(f"v_{prefix}{j + 1}_1:{dim + 1}", real=True)) for j in range(size)]
    return scores, values


def _state(scores, values, ref):
    l = sum(sp.exp(s - ref) for s in scores)
    o = sum((sp.exp(s - ref) * v for s, v in zip(scores, values)), sp.zeros(*values[0].shape)) / l
    return ref, l, o


def _softmax_output(scores, values):
    denom = sum(sp.exp(s) for s in scores)
    return sum((sp.exp(s) * v for s, v in zip(scores, values)), sp.zeros(*values[0].shape)) / denom


def online_softmax_merge(merge: Merge | None = None, *, sizes=(2, 3), dim: int = 2) -> Derivation:
    """The merge of two block states equals softmax attention over their union.

    ``merge`` defaults to the derived rule; pass another (same signature) to have it
    judged: a merge that drops a rescale factor is refused.
    """
    rule = merge or globals()["merge"]
    (xs, xv), (ys, yv) = _block("x", sizes[0], dim), _block("y", sizes[1], dim)
    r1, r2, ref = sp.symbols("m_x m_y M", real=True)
    pf = Proof("online-softmax-merge", "Merging two block states is exact",
               sp.Eq(sp.Symbol("o_merged"), sp.Symbol("softmax(s_x ∪ s_y) · V")),
               [f"blocks of {sizes[0]} and {sizes[1]} scores, {dim}-dimensional values, all symbolic",
                "block references m_x, m_y arbitrary reals (not necessarily the block maxima)"])
    sx, sy = _state(xs, xv, r1), _state(ys, yv, r2)
    pf.premise("definition", "block state: l = Σ exp(s_j - m), o = Σ exp(s_j - m) v_j / l",
               sp.Symbol("(m, l, o)"), sp.Symbol("state(s, V; m)"))
    direct_out = _softmax_output(xs + ys, xv + yv)
    direct_l = sum(sp.exp(s - ref) for s in xs + ys)

    m, l, o = rule(*sx, *sy, reference=ref)
    pf.equal("rescaling identity", "for any merge reference M: l = Σ_{x∪y} exp(s_j - M)", l, direct_l)
    pf.equal("rescaling identity", "for any merge reference M: o equals softmax attention over x ∪ y", o, direct_out)
    for case, value in (("m_x ≥ m_y", r1), ("m_y ≥ m_x", r2)):
        _, _, o_case = rule(*sx, *sy, reference=value)
        pf.equal("case analysis on max", f"{case}: M = max(m_x, m_y) = {value} gives the same output",
                 o_case, direct_out)
    return pf.finish(Result(zip(("m", "l", "o"), rule(*STATE_SYMBOLS)), symbols=STATE_SYMBOLS))


def merge_monoid() -> Derivation:
    """Associative, commutative, with identity (-∞, 0, 0): blocks may be merged in any order."""
    # l > 0 is the stated assumption: with l merely real the merged l can vanish and o is undefined.
    a, b, c = ((sp.Symbol(f"m_{s}", real=True), sp.Symbol(f"l_{s}", positive=True), sp.Symbol(f"o_{s}", real=True))
               for s in "abc")
    pf = Proof("online-softmax-monoid", "The merge is associative and commutative with identity (−∞, 0, 0)",
               sp.Eq(sp.Symbol("merge(merge(A, B), C)"), sp.Symbol("merge(A, merge(B, C))")),
               ["states with l > 0 (a non-empty block)"])
    left = merge(*merge(*a, *b), *c)
    right = merge(*a, *merge(*b, *c))
    pf.equal("associativity", "merge(merge(A, B), C) = merge(A, merge(B, C)) in m, l and o",
             sp.Matrix(left), sp.Matrix(right))
    pf.equal("commutativity", "merge(A, B) = merge(B, A)", sp.Matrix(merge(*a, *b)), sp.Matrix(merge(*b, *a)))
    pf.equal("identity", "merge((−∞, 0, 0), A) = A", sp.Matrix(merge(*IDENTITY_STATE, *a)), sp.Matrix(a))
    pf.equal("identity", "merge(A, (−∞, 0, 0)) = A", sp.Matrix(merge(*a, *IDENTITY_STATE)), sp.Matrix(a))
    return pf.finish(Result(identity=IDENTITY_STATE))


def stream_unnormalised(blocks, init=None):
    """FlashAttention-2 loop: running max m, running sum l, unnormalised accumulator acc."""
    m, l, acc = init or (-sp.oo, sp.Integer(0), sp.zeros(*blocks[0][1][0].shape))
    history = []
    for scores, values in blocks:
        m_new = sp.Max(m, *scores)
        alpha = sp.exp(m - m_new)  # rescales what was accumulated under the old max
        p = [sp.exp(s - m_new) for s in scores]
        l = alpha * l + sum(p)
        acc = alpha * acc + sum((pj * v for pj, v in zip(p, values)), sp.zeros(*values[0].shape))
        m = m_new
        history.append((m, l, acc))
    return m, l, acc, history


def unnormalised_accumulator() -> Derivation:
    (xs, xv), (ys, yv) = _block("x", 2, 2), _block("y", 3, 2)
    pf = Proof("online-softmax-unnormalised", "FlashAttention-2's unnormalised accumulator is exact",
               sp.Eq(sp.Symbol("acc / l"), sp.Symbol("softmax(s) · V")),
               ["two key blocks (2 and 3 scores), 2-dimensional values, symbolic",
                "state starts at (m, l, acc) = (−∞, 0, 0); divide by l once, at the end"])
    m, l, acc, history = stream_unnormalised([(xs, xv), (ys, yv)])
    pf.equal("rescaling identity", "after block 1: l = Σ_x exp(s - m_1)", history[0][1],
             sum(sp.exp(s - history[0][0]) for s in xs))
    pf.equal("rescaling identity", "after block 2: l = Σ_{x∪y} exp(s - m)", l, sum(sp.exp(s - m) for s in xs + ys))
    pf.equal("rescaling identity", "acc / l equals softmax attention over both blocks", acc / l,
             _softmax_output(xs + ys, xv + yv))
    pf.equal("definition of max", "the running max is the max over all scores", m, sp.Max(*(xs + ys)))
    return pf.finish(Result(m=m, l=l, acc=acc))


def logsumexp_merge() -> Derivation:
    xs, ys = _block("x", 2, 1)[0], _block("y", 3, 1)[0]
    r1, r2 = sp.symbols("m_x m_y", real=True)
    pf = Proof("logsumexp-merge", "lse = m + log l, and log-sum-exps merge as log(e^{lse_1} + e^{lse_2})",
               sp.Eq(sp.Symbol("m + log l"), sp.log(sp.Symbol("Σ exp(s_j)"))),
               ["blocks of 2 and 3 symbolic scores, arbitrary references"])
    l1, l2 = (sum(sp.exp(s - r) for s in blk) for blk, r in ((xs, r1), (ys, r2)))
    m, l, _ = merge(r1, l1, 0, r2, l2, 0)
    total = sum(sp.exp(s) for s in xs + ys)
    pf.equal("exp is injective on ℝ", "exp(m + log l) = Σ_{x∪y} exp(s_j)", sp.exp(m + sp.log(l)), total)
    lse1, lse2 = r1 + sp.log(l1), r2 + sp.log(l2)
    pf.equal("exp is injective on ℝ", "exp(lse) of the merge = exp(lse_1) + exp(lse_2)",
             sp.exp(m + sp.log(l)), sp.exp(lse1) + sp.exp(lse2))
    x = sp.Symbol("x", real=True)
    pf.equal("change of base", "exp2(x · log₂e) = eˣ: a base-2 kernel computes the same weights",
             2 ** (x / sp.log(2)), sp.exp(x))
    m2, l2b = sp.symbols("m_2 l_2", positive=True)
    pf.equal("change of base", "a base-2 state (m₂ = m log₂e, l) has natural lse (m₂ + log₂ l) · ln 2",
             (m2 + sp.log(l2b, 2)) * sp.log(2), m2 * sp.log(2) + sp.log(l2b))
    lse_a, lse_b = sp.symbols("lse_1 lse_2", real=True)
    return pf.finish(Result(lse=M1 + sp.log(L1), merged=sp.log(sp.exp(lse_a) + sp.exp(lse_b)),
                            symbols=(lse_a, lse_b)))
