"""Softmax: normalisation, shift invariance, its Jacobian and what saturation does to it."""
from __future__ import annotations

import sympy as sp

from proofs.claims import cited
from proofs.engine import CITED, DEFINITION, Derivation, Proof, Result
from proofs.notation import A as _a
from proofs.notation import A_1, A_J_T, A_K_T, C, JAC, LAMBDA, N
from proofs.notation import I as _i
from proofs.notation import J as _j
from proofs.notation import K_IDX as _k
from proofs.notation import Z as _z
from proofs import notation_softmax as ns
from proofs.validate import as_dimension

_r = ns.R_GAP  # n = j + r: keeps index j inside 1..n


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
    return sp.Matrix(a.rows, a.rows, lambda p, q: a[p] if p == q else 0) - a * a.T


def differentiated_jacobian(n: int) -> tuple[list[sp.Symbol], sp.Matrix, sp.Matrix]:
    """(z, a(z), ∂a/∂z) computed by differentiation, for explicit n."""
    z = logits(n)
    a = softmax_vector(z)
    return z, a, a.jacobian(z)


_x = sp.Symbol("x", integer=True, positive=True)  # the ∀-index of the weights' definition


def define_weights(pf: Proof, n=N):
    """a_x := exp(z_x) / Σ_{k=1}^{n} exp(z_k) for every index x (a ∀-pattern the checker unfolds)."""
    return pf.define(_a[_x], softmax_index(i=_x, n=n), "softmax weights: a_x = exp(z_x) / Σ_k exp(z_k)",
                     forall=[_x])


def normalisation() -> Derivation:
    """a_i > 0 (a positive over a sum of positives) and Σ_i a_i = 1 (the denominator leaves the sum)."""
    pf = Proof("softmax-normalisation")
    weights = define_weights(pf)
    denominator = sp.Sum(sp.exp(_z[_k]), (_k, 1, N))
    pulled = pf.linearity(sp.Sum(sp.exp(_z[_i]) / denominator, (_i, 1, N)),
                          sp.Sum(sp.exp(_z[_i]), (_i, 1, N)) / denominator,
                          "the denominator does not depend on i and leaves the sum")
    pf.rewrite(sp.Sum(_a[_i], (_i, 1, N)), 1, [weights, pulled], "numerator and denominator are the same sum")
    pf.rewrite(_a[_i], 0, [weights], "a positive numerator over a sum of n ≥ 1 positive terms", relation_=">")
    return pf.finish(Result(weights=softmax_index()))


def shift_invariance() -> Derivation:
    """exp(z_k + c) = exp(c) exp(z_k): exp(c) leaves the sum and cancels."""
    pf = Proof("softmax-shift-invariance")
    stated = pf.statement
    pf.linearity(stated.lhs, stated.rhs, "exp(c) leaves the sum over k and cancels against the numerator's")
    return pf.finish(Result(shift=C))


def softmax_jacobian(n=None) -> Derivation:
    """∂a_i/∂z_j = a_i(δ_ij - a_j). ``n=None``: general n in index form (the catalogued claim).

    ``.result`` is the Jacobian: for a given n a SymPy Matrix in the weights a_1..a_n (an instance
    derived under its own id, the weights defined from n explicit logits), for general n the
    index-form entry a_i (δ_ij - a_j).
    """
    if n is not None:
        return _jacobian_instance(int(as_dimension(n, "n")))
    pf = Proof("softmax-jacobian")
    weights = define_weights(pf)
    in_range = pf.assume(sp.Eq(N, _j + _r, evaluate=False), "1 ≤ j ≤ n: n = j + r with r ≥ 0")
    denominator = sp.Sum(sp.exp(_z[_k]), (_k, 1, _j + _r))
    derivative = sp.Derivative(sp.exp(_z[_i]) / denominator, _z[_j])
    quotient = pf.identity(derivative, derivative.doit(), "quotient and chain rule: ∂z_k/∂z_j = δ_jk")
    sift = pf.identity(sp.Sum(sp.exp(_z[_k]) * sp.KroneckerDelta(_j, _k), (_k, 1, _j + _r)), sp.exp(_z[_j]),
                       "sifting: Σ_k δ_jk exp(z_k) = exp(z_j), as 1 ≤ j ≤ n")
    stated = pf.statement
    pf.rewrite(stated.lhs, stated.rhs, [weights, in_range, quotient, sift],
               "∂a_i/∂z_j = δ_ij a_i − a_i a_j = a_i (δ_ij − a_j)")
    return pf.finish(_a[_i] * (sp.KroneckerDelta(_i, _j) - _a[_j]))


def _jacobian_instance(n: int) -> Derivation:
    """J = diag(a) − a aᵀ for n weights: the general theorem (cited, any n), and its formula a_p(δ_pq − a_q)
    at p, q = 1..n is that matrix. Differentiating the n² explicit quotients instead costs seconds per n."""
    general = softmax_jacobian()
    formula = general.statement.rhs  # a_i (δ_ij − a_j)
    weights = sp.Matrix([_a[p] for p in range(1, n + 1)])
    entries = sp.ImmutableMatrix(n, n, lambda p, q: formula.xreplace({_i: sp.Integer(p + 1), _j: sp.Integer(q + 1)}))
    statement = sp.And(general.statement, sp.Eq(entries, sp.ImmutableMatrix(jacobian_in_weights(weights)),
                                                evaluate=False), evaluate=False)
    pf = Proof(f"softmax-jacobian[n={n}]", statement=statement, assumptions=[f"a = softmax(z), z ∈ ℝ^{n}"])
    pf.cite(general)
    pf.identity(entries, sp.ImmutableMatrix(jacobian_in_weights(weights)),
                f"n = {n}: a_p (δ_pq − a_q) at p, q = 1..{n} is diag(a) − a aᵀ")
    return pf.finish(jacobian_in_weights(probabilities(n)))


def jacobian_index_form() -> sp.Expr:
    """J_ij = a_i(δ_ij − a_j), general n."""
    return _a[_i] * sp.KroneckerDelta(_i, _j) - _a[_i] * _a[_j]


_y = sp.Symbol("y", integer=True, positive=True)
_R = sp.IndexedBase("R", real=True)  # Gershgorin's radii R_i = Σ_{j≠i} |J_ij|
_g = sp.Symbol("g", integer=True, positive=True)  # a row whose Gershgorin disc holds the eigenvalue λ
_s = sp.Symbol("s", integer=True, nonnegative=True)  # n = g + s: the disc's row g is one of the n rows


def gershgorin_radius(pf: Proof, entries, radii, total, reference: str, weights=None):
    """R_g = Σ_{y≠g} |J_gy| = a_g(1 − a_g) = J_gg, by the rules: the radius is Σ_y (1 − δ_gy)|J_gy| (the row's sum
    less its diagonal term, sifted out); off the diagonal |J_gy| = |a_g||a_y| = a_g a_y, the weights being positive
    (|a_x| = a_x: e^{z_x} / Σ_k e^{z_k} unfolded from their definition); then a_g leaves the sum and Σ_y a_y = 1.
    ``weights``: the weights' definition (by default a = softmax(z), the claim's assumption)."""
    weights = define_weights(pf) if weights is None else weights
    row = pf.cite_external(sp.Eq(N, _g + _s, evaluate=False), reference,
                           "the disc's row g is one of J's n rows: 1 ≤ g ≤ n, n = g + s with s ≥ 0")
    delta = sp.KroneckerDelta(_g, _y)
    off_diagonal = 1 - delta
    split = pf.linearity(sp.Sum(off_diagonal * sp.Abs(JAC[_g, _y]), (_y, 1, N)),
                         sp.Sum(sp.Abs(JAC[_g, _y]), (_y, 1, N)) - sp.Sum(delta * sp.Abs(JAC[_g, _y]), (_y, 1, N)),
                         "Σ_y (1 − δ_gy)|J_gy| = Σ_y |J_gy| − Σ_y δ_gy |J_gy|")
    sift_abs = pf.rewrite(sp.Sum(delta * sp.Abs(JAC[_g, _y]), (_y, 1, N)), sp.Abs(JAC[_g, _g]), [row],
                          "sifting: Σ_y δ_gy |J_gy| = |J_gg|, as 1 ≤ g ≤ n")
    row_sum = pf.rewrite(sp.Sum(sp.Abs(JAC[_g, _y]), (_y, 1, N)),
                         sp.Sum(off_diagonal * sp.Abs(JAC[_g, _y]), (_y, 1, N)) + sp.Abs(JAC[_g, _g]),
                         [split, sift_abs], "the row's Σ_y |J_gy| is its off-diagonal part plus |J_gg|")
    inside = pf.identity(off_diagonal * sp.Abs(JAC[_g, _y]), sp.Abs(off_diagonal * JAC[_g, _y]),
                         "1 − δ_gy ≥ 0 enters the absolute value")
    factors = pf.rewrite(sp.Abs(off_diagonal * JAC[_g, _y]), sp.Abs(1 - delta) * sp.Abs(_a[_g]) * sp.Abs(_a[_y]),
                         [entries], "(1 − δ_gy)(a_g δ_gy − a_g a_y) = −(1 − δ_gy) a_g a_y, as δ_gy² = δ_gy")
    unit = pf.identity(sp.Abs(1 - delta), 1 - delta, "δ_gy is 0 or 1")
    positive = pf.rewrite(sp.Abs(_a[_x]), _a[_x], [weights], "a_x = e^{z_x} / Σ_k e^{z_k} > 0", forall=[_x])
    entry = pf.rewrite(off_diagonal * sp.Abs(JAC[_g, _y]), off_diagonal * _a[_g] * _a[_y],
                       [inside, factors, unit, positive],
                       "(1 − δ_gy)|J_gy| = (1 − δ_gy) a_g a_y: off the diagonal |J_gy| = |a_g||a_y| = a_g a_y",
                       forall=[_y])
    pulled = pf.linearity(sp.Sum(off_diagonal * _a[_g] * _a[_y], (_y, 1, N)),
                          _a[_g] * sp.Sum(_a[_y], (_y, 1, N)) - _a[_g] * sp.Sum(delta * _a[_y], (_y, 1, N)),
                          "a_g leaves the sums over y")
    sift = pf.rewrite(sp.Sum(delta * _a[_y], (_y, 1, N)), _a[_g], [row], "sifting: Σ_y δ_gy a_y = a_g, as 1 ≤ g ≤ n")
    return pf.rewrite(_R[_g], JAC[_g, _g], [radii, row_sum, entry, pulled, total, sift, entries],
                      "R_g = Σ_y (1 − δ_gy)|J_gy| = a_g Σ_y a_y − a_g² = a_g(1 − a_g) = J_gg")


def jacobian_spectrum() -> Derivation:
    """For every n: J symmetric, J·1 = 0, every eigenvalue in [0, 1/2] by Gershgorin's discs, a(1 − a) ≤ 1/4.

    J is defined entrywise (J = diag(a) − a aᵀ, the Jacobian of softmax-jacobian), the weights as softmax(z) (their
    positivity makes the Gershgorin radius a_g(1 − a_g): ``gershgorin_radius``); Σ_j a_j = 1 is cited from
    softmax-normalisation; Gershgorin's theorem and the δ substitution property are cited."""
    pf = Proof("softmax-jacobian-spectrum")
    symmetric, row_sum, low, high, quarter = ns.spectrum_conjuncts()
    entries = pf.define(JAC[_x, _y], jacobian_index_form().xreplace({_i: _x, _j: _y}),
                        "J_xy = a_x δ_xy − a_x a_y, i.e. J = diag(a) − a aᵀ", forall=[_x, _y])
    substitution = pf.cite_external(sp.Eq(sp.KroneckerDelta(_x, _y) * _a[_x], sp.KroneckerDelta(_x, _y) * _a[_y],
                                          evaluate=False), "Kronecker delta: δ_xy f(x) = δ_xy f(y)",
                                    "δ_xy vanishes unless x = y", forall=[_x, _y])
    pf.rewrite(symmetric.lhs, symmetric.rhs, [entries, substitution], "a_i δ_ij = a_j δ_ij")

    norm = cited("softmax-normalisation")
    total = pf.cite(norm, sp.Eq(sp.Sum(_a[_i], (_i, 1, N)), 1, evaluate=False))
    in_range = pf.assume(sp.Eq(N, _i + _r, evaluate=False), "1 ≤ i ≤ n: n = i + r with r ≥ 0")
    split = pf.linearity(sp.Sum(jacobian_index_form(), (_j, 1, N)),
                         _a[_i] * sp.Sum(sp.KroneckerDelta(_i, _j), (_j, 1, N)) - _a[_i] * sp.Sum(_a[_j], (_j, 1, N)),
                         "a_i leaves the sums over j")
    sift = pf.identity(sp.Sum(sp.KroneckerDelta(_i, _j), (_j, 1, _i + _r)), 1, "sifting: Σ_j δ_ij = 1, 1 ≤ i ≤ n")
    pf.rewrite(row_sum.lhs, row_sum.rhs, [entries, split, total, in_range, sift], "Σ_j J_ij = a_i − a_i Σ_j a_j = 0")

    # Gershgorin: λ lies in the disc of some row i, J_ii − R_i ≤ λ ≤ J_ii + R_i with R_i = Σ_{j≠i} |J_ij|.
    reference = "Gershgorin circle theorem (Gershgorin, 1931), radii R_x = Σ_{y≠x} |J_xy|"
    radii = pf.define(_R[_x], sp.Sum(sp.Abs(JAC[_x, _y]), (_y, 1, N)) - sp.Abs(JAC[_x, _x]),
                      "R_x = Σ_{y≠x} |J_xy|", forall=[_x])
    disc_low = pf.cite_external(sp.Le(JAC[_g, _g] - _R[_g], LAMBDA, evaluate=False), reference,
                                "the lower edge of the disc of a row g that holds λ")
    disc_high = pf.cite_external(sp.Le(LAMBDA, JAC[_g, _g] + _R[_g], evaluate=False), reference,
                                 "the upper edge of the same disc")
    radius = gershgorin_radius(pf, entries, radii, total, reference)
    diag = _a[_g] - _a[_g] ** 2
    edge_low = pf.rewrite(0, JAC[_g, _g] - _R[_g], [radius], "J_gg − R_g = 0")
    edge_high = pf.rewrite(JAC[_g, _g] + _R[_g], 2 * diag, [radius, entries], "J_gg + R_g = 2 a_g(1 − a_g)")
    peak = pf.sign(2 * diag, "≤", sp.Rational(1, 2), "1/2 − 2a(1 − a) = 2(a − 1/2)² ≥ 0",
                   terms=[2 * (_a[_g] - sp.Rational(1, 2)) ** 2])
    pf.chain([edge_low, disc_low], low.lhs, "≤", low.rhs, "0 = J_gg − R_g ≤ λ")
    pf.chain([disc_high, edge_high, peak], high.lhs, "≤", high.rhs, "λ ≤ J_gg + R_g = 2a_g(1 − a_g) ≤ 1/2")
    pf.sign(quarter.lhs, "≤", quarter.rhs, "1/4 − a(1 − a) = (a − 1/2)² ≥ 0",
            terms=[(_a[_i] - sp.Rational(1, 2)) ** 2])
    # The disc's edges as functions of w = a_i ∈ [0, 1], from the J in use (not typed): the bounds proved above.
    w = sp.Symbol("w", positive=True)
    jii = sp.expand(jacobian_index_form().subs(_j, _i)).subs(_a[_i], w)
    return pf.finish(Result(max_eigenvalue=sp.maximum(2 * jii, w, sp.Interval(0, 1)), min_eigenvalue=0,
                            diagonal_max=sp.maximum(w * (1 - w), w, sp.Interval(0, 1))))


def saturation() -> Derivation:
    """z = (t, 0, …, 0) with m ≥ 1 zeros: every Jacobian entry lies between 0 and a multiple of e^{−t}."""
    t, m = sp.Symbol("t", real=True), ns.TRAILING
    pf = Proof("softmax-saturation")
    lead, rest = sp.exp(t) / (sp.exp(t) + m), 1 / (sp.exp(t) + m)
    weights = [pf.define(A_1.func(t), lead, "a_1(t) = eᵗ / (eᵗ + m)", forall=[t]),
               pf.define(A_J_T.func(t), rest, "a_j(t) = 1 / (eᵗ + m), j > 1", forall=[t]),
               pf.define(A_K_T.func(t), rest, "a_k(t) = 1 / (eᵗ + m), k > 1, k ≠ j", forall=[t])]
    at_least_one = pf.sign(1, "≤", m, "m ≥ 1 trailing zeros")
    for rel in ns.saturation_conjuncts():
        small, big = rel.lhs, rel.rhs
        pf.rewrite(small, big, [*weights, at_least_one], "the weights unfolded; the difference's factors have "
                   "known signs", relation_="≤")
    return pf.finish(Result(weights=(lead, rest)))
