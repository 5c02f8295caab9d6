"""The claim catalogue: every claim stated once, with a stable kebab-case id.

``numeric`` and ``kernels`` key their evidence on these ids and the report joins the
three layers by them. A claim names the theorem that derives it as "module:function",
so the catalogue imports no theorem (and no theorem's cost).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

from proofs.seed_data import (PRINTED_K, PRINTED_Q, PRINTED_S, PRINTED_SCALED_3, PRINTED_V,
                              SEED_SELF_ATTENTION, SEED_WITH_WEIGHTS)


@dataclass(frozen=True)
class SeedPassage:
    file: str
    quote: str


@dataclass(frozen=True, kw_only=True)  # each entry names its fields: up to nine, most of them strings
class Claim:
    """One claim, stated once.

    ``statement`` is the formal SymPy statement the engine checks: a derivation is proved
    only if each of its conjuncts is the relation some checked step established. ``prose``
    is a reading of that same statement for people, written beside it so the two are seen
    together; it may name the objects the symbols stand for, but asserts nothing more.
    ``formal`` builds the statement on first use, so importing the catalogue stays cheap.
    """

    id: str
    title: str
    prose: str
    assumptions: tuple[str, ...]
    seeds: tuple[SeedPassage, ...]
    theorem: str  # "module:function" returning a Derivation
    topic: str = "core"
    formal: Callable[[], Any] = field(default=lambda: None, repr=False, compare=False)
    references: tuple[str, ...] = ()  # where a claim no seed states comes from: it quotes a seed or cites these

    @property
    def statement(self):
        return _build(self.formal)

    def derive(self):
        module, name = self.theorem.split(":")
        return getattr(importlib.import_module(module), name)()


_BUILT: dict[Callable, Any] = {}


def _build(formal: Callable[[], Any]):
    if formal not in _BUILT:
        _BUILT[formal] = formal()
    return _BUILT[formal]


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
_DROPOUT = "proofs.theorems.dropout"
_ROUNDING_BIAS = "proofs.theorems.rounding_bias"
_BOUNDS = "proofs.theorems.rounding"
_TRAFFIC = "proofs.theorems.traffic"


def _r():
    """The rounding theorems' module, whose symbols and bound builders the statements below use."""
    return importlib.import_module(_BOUNDS)


def _online():
    """The online-softmax notation module: its statements are built there, in the order the theorems use."""
    return importlib.import_module("proofs.notation_online")


def _le(lhs, rhs):
    import sympy as sp

    return sp.Le(lhs, rhs, evaluate=False)


# The seeds say nothing about dropout or rounding; each claim quotes the nearest passage the
# harness's judgement of it rests on (row-wise softmax weights; Bienaymé; numerical precision).
_ROW_WEIGHTS = SeedPassage(SEED_WITH_WEIGHTS, "compute row-wise Softmax weights")
_BIENAYME = SeedPassage(SEED_WITH_WEIGHTS, "By the Bienaymé formula for sums of independent variables")
_PRECISION = SeedPassage(SEED_WITH_WEIGHTS, "numerical precision and computational efficiency require adhering "
                                            "strictly to canonical mathematical laws")

def _eq(lhs, rhs):
    """An unevaluated equation: stated, not decided by SymPy on construction."""
    import sympy as sp

    return sp.Eq(lhs, rhs, evaluate=False)


def _formal(build: Callable[[Any, Any], Any]) -> Callable[[], Any]:
    """Defer a statement: ``build(sp, notation)`` runs on first use, importing SymPy then."""
    def formal():
        import sympy as sp

        from proofs import notation

        return build(sp, notation)
    return formal


def _matrix_symbol(sp, name: str, m) -> Any:
    return sp.MatrixSymbol(name, *m.shape)


CLAIMS: tuple[Claim, ...] = (
    Claim(id="dot-product-moments", title="Moments of the dot product",
          prose="E[q·k] = d_k μ_q μ_k and Var(q·k) = d_k(σ_q²σ_k² + μ_q²σ_k² + μ_k²σ_q²), for every d_k.",
          assumptions=("components of q and k mutually independent", "means μ_q, μ_k; variances σ_q², σ_k²"),
          seeds=(_seed(SEED_SELF_ATTENTION, r"be independent and identically distributed (i.i.d.) random variables with mean"),),
          theorem=f"{_DOT}:general_moments", topic="dot-product",
          formal=_formal(lambda sp, n: sp.And(_eq(n.E(n.S), n.D_K * n.MU_Q * n.MU_K),
                                       _eq(n.Var(n.S), n.D_K * (n.VAR_Q * n.VAR_K + n.MU_Q**2 * n.VAR_K
                                                                + n.MU_K**2 * n.VAR_Q))))),
    Claim(id="dot-product-variance", title="Var(q·k) = d_k",
          prose="With zero-mean, unit-variance independent components: E[q·k] = 0, Var(q·k) = d_k, Std(q·k) = √d_k.",
          assumptions=("independent components", "zero mean, unit variance"),
          seeds=(_seed(SEED_SELF_ATTENTION, r"\mathrm{Var}(S) = \sum_{i=1}^{d_k} \mathrm{Var}(q_i k_i) = d_k \cdot 1 = d_k"),
           _seed(SEED_WITH_WEIGHTS, "By the Bienaymé formula for sums of independent variables")),
          theorem=f"{_DOT}:seed_variance", topic="dot-product",
          formal=_formal(lambda sp, n: sp.And(_eq(n.E(n.S), 0), _eq(n.Var(n.S), n.D_K), _eq(n.Std(n.S), sp.sqrt(n.D_K))))),
    Claim(id="dot-product-distribution-free", title="Only means and variances matter",
          prose="Var(q·k) = d_k(σ_q²σ_k² + μ_q²σ_k² + μ_k²σ_q²) whatever the components' distributions: it depends on "
          "them only through their means and variances (checked: Normal and Uniform components agree).",
          assumptions=("independent components with finite variance",),
          seeds=(_seed(SEED_WITH_WEIGHTS, "it is the exact analytic normalizer required to preserve unit variance "
                                    "under independent Gaussian distributions"),),
          theorem=f"{_DOT}:distribution_free", topic="dot-product",
          formal=_formal(lambda sp, n: _eq(n.Var(n.S), n.D_K * (n.VAR_Q * n.VAR_K + n.MU_Q**2 * n.VAR_K
                                                         + n.MU_K**2 * n.VAR_Q)))),
    Claim(id="scaled-score-unit-variance", title="Dividing by √d_k restores unit variance",
          prose="Var(q·k / √d_k) = 1.",
          assumptions=("independent components", "zero mean, unit variance"),
          seeds=(_seed(SEED_SELF_ATTENTION, r"Dividing by $\sqrt{d_k}$ rescales the variance back to unity"),),
          theorem=f"{_DOT}:scaled_unit_variance", topic="dot-product",
          formal=_formal(lambda sp, n: _eq(n.Var(n.S / sp.sqrt(n.D_K)), 1))),
    Claim(id="dk-scaling-trap", title="Dividing by d_k shrinks the variance to 1/d_k",
          prose="Var(q·k / d_k) = 1/d_k, and its limit as d_k → ∞ is 0: Var(q·k / d_k) < ε for every ε > 0 once "
          "d_k > 1/ε.",
          assumptions=("independent components", "zero mean, unit variance", "for the limit: any ε > 0, and ε d_k > 1"),
          seeds=(_seed(SEED_WITH_WEIGHTS, "Dividing by dₖ would shrink variance to 1/dₖ → 0"),),
          theorem=f"{_DOT}:dk_scaling_trap", topic="dot-product",
          formal=_formal(lambda sp, n: sp.And(_eq(n.Var(n.S / n.D_K), 1 / n.D_K),
                                       sp.Lt(n.Var(n.S / n.D_K), importlib.import_module(_DOT).EPSILON,
                                             evaluate=False)))),
    Claim(id="prescaled-query", title="Pre-scaling Q equals scaling the scores",
          prose="((sQ)Kᵀ)_ij = Σ_c s q_ic k_jc = s (QKᵀ)_ij for every scale s and head dimension d_k; in particular "
          "(Q/√d_k)Kᵀ = QKᵀ/√d_k.",
          assumptions=("real matrices",),
          seeds=(_seed(SEED_WITH_WEIGHTS, "the scaling factor (1) / (√(dₖ)) is premultiplied into the Query tensor"),),
          theorem=f"{_DOT}:prescaled_query", topic="dot-product",
          formal=_formal(lambda sp, n: _eq(sp.Sum(n.SCALE_S * n.QI[n.I, n.C_IDX] * n.KI[n.J, n.C_IDX], (n.C_IDX, 1, n.D_K)),
                                    n.SCALE_S * sp.Sum(n.QI[n.I, n.C_IDX] * n.KI[n.J, n.C_IDX], (n.C_IDX, 1, n.D_K))))),
    Claim(id="softmax-normalisation", title="Softmax rows sum to 1",
          prose="Every softmax row is a probability vector: a_i > 0 and Σ_{i=1}^n a_i = 1, for every n.",
          assumptions=("z ∈ ℝⁿ",),
          seeds=(_seed(SEED_SELF_ATTENTION, "normalizes each row independently into a valid categorical probability "
                                      "distribution"),),
          theorem=f"{_SOFT}:normalisation", topic="softmax",
          formal=_formal(lambda sp, n: sp.And(sp.Gt(n.A[n.I], 0, evaluate=False),
                                       _eq(sp.Sum(n.A[n.I], (n.I, 1, n.N)), 1)))),
    Claim(id="softmax-shift-invariance", title="Softmax is shift invariant",
          prose="softmax(z + c·1) = softmax(z) for every real c and every n (why subtracting the max is free).",
          assumptions=("z ∈ ℝⁿ, c ∈ ℝ",),
          seeds=(_seed(SEED_WITH_WEIGHTS, "Numerical Stability in Softmax (x - max(x))"),),
          theorem=f"{_SOFT}:shift_invariance", topic="softmax",
          formal=_formal(lambda sp, n: _eq(sp.exp(n.Z[n.I] + n.C) / sp.Sum(sp.exp(n.Z[n.K_IDX] + n.C), (n.K_IDX, 1, n.N)),
                                    sp.exp(n.Z[n.I]) / sp.Sum(sp.exp(n.Z[n.K_IDX]), (n.K_IDX, 1, n.N))))),
    Claim(id="softmax-jacobian", title="Softmax Jacobian",
          prose="∂a_i/∂z_j = a_i(δ_ij − a_j), i.e. J = diag(a) − a aᵀ, for every n and every 1 ≤ j ≤ n.",
          assumptions=("a = softmax(z)", "1 ≤ j ≤ n (n = j + r, r ≥ 0)"),
          seeds=(_seed(SEED_SELF_ATTENTION, r"\frac{\partial \text{softmax}(z)_i}{\partial z_j} = \text{softmax}(z)_i (\delta_{ij} - \text{softmax}(z)_j)"),
           _seed(SEED_WITH_WEIGHTS, "(∂ softmax(z)ᵢ) / (∂ zⱼ) = αᵢ (δ_(i, j) - αⱼ)")),
          theorem=f"{_SOFT}:softmax_jacobian", topic="softmax",
          formal=_formal(lambda sp, n: _eq(sp.Derivative(n.A[n.I], n.Z[n.J]),
                                    n.A[n.I] * (sp.KroneckerDelta(n.I, n.J) - n.A[n.J])))),
    Claim(id="softmax-jacobian-spectrum", title="The Jacobian is symmetric PSD with eigenvalues in [0, 1/2]",
          prose="For every n: J_ij = J_ji, Σ_j J_ij = 0 (J·1 = 0), every eigenvalue λ of J lies in [0, 1/2], and "
          "a_i(1 − a_i) ≤ 1/4 (J = diag(a) − a aᵀ, the softmax Jacobian).",
          assumptions=("a = softmax(z)", "1 ≤ i ≤ n (n = i + r, r ≥ 0)"),
          seeds=(_seed(SEED_WITH_WEIGHTS, "αᵢ (1 - αᵢ) → 1.0 × (1 - 1.0) = 0.0"),),
          theorem=f"{_SOFT}:jacobian_spectrum", topic="softmax",
          formal=_formal(lambda sp, n: sp.And(*importlib.import_module("proofs.notation_softmax").spectrum_conjuncts()))),
    Claim(id="softmax-saturation", title="Saturated softmax has a vanishing Jacobian",
          prose="For z = (t, 0, …, 0) with m = n − 1 ≥ 1 zeros, every entry of the softmax Jacobian is bounded by a "
          "multiple of e^{−t}, so it → 0 as the lead t → ∞: 0 ≤ J_11 = a_1(1 − a_1) ≤ m e^{−t}, "
          "0 ≤ −J_1j = a_1 a_j ≤ e^{−t}, 0 ≤ J_jj = a_j(1 − a_j) ≤ e^{−t} and 0 ≤ −J_jk = a_j a_k ≤ e^{−2t}.",
          assumptions=("z = (t, 0, …, 0), t real, m = n − 1 ≥ 1 zeros",),
          seeds=(_seed(SEED_SELF_ATTENTION, r"the derivative evaluates to near zero, causing severe gradient vanishing"),
           _seed(SEED_WITH_WEIGHTS, "When αᵢ → 1.0 (or αⱼ → 0.0), the derivative collapses")),
          theorem=f"{_SOFT}:saturation", topic="softmax",
          formal=_formal(lambda sp, n: sp.And(*importlib.import_module("proofs.notation_softmax").saturation_conjuncts()))),
    Claim(id="online-softmax-merge", title="Online softmax merge is exact",
          prose="A block's state (m, Σ_j e^{s_j−m}, Σ_j e^{s_j−m} v_j / Σ_j e^{s_j−m}), for a block of any size n_B, is "
          "(m, e^{−m} Z, U / Z) in its raw sums Z = Σ_j e^{s_j}, U = Σ_j e^{s_j} v_j. With merge(X, Y) the rescaling "
          "rule (m = max(m₁, m₂), l = e^{m₁−m} l₁ + e^{m₂−m} l₂, o = (e^{m₁−m} l₁ o₁ + e^{m₂−m} l₂ o₂)/l) and "
          "S_N(M) = (M, e^{−M} Σ_{b≤N} Z_b, Σ_{b≤N} U_b / Σ_{b≤N} Z_b), s_b = (m_b, e^{−m_b} Z_b, U_b / Z_b): "
          "merge((−∞, 0, 0), s_1) = S_1(m_1) and merge(S_N(M), s_{N+1}) = (m′, e^{−m′}(Σ_{b≤N} Z_b + Z_{N+1}), "
          "(Σ_{b≤N} U_b + U_{N+1}) / (Σ_{b≤N} Z_b + Z_{N+1})) = S_{N+1}(m′), m′ = max(M, m_{N+1}), for every N ≥ 1 "
          "and every M; so the left fold of the merge over any number of blocks is S_N, softmax attention over "
          "their union Σ_b U_b / Σ_b Z_b. With any reference R in place of the max (merge_at): m′ = R.",
          assumptions=("blocks of scores with values (one component: every component merges with the same weights)",
           "references arbitrary: the max only prevents overflow"),
          seeds=(_seed(SEED_SELF_ATTENTION, "computing softmax normalization on-the-fly using the online softmax algorithm"),),
          theorem=f"{_ONLINE}:online_softmax_merge", topic="online-softmax",
          formal=_formal(lambda sp, n: sp.And(*_online().merge_conjuncts()))),
    Claim(id="online-softmax-monoid", title="The merge is a monoid",
          prose="The merge of states (m, l, o), l > 0, is exact on blocks (merge(s(Z_A, U_A, m_A), s(Z_B, U_B, m_B)) = "
          "s(Z_A + Z_B, U_A + U_B, max(m_A, m_B)), s(Z, U, m) = (m, e^{−m} Z, U / Z)), associative and "
          "commutative, with identity (−∞, 0, 0) on either side.",
          assumptions=("non-empty states (l > 0)",),
          seeds=(_seed(SEED_WITH_WEIGHTS, r"tiles the Q K^\top product into SRAM to perform online Softmax"),),
          theorem=f"{_ONLINE}:merge_monoid", topic="online-softmax",
          formal=_formal(lambda sp, n: sp.And(*_online().monoid_conjuncts()))),
    Claim(id="online-softmax-unnormalised", title="FlashAttention-2's unnormalised accumulator",
          prose="FlashAttention-2's update by one block with raw sums (Z, U) under the new running max m′, "
          "fa2_step((m, l, acc), m′, Z, U) = (m′, e^{m−m′} l + e^{−m′} Z, e^{m−m′} acc + e^{−m′} U), keeps "
          "T_N(M) = (M, e^{−M} Σ_{b≤N} Z_b, e^{−M} Σ_{b≤N} U_b): from (−∞, 0, 0) the first block gives T_1(m_1), "
          "and T_N(M) with block N + 1 gives T_{N+1}(m′) (Σ_{b≤N} x_b + x_{N+1}) for every N ≥ 1 and any M, m′; "
          "and acc / l of T_N(M) is softmax attention Σ_b U_b / Σ_b Z_b (raw sums of the blocks as in the merge).",
          assumptions=("state starts at (−∞, 0, 0)",),
          seeds=(_seed(SEED_WITH_WEIGHTS, "Computes attention and softmax incrementally using the online softmax trick"),),
          theorem=f"{_ONLINE}:unnormalised_accumulator", topic="online-softmax",
          formal=_formal(lambda sp, n: sp.And(*_online().unnormalised_conjuncts()))),
    Claim(id="logsumexp-merge", title="Log-sum-exp of a merge",
          prose="For a block of any size n_B, m + log Σ_j e^{s_j − m} = log Σ_j e^{s_j} (lse = m + log l); with "
          "lse((m, l, o)) = m + log l, lse(merge(A, B)) = log(e^{lse(A)} + e^{lse(B)}) for states with l > 0; a "
          "base-2 state (m₂, l) has natural lse (m₂ + log₂ l)·ln 2.",
          assumptions=("real scores",),
          seeds=(_seed(SEED_SELF_ATTENTION, "computing softmax normalization on-the-fly"),),
          theorem=f"{_ONLINE}:logsumexp_merge", topic="online-softmax",
          formal=_formal(lambda sp, n: sp.And(*_online().logsumexp_conjuncts()))),
    # ---- extended derivations ---------------------------------------------------------------------------
    Claim(id="attention-backward", title="Backward pass of attention",
          prose="For any sizes N_q, N_k, d, d_v (index form, 1-based): dV_ab = Σ_i P_ia dO_ib (Pᵀ dO), dP_ab = Σ_c dO_ac V_bc "
          "(dO Vᵀ), the pullback through row a's softmax ∂/∂S_ab Σ_k dP_ak P_ak = dS_ab = P_ab (dP_ab − D_a) with "
          "D_a = Σ_k P_ak dP_ak = Σ_c dO_ac O_ac, dQ_ab = scale·Σ_k dS_ak K_kb and dK_ab = scale·Σ_i dS_ia Q_ib.",
          assumptions=("S = scale·QKᵀ, P = softmax(S) by rows, O = PV", "upstream gradient dO",
           "(a, b) an entry of the matrix each conjunct is about: 1 ≤ a, b ≤ its sizes"),
          seeds=(_seed(SEED_SELF_ATTENTION, "preserving healthy gradient flow during stochastic gradient descent"),
           _seed(SEED_WITH_WEIGHTS, "halting backpropagation through the entire attention block")),
          theorem=f"{_BACKWARD}:attention_backward", topic="backward",
          formal=_formal(lambda sp, n: sp.And(*importlib.import_module("proofs.notation_backward").conjuncts()))),
    Claim(id="self-attention-score-moments", title="Scores of one token are not independent products",
          prose="For q = W_Qᵀx, k = W_Kᵀx, x ~ N(0, I_n): q·k = xᵀMx with M = W_Q W_Kᵀ, E = Σ_a M_aa = tr M and "
          "Var = Σ_ab M_ab² + Σ_ab M_ab M_ba = tr(MMᵀ) + tr(M²); W_Q = W_K = W gives E[xᵀWWᵀx] = Σ_a Σ_c W_ac² = "
          "tr(WWᵀ) = ‖W‖_F², for every n.",
          assumptions=("x ~ N(0, I_n)",),
          seeds=(_seed(SEED_WITH_WEIGHTS, "q = x W_Q, k = x W_K, v = x W_V"),
           _seed(SEED_SELF_ATTENTION, "be independent and identically distributed (i.i.d.) random variables")),
          theorem=f"{_SCORES}:self_attention_score_moments", topic="real-scores",
          formal=_formal(lambda sp, n: _self_attention_statement(sp, n))),
    Claim(id="distinct-token-score-moments", title="Scores of two independent tokens",
          prose="For q = W_Qᵀx, k = W_Kᵀy with x, y ~ N(0, I_n) independent: q·k = xᵀMy, M = W_Q W_Kᵀ, has E[q·k] = 0 "
          "and Var(q·k) = Σ_a Σ_b M_ab² = tr(MMᵀ), for every n.",
          assumptions=("x, y ~ N(0, I_n) independent",),
          seeds=(_seed(SEED_WITH_WEIGHTS, "qᵢ = xᵢ W_Q and kⱼ = xⱼ W_K use different weight matrices"),),
          theorem=f"{_SCORES}:distinct_token_score_moments", topic="real-scores",
          formal=_formal(lambda sp, n: sp.And(_eq(n.E(_scores().XMY), 0),
                                       _eq(n.Var(_scores().XMY), _scores().distinct_variance_sum(_scores().M_E, n.N))))),
    Claim(id="projection-shapes", title="Projections keep batch and sequence dimensions",
          prose="Y[b, t, c] = Σ_r X[b, t, r] W[r, c] ([B, T, d_model]·[d_model, d_k] → [B, T, d_k]): "
          "∂Y[b, t, c]/∂X[b', t', r] = δ_bb' δ_tt' ∂Y[b, t, c]/∂X[b, t, r], so output row (b, t) depends on token "
          "(b, t) only, for any B, T, d_model, d_k.",
          assumptions=("X ∈ ℝ^{B×T×d_model}, W ∈ ℝ^{d_model×d_k}",),
          seeds=(_seed(SEED_WITH_WEIGHTS, "[B, T, d] × [d, d] = [B, T, d]: The batch and sequence dimensions remain "
                                    "untouched"),),
          theorem=f"{_PROJ}:projection_shapes", topic="projections",
          formal=_formal(lambda sp, n: _projection_statement(sp))),
    Claim(id="fused-qkv-projection", title="Fused QKV projection equals three projections",
          prose="X·[W_Q | W_K | W_V] (+ [b_Q | b_K | b_V]) sliced into blocks equals (XW_Q, XW_K, XW_V) (+ biases), entry by "
          "entry, for any T, d_model, d_k, d_v.",
          assumptions=("block slicing [:d_k], [d_k:2d_k], [2d_k:]",),
          seeds=(_seed(SEED_WITH_WEIGHTS, "This result is then sliced in memory into Q, K, V"),),
          theorem=f"{_PROJ}:fused_qkv_projection", topic="projections",
          formal=_formal(lambda sp, n: _fused_statement(sp, n))),
    Claim(id="projection-parameter-count", title="Projection parameter counts",
          prose="With params(k, m, n, β) the entries of k projections ℝ^m → ℝ^n (with their biases when β = 1): one "
          "projection has d_model·d_k parameters (+ d_k with bias); Q, K, V together 3·d_model·d_k; "
          "GPT-2 small (d_model = 768): 589,824 per matrix, 1,769,472 for Q, K and V.",
          assumptions=("dense projections",),
          seeds=(_seed(SEED_WITH_WEIGHTS, "Total QKV Parameters = 3 × 589,824 = 1,769,472 parameters"),),
          theorem=f"{_PROJ}:projection_parameter_count", topic="projections",
          formal=_formal(lambda sp, n: sp.And(  # params(k, m, n, β): k projections m → n, with bias iff β = 1
              _eq(n.params(1, n.D_MODEL, n.D_K, 0), n.D_MODEL * n.D_K),
              _eq(n.params(1, n.D_MODEL, n.D_K, 1), n.D_MODEL * n.D_K + n.D_K),
              _eq(n.params(3, n.D_MODEL, n.D_K, 0), 3 * n.D_MODEL * n.D_K),
              _eq(n.params(1, 768, 768, 0), 589_824),
              _eq(n.params(3, 768, 768, 0), 1_769_472)))),
    Claim(id="score-asymmetry", title="When are attention scores symmetric?",
          prose="S = X M Xᵀ with M = W_Q W_Kᵀ has (S − Sᵀ)_pq = (X (M − Mᵀ) Xᵀ)_pq for any sizes, so S is symmetric for "
          "every X when M is symmetric (and, with unit-vector tokens, only then); the seed's W_Q, W_K give "
          "S_12 = 2 and S_21 = 6.",
          assumptions=("real matrices",),
          seeds=(_seed(SEED_WITH_WEIGHTS, "If q = x and k = x, then compatibility s_(i, j) = xᵢ · xⱼ = xⱼ · xᵢ = s_(j, i)"),),
          theorem=f"{_PROJ}:score_asymmetry", topic="projections",
          formal=_formal(lambda sp, n: _asymmetry_statement(sp))),
    Claim(id="causal-mask-top-left", title="Causal mask, top-left aligned (PyTorch is_causal)",
          prose="With M_ij = −∞ for j > i (0-based), the mask is PyTorch's torch.ones(N_q, N_k).tril(0) (visible(i, j) = "
          "tril(i, j)), and row i of the masked softmax is the softmax over keys j ≤ i, and 0 beyond, for any N_q ≤ N_k.",
          assumptions=("N_q ≤ N_k",),
          seeds=(_seed(SEED_SELF_ATTENTION, "M_ij = -inf (j > i)"),),
          theorem=f"{_MASK}:causal_mask_top_left", topic="masking",
          formal=_formal(lambda sp, n: _causal_statement(sp, n, n.I0))),
    Claim(id="causal-mask-bottom-right", title="Causal mask, bottom-right aligned",
          prose="Query i of N_q sees keys j ≤ i + N_k − N_q (0-based): the mask is torch.ones(N_q, N_k).tril(N_k − N_q) "
          "(visible(i, j) = tril(i, j)); row i of the masked softmax is the softmax over those keys, and 0 beyond, "
          "for any N_q ≤ N_k.",
          assumptions=("N_q ≤ N_k",),
          seeds=(_seed(SEED_SELF_ATTENTION, "M_ij = -inf (j > i)"),),
          theorem=f"{_MASK}:causal_mask_bottom_right", topic="masking",
          formal=_formal(lambda sp, n: _causal_statement(sp, n, n.I0 + n.N_K - n.N_Q))),
    Claim(id="gqa-equals-repeated-mha", title="GQA is MHA with repeated KV heads",
          prose="With G = H_q/H_kv, GQA equals multi-head attention on KV heads each repeated G times (query head h "
          "reads KV head ⌊h/G⌋, so attn(Q_h, K_{kv_head(h)}, V_{kv_head(h)}) = attn(Q_h, K_rep,h, V_rep,h) for any "
          "per-head attention attn); the KV cache (2·B·H·N·d entries for H heads) shrinks by the factor G.",
          assumptions=("H_q a multiple of H_kv",),
          seeds=(_seed(SEED_SELF_ATTENTION, "multiple query heads share a single key-value head ($G$ query heads per KV "
                                      "head). This reduces the memory footprint of KV caches during "
                                      "autoregressive decoding by a factor of $G$"),),
          theorem=f"{_GQA}:gqa_equals_repeated_mha", topic="gqa",
          formal=_formal(lambda sp, n: _gqa_statement(sp, n))),
    Claim(id="scale-trap-limits", title="The scale trap as a limit",
          prose="As d_k → ∞, in probability: with logits divided by d_k every weight a_j → 1/n (uniform); with "
          "unscaled logits the largest weight a_max → 1 (one-hot).",
          assumptions=("one query, n keys; components independent, mean 0, variance 1", "fixed n"),
          seeds=(_seed(SEED_WITH_WEIGHTS, "Dividing by dₖ would shrink variance to 1/dₖ → 0, compressing all logits into "
                                    "near-zero and destroying attention sharpness into uniform noise"),
           _seed(SEED_SELF_ATTENTION, "the softmax function acts as an argmax indicator")),
          theorem=f"{_LIMITS}:scale_trap_limits", topic="scaling",
          formal=_formal(lambda sp, n: sp.And(_eq(sp.Limit(n.A_J, n.D_K, sp.oo), 1 / n.N_KEYS),
                                       _eq(sp.Limit(n.A_MAX, n.D_K, sp.oo), 1)))),
    Claim(id="seed-worked-example-2-token", title="The seed's N = 2 worked example, exactly",
          prose="Q, K, V, S are exactly as printed; S/√2, A (each weight a logistic σ(g) = 1/(1 + e^{−g}) of a score "
          "gap) and Z = AV in exact form (printed decimals: see the seed audit).",
          assumptions=("X, W_Q, W_K, W_V as printed",),
          seeds=(_seed(SEED_SELF_ATTENTION, "consider an explicit toy sequence of two tokens ($N=2$)"),),
          theorem=f"{_WORKED}:seed_worked_example_2_token", topic="worked-examples",
          formal=_formal(lambda sp, n: _two_token_statement(sp))),
    Claim(id="seed-worked-example-3-token", title="The seed's 3-token worked example, exactly",
          prose="Scaled scores as printed; α₁ = (e², e, 1)/(e² + e + 1); z₁ = (e² + 3e, 2e² + 4)/(e² + e + 1) "
          "(printed decimals: see the seed audit).",
          assumptions=("raw scores [[4, 2, 0], [1, 3, −1], [2, 0, 4]], d_k = 4",),
          seeds=(_seed(SEED_WITH_WEIGHTS, "Suppose you have 3 tokens and head dimension dₖ = 4"),),
          theorem=f"{_WORKED}:seed_worked_example_3_token", topic="worked-examples",
          formal=_formal(lambda sp, n: _three_token_statement(sp))),
    Claim(id="rope-relative-position", title="RoPE scores depend on relative position only",
          prose="With rotary position embedding, ⟨R_m q, R_n k⟩ = Σ_i q_iᵀ R((n − m)θ_i) k_i: the score of a query "
          "at position m and a key at position n depends on the positions only through n − m, so shifting "
          "both by t leaves it unchanged.",
          assumptions=("pair i of q and of k rotated by the angles mθ_i and nθ_i", "any frequencies θ_i, any h ≥ 1"),
          seeds=(), theorem="proofs.theorems.rope:rope_relative_position", topic="position", formal=_formal(lambda sp, n: _rope_statement(sp, n)),
          references=("Su, Lu, Pan, Murtadha, Wen, Liu: RoFormer: Enhanced Transformer with Rotary Position Embedding "
           "(2021), section 3.4.2",)),
    Claim(id="dot-product-kurtosis", title="Kurtosis of the dot product under the null model",
          prose="With independent components q_i = μ_q + σ_q Z, k_i = μ_k + σ_k Z' (Z, Z' standardised and symmetric, "
          "E[Z⁴] = β_q, E[Z'⁴] = β_k) and P = q_i k_i: μ₄(q·k) = d_k μ₄(P) + 3d_k(d_k − 1)μ₂(P)² for every d_k, "
          "so κ(q·k) = κ(P)/d_k + 3(d_k − 1)/d_k, with κ(P) from the components' first four moments.",
          assumptions=("components of q and k mutually independent", "each family standardised, symmetric, with kurtosis β",
           "P non-degenerate: μ₂(P) > 0"),
          seeds=(), theorem="proofs.theorems.null_kurtosis:dot_product_kurtosis", topic="dot-product", formal=_formal(lambda sp, n: _kurtosis_statement(sp, n)),
          references=("the fourth central moment of a sum of independent variables: μ₄(ΣY_i) = Σμ₄(Y_i) + 3Σ_{i≠j}μ₂(Y_i)μ₂(Y_j) "
           "(Kendall & Stuart, The Advanced Theory of Statistics, vol. 1, on moments of sums; proved here by "
           "induction)",)),
    Claim(id="dropout-kept-fraction", title="Dropout keeps 1 − p of the weights and rescales them by 1/(1 − p)",
          prose="With M_j ~ Bernoulli(q), q = 1 − p the keep probability: E[M_j] = q; any rescale c gives E[c M_j] = c q, "
          "so c = 1/q is the one with E[M_j/q] = 1.",
          assumptions=("masks independent Bernoulli(1 − p)", "0 < p < 1"), seeds=(_ROW_WEIGHTS,), theorem=f"{_DROPOUT}:dropout_kept_fraction",
          topic="dropout", formal=_formal(lambda sp, n: _dropout_statement(sp, "kept-fraction"))),
    Claim(id="dropout-unbiased", title="Dropout leaves the expected output unchanged",
          prose="E[o] = E[Σ_j P_j M_j v_j/q] = Σ_j P_j v_j, the output without dropout, for any number of keys n.",
          assumptions=("masks independent Bernoulli(1 − p)", "0 < p < 1"), seeds=(_ROW_WEIGHTS,), theorem=f"{_DROPOUT}:dropout_unbiased",
          topic="dropout", formal=_formal(lambda sp, n: _dropout_statement(sp, "unbiased"))),
    Claim(id="dropout-variance", title="The variance dropout adds to each output element",
          prose="Var[o] = (1 − q)/q Σ_j P_j² v_j² = p/(1 − p) Σ_j P_j² v_j², for any number of keys n.",
          assumptions=("masks independent Bernoulli(1 − p)", "0 < p < 1"), seeds=(_BIENAYME,), theorem=f"{_DROPOUT}:dropout_variance",
          topic="dropout", formal=_formal(lambda sp, n: _dropout_statement(sp, "variance"))),
    Claim(id="round-to-nearest-unbiased", title="Round-to-nearest is unbiased, truncation is not",
          prose="For an exact value uniform within its rounding cell of width h: E[RN(x) − x] = 0, Var[RN(x) − x] = h²/12, "
          "and E[trunc(x) − x] = −h/2 (toward zero).",
          assumptions=("the value's position within its cell is uniform",), seeds=(_PRECISION,),
          theorem=f"{_ROUNDING_BIAS}:round_to_nearest_unbiased", topic="rounding",
          formal=_formal(lambda sp, n: _rounding_bias_statement(sp))),
    Claim(id="rounding-gamma-lemma", title="n roundings cost at most γ_n = nu/(1 − nu)",
          prose="|Π_{k≤n}(1 + δ_{j,k}) − 1| ≤ (1 + u)ⁿ − 1 ≤ γ_n for every product j, |δ_{j,k}| ≤ u and nu < 1, by "
          "induction on n "
          "(Higham, Accuracy and Stability of Numerical Algorithms, 2002, Lemma 3.1).",
          assumptions=("|δ_k| ≤ u", "nu < 1"), seeds=(), theorem=f"{_BOUNDS}:gamma_lemma", topic="rounding-bounds",
          formal=_formal(lambda sp, n: sp.And(_le(sp.Abs(_r().THETA(_r().FAMILY, _r().N)), (1 + _r().U)**_r().N - 1),
                                        _le((1 + _r().U)**_r().N - 1, _r().gamma(_r().N)))),
          references=('Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., SIAM 2002, Lemma 3.1',)),
    Claim(id="rounding-dot-product", title="Rounded dot products: |fl(xᵀy) − xᵀy| ≤ γ_n |x|ᵀ|y|",
          prose="In any summation order, |fl(xᵀy) − xᵀy| ≤ γ_n |x|ᵀ|y| (Higham, Accuracy and Stability, 2002, eq. (3.5)).",
          assumptions=("standard model of floating-point arithmetic (cited)", "nu < 1, no underflow"), seeds=(),
          theorem=f"{_BOUNDS}:dot_product_bound", topic="rounding-bounds",
          formal=_formal(lambda sp, n: _le(_r().DOT_ERROR, _r().gamma(_r().N) * sp.Sum(
              sp.Abs(_r().X_F(_r()._J)) * sp.Abs(_r().Y_F(_r()._J)), (_r()._J, 1, _r().N)))),
          references=('Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., SIAM 2002, eq. (3.5)',)),
    Claim(id="rounding-softmax-shifted", title="Softmax with max subtraction: relative error bound",
          prose="p̂_j = fl(fl(exp(fl(s_j − m)))/fl(Σ)) has |p̂_j − p_j| ≤ p_j[(1 + u)(A_j + Σ p_k B_k)/(1 − Σ p_k B_k) + u] "
          "with A_j = e^{u|s_j − m|}(1 + μ) − 1, B_k = e^{u|s_k − m|}(1 + μ)(1 + u)^{n−1} − 1 (cf. Blanchard, "
          "D. J. Higham & N. J. Higham, IMA J. Numer. Anal. 41(4), 2021).",
          assumptions=("standard model and exp accuracy μ (cited)", "m = max s"), seeds=(), theorem=f"{_BOUNDS}:softmax_shifted",
          topic="rounding-bounds",
          formal=_formal(lambda sp, n: _le(_r().SOFTMAX_ERROR, _r().softmax_relative_bound())),
          references=('Blanchard, D. J. Higham & N. J. Higham, Accurate computation of the log-sum-exp and softmax functions, IMA J. Numer. Anal. 41(4), 2021',)),
    Claim(id="rounding-online-rescale", title="Online softmax: what rescales add over ⌈N_k/B_N⌉ blocks",
          prose="Key j's exponent drifts by at most u(m_T − s_j) in total (the rescale arguments telescope); its weight "
          "carries T exp errors and n_l = B_N + 2T − 2 (in l) or n_a = B_N + 2T − 1 (in acc) roundings "
          "(Milakov & Gimelshein 2018; Dao 2023, FlashAttention-2).",
          assumptions=("T = ⌈N_k/B_N⌉ blocks", "standard model and exp accuracy (cited)"), seeds=(), theorem=f"{_BOUNDS}:online_rescale",
          topic="rounding-bounds",
          formal=_formal(lambda sp, n: sp.And(_le(_r().DRIFT, _r().U * (_r().LAST_MAX - _r().SCORE_J)),
              _eq(_r().COUNT_L, _r().rescale_counts()[0]), _eq(_r().COUNT_A, _r().rescale_counts()[1]),
              _eq(_r().COUNT_EXP, _r().BLOCKS))),
          references=('Milakov & Gimelshein, Online normalizer calculation for softmax, 2018',
                      'Dao, FlashAttention-2, 2023',)),
    Claim(id="rounding-attention-forward", title="Attention forward: a proved per-element error bound",
          prose="|fl(o) − o| ≤ (1 + u_a)(1 + u_in)E + ((1 + u_a)(1 + u_in) − 1)|o| + λ_a + λ_o u_in, E = [u_p P(1 + R)|V| + "
          "(P∘R)|V| + |o|(P∘B)1 + ζ(‖v‖₁ + N|o|)]/(1 − (P∘B)1 − Nζ), R, B = e^H(1 + μ)^T(1 + u_a)^{n_a, n_l} − 1, "
          "H = Δ + u_a(|s − m| + Δ + Δ_max), Δ = γ_{D+2}(u_a)·c|Q||K|ᵀ, for a precision recipe (u_in, u_a, u_p, μ, B_N) "
          "(Higham 2002's standard model; FlashAttention-2's loop, Dao 2023).",
          assumptions=("standard model with underflow and exp accuracy (cited)", "the kernel follows its declared recipe"), seeds=(),
          theorem=f"{_BOUNDS}:attention_forward_bound", topic="rounding-bounds",
          formal=_formal(lambda sp, n: _le(_r().ERR, _r().forward_bound_expression())),
          references=('Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., SIAM 2002, §2.2 (standard model)',
                      'Dao, FlashAttention-2, 2023',)),
    Claim(id="rounding-attention-probabilistic", title="Attention forward: a probabilistic λ√n·u bound",
          prose="With independent mean-zero rounding errors, the forward bound with γ_n → min(γ_n, γ̃_n(λ)), γ̃_n = "
          "exp(λ√n u + nu²/(1 − u)) − 1, and P's rounding → λu_p‖p∘v‖₂ fails anywhere in a tensor of C chains with "
          "probability at most C·2exp(−λ²(1 − u)²/2) (Higham & Mary, SIAM J. Sci. Comput. 41(5), 2019; Hoeffding 1963).",
          assumptions=("rounding errors independent, mean zero (assumed)", "Higham–Mary Theorem 2.4 and Hoeffding (cited)"), seeds=(),
          theorem=f"{_BOUNDS}:attention_probabilistic_bound", topic="rounding-bounds",
          formal=_formal(lambda sp, n: _le(_r().FAILURE_PROB, _r().CHAINS * 2 * sp.exp(
              -_r().LAM**2 * (1 - _r().U_A)**2 / 2))),
          references=('Higham & Mary, A new approach to probabilistic rounding error analysis, SIAM J. Sci. Comput. 41(5), 2019, Theorem 2.4',
                      'Hoeffding, 1963',)),
    Claim(id="memory-traffic", title="HBM traffic: standard attention against the tiled kernel",
          prose="Per batch and head (N queries and keys, d = d_v), standard attention moves 4N² + 4Nd elements between HBM "
          "and the chip, 4N² of them S and P; this kernel's forward with B × B tiles (B dividing N) moves "
          "2N²d/B + 2Nd + N and never writes S or P, so its traffic is still quadratic in N for fixed d and B; with "
          "B = M/(5d) chosen from a fast memory of M elements that is 10N²d²/M + 2Nd + N (Θ(N²d²/M), which no exact "
          "algorithm beats for all M: FlashAttention's Proposition 3, cited); scaling S in its own pass costs 2N² "
          "more and scaling Q 2Nd, so pre-scaling Q saves 2N² − 2Nd.",
          assumptions=("two-level memory: HBM of unbounded size, fast memory of M elements", "B divides N", "M a multiple of 5d",
           "the counts are of this kernel's loops (proofs.traffic), measured equal on the kernel by kernels/traffic.py"),
          seeds=(_seed(SEED_SELF_ATTENTION, "eliminating $O(N^2)$ memory reads/writes"),),
          theorem=f"{_TRAFFIC}:memory_traffic", topic="memory",
          formal=_formal(lambda sp, n: importlib.import_module(_TRAFFIC).statement()),
          references=('Dao et al., FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness, '
                      'NeurIPS 2022, Theorem 2 and Proposition 3',)),
)


def _self_attention_statement(sp, n):
    """E[xᵀMx] = Σ_a M_aa, Var(xᵀMx) = Σ_ab M_ab² + Σ_ab M_ab M_ba, E[xᵀWWᵀx] = Σ_a Σ_c W_ac² over entries."""
    r = _scores()
    a, c = r._ra, r._gc
    return sp.And(_eq(n.E(r.XMX), sp.Sum(r.M_E[a, a], (a, 1, n.N))),
                  _eq(n.Var(r.XMX), r.self_attention_variance_sums(r.M_E, n.N)),
                  _eq(n.E(r.XWX), sp.Sum(r.W_E[a, c] ** 2, (a, 1, n.N), (c, 1, n.D_K))))


def _scores():
    """The real-score theorems' module, whose symbols the distinct-token statement uses."""
    return importlib.import_module(_SCORES)


def _m(sp, n):
    return sp.MatrixSymbol("M", n.N, n.N)  # M = W_Q W_Kᵀ


def _fused_statement(sp, n):
    """Entry (t, c) of each slice of X[W_Q | W_K | W_V] (+ 1[b_Q | b_K | b_V]) is that of XW_Q, XW_K, XW_V (+ the
    bias), 0-based, symbolic sizes (symbols of proofs.theorems.projections)."""
    p = importlib.import_module(_PROJ)
    t, c = p.ROW, p.COL
    out = []
    for name, W, b in zip(("Q̂", "K̂", "V̂"), p.FUSED_W, p.FUSED_B):
        out.append(_eq(p.split_parts[name](t, c), p.projected_entry(W)))
        out.append(_eq(p.split_parts[name + "_b"](t, c), p.projected_entry(W) + b[c]))
    return sp.And(*out)


def _projection_statement(sp):
    """∂Y[b, t, c]/∂X[b', t', r] = δ_bb' δ_tt' ∂Y[b, t, c]/∂X[b, t, r] (symbols of proofs.theorems.projections)."""
    p = importlib.import_module(_PROJ)
    b, t, c, r, b2, t2 = p._b, p._t, p._c, p._r, p._b2, p._t2
    return _eq(p._other_token(), sp.KroneckerDelta(b, b2) * sp.KroneckerDelta(t, t2)
               * sp.Derivative(p.Y_PROJ[b, t, c], p.X_TOK[b, t, r]))


def _asymmetry_statement(sp):
    """(S − Sᵀ)_pq = (X (M − Mᵀ) Xᵀ)_pq for S = X M Xᵀ, any sizes; the seed's S_12 = 2, S_21 = 6 (symbols of
    proofs.theorems.projections)."""
    p = importlib.import_module(_PROJ)
    X, M = p.score_matrices()
    S, a, b = X * M * X.T, p.TOKEN_P, p.TOKEN_Q
    return sp.And(_eq(S[a, b] - S[b, a], (X * (M - M.T) * X.T)[a, b]), _eq(p.SEED_SCORES[0, 1], 2),
                  _eq(p.SEED_SCORES[1, 0], 6))





def _gqa_statement(sp, n):
    """kv_head(h) = ⌊h/G⌋; attn(Q_h, K_{kv_head(h)}, V_{kv_head(h)}) = attn(Q_h, K_rep,h, V_rep,h), K_rep and V_rep
    repeat_interleave'd by G; cache(H_q)/cache(H_kv) = G (symbols of proofs.theorems.gqa)."""
    g = importlib.import_module(_GQA)
    h = n.H_IDX
    return sp.And(_eq(n.kv_head(h), sp.floor(h / n.G)),
                  _eq(g.attention(g.Q_HEADS[h], g.K_HEADS[n.kv_head(h)], g.V_HEADS[n.kv_head(h)]),
                      g.attention(g.Q_HEADS[h], g.K_REPEATED[h], g.V_REPEATED[h])),
                  _eq(g.cache(g.H_Q) / g.cache(g.H_KV), n.G))


def _causal_statement(sp, n, last):
    """visible(i, j) = tril(i, j) (the implemented mask is PyTorch's documented form), and
    a_ij = exp(s_ij) / Σ_{k ≤ L_i} exp(s_ik) for L_i − j ≥ 0, else 0 (symbols of proofs.theorems.masking)."""
    m = importlib.import_module(_MASK)
    # k is only an integer: 0..L_i may be a reversed range (N_k < N_q − i − 1), so it does not imply k ≥ 0, and a
    # bound index may carry only what its range implies (the reader refuses more).
    i, j, k, s = n.I0, n.J0, sp.Symbol(n.K0.name, integer=True), m.SCORES
    return sp.And(_eq(m.visible(i, j), m.tril(i, j)), _eq(n.WEIGHTS[i, j], sp.Piecewise(
        (sp.exp(s[i, j]) / sp.Sum(sp.exp(s[i, k]), (k, 0, last)), sp.Ge(last - j, 0)), (0, True))))


def _two_token_statement(sp):
    r2 = sp.sqrt(2)
    sigma = lambda g: 1 / (1 + sp.exp(-g))  # noqa: E731  the logistic: softmax of two logits
    A = sp.ImmutableMatrix([[sigma(1 / r2), sigma(-1 / r2)], [sigma(r2), sigma(-r2)]])
    named = {"Q": PRINTED_Q, "K": PRINTED_K, "V": PRINTED_V, "S": PRINTED_S,
             "S/√2": sp.Matrix([[3 / r2, r2], [3 * r2, 2 * r2]]), "A": A,
             "Z": sp.Matrix([[1 + A[0, 1], 3 - A[0, 1]], [1 + A[1, 1], 3 - A[1, 1]]])}
    return sp.And(*(_eq(_matrix_symbol(sp, name, m), sp.ImmutableMatrix(m)) for name, m in named.items()))


def _rope_statement(sp, n):
    """s(m, n) = Σ_i q_iᵀ R((n − m)θ_i) k_i, written out, and the same sum at positions shifted by t."""
    q, k, i, th = n.QI, n.KI, n.I, n.ROPE_THETA
    angle = (n.ROPE_N - n.ROPE_M) * th[i]
    term = ((q[2 * i - 1] * k[2 * i - 1] + q[2 * i] * k[2 * i]) * sp.cos(angle)
            + (q[2 * i] * k[2 * i - 1] - q[2 * i - 1] * k[2 * i]) * sp.sin(angle))
    relative = sp.Sum(term, (i, 1, n.ROPE_H))
    return sp.And(_eq(n.score_rope(n.ROPE_M, n.ROPE_N), relative),
                  _eq(n.score_rope(n.ROPE_M + n.ROPE_T, n.ROPE_N + n.ROPE_T), relative))


def _kurtosis_statement(sp, n):
    """μ₄(S) = d_k μ₄(P) + 3d_k(d_k − 1)μ₂(P)² and κ(S) = κ(P)/d_k + 3(d_k − 1)/d_k, P = q_i k_i."""
    d, p = n.D_K, n.P_TERM
    return sp.And(_eq(n.mu_4(n.S), d * n.mu_4(p) + 3 * d * (d - 1) * n.mu_2(p) ** 2),
                  _eq(n.kappa(n.S), n.kappa(p) / d + 3 * (d - 1) / d))


def _dropout_statement(sp, which: str):
    """The dropout laws in the keep probability q = 1 − p (symbols of proofs.theorems.dropout)."""
    d = importlib.import_module(_DROPOUT)
    if which == "kept-fraction":
        m = d.M[d.j]
        return sp.And(_eq(d.E(m), d.q), _eq(d.E(d.c * m), d.c * d.q), _eq(d.E(m / d.q), 1))
    if which == "unbiased":
        return _eq(d.E(d.OUTPUT), d.NO_DROPOUT)
    return _eq(d.Var(d.OUTPUT), (1 - d.q) / d.q * d.SUM_SQUARES)


def _rounding_bias_statement(sp):
    r = importlib.import_module(_ROUNDING_BIAS)
    return sp.And(_eq(r.E(r.ERR_RN), 0), _eq(r.Var(r.ERR_RN), r.h ** 2 / 12), _eq(r.E(r.ERR_TRUNC), -r.h / 2))


def _three_token_statement(sp):
    e = sp.E
    named = {"S/√d_k": PRINTED_SCALED_3, "α_1": sp.Matrix([[e**2, e, 1]]) / (e**2 + e + 1),
             "z_1": sp.Matrix([e**2 + 3 * e, 2 * e**2 + 4]) / (e**2 + e + 1)}
    return sp.And(*(_eq(_matrix_symbol(sp, name, m), sp.ImmutableMatrix(m)) for name, m in named.items()))


class Catalogue(tuple):
    """The claims in catalogue order (iterated, counted and sliced as a tuple) that also answers
    ``CLAIMS["claim-id"]``, ``"claim-id" in CLAIMS``, ``CLAIMS.ids()`` and ``CLAIMS.get(id)``, like a mapping."""

    def __getitem__(self, key):
        if isinstance(key, str):
            return claim(key)  # KeyError's job done by a ValueError that lists the known ids
        return tuple.__getitem__(self, key)

    def __contains__(self, key) -> bool:
        return key in _BY_ID if isinstance(key, str) else tuple.__contains__(self, key)

    def ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self)

    def get(self, claim_id: str, default=None):
        return _BY_ID.get(claim_id, default) if isinstance(claim_id, str) else default


CLAIMS = Catalogue(CLAIMS)
_BY_ID = {c.id: c for c in CLAIMS}


def catalogued(claim_id: str) -> Claim | None:
    """The catalogue entry of ``claim_id``, or None for an id outside the catalogue."""
    return _BY_ID.get(claim_id) if isinstance(claim_id, str) else None


def claim(claim_id: str) -> Claim:
    if not isinstance(claim_id, str) or claim_id not in _BY_ID:
        known = ", ".join(sorted(_BY_ID))
        raise ValueError(f"claim_id {claim_id!r} is not in the catalogue; known ids: {known}")
    return _BY_ID[claim_id]


def derive(claim_id: str):
    """The Derivation of one catalogued claim."""
    return claim(claim_id).derive()


_CITED: dict[int, tuple[Claim, Any]] = {}


def cited(claim_id: str):
    """The Derivation of a catalogued claim that another theorem cites, derived once per catalogue entry.

    Keyed by the entry object (not its fields: a test's perturbed statement differs only in ``formal``),
    so a replaced entry is derived afresh.
    """
    entry = claim(claim_id)
    if id(entry) not in _CITED or _CITED[id(entry)][0] is not entry:
        _CITED[id(entry)] = (entry, entry.derive())
    return _CITED[id(entry)][1]


def require_proved(derivation, what: str):
    """``derivation`` itself, or a RuntimeError naming ``what`` if it did not prove: the one guard every
    layer puts in front of a derived result before building on it (confirming it, checking a kernel by it)."""
    if not derivation.verified:
        raise RuntimeError(f"the derivation of {what} did not verify; refusing to build on it")
    return derivation


def proved(claim_id: str):
    """The proved Derivation of one catalogued claim (see ``require_proved``)."""
    return require_proved(derive(claim_id), repr(claim_id))
