"""The symbols the softmax claims are stated in, beyond the shared ones in ``proofs.notation``.

The statements are built here, in the order the theorems in ``proofs.theorems.softmax`` prove them.
"""
from __future__ import annotations

import sympy as sp

from proofs import notation as nt

R_GAP = sp.Symbol("r", integer=True, nonnegative=True)  # n = j + r: the index j lies in 1..n
TRAILING = sp.Symbol("m", integer=True, positive=True)  # z = (t, 0, …, 0) with m = n − 1 ≥ 1 zeros


def _le(a, b):
    return sp.Le(a, b, evaluate=False)


def saturation_conjuncts() -> tuple:
    """softmax-saturation, in order: for each Jacobian entry's magnitude e (J_11 = a_1(1 − a_1),
    −J_1j = a_1 a_j, J_jj = a_j(1 − a_j), −J_jk = a_j a_k): 0 ≤ e, then e ≤ its bound."""
    t, a1, aj, ak = nt.T_LEAD, nt.A_1, nt.A_J_T, nt.A_K_T
    entries = ((a1 * (1 - a1), TRAILING * sp.exp(-t)), (a1 * aj, sp.exp(-t)), (aj * (1 - aj), sp.exp(-t)),
               (aj * ak, sp.exp(-2 * t)))
    return tuple(rel for e, bound in entries for rel in (_le(0, e), _le(e, bound)))


def spectrum_conjuncts() -> tuple:
    """softmax-jacobian-spectrum, in order: symmetry; rows sum to 0; 0 ≤ λ; λ ≤ 1/2; a_i(1 − a_i) ≤ 1/4."""
    i, j, J, a, lam = nt.I, nt.J, nt.JAC, nt.A, nt.LAMBDA
    return (sp.Eq(J[i, j], J[j, i], evaluate=False), sp.Eq(sp.Sum(J[i, j], (j, 1, nt.N)), 0, evaluate=False),
            _le(0, lam), _le(lam, sp.Rational(1, 2)), _le(a[i] * (1 - a[i]), sp.Rational(1, 4)))
