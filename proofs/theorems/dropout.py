"""Attention dropout's laws (SDPA's ``dropout_p``).

With drop probability p, each weight P_j is kept independently with probability q = 1 − p and the
kept ones are rescaled by 1/q: o = Σ_j P_j M_j v_j / q, M_j ~ Bernoulli(q). Then

  * the kept fraction is E[M_j] = q, E[c M_j] = c q for any rescale c, so 1/q is the one with E[M_j/q] = 1;
  * the output is unbiased: E[o] = Σ_j P_j v_j, the no-dropout output;
  * its variance is Var[o] = (1 − q)/q Σ_j P_j² v_j² = p/(1 − p) Σ_j P_j² v_j² (each output component).

Proved for a symbolic number of keys n from premises the checker rewrites: the mask's law
Pr(M_j = 1) = q, its support {0, 1} (E[M_j] = Pr(M_j = 1) and M_j² = M_j), Var(X) = E(X²) − E(X)²,
linearity of E over the symbolic sum, and Bienaymé's formula for the independent masks (cited). The
derivation works in the keep probability q, declared positive (so p < 1 and the rescale's denominator
is known non-zero); results are handed out in p.
"""
from __future__ import annotations

import sympy as sp

from proofs.engine import Derivation, Proof, Result

p = sp.Symbol("p", positive=True)  # drop probability, 0 < p < 1: the public parameter of the results
q = sp.Symbol("q", positive=True)  # keep probability 1 - p
j = sp.Symbol("j", integer=True, positive=True)
n = sp.Symbol("n", integer=True, positive=True)
P, v = sp.IndexedBase("P"), sp.IndexedBase("v")
M = sp.IndexedBase("M", real=True)  # the masks M_j
c = sp.Symbol("c", positive=True)  # a rescale of the kept weights
SUM_SQ = sp.Symbol("S_2", nonnegative=True)  # Σ_j P_j² v_j², the one data-dependent input of the variance

E, Var = sp.Function("E"), sp.Function("Var")
Pr = sp.Function("Pr")  # the probability of an event
_X = sp.Symbol("X")  # any random quantity: Var's definition holds for every one

OUTPUT = sp.Sum(P[j] * M[j] * v[j] / q, (j, 1, n))  # o, one output component
NO_DROPOUT = sp.Sum(P[j] * v[j], (j, 1, n))
SUM_SQUARES = sp.Sum(P[j] ** 2 * v[j] ** 2, (j, 1, n))


def _in_p(expr):
    return expr.subs(q, 1 - p)


def _mask_law(pf: Proof):
    """Premises on the masks: Bernoulli(q) on {0, 1}. Returns (E[M_j] = Pr(M_j = 1), Pr(M_j = 1) = q, M_j² = M_j)."""
    support = pf.assume(sp.Eq(E(M[j]), Pr(sp.Eq(M[j], 1))),
                        "M_j takes the values 0 and 1: E[M_j] = 0·Pr(M_j = 0) + 1·Pr(M_j = 1)", forall=[j])
    law = pf.assume(sp.Eq(Pr(sp.Eq(M[j], 1)), q), "dropout keeps each weight with probability q = 1 − p: "
                    "M_j ~ Bernoulli(q)", forall=[j])
    square = pf.assume(sp.Eq(M[j] ** 2, M[j]), "M_j ∈ {0, 1}, so M_j² = M_j", forall=[j])
    return support, law, square


def dropout_kept_fraction() -> Derivation:
    pf = Proof("dropout-kept-fraction")
    support, law, _ = _mask_law(pf)
    pf.rewrite(E(M[j]), pf.claimed(E(M[j])), [support, law], "E[M_j] = Pr(M_j = 1) = q")
    scaled = pf.linearity(E(c * M[j]), c * E(M[j]), "a rescale c is a constant: it leaves E", operator=E, random=[M])
    pf.rewrite(E(c * M[j]), pf.claimed(E(c * M[j])), [scaled, support, law], "E[c M_j] = c q")
    unit = pf.linearity(E(M[j] / q), E(M[j]) / q, "1/q is a constant: it leaves E", operator=E, random=[M])
    pf.rewrite(E(M[j] / q), pf.claimed(E(M[j] / q)), [unit, support, law], "E[M_j/q] = q/q = 1")
    keep = pf.claimed(E(M[j]))
    rescale = (pf.stated(E(M[j] / q)).lhs.args[0] / M[j])  # the rescale the statement proves unbiased
    return pf.finish(Result(p=p, keep=_in_p(keep), rescale=_in_p(rescale)))


def dropout_unbiased() -> Derivation:
    pf = Proof("dropout-unbiased")
    support, law, _ = _mask_law(pf)
    inside = sp.Sum(P[j] * v[j] * E(M[j]) / q, (j, 1, n))
    spread = pf.linearity(E(OUTPUT), inside, "linearity of E over the n terms; P_j, v_j and q are constants",
                          operator=E, random=[M])
    kept = pf.rewrite(inside, NO_DROPOUT, [support, law], "E[M_j] = Pr(M_j = 1) = q cancels the rescale 1/q")
    pf.chain([spread, kept], E(OUTPUT), "=", pf.claimed(E(OUTPUT)), "E[o] = Σ_j P_j v_j")
    return pf.finish(Result(p=p, mean=pf.claimed(E(OUTPUT))))


def dropout_variance() -> Derivation:
    pf = Proof("dropout-variance")
    formula = pf.claimed(Var(OUTPUT))  # (1 - q)/q Σ_j P_j² v_j², as the catalogue states it
    support, law, square = _mask_law(pf)
    def_var = pf.define(Var(_X), E(_X**2) - E(_X) ** 2, "the variance: Var(X) = E(X²) − E(X)²", forall=[_X])
    by_mask = sp.Sum((P[j] * v[j] / q) ** 2 * Var(M[j]), (j, 1, n))
    bienayme = pf.cite_external(sp.Eq(Var(OUTPUT), by_mask), "Bienaymé formula for sums of independent variables "
                                "(Bienaymé, 1853)", "Var[Σ_j a_j M_j] = Σ_j a_j² Var[M_j] for independent M_j, "
                                "a_j = P_j v_j/q")
    bernoulli = sp.Sum((P[j] * v[j] / q) ** 2 * (q - q**2), (j, 1, n))
    each = pf.rewrite(by_mask, bernoulli, [def_var, square, support, law],
                      "Var[M_j] = E[M_j²] − E[M_j]² = E[M_j] − E[M_j]² = q − q²")
    out = pf.linearity(bernoulli, formula, "the constant (q − q²)/q² leaves the sum")
    pf.chain([bienayme, each, out], Var(OUTPUT), "=", formula, "Var[o] = (1 − q)/q Σ_j P_j² v_j²")
    # The proved formula in p, and with its one data-dependent sum named, for lambdify(p, S_2).
    return pf.finish(Result(p=p, sum_sq=SUM_SQ, variance=_in_p(formula),
                            variance_of_sum=_in_p(formula.subs(SUM_SQUARES, SUM_SQ))))
