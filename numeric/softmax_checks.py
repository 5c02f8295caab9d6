"""Floating-point confirmations of the softmax claims (normalisation, shift invariance, Jacobian).

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
from numeric.evidence import Confirmation, exact, worst_case  # noqa: F401
from numeric.registry import confirms

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


@confirms("softmax-normalisation")
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
    return worst_case("softmax-normalisation", f"Σ softmax(z) = 1 and a_i > 0 on {len(cases)} random rows "
                    f"(bound (n + 2)u)", checks, alpha, started)


@confirms("softmax-shift-invariance")
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
    return worst_case("softmax-shift-invariance", f"softmax(z + c) = softmax(z) on {n_cases} rows, |c| up to 1e4 "
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


@confirms("softmax-jacobian")
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
    return worst_case("softmax-jacobian", f"derived Jacobian against central differences (h = 2⁻¹⁴) on {len(cases)} "
                    "random rows (bound h²/48 + (n + 6)u/h)", checks, alpha, started)


@confirms("softmax-jacobian-spectrum")
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
    return worst_case("softmax-jacobian-spectrum", f"eigenvalues in [0, {lam_max:g}], diagonal ≤ {diag_max:g}, J = Jᵀ, "
                    f"J·1 = 0 on {n_cases} rows (bound 4(n + 2)u)", checks, alpha, started)
