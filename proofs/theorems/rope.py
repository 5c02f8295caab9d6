"""Rotary position embedding (RoPE): the score depends on the positions only through n − m.

RoPE (Su et al., RoFormer, 2021) rotates the i-th pair of components of a query at position m by
the angle m·θ_i, and of a key at position n by n·θ_i. Because rotations compose,
R(mθ)ᵀR(nθ) = R((n − m)θ), each pair's contribution to the score is a function of n − m, and so
is their sum over any number of pairs: the proof works on one symbolic pair i and the symbolic sum.
"""
from __future__ import annotations

import sympy as sp

from proofs.engine import DEFINITION, Derivation, Proof, Result, identity
from proofs.notation import I, KI, QI, ROPE_H, ROPE_M, ROPE_N, ROPE_T, ROPE_THETA, score_rope

M, N, T, H, THETA, Q, K = ROPE_M, ROPE_N, ROPE_T, ROPE_H, ROPE_THETA, QI, KI


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


def _angle_sums(expr):
    """Both sides expanded by the angle-addition formulas (cos(a − b) = cos a cos b + sin a sin b, …):
    the form in which the identity is polynomial, so the check is fast."""
    if isinstance(expr, sp.MatrixBase):
        return expr.applyfunc(_angle_sums)
    return sp.expand(sp.expand_trig(sp.expand(expr)))


def _same_sum(computed: sp.Sum, stated) -> tuple[bool, str]:
    """Both sums over the same range with identical summands (checked as an identity in i)."""
    if not isinstance(stated, sp.Sum) or stated.limits != computed.limits:
        return False, f"the stated side is not a sum over {computed.limits}: {stated}"
    return identity(_angle_sums(computed.function), _angle_sums(stated.function))


def rope_relative_position(*, pair_score=rotated_pair_score) -> Derivation:
    """⟨R_m q, R_n k⟩ = Σ_i q_iᵀ R((n − m)θ_i) k_i for every head dimension 2h, and so the score is
    unchanged when both positions shift by t. ``pair_score`` may replace the rotated term (to see a
    wrong embedding refused)."""
    pf = Proof("rope-relative-position")
    relative = pf.claimed(score_rope(M, N))  # the stated Σ_{i=1}^{h} q_iᵀ R((n − m)θ_i) k_i, written out
    matrix_form = sp.Sum(relative_pair_score(N - M), (I, 1, H))
    a, b = sp.symbols("a b", real=True)
    pf.premise("definition", "RoPE rotates pair i of a vector at position p by the angle p·θ_i; the score "
               "is the sum of the pairs' dot products", score_rope(M, N), sp.Sum(pair_score(M, N), (I, 1, H)),
               kind=DEFINITION)
    pf.equal("rotations compose", "R(a)ᵀR(b) = R(b − a): rotating back by a, then forward by b "
             "(angle-addition formulas)", rotation(a).T * rotation(b), rotation(b - a), where=_angle_sums)
    terms_equal = pf.equal("rotations compose (pair i)", "(R(mθ_i) q_i)·(R(nθ_i) k_i) = q_iᵀ R((n − m)θ_i) k_i "
                           "for a symbolic pair i (angle-addition formulas)", pair_score(M, N),
                           relative_pair_score(N - M), where=_angle_sums)
    stated = pf.holds("matrix form", "the stated sum is Σ_{i=1}^{h} q_iᵀ R((n − m)θ_i) k_i written out",
                      matrix_form, relative, lambda: _same_sum(matrix_form, relative))
    pf.holds("linearity of the sum", "equal terms for every i give equal sums over i = 1..h, for every h",
             sp.Sum(pair_score(M, N), (I, 1, H)), relative,
             lambda: (terms_equal and stated, "the summands are identical for every i (steps above)"
                      if terms_equal and stated else "a step above failed"), subject=score_rope(M, N))
    pf.equal("substitution", "at positions m + t, n + t the offset (n + t) − (m + t) is n − m again, so the "
             "score is the same sum", relative.subs({M: M + T, N: N + T}), pf.claimed(score_rope(M + T, N + T)),
             subject=score_rope(M + T, N + T))
    return pf.finish(Result(score=relative, pair_score=relative_pair_score(N - M), symbols=(M, N, I, Q, K, THETA)))
