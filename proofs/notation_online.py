"""The symbols the online-softmax claims are stated in (merge, monoid, FlashAttention-2's accumulator, lse).

A state is a tuple (m, l, o): a reference m, the rescaled sum l = Σ_j exp(s_j − m) and the output
o = Σ_j exp(s_j − m) v_j / l (one component of the value vectors: every component merges with the
same weights). A block b is known by its raw sums Z_b = Σ_{j∈b} exp(s_j) > 0 and U_b = Σ_{j∈b}
exp(s_j) v_j; its state under reference m is (m, e^{−m} Z_b, U_b / Z_b). The functions ``merge``,
``merge_at``, ``fa2_step``, ``normalise`` and ``lse`` are names; each theorem defines them by a
definition premise the checker rewrites, so the verdict lists what they are.
"""
from __future__ import annotations

import sympy as sp

from proofs import notation as nt

merge = nt.merge  # merge(X, Y): the merge of two states with the max reference
merge_at = sp.Function("merge_at")  # merge_at(X, Y, R): the merge with reference R
fa2_step = sp.Function("fa2_step")  # fa2_step((m, l, acc), m_new, Z, U): FlashAttention-2's update by one block
normalise = sp.Function("normalise")  # normalise((m, l, acc)) = acc / l
lse = nt.lse  # lse((m, l, o)) = m + log l

IDENTITY_STATE = nt.IDENTITY_STATE  # (−∞, 0, 0): the state of no keys


def state_symbols(name: str) -> tuple[sp.Symbol, sp.Symbol, sp.Symbol]:
    """(m, l, o) of a non-empty state: m real, l > 0, o real."""
    return (sp.Symbol(f"m_{name}", real=True), sp.Symbol(f"l_{name}", positive=True),
            sp.Symbol(f"o_{name}", real=True))


STATE_A, STATE_B, STATE_C = (sp.Tuple(*state_symbols(s)) for s in "ABC")


def block_state(z, u, m) -> sp.Tuple:
    """The state of a block with raw sums (Z, U) under reference m: (m, e^{−m} Z, U / Z)."""
    return sp.Tuple(m, sp.exp(-m) * z, u / z)


# Two blocks by their raw sums.
Z_A, Z_B = sp.symbols("Z_A Z_B", positive=True)
U_A, U_B = sp.symbols("U_A U_B", real=True)
M_A, M_B = sp.symbols("m_A m_B", real=True)

# N_B blocks: block b's reference m_b and raw sums Z_b, U_b; a prefix of N blocks under reference M.
N_BLOCKS, B_IDX = nt.N_BLOCKS, nt.B_IDX
Z_BLOCK, U_BLOCK = nt.Z_BLOCK, nt.U_BLOCK
M_BLOCK = sp.IndexedBase("m", real=True)
M_PREFIX, M_NEW = sp.symbols("M R", real=True)  # the prefix's reference; a new reference


def block(b) -> sp.Tuple:
    """Block b's state under its own reference m_b."""
    return block_state(Z_BLOCK[b], U_BLOCK[b], M_BLOCK[b])


def prefix_sum(x, n):
    return sp.Sum(x[B_IDX], (B_IDX, 1, n))


def prefix_state(m, n) -> sp.Tuple:
    """The state of blocks 1..n together under reference m: (m, e^{−m} Σ Z_b, Σ U_b / Σ Z_b)."""
    return block_state(prefix_sum(Z_BLOCK, n), prefix_sum(U_BLOCK, n), m)


def extended_state(m, n) -> sp.Tuple:
    """S_{n+1}(m) with Σ_{b≤n+1} x_b written Σ_{b≤n} x_b + x_{n+1} (a finite sum's own recursion)."""
    return block_state(prefix_sum(Z_BLOCK, n) + Z_BLOCK[n + 1], prefix_sum(U_BLOCK, n) + U_BLOCK[n + 1], m)


def prefix_accumulator(m, n) -> sp.Tuple:
    """FlashAttention-2's (m, l, acc) after blocks 1..n with running max m: (m, e^{−m} Σ Z_b, e^{−m} Σ U_b)."""
    return sp.Tuple(m, sp.exp(-m) * prefix_sum(Z_BLOCK, n), sp.exp(-m) * prefix_sum(U_BLOCK, n))


# One block of any size n from its scores s_j and values v_j (one component).
SCORE = sp.IndexedBase("s", real=True)
VALUE = sp.IndexedBase("v", real=True)
J_IDX = sp.Symbol("j", integer=True, positive=True)
N_SIZE = sp.Symbol("n_B", integer=True, positive=True)
M_REF = sp.Symbol("m", real=True)


def block_sum(body):
    return sp.Sum(body, (J_IDX, 1, N_SIZE))


def _eq(lhs, rhs):
    return sp.Eq(lhs, rhs, evaluate=False)


def merge_conjuncts() -> tuple:
    """online-softmax-merge, in order: a block of any size in raw sums; N = 1; N → N + 1 (max reference);
    N → N + 1 (any reference R)."""
    j, m = J_IDX, M_REF
    weight = sp.exp(SCORE[j] - m)
    raw_z, raw_u = block_sum(sp.exp(SCORE[j])), block_sum(sp.exp(SCORE[j]) * VALUE[j])
    N, M, R = N_BLOCKS, M_PREFIX, M_NEW
    return (_eq(sp.Tuple(m, block_sum(weight), block_sum(weight * VALUE[j]) / block_sum(weight)),
                block_state(raw_z, raw_u, m)),
            _eq(merge(IDENTITY_STATE, block(1)), prefix_state(M_BLOCK[1], 1)),
            _eq(merge(prefix_state(M, N), block(N + 1)), extended_state(sp.Max(M, M_BLOCK[N + 1]), N)),
            _eq(merge_at(prefix_state(M, N), block(N + 1), R), extended_state(R, N)))


def monoid_conjuncts() -> tuple:
    """online-softmax-monoid, in order: exact on two blocks; associative; commutative; left and right identity."""
    A, B, C, e = STATE_A, STATE_B, STATE_C, IDENTITY_STATE
    return (_eq(merge(block_state(Z_A, U_A, M_A), block_state(Z_B, U_B, M_B)),
                block_state(Z_A + Z_B, U_A + U_B, sp.Max(M_A, M_B))),
            _eq(merge(merge(A, B), C), merge(A, merge(B, C))), _eq(merge(A, B), merge(B, A)),
            _eq(merge(e, A), A), _eq(merge(A, e), A))


def unnormalised_conjuncts() -> tuple:
    """online-softmax-unnormalised, in order: the first block; block N + 1 under any new running max R;
    acc / l after N blocks."""
    N, M, R = N_BLOCKS, M_PREFIX, M_NEW
    first = sp.Tuple(M_BLOCK[1], sp.exp(-M_BLOCK[1]) * Z_BLOCK[1], sp.exp(-M_BLOCK[1]) * U_BLOCK[1])
    extended = sp.Tuple(R, sp.exp(-R) * (prefix_sum(Z_BLOCK, N) + Z_BLOCK[N + 1]),
                        sp.exp(-R) * (prefix_sum(U_BLOCK, N) + U_BLOCK[N + 1]))
    return (_eq(fa2_step(IDENTITY_STATE, M_BLOCK[1], Z_BLOCK[1], U_BLOCK[1]), first),
            _eq(fa2_step(prefix_accumulator(M, N), R, Z_BLOCK[N + 1], U_BLOCK[N + 1]), extended),
            _eq(normalise(prefix_accumulator(M, N)), prefix_sum(U_BLOCK, N) / prefix_sum(Z_BLOCK, N)))


L_SUM = nt.L_SUM  # l > 0
M_BASE2 = nt.M_BASE2


def logsumexp_conjuncts() -> tuple:
    """logsumexp-merge, in order: m + log l = log Σ_j e^{s_j} for a block of any size; lse of a merge;
    a base-2 state's natural lse."""
    j, m = J_IDX, M_REF
    return (_eq(m + sp.log(block_sum(sp.exp(SCORE[j] - m))), sp.log(block_sum(sp.exp(SCORE[j])))),
            _eq(lse(merge(STATE_A, STATE_B)), sp.log(sp.exp(lse(STATE_A)) + sp.exp(lse(STATE_B)))),
            _eq((M_BASE2 + sp.log(L_SUM, 2)) * sp.log(2), M_BASE2 * sp.log(2) + sp.log(L_SUM)))
