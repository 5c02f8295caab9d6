"""The kurtosis of q·k under a fully specified component model.

Each component is X = μ + σZ with Z standardised and symmetric (E[Z] = E[Z³] = 0, E[Z²] = 1,
E[Z⁴] = β, the family's kurtosis). The product P = q_i k_i has raw moments E[P^r] = E[q^r] E[k^r]
by independence; the score S = Σ_{i=1}^{d_k} P_i is a sum of d_k iid terms, whose fourth central
moment μ₄(S) = d_k μ₄ + 3d_k(d_k − 1) μ₂² is proved from the definitions of μ₂, μ₄ and κ by two
inductions on d_k over the centred partial sums (see ``dot_product_kurtosis``). So

    κ(S) = μ₄(S) / μ₂(S)² = κ(P)/d_k + 3(d_k − 1)/d_k.

κ(P) in the components' moments (``raw_moments``, ``_central``) is what ``.result`` hands the numeric
layer; the certificate proves the statement in κ(P), μ₂(P), μ₄(P).

The numeric layer's variance test uses this κ as a floor under the sample's (``numeric.null_moments``).
"""
from __future__ import annotations

import sympy as sp

from proofs.checker import substitute
from proofs.engine import Derivation, Proof, Result
from proofs.notation import D_K, MU_K, MU_Q, P_TERM, S, VAR_K, VAR_Q, kappa, mu_2, mu_4

BETA_Q, BETA_K = sp.symbols("beta_q beta_k", positive=True)  # E[Z⁴] of each standardised family
M2, M4 = mu_2(P_TERM), mu_4(P_TERM)  # of one centred product term


def sum_fourth_moment(n):
    """μ₄ of a sum of n iid centred terms: n μ₄ + 3n(n − 1) μ₂² (what the induction proves)."""
    return n * M4 + 3 * n * (n - 1) * M2**2


def raw_moments(mean, variance, beta) -> list[sp.Expr]:
    """E[X^r], r = 0..4, for X = mean + √variance·Z: expand (mean + σZ)^r and take E[Z^j] term by term."""
    z = sp.Symbol("Z")
    z_moments = {0: 1, 1: 0, 2: 1, 3: 0, 4: beta}
    sigma = sp.sqrt(variance)
    out = []
    for r in range(5):
        poly = sp.Poly(sp.expand((mean + sigma * z) ** r), z)
        out.append(sp.expand(sum(c * z_moments[j] for (j,), c in poly.terms())))
    return out


def _central(raw: list[sp.Expr]) -> tuple[sp.Expr, sp.Expr]:
    """(μ₂, μ₄) of a variable with raw moments ``raw``: E[(X − m)^r] expanded by the binomial theorem."""
    x = sp.Symbol("X")
    m = raw[1]

    def central(r):
        poly = sp.Poly(sp.expand((x - m) ** r), x)
        return sp.expand(sum(c * raw[j] for (j,), c in poly.terms()))

    return central(2), central(4)


_I = sp.Symbol("i", integer=True, positive=True)
_M0 = sp.Symbol("m", integer=True, nonnegative=True)
_M1 = sp.Symbol("m", integer=True, positive=True)
_X = sp.Symbol("X")  # any random quantity: the moment definitions hold for every one
Q_C, K_C = sp.IndexedBase("q", real=True), sp.IndexedBase("k", real=True)
Y_C = sp.IndexedBase("Y", real=True)  # the centred terms Y_i = q_i k_i − E[q_i k_i]
C_PART = sp.IndexedBase("C", real=True)  # their partial sums C_m = Σ_{i ≤ m} Y_i
K4 = sp.Function("K4")  # E[X⁴] − 3E[X²]²: for centred X the fourth cumulant, additive over independent terms
E = sp.Function("E")


def _pair(i):
    return Q_C[i] * K_C[i]


def _centred(top):
    return sp.Sum(Y_C[_I], (_I, 1, top))


def dot_product_kurtosis(*, fourth_moment_of_sum=sum_fourth_moment) -> Derivation:
    """μ₄(S) and κ(S) from definitions, by two inductions on d_k over the centred partial sums C_d:
    E[C_d²] = d μ₂(P), and K4(C_d) = E[C_d⁴] − 3E[C_d²]² = d (μ₄(P) − 3μ₂(P)²), whose step needs no
    E[C_{d−1}²] (it cancels). ``fourth_moment_of_sum(n)`` is the closed form the proof concludes μ₄(S)
    equals before the stated form (pass a wrong one to see it refused).

    ``.result.kurtosis`` writes κ(P) out in the components' moments (``raw_moments``, ``_central``: the
    binomial expansion of E[(μ + σZ)^r]), for the numeric layer."""
    pf = Proof("dot-product-kurtosis")
    d, m2, m4 = D_K, M2, M4
    def_s = pf.define(S, sp.Sum(_pair(_I), (_I, 1, d)), "the score: S = Σ_{i=1}^{d_k} q_i k_i")
    def_y = pf.define(Y_C[_I], _pair(_I) - E(_pair(_I)), "the centred term Y_i = q_i k_i − E[q_i k_i]", forall=[_I])
    def_c = pf.define(C_PART[_M0], _centred(_M0), "the centred partial sum C_m = Σ_{i=1}^{m} Y_i (C_0 = 0)",
                      forall=[_M0])
    def_m2 = pf.define(mu_2(_X), E((_X - E(_X)) ** 2), "μ₂(X) = E[(X − E X)²]", forall=[_X])
    def_m4 = pf.define(mu_4(_X), E((_X - E(_X)) ** 4), "μ₄(X) = E[(X − E X)⁴]", forall=[_X])
    def_kappa = pf.define(kappa(_X), mu_4(_X) / mu_2(_X) ** 2, "the kurtosis κ(X) = μ₄(X)/μ₂(X)²", forall=[_X])
    def_k4 = pf.define(K4(_X), E(_X**4) - 3 * E(_X**2) ** 2, "K4(X) = E[X⁴] − 3E[X²]²", forall=[_X])
    split = pf.cite_external(sp.Eq(_centred(_M1), _centred(_M1 - 1) + Y_C[_M1]),
                             "the recursion that defines a finite sum: Σ_{i=1}^{m} a_i = Σ_{i=1}^{m−1} a_i + a_m",
                             "Σ_{i=1}^{m} Y_i = Σ_{i=1}^{m−1} Y_i + Y_m, m ≥ 1", forall=[_M1])
    constant = pf.assume(sp.Eq(E(E(_X)), E(_X)), "E[X] is a constant, so its expectation is itself", forall=[_X])
    before, term = C_PART[_M1 - 1], Y_C[_M1]
    independent = {(a, b): pf.assume(sp.Eq(E(before**a * term**b), E(before**a) * E(term**b)),
                                     f"independence: C_(m−1) (pairs 1..m−1) and Y_m (pair m), so E[C^{a} Y^{b}] "
                                     "factorises", forall=[_M1]) for a, b in ((1, 1), (3, 1), (2, 2), (1, 3))}
    alike = {f: pf.assume(sp.Eq(f(_pair(_I)), f(P_TERM)), f"the terms q_i k_i are distributed like P: "
                          f"{f}(q_i k_i) = {f}(P)", forall=[_I]) for f in (mu_2, mu_4)}

    # The d-th centred term and the sum before it.
    prev, y = C_PART[d - 1], Y_C[d]
    lin_y = pf.linearity(E(_pair(d) - E(_pair(d))), E(_pair(d)) - E(E(_pair(d))), "linearity", operator=E,
                         random=[Q_C, K_C])
    mean_y = pf.rewrite(E(y), 0, [def_y, lin_y, constant], "E[Y_d] = E[q_d k_d] − E[q_d k_d] = 0")
    moment = {}
    for f, r, definition in ((mu_2, 2, def_m2), (mu_4, 4, def_m4)):
        own = pf.rewrite(E(y**r), f(_pair(d)), [def_y, definition], f"E[Y_d^{r}] = {f}(q_d k_d)")
        same = pf.rewrite(f(_pair(d)), f(P_TERM), [alike[f]], f"{f}(q_d k_d) = {f}(P)")
        moment[r] = pf.chain([own, same], E(y**r), "=", f(P_TERM), f"E[Y_d^{r}] = {f}(P)")
    terms = sp.Sum(E(Y_C[_I]), (_I, 1, d - 1))
    spelled = sp.Sum(E(_pair(_I) - E(_pair(_I))), (_I, 1, d - 1))
    spread = sp.Sum(E(_pair(_I)), (_I, 1, d - 1)) - sp.Sum(E(E(_pair(_I))), (_I, 1, d - 1))
    mean_prev = pf.chain([
        pf.rewrite(E(prev), E(_centred(d - 1)), [def_c], "C_{d−1} = Y_1 + … + Y_{d−1}"),
        pf.linearity(E(_centred(d - 1)), terms, "linearity of E over the sum", operator=E, random=[Y_C]),
        pf.rewrite(terms, spelled, [def_y], "Y_i = q_i k_i − E[q_i k_i]"),
        pf.linearity(spelled, spread, "linearity", operator=E, random=[Q_C, K_C]),
        pf.rewrite(spread, 0, [constant], "E[E[q_i k_i]] = E[q_i k_i]")], E(prev), "=", 0, "E[C_{d−1}] = 0")
    step_sum = pf.rewrite(C_PART[d], prev + y, [def_c, split], "C_d = C_{d−1} + Y_d")
    zero = pf.rewrite(C_PART[0], 0, [def_c], "C_0 is the empty sum")
    e_zero = pf.linearity(E(0), 0, "E of the constant 0", operator=E)
    square = pf.linearity(E((prev + y) ** 2), E(prev**2) + 2 * E(prev * y) + E(y**2), "linearity", operator=E,
                          random=[C_PART, Y_C])

    # E[C_d²] = d μ₂(P), by induction on d.
    variance = sp.Eq(E(C_PART[d] ** 2), d * m2, evaluate=False)
    base2 = pf.rewrite(E(C_PART[0] ** 2), substitute(variance, {d: 0}).rhs, [zero, e_zero], "base case d = 0")
    hyp2 = pf.hypothesis(substitute(variance, {d: d - 1}), "E[C_{d−1}²] = (d − 1) μ₂(P)")
    step2 = pf.rewrite(E(C_PART[d] ** 2), d * m2, [step_sum, square, independent[1, 1], mean_y, hyp2, moment[2]],
                       "step: E[(C + Y)²] = E[C²] + 2E[C]E[Y] + E[Y²] = (d − 1)μ₂ + μ₂")
    second = pf.induction(variance, d, 0, base2, step2, hyp2, "E[C_d²] = d μ₂(P) for every d ≥ 0")

    # K4(C_d) = d (μ₄ − 3μ₂²), by induction on d.
    cumulant = sp.Eq(K4(C_PART[d]), d * (m4 - 3 * m2**2), evaluate=False)
    base4 = pf.rewrite(K4(C_PART[0]), substitute(cumulant, {d: 0}).rhs, [zero, def_k4, e_zero], "base case d = 0")
    hyp4 = pf.hypothesis(substitute(cumulant, {d: d - 1}), "K4(C_{d−1}) = (d − 1)(μ₄(P) − 3μ₂(P)²)")
    opened = pf.rewrite(K4(C_PART[d]), E(C_PART[d] ** 4) - 3 * E(C_PART[d] ** 2) ** 2, [def_k4], "K4's definition")
    fold = pf.rewrite(E(prev**4), K4(prev) + 3 * E(prev**2) ** 2, [def_k4], "E[C⁴] = K4(C) + 3E[C²]²")
    fourth = pf.linearity(E((prev + y) ** 4), E(prev**4) + 4 * E(prev**3 * y) + 6 * E(prev**2 * y**2)
                          + 4 * E(prev * y**3) + E(y**4), "linearity", operator=E, random=[C_PART, Y_C])
    step4 = pf.rewrite(K4(C_PART[d]), d * (m4 - 3 * m2**2),
                       [opened, step_sum, fourth, square, *independent.values(), mean_y, mean_prev, fold, hyp4,
                        moment[2], moment[4]],
                       "step: E[(C + Y)⁴] − 3E[(C + Y)²]² = K4(C) + E[Y⁴] − 3E[Y²]² (the E[C²] terms cancel)")
    cumulant_d = pf.induction(cumulant, d, 0, base4, step4, hyp4, "K4(C_d) = d (μ₄(P) − 3μ₂(P)²) for every d ≥ 0")

    # Back to S: S − E[S] = C_{d_k}.
    whole = sp.Sum(_pair(_I), (_I, 1, d))
    means = sp.Sum(E(_pair(_I)), (_I, 1, d))
    centred_sum = sp.Sum(_pair(_I) - E(_pair(_I)), (_I, 1, d))
    centred = pf.chain([
        pf.rewrite(S - E(S), whole - means, [def_s, pf.linearity(E(whole), means, "linearity of E over the sum",
                                                                 operator=E, random=[Q_C, K_C])], "E[S] = Σ E[q_i k_i]"),
        pf.linearity(centred_sum, whole - means, "the sum of differences"),
        pf.rewrite(C_PART[d], centred_sum, [def_c, def_y], "C_{d_k} = Σ (q_i k_i − E[q_i k_i])")],
        S - E(S), "=", C_PART[d], "S − E[S] = C_{d_k}")
    fold_d = pf.rewrite(E(C_PART[d] ** 4), K4(C_PART[d]) + 3 * E(C_PART[d] ** 2) ** 2, [def_k4], "E[C⁴] = K4(C) + 3E[C²]²")
    closed = pf.rewrite(mu_4(S), fourth_moment_of_sum(d), [def_m4, centred, fold_d, cumulant_d, second],
                        "μ₄(S) = E[C_d⁴] = K4(C_d) + 3E[C_d²]² = d(μ₄ − 3μ₂²) + 3d²μ₂²")
    stated4 = pf.rewrite(mu_4(S), pf.claimed(mu_4(S)), [closed], "μ₄(S) in the stated form")
    var_s = pf.rewrite(mu_2(S), d * m2, [def_m2, centred, second], "μ₂(S) = E[C_d²] = d μ₂(P)")
    pf.rewrite(kappa(S), pf.claimed(kappa(S)), [def_kappa, stated4, var_s],
               "κ(S) = μ₄(S)/μ₂(S)², and κ(P) = μ₄(P)/μ₂(P)²")

    raw_q, raw_k = raw_moments(MU_Q, VAR_Q, BETA_Q), raw_moments(MU_K, VAR_K, BETA_K)
    mu2_p, mu4_p = _central([sp.expand(a * b) for a, b in zip(raw_q, raw_k)])
    kappa_s = pf.claimed(kappa(S)).subs(kappa(P_TERM), M4 / M2**2)
    explicit = kappa_s.subs({M4: mu4_p, M2: mu2_p})
    return pf.finish(Result(kurtosis=explicit, symbols=(D_K, MU_Q, MU_K, VAR_Q, VAR_K, BETA_Q, BETA_K)))
