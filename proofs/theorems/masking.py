"""Causal masking, in its two alignments.

Top-left (PyTorch's ``is_causal``): query i sees keys j ≤ i. Bottom-right (FlashAttention ≥ 2.1,
the alignment for a query block at the end of a longer key sequence): query i of N_q sees keys
j ≤ i + N_k − N_q. They coincide exactly when N_q = N_k. Indices here are 0-based; both rules
read the same 1-based.

The theorems prove, for symbolic N_q ≤ N_k and a symbolic row i, that the implemented rule is
PyTorch's documented ``torch.ones(N_q, N_k).tril(diagonal)`` and that row i of the masked softmax is
the softmax over the keys it keeps.
"""
from __future__ import annotations

from typing import Callable

import sympy as sp

from proofs import notation as nt
from proofs.engine import Derivation, Proof, Result
from proofs.validate import as_dimension

TOP_LEFT = "top-left"
BOTTOM_RIGHT = "bottom-right"
ALIGNMENTS = (TOP_LEFT, BOTTOM_RIGHT)

# (i, j, N_q, N_k) -> "query i sees key j", a SymPy relation in symbolic or explicit indices and sizes.
Rule = Callable[[sp.Expr, sp.Expr, sp.Expr, sp.Expr], sp.Basic]

visible = sp.Function("visible")  # exp(M_ij) of the implemented mask: 1 where M_ij = 0, 0 where M_ij = −∞
tril = sp.Function("tril")  # torch.ones(N_q, N_k).tril(diagonal)[i, j]
step = sp.Function("step")  # the unit step on integers: 1 for x ≥ 0, 0 for x < 0
SCORES = sp.IndexedBase("s", real=True)  # the scores s_ij
_X = sp.Symbol("x", integer=True)
_Y = sp.Symbol("y", real=True)
EXCESS = sp.Symbol("Delta", integer=True, nonnegative=True)  # N_k − N_q ≥ 0
REST = sp.Symbol("R", integer=True, nonnegative=True)  # N_q − 1 − i ≥ 0: queries after row i


def _align(align: str) -> str:
    if align not in ALIGNMENTS:
        raise ValueError(f"align must be one of {ALIGNMENTS}, got {align!r}")
    return align


def _last(i, n_q, n_k, align: str):
    """The last key query i may see, before clamping to the keys there are: i, or i + N_k − N_q."""
    return i if _align(align) == TOP_LEFT else i + n_k - n_q


def visibility_rule(align: str) -> Rule:
    """The implemented rule of ``align``: query i sees key j exactly when j ≤ the last visible key."""
    _align(align)
    return lambda i, j, n_q, n_k: sp.Le(j, _last(i, n_q, n_k, align))


def last_visible_key(i: int, n_q: int, n_k: int, align: str = TOP_LEFT) -> int:
    """The last key query i may see; −1 when it sees none (bottom-right with N_q > N_k)."""
    n_q, n_k = int(as_dimension(n_q, "n_q")), int(as_dimension(n_k, "n_k"))
    if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n_q:
        raise ValueError(f"i must be a query index in 0..{n_q - 1}, got {i!r}")
    return max(min(int(_last(i, n_q, n_k, align)), n_k - 1), -1)


def causal_mask(n_q: int, n_k: int, align: str = TOP_LEFT) -> sp.Matrix:
    """Additive mask: 0 where query i sees key j, −∞ where it does not."""
    n_q, n_k = int(as_dimension(n_q, "n_q")), int(as_dimension(n_k, "n_k"))
    rule = visibility_rule(align)
    return sp.Matrix([[0 if rule(i, j, n_q, n_k) else -sp.oo for j in range(n_k)] for i in range(n_q)])


def masked_softmax(S: sp.Matrix, mask: sp.Matrix) -> sp.Matrix:
    """Row-wise softmax of S + mask; exp(−∞) = 0 drops the masked keys."""
    E = sp.Matrix(S.rows, S.cols, lambda i, j: sp.exp(S[i, j] + mask[i, j]))
    return sp.Matrix(S.rows, S.cols, lambda i, j: E[i, j] / sum(E.row(i)))


def tril_reference(n_q: int, n_k: int, align: str) -> list[list[bool]]:
    """Which keys each query sees, from PyTorch's documented form, written independently of this module.

    ``torch.ones(L, S).tril(diagonal)`` keeps entry (i, j) exactly when j − i ≤ diagonal; PyTorch's
    ``is_causal`` (top-left) uses diagonal = 0, the bottom-right alignment diagonal = S − L.
    """
    diagonal = _diagonal(n_q, n_k, align)
    return [[j - i <= diagonal for j in range(n_k)] for i in range(n_q)]


def _diagonal(n_q, n_k, align: str):
    return 0 if _align(align) == TOP_LEFT else n_k - n_q


def _indicator(condition) -> sp.Expr:
    """[condition] as 0/1 in integers: step(b − a) for a ≤ b, step(b − a − 1) for a < b (and mirrored), so two
    rules that keep the same keys meet in one form; any other condition as a Piecewise."""
    if isinstance(condition, (sp.Le, sp.Lt, sp.Ge, sp.Gt)):
        small, big = (condition.lhs, condition.rhs) if isinstance(condition, (sp.Le, sp.Lt)) else \
            (condition.rhs, condition.lhs)
        return step(big - small - (1 if isinstance(condition, (sp.Lt, sp.Gt)) else 0))
    return sp.Piecewise((1, condition), (0, True))


def _causal(claim_id: str, align: str, rule: Rule | None) -> Derivation:
    rule = rule or visibility_rule(align)
    i, j, s, a = nt.I0, nt.J0, SCORES, nt.WEIGHTS
    pf = Proof(claim_id)
    weights = pf.stated(a[i, j])
    same_rule = pf.stated(visible(i, j))
    piece, _ = weights.rhs.args  # (exp(s_ij)/Σ_{k ≤ L} exp(s_ik), j ≤ L), (0, True)
    kept_sum = next(iter(piece.expr.atoms(sp.Sum)))  # Σ_{k=0}^{L} exp(s_ik), as stated
    k = kept_sum.variables[0]  # the statement's index (one name, one symbol)
    full_sum = sp.Sum(sp.exp(s[i, k]) * visible(i, k), (k, 0, nt.N_K - 1))
    softmax = pf.define(a[i, j], sp.exp(s[i, j]) * visible(i, j) / full_sum,
                        "the masked softmax softmax(S + M)_ij over the N_k keys, exp(s + M) = exp(s)·exp(M)",
                        forall=[i, j])
    implemented = pf.define(visible(i, j), _indicator(rule(i, j, nt.N_Q, nt.N_K)),
                            "exp(M_ij) of the implemented mask: 1 where M_ij = 0 (query i sees key j), "
                            "exp(−∞) = 0 where M_ij = −∞", forall=[i, j])
    pytorch = pf.define(tril(i, j), step(_diagonal(nt.N_Q, nt.N_K, align) - (j - i)),
                        "PyTorch's documented mask: torch.ones(N_q, N_k).tril(diagonal) keeps (i, j) iff "
                        f"j − i ≤ diagonal; diagonal = {_diagonal(nt.N_Q, nt.N_K, align)}", forall=[i, j])
    unit = pf.define(step(_X), sp.Piecewise((1, sp.Ge(_X, 0)), (0, True)), "the unit step [x ≥ 0]", forall=[_X])
    selects = pf.identity(_Y * sp.Piecewise((1, sp.Ge(_X, 0)), (0, True)), sp.Piecewise((_Y, sp.Ge(_X, 0)), (0, True)),
                          "y·[x ≥ 0] is y where x ≥ 0, else 0", forall=[_Y, _X], label="indicator")
    keys = pf.assume(sp.Eq(nt.N_K, nt.N_Q + EXCESS, evaluate=False), "N_q ≤ N_k: N_k = N_q + Δ, Δ ≥ 0")
    row = pf.assume(sp.Eq(nt.N_Q, i + 1 + REST, evaluate=False), "i is a query index: N_q = i + 1 + R, R ≥ 0")
    pf.rewrite(same_rule.lhs, same_rule.rhs, [implemented, pytorch], "the implemented rule keeps exactly the "
               "keys torch.ones(N_q, N_k).tril(diagonal) keeps, any N_q, N_k", label="algebra")
    kept = pf.truncation(full_sum, kept_sum, [implemented, unit, keys, row], "the masked keys add exp(−∞) = 0: the sum "
                         "over all N_k keys is the sum over the keys k ≤ L row i keeps (L ≤ N_k − 1)",
                         label="exp(−∞) = 0")
    pf.rewrite(weights.lhs, weights.rhs, [softmax, kept, implemented, unit, selects, keys], "row i of the masked softmax is the "
               "softmax over the keys the rule keeps, and 0 beyond", label="masked softmax")
    return pf.finish(Result(mask_2x3=causal_mask(2, 3, align), mask_3x3=causal_mask(3, 3, align)))


def causal_mask_top_left(rule: Rule | None = None) -> Derivation:
    """PyTorch's ``is_causal``: query i sees keys j ≤ i. ``rule(i, j, N_q, N_k)`` may be replaced to be judged."""
    return _causal("causal-mask-top-left", TOP_LEFT, rule)


def causal_mask_bottom_right(rule: Rule | None = None) -> Derivation:
    """Query i of N_q sees keys j ≤ i + N_k − N_q. ``rule(i, j, N_q, N_k)`` may be replaced to be judged."""
    return _causal("causal-mask-bottom-right", BOTTOM_RIGHT, rule)
