"""Floating-point confirmation of RoPE's relative-position property.

Queries and keys are rotated pair by pair in float64 (interleaved pairs, frequencies
θ_i = 10000^(−2(i−1)/d), positions up to 8192) and their score is compared with the derived
relative form Σ_i q_iᵀ R((n − m)θ_i) k_i, lambdified, and with the score of both positions
shifted by the same t. The verdict is the worst error against a first-order rounding bound.
"""
from __future__ import annotations

import time
from functools import lru_cache

import numpy as np
import sympy as sp

from numeric import arguments
from numeric.evidence import Confirmation, worst_case
from numeric.registry import confirms
from proofs.claims import proved

U = np.finfo(np.float64).eps / 2  # unit roundoff
BASE = 10_000.0  # RoFormer's frequency base
MAX_POSITION = 8192


def frequencies(d: int) -> np.ndarray:
    """θ_i = BASE^(−2(i−1)/d), i = 1..d/2."""
    return BASE ** (-np.arange(d // 2) * 2.0 / d)  # (d/2,)


def rotate(x: np.ndarray, position: int, theta: np.ndarray) -> np.ndarray:
    """RoPE at ``position``: pair i = (x[2i], x[2i+1]) rotated by position·θ_i."""
    a, b = x[0::2], x[1::2]  # (d/2,), (d/2,)
    c, s = np.cos(position * theta), np.sin(position * theta)
    out = np.empty_like(x)
    out[0::2], out[1::2] = a * c - b * s, a * s + b * c
    return out


@lru_cache(maxsize=1)
def relative_pair():
    """f(q_a, q_b, k_a, k_b, θ, offset): one pair's term of the RoPE score written through the
    offset n − m alone, as the rope-relative-position derivation proved it (lambdified)."""
    r = proved("rope-relative-position").result
    m, n, i, q, k, theta = r.symbols
    qa, qb, ka, kb, th, offset = sp.symbols("q_a q_b k_a k_b theta offset", real=True)
    term = r.pair_score.subs({q[2 * i - 1]: qa, q[2 * i]: qb, k[2 * i - 1]: ka, k[2 * i]: kb, theta[i]: th})
    term = sp.expand(term.subs(n, m + offset))
    if term.free_symbols != {qa, qb, ka, kb, th, offset}:
        raise RuntimeError(f"the derived RoPE term is not a function of the offset alone: {term}")
    return sp.lambdify((qa, qb, ka, kb, th, offset), term, "numpy")


def rounding_bound(q, k, theta, positions) -> float:
    """Each angle p·θ_i errs by u·p·θ_i, its cosine and sine by that plus u; the rotation, the
    products and the d-term sums add a few u per term. Summed over pairs, with ‖·‖₁ of each pair,
    over the three scores compared (so 6·max|p|)."""
    p = max(abs(int(x)) for x in positions)
    pair_size = (np.abs(q[0::2]) + np.abs(q[1::2])) * (np.abs(k[0::2]) + np.abs(k[1::2]))  # (d/2,)
    return float(U * np.sum(pair_size * (6 * p * theta + 16 + 2 * q.size)))


@confirms("rope-relative-position", n_samples=100)
def rope_relative_position(*, n_cases=300, seed=0, alpha=0.001, pair=None) -> Confirmation:
    """``pair(q_a, q_b, k_a, k_b, θ, offset)`` may replace the derived term (to see a wrong one refused)."""
    started = time.perf_counter()
    n_cases, seed = arguments.positive_int(n_cases, "n_cases"), arguments.seed(seed)
    pair = pair or relative_pair()
    rng = np.random.default_rng(seed)
    checks = []
    for _ in range(n_cases):
        d = 2 * int(rng.integers(1, 65))
        q, k = rng.normal(size=d), rng.normal(size=d)  # (d,), (d,)
        theta = frequencies(d)
        m, n, t = (int(x) for x in rng.integers(0, MAX_POSITION, size=3))
        relative = float(np.sum(pair(q[0::2], q[1::2], k[0::2], k[1::2], theta, n - m)))
        direct = float(rotate(q, m, theta) @ rotate(k, n, theta))
        shifted = float(rotate(q, m + t, theta) @ rotate(k, n + t, theta))
        err = max(abs(direct - relative), abs(shifted - relative))
        checks.append((err if np.isfinite(err) else np.inf, rounding_bound(q, k, theta, (m, n, m + t, n + t))))
    return worst_case("rope-relative-position", f"⟨R_m q, R_n k⟩ = Σ_i q_iᵀR((n − m)θ_i)k_i = ⟨R_(m+t) q, "
                      f"R_(n+t) k⟩ in float64 on {n_cases} random cases (d ≤ 128, positions < {MAX_POSITION})",
                      checks, alpha, started)
