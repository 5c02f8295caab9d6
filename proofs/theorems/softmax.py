"""Softmax: normalisation, shift invariance, its Jacobian and what saturation does to it."""
from __future__ import annotations

import sympy as sp

from proofs.engine import Derivation, Proof, Result
from proofs.validate import as_dimension

N = sp.Symbol("n", integer=True, positive=True)
_i, _j, _k = sp.symbols("i j k", integer=True, positive=True)
_r = sp.Symbol("r", integer=True, nonnegative=True)  # n = j + r: keeps index j inside 1..n
_z = sp.IndexedBase("z", real=True)
_a = sp.IndexedBase("a")
C = sp.Symbol("c", real=True)

EXPANDED_SIZES = (2, 3, 4, 5, 6)


def softmax_index(z=_z, i=_i, n=N) -> sp.Expr:
    """a_i = exp(z_i) / sum_k exp(z_k), general n."""
    return sp.exp(z[i]) / sp.Sum(sp.exp(z[_k]), (_k, 1, n))


def logits(n: int) -> list[sp.Symbol]:
    return list(sp.symbols(f"z_1:{n + 1}", real=True))


def softmax_vector(z: list[sp.Expr]) -> sp.Matrix:
    denom = sum(sp.exp(x) for x in z)
    return sp.Matrix([sp.exp(x) / denom for x in z])


def probabilities(n: int) -> sp.Matrix:
    """Symbols a_1..a_n for a probability vector (the Jacobian written in the weights)."""
    return sp.Matrix(sp.symbols(f"a_1:{n + 1}", positive=True))


def jacobian_in_weights(a: sp.Matrix) -> sp.Matrix:
    """J = diag(a) - a aᵀ."""
    return sp.diag(*a) - a * a.T


def differentiated_jacobian(n: int) -> tuple[list[sp.Symbol], sp.Matrix, sp.Matrix]:
    """(z, a(z), ∂a/∂z) computed by differentiation, for explicit n."""
    z = logits(n)
    a = softmax_vector(z)
    return z, a, a.jacobian(z)


def normalisation() -> Derivation:
    pf = Proof("softmax-normalisation", "Softmax rows are probability distributions",
               sp.Eq(sp.Sum(_a[_i], (_i, 1, N)), 1), ["z ∈ ℝⁿ, n ≥ 1"])
    total = sp.Sum(softmax_index(), (_i, 1, N))
    pf.premise("definition", "a_i = exp(z_i) / Σ_k exp(z_k)", _a[_i], softmax_index())
    pulled = sp.simplify(total)
    pf.equal("linearity of the sum", "the denominator does not depend on i and leaves the sum",
             pulled, sp.Sum(sp.exp(_z[_i]), (_i, 1, N)) / sp.Sum(sp.exp(_z[_k]), (_k, 1, N)))
    pf.equal("renaming a bound index", "numerator and denominator are the same sum",
             pulled.xreplace({_i: _k}), 1)
    pf.holds("exp > 0", "each weight is positive: a positive numerator over a sum of n ≥ 1 positive terms",
             _a[_i], 0, lambda: bool(sp.exp(_z[_i]).is_positive and sp.exp(_z[_k]).is_positive), ">")
    pf.holds("explicit expansion", "Σ a_i = 1 for n = 2..6",
             sp.Sum(_a[_i], (_i, 1, N)), 1,
             lambda: all(sp.simplify(sum(softmax_vector(logits(n))) - 1) == 0 for n in EXPANDED_SIZES))
    return pf.finish(Result(weights=softmax_index()))


def shift_invariance() -> Derivation:
    shifted = sp.exp(_z[_i] + C) / sp.Sum(sp.exp(_z[_k] + C), (_k, 1, N))
    pf = Proof("softmax-shift-invariance", "softmax(z + c) = softmax(z)",
               sp.Eq(shifted, softmax_index(_z), evaluate=False), ["c ∈ ℝ added to every logit"])
    split = sp.expand(shifted, power_exp=True)
    pf.equal("exp(x + c) = exp(c) exp(x)", "split every exponential", split,
             sp.exp(C) * sp.exp(_z[_i]) / sp.Sum(sp.exp(C) * sp.exp(_z[_k]), (_k, 1, N)))
    pulled = split.replace(lambda x: isinstance(x, sp.Sum), lambda x: sp.factor_terms(x.expand()))
    pf.equal("linearity of the sum", "exp(c) leaves the sum and cancels", pulled, softmax_index())
    z = logits(4)
    pf.equal("explicit expansion", "softmax(z + c) = softmax(z) for n = 4",
             softmax_vector([x + C for x in z]), softmax_vector(z))
    return pf.finish(Result(shift=C))


def softmax_jacobian(n=None) -> Derivation:
    """∂a_i/∂z_j = a_i(δ_ij - a_j). ``n=None``: general n in index form, plus n = 2..6 expanded.

    ``.result`` is the Jacobian: for a given n a SymPy Matrix in the weights a_1..a_n,
    for general n the index-form entry a_i (δ_ij - a_j).
    """
    sizes = EXPANDED_SIZES if n is None else (as_dimension(n, "n"),)
    pf = Proof("softmax-jacobian", "Softmax Jacobian J = diag(a) - a aᵀ",
               sp.Eq(sp.Symbol("J_ij"), _a[_i] * (sp.KroneckerDelta(_i, _j) - _a[_j])),
               ["a = softmax(z), z ∈ ℝⁿ"])
    if n is None:
        a_i = softmax_index()
        derivative = sp.diff(a_i, _z[_j]).doit().subs(N, _j + _r)
        claim = (a_i * (sp.KroneckerDelta(_i, _j) - a_i.subs(_i, _j))).subs(N, _j + _r)
        pf.equal("quotient rule + chain rule", "∂a_i/∂z_j = a_i (δ_ij - a_j), general n (index form, 1 ≤ j ≤ n)",
                 derivative, claim)
    for size in sizes:
        size = int(size)
        _, a, J = differentiated_jacobian(size)
        pf.equal("quotient rule + chain rule", f"n = {size}: every entry of ∂a/∂z equals diag(a) - a aᵀ",
                 J, jacobian_in_weights(a))
    if n is None:
        return pf.finish(_a[_i] * (sp.KroneckerDelta(_i, _j) - _a[_j]))
    return pf.finish(jacobian_in_weights(probabilities(int(n))))


def _on_simplex(expr, a: sp.Matrix):
    """Impose Σ a_i = 1 by eliminating the last weight."""
    return sp.sympify(expr).subs(a[-1], 1 - sum(a[:-1]))


def jacobian_spectrum(n_max: int = 6) -> Derivation:
    pf = Proof("softmax-jacobian-spectrum", "J is symmetric, J·1 = 0, and 0 ≤ λ(J) ≤ 1/2",
               sp.And(sp.Eq(sp.Symbol("J"), sp.Symbol("J^T")), sp.Le(0, sp.Symbol("lambda")),
                      sp.Le(sp.Symbol("lambda"), sp.Rational(1, 2))),
               ["a = softmax(z): a_i > 0, Σ a_i = 1"])
    for n in range(2, n_max + 1):
        _, _, J = differentiated_jacobian(n)
        pf.equal("symmetry of mixed terms", f"n = {n}: J - Jᵀ = 0", J - J.T, sp.zeros(n, n))
        pf.equal("Σ a_j = 1", f"n = {n}: J·1 = 0 (shift invariance, differentiated)", J * sp.ones(n, 1), sp.zeros(n, 1))

    # Quadratic form in the weights: xᵀJx is the variance of x under the distribution a.
    n = 4
    a = probabilities(n)
    x = sp.Matrix(sp.symbols(f"x_1:{n + 1}", real=True))
    mean_x = (a.T * x)[0]
    quad = (x.T * jacobian_in_weights(a) * x)[0]
    var_terms = [a[i] * (x[i] - mean_x) ** 2 for i in range(n)]
    pf.equal("Σ a_i = 1", "n = 4: xᵀJx = Σ a_i (x_i - x̄)², x̄ = Σ a_j x_j (a variance)",
             _on_simplex(quad, a), _on_simplex(sum(var_terms), a))
    pf.holds("sum of non-negative terms", "each a_i (x_i - x̄)² ≥ 0, so J is positive semidefinite",
             quad, 0, lambda: all(t.is_nonnegative for t in var_terms), "≥")
    # Upper bound, by Popoviciu: a variance is at most (max - min)²/4 ≤ 2‖x‖²/4.
    c = sp.Symbol("c", real=True)
    pf.equal("shift of a variance", "Var_a(x) = Σ a_i (x_i - c)² - (x̄ - c)² for any c",
             _on_simplex(sum(var_terms), a),
             _on_simplex(sum(a[i] * (x[i] - c) ** 2 for i in range(n)) - (mean_x - c) ** 2, a))
    xi, xj = sp.symbols("x_i x_j", real=True)
    pf.equal("completing the square", "2(x_i² + x_j²) - (x_i - x_j)² = (x_i + x_j)² ≥ 0, so (max - min)² ≤ 2‖x‖²",
             2 * (xi**2 + xj**2) - (xi - xj) ** 2, (xi + xj) ** 2)
    pf.premise("Popoviciu's inequality", "with c = (max + min)/2 every |x_i - c| ≤ (max - min)/2, "
               "so Var_a(x) ≤ (max - min)²/4 ≤ ‖x‖²/2", sp.Symbol("lambda"), sp.Rational(1, 2), "≤")
    p = sp.Symbol("p", positive=True)
    J2 = jacobian_in_weights(sp.Matrix([p, 1 - p]))

    def two_by_two() -> tuple[bool, str]:
        eig = [sp.factor(e) for e in J2.eigenvals()]
        nonzero = [e for e in eig if e != 0]
        if 0 not in eig or len(nonzero) != 1 or sp.expand(nonzero[0] - 2 * p * (1 - p)) != 0:
            return False, f"eigenvalues {eig}"
        peak = sp.solve(sp.diff(nonzero[0], p), p)
        top = nonzero[0].subs(p, peak[0]) if len(peak) == 1 else None
        return top == sp.Rational(1, 2), f"eigenvalues {eig}; maximum {top} at p = {peak}"

    pf.holds("eigenvalues, n = 2", "λ ∈ {0, 2p(1 - p)}, maximal 1/2 at p = 1/2: the bound is attained",
             sp.Symbol("lambda_max"), sp.Rational(1, 2), two_by_two)
    w = sp.Symbol("a", positive=True)
    pf.equal("completing the square", "1/4 - a(1 - a) = (a - 1/2)² ≥ 0, so a(1 - a) ≤ 1/4",
             sp.Rational(1, 4) - w * (1 - w), (w - sp.Rational(1, 2)) ** 2)
    return pf.finish(Result(max_eigenvalue=sp.Rational(1, 2), diagonal_max=sp.Rational(1, 4)))


def saturation() -> Derivation:
    """As one logit leads by t → ∞, every Jacobian entry → 0 (general n)."""
    t = sp.Symbol("t", real=True)
    n = sp.Symbol("n", integer=True, positive=True)
    pf = Proof("softmax-saturation", "Saturated softmax has a vanishing Jacobian",
               sp.Eq(sp.Limit(sp.Symbol("J"), t, sp.oo), 0),
               ["z = (t, 0, …, 0) ∈ ℝⁿ, n ≥ 2: logit 1 leads the rest by t"])
    lead, rest = sp.exp(t) / (sp.exp(t) + n - 1), 1 / (sp.exp(t) + n - 1)
    pf.premise("definition", "a_1 = eᵗ/(eᵗ + n - 1), a_j = 1/(eᵗ + n - 1) for j > 1", sp.Symbol("a_1"), lead)
    pf.holds("limit", "a_1 → 1", sp.Limit(lead, t, sp.oo), 1, lambda: sp.limit(lead, t, sp.oo) == 1)
    entries = {"J_11 = a_1(1 - a_1)": lead * (1 - lead), "J_1j = -a_1 a_j": -lead * rest,
               "J_jj = a_j(1 - a_j)": rest * (1 - rest), "J_jk = -a_j a_k": -rest * rest}
    for name, e in entries.items():
        pf.holds("limit", f"{name} → 0", sp.Limit(e, t, sp.oo), 0, lambda e=e: sp.limit(e, t, sp.oo) == 0)
    _, a, J = differentiated_jacobian(3)
    z = logits(3)
    J_t = J.subs({z[0]: t, z[1]: 0, z[2]: 0})
    pf.holds("limit", "n = 3, from the differentiated Jacobian: every entry → 0", J_t, sp.zeros(3, 3),
             lambda: all(sp.limit(e, t, sp.oo) == 0 for e in J_t))
    return pf.finish(Result(limit=sp.zeros(3, 3)))
