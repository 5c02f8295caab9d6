"""Rotary position embedding (RoPE): the score depends on the positions only through n − m.

RoPE (Su et al., RoFormer, 2021) rotates the i-th pair of components of a query at position m by
the angle m·θ_i, and of a key at position n by n·θ_i. Because rotations compose,
R(α)ᵀR(β) = R(β − α), each pair's contribution to the score is a function of n − m, and so
is their sum over any number of pairs: the proof works on one symbolic pair i and the symbolic sum.
"""
from __future__ import annotations

from typing import Callable

import sympy as sp

from proofs.engine import Derivation, Proof, Result
from proofs.notation import I, KI, QI, ROPE_H, ROPE_M, ROPE_N, ROPE_T, ROPE_THETA, score_rope

M, N, T, H, THETA, Q, K = ROPE_M, ROPE_N, ROPE_T, ROPE_H, ROPE_THETA, QI, KI

ALPHA, BETA = sp.symbols("alpha beta", real=True)  # the two rotation angles of one pair
POS_A, POS_B = sp.symbols("a b", integer=True)  # a query's and a key's position
rotated_pair = sp.Function("rot_pair")  # pair i's term at the angles (α, β)
position_pair = sp.Function("pos_pair")  # pair i's term at the positions (a, b)

PairScore = Callable[[sp.Expr, sp.Expr], sp.Expr]  # (α, β) -> pair I's term at those angles


def rotation(angle) -> sp.Matrix:
    """The 2×2 rotation by ``angle``."""
    return sp.Matrix([[sp.cos(angle), -sp.sin(angle)], [sp.sin(angle), sp.cos(angle)]])


def _pair(x: sp.IndexedBase) -> sp.Matrix:
    return sp.Matrix([x[2 * I - 1], x[2 * I]])


def rotated_pair_score(alpha, beta) -> sp.Expr:
    """Pair i's term of ⟨R q, R k⟩ with the query pair rotated by α, the key pair by β:
    (R(α) q_i)·(R(β) k_i)."""
    return (rotation(alpha) * _pair(Q)).dot(rotation(beta) * _pair(K))


def relative_pair_score(angle) -> sp.Expr:
    """q_iᵀ R(angle) k_i written out: (q_{2i−1}k_{2i−1} + q_{2i}k_{2i}) cos(angle) +
    (q_{2i}k_{2i−1} − q_{2i−1}k_{2i}) sin(angle), the catalogue's summand."""
    q1, q2, k1, k2 = Q[2 * I - 1], Q[2 * I], K[2 * I - 1], K[2 * I]
    return (q1 * k1 + q2 * k2) * sp.cos(angle) + (q2 * k1 - q1 * k2) * sp.sin(angle)


def rope_relative_position(*, pair_score: PairScore = rotated_pair_score) -> Derivation:
    """⟨R_m q, R_n k⟩ = Σ_i q_iᵀ R((n − m)θ_i) k_i for every head dimension 2h, and so the score is
    unchanged when both positions shift by t. ``pair_score(α, β)`` may replace the rotated term (to see a
    wrong embedding refused)."""
    pf = Proof("rope-relative-position")
    relative = pf.claimed(score_rope(M, N))  # the stated Σ_{i=1}^{h} q_iᵀ R((n − m)θ_i) k_i, written out
    by_positions = pf.define(score_rope(POS_A, POS_B), sp.Sum(position_pair(I, POS_A, POS_B), (I, 1, H)),
                             "RoPE's score of a query at position a and a key at position b: the sum of the "
                             "pairs' terms", forall=[POS_A, POS_B])
    at_angles = pf.define(position_pair(I, POS_A, POS_B), rotated_pair(I, POS_A * THETA[I], POS_B * THETA[I]),
                          "pair i of a vector at position p is rotated by the angle p·θ_i", forall=[I, POS_A, POS_B])
    rotated = pf.define(rotated_pair(I, ALPHA, BETA), pair_score(ALPHA, BETA),
                        "pair i's term: (R(α) q_i)·(R(β) k_i)", forall=[I, ALPHA, BETA])
    compose = pf.rewrite(rotated_pair(I, ALPHA, BETA), relative_pair_score(BETA - ALPHA), [rotated],
                         "rotations compose: R(α)ᵀR(β) = R(β − α) (angle-difference formulas), for every "
                         "pair i and all angles", forall=[I, ALPHA, BETA], label="rotations compose (pair i)")
    offset = pf.rewrite(position_pair(I, POS_A, POS_B), relative_pair_score((POS_B - POS_A) * THETA[I]),
                        [at_angles, compose], "at positions a, b the angle is bθ_i − aθ_i = (b − a)θ_i",
                        forall=[I, POS_A, POS_B], label="angles of positions")
    pf.rewrite(score_rope(M, N), relative, [by_positions, offset],
               "each pair's term depends on n − m only, so their sum over i = 1..h does, for every h",
               label="sum of the pairs")
    pf.rewrite(score_rope(M + T, N + T), pf.claimed(score_rope(M + T, N + T)), [by_positions, offset],
               "at positions m + t, n + t the offset (n + t) − (m + t) is n − m again", label="shift")
    return pf.finish(Result(score=relative, pair_score=relative_pair_score((N - M) * THETA[I]),
                            symbols=(M, N, I, Q, K, THETA)))
