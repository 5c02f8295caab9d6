"""Floating-point confirmations of the softmax and online-softmax claims.

Each check evaluates a derived identity in float64 on random cases (wide, extreme ±1e4 and
masked −∞ logits) and compares the worst error with a first-order rounding bound stated next to
it, in units of u = 2⁻⁵³. No p-value: the cases are not a sample of anything, the verdict is
"worst error ≤ bound" (and no NaN where the answer is defined).
"""
from __future__ import annotations

import time

import numpy as np

from numeric import arguments, derived
from numeric import softmax as sm
from numeric.evidence import Confirmation, exact

U = np.finfo(np.float64).eps / 2  # unit roundoff
FD_STEP = 2.0**-14  # a power of two: z ± h is exact for |z| < 2³⁸, so the step is symmetric
THIRD_DERIVATIVE = 1 / 8  # |∂³a_i/∂z_j³| ≤ max |σ'''| of the logistic: along e_j, a_j = σ(t), a_i ∝ 1 - σ(t)


def random_logits(rng: np.random.Generator, n: int) -> np.ndarray:
    """One row of n logits of a random kind: moderate, wide, extreme (±1e4) or partly masked."""
    kind = rng.integers(4)
    if kind == 0:
        return rng.normal(size=n)
    if kind == 1:
        return rng.normal(size=n) * 30
    if kind == 2:
        return rng.uniform(-1e4, 1e4, size=n)
    z = rng.normal(size=n) * 5
    z[rng.random(n) < 0.5] = -np.inf
    z[rng.integers(n)] = rng.normal()  # keep the row defined
    return z


def _cases(n_cases, seed, max_n=64):
    n_cases, seed = arguments.positive_int(n_cases, "n_cases"), arguments.seed(seed)
    rng = np.random.default_rng(seed)
    return [random_logits(rng, int(rng.integers(1, max_n + 1))) for _ in range(n_cases)]


def _verdict(claim_id: str, description: str, checks, alpha: float, started: float) -> Confirmation:
    """One Confirmation from per-case (error, bound) pairs: judged on the case with the worst
    error/bound ratio; NaN anywhere counts as failure."""
    ratios = [(e / b if np.isfinite(e) else np.inf, e, b) for e, b in checks]
    _, error, bound = max(ratios, key=lambda r: r[0])
    out = exact(claim_id, description, error, bound, len(checks), alpha)
    out.seconds = time.perf_counter() - started
    return out


def softmax_normalisation(*, n_cases=300, seed=0, alpha=0.001) -> Confirmation:
    started = time.perf_counter()
    cases = _cases(n_cases, seed)
    checks = []
    for z in cases:
        a = sm.softmax(z)
        n = z.size
        # n exponentials then a sum and a division: |Σa - 1| ≤ (n + 2)u to first order.
        err = abs(a.sum() - 1.0)
        # a_i > 0 wherever exp(z_i - max) is representable; masked (−∞) logits get exactly 0.
        live = z - np.max(z) > -700
        sign_ok = np.all(a[live] > 0) and np.all(a[np.isneginf(z)] == 0)
        checks.append((err if sign_ok else np.inf, (n + 2) * U))
    return _verdict("softmax-normalisation", f"Σ softmax(z) = 1 and a_i > 0 on {len(cases)} random rows "
                    f"(bound (n + 2)u)", checks, alpha, started)


def softmax_shift_invariance(*, n_cases=300, seed=0, alpha=0.001) -> Confirmation:
    started = time.perf_counter()
    rng = np.random.default_rng(arguments.seed(seed) + 1)
    checks = []
    for z in _cases(n_cases, seed):
        c = float(rng.choice([-1, 1]) * 10.0 ** rng.uniform(-3, 4))
        shifted = z + c
        # fl(z + c) = z + c + ε, |ε| ≤ u|z + c|; the Jacobian has ∞-norm ≤ 1/2, so the weights move by
        # ≤ max|ε|/2; each evaluation adds ≤ (n + 4)u.
        finite = np.isfinite(shifted)
        eps = U * np.max(np.abs(shifted[finite]))
        err = np.max(np.abs(sm.softmax(shifted) - sm.softmax(z)))
        checks.append((err, eps / 2 + 2 * (z.size + 4) * U))
    return _verdict("softmax-shift-invariance", f"softmax(z + c) = softmax(z) on {n_cases} rows, |c| up to 1e4 "
                    "(bound u·max|z + c|/2 + 2(n + 4)u)", checks, alpha, started)


def finite_difference_jacobian(z: np.ndarray, h: float = FD_STEP) -> np.ndarray:
    """Central differences of the NumPy softmax, column j = ∂a/∂z_j."""
    n = z.size
    cols = []
    for j in range(n):
        step = np.zeros(n)
        step[j] = h
        cols.append((sm.softmax(z + step) - sm.softmax(z - step)) / (2 * h))
    return np.stack(cols, axis=1)  # (n, n)


def jacobian_error_bound(n: int, h: float = FD_STEP) -> float:
    """Central-difference error: truncation h²/6·max|f'''| plus rounding η/h, η = (n + 6)u the
    absolute error of each computed weight."""
    return h * h / 6 * THIRD_DERIVATIVE + (n + 6) * U / h


def softmax_jacobian(*, n_cases=200, seed=0, alpha=0.001, jacobian=None) -> Confirmation:
    """The derived J = a_i(δ_ij − a_j) against central finite differences; ``jacobian(a)`` may
    replace the derived one to see a wrong rule refused."""
    started = time.perf_counter()
    jac = jacobian or sm.jacobian
    checks = []
    cases = [z for z in _cases(n_cases, seed, max_n=24) if np.all(np.abs(z[np.isfinite(z)]) < 2.0**38)]
    for z in cases:
        live = np.isfinite(z)  # masked logits have no derivative; their weights stay 0
        zl = z[live]
        err = np.max(np.abs(jac(sm.softmax(zl)) - finite_difference_jacobian(zl)))
        checks.append((err, jacobian_error_bound(zl.size)))
    return _verdict("softmax-jacobian", f"derived Jacobian against central differences (h = 2⁻¹⁴) on {len(cases)} "
                    "random rows (bound h²/48 + (n + 6)u/h)", checks, alpha, started)


def softmax_jacobian_spectrum(*, n_cases=300, seed=0, alpha=0.001) -> Confirmation:
    started = time.perf_counter()
    lam_max, diag_max = derived.spectrum_bounds()
    checks = []
    for z in _cases(n_cases, seed):
        a = sm.softmax(z)
        J = sm.jacobian(a)
        n = z.size
        lam = np.linalg.eigvalsh(J)
        # Beyond the interval [0, λ_max] (or above the diagonal bound), by how much; symmetry; J·1.
        excess = max(-lam.min(), lam.max() - lam_max, np.max(np.diag(J)) - diag_max, 0.0)
        asym = np.max(np.abs(J - J.T))
        row = np.max(np.abs(J.sum(axis=1)))
        # eigvalsh is backward stable: |λ̂ − λ| ≤ c·n·u·‖J‖₂ with ‖J‖₂ ≤ λ_max; J·1 sums n terms ≤ 1.
        checks.append((max(excess, asym, row), 4 * (n + 2) * U))
    return _verdict("softmax-jacobian-spectrum", f"eigenvalues in [0, {lam_max:g}], diagonal ≤ {diag_max:g}, J = Jᵀ, "
                    f"J·1 = 0 on {n_cases} rows (bound 4(n + 2)u)", checks, alpha, started)


# --------------------------------------------------------------------------- online softmax


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
    return _verdict("online-softmax-merge", f"blockwise (derived merge) = direct attention on {n_cases} random "
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
    return _verdict("online-softmax-monoid", f"associativity, commutativity and identity (−∞, 0, 0) of the merge on "
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
    return _verdict("online-softmax-unnormalised", f"running max / sum / unnormalised accumulator = direct attention "
                    f"on {n_cases} random cases, no NaN", checks, alpha, started)


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
    return _verdict("logsumexp-merge", f"lse of a union = log(e^lse₁ + e^lse₂) = m + log l on {n_cases} random splits",
                    checks, alpha, started)


# --------------------------------------------------------------------------- attention backward


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
    return _verdict("attention-backward", f"derived dQ, dK, dV against central differences (h = 2⁻¹⁴) on {n_cases} random "
                    f"cases of shape Q {q_shape}, K {k_shape}, V {v_shape}; estimate = worst error / allowance "
                    "(Richardson truncation estimate + rounding)", checks, alpha, started)
