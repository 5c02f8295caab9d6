"""Rotary position embedding (RoPE): the score depends on the positions only through m − n.

RoPE (Su et al., RoFormer, 2021) rotates the i-th pair of components of a query at position m by
the angle m·θ_i, and of a key at position n by n·θ_i. Because rotations compose,
R(mθ)ᵀR(nθ) = R((n − m)θ), each pair's contribution to the score is a function of n − m, and so
is their sum over any number of pairs: the proof works on one symbolic pair i and the symbolic sum.
"""
from __future__ import annotations

import sympy as sp

from proofs.engine import Derivation, Proof, Result

M, N, T = sp.symbols("m n t", integer=True)  # query position, key position, a common shift
H = sp.Symbol("h", integer=True, positive=True)  # pairs of components: head dimension d_k = 2h
I = sp.Symbol("i", integer=True, positive=True)
Q, K, THETA = sp.IndexedBase("q"), sp.IndexedBase("k"), sp.IndexedBase("theta")
SCORE = sp.Function("s_RoPE")  # s(m, n) = ⟨R_m q, R_n k⟩


def rotation(angle) -> sp.Matrix:
    """The 2×2 rotation by ``angle``."""
    return sp.Matrix([[sp.cos(angle), -sp.sin(angle)], [sp.sin(angle), sp.cos(angle)]])


def _pair(x: sp.IndexedBase) -> sp.Matrix:
    return sp.Matrix([x[2 * I - 1], x[2 * I]])


def rotated_pair_score(m, n) -> sp.Expr:
    """Pair i's term of ⟨R_m q, R_n k⟩: (R(mθ_i) q_i)·(R(nθ_i) k_i)."""
    return (rotation(m * THETA[I]) * _pair(Q)).dot(rotation(n * THETA[I]) * _pair(K))


def relative_pair_score(offset) -> sp.Expr:
    """q_iᵀ R(offset·θ_i) k_i: pair i's term written through the offset n − m alone."""
    return (_pair(Q).T * rotation(offset * THETA[I]) * _pair(K))[0]


def rope_relative_position(*, pair_score=rotated_pair_score) -> Derivation:
    """⟨R_m q, R_n k⟩ = Σ_i q_iᵀ R((n − m)θ_i) k_i for every head dimension 2h, and so the score is
    unchanged when both positions shift by t. ``pair_score`` may replace the rotated term (to see a
    wrong embedding refused)."""
    relative = sp.Sum(relative_pair_score(N - M), (I, 1, H))
    pf = Proof(
        "rope-relative-position",
        "RoPE scores depend on relative position only",
        sp.And(sp.Eq(SCORE(M, N), relative), sp.Eq(SCORE(M + T, N + T), relative)),
        ["pair i of q and of k rotated by the angles mθ_i and nθ_i", "any frequencies θ_i, any h ≥ 1"],
    )
    a, b = sp.symbols("a b", real=True)
    pf.premise("definition", "RoPE rotates pair i of a vector at position p by the angle p·θ_i; the score "
               "is the sum of the pairs' dot products", SCORE(M, N),
               sp.Sum(pair_score(M, N), (I, 1, H)))
    pf.equal("rotations compose", "R(a)ᵀR(b) = R(b − a): rotating back by a, then forward by b",
             sp.simplify(rotation(a).T * rotation(b)), rotation(b - a))
    terms_equal = pf.equal("rotations compose (pair i)", "(R(mθ_i) q_i)·(R(nθ_i) k_i) = q_iᵀ R((n − m)θ_i) k_i "
                           "for a symbolic pair i", pair_score(M, N), relative_pair_score(N - M))
    pf.holds("linearity of the sum", "equal terms for every i (the step before) give equal sums over "
             "i = 1..h, for every h", SCORE(M, N), relative,
             lambda: (terms_equal, "the summands are identical for every i" if terms_equal else
                      "the summands differ (previous step)"))
    pf.equal("substitution", "shifting both positions by t leaves n − m, and so every term, unchanged: "
             "s(m + t, n + t) is the same sum", relative.subs({M: M + T, N: N + T}).doit(), relative)
    return pf.finish(Result(score=relative, pair_score=relative_pair_score(N - M), symbols=(M, N, I, Q, K, THETA)))
