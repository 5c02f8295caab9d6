"""attention-proofs, symbolic layer: checked SymPy derivations of the laws of attention.

Importing this package needs only SymPy (no torch, no numpy-heavy machinery).
"""
from proofs.claims import CLAIMS, Claim, claim, derive
from proofs.engine import PREMISE_KINDS, Derivation, Proof, Step
from proofs.seed_audit import seed_audit
from proofs.theorems.dot_product import dot_product_moments
from proofs.theorems.online_softmax import merge as merge_states
from proofs.theorems.online_softmax import online_softmax_merge
from proofs.theorems.softmax import softmax_jacobian

__all__ = [
    "CLAIMS", "Claim", "Derivation", "PREMISE_KINDS", "Proof", "Step", "claim", "derive",
    "dot_product_moments", "merge_states", "online_softmax_merge", "seed_audit", "softmax_jacobian",
]
