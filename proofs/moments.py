"""Expectation over polynomials in independent random variables.

The operator encodes exactly two rules, linearity of expectation and the factorisation
E[XY] = E[X]E[Y] for independent X, Y, so a derivation that uses it relies on nothing
else about the distributions: each variable contributes only its mean and variance.
"""
from __future__ import annotations

from typing import Mapping

import sympy as sp


class IndependentMoments:
    """E[.] for polynomials in mutually independent random symbols.

    ``variables`` maps each random symbol to ``(mean, variance)``; raw moments up to
    order 2 follow from those, which is all a variance of a product needs.
    """

    def __init__(self, variables: Mapping[sp.Symbol, tuple[sp.Expr, sp.Expr]]):
        self.variables = dict(variables)

    def raw_moment(self, x: sp.Symbol, power: int) -> sp.Expr:
        mean, var = self.variables[x]
        if power == 0:
            return sp.Integer(1)
        if power == 1:
            return mean
        if power == 2:
            return var + mean**2
        raise ValueError(f"moment of order {power} of {x} needs more than a mean and a variance")

    def E(self, expr: sp.Expr) -> sp.Expr:
        randoms = list(self.variables)
        poly = sp.Poly(sp.expand(expr), *randoms)
        total = sp.Integer(0)
        for powers, coeff in poly.terms():
            term = coeff
            for x, p in zip(randoms, powers):  # independence: moments of a monomial factor
                term *= self.raw_moment(x, p)
            total += term
        return sp.expand(total)

    def var(self, expr: sp.Expr) -> sp.Expr:
        return sp.expand(self.E(expr**2) - self.E(expr) ** 2)

    def cov(self, a: sp.Expr, b: sp.Expr) -> sp.Expr:
        return sp.expand(self.E(a * b) - self.E(a) * self.E(b))
