"""Round-to-nearest is unbiased; truncation is not.

Let the exact value be x = a + U h inside a rounding cell [a, a + h] (h the spacing, one ulp),
with its position U uniform on [0, 1]. Round-to-nearest returns a or a + h, whichever is nearer:
its error is -U h for U < 1/2 and (1 - U) h otherwise, of mean 0 and variance h²/12. Truncation
toward zero (a > 0) returns a: error -U h, of mean -h/2, half an ulp toward zero every time.
The harness's rounding-bias invariant tests the mean error of a kernel's half-precision output,
in ulps, against 0 with a margin of a fifth of this truncation bias.
"""
from __future__ import annotations

import sympy as sp
from sympy.stats import E, Uniform, variance

from proofs.engine import Derivation, Result
from proofs.theorems._trust import premise, proof

h = sp.Symbol("h", positive=True)
E_RN, VAR_RN, E_TRUNC = sp.Symbol("E[RN(x) - x]"), sp.Symbol("Var[RN(x) - x]"), sp.Symbol("E[trunc(x) - x]")


def round_to_nearest_unbiased() -> Derivation:
    pf = proof("round-to-nearest-unbiased",
               sp.And(sp.Eq(E_RN, 0), sp.Eq(VAR_RN, h ** 2 / 12), sp.Eq(E_TRUNC, -h / 2)))
    premise(pf, "position in the cell", "x = a + U h with U ~ Uniform(0, 1): the exact value's place inside its "
            "rounding cell is uniform (values carrying many more significant bits than the output format)",
            sp.Symbol("U"), sp.Symbol("Uniform(0, 1)"), "~", kind="assumption")
    premise(pf, "definition of the roundings", "RN(x) - x = -U h if U < 1/2 else (1 - U) h; trunc(x) - x = -U h "
            "(a > 0: toward zero)", sp.Symbol("RN(x) - x"), sp.Symbol("Piecewise"), kind="definition")
    u = Uniform("U", 0, 1)
    rn_error = sp.Piecewise((-u * h, u < sp.Rational(1, 2)), ((1 - u) * h, True))
    trunc_error = -u * h
    rn_mean = sp.simplify(E(rn_error))
    rn_var = sp.simplify(variance(rn_error))
    trunc_mean = sp.simplify(E(trunc_error))
    pf.equal("integration over U", "E[RN(x) - x] = ∫₀^½ -u h du + ∫_½^1 (1 - u) h du = 0", rn_mean, 0)
    pf.equal("integration over U", "Var[RN(x) - x] = h²/12", rn_var, h ** 2 / 12)
    pf.equal("integration over U", "E[trunc(x) - x] = -h/2: half a cell toward zero", trunc_mean, -h / 2)
    premise(pf, "central limit theorem", "the mean of many independent row errors is approximately normal, so "
            "a z-test judges it", sp.Symbol("mean"), sp.Symbol("Normal"), "~", kind="cited",
            reference="central limit theorem (Lindeberg–Lévy)")
    return pf.finish(Result(h=h, rn_mean=rn_mean, rn_variance=rn_var, truncation_mean=trunc_mean.subs(h, 1),
                            truncation_mean_h=trunc_mean))
