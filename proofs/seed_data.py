"""The numbers the two seed documents give as inputs to their worked examples, as printed.

The theorems in ``proofs.theorems.worked_examples`` derive the exact values from these, and
the seed audit (``proofs.seed_audit``) sets every printed decimal beside them.
"""
from __future__ import annotations

import sympy as sp

SEED_SELF_ATTENTION = "000_6dc9c20305ca48b8.txt"  # "Self-Attention by Hand"
SEED_WITH_WEIGHTS = "002_84043d61bb2cf99b.txt"  # "Self Attention With Weights"

# The N = 2 example (in SEED_SELF_ATTENTION): X (2×4), W_Q, W_K, W_V (4×2), d_k = 2, and the matrices it prints.
SEED_X = sp.Matrix([[1, 0, 1, 0], [0, 2, 0, 2]])
SEED_W_Q = sp.Matrix([[1, 0], [0, 1], [0, 1], [1, 0]])
SEED_W_K = sp.Matrix([[1, 1], [0, 0], [1, 0], [0, 1]])
SEED_W_V = sp.Matrix([[0, 2], [1, 0], [1, 1], [0, 1]])
PRINTED_Q = sp.Matrix([[1, 1], [2, 2]])
PRINTED_K = sp.Matrix([[2, 1], [0, 2]])
PRINTED_V = sp.Matrix([[1, 3], [2, 2]])
PRINTED_S = sp.Matrix([[3, 2], [6, 4]])

# The 3-token example: raw scores QKᵀ, d_k = 4, the scaled scores it prints, and the 2-D values
# of the z₁ example.
SEED_SCORES_3 = sp.Matrix([[4, 2, 0], [1, 3, -1], [2, 0, 4]])
SEED_DK_3 = 4
PRINTED_SCALED_3 = sp.Matrix([[2, 1, 0], [sp.Rational(1, 2), sp.Rational(3, 2), -sp.Rational(1, 2)], [1, 0, 2]])
SEED_VALUES_3 = sp.Matrix([[1, 2], [3, 0], [0, 4]])  # rows v₁, v₂, v₃
