"""Floating-point confirmation of the attention backward identities against central differences."""
from __future__ import annotations

import time

import numpy as np

from numeric import arguments, derived
from numeric import softmax as sm
from numeric.evidence import Confirmation, worst_case
from numeric.registry import confirms
from numeric.softmax_checks import FD_STEP, U


def attention_loss(Q, K, V, dO, scale) -> float:
    """L = Σ dO ∘ O with O = softmax(scale·QKᵀ) V: its gradients are the backward pass for upstream dO."""
    return float(np.sum(dO * sm.attention(scale * Q @ K.T, V)))  # O: (n_q, d_v)


def _central_gradient(f, x: np.ndarray, h: float) -> np.ndarray:
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += h
        down[idx] -= h
        g[idx] = (f(up) - f(down)) / (2 * h)
    return g


@confirms("attention-backward")
def attention_backward(*, n_cases=100, seed=0, alpha=0.001, gradients=None) -> Confirmation:
    """dQ, dK, dV from the derived identities (lambdified) against central differences of the NumPy
    forward pass. Error allowance per entry: the Richardson estimate of the truncation error,
    |D(h) − D(2h)| (three times the estimate (D(2h) − D(h))/3), plus the rounding term
    Σ|dO ∘ O|·(n + 8)u/h of differencing a sum. ``gradients(Q, K, V, dO, scale)`` may replace the
    derived ones."""
    started = time.perf_counter()
    rng = np.random.default_rng(arguments.seed(seed))
    n_cases = arguments.positive_int(n_cases, "n_cases")
    derived_grads, (q_shape, k_shape, v_shape, o_shape) = derived.attention_gradients()
    grads = gradients or derived_grads
    h = FD_STEP
    checks = []
    for _ in range(n_cases):
        Q, K = rng.normal(size=q_shape) * 1.5, rng.normal(size=k_shape) * 1.5
        V, dO = rng.normal(size=v_shape), rng.normal(size=o_shape)
        scale = float(rng.uniform(0.1, 1.0))
        got = grads(Q, K, V, dO, scale)
        worst = 0.0
        for i, x in enumerate((Q, K, V)):
            def f(y, i=i):
                args = [Q, K, V]
                args[i] = y
                return attention_loss(*args, dO, scale)
            fd_h, fd_2h = _central_gradient(f, x, h), _central_gradient(f, x, 2 * h)
            size = np.abs(dO).sum() * max(1.0, float(np.abs(V).max()))
            allowance = np.abs(fd_h - fd_2h) + size * (Q.size + K.size + 8) * U / h
            worst = max(worst, float(np.max(np.abs(got[i] - fd_h) / allowance)))
        checks.append((worst, 1.0))
    return worst_case("attention-backward", f"derived dQ, dK, dV against central differences (h = 2⁻¹⁴) on {n_cases} random "
                    f"cases of shape Q {q_shape}, K {k_shape}, V {v_shape}; estimate = worst error / allowance "
                    "(Richardson truncation estimate + rounding)", checks, alpha, started)
