"""Causal masking, in its two alignments.

Top-left (PyTorch's ``is_causal``): query i sees keys j ≤ i. Bottom-right (FlashAttention ≥ 2.1,
the alignment for a query block at the end of a longer key sequence): query i of N_q sees keys
j ≤ i + N_k − N_q. They coincide exactly when N_q = N_k. Indices here are 0-based; both rules
read the same 1-based.
"""
from __future__ import annotations

from typing import Callable

import sympy as sp

from proofs import notation as nt
from proofs.engine import DEFINITION, Derivation, Proof, Result
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


MAX_ENUMERATED = 8  # every N_q, N_k up to this size is enumerated against the reference


def tril_reference(n_q: int, n_k: int, align: str) -> list[list[bool]]:
    """Which keys each query sees, from PyTorch's documented form, written independently of this module.

    ``torch.ones(L, S).tril(diagonal)`` keeps entry (i, j) exactly when j − i ≤ diagonal; PyTorch's
    ``is_causal`` (top-left) uses diagonal = 0, the bottom-right alignment diagonal = S − L.
    """
    diagonal = 0 if align == TOP_LEFT else n_k - n_q
    return [[j - i <= diagonal for j in range(n_k)] for i in range(n_q)]


def _reference_softmax(S: sp.Matrix, visible: list[list[bool]]) -> sp.Matrix:
    """Softmax of each row over its visible keys only, 0 elsewhere: the meaning of the mask."""
    return sp.Matrix(S.rows, S.cols, lambda i, j: sp.exp(S[i, j]) / sum(sp.exp(S[i, k]) for k in range(S.cols)
                                                                         if visible[i][k]) if visible[i][j] else 0)


def _statement_at(statement, S: sp.Matrix) -> sp.Matrix:
    """The stated weights a_ij at explicit N_q, N_k and symbolic scores."""
    n_q, n_k = S.shape
    rhs = statement.rhs.subs({nt.N_Q: n_q, nt.N_K: n_k})
    return sp.Matrix(n_q, n_k, lambda i, j: rhs.subs({nt.I0: i, nt.J0: j}).doit().replace(
        lambda e: isinstance(e, sp.Indexed) and e.base == nt.SCORES, lambda e: S[e.indices]))


def _causal(claim_id: str, align: str, mask: Mask | None, sizes: tuple[tuple[int, int], ...]) -> Derivation:
    build = mask or (lambda n_q, n_k: causal_mask(n_q, n_k, align))
    rule = "j ≤ i" if align == TOP_LEFT else "j ≤ i + N_k − N_q"
    pf = Proof(claim_id)
    pf.premise("definition", "PyTorch's documented mask: query i sees key j iff torch.ones(N_q, N_k).tril(diagonal) "
               "keeps (i, j), i.e. j − i ≤ diagonal; diagonal = 0 top-left, N_k − N_q bottom-right",
               sp.Symbol("visible(i, j)"), sp.Symbol("j − i ≤ diagonal"), kind=DEFINITION)
    pf.premise("exp(−∞) = 0", "a masked key contributes exp(s_ij − ∞) = 0 to numerator and denominator",
               sp.exp(-sp.oo), 0, kind=DEFINITION)
    pairs = [(q, k) for q in range(1, MAX_ENUMERATED + 1) for k in range(1, MAX_ENUMERATED + 1)]

    def mask_matches() -> tuple[bool, str]:
        for n_q, n_k in pairs:
            M, ref = build(n_q, n_k), tril_reference(n_q, n_k, align)
            wrong = [(i, j) for i in range(n_q) for j in range(n_k) if (M[i, j] == 0) != ref[i][j]]
            if wrong or any(M[i, j] not in (0, -sp.oo) for i in range(n_q) for j in range(n_k)):
                return False, f"N_q = {n_q}, N_k = {n_k}: the mask disagrees with the tril reference at {wrong[:4]}"
        return True, f"all {len(pairs)} shapes N_q, N_k ≤ {MAX_ENUMERATED} agree with the tril reference"

    masked_ok = pf.holds("enumeration", f"the mask is 0 exactly where the tril reference keeps (i, j), every "
                         f"N_q, N_k ≤ {MAX_ENUMERATED}", sp.Symbol("M_ij = 0"), sp.Symbol("visible(i, j)"),
                         mask_matches, "⟺")

    def statement_matches() -> tuple[bool, str]:
        piece, cond = pf.statement.rhs.args[0]
        last = next(iter(piece.atoms(sp.Sum))).limits[0][2]  # the denominator's upper index
        for n_q, n_k in pairs:
            if n_q > n_k:
                continue  # the claim assumes N_q ≤ N_k
            ref = tril_reference(n_q, n_k, align)
            at = {nt.N_Q: n_q, nt.N_K: n_k}
            for i in range(n_q):
                seen = [j for j in range(n_k) if bool(cond.subs({**at, nt.I0: i, nt.J0: j}))]
                summed = list(range(int(last.subs({**at, nt.I0: i})) + 1))
                want = [j for j in range(n_k) if ref[i][j]]
                if seen != want or summed != want:
                    return False, f"N_q = {n_q}, N_k = {n_k}, row {i}: statement keeps {seen}, sums {summed}; tril {want}"
        return True, f"the stated rule selects the tril reference's keys for every N_q ≤ N_k ≤ {MAX_ENUMERATED}"

    def stated_rule_is_tril() -> tuple[bool, str]:
        # Any sizes: the stated j ≤ L_i (and the denominator's k ≤ L_i) is tril's j − i ≤ diagonal.
        piece, cond = pf.statement.rhs.args[0]
        last = next(iter(piece.atoms(sp.Sum))).limits[0][2]
        diagonal = 0 if align == TOP_LEFT else nt.N_K - nt.N_Q
        same_cond = isinstance(cond, (sp.Le, sp.Ge)) and sp.expand(cond.gts - cond.lts - (last - nt.J0)) == 0
        return same_cond and sp.expand(last - nt.I0 - diagonal) == 0, \
            f"weights kept for j ≤ {last}, summed for k ≤ {last}: j − i ≤ {sp.expand(last - nt.I0)}; tril diagonal {diagonal}"

    general_ok = pf.holds("algebra", f"any sizes: the stated rule {rule} is the tril reference's j − i ≤ diagonal",
                          sp.Symbol(rule), sp.Symbol("j − i ≤ diagonal"), stated_rule_is_tril, "⟺")
    stated_ok = pf.holds("enumeration", f"the statement's rule {rule} (weights and the sum in the denominator) keeps "
                         f"exactly the tril reference's keys, N_q ≤ N_k ≤ {MAX_ENUMERATED}",
                         sp.Symbol(rule), sp.Symbol("visible(i, j)"), statement_matches, "⟺")
    softmax_ok = True
    for n_q, n_k in sizes:
        S = _matrix("s", n_q, n_k)
        ref = tril_reference(n_q, n_k, align)
        try:
            stated = _statement_at(pf.statement, S)
        except (IndexError, ValueError, TypeError):  # a statement that reaches outside the matrix fails below
            stated = None
        softmax_ok &= pf.equal("exp(−∞) = 0", f"N_q = {n_q}, N_k = {n_k}: the masked softmax equals the stated weights",
                               masked_softmax(S, build(n_q, n_k)), stated)
        softmax_ok &= pf.equal("exp(−∞) = 0", f"N_q = {n_q}, N_k = {n_k}: the stated weights equal the softmax over "
                               "the tril reference's keys", stated, _reference_softmax(S, ref))

        Q, K, V = _matrix("q", n_q, 1), _matrix("k", n_k, 1), _matrix("v", n_k, 1)
        O = masked_softmax(Q * K.T, build(n_q, n_k)) * V  # (n_q, 1)
        hidden = [(i, j) for i in range(n_q) for j in range(n_k) if not ref[i][j]]
        seen = [(i, j) for i in range(n_q) for j in range(n_k) if ref[i][j]]
        pf.equal("differentiation", f"N_q = {n_q}, N_k = {n_k}: ∂o_i/∂k_j = ∂o_i/∂v_j = 0 for every masked (i, j)",
                 [sp.diff(O[i], x) for i, j in hidden for x in (K[j], V[j])], [0] * (2 * len(hidden)))

        def visible_matter(O=O, seen=seen, V=V) -> tuple[bool, str]:
            # ∂o_i/∂v_j = P_ij > 0 for every visible key: the mask hides nothing it should show.
            point = {s: sp.Rational(k + 1, 7) for k, s in enumerate(sorted(O.free_symbols, key=str))}
            zero = [(i, j) for i, j in seen if sp.diff(O[i], V[j]).subs(point) == 0]
            return not zero, f"∂o_i/∂v_j ≠ 0 at a rational point for all {len(seen)} visible pairs" if not zero \
                else f"zero derivative at visible pairs {zero}"

        pf.holds("differentiation", f"N_q = {n_q}, N_k = {n_k}: every visible key does influence o_i",
                 sp.Symbol("∂o_i/∂v_j"), 0, visible_matter, "≠")
    pf.holds("exp(−∞) = 0 + enumeration", "row i of the masked softmax is the softmax over the keys the rule keeps: "
             "the mask and the statement select the tril reference's keys (all shapes ≤ 8) and masked keys add "
             "exp(−∞) = 0", sp.Symbol("softmax(S + M)_ij"), pf.statement.rhs,
             lambda: (masked_ok and general_ok and stated_ok and softmax_ok,
                     "the stated rule is tril's for any sizes; the mask is, for every shape ≤ 8; explicit softmax steps"),
             establishes=pf.statement)
    other = BOTTOM_RIGHT if align == TOP_LEFT else TOP_LEFT
    pf.holds("comparison of the rules", f"the {other} mask differs whenever N_q ≠ N_k and agrees when N_q = N_k "
             f"(N_q ≤ N_k ≤ {MAX_ENUMERATED})", causal_mask(2, 3, align), causal_mask(2, 3, other),
             lambda: all((causal_mask(q, k, align) == causal_mask(q, k, other)) == (q == k)
                         for k in range(1, MAX_ENUMERATED + 1) for q in range(1, k + 1)), "≠")
    return pf.finish(Result(mask_2x3=causal_mask(2, 3, align), mask_3x3=causal_mask(3, 3, align)))


def causal_mask_top_left(mask: Mask | None = None) -> Derivation:
    """PyTorch's ``is_causal``: query i sees keys j ≤ i. ``mask(n_q, n_k)`` may be replaced to be judged."""
    return _causal("causal-mask-top-left", TOP_LEFT, mask, ((3, 3), (2, 3)))


def causal_mask_bottom_right(mask: Mask | None = None) -> Derivation:
    """Query i of N_q sees keys j ≤ i + N_k − N_q. ``mask(n_q, n_k)`` may be replaced to be judged."""
    return _causal("causal-mask-bottom-right", BOTTOM_RIGHT, mask, ((2, 3),))
