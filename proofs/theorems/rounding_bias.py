"""Round-to-nearest is unbiased; truncation is not.

Let the exact value be x = a + U h inside a rounding cell [a, a + h] (h the spacing, one ulp),
with its position U uniform on [0, 1]. Write U = (B + W)/2: B ∈ {0, 1} says which half of the cell x
lies in (Bernoulli(1/2)) and W its place within that half (uniform on [0, 1], independent of B); then
U is uniform on [0, 1]. Round-to-nearest returns a in the lower half (error −U h = −W h/2) and a + h
in the upper one (error (1 − U) h = (1 − W) h/2): in both cases RN(x) − x = (B − W) h/2, of mean 0 and
variance h²/12. Truncation toward zero (a > 0) returns a: error −U h = −(B + W) h/2, of mean −h/2,
half an ulp toward zero every time. Everything after the definitions is linearity of E and rewriting
with the moments of B and W, checked by the checker.

The harness's rounding-bias invariant tests the mean error of a kernel's half-precision output,
in ulps, against 0 with a margin of a fifth of this truncation bias.
"""
from __future__ import annotations

import sympy as sp

from proofs.engine import Derivation, Proof, Result

h = sp.Symbol("h", positive=True)
B, W = sp.symbols("B W", real=True)  # the half of the cell, the place within the half
ERR_RN, ERR_TRUNC = sp.Symbol("RN(x) - x"), sp.Symbol("trunc(x) - x")  # the two rounding errors
E, Var = sp.Function("E"), sp.Function("Var")
_X = sp.Symbol("X")


def round_to_nearest_unbiased() -> Derivation:
    pf = Proof("round-to-nearest-unbiased")
    rn = pf.define(ERR_RN, (B - W) * h / 2, "round to nearest: U = (B + W)/2 < 1/2 (B = 0) rounds down, error "
                   "−U h = −W h/2; U ≥ 1/2 (B = 1) rounds up, error (1 − U) h = (1 − W) h/2: both (B − W) h/2")
    trunc = pf.define(ERR_TRUNC, -(B + W) * h / 2, "truncation toward zero (a > 0) rounds down: error −U h")
    def_var = pf.define(Var(_X), E(_X**2) - E(_X) ** 2, "the variance: Var(X) = E(X²) − E(X)²", forall=[_X])
    half = pf.assume(sp.Eq(E(B), sp.Rational(1, 2)), "B ~ Bernoulli(1/2): x lies in either half of its cell "
                     "with probability 1/2 (U uniform)")
    support = pf.assume(sp.Eq(B**2, B), "B ∈ {0, 1}, so B² = B")
    w1 = pf.assume(sp.Eq(E(W), sp.Rational(1, 2)), "W ~ Uniform(0, 1): E[W] = ∫₀¹ w dw = 1/2")
    w2 = pf.assume(sp.Eq(E(W**2), sp.Rational(1, 3)), "W ~ Uniform(0, 1): E[W²] = ∫₀¹ w² dw = 1/3")
    independent = pf.assume(sp.Eq(E(B * W), E(B) * E(W)), "B and W are independent (U uniform)")
    moments = [half, w1, w2, independent]

    error, trunc_error = (B - W) * h / 2, -(B + W) * h / 2
    mean_lin = pf.linearity(E(error), h * E(B) / 2 - h * E(W) / 2, "linearity of E", operator=E, random=[B, W])
    mean = pf.rewrite(E(ERR_RN), pf.claimed(E(ERR_RN)), [rn, mean_lin, *moments], "E[RN(x) − x] = h(1/2 − 1/2)/2 = 0")
    square = pf.linearity(E(error**2), h**2 / 4 * (E(B**2) - 2 * E(B * W) + E(W**2)), "linearity of E",
                          operator=E, random=[B, W])
    second = pf.rewrite(E(ERR_RN**2), h**2 / 12, [rn, square, support, *moments],
                        "E[(RN(x) − x)²] = h²/4 (E[B] − 2E[B]E[W] + E[W²]) = h²/4 (1/2 − 1/2 + 1/3)")
    pf.rewrite(Var(ERR_RN), pf.claimed(Var(ERR_RN)), [def_var, second, mean], "Var = E[e²] − E[e]² = h²/12 − 0")
    trunc_lin = pf.linearity(E(trunc_error), -h * E(B) / 2 - h * E(W) / 2, "linearity of E", operator=E,
                             random=[B, W])
    pf.rewrite(E(ERR_TRUNC), pf.claimed(E(ERR_TRUNC)), [trunc, trunc_lin, *moments],
               "E[trunc(x) − x] = −h(1/2 + 1/2)/2 = −h/2: half a cell toward zero")
    rn_mean, rn_var, trunc_mean = (pf.claimed(x) for x in (E(ERR_RN), Var(ERR_RN), E(ERR_TRUNC)))
    return pf.finish(Result(h=h, rn_mean=rn_mean, rn_variance=rn_var, truncation_mean=trunc_mean.subs(h, 1),
                            truncation_mean_h=trunc_mean))
