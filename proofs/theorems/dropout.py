"""Attention dropout's laws (SDPA's ``dropout_p``).

With drop probability p, each weight P_j is kept independently with probability 1 - p and the
kept ones are rescaled by 1/(1 - p): o = Σ_j P_j M_j v_j / (1 - p), M_j ~ Bernoulli(1 - p). Then

  * the kept fraction is E[M_j] = 1 - p, and 1/(1 - p) is the one rescale with E[c M_j] = 1;
  * the output is unbiased: E[o] = Σ_j P_j v_j, the no-dropout output;
  * its variance is Var[o] = p/(1 - p) Σ_j P_j² v_j² (for each output component).

Proved for a symbolic number of keys n with a symbolic sum; the n = 3 case is enumerated over all
2³ masks as a cross-check. The derivation works in the keep probability q = 1 - p, declared positive
(so p < 1 and the rescale's denominator is known non-zero); results are handed out in p.
"""
from __future__ import annotations

import itertools

import sympy as sp
from sympy.stats import Bernoulli, E, variance

from proofs.engine import Derivation, Proof, Result

p = sp.Symbol("p", positive=True)  # drop probability, 0 < p < 1: the public parameter of the results
q = sp.Symbol("q", positive=True)  # keep probability 1 - p
j = sp.Symbol("j", integer=True, positive=True)
n = sp.Symbol("n", integer=True, positive=True)
P, v = sp.IndexedBase("P"), sp.IndexedBase("v")
SUM_SQ = sp.Symbol("S_2", nonnegative=True)  # Σ_j P_j² v_j², the one data-dependent input of the variance

E_M, VAR_M = sp.Symbol("E[M_j]"), sp.Symbol("Var[M_j]")
E_O, VAR_O = sp.Symbol("E[o]"), sp.Symbol("Var[o]")
RESCALE = sp.Symbol("c")


def _mask():
    return Bernoulli("M", q)


def _in_p(expr):
    return expr.subs(q, 1 - p)


def _bernoulli_premise(pf) -> None:
    pf.premise("definition of dropout", "M_j ~ Bernoulli(1 - p), independent over j; o = Σ_j P_j M_j v_j/(1 - p)",
               sp.Symbol("M_j"), sp.Symbol("Bernoulli(1 - p)"), "~", kind="definition")


def dropout_kept_fraction() -> Derivation:
    pf = Proof("dropout-kept-fraction")
    _bernoulli_premise(pf)
    keep = sp.simplify(E(_mask()))
    pf.equal("expectation of a Bernoulli variable", "E[M_j] = 1·q + 0·(1 - q) = q = 1 - p", keep,
             pf.claimed(E_M), subject=E_M)
    c = sp.Symbol("c", positive=True)
    solutions = sp.solve(sp.Eq(c * keep, 1), c)
    stated = pf.claimed(RESCALE)
    pf.holds("solve E[c M_j] = 1", "the rescale that keeps each weight's expectation: one solution, c = 1/q "
             "= 1/(1 - p)", RESCALE, stated,
             lambda: (len(solutions) == 1 and sp.simplify(solutions[0] - stated) == 0, f"solutions {solutions}"),
             subject=RESCALE)
    return pf.finish(Result(p=p, keep=_in_p(keep), rescale=_in_p(solutions[0]) if solutions else None))


def _output() -> sp.Expr:
    return sp.Sum(P[j] * v[j] * sp.Symbol("M_j") / q, (j, 1, n))


def dropout_unbiased() -> Derivation:
    pf = Proof("dropout-unbiased")
    no_dropout = pf.claimed(E_O)
    _bernoulli_premise(pf)
    pf.premise("linearity of expectation", "E[Σ_j a_j M_j] = Σ_j a_j E[M_j] for constants a_j",
               sp.Symbol("E[Σ a_j M_j]"), sp.Symbol("Σ a_j E[M_j]"), kind="cited",
               reference="linearity of expectation (any textbook of probability)")
    keep = sp.simplify(E(_mask()))
    pf.equal("expectation of a Bernoulli variable", "E[M_j] = q = 1 - p", keep, q)
    expected = _output().replace(sp.Symbol("M_j"), keep)
    pf.equal("linearity, then E[M_j] = q", "E[o] = Σ_j P_j v_j E[M_j]/q = Σ_j P_j v_j", expected, no_dropout,
             subject=E_O)
    pf.equal("cross-check, n = 3", "E[o] by enumerating all 2³ masks equals Σ_j P_j v_j",
             _enumerated(3)[0], sum(sp.Symbol(f"P_{i}") * sp.Symbol(f"v_{i}") for i in range(3)))
    return pf.finish(Result(p=p, mean=no_dropout))


def dropout_variance() -> Derivation:
    sum_sq = sp.Sum(P[j] ** 2 * v[j] ** 2, (j, 1, n))
    pf = Proof("dropout-variance")
    formula = pf.claimed(VAR_O)  # (1 - q)/q Σ_j P_j² v_j², as the catalogue states it
    _bernoulli_premise(pf)
    pf.premise("Bienaymé's formula", "Var[Σ_j a_j M_j] = Σ_j a_j² Var[M_j] for independent M_j",
               sp.Symbol("Var[Σ a_j M_j]"), sp.Symbol("Σ a_j² Var[M_j]"), kind="cited",
               reference="Bienaymé formula for sums of independent variables (Bienaymé, 1853)")
    var_m = sp.factor(variance(_mask()))
    pf.equal("variance of a Bernoulli variable", "Var[M_j] = E[M_j²] - E[M_j]² = q(1 - q) = p(1 - p)", var_m,
             q * (1 - q))
    by_bienayme = sp.Sum((P[j] * v[j] / q) ** 2 * var_m, (j, 1, n))
    pf.equal("Bienaymé, then Var[M_j] = q(1 - q)", "Var[o] = Σ_j (P_j v_j/q)² q(1 - q) = (1 - q)/q Σ_j P_j² v_j²",
             by_bienayme, formula, subject=VAR_O)
    pf.equal("cross-check, n = 3", "Var[o] by enumerating all 2³ masks equals p/(1 - p) Σ_j P_j² v_j²",
             _enumerated(3)[1], (1 - q) / q * sum(sp.Symbol(f"P_{i}") ** 2 * sp.Symbol(f"v_{i}") ** 2 for i in range(3)))
    # The proved formula in p, and with its one data-dependent sum named, for lambdify(p, S_2).
    return pf.finish(Result(p=p, sum_sq=SUM_SQ, variance=_in_p(formula), variance_of_sum=_in_p(formula.subs(sum_sq, SUM_SQ))))


def _enumerated(m: int) -> tuple[sp.Expr, sp.Expr]:
    """(E[o], Var[o]) for m keys by summing over every mask with its probability."""
    Ps, vs = [sp.Symbol(f"P_{i}") for i in range(m)], [sp.Symbol(f"v_{i}") for i in range(m)]
    mean = second = sp.Integer(0)
    for mask in itertools.product((0, 1), repeat=m):
        weight = sp.Mul(*[q if kept else 1 - q for kept in mask])
        o = sum(P_i * v_i * kept / q for P_i, v_i, kept in zip(Ps, vs, mask))
        mean += weight * o
        second += weight * o ** 2
    return sp.simplify(mean), sp.simplify(second - mean ** 2)
