"""Plain attention, written the way the mathematics reads, in float64 or in the inputs' precision.

Two jobs: the float64 "golden" output and gradients every check is measured against, and the
plain same-precision reference whose own error sets the tolerance (see ``tolerance.py``).
"""
from __future__ import annotations

import math

import torch

# the non-finite values an input element may hold (float() reads each), judged by their kind in the output
NONFINITE = ("NaN", "+inf", "-inf")


def leading_flattened(t: torch.Tensor) -> torch.Tensor:
    """t (*lead, H, N, D) as (prod(lead), H, N, D). The size is spelled out: reshape(-1, ...) is ambiguous for a
    tensor of no elements and raises (rank-5 inputs with no keys, which SDPA accepts: the survey's seed 3)."""
    return t.reshape(math.prod(t.shape[:-3]), *t.shape[-3:])


def flattened_mask(mask, lead: torch.Size):
    """A mask of 4 dims or more against inputs with leading dims ``lead``: (prod(lead), ·, Nq, Nk), the
    entries each (batch index, head) reads (red team rt37h: rank-5 masks of batch > 1 were never drawn)."""
    if mask is None or mask.dim() <= 3:
        return mask
    tail = mask.shape[-3:]
    return leading_flattened(mask.expand(*lead, *tail))  # (B', 1 or H, Nq or 1, Nk)


def require_sdpa_inputs(q, k, v, attn_mask=None) -> None:
    """SDPA's refusals (kernels.harness.contract, items "refused", "kv-lengths" and "mask-dtype"): q, k and v
    of different dtypes raise rather than being cast to one of them, k and v of different lengths rather than
    one being read over the other's, and an attn_mask of a dtype SDPA refuses (require_sdpa_mask)."""
    if not q.dtype == k.dtype == v.dtype:
        raise ValueError(f"q, k and v must have one dtype, got q {q.dtype}, k {k.dtype}, v {v.dtype}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must have one length, got k {k.shape[-2]} and v {v.shape[-2]} (dim -2)")
    require_sdpa_mask(attn_mask, q.dtype)


def require_sdpa_mask(attn_mask, dtype: torch.dtype) -> None:
    """An attn_mask beside inputs of ``dtype`` is bool, float32 or ``dtype``: SDPA math refuses every other
    (measured, torch 2.13: every integer dtype, float64 beside float32 q, the other half type)."""
    if attn_mask is not None and attn_mask.dtype not in (torch.bool, torch.float32, dtype):
        raise TypeError(f"attn_mask must be bool, float32 or the inputs' dtype ({dtype}), got {attn_mask.dtype}")


def default_scale(head_dim: int) -> float:
    # D = 0: every score is an empty sum, 0 whatever the scale (SDPA gives the mean of v, measured); 1/√0 raised
    # ZeroDivisionError inside the harness, which a drawn dropout problem of D = 0 reported as the impl's refusal
    return 1.0 / math.sqrt(head_dim) if head_dim else 1.0


def causal_mask(n_q: int, n_k: int, device=None) -> torch.Tensor:
    """Top-left aligned, as SDPA: query i sees key j iff j <= i, also when Nq != Nk."""
    i = torch.arange(n_q, device=device)[:, None]  # (Nq, 1)
    j = torch.arange(n_k, device=device)[None, :]  # (1, Nk)
    return j <= i  # (Nq, Nk), True = visible


def group_size(n_q_heads: int, n_kv_heads: int) -> int:
    """Hq / Hkv, refused where Hkv does not divide Hq, as SDPA refuses under enable_gqa."""
    if n_kv_heads == 0 or n_q_heads % n_kv_heads:
        raise ValueError(f"enable_gqa: the query heads ({n_q_heads}) must be a multiple of the key/value heads "
                         f"({n_kv_heads})")
    return n_q_heads // n_kv_heads


def repeat_kv(x: torch.Tensor, n_q_heads: int) -> torch.Tensor:
    """KV heads repeated so that query head h reads KV head h // (Hq / Hkv); refused where Hkv does not divide Hq,
    as SDPA refuses (shape-contract found float64_reference answering q of 1 head beside 2 KV heads)."""
    if x.shape[-3] == n_q_heads:  # (0 heads too: an empty dim)
        return x
    return x.repeat_interleave(group_size(n_q_heads, x.shape[-3]), dim=-3)  # (..., Hq, N, D): dim -3 is the heads at every rank, as in SDPA


# The golden values read GQA's KV heads in place rather than repeated: query heads h·G … h·G + G - 1 read KV head h, so
# stacking a group's rows makes one matmul per KV head (repeat_interleave was 4 % of the covering rows' CPU seconds).

def grouped(x: torch.Tensor, n_kv_heads: int) -> torch.Tensor:
    """(..., Hq, M, K) → (..., Hkv, G·M, K): each group of G = Hq / Hkv query heads' rows stacked, as its KV head reads
    them; refused where Hkv does not divide Hq (repeat_kv's rule)."""
    n_q_heads = x.shape[-3]
    if n_kv_heads == n_q_heads:
        return x
    return x.unflatten(-3, (n_kv_heads, group_size(n_q_heads, n_kv_heads))).flatten(-3, -2)  # (..., Hkv, G·M, K)


def ungrouped(x: torch.Tensor, n_q_heads: int, rows: int) -> torch.Tensor:
    """grouped's inverse: (..., Hkv, G·M, K) → (..., Hq, M, K), M = ``rows`` (0 query heads too)."""
    return x.reshape(*x.shape[:-3], n_q_heads, rows, x.shape[-1])


def kv_heads(k: torch.Tensor, enable_gqa: bool) -> int | None:
    """The KV heads the query heads are grouped over: k's with enable_gqa; else None (a plain matmul, broadcasting
    as torch's does)."""
    return k.shape[-3] if enable_gqa else None


def query_side(a: torch.Tensor, b: torch.Tensor, n_kv_heads: int | None) -> torch.Tensor:
    """a @ b for a of Hq heads (..., Hq, M, K) and b of n_kv_heads (..., Hkv, K, N): each query head reads its KV
    head; (..., Hq, M, N). n_kv_heads None: a plain matmul."""
    if n_kv_heads is None or n_kv_heads == a.shape[-3]:
        return a @ b
    return ungrouped(grouped(a, n_kv_heads) @ b, a.shape[-3], a.shape[-2])


def key_side(a: torch.Tensor, b: torch.Tensor, n_kv_heads: int | None) -> torch.Tensor:
    """aᵀ @ b summed over each group of query heads: a (..., Hq, M, N), b (..., Hq, M, K) → (..., Hkv, N, K), a KV
    head's gradient from all the query heads that read it. n_kv_heads None: aᵀ @ b."""
    if n_kv_heads is None:
        return a.transpose(-2, -1) @ b
    return grouped(a, n_kv_heads).transpose(-2, -1) @ grouped(b, n_kv_heads)


def additive(attn_mask: torch.Tensor, dtype) -> torch.Tensor:
    """SDPA's attn_mask as a term added to the scores: a boolean mask (True = attend) is 0 / -inf. A
    float mask wider than the scores (float32 with half q) stays in its own dtype: torch 2.13's math
    SDPA keeps it there (measured: a float32 bias near 300 with bfloat16 q errs 0.009, the bias cast
    to bfloat16 first 0.88), so the sum and the softmax are in the wider dtype."""
    if attn_mask.dtype == torch.bool:
        return torch.zeros(attn_mask.shape, dtype=dtype, device=attn_mask.device).masked_fill(~attn_mask, float("-inf"))
    return attn_mask.to(torch.promote_types(attn_mask.dtype, dtype))


def scores(q, k, *, is_causal=False, scale=None, enable_gqa=False, attn_mask=None) -> torch.Tensor:
    """The logits scale · Q Kᵀ + mask, -inf where a key is hidden, in the inputs' dtype."""
    scale = default_scale(q.shape[-1]) if scale is None else scale
    hkv = kv_heads(k, enable_gqa)
    # The query is pre-scaled ((sQ)Kᵀ = s(QKᵀ), claim prescaled-query): in float16 the unscaled
    # scores of large inputs could overflow where the scaled ones do not. Where the scale itself
    # takes q past the dtype's range (q near float16's top, |scale| > 1) the key is scaled instead,
    # as s(QKᵀ) = Q(sK)ᵀ: the same roundings, and no overflow SDPA does not make (it scales in float32
    # on the CPU). A reference that overflowed would make its own error, so the bound, infinite.
    scaled_q = q * scale
    if torch.isfinite(q).all() and not torch.isfinite(scaled_q).all():
        s = query_side(q, (k * scale).transpose(-2, -1), hkv)  # (B, Hq, Nq, Nk)
    else:
        s = query_side(scaled_q, k.transpose(-2, -1), hkv)  # (B, Hq, Nq, Nk)
    if attn_mask is not None:
        s = s + additive(attn_mask.to(q.device), s.dtype)
    if is_causal:
        s = s.masked_fill(~causal_mask(q.shape[-2], k.shape[-2], q.device), float("-inf"))
    return s


def softmax_rows(s: torch.Tensor) -> torch.Tensor:
    """softmax over keys, with all-zero weights in a row with no visible key (every score -inf), as
    torch 2.13's CPU SDPA does (measured: output 0 and zero gradients, for boolean and additive
    masks, math and flash backends alike), where a plain softmax would give 0/0 = NaN."""
    empty = torch.isneginf(s).all(dim=-1, keepdim=True)  # (B, Hq, Nq, 1)
    return torch.softmax(s.masked_fill(empty, 0.0), dim=-1).masked_fill(empty, 0.0)


def probabilities(q, k, *, is_causal=False, scale=None, enable_gqa=False, attn_mask=None) -> torch.Tensor:
    """The attention weights P = softmax(scale · Q Kᵀ + mask), in the inputs' dtype."""
    return softmax_rows(scores(q, k, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa,
                               attn_mask=attn_mask)).to(q.dtype)  # (B, Hq, Nq, Nk)


def attention(q, k, v, *, is_causal=False, scale=None, enable_gqa=False, attn_mask=None) -> torch.Tensor:
    """softmax(scale · Q Kᵀ + mask) V in the inputs' own dtype: the plain same-precision reference."""
    p = probabilities(q, k, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa, attn_mask=attn_mask)
    return query_side(p, v, kv_heads(v, enable_gqa))  # (B, Hq, Nq, Dv)


def attention64(q, k, v, *, is_causal=False, scale=None, enable_gqa=False, attn_mask=None) -> torch.Tensor:
    """The float64 golden output, returned in float64."""
    return attention(q.double(), k.double(), v.double(), is_causal=is_causal, scale=scale, enable_gqa=enable_gqa,
                     attn_mask=_float64_mask(attn_mask))


def _float64_mask(attn_mask):
    """An additive mask promoted to float64; a boolean one (or none) as it is."""
    return attn_mask if attn_mask is None or attn_mask.dtype == torch.bool else attn_mask.double()


def golden_and_sensitivity(q, k, v, *, is_causal=False, scale=None, enable_gqa=False, attn_mask=None, terms=False):
    """(float64 golden output O, its sensitivity R to rounding the scores), both (B, Hq, Nq, Dv); with ``terms``,
    a third: the size of O's terms, Σ_j P_ij |V_jd| (where O is far below it, its terms cancelled).

    R = sqrt(Σ_j (P_ij A_ij (V_jd - O_id))²): O moves by Σ_j P_ij (V_jd - O_id) δ_ij when each
    score S_ij moves by δ_ij, so independent roundings |δ_ij| <= u A_ij of the scores move it by
    about u·R (its standard deviation is at most u·R). A_ij (rounding_magnitudes) is |S_ij|, or the
    size of the dot product's terms where they cancel. R is negligible for scores of size 1 and
    dominates where rows hold scores of 10⁴ (the harness's mixed-magnitude rows)."""
    q, k, v = q.double(), k.double(), v.double()
    logits = scores(q, k, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa, attn_mask=_float64_mask(attn_mask))
    p = softmax_rows(logits)  # (B, Hq, Nq, Nk)
    hkv = kv_heads(v, enable_gqa)
    out = query_side(p, v, hkv)  # (B, Hq, Nq, Dv)
    # hidden keys (score -inf, weight 0) add nothing
    w = (p * torch.where(p > 0, rounding_magnitudes(q, k, logits, scale, enable_gqa), 0.0)) ** 2
    # Σ_j w_j (v_j - o)² expanded into products with V, so no (B, H, Nq, Nk, Dv) tensor is formed.
    # Where one key takes all the weight the expansion cancels; what is left, about 1e-8 |P∘S| |V|,
    # times float32's eps is far below the floor's output-scale term.
    r2 = (query_side(w, v ** 2, hkv) - 2 * out * query_side(w, v, hkv)
          + out ** 2 * w.sum(-1, keepdim=True))  # (B, Hq, Nq, Dv)
    if terms:
        return out, r2.clamp(min=0).sqrt(), query_side(p, v.abs(), hkv)  # (B, Hq, Nq, Dv) each
    return out, r2.clamp(min=0).sqrt()


def lse_sizes(q, k, v, *, is_causal=False, scale=None, enable_gqa=False, attn_mask=None) -> torch.Tensor:
    """|lse|·Σ_j P_ij |V_jd| in float64, (B, Hq, Nq, Dv), 0 in a row with no visible key: what the rounding of the
    log-sum-exp moves an output by when partial outputs are merged by it (tolerance.LSE_ROUNDINGS)."""
    q, k, v = q.double(), k.double(), v.double()
    logits = scores(q, k, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa, attn_mask=_float64_mask(attn_mask))
    lse = torch.logsumexp(logits, -1, keepdim=True)  # (B, Hq, Nq, 1)
    weighted = query_side(softmax_rows(logits), v.abs(), kv_heads(v, enable_gqa))  # (B, Hq, Nq, Dv)
    return torch.where(torch.isfinite(lse), lse.abs(), 0.0) * weighted


def rounding_magnitudes(q, k, logits, scale, enable_gqa) -> torch.Tensor:
    """The magnitude A_ij each rounding of score S_ij is taken at: the larger of |S_ij| and |scale|·Σ_d |q_id k_jd|,
    (B, Hq, Nq, Nk) float64. A float32 dot product's partial sums are of the size of its terms, not of the sum:
    where D terms cancel (a head of thousands of channels at scale 1: |S| ≈ √D, Σ|q_d k_d| ≈ 0.64·D) its error is
    about u·√D·(the terms' size), past 4 roundings of |S| (measured: two correct summation orders of D = 1902 at
    scale 1.00015 differed 1.37× past the bound taken at |S|; D = 3642 at scale 1, 2.16×)."""
    scale = default_scale(q.shape[-1]) if scale is None else scale
    terms = scores(q.abs(), k.abs(), scale=abs(scale), enable_gqa=enable_gqa)  # (B, Hq, Nq, Nk)
    return torch.maximum(logits.abs().nan_to_num(posinf=0.0), terms)


def float64_reference(q, k, v, *, attn_mask=None, is_causal=False, scale=None, enable_gqa=False) -> torch.Tensor:
    """An SDPA-compatible implementation (no dropout) that computes in float64 and returns q's dtype;
    it refuses mixed dtypes as SDPA does, though the upcast would hide them."""
    require_sdpa_inputs(q, k, v, attn_mask)
    return attention64(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa,
                       attn_mask=attn_mask).to(q.dtype)


def copy(t: torch.Tensor, dtype=None) -> torch.Tensor:
    """A fresh copy with t's strides, whatever they are: clone() keeps only the strides of a dense
    layout (a permutation) and makes a view with a head-dim stride of 2 contiguous; stride 0 stays stride 0."""
    repeated = [i for i, (n, st) in enumerate(zip(t.shape, t.stride())) if st == 0 and n > 1]
    if repeated:  # stride 0 (an expanded view): a copy of what it repeats, expanded alike (no writing into overlap)
        return copy(t.narrow(repeated[0], 0, 1), dtype).expand(t.shape)
    out = torch.empty_strided(t.shape, t.stride(), dtype=dtype or t.dtype, device=t.device)
    return out.copy_(t.detach())


def leaves(tensors, dtype=None) -> list[torch.Tensor]:
    """Fresh autograd leaves holding copies: ``detach().to()`` would alias the caller's tensor when
    the dtype does not change, so an impl writing into its inputs would corrupt the golden values."""
    return [copy(t, dtype).requires_grad_(True) for t in tensors]


def output_and_grads(fn, q, k, v, dout, *, upcast=False, **kwargs):
    """fn's output and (dq, dk, dv) for the upstream gradient dout, by autograd.

    With ``upcast`` the inputs are promoted to float64 first (the golden gradients)."""
    qkv = leaves((q, k, v), torch.float64 if upcast else None)
    out = fn(*qkv, **kwargs)
    grads = torch.autograd.grad(out, qkv, dout.to(out.dtype))
    return out.detach(), tuple(g.detach() for g in grads)


def chain_rule_gradients(q, k, v, dout, p, score_grad, *, scale=None, enable_gqa=False):
    """(dq, dk, dv) of attention by the chain rule, given the weights p and the map dP ↦ dS.

    ``score_grad(p, dp)`` is the softmax's backward (e.g. the proved Jacobian applied to dp). With
    GQA the key and value gradients are summed over each group of query heads."""
    scale = default_scale(q.shape[-1]) if scale is None else scale
    hkv = kv_heads(k, enable_gqa)
    dp = query_side(dout, v.transpose(-2, -1), hkv)  # (B, Hq, Nq, Nk)
    ds = score_grad(p, dp)  # (B, Hq, Nq, Nk)
    dq = scale * query_side(ds, k, hkv)  # (B, Hq, Nq, D)
    dk = scale * key_side(ds, q, hkv)  # (B, Hkv, Nk, D)
    dv = key_side(p, dout, hkv)  # (B, Hkv, Nk, Dv)
    return dq, dk, dv


def gradient_term_sizes(q, k, v, dout, *, is_causal=False, scale=None, enable_gqa=False, attn_mask=None):
    """The gradients with every factor replaced by its absolute value (float64).

    Rounding acts on the terms a gradient is summed from, not on the (possibly cancelling) sum:
    with one key, dS = P∘(dP - D) is exactly 0 while dP and D are not. These sizes set the floor."""
    q, k, v, dout = (t.double() for t in (q, k, v, dout))
    p = probabilities(q, k, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa,
                      attn_mask=_float64_mask(attn_mask))  # (B, Hq, Nq, Nk)
    # |dS| <= P∘(|dP| + |D|) and, by D = rowsum(P∘dP), |D| <= rowsum(P∘|dP|).
    return chain_rule_gradients(q.abs(), k.abs(), v.abs(), dout.abs(), p,
                                lambda p, dp: p * (dp + (p * dp).sum(-1, keepdim=True)),
                                scale=abs(default_scale(q.shape[-1]) if scale is None else scale),
                                enable_gqa=enable_gqa)


def gradient_score_sensitivities(q, k, v, dout, *, is_causal=False, scale=None, enable_gqa=False, attn_mask=None,
                                 dropped=None):
    """(dq, dk, dv)'s sensitivity to rounding the scores, as ``golden_and_sensitivity``'s R is the
    output's (float64).

    A backward recomputes P = exp(S - lse): roundings δ of the scores and of lse move P_ij by
    P_ij δ_ij with |δ_ij| <= u (|S_ij| + |lse_i|) (|S_ij| as rounding_magnitudes takes it).
    Through dV = Pᵀ dO and dS = P∘(dP - D) that gives,
    for independent roundings, standard deviations of at most u times
    sqrt(Σ_i (P_ij A_ij dO_id)²) for dv, scale·sqrt(Σ_j (P_ij A_ij (dP_ij - D_i) K_jd)²) for dq and
    the same over i with Q_id for dk, A = |S| + |lse|. Summed over each GQA group by squares. ``dropped``: a
    dropout call's keep mask times 1/(1-p), (B, Hq, Nq, Nk): W = P∘dropped takes P's place in dV and dP∘dropped
    dP's in dS (the dropout gradients' rule, dropout.py, judged by this same model)."""
    q, k, v, dout = (t.double() for t in (q, k, v, dout))
    logits = scores(q, k, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa, attn_mask=_float64_mask(attn_mask))
    p = softmax_rows(logits)  # (B, Hq, Nq, Nk)
    hkv = kv_heads(k, enable_gqa)
    scale = default_scale(q.shape[-1]) if scale is None else scale
    lse = torch.logsumexp(logits, dim=-1, keepdim=True)  # (B, Hq, Nq, 1); -inf in an empty row
    size = torch.where(p > 0, rounding_magnitudes(q, k, logits, scale, enable_gqa) + lse.abs(), 0.0)  # A, 0 where
    # the weight is 0
    w = p * size  # (B, Hq, Nq, Nk)
    kept = 1.0 if dropped is None else dropped.double()
    dp = query_side(dout, v.transpose(-2, -1), hkv) * kept  # (B, Hq, Nq, Nk)
    g2 = (w * (dp - (p * dp).sum(-1, keepdim=True))) ** 2
    dq2 = scale ** 2 * query_side(g2, k ** 2, hkv)  # (B, Hq, Nq, D)
    dk2 = scale ** 2 * key_side(g2, q ** 2, hkv)  # (B, Hkv, Nk, D)
    dv2 = key_side((w * kept) ** 2, dout ** 2, hkv)  # (B, Hkv, Nk, Dv)
    return tuple(x.sqrt() for x in (dq2, dk2, dv2))
