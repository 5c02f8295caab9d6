"""Causal masking, in its two alignments.

Top-left (PyTorch's ``is_causal``): query i sees keys j ≤ i. Bottom-right (FlashAttention ≥ 2.1,
the alignment for a query block at the end of a longer key sequence): query i of N_q sees keys
j ≤ i + N_k − N_q. They coincide exactly when N_q = N_k. Indices here are 0-based; both rules
read the same 1-based.
"""
from __future__ import annotations

from typing import Callable

import sympy as sp

from proofs.engine import Derivation, Proof, Result
from proofs.validate import as_dimension

TOP_LEFT = "top-left"
BOTTOM_RIGHT = "bottom-right"
ALIGNMENTS = (TOP_LEFT, BOTTOM_RIGHT)

Mask = Callable[[int, int], sp.Matrix]


def _align(align: str) -> str:
    if align not in ALIGNMENTS:
        raise ValueError(f"align must be one of {ALIGNMENTS}, got {align!r}")
    return align


def last_visible_key(i: int, n_q: int, n_k: int, align: str = TOP_LEFT) -> int:
    """The last key query i may see; −1 when it sees none (bottom-right with N_q > N_k)."""
    n_q, n_k = int(as_dimension(n_q, "n_q")), int(as_dimension(n_k, "n_k"))
    if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n_q:
        raise ValueError(f"i must be a query index in 0..{n_q - 1}, got {i!r}")
    last = i if _align(align) == TOP_LEFT else i + n_k - n_q
    return max(min(last, n_k - 1), -1)


def causal_mask(n_q: int, n_k: int, align: str = TOP_LEFT) -> sp.Matrix:
    """Additive mask: 0 where query i sees key j, −∞ where it does not."""
    n_q, n_k = int(as_dimension(n_q, "n_q")), int(as_dimension(n_k, "n_k"))
    _align(align)
    return sp.Matrix([[0 if j <= last_visible_key(i, n_q, n_k, align) else -sp.oo for j in range(n_k)]
                      for i in range(n_q)])


def masked_softmax(S: sp.Matrix, mask: sp.Matrix) -> sp.Matrix:
    """Row-wise softmax of S + mask; exp(−∞) = 0 drops the masked keys."""
    E = sp.Matrix(S.rows, S.cols, lambda i, j: sp.exp(S[i, j] + mask[i, j]))
    return sp.Matrix(S.rows, S.cols, lambda i, j: E[i, j] / sum(E.row(i)))


def _matrix(name: str, rows: int, cols: int) -> sp.Matrix:
    return sp.Matrix(rows, cols, lambda i, j: sp.Symbol(f"{name}_{i + 1}{j + 1}", real=True))


def _statement(align: str) -> sp.Eq:
    """a_ij = exp(s_ij) / Σ_{k ≤ L_i} exp(s_ik) for j ≤ L_i, else 0; L_i = i or i + N_k − N_q."""
    i, j, k = sp.symbols("i j k", integer=True, nonnegative=True)
    n_q, n_k = sp.symbols("N_q N_k", integer=True, positive=True)
    s = sp.IndexedBase("s")
    last = i if align == TOP_LEFT else i + n_k - n_q
    return sp.Eq(sp.Indexed("a", i, j), sp.Piecewise(
        (sp.exp(s[i, j]) / sp.Sum(sp.exp(s[i, k]), (k, 0, last)), sp.Le(j, last)), (0, True)))


def _causal(claim_id: str, align: str, mask: Mask | None, sizes: tuple[tuple[int, int], ...]) -> Derivation:
    build = mask or (lambda n_q, n_k: causal_mask(n_q, n_k, align))
    rule = "j ≤ i" if align == TOP_LEFT else "j ≤ i + N_k − N_q"
    pf = Proof(claim_id, f"Causal mask, {align} aligned", _statement(align),
               [f"M_ij = 0 if {rule}, −∞ otherwise", "every query sees at least one key (N_q ≤ N_k)",
                "scores S = QKᵀ/√d with symbolic Q, K, V (d = 1)"])
    pf.premise("exp(−∞) = 0", "a masked key contributes exp(s_ij − ∞) = 0 to numerator and denominator",
               sp.exp(-sp.oo), 0)
    for n_q, n_k in sizes:
        S = _matrix("s", n_q, n_k)
        M = build(n_q, n_k)
        prefix = [last_visible_key(i, n_q, n_k, align) + 1 for i in range(n_q)]
        # Softmax over the visible prefix only, padded with zeros.
        expected = sp.Matrix(n_q, n_k, lambda i, j: sp.exp(S[i, j]) / sum(sp.exp(S[i, k]) for k in range(prefix[i]))
                             if j < prefix[i] else 0)
        pf.equal("exp(−∞) = 0", f"N_q = {n_q}, N_k = {n_k}: row i of the masked softmax is the softmax over "
                 f"keys {rule} (visible: {prefix})", masked_softmax(S, M), expected)

        Q, K, V = _matrix("q", n_q, 1), _matrix("k", n_k, 1), _matrix("v", n_k, 1)
        O = masked_softmax(Q * K.T, M) * V  # (n_q, 1)
        hidden = [(i, j) for i in range(n_q) for j in range(n_k) if j >= prefix[i]]
        seen = [(i, j) for i in range(n_q) for j in range(n_k) if j < prefix[i]]
        pf.equal("differentiation", f"N_q = {n_q}, N_k = {n_k}: ∂o_i/∂k_j = ∂o_i/∂v_j = 0 for every masked (i, j)",
                 [sp.diff(O[i], x) for i, j in hidden for x in (K[j], V[j])], [0] * (2 * len(hidden)))

        def visible_matter(O=O, seen=seen, K=K, V=V) -> tuple[bool, str]:
            # ∂o_i/∂v_j = P_ij > 0 for every visible key: the mask hides nothing it should show.
            point = {s: sp.Rational(k + 1, 7) for k, s in enumerate(sorted(O.free_symbols, key=str))}
            zero = [(i, j) for i, j in seen if sp.diff(O[i], V[j]).subs(point) == 0]
            return not zero, f"∂o_i/∂v_j ≠ 0 at a rational point for all {len(seen)} visible pairs" if not zero \
                else f"zero derivative at visible pairs {zero}"

        pf.holds("differentiation", f"N_q = {n_q}, N_k = {n_k}: every visible key does influence o_i",
                 sp.Symbol("∂o_i/∂v_j"), 0, visible_matter, "≠")
    other = BOTTOM_RIGHT if align == TOP_LEFT else TOP_LEFT
    pf.holds("comparison of the rules", f"the {other} mask differs whenever N_q ≠ N_k and agrees when N_q = N_k "
             "(N_q ≤ N_k ≤ 4)", causal_mask(2, 3, align), causal_mask(2, 3, other),
             lambda: all((causal_mask(q, k, align) == causal_mask(q, k, other)) == (q == k)
                         for k in range(1, 5) for q in range(1, k + 1)), "≠")
    return pf.finish(Result(mask_2x3=causal_mask(2, 3, align), mask_3x3=causal_mask(3, 3, align)))


def causal_mask_top_left(mask: Mask | None = None) -> Derivation:
    """PyTorch's ``is_causal``: query i sees keys j ≤ i. ``mask(n_q, n_k)`` may be replaced to be judged."""
    return _causal("causal-mask-top-left", TOP_LEFT, mask, ((3, 3), (2, 3)))


def causal_mask_bottom_right(mask: Mask | None = None) -> Derivation:
    """Query i of N_q sees keys j ≤ i + N_k − N_q. ``mask(n_q, n_k)`` may be replaced to be judged."""
    return _causal("causal-mask-bottom-right", BOTTOM_RIGHT, mask, ((2, 3),))
