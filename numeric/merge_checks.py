"""Floating-point confirmations of the online-softmax claims: the merge, its monoid laws, the
unnormalised stream and the logsumexp merge.

Same method as ``numeric.softmax_checks``: worst error on random cases (masked blocks, ±1e4
logits) against a stated first-order rounding bound, in units of u = 2⁻⁵³.
"""
from __future__ import annotations

import time

import numpy as np

from numeric import arguments, derived
from numeric import softmax as sm
from numeric.evidence import Confirmation, worst_case
from numeric.registry import confirms
from numeric.softmax_checks import U


def random_attention_case(rng: np.random.Generator, max_n: int = 96):
    """Scores (n_q, n), values (n, D) and random block cuts, with masked blocks and extremes."""
    n_q, n, d = int(rng.integers(1, 5)), int(rng.integers(1, max_n + 1)), int(rng.integers(1, 9))
    scale = rng.choice([1.0, 30.0, 1e4])
    s = rng.normal(size=(n_q, n)) * scale  # (n_q, n)
    v = rng.normal(size=(n, d))  # (n, D)
    cuts = np.sort(rng.choice(np.arange(1, n), size=min(n - 1, int(rng.integers(0, 8))), replace=False)) if n > 1 else []
    blocks = sm.partition(n, cuts=list(cuts))
    for a, b in blocks:
        if rng.random() < 0.3:
            s[:, a:b] = -np.inf  # a fully masked block
    if rng.random() < 0.2:
        s[0] = -np.inf  # a fully masked row: no softmax, zeros by convention
    return s, v, list(cuts)


def merge_error_bound(n: int, n_blocks: int, v: np.ndarray) -> float:
    """Each weight passes ≤ n_blocks rescalings (subtract, exp, multiply, add: 4 roundings each)
    and an n-term sum, in both computations; the output errs by that relative amount of max|v|."""
    return 2 * (4 * n_blocks + n + 8) * U * max(float(np.max(np.abs(v))), 1.0)


@confirms("online-softmax-merge")
def online_softmax_merge(*, n_cases=300, seed=0, alpha=0.001, merge=None) -> Confirmation:
    """Blockwise attention (the derived merge over random block partitions) against direct attention."""
    started = time.perf_counter()
    rng = np.random.default_rng(arguments.seed(seed))
    n_cases = arguments.positive_int(n_cases, "n_cases")
    checks = []
    for _ in range(n_cases):
        s, v, cuts = random_attention_case(rng)
        direct = sm.attention(s, v)
        blocked = _blockwise(s, v, cuts, merge)
        err = np.max(np.abs(blocked - direct)) if np.all(np.isfinite(blocked)) else np.inf
        checks.append((err, merge_error_bound(s.shape[1], len(cuts) + 1, v)))
    return worst_case("online-softmax-merge", f"blockwise (derived merge) = direct attention on {n_cases} random "
                    "partitions with masked blocks and ±1e4 logits, no NaN", checks, alpha, started)


def _blockwise(s, v, cuts, merge=None):
    if merge is None:
        return sm.blockwise_attention(s, v, cuts=cuts)
    state = None
    for a, b in sm.partition(s.shape[-1], cuts=cuts):
        blk = sm.block_state(s[..., a:b], v[a:b])
        state = blk if state is None else merge(state, blk)
    return state[2]


def _random_state(rng, shape=(3, 1), d=4):
    m = rng.normal(size=shape) * rng.choice([1.0, 50.0])
    l = rng.uniform(0.5, 10.0, size=shape)
    o = rng.normal(size=shape[:-1] + (d,))
    return m, l, o


@confirms("online-softmax-monoid")
def online_softmax_monoid(*, n_cases=300, seed=0, alpha=0.001) -> Confirmation:
    started = time.perf_counter()
    rng = np.random.default_rng(arguments.seed(seed))
    n_cases = arguments.positive_int(n_cases, "n_cases")
    identity = (np.full((3, 1), -np.inf), np.zeros((3, 1)), np.zeros((3, 4)))
    checks = []
    for _ in range(n_cases):
        A, B, C = (_random_state(rng) for _ in range(3))
        left, right = sm.merge(sm.merge(A, B), C), sm.merge(A, sm.merge(B, C))
        swapped = sm.merge(B, A)
        ab = sm.merge(A, B)
        with_id = sm.merge(identity, A), sm.merge(A, identity)
        # Relative error in l and o after two merges: a handful of roundings per quantity.
        err = max(np.max(np.abs(left[1] - right[1]) / left[1]), np.max(np.abs(left[2] - right[2])),
                  np.max(np.abs(ab[2] - swapped[2])), np.max(np.abs(ab[1] - swapped[1]) / ab[1]),
                  *(np.max(np.abs(x[2] - A[2])) + np.max(np.abs(x[1] - A[1]) / A[1]) for x in with_id))
        checks.append((err, 32 * U * max(1.0, float(np.max(np.abs(np.concatenate([A[2], B[2], C[2]])))))))
    return worst_case("online-softmax-monoid", f"associativity, commutativity and identity (−∞, 0, 0) of the merge on "
                    f"{n_cases} random state triples (bound 32u·max|o|)", checks, alpha, started)


def unnormalised_attention(scores, values, block_size: int) -> np.ndarray:
    """FlashAttention-2's loop: running max m, running sum l, unnormalised acc; divide once at the end."""
    s, v = np.asarray(scores, dtype=np.float64), np.asarray(values, dtype=np.float64)
    m = np.full(s.shape[:-1] + (1,), -np.inf)  # (..., 1)
    l = np.zeros_like(m)  # (..., 1)
    acc = np.zeros(s.shape[:-1] + (v.shape[-1],))  # (..., D)
    for a, b in sm.partition(s.shape[-1], block_size):
        m_new = np.maximum(m, np.max(s[..., a:b], axis=-1, keepdims=True))
        ref = np.where(np.isneginf(m_new), 0.0, m_new)
        alpha = np.exp(m - ref)  # rescales what was accumulated under the old max
        p = np.exp(s[..., a:b] - ref)  # (..., b)
        l = alpha * l + p.sum(axis=-1, keepdims=True)
        acc = alpha * acc + p @ v[a:b]
        m = m_new
    return np.divide(acc, l, out=np.zeros_like(acc), where=l > 0)


@confirms("online-softmax-unnormalised")
def online_softmax_unnormalised(*, n_cases=300, seed=0, alpha=0.001) -> Confirmation:
    started = time.perf_counter()
    rng = np.random.default_rng(arguments.seed(seed))
    n_cases = arguments.positive_int(n_cases, "n_cases")
    checks = []
    for _ in range(n_cases):
        s, v, _cuts = random_attention_case(rng)
        block = int(rng.integers(1, s.shape[1] + 1))
        out_ = unnormalised_attention(s, v, block)
        err = np.max(np.abs(out_ - sm.attention(s, v))) if np.all(np.isfinite(out_)) else np.inf
        checks.append((err, merge_error_bound(s.shape[1], -(-s.shape[1] // block), v)))
    return worst_case("online-softmax-unnormalised", f"running max / sum / unnormalised accumulator = direct attention "
                    f"on {n_cases} random cases, no NaN", checks, alpha, started)


@confirms("logsumexp-merge")
def logsumexp_merge(*, n_cases=300, seed=0, alpha=0.001) -> Confirmation:
    """lse of a union = the derived log(e^{lse₁} + e^{lse₂}), and = m + log l of the merged state."""
    started = time.perf_counter()
    rng = np.random.default_rng(arguments.seed(seed))
    n_cases = arguments.positive_int(n_cases, "n_cases")
    merged = derived.logsumexp_merged()
    checks = []
    for _ in range(n_cases):
        n = int(rng.integers(2, 64))
        s = rng.normal(size=n) * rng.choice([1.0, 30.0, 100.0])  # |lse| < 700: e^{lse} stays finite
        cut = int(rng.integers(1, n))
        lse1, lse2, whole = sm.logsumexp(s[:cut]), sm.logsumexp(s[cut:]), sm.logsumexp(s)
        st = sm.merge(sm.block_state(s[:cut], np.zeros((cut, 1))), sm.block_state(s[cut:], np.zeros((n - cut, 1))))
        via_state = float(st[0][0] + np.log(st[1][0]))
        err = max(abs(merged(lse1, lse2) - whole), abs(via_state - whole))
        # log and exp each add ≤ u relative; exp(lse) errs by u·|lse| relative, so log of it by u·|lse|.
        checks.append((err, 4 * (n + 4) * U * max(1.0, abs(whole))))
    return worst_case("logsumexp-merge", f"lse of a union = log(e^lse₁ + e^lse₂) = m + log l on {n_cases} random splits",
                    checks, alpha, started)


