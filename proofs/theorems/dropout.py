"""Attention dropout's laws (SDPA's ``dropout_p``).

With drop probability p, each weight P_j is kept independently with probability 1 - p and the
kept ones are rescaled by 1/(1 - p): o = Σ_j P_j M_j v_j / (1 - p), M_j ~ Bernoulli(1 - p). Then

  * the kept fraction is E[M_j] = 1 - p, and 1/(1 - p) is the one rescale with E[c M_j] = 1;
  * the output is unbiased: E[o] = Σ_j P_j v_j, the no-dropout output;
  * its variance is Var[o] = p/(1 - p) Σ_j P_j² v_j² (for each output component).

Proved for a symbolic number of keys n with a symbolic sum; the n = 3 case is enumerated over all
2³ masks as a cross-check.
"""
from __future__ import annotations

import itertools

import sympy as sp
from sympy.stats import Bernoulli, E, variance

from proofs.engine import Derivation, Result
from proofs.theorems._trust import premise, proof

p = sp.Symbol("p", positive=True)  # drop probability, 0 < p < 1
j = sp.Symbol("j", integer=True, positive=True)
n = sp.Symbol("n", integer=True, positive=True)
P, v = sp.IndexedBase("P"), sp.IndexedBase("v")
SUM_SQ = sp.Symbol("S_2", nonnegative=True)  # Σ_j P_j² v_j², the one data-dependent input of the variance

E_M, VAR_M = sp.Symbol("E[M_j]"), sp.Symbol("Var[M_j]")
E_O, VAR_O = sp.Symbol("E[o]"), sp.Symbol("Var[o]")
RESCALE = sp.Symbol("c")


def _mask():
    return Bernoulli("M", 1 - p)


def _bernoulli_premise(pf) -> None:
    premise(pf, "definition of dropout", "M_j ~ Bernoulli(1 - p), independent over j; o = Σ_j P_j M_j v_j/(1 - p)",
            sp.Symbol("M_j"), sp.Symbol("Bernoulli(1 - p)"), "~", kind="definition")


def dropout_kept_fraction() -> Derivation:
    pf = proof("dropout-kept-fraction", sp.And(sp.Eq(E_M, 1 - p), sp.Eq(RESCALE, 1 / (1 - p))))
    _bernoulli_premise(pf)
    keep = sp.simplify(E(_mask()))
    pf.equal("expectation of a Bernoulli variable", "E[M_j] = 1·(1 - p) + 0·p", keep, 1 - p)
    c = sp.Symbol("c", positive=True)
    solutions = sp.solve(sp.Eq(c * keep, 1), c)
    pf.holds("solve E[c M_j] = 1", "the rescale that keeps each weight's expectation: one solution, c = 1/(1 - p)",
             sp.Symbol("c"), 1 / (1 - p), lambda: (len(solutions) == 1 and sp.simplify(solutions[0] - 1 / (1 - p)) == 0,
                                                   f"solutions {solutions}"))
    return pf.finish(Result(p=p, keep=keep, rescale=solutions[0] if solutions else None))


def _output() -> sp.Expr:
    return sp.Sum(P[j] * v[j] * sp.Symbol("M_j") / (1 - p), (j, 1, n))


def dropout_unbiased() -> Derivation:
    no_dropout = sp.Sum(P[j] * v[j], (j, 1, n))
    pf = proof("dropout-unbiased", sp.Eq(E_O, no_dropout))
    _bernoulli_premise(pf)
    premise(pf, "linearity of expectation", "E[Σ_j a_j M_j] = Σ_j a_j E[M_j] for constants a_j",
            sp.Symbol("E[Σ a_j M_j]"), sp.Symbol("Σ a_j E[M_j]"), kind="cited",
            reference="linearity of expectation (any textbook of probability)")
    keep = sp.simplify(E(_mask()))
    pf.equal("expectation of a Bernoulli variable", "E[M_j] = 1 - p", keep, 1 - p)
    expected = _output().replace(sp.Symbol("M_j"), keep)
    pf.equal("linearity, then E[M_j] = 1 - p", "E[o] = Σ_j P_j v_j E[M_j]/(1 - p) = Σ_j P_j v_j", expected, no_dropout)
    pf.equal("cross-check, n = 3", "E[o] by enumerating all 2³ masks equals Σ_j P_j v_j",
             _enumerated(3)[0], sum(sp.Symbol(f"P_{i}") * sp.Symbol(f"v_{i}") for i in range(3)))
    return pf.finish(Result(p=p, mean=no_dropout))


def dropout_variance() -> Derivation:
    sum_sq = sp.Sum(P[j] ** 2 * v[j] ** 2, (j, 1, n))
    formula = p / (1 - p) * sum_sq
    pf = proof("dropout-variance", sp.Eq(VAR_O, formula))
    _bernoulli_premise(pf)
    premise(pf, "Bienaymé's formula", "Var[Σ_j a_j M_j] = Σ_j a_j² Var[M_j] for independent M_j",
            sp.Symbol("Var[Σ a_j M_j]"), sp.Symbol("Σ a_j² Var[M_j]"), kind="cited",
            reference="Bienaymé formula for sums of independent variables (Bienaymé, 1853)")
    var_m = sp.factor(variance(_mask()))
    pf.equal("variance of a Bernoulli variable", "Var[M_j] = E[M_j²] - E[M_j]² = p(1 - p)", var_m, p * (1 - p))
    by_bienayme = sp.Sum((P[j] * v[j] / (1 - p)) ** 2 * var_m, (j, 1, n))
    pf.equal("Bienaymé, then Var[M_j] = p(1 - p)", "Var[o] = Σ_j (P_j v_j/(1 - p))² p(1 - p)", by_bienayme, formula)
    pf.equal("cross-check, n = 3", "Var[o] by enumerating all 2³ masks equals p/(1 - p) Σ_j P_j² v_j²",
             _enumerated(3)[1], p / (1 - p) * sum(sp.Symbol(f"P_{i}") ** 2 * sp.Symbol(f"v_{i}") ** 2 for i in range(3)))
    # The proved formula with its one data-dependent sum named, for lambdify(p, S_2).
    return pf.finish(Result(p=p, sum_sq=SUM_SQ, variance=formula, variance_of_sum=formula.subs(sum_sq, SUM_SQ)))


def _enumerated(m: int) -> tuple[sp.Expr, sp.Expr]:
    """(E[o], Var[o]) for m keys by summing over every mask with its probability."""
    Ps, vs = [sp.Symbol(f"P_{i}") for i in range(m)], [sp.Symbol(f"v_{i}") for i in range(m)]
    mean = second = sp.Integer(0)
    for mask in itertools.product((0, 1), repeat=m):
        weight = sp.Mul(*[(1 - p) if kept else p for kept in mask])
        o = sum(P_i * v_i * kept / (1 - p) for P_i, v_i, kept in zip(Ps, vs, mask))
        mean += weight * o
        second += weight * o ** 2
    return sp.simplify(mean), sp.simplify(second - mean ** 2)
