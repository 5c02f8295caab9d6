"""Softmax: normalisation, shift invariance, its Jacobian and what saturation does to it."""
from __future__ import annotations

import sympy as sp

from proofs.claims import cited
from proofs.engine import CITED, DEFINITION, Derivation, Proof, Result, identity
from proofs.notation import A as _a
from proofs.notation import A_1, A_J_T, A_K_T, C, JAC, LAMBDA, N, T_LEAD
from proofs.notation import I as _i
from proofs.notation import J as _j
from proofs.notation import K_IDX as _k
from proofs.notation import Z as _z
from proofs.validate import as_dimension

_r = sp.Symbol("r", integer=True, nonnegative=True)  # n = j + r: keeps index j inside 1..n

EXPANDED_SIZES = (2, 3, 4)  # cross-checks only: the general-n proofs stand on their own


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
    pf = Proof("softmax-normalisation")
    total = sp.Sum(softmax_index(), (_i, 1, N))
    pf.premise("definition", "a_i = exp(z_i) / Σ_k exp(z_k)", _a[_i], softmax_index(), kind=DEFINITION)
    pulled = sp.simplify(total)
    pf.equal("linearity of the sum", "the denominator does not depend on i and leaves the sum",
             pulled, sp.Sum(sp.exp(_z[_i]), (_i, 1, N)) / sp.Sum(sp.exp(_z[_k]), (_k, 1, N)))
    pf.equal("renaming a bound index", "numerator and denominator are the same sum",
             pulled.xreplace({_i: _k}), 1, subject=sp.Sum(_a[_i], (_i, 1, N)))
    pf.holds("exp > 0", "each weight is positive: a positive numerator over a sum of n ≥ 1 positive terms",
             _a[_i], 0, lambda: bool(softmax_index().is_positive), ">")
    pf.holds("explicit expansion", f"cross-check: Σ a_i = 1 for n = {EXPANDED_SIZES}",
             sp.Sum(_a[_i], (_i, 1, N)), 1,
             lambda: all(sp.simplify(sum(softmax_vector(logits(n))) - 1) == 0 for n in EXPANDED_SIZES))
    return pf.finish(Result(weights=softmax_index()))


def shift_invariance() -> Derivation:
    shifted = sp.exp(_z[_i] + C) / sp.Sum(sp.exp(_z[_k] + C), (_k, 1, N))
    pf = Proof("softmax-shift-invariance")
    split = sp.expand(shifted, power_exp=True)
    pf.equal("exp(x + c) = exp(c) exp(x)", "split every exponential", split,
             sp.exp(C) * sp.exp(_z[_i]) / sp.Sum(sp.exp(C) * sp.exp(_z[_k]), (_k, 1, N)))
    pulled = split.replace(lambda x: isinstance(x, sp.Sum), lambda x: sp.factor_terms(x.expand()))
    pf.equal("linearity of the sum", "exp(c) leaves the sum and cancels", pulled, softmax_index(), subject=shifted)
    z = logits(4)
    pf.equal("explicit expansion", "softmax(z + c) = softmax(z) for n = 4",
             softmax_vector([x + C for x in z]), softmax_vector(z))
    return pf.finish(Result(shift=C))


def softmax_jacobian(n=None) -> Derivation:
    """∂a_i/∂z_j = a_i(δ_ij - a_j). ``n=None``: general n in index form, plus EXPANDED_SIZES expanded.

    ``.result`` is the Jacobian: for a given n a SymPy Matrix in the weights a_1..a_n,
    for general n the index-form entry a_i (δ_ij - a_j).
    """
    sizes = EXPANDED_SIZES if n is None else (as_dimension(n, "n"),)
    subject = sp.Derivative(_a[_i], _z[_j])
    pf = Proof("softmax-jacobian") if n is None else Proof(
        f"softmax-jacobian[n={int(n)}]", statement=sp.Eq(sp.Symbol("∂a/∂z"), jacobian_in_weights(probabilities(int(n))),
                                            evaluate=False), assumptions=[f"a = softmax(z), z ∈ ℝ^{int(n)}"])
    if n is None:
        pf.premise("definition", "a_i = exp(z_i) / Σ_k exp(z_k)", _a[_i], softmax_index(), kind=DEFINITION)
        derivative = sp.diff(softmax_index(), _z[_j]).doit().subs(N, _j + _r)
        claimed = pf.claimed(subject)
        pf.holds("quotient rule + chain rule", "∂a_i/∂z_j = a_i (δ_ij - a_j), general n (index form, 1 ≤ j ≤ n; "
                 "a_i unfolded to its definition for the check)", derivative, claimed,
                 lambda: _index_identity(derivative, _unfold_weights(claimed)), subject=subject)
    for size in sizes:
        size = int(size)
        _, a, J = differentiated_jacobian(size)
        pf.equal("quotient rule + chain rule", f"n = {size}: every entry of ∂a/∂z equals diag(a) - a aᵀ",
                 J, jacobian_in_weights(a), establishes=pf.statement if n is not None else None)
    if n is None:
        return pf.finish(_a[_i] * (sp.KroneckerDelta(_i, _j) - _a[_j]))
    return pf.finish(jacobian_in_weights(probabilities(int(n))))


def _index_identity(lhs, rhs) -> tuple[bool, str]:
    """An index-form identity: refuted fast at instances (explicit i, j, n and rational logits), else simplified."""
    diff = lhs - rhs
    for i, j, r in ((1, 1, 1), (1, 2, 0), (3, 1, 2), (2, 2, 2)):
        at = diff.subs({_i: i, _j: j, _r: r}).doit()
        logits = {x: sp.Rational(k + 2, 5 + k) for k, x in enumerate(sorted(at.atoms(sp.Indexed), key=str))}
        value = sp.N(at.xreplace(logits), 30)
        if not value.is_number or abs(value) > 1e-20:
            return False, f"refuted at i = {i}, j = {j}, n = {j + r}: difference {sp.N(value, 6)}"
    return identity(lhs, rhs)


def _unfold_weights(expr):
    """Replace every a_x by its definition exp(z_x)/Σ_k exp(z_k), with n = j + r as in the derivative."""
    unfolded = sp.sympify(expr).replace(lambda e: isinstance(e, sp.Indexed) and e.base == _a,
                                        lambda e: softmax_index(i=e.indices[0]))
    return unfolded.subs(N, _j + _r)


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
    """As one logit leads by t → ∞, every Jacobian entry → 0 (general n)."""
    t = T_LEAD
    n = sp.Symbol("n", integer=True, positive=True)
    pf = Proof("softmax-saturation")
    lead, rest = sp.exp(t) / (sp.exp(t) + n - 1), 1 / (sp.exp(t) + n - 1)
    pf.premise("definition", "z = (t, 0, …, 0): a_1 = eᵗ/(eᵗ + n − 1), a_j = a_k = 1/(eᵗ + n − 1) for j, k > 1",
               sp.Tuple(A_1, A_J_T, A_K_T), sp.Tuple(lead, rest, rest), kind=DEFINITION)
    pf.premise("definition", "J_ij = ∂a_i/∂z_j", JAC[_i, _j], sp.Derivative(_a[_i], _z[_j]), kind=DEFINITION)
    jacobian = cited("softmax-jacobian")
    pf.cite(jacobian)
    unfold = {A_1: lead, A_J_T: rest, A_K_T: rest}
    pf.holds("limit", "a_1 → 1", sp.Limit(lead, t, sp.oo), 1, lambda: sp.limit(lead, t, sp.oo) == 1)
    # The entries from the cited J_ij = a_i(δ_ij − a_j) at index pairs (1, 1), (1, j), (j, j), (j, k), not typed.
    names = {1: A_1, 2: A_J_T, 3: A_K_T}
    for (i, j), name in (((1, 1), "J_11"), ((1, 2), "J_1j"), ((2, 2), "J_jj"), ((2, 3), "J_jk")):
        entry = jacobian.statement.rhs.subs({_i: i, _j: j}).xreplace({_a[k]: v for k, v in names.items()})
        value = entry.xreplace(unfold)
        limit = sp.limit(value, t, sp.oo)
        pf.holds("limit", f"{name} = {entry} → {limit}", sp.Limit(value, t, sp.oo), limit,
                 lambda limit=limit: (limit.is_number and limit.is_finite, f"the limit evaluates to {limit}"),
                 subject=sp.Limit(entry, t, sp.oo))
    _, a, J = differentiated_jacobian(3)
    z = logits(3)
    J_t = J.subs({z[0]: t, z[1]: 0, z[2]: 0})
    limits = J_t.applyfunc(lambda e: sp.limit(e, t, sp.oo))
    pf.holds("limit", "cross-check n = 3, from the differentiated Jacobian: every entry → 0", sp.Limit(J_t, t, sp.oo),
             limits, lambda: (all(e == 0 for e in limits), f"entrywise limits {limits.tolist()}"))
    return pf.finish(Result(limit=limits))
