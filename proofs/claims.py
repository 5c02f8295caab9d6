"""The claim catalogue: every claim stated once, with a stable kebab-case id.

``numeric`` and ``kernels`` key their evidence on these ids and the report joins the
three layers by them. A claim names the theorem that derives it as "module:function"
so that importing the catalogue stays cheap.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

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
_BACKWARD = "proofs.theorems.backward"
_SCORES = "proofs.theorems.real_scores"
_PROJ = "proofs.theorems.projections"
_MASK = "proofs.theorems.masking"
_GQA = "proofs.theorems.gqa"
_LIMITS = "proofs.theorems.scale_limits"
_WORKED = "proofs.theorems.worked_examples"

CLAIMS: tuple[Claim, ...] = (
    Claim("dot-product-moments", "Moments of the dot product",
          "E[q·k] = d_k μ_q μ_k and Var(q·k) = d_k(σ_q²σ_k² + μ_q²σ_k² + μ_k²σ_q²).",
          ("components of q and k mutually independent", "means μ_q, μ_k; variances σ_q², σ_k²"),
          (_seed(SEED_SELF_ATTENTION, r"be independent and identically distributed (i.i.d.) random variables with mean"),),
          f"{_DOT}:general_moments", "dot-product"),
    Claim("dot-product-variance", "Var(q·k) = d_k",
          "With zero-mean, unit-variance independent components: E[q·k] = 0, Var(q·k) = d_k, Std(q·k) = √d_k.",
          ("independent components", "zero mean, unit variance"),
          (_seed(SEED_SELF_ATTENTION, r"\mathrm{Var}(S) = \sum_{i=1}^{d_k} \mathrm{Var}(q_i k_i) = d_k \cdot 1 = d_k"),
           _seed(SEED_WITH_WEIGHTS, "By the Bienaymé formula for sums of independent variables")),
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
          (_seed(SEED_SELF_ATTENTION, r"Dividing by $\sqrt{d_k}$ rescales the variance back to unity"),),
          f"{_DOT}:scaled_unit_variance", "dot-product"),
    Claim("dk-scaling-trap", "Dividing by d_k shrinks the variance to 1/d_k",
          "Var(q·k / d_k) = 1/d_k, which goes to 0 as d_k grows.",
          ("independent components", "zero mean, unit variance"),
          (_seed(SEED_WITH_WEIGHTS, "Dividing by dₖ would shrink variance to 1/dₖ → 0"),),
          f"{_DOT}:dk_scaling_trap", "dot-product"),
    Claim("prescaled-query", "Pre-scaling Q equals scaling the scores",
          "(sQ)Kᵀ = s(QKᵀ); in particular (Q/√d_k)Kᵀ = QKᵀ/√d_k.",
          ("real matrices",),
          (_seed(SEED_WITH_WEIGHTS, "the scaling factor (1) / (√(dₖ)) is premultiplied into the Query tensor"),),
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
          (_seed(SEED_SELF_ATTENTION, r"\frac{\partial \text{softmax}(z)_i}{\partial z_j} = \text{softmax}(z)_i (\delta_{ij} - \text{softmax}(z)_j)"),
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
          (_seed(SEED_SELF_ATTENTION, r"the derivative evaluates to near zero, causing severe gradient vanishing"),
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
          (_seed(SEED_WITH_WEIGHTS, r"tiles the Q K^\top product into SRAM to perform online Softmax"),),
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
    # ---- extended derivations (issue 3) ----------------------------------------------------------------
    Claim("attention-backward", "Backward pass of attention",
          "dV = Pᵀ dO, dP = dO Vᵀ, dS = P ∘ (dP − D) with D_i = Σ_j P_ij dP_ij = Σ_c dO_ic O_ic, "
          "dQ = scale·dS K, dK = scale·dSᵀ Q.",
          ("S = scale·QKᵀ, P = softmax(S) by rows, O = PV", "upstream gradient dO"),
          (_seed(SEED_SELF_ATTENTION, "preserving healthy gradient flow during stochastic gradient descent"),
           _seed(SEED_WITH_WEIGHTS, "halting backpropagation through the entire attention block")),
          f"{_BACKWARD}:attention_backward", "backward"),
    Claim("self-attention-score-moments", "Scores of one token are not independent products",
          "For q = W_Qᵀx, k = W_Kᵀx, x ~ N(0, I_n): q·k = xᵀMx with M = W_Q W_Kᵀ, E = tr M and "
          "Var = tr(MMᵀ) + tr(M²); W_Q = W_K gives E = ‖W‖_F² ≠ 0.",
          ("x ~ N(0, I_n)", "Isserlis' theorem (checked on all index tuples for n = 3)"),
          (_seed(SEED_WITH_WEIGHTS, "q = x W_Q, k = x W_K, v = x W_V"),
           _seed(SEED_SELF_ATTENTION, "be independent and identically distributed (i.i.d.) random variables")),
          f"{_SCORES}:self_attention_score_moments", "real-scores"),
    Claim("distinct-token-score-moments", "Scores of two independent tokens",
          "For q = W_Qᵀx, k = W_Kᵀy with x, y ~ N(0, I_n) independent: E[q·k] = 0, Var(q·k) = tr(MMᵀ); "
          "orthonormal columns recover the seeds' Var = d_k.",
          ("x, y ~ N(0, I_n) independent",),
          (_seed(SEED_WITH_WEIGHTS, "qᵢ = xᵢ W_Q and kⱼ = xⱼ W_K use different weight matrices"),),
          f"{_SCORES}:distinct_token_score_moments", "real-scores"),
    Claim("projection-shapes", "Projections keep batch and sequence dimensions",
          "[B, T, d_model]·[d_model, d_k] → [B, T, d_k]; output row (b, t) depends on token (b, t) only.",
          ("X ∈ ℝ^{B×T×d_model}, W ∈ ℝ^{d_model×d_k}",),
          (_seed(SEED_WITH_WEIGHTS, "[B, T, d] × [d, d] = [B, T, d]: The batch and sequence dimensions remain "
                                    "untouched"),),
          f"{_PROJ}:projection_shapes", "projections"),
    Claim("fused-qkv-projection", "Fused QKV projection equals three projections",
          "X·[W_Q | W_K | W_V] (+ [b_Q | b_K | b_V]) sliced into blocks equals (XW_Q, XW_K, XW_V) (+ biases).",
          ("block slicing [:d_k], [d_k:2d_k], [2d_k:]",),
          (_seed(SEED_WITH_WEIGHTS, "This result is then sliced in memory into Q, K, V"),),
          f"{_PROJ}:fused_qkv_projection", "projections"),
    Claim("projection-parameter-count", "Projection parameter counts",
          "One projection has d_model·d_k parameters (+ d_k with bias); Q, K, V together 3·d_model·d_k; "
          "GPT-2 small (d_model = 768): 589,824 per matrix, 1,769,472 for Q, K and V.",
          ("dense projections",),
          (_seed(SEED_WITH_WEIGHTS, "Total QKV Parameters = 3 × 589,824 = 1,769,472 parameters"),),
          f"{_PROJ}:projection_parameter_count", "projections"),
    Claim("score-asymmetry", "When are attention scores symmetric?",
          "S = X W_Q W_Kᵀ Xᵀ is symmetric for every X exactly when W_Q W_Kᵀ is symmetric; W_Q = W_K is the "
          "symmetry trap; the seed's W_Q, W_K give S_12 = 2 ≠ S_21 = 6.",
          ("real matrices",),
          (_seed(SEED_WITH_WEIGHTS, "If q = x and k = x, then compatibility s_(i, j) = xᵢ · xⱼ = xⱼ · xᵢ = s_(j, i)"),),
          f"{_PROJ}:score_asymmetry", "projections"),
    Claim("causal-mask-top-left", "Causal mask, top-left aligned (PyTorch is_causal)",
          "With M_ij = −∞ for j > i, row i of the masked softmax is the softmax over keys j ≤ i, and o_i has zero "
          "derivative in k_j, v_j for j > i.",
          ("N_q ≤ N_k",),
          (_seed(SEED_SELF_ATTENTION, "M_ij = -inf (j > i)"),),
          f"{_MASK}:causal_mask_top_left", "masking"),
    Claim("causal-mask-bottom-right", "Causal mask, bottom-right aligned",
          "Query i of N_q sees keys j ≤ i + N_k − N_q; row i of the masked softmax is the softmax over those keys; "
          "it differs from the top-left mask whenever N_q ≠ N_k.",
          ("N_q ≤ N_k",),
          (_seed(SEED_SELF_ATTENTION, "M_ij = -inf (j > i)"),),
          f"{_MASK}:causal_mask_bottom_right", "masking"),
    Claim("gqa-equals-repeated-mha", "GQA is MHA with repeated KV heads",
          "With G = H_q/H_kv, GQA equals multi-head attention on KV heads each repeated G times (query head h "
          "reads KV head ⌊h/G⌋); the KV cache shrinks by the factor G.",
          ("H_q a multiple of H_kv",),
          (_seed(SEED_SELF_ATTENTION, "multiple query heads share a single key-value head ($G$ query heads per KV "
                                      "head). This reduces the memory footprint of KV caches during "
                                      "autoregressive decoding by a factor of $G$"),),
          f"{_GQA}:gqa_equals_repeated_mha", "gqa"),
    Claim("scale-trap-limits", "The scale trap as a limit",
          "As d_k → ∞, in probability: logits divided by d_k have variance 1/d_k → 0 and the weights → uniform; "
          "unscaled logits have gaps of std √(2d_k) → ∞ and the largest weight → 1 (one-hot).",
          ("one query, n keys; components independent, mean 0, variance 1", "fixed n"),
          (_seed(SEED_WITH_WEIGHTS, "Dividing by dₖ would shrink variance to 1/dₖ → 0, compressing all logits into "
                                    "near-zero and destroying attention sharpness into uniform noise"),
           _seed(SEED_SELF_ATTENTION, "the softmax function acts as an argmax indicator")),
          f"{_LIMITS}:scale_trap_limits", "scaling"),
    Claim("seed-worked-example-2-token", "The seed's N = 2 worked example, exactly",
          "Q, K, V, S are exactly as printed; S/√2, A and Z in exact form (printed decimals: see the seed audit).",
          ("X, W_Q, W_K, W_V as printed",),
          (_seed(SEED_SELF_ATTENTION, "consider an explicit toy sequence of two tokens ($N=2$)"),),
          f"{_WORKED}:seed_worked_example_2_token", "worked-examples"),
    Claim("seed-worked-example-3-token", "The seed's 3-token worked example, exactly",
          "Scaled scores as printed; α₁ = (e², e, 1)/(e² + e + 1); z₁ = (e² + 3e, 2e² + 4)/(e² + e + 1) "
          "(printed decimals: see the seed audit).",
          ("raw scores [[4, 2, 0], [1, 3, −1], [2, 0, 4]], d_k = 4",),
          (_seed(SEED_WITH_WEIGHTS, "Suppose you have 3 tokens and head dimension dₖ = 4"),),
          f"{_WORKED}:seed_worked_example_3_token", "worked-examples"),
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

# --------------------------------------------------------------------------- appended: issue 12
# (dropout laws and the rounding bias, judged by the conformance harness; appended, not reshaped)
_DROPOUT = "proofs.theorems.dropout"
_ROUNDING = "proofs.theorems.rounding_bias"
# The seeds say nothing about dropout or rounding; each claim cites the nearest passage the
# harness's judgement of it rests on (row-wise softmax weights; Bienaymé; numerical precision).
_ROW_WEIGHTS = _seed(SEED_WITH_WEIGHTS, "compute row-wise Softmax weights")
_BIENAYME = _seed(SEED_WITH_WEIGHTS, "By the Bienaymé formula for sums of independent variables")
_PRECISION = _seed(SEED_WITH_WEIGHTS, "numerical precision and computational efficiency require adhering strictly "
                                      "to canonical mathematical laws")

CLAIMS = CLAIMS + (
    Claim("dropout-kept-fraction", "Dropout keeps 1 − p of the weights and rescales them by 1/(1 − p)",
          "With M_j ~ Bernoulli(1 − p): E[M_j] = 1 − p, and c = 1/(1 − p) is the one rescale with E[c M_j] = 1.",
          ("masks independent Bernoulli(1 − p)", "0 < p < 1"), (_ROW_WEIGHTS,), f"{_DROPOUT}:dropout_kept_fraction", "dropout"),
    Claim("dropout-unbiased", "Dropout leaves the expected output unchanged",
          "E[Σ_j P_j M_j v_j/(1 − p)] = Σ_j P_j v_j, the output without dropout.",
          ("masks independent Bernoulli(1 − p)", "0 < p < 1"), (_ROW_WEIGHTS,), f"{_DROPOUT}:dropout_unbiased", "dropout"),
    Claim("dropout-variance", "The variance dropout adds to each output element",
          "Var[Σ_j P_j M_j v_j/(1 − p)] = p/(1 − p) Σ_j P_j² v_j².",
          ("masks independent Bernoulli(1 − p)", "0 < p < 1"), (_BIENAYME,), f"{_DROPOUT}:dropout_variance", "dropout"),
    Claim("round-to-nearest-unbiased", "Round-to-nearest is unbiased, truncation is not",
          "For an exact value uniform within its rounding cell of width h: E[RN(x) − x] = 0, Var = h²/12, "
          "and E[trunc(x) − x] = −h/2 (toward zero).",
          ("the value's position within its cell is uniform",), (_PRECISION,), f"{_ROUNDING}:round_to_nearest_unbiased",
          "rounding"),
)
_BY_ID = {c.id: c for c in CLAIMS}
