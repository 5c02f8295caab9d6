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
    return sp.diag(*a) - a * a.T


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
    """J = diag(a) − a aᵀ for n explicit logits, every entry differentiated from the weights' definitions."""
    z, a = logits(n), probabilities(n)
    derivatives = sp.ImmutableMatrix(n, n, lambda p, q: sp.Derivative(a[p], z[q]))
    pf = Proof(f"softmax-jacobian[n={n}]", statement=sp.Eq(derivatives, jacobian_in_weights(a), evaluate=False),
               assumptions=[f"a = softmax(z), z ∈ ℝ^{n}"])
    weights = [pf.define(a_p, w, f"a_{p + 1} = softmax(z)_{p + 1}")
               for p, (a_p, w) in enumerate(zip(a, softmax_vector(z)))]
    pf.rewrite(derivatives, jacobian_in_weights(a), weights, f"n = {n}: every entry of ∂a/∂z equals diag(a) − a aᵀ")
    return pf.finish(jacobian_in_weights(a))


def jacobian_index_form() -> sp.Expr:
    """J_ij = a_i(δ_ij − a_j), general n."""
    return _a[_i] * sp.KroneckerDelta(_i, _j) - _a[_i] * _a[_j]


def jacobian_spectrum(n_max: int = 3) -> Derivation:
    """For every n: J symmetric, J·1 = 0, and every eigenvalue in [0, 1/2] by Gershgorin's discs.

    The bounds 0 and 1/2 (and a(1 − a) ≤ 1/4) are computed as extrema, not typed.
    """
    pf = Proof("softmax-jacobian-spectrum")
    Jij = jacobian_index_form()
    pf.premise("definition", "J_ij = ∂a_i/∂z_j", JAC[_i, _j], sp.Derivative(_a[_i], _z[_j]), kind=DEFINITION)
    pf.cite(cited("softmax-jacobian"))
    norm = cited("softmax-normalisation")
    pf.cite(norm, sp.Eq(sp.Sum(_a[_i], (_i, 1, N)), 1, evaluate=False))
    pf.cite(norm, sp.Gt(_a[_i], 0, evaluate=False))

    def symmetric() -> tuple[bool, str]:
        diff = sp.expand(Jij - Jij.xreplace({_i: _j, _j: _i}))
        off = sp.expand(diff.subs(sp.KroneckerDelta(_i, _j), 0))  # i ≠ j: δ_ij = 0
        on = sp.expand(diff.subs(_j, _i))  # i = j
        return off == 0 and on == 0, f"i ≠ j: J_ij − J_ji = {off}; i = j: {on}"

    pf.holds("case analysis on δ_ij", "J_ij − J_ji = (a_i − a_j) δ_ij vanishes for i ≠ j (δ = 0) and for i = j",
             Jij, Jij.xreplace({_i: _j, _j: _i}), symmetric, establishes=sp.Eq(JAC[_i, _j], JAC[_j, _i], evaluate=False))
    row = sp.factor_terms(sp.Sum(sp.expand(Jij), (_j, 1, N)).doit()).subs(sp.Le(_i, N), True)  # 1 ≤ i ≤ n
    pf.equal("sifting by δ_ij, then Σ_j a_j = 1", "Σ_j J_ij = a_i − a_i Σ_j a_j = 0",
             row.subs(sp.Sum(_a[_j], (_j, 1, N)), 1), 0, subject=sp.Sum(JAC[_i, _j], (_j, 1, N)))

    # Gershgorin: every eigenvalue lies in a disc |λ − J_ii| ≤ R_i = Σ_{j≠i} |J_ij|.
    pf.premise("Gershgorin circle theorem", "every eigenvalue λ of J satisfies J_ii − R_i ≤ λ ≤ J_ii + R_i for some i, "
               "R_i = Σ_{j≠i} |J_ij|", sp.Abs(LAMBDA - JAC[_i, _i]), sp.Symbol("R_i"), "≤", kind=CITED,
               reference="Gershgorin circle theorem (Gershgorin, 1931)")
    diag = sp.expand(Jij.subs(_j, _i))
    p, q = sp.symbols("p q", positive=True)
    off = Jij.subs(sp.KroneckerDelta(_i, _j), 0)  # j ≠ i
    abs_off = sp.Abs(off.subs({_a[_i]: p, _a[_j]: q})).subs({p: _a[_i], q: _a[_j]})  # a_i, a_j > 0
    pf.equal("a_i, a_j > 0", f"|J_ij| = {abs_off} for j ≠ i", abs_off, -off, subject=sp.Abs(off))
    # R_i = Σ_{j≠i} |J_ij|: the full sum over j less its j = i term, a_i pulled out, then Σ_j a_j = 1.
    pulled = sp.factor_terms(sp.Sum(abs_off, (_j, 1, N))) - abs_off.subs(_j, _i)
    radius = sp.expand(pulled.subs(sp.Sum(_a[_j], (_j, 1, N)), 1))
    pf.equal("linearity of the sum, Σ_j a_j = 1", f"R_i = Σ_j |J_ij| − |J_ii| = {radius} = J_ii",
             radius, diag, subject=sp.Symbol("R_i"))
    w = sp.Symbol("w", positive=True)  # a_i ∈ (0, 1)
    upper = sp.maximum((diag + radius).subs(_a[_i], w), w, sp.Interval(0, 1))
    lower = sp.minimum((diag - radius).subs(_a[_i], w), w, sp.Interval(0, 1))
    pf.holds("Gershgorin lower edge", f"J_ii − R_i = {sp.expand(diag - radius)} for every i, so λ ≥ {lower}",
             lower, LAMBDA, lambda: (sp.expand(diag - radius) == lower, f"J_ii − R_i = {sp.expand(diag - radius)}"),
             "≤")
    top = sp.expand(diag + radius)

    def below_upper() -> tuple[bool, str]:
        gap = sp.factor(upper - top.subs(_a[_i], w))  # a square times a positive constant
        return bool(gap.is_nonnegative), f"{upper} − (J_ii + R_i) = {gap} ≥ 0; maximum attained at a_i = 1/2"

    pf.holds("maximum over a_i ∈ [0, 1]", f"J_ii + R_i = {top} ≤ {upper}, its maximum", LAMBDA, upper, below_upper,
             "≤")
    quarter = sp.maximum(w * (1 - w), w, sp.Interval(0, 1))
    pf.holds("completing the square", f"{quarter} − a(1 − a) = (a − 1/2)² ≥ 0, {quarter} its maximum",
             _a[_i] * (1 - _a[_i]), quarter,
             lambda: (sp.expand(quarter - w * (1 - w) - (w - sp.Rational(1, 2)) ** 2) == 0, "a perfect square"), "≤")

    # Cross-checks on explicit n: the differentiated Jacobian, and the bound attained at n = 2.
    for n in range(2, n_max + 1):
        _, _, J = differentiated_jacobian(n)
        pf.equal("symmetry of mixed terms", f"cross-check n = {n}: J - Jᵀ = 0", J - J.T, sp.zeros(n, n))
        pf.equal("Σ a_j = 1", f"cross-check n = {n}: J·1 = 0", J * sp.ones(n, 1), sp.zeros(n, 1))
    pw = sp.Symbol("p", positive=True)
    J2 = jacobian_in_weights(sp.Matrix([pw, 1 - pw]))

    def two_by_two() -> tuple[bool, str]:
        eig = [sp.factor(e) for e in J2.eigenvals()]
        biggest = sp.maximum(sum(eig), pw, sp.Interval(0, 1))  # one eigenvalue is 0
        return 0 in eig and biggest == upper, f"eigenvalues {eig}; the largest peaks at {biggest}"

    pf.holds("eigenvalues, n = 2", f"λ ∈ {{0, 2p(1 − p)}}, maximal {upper} at p = 1/2: the bound is attained",
             sp.Symbol("lambda_max"), upper, two_by_two)
    return pf.finish(Result(max_eigenvalue=upper, min_eigenvalue=lower, diagonal_max=quarter))


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
