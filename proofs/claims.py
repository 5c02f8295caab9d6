"""The claim catalogue: every claim stated once, with a stable kebab-case id.

``numeric`` and ``kernels`` key their evidence on these ids and the report joins the
three layers by them. A claim names the theorem that derives it as "module:function"
so that importing the catalogue stays cheap.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field

SEED_SELF_ATTENTION = "000_6dc9c20305ca48b8.txt"  # "Self-Attention by Hand"
SEED_WITH_WEIGHTS = "002_84043d61bb2cf99b.txt"  # "Self Attention With Weights"


@dataclass(frozen=True)
class SeedPassage:
    file: str
    quote: str


@dataclass(frozen=True)
class Claim:
    id: str
    title: str
    statement: str
    assumptions: tuple[str, ...]
    seeds: tuple[SeedPassage, ...]
    theorem: str  # "module:function" returning a Derivation
    topic: str = "core"

    def derive(self):
        module, name = self.theorem.split(":")
        return getattr(importlib.import_module(module), name)()


def _seed(file: str, quote: str) -> SeedPassage:
    return SeedPassage(file, quote)


_DOT = "proofs.theorems.dot_product"
_SOFT = "proofs.theorems.softmax"
_ONLINE = "proofs.theorems.online_softmax"

CLAIMS: tuple[Claim, ...] = (
    Claim("dot-product-moments", "Moments of the dot product",
          "E[q·k] = d_k μ_q μ_k and Var(q·k) = d_k(σ_q²σ_k² + μ_q²σ_k² + μ_k²σ_q²).",
          ("components of q and k mutually independent", "means μ_q, μ_k; variances σ_q², σ_k²"),
          (_seed(SEED_SELF_ATTENTION, "Let components of query vector q ... be independent and identically distributed"),),
          f"{_DOT}:general_moments", "dot-product"),
    Claim("dot-product-variance", "Var(q·k) = d_k",
          "With zero-mean, unit-variance independent components: E[q·k] = 0, Var(q·k) = d_k, Std(q·k) = √d_k.",
          ("independent components", "zero mean, unit variance"),
          (_seed(SEED_SELF_ATTENTION, "Var(S) = sum_{i=1}^{d_k} Var(q_i k_i) = d_k · 1 = d_k"),
           _seed(SEED_WITH_WEIGHTS, "By the Bienaymé formula ... Var(S) = d_k")),
          f"{_DOT}:seed_variance", "dot-product"),
    Claim("dot-product-distribution-free", "Only means and variances matter",
          "The dot-product moments depend on the components only through their means and variances "
          "(Normal and Uniform components give the same values).",
          ("independent components with finite variance",),
          (_seed(SEED_WITH_WEIGHTS, "it is the exact analytic normalizer required to preserve unit variance "
                                    "under independent Gaussian distributions"),),
          f"{_DOT}:distribution_free", "dot-product"),
    Claim("scaled-score-unit-variance", "Dividing by √d_k restores unit variance",
          "Var(q·k / √d_k) = 1.",
          ("independent components", "zero mean, unit variance"),
          (_seed(SEED_SELF_ATTENTION, "Var(S / sqrt(d_k)) = (1/d_k) Var(S) = d_k/d_k = 1"),),
          f"{_DOT}:scaled_unit_variance", "dot-product"),
    Claim("dk-scaling-trap", "Dividing by d_k shrinks the variance to 1/d_k",
          "Var(q·k / d_k) = 1/d_k, which goes to 0 as d_k grows.",
          ("independent components", "zero mean, unit variance"),
          (_seed(SEED_WITH_WEIGHTS, "Dividing by d_k would shrink variance to 1/d_k → 0"),),
          f"{_DOT}:dk_scaling_trap", "dot-product"),
    Claim("prescaled-query", "Pre-scaling Q equals scaling the scores",
          "(sQ)Kᵀ = s(QKᵀ); in particular (Q/√d_k)Kᵀ = QKᵀ/√d_k.",
          ("real matrices",),
          (_seed(SEED_WITH_WEIGHTS, "the scaling factor 1/sqrt(d_k) is premultiplied into the Query tensor"),),
          f"{_DOT}:prescaled_query", "dot-product"),
    Claim("softmax-normalisation", "Softmax rows sum to 1",
          "Every softmax row is a probability vector: a_i > 0 and Σ_i a_i = 1.",
          ("z ∈ ℝⁿ",),
          (_seed(SEED_SELF_ATTENTION, "normalizes each row independently into a valid categorical probability "
                                      "distribution"),),
          f"{_SOFT}:normalisation", "softmax"),
    Claim("softmax-shift-invariance", "Softmax is shift invariant",
          "softmax(z + c·1) = softmax(z) for every real c (why subtracting the max is free).",
          ("z ∈ ℝⁿ, c ∈ ℝ",),
          (_seed(SEED_WITH_WEIGHTS, "Numerical Stability in Softmax (x - max(x))"),),
          f"{_SOFT}:shift_invariance", "softmax"),
    Claim("softmax-jacobian", "Softmax Jacobian",
          "∂a_i/∂z_j = a_i(δ_ij − a_j), i.e. J = diag(a) − a aᵀ.",
          ("a = softmax(z)",),
          (_seed(SEED_SELF_ATTENTION, "∂softmax(z)_i/∂z_j = softmax(z)_i (δ_ij − softmax(z)_j)"),
           _seed(SEED_WITH_WEIGHTS, "(∂ softmax(z)ᵢ) / (∂ zⱼ) = αᵢ (δ_(i, j) - αⱼ)")),
          f"{_SOFT}:softmax_jacobian", "softmax"),
    Claim("softmax-jacobian-spectrum", "The Jacobian is symmetric PSD with eigenvalues in [0, 1/2]",
          "J = Jᵀ, J·1 = 0, J ⪰ 0, every eigenvalue lies in [0, 1/2], and a(1 − a) ≤ 1/4.",
          ("a = softmax(z)",),
          (_seed(SEED_WITH_WEIGHTS, "αᵢ (1 - αᵢ) → 1.0 × (1 - 1.0) = 0.0"),),
          f"{_SOFT}:jacobian_spectrum", "softmax"),
    Claim("softmax-saturation", "Saturated softmax has a vanishing Jacobian",
          "As one logit's lead t → ∞, every entry of the softmax Jacobian → 0.",
          ("z = (t, 0, …, 0)",),
          (_seed(SEED_SELF_ATTENTION, "when softmax(z)_i ≈ 0 or 1, the derivative evaluates to near zero"),
           _seed(SEED_WITH_WEIGHTS, "When αᵢ → 1.0 (or αⱼ → 0.0), the derivative collapses")),
          f"{_SOFT}:saturation", "softmax"),
    Claim("online-softmax-merge", "Online softmax merge is exact",
          "For block states (m, l, o): m = max(m₁, m₂), l = e^{m₁−m} l₁ + e^{m₂−m} l₂, "
          "o = (e^{m₁−m} l₁ o₁ + e^{m₂−m} l₂ o₂)/l equals softmax attention over the union, for any references.",
          ("blocks of scores with vector values", "references arbitrary: the max only prevents overflow"),
          (_seed(SEED_SELF_ATTENTION, "computing softmax normalization on-the-fly using the online softmax algorithm"),),
          f"{_ONLINE}:online_softmax_merge", "online-softmax"),
    Claim("online-softmax-monoid", "The merge is a monoid",
          "The merge is associative and commutative, with identity (−∞, 0, 0).",
          ("non-empty states (l > 0)",),
          (_seed(SEED_WITH_WEIGHTS, "tiles the Q K^T product into SRAM to perform online Softmax"),),
          f"{_ONLINE}:merge_monoid", "online-softmax"),
    Claim("online-softmax-unnormalised", "FlashAttention-2's unnormalised accumulator",
          "Streaming blocks with running max m, running sum l and unnormalised accumulator acc, "
          "then acc/l, equals softmax attention.",
          ("state starts at (−∞, 0, 0)",),
          (_seed(SEED_WITH_WEIGHTS, "Computes attention and softmax incrementally using the online softmax trick"),),
          f"{_ONLINE}:unnormalised_accumulator", "online-softmax"),
    Claim("logsumexp-merge", "Log-sum-exp of a merge",
          "lse = m + log l = log Σ exp(s_j), and lse merges as log(e^{lse₁} + e^{lse₂}); base 2 gives the same.",
          ("real scores",),
          (_seed(SEED_SELF_ATTENTION, "computing softmax normalization on-the-fly"),),
          f"{_ONLINE}:logsumexp_merge", "online-softmax"),
)

_BY_ID = {c.id: c for c in CLAIMS}


def claim(claim_id: str) -> Claim:
    if not isinstance(claim_id, str) or claim_id not in _BY_ID:
        known = ", ".join(sorted(_BY_ID))
        raise ValueError(f"claim_id {claim_id!r} is not in the catalogue; known ids: {known}")
    return _BY_ID[claim_id]


def derive(claim_id: str):
    """The Derivation of one catalogued claim."""
    return claim(claim_id).derive()
