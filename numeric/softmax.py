"""NumPy softmax, its Jacobian, the online-softmax merge and blockwise attention.

Conventions: scores (..., n) with −∞ for masked entries. A row whose every score is −∞ has no
softmax; it comes back as zeros (FlashAttention's convention), never as NaN.
"""
from __future__ import annotations

import numpy as np

from numeric import derived


def _safe_max(s: np.ndarray, axis=-1, keepdims=True) -> np.ndarray:
    """Row max, with 0 in place of −∞ so that s − max never computes −∞ − (−∞)."""
    m = np.max(s, axis=axis, keepdims=keepdims)
    return np.where(np.isneginf(m), 0.0, m)


def softmax(scores, axis: int = -1) -> np.ndarray:
    s = np.asarray(scores, dtype=np.float64)
    e = np.exp(s - _safe_max(s, axis))
    total = e.sum(axis=axis, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def logsumexp(scores, axis: int = -1) -> np.ndarray:
    s = np.asarray(scores, dtype=np.float64)
    m = _safe_max(s, axis)
    total = np.exp(s - m).sum(axis=axis, keepdims=True)
    with np.errstate(divide="ignore"):  # an empty row has log-sum-exp −∞
        return np.squeeze(m + np.log(total), axis)


def jacobian(weights) -> np.ndarray:
    """∂a/∂z for softmax weights a (..., n) → (..., n, n), from the derived entry a_i(δ_ij − a_j)."""
    a = np.asarray(weights, dtype=np.float64)
    n = a.shape[-1]
    return derived.jacobian_entry()(a[..., :, None], a[..., None, :], np.eye(n))  # (..., n, n)


def block_state(scores, values) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """State (m, l, o) of one key block: scores (..., b), values (b, D) → m, l (..., 1), o (..., D).

    An all-masked block is the merge identity (−∞, 0, 0)."""
    s = np.asarray(scores, dtype=np.float64)
    m = np.max(s, axis=-1, keepdims=True)  # (..., 1)
    p = np.exp(s - _safe_max(s))  # (..., b)
    l = p.sum(axis=-1, keepdims=True)  # (..., 1)
    o = np.divide(p @ values, l, out=np.zeros(s.shape[:-1] + (np.shape(values)[-1],)), where=l > 0)  # (..., D)
    return m, l, o


def merge(state1, state2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Merge two block states with the derived rule; empty states are handled without NaN."""
    (m1, l1, o1), (m2, l2, o2) = state1, state2
    m = np.maximum(m1, m2)
    ref = np.where(np.isneginf(m), 0.0, m)  # any reference is exact; a finite one avoids −∞ − (−∞)
    l_of, o_of = derived.merge_with_reference()
    l = l_of(m1, l1, o1, m2, l2, o2, ref)
    with np.errstate(invalid="ignore", divide="ignore"):
        o = o_of(m1, l1, o1, m2, l2, o2, ref)
    o = np.where(l > 0, o, 0.0)  # both empty: the merge stays the identity
    return m, l, o


def partition(n: int, block_size: int | None = None, cuts=None) -> list[tuple[int, int]]:
    """Key blocks [(start, stop)]: fixed ``block_size`` or explicit increasing ``cuts``."""
    edges = [0, *cuts, n] if cuts is not None else [*range(0, n, block_size), n]
    return [(a, b) for a, b in zip(edges, edges[1:]) if b > a]


def attention(scores, values) -> np.ndarray:
    """Direct softmax attention: softmax(scores) @ values, scores (..., n), values (n, D)."""
    return softmax(scores) @ np.asarray(values, dtype=np.float64)


def blockwise_attention(scores, values, block_size: int | None = None, cuts=None) -> np.ndarray:
    """Attention over key blocks folded with the derived merge (online softmax)."""
    s = np.asarray(scores, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    state = None
    for a, b in partition(s.shape[-1], block_size, cuts):
        blk = block_state(s[..., a:b], v[a:b])
        state = blk if state is None else merge(state, blk)
    return state[2]


def online_softmax_trace(scores, block_size: int) -> dict:
    """Running max and running sum after each block, for one row of scores (FlashAttention-2 loop).

    Returns {"running_max": (B,), "running_sum": (B,), "block_end": (B,)}; the sum is relative
    to the running max, so running_sum[-1]·exp(running_max[-1]) = Σ exp(s)."""
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1:
        raise ValueError(f"scores must be one row (1-D), got shape {s.shape}")
    if s.size == 0:
        raise ValueError("scores must not be empty")
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise ValueError(f"block_size must be a positive integer, got {block_size!r}")
    state, maxes, sums, ends = None, [], [], []
    for a, b in partition(s.size, int(block_size)):
        blk = block_state(s[a:b], np.zeros((b - a, 1)))
        state = blk if state is None else merge(state, blk)
        maxes.append(float(state[0][0])), sums.append(float(state[1][0])), ends.append(b)
    return {"running_max": np.array(maxes), "running_sum": np.array(sums), "block_end": np.array(ends)}
