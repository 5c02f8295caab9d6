"""Deliberately wrong attention implementations, one bug class each, for testing the harness.

Each mutant is SDPA-compatible (``fn(q, k, v, *, is_causal=False, scale=None, enable_gqa=False)``)
and differs from a correct implementation by one bug of a kind real FlashAttention-style kernels
have shipped. ``MUTANTS`` records, for each, the bug class, the invariant of
``kernels.verify_attention`` expected to name it, and the dtypes in which the bug shows.

The correct implementations they are cut from are here too: :func:`blocked_attention` (a
FlashAttention-2 style loop over key blocks with a running max, running sum and unnormalised
accumulator, float32 inside), :func:`manual_backward_attention` (a hand-written backward,
dS = P∘(dP - D) with D = rowsum(dO∘O)) and :func:`full_attention` (SDPA's whole signature:
attn_mask, dropout_p, a hand-written backward that reuses the forward's dropout mask). The
harness must pass all three.
"""
from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass
from typing import Callable

import torch

from kernels.harness.rounding_bound import declare_recipe

BLOCK = 16  # small, so the harness's lengths (37, 53, 127) span several blocks and a partial one


def _work_dtype(dtype: torch.dtype) -> torch.dtype:
    # Accumulate in float32 for the half types, as kernels do; float64 stays float64.
    return torch.float64 if dtype == torch.float64 else torch.float32


def _heads(q, k, v, enable_gqa: bool, mapping: str = "group"):
    """k, v with one head per query head: SDPA maps query head h to KV head h // (Hq / Hkv)."""
    hq, hkv = q.shape[1], k.shape[1]
    if hq == hkv:
        return k, v
    if not enable_gqa and hkv != 1:  # SDPA's contract: one KV head broadcasts, other counts need enable_gqa
        raise ValueError(f"q has {hq} heads but k and v have {hkv}; pass enable_gqa=True")
    if mapping == "group":
        index = torch.arange(hq, device=q.device) // (hq // hkv)
    else:  # the bug: heads interleaved instead of grouped
        index = torch.arange(hq, device=q.device) % hkv
    return k[:, index], v[:, index]  # (B, Hq, Nk, D)


def _visible(n_q: int, n_k: int, device, causal: str) -> torch.Tensor:
    i = torch.arange(n_q, device=device)[:, None]  # (Nq, 1)
    j = torch.arange(n_k, device=device)[None, :]  # (1, Nk)
    offsets = {"top-left": 0, "leak-next": 1, "bottom-right": n_k - n_q}
    if causal == "strict":  # the diagonal itself masked
        return j < i
    return j <= i + offsets[causal]  # (Nq, Nk)


def blocked_attention(q, k, v, *, is_causal=False, scale=None, enable_gqa=False, bugs=frozenset(),
                      block=BLOCK, causal_mode="top-left", work_dtype=None, sentinel=float("-inf"),
                      default_scale=None):
    """FlashAttention-2's loop in PyTorch: for each key block, update (m, l, acc); divide once.

    ``bugs`` switches on named defects (the mutants below); with none it is correct."""
    out_dtype = q.dtype
    work = q.dtype if work_dtype == "input" else (work_dtype or _work_dtype(q.dtype))
    d = q.shape[-1]
    if "scale-or-default" in bugs:
        scale = scale or 1.0 / math.sqrt(d)  # the bug: 0.0 is falsy
    if scale is None:
        scale = default_scale(d) if default_scale else 1.0 / math.sqrt(d)
    if "ignore-scale" in bugs:
        scale = 1.0 / math.sqrt(d)
    k, v = _heads(q, k, v, enable_gqa, "modulo" if "gqa-modulo" in bugs else "group")
    q, k, v = (t.to(work) for t in (q, k, v))
    n_q, n_k = q.shape[-2], k.shape[-2]
    visible = _visible(n_q, n_k, q.device, causal_mode) if is_causal else None
    m = torch.full(q.shape[:-1] + (1,), float("-inf"), dtype=work, device=q.device)  # (B, H, Nq, 1)
    l = torch.zeros_like(m)  # (B, H, Nq, 1)
    acc = torch.zeros(q.shape[:-1] + (v.shape[-1],), dtype=work, device=q.device)  # (B, H, Nq, D)
    if "global-max" in bugs:
        m = ((q * scale) @ k.transpose(-2, -1)).amax().expand_as(m).clone()  # one max for every row
    stop = n_k - n_k % block if "drop-tail-block" in bugs else n_k
    starts = list(range(0, stop, block))
    if "reverse-no-guard" in bugs:
        starts.reverse()
    if "shuffled-blocks" in bugs:  # blocks summed in an order that changes from call to call
        starts = [starts[i] for i in torch.randperm(len(starts)).tolist()]
    for j0 in starts:
        kb, vb = k[:, :, j0:j0 + block], v[:, :, j0:j0 + block]  # (B, H, bn, D)
        if "head-dim-128" in bugs:  # the bug: a kernel built for D <= 128 reads only the first 128 dims
            s = (q[..., :128] * scale) @ kb[..., :128].transpose(-2, -1)  # (B, H, Nq, bn)
        else:
            s = (q * scale) @ kb.transpose(-2, -1)  # (B, H, Nq, bn)
        if visible is not None:
            s = s.masked_fill(~visible[:, j0:j0 + block], sentinel)
        if "no-max" in bugs:
            m_new = torch.zeros_like(m)
        elif "global-max" in bugs:
            m_new = m
        else:
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))  # (B, H, Nq, 1)
        # Guard -inf - (-inf): a row with every key so far masked keeps m = -inf.
        m_safe = m_new if "reverse-no-guard" in bugs else torch.where(torch.isinf(m_new), 0.0, m_new)
        alpha = torch.exp(m - m_safe)  # rescales what was accumulated under the old max
        p = torch.exp(s - m_safe)  # (B, H, Nq, bn)
        l = (l if "no-l-rescale" in bugs else alpha * l) + p.sum(dim=-1, keepdim=True)
        acc = (acc if "no-acc-rescale" in bugs else alpha * acc) + p @ vb  # (B, H, Nq, D)
        m = m_new
    out = acc / l  # (B, H, Nq, D)
    if "drop-query-tail" in bugs:
        out[:, :, n_q - n_q % block:] = 0.0
    if "truncating-store" in bugs and out_dtype == torch.bfloat16:
        return _truncated_to_bfloat16(out)
    return out if "float32-output" in bugs else out.to(out_dtype)


declare_recipe(blocked_attention, "float32-blocked")  # its mutants (other functions) are judged as "loosest"


def _truncated_to_bfloat16(x: torch.Tensor) -> torch.Tensor:
    """float32 → bfloat16 by dropping the low 16 bits (toward zero) instead of rounding to nearest."""
    bits = x.to(torch.float32).contiguous().view(torch.int32) & -65536  # 0xFFFF0000
    return bits.view(torch.float32).to(torch.bfloat16)  # exact: the dropped bits are already zero


def _plain(q, k, v, *, is_causal, scale, enable_gqa, weights):
    """Unblocked attention in float32 whose weights come from ``weights(scores, visible)``."""
    dtype = q.dtype
    k, v = _heads(q, k, v, enable_gqa)
    q, k, v = (t.to(_work_dtype(dtype)) for t in (q, k, v))
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = (q * scale) @ k.transpose(-2, -1)  # (B, H, Nq, Nk)
    visible = _visible(q.shape[-2], k.shape[-2], q.device, "top-left") if is_causal else None
    return (weights(s, visible) @ v).to(dtype)  # (B, H, Nq, D)


def _masked(s, visible):
    return s if visible is None else s.masked_fill(~visible, float("-inf"))


# --------------------------------------------------------------------------- forward mutants


def _variant(base, name: str, doc: str, **options):
    """A mutant: ``base`` with one bug switched on, behind SDPA's keyword signature."""
    def mutant(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
        return base(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa, **options)

    mutant.__name__ = mutant.__qualname__ = name
    mutant.__doc__ = doc
    return mutant


wrong_default_scale = _variant(blocked_attention, "wrong_default_scale",
    "scale=None read as 1/D instead of 1/√D.",
    default_scale=lambda d: 1.0 / d)

ignored_explicit_scale = _variant(blocked_attention, "ignored_explicit_scale",
    "The scale argument is accepted and ignored: always 1/√D.",
    bugs={"ignore-scale"})

causal_leaks_next_key = _variant(blocked_attention, "causal_leaks_next_key",
    "Causal off by one, outward: query i also sees key i + 1.",
    causal_mode="leak-next")

causal_masks_diagonal = _variant(blocked_attention, "causal_masks_diagonal",
    "Causal off by one, inward: query i does not see key i (row 0 sees nothing).",
    causal_mode="strict")

causal_bottom_right = _variant(blocked_attention, "causal_bottom_right",
    "Causal mask aligned bottom-right (query i sees j <= i + Nk - Nq) instead of SDPA's top-left.",
    causal_mode="bottom-right")


def mask_after_softmax(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    """Softmax over all keys, then the masked weights zeroed: rows no longer sum to 1."""
    def weights(s, visible):
        p = torch.softmax(s, dim=-1)
        return p if visible is None else p * visible
    return _plain(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa, weights=weights)


def softmax_over_queries(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    """Softmax normalised over the query axis (dim -2) instead of the key axis."""
    return _plain(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa,
                  weights=lambda s, visible: torch.nan_to_num(torch.softmax(_masked(s, visible), dim=-2)))


def max_over_queries(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    """Stabilising max taken per key column (over queries) instead of per query row."""
    def weights(s, visible):
        s = _masked(s, visible)
        e = torch.exp(s - s.amax(dim=-2, keepdim=True).clamp(min=-1e30))
        return e / e.sum(dim=-1, keepdim=True)
    return _plain(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa, weights=weights)


def normalised_scores_without_exp(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    """Weights s / Σ s (the exponential forgotten): rows still sum to 1, but weights go negative."""
    def weights(s, visible):
        s = s if visible is None else s * visible
        return s / s.sum(dim=-1, keepdim=True)
    return _plain(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa, weights=weights)


online_without_accumulator_rescale = _variant(blocked_attention, "online_without_accumulator_rescale",
    "Online softmax that rescales the running sum but not the accumulator when the max grows.",
    bugs={"no-acc-rescale"})

online_without_denominator_rescale = _variant(blocked_attention, "online_without_denominator_rescale",
    "Online softmax that rescales the accumulator but not the running sum.",
    bugs={"no-l-rescale"})

dropped_tail_block = _variant(blocked_attention, "dropped_tail_block",
    "The last, partial key block is skipped (loop bound Nk // BLOCK instead of a ceiling).",
    bugs={"drop-tail-block"})

dropped_query_tail = _variant(blocked_attention, "dropped_query_tail",
    "Rows of the last, partial query block are never written (left zero).",
    bugs={"drop-query-tail"})

gqa_modulo_heads = _variant(blocked_attention, "gqa_modulo_heads",
    "GQA query head h reads KV head h % Hkv instead of h // (Hq / Hkv).",
    bugs={"gqa-modulo"})

no_max_subtraction = _variant(blocked_attention, "no_max_subtraction",
    "exp(s) without subtracting a running max: overflows to inf/inf = NaN at large logits.",
    bugs={"no-max"})

global_max_subtraction = _variant(blocked_attention, "global_max_subtraction",
    "One max over the whole tensor instead of per row: small rows underflow to 0/0.",
    bugs={"global-max"})

finite_mask_sentinel = _variant(blocked_attention, "finite_mask_sentinel",
    "Masked scores set to -1e4 instead of -inf: real scores below -1e4 lose to masked keys.",
    sentinel=-1e4)

unguarded_masked_block = _variant(blocked_attention, "unguarded_masked_block",
    "Key blocks visited last-to-first with no guard for -inf - (-inf): a row whose first visited block is fully masked turns NaN.",
    bugs={"reverse-no-guard"})

low_internal_precision = _variant(blocked_attention, "low_internal_precision",
    "float32 inputs silently computed in float16 inside.",
    work_dtype=torch.float16)


half_accumulators_declared_float32 = declare_recipe(_variant(blocked_attention, "half_accumulators_declared_float32",
    "Declares FlashAttention-2's recipe (float32 accumulators) but accumulates in float16.",
    work_dtype=torch.float16), "flash-attention-2")


def prescales_query_in_place(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    """q multiplied by the scale in place, overwriting the caller's tensor."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    q.mul_(scale)
    return blocked_attention(q, k, v, is_causal=is_causal, scale=1.0, enable_gqa=enable_gqa)


def scale_magnitude_only(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    """The scale split as √|scale| over q and k (folded into both operands): a negative scale acts positive."""
    return blocked_attention(q, k, v, is_causal=is_causal, scale=None if scale is None else abs(scale),
                             enable_gqa=enable_gqa)


def kv_heads_grouped_without_gqa(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    """Fewer KV heads than query heads grouped as GQA even when enable_gqa=False (SDPA raises there)."""
    return blocked_attention(q, k, v, is_causal=is_causal, scale=scale,
                             enable_gqa=enable_gqa or k.shape[1] != q.shape[1])


def even_length_drops_last_block(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    """A path for Nk % 64 == 0 (no tail handling needed) whose loop bound skips the last 64-key block."""
    n = k.shape[-2]
    if n % 64 == 0 and n > 64:
        k, v = k[:, :, :n - 64], v[:, :, :n - 64]
    return blocked_attention(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)


def batch_stride_from_shape(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    """The batch stride computed from the shape as H·N·D; the other strides read from the tensor."""
    def wrong(t):
        return t.as_strided(t.shape, (t.shape[1] * t.shape[2] * t.shape[3], *t.stride()[1:]), t.storage_offset())
    return blocked_attention(wrong(q), wrong(k), wrong(v), is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)


def storage_offset_ignored(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    """Every input read from the start of its storage (the view's storage offset dropped)."""
    def wrong(t):
        return t.as_strided(t.shape, t.stride(), 0)
    return blocked_attention(wrong(q), wrong(k), wrong(v), is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)


def ignores_strides(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    """Addresses computed from the shape as if every input were contiguous, ignoring its strides."""
    def as_if_contiguous(t):
        return t.as_strided(t.shape, torch.empty(t.shape, device="meta").stride(), t.storage_offset())
    return blocked_attention(as_if_contiguous(q), as_if_contiguous(k), as_if_contiguous(v), is_causal=is_causal,
                             scale=scale, enable_gqa=enable_gqa)


wrong_output_dtype = _variant(blocked_attention, "wrong_output_dtype",
    "Returns the float32 accumulator's dtype instead of q's.",
    bugs={"float32-output"})


# --------------------------------------------------------------------------- backward mutants


class _ManualAttention(torch.autograd.Function):
    """Attention with a hand-written backward, as a kernel's backward pass computes it."""

    @staticmethod
    def forward(ctx, q, k, v, is_causal, scale, enable_gqa, bugs):
        dtype, work = q.dtype, _work_dtype(q.dtype)
        hq, hkv = q.shape[1], k.shape[1]
        kr, vr = _heads(q, k, v, enable_gqa)
        q32, k32, v32 = (t.to(work) for t in (q, kr, vr))
        scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
        s = (q32 * scale) @ k32.transpose(-2, -1)  # (B, H, Nq, Nk)
        if is_causal:
            s = s.masked_fill(~_visible(q.shape[-2], k.shape[-2], q.device, "top-left"), float("-inf"))
        p = torch.softmax(s, dim=-1)  # (B, H, Nq, Nk)
        if "half-lse" in bugs:
            # the bug: the row statistics kept in the input's precision; backward recomputes P from them
            lse = torch.logsumexp(s, dim=-1, keepdim=True).to(dtype).to(work)  # (B, H, Nq, 1)
            p_saved = torch.exp(s - lse)
        else:
            p_saved = p
        out = p @ v32  # (B, H, Nq, Dv)
        ctx.save_for_backward(q32, k32, v32, p_saved, out)
        ctx.meta = (dtype, scale, hq, hkv, bugs)
        return out.to(dtype)

    @staticmethod
    @torch.autograd.function.once_differentiable  # its backward is not differentiable: refuse double backward
    def backward(ctx, dout):
        q, k, v, p, out = ctx.saved_tensors
        dtype, scale, hq, hkv, bugs = ctx.meta
        if "ignores-scale-backward" in bugs:
            scale = 1.0 / math.sqrt(q.shape[-1])
        if "contiguous-q" in bugs:  # the bug: the saved q addressed as if contiguous
            q = q.as_strided(q.shape, torch.empty(q.shape, device="meta").stride(), q.storage_offset())
        if "contiguous-dout" in bugs:  # the bug: dO addressed as if contiguous
            dout = dout.as_strided(dout.shape, torch.empty(dout.shape, device="meta").stride(), dout.storage_offset())
        do = dout.to(q.dtype)  # (B, H, Nq, Dv)
        if "shuffled-dv" in bugs:  # dV accumulated over query blocks in a call-dependent order
            dv = torch.zeros(p.shape[:-2] + (p.shape[-1], do.shape[-1]), dtype=do.dtype, device=do.device)
            for i0 in torch.randperm(-(-p.shape[-2] // BLOCK)).tolist():
                rows = slice(i0 * BLOCK, (i0 + 1) * BLOCK)
                dv = dv + p[..., rows, :].transpose(-2, -1) @ do[..., rows, :]
        else:
            dv = p.transpose(-2, -1) @ do  # (B, H, Nk, Dv)
        dp = do @ v.transpose(-2, -1)  # (B, H, Nq, Nk)
        d = (do * out).sum(dim=-1, keepdim=True)  # D_i = rowsum(dO∘O) = rowsum(P∘dP)
        if "scratch-dout" in bugs:  # the bug: dO's own buffer reused as scratch for dO∘O
            dout.mul_(out.to(dout.dtype))
        ds = p * dp if "no-D" in bugs else p * (dp - d)  # (B, H, Nq, Nk)
        dq = ds @ k if "dq-unscaled" in bugs else scale * ds @ k  # (B, H, Nq, D)
        dk = scale * ds.transpose(-2, -1) @ q  # (B, H, Nk, D)
        if hq != hkv:
            b, g = q.shape[0], hq // hkv
            if "gqa-first-head" in bugs:
                dk, dv = dk[:, ::g], dv[:, ::g]  # the first head of each group, not the sum
            else:
                dk = dk.reshape(b, hkv, g, *dk.shape[2:]).sum(2)  # (B, Hkv, Nk, D)
                dv = dv.reshape(b, hkv, g, *dv.shape[2:]).sum(2)
        return dq.to(dtype), dk.to(dtype), dv.to(dtype), None, None, None, None


def manual_backward_attention(q, k, v, *, is_causal=False, scale=None, enable_gqa=False, bugs=frozenset()):
    """Correct attention whose backward is written by hand (dS = P∘(dP - D))."""
    if not q.dtype == k.dtype == v.dtype:  # SDPA's contract: one dtype (kernels.harness.contract)
        raise ValueError(f"q, k and v must have one dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    return _ManualAttention.apply(q, k, v, is_causal, scale, enable_gqa, frozenset(bugs))


backward_without_d_term = _variant(manual_backward_attention, "backward_without_d_term",
    "Backward with dS = P∘dP: the D = rowsum(dO∘O) term of the softmax backward dropped.",
    bugs={"no-D"})

backward_dq_unscaled = _variant(manual_backward_attention, "backward_dq_unscaled",
    "Backward forgets the softmax scale in dq = scale · dS K.",
    bugs={"dq-unscaled"})

backward_gqa_unsummed = _variant(manual_backward_attention, "backward_gqa_unsummed",
    "GQA backward takes dk, dv of the group's first query head instead of summing the group.",
    bugs={"gqa-first-head"})


# --------------------------------------------------------------------------- SDPA's whole signature


def _mask_bias(attn_mask, like: torch.Tensor, bugs, dtype: torch.dtype) -> torch.Tensor | None:
    """attn_mask as a term added to the scores (boolean True = attend: 0, False: -inf); ``dtype``
    is the inputs' (one bug uses it)."""
    if attn_mask is None or "ignore-mask" in bugs:
        return None
    if "one-row-mask-misread" in bugs and attn_mask.dim() >= 2 and attn_mask.shape[-2] == 1 < like.shape[-2]:
        # the bug: a one-row (key-padding) mask read with a row stride of Nk; rows past 0 read
        # memory that happens to say "attend"
        rows = attn_mask.expand(*attn_mask.shape[:-2], like.shape[-2], attn_mask.shape[-1]).clone()
        rows[..., 1:, :] = True if rows.dtype == torch.bool else 0.0
        attn_mask = rows
    if "mask-3d-per-batch" in bugs and attn_mask.dim() == 3:
        attn_mask = attn_mask[:, None]  # the bug: (X, Nq, Nk) read as (B, 1, Nq, Nk), not per head
    if attn_mask.dtype == torch.bool:
        if "bool-as-additive" in bugs:  # the bug: True/False read as the numbers 1/0
            return attn_mask.to(like.dtype)
        # the bug (as a mask made additive with the input dtype's most negative number): hidden keys
        # get finfo.min, only -65504 in float16, and rows hiding every key are set to 0 afterwards
        hide = torch.finfo(dtype).min if "bool-mask-dtype-min" in bugs else float("-inf")
        return torch.zeros(attn_mask.shape, dtype=like.dtype, device=like.device).masked_fill(~attn_mask, hide)
    bias = attn_mask.to(like.dtype)
    return bias.clamp(max=0.0) if "clamp-additive" in bugs else bias


def _uniforms(p: torch.Tensor, gen, bugs, kv_heads: int) -> torch.Tensor:
    """One uniform per weight of p (B, H, Nq, Nk), as the RNG offsets of a kernel map them."""
    b, h, n_q, n_k = p.shape
    draw = functools.partial(torch.rand, generator=gen, dtype=torch.float32, device=p.device)
    if "dropout-shared-heads" in bugs:
        return draw(1, 1, n_q, n_k).expand(p.shape)
    if "dropout-key-tile" in bugs:  # the bug: the offset from (row, col % 32): every 32-key tile repeats the first
        return draw(b, h, n_q, 32).repeat(1, 1, 1, -(-n_k // 32))[..., :n_k]
    if "dropout-query-tile" in bugs:  # the bug: the offset from (row % 16, col): every 16-query tile repeats
        return draw(b, h, 16, n_k).repeat(1, 1, -(-n_q // 16), 1)[:, :, :n_q]
    if "dropout-kv-head-offset" in bugs:
        # the bug: the (batch, head) offset is b·Hkv + h, so batch b + 1's head h draws batch b's head h + Hkv
        pool = draw(b * kv_heads + h, n_q, n_k)
        return pool[torch.arange(b)[:, None] * kv_heads + torch.arange(h)]  # (B, H, Nq, Nk)
    return draw(p.shape)


def _dropout_mask(p: torch.Tensor, dropout_p: float, bugs, kv_heads: int, dtype: torch.dtype) -> torch.Tensor:
    """Keep (1) or drop (0) per weight, drawn from torch's global generator, times the rescale.
    ``kv_heads`` and the input ``dtype`` are what some buggy kernels wrongly use."""
    gen = None
    if "dropout-own-rng" in bugs:  # the bug: a generator of its own, seeded from the clock
        gen = torch.Generator(device=p.device).manual_seed(time.perf_counter_ns())
    state = torch.get_rng_state() if "dropout-rng-restored" in bugs else None
    if "dropout-uint8" in bugs:  # the bug: keep if a random byte < floor((1-p)·255): keep prob 191/256 at p = 1/4
        keep = torch.randint(0, 256, p.shape, generator=gen, device=p.device) < math.floor((1 - dropout_p) * 255)
        return keep.to(p.dtype) / (1 - dropout_p)
    u = _uniforms(p, gen, bugs, kv_heads)
    if state is not None:  # the bug: the generator's offset not advanced past this call's draws
        torch.set_rng_state(state)
    if "dropout-p-as-keep" in bugs:  # the bug: p read as the keep probability
        return (u < dropout_p).to(p.dtype) / dropout_p
    keep = (u >= dropout_p).to(p.dtype)
    if "dropout-no-rescale" in bugs:
        return keep
    if "dropout-rescale-multiplied" in bugs:
        return keep * (1 - dropout_p)
    if "dropout-rescale-input-dtype" in bugs:  # the bug: 1/(1-p) rounded to the input's dtype (1.3359 in bfloat16)
        return keep * float(torch.tensor(1 / (1 - dropout_p), dtype=dtype))
    return keep / (1 - dropout_p) if dropout_p < 1 else keep  # p = 1 drops every weight: 0, not 0/0


class _FullAttention(torch.autograd.Function):
    """SDPA with attn_mask and dropout_p, float32 inside, and a hand-written backward.

    With dropout, O = W V for W = P∘M/(1-p); the backward uses the same M: dV = Wᵀ dO,
    dP = (dO Vᵀ)∘M/(1-p), dS = P∘(dP - rowsum(P∘dP)). A row with no visible key has P = 0 (torch's
    CPU SDPA gives output 0 there)."""

    @staticmethod
    def forward(ctx, q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa, bugs):
        dtype, work = q.dtype, _work_dtype(q.dtype)
        hq, hkv = q.shape[1], k.shape[1]
        kr, vr = _heads(q, k, v, enable_gqa)
        q32, k32, v32 = (t.to(work) for t in (q, kr, vr))
        scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
        s = (q32 * scale) @ k32.transpose(-2, -1)  # (B, H, Nq, Nk)
        bias = _mask_bias(attn_mask, s, bugs, dtype)
        plain_s = s
        if bias is not None:
            s = s + bias
        if is_causal and not ("mask-replaces-causal" in bugs and attn_mask is not None):
            hidden = ~_visible(q.shape[-2], k.shape[-2], q.device, "top-left")
            s, plain_s = s.masked_fill(hidden, float("-inf")), plain_s.masked_fill(hidden, float("-inf"))
        p = _softmax_rows(s, bugs)
        if "bool-mask-dtype-min" in bugs and attn_mask is not None and attn_mask.dtype == torch.bool:
            p = p.masked_fill(~attn_mask.any(dim=-1, keepdim=True), 0.0)  # rows hiding every key
        skip = "dropout-skipped-with-mask" in bugs and attn_mask is not None  # the bug: the masked path has no dropout
        skip |= "dropout-skipped-decode" in bugs and q.shape[-2] == 1  # the bug: the one-query path has none
        drop = _dropout_mask(p, dropout_p, bugs, hkv, dtype) if dropout_p > 0 and not skip else None
        if dropout_p == 0 and "rng-at-p0" in bugs:  # the bug: a seed drawn for every call, dropout or not
            torch.randint(2 ** 31, (1,))
        w = p if drop is None else p * drop
        out = w @ v32  # (B, H, Nq, Dv)
        p_backward = _softmax_rows(plain_s, bugs) if "grad-ignores-mask" in bugs else p
        if "grad-ignores-additive-values" in bugs and bias is not None:
            # the bug: the backward rebuilds the mask from where it is -inf, dropping its finite values
            hidden = torch.isneginf(bias).expand(s.shape)
            p_backward = _softmax_rows(torch.where(hidden, s, s - bias), bugs)
        ctx.save_for_backward(q32, k32, v32, p_backward, drop)
        mask_shape = None if attn_mask is None else (attn_mask.shape, attn_mask.dtype)
        ctx.meta = (dtype, scale, hq, hkv, dropout_p, bugs, mask_shape)
        return out.to(dtype)

    @staticmethod
    @torch.autograd.function.once_differentiable  # its backward is not differentiable: refuse double backward
    def backward(ctx, dout):
        q, k, v, p, drop = ctx.saved_tensors
        dtype, scale, hq, hkv, dropout_p, bugs, mask_shape = ctx.meta
        if drop is not None and "dropout-fresh-mask-backward" in bugs:
            drop = _dropout_mask(p, dropout_p, bugs, hkv, dtype)  # the bug: a new draw, not the forward's mask
        do = dout.to(q.dtype)  # (B, H, Nq, Dv)
        w = p if drop is None else p * drop
        dv = w.transpose(-2, -1) @ do  # (B, H, Nk, Dv)
        dp = do @ v.transpose(-2, -1)  # (B, H, Nq, Nk)
        if drop is not None:
            dp = dp * (drop != 0) if "dropout-dS-unscaled" in bugs else dp * drop  # the bug: 1/(1-p) left out of dP
        ds = p * (dp - (p * dp).sum(dim=-1, keepdim=True))  # (B, H, Nq, Nk)
        dq = scale * ds @ k  # (B, H, Nq, D)
        dk = scale * ds.transpose(-2, -1) @ q  # (B, H, Nk, D)
        if hq != hkv:
            b, g = q.shape[0], hq // hkv
            dk = dk.reshape(b, hkv, g, *dk.shape[2:]).sum(2)  # (B, Hkv, Nk, D)
            dv = dv.reshape(b, hkv, g, *dv.shape[2:]).sum(2)
        dmask = None  # an additive mask's gradient is dS, summed over the dims it was broadcast along
        if ctx.needs_input_grad[3] and "mask-no-grad" not in bugs:  # the bug: the mask treated as a constant
            dmask = ds.sum_to_size(mask_shape[0]).to(mask_shape[1])
        return dq.to(dtype), dk.to(dtype), dv.to(dtype), dmask, None, None, None, None, None


def _softmax_rows(s: torch.Tensor, bugs) -> torch.Tensor:
    if "nan-empty-rows" in bugs:  # the bug: 0/0 = NaN where every key is masked
        return torch.softmax(s, dim=-1)
    empty = torch.isneginf(s).all(dim=-1, keepdim=True)  # (B, H, Nq, 1)
    p = torch.softmax(s.masked_fill(empty, 0.0), dim=-1).masked_fill(empty, 0.0)
    if "unguarded-leading-block" in bugs:
        # the bug, as an online softmax over 64-key blocks meets it: a row whose first block is all
        # masked has m = -inf there, exp(-inf - (-inf)) = NaN, and the NaN stays in l and acc
        return p.masked_fill(torch.isneginf(s[..., :64]).all(dim=-1, keepdim=True), float("nan"))
    return p


def full_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False,
                   bugs=frozenset()):
    """Correct SDPA with its whole signature (attn_mask, dropout_p) and a hand-written backward."""
    if not q.dtype == k.dtype == v.dtype:  # SDPA's contract: one dtype (kernels.harness.contract)
        raise ValueError(f"q, k and v must have one dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"dropout_p must be in [0, 1], got {dropout_p}")
    return _FullAttention.apply(q, k, v, attn_mask, float(dropout_p), is_causal, scale, enable_gqa, frozenset(bugs))


def _full_variant(name: str, doc: str, *bugs: str):
    """A mutant of full_attention behind SDPA's whole signature."""
    def mutant(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa, bugs=frozenset(bugs))

    mutant.__name__ = mutant.__qualname__ = name
    mutant.__doc__ = doc
    return mutant


bool_mask_as_additive = _full_variant("bool_mask_as_additive",
    "A boolean attn_mask added as the numbers 1/0 instead of 0/-inf.", "bool-as-additive")
mask_replaces_causal = _full_variant("mask_replaces_causal",
    "With attn_mask given, is_causal=True is silently dropped (neither refused nor applied).", "mask-replaces-causal")
nan_in_empty_rows = _full_variant("nan_in_empty_rows",
    "A row whose keys are all masked gives 0/0 = NaN (torch's CPU SDPA gives 0).", "nan-empty-rows")
attn_mask_ignored = _full_variant("attn_mask_ignored",
    "attn_mask accepted and ignored.", "ignore-mask")
additive_mask_clamped = _full_variant("additive_mask_clamped",
    "An additive mask clamped at 0 (a kernel that assumes masks are ≤ 0).", "clamp-additive")
backward_ignores_mask = _full_variant("backward_ignores_mask",
    "The backward recomputes P without attn_mask.", "grad-ignores-mask")
dropout_without_rescale = _full_variant("dropout_without_rescale",
    "Dropout keeps weights with probability 1 - p but does not rescale by 1/(1 - p).", "dropout-no-rescale")
dropout_rescale_multiplied = _full_variant("dropout_rescale_multiplied",
    "Kept weights multiplied by (1 - p) instead of divided.", "dropout-rescale-multiplied")
dropout_p_as_keep_probability = _full_variant("dropout_p_as_keep_probability",
    "p read as the keep probability (kept with probability p, rescaled by 1/p).", "dropout-p-as-keep")
dropout_fresh_mask_in_backward = _full_variant("dropout_fresh_mask_in_backward",
    "The backward draws a new dropout mask instead of reusing the forward's.", "dropout-fresh-mask-backward")
dropout_own_generator = _full_variant("dropout_own_generator",
    "Dropout drawn from a generator of its own, seeded from the clock: torch.manual_seed does not reproduce it.",
    "dropout-own-rng")

dropout_backward_unscaled = _full_variant("dropout_backward_unscaled",
    "The backward masks dP with the forward's mask but leaves out its 1/(1 - p) (dq, dk wrong, dv right).",
    "dropout-dS-unscaled")
additive_mask_backward_drops_values = _full_variant("additive_mask_backward_drops_values",
    "The backward rebuilds an additive mask from where it is -inf, dropping its finite values.",
    "grad-ignores-additive-values")
key_padding_mask_misread = _full_variant("key_padding_mask_misread",
    "A one-row (key-padding) mask read with a row stride of Nk: rows past the first see every key.",
    "one-row-mask-misread")
dropout_skipped_with_mask = _full_variant("dropout_skipped_with_mask",
    "With attn_mask given the kernel takes a masked path that has no dropout.", "dropout-skipped-with-mask")
dropout_shared_across_heads = _full_variant("dropout_shared_across_heads",
    "One dropout mask of shape (Nq, Nk) drawn and broadcast over batch and heads.", "dropout-shared-heads")
dropout_rng_not_advanced = _full_variant("dropout_rng_not_advanced",
    "The generator's state is restored after the draw: consecutive calls repeat the mask.", "dropout-rng-restored")
dropout_uint8_threshold = _full_variant("dropout_uint8_threshold",
    "Keep if a random byte < floor((1 - p)·255): keep probability 191/256 ≈ 0.746 at p = 1/4 (0.5% low).",
    "dropout-uint8")
bool_mask_as_dtype_min = _full_variant("bool_mask_as_dtype_min",
    "A boolean mask made additive with finfo(input dtype).min: in float16 only -65504, so a hidden key "
    "whose score is 4e4 above the visible ones still wins.", "bool-mask-dtype-min")
rng_drawn_without_dropout = _full_variant("rng_drawn_without_dropout",
    "A dropout seed is drawn from torch's generator on every call, also at dropout_p = 0.", "rng-at-p0")
learned_bias_without_gradient = _full_variant("learned_bias_without_gradient",
    "An additive attn_mask that requires grad (a learned bias) is accepted but gets no gradient.", "mask-no-grad")
dropout_mask_repeats_every_32_keys = _full_variant("dropout_mask_repeats_every_32_keys",
    "The dropout RNG offset taken from (row, column mod 32): every 32-key tile reuses the first tile's mask.",
    "dropout-key-tile")
dropout_mask_repeats_every_16_queries = _full_variant("dropout_mask_repeats_every_16_queries",
    "The dropout RNG offset taken from (row mod 16, column): every 16-query tile reuses the first tile's mask.",
    "dropout-query-tile")
dropout_offset_from_kv_heads = _full_variant("dropout_offset_from_kv_heads",
    "The dropout RNG offset of (batch b, head h) is b·Hkv + h under GQA: batch b + 1 repeats a head of batch b.",
    "dropout-kv-head-offset")
dropout_rescale_in_input_dtype = _full_variant("dropout_rescale_in_input_dtype",
    "The dropout rescale 1/(1-p) rounded to the input's dtype (+0.2% in bfloat16 at p = 1/4, -0.02% in float16).",
    "dropout-rescale-input-dtype")

mask_3d_read_per_batch = _full_variant("mask_3d_read_per_batch",
    "A 3-D attn_mask (X, Nq, Nk) read as one mask per batch entry instead of per head.", "mask-3d-per-batch")
dropout_skipped_for_one_query = _full_variant("dropout_skipped_for_one_query",
    "The one-query (decode) path applies no dropout.", "dropout-skipped-decode")
masked_leading_block_nan = _full_variant("masked_leading_block_nan",
    "Online softmax with no guard for a fully masked first key block: NaN in rows that see later keys only.",
    "unguarded-leading-block")

def one_key_returns_view_of_v(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    """With one key every weight is 1 and O = V: a fast path returns v itself, broadcast over the
    queries (a view: writing into the output writes into the caller's v)."""
    if k.shape[-2] == 1 and q.shape[1] == v.shape[1]:
        return v.expand(*q.shape[:-1], v.shape[-1])  # (B, H, Nq, Dv), sharing v's memory
    return blocked_attention(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)


def last_stride_assumed_one(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    """Every input read as if its last (head-dim) stride were 1; the other strides are honoured."""
    def fix(t):
        return t.as_strided(t.shape, t.stride()[:-1] + (1,), t.storage_offset())
    return blocked_attention(fix(q), fix(k), fix(v), is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)


SPLIT = 1024  # keys per split of the split-KV decode mutant


def split_kv_decode_without_rescale(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    """Split-KV decoding (one query; keys in splits of SPLIT, each split's softmax output merged)
    that weights each split by its own sum l_c, forgetting that each l_c is taken under its own
    max m_c: the right weight is l_c·exp(m_c - m). Other shapes take the correct blocked loop."""
    if q.shape[-2] != 1 or is_causal or k.shape[-2] <= SPLIT:
        return blocked_attention(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)
    dtype = q.dtype
    k, v = _heads(q, k, v, enable_gqa)
    q, k, v = (t.to(_work_dtype(dtype)) for t in (q, k, v))
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    outs, sums = [], []
    for j0 in range(0, k.shape[-2], SPLIT):
        s = (q * scale) @ k[:, :, j0:j0 + SPLIT].transpose(-2, -1)  # (B, H, 1, n)
        e = torch.exp(s - s.amax(dim=-1, keepdim=True))
        sums.append(e.sum(dim=-1, keepdim=True))  # (B, H, 1, 1)
        outs.append(e @ v[:, :, j0:j0 + SPLIT] / sums[-1])  # (B, H, 1, D)
    out = sum(l * o for l, o in zip(sums, outs)) / sum(sums)
    return out.to(dtype)


head_dim_truncated_at_128 = _variant(blocked_attention, "head_dim_truncated_at_128",
    "Scores from the first 128 dims of q and k only (a kernel built for head dims up to 128).",
    bugs={"head-dim-128"})
backward_assumes_contiguous_q = _variant(manual_backward_attention, "backward_assumes_contiguous_q",
    "The backward addresses the saved q as if it were contiguous.", bugs={"contiguous-q"})

scale_or_default = _variant(blocked_attention, "scale_or_default",
    "`scale or 1/√D`: an explicit scale=0.0 is read as None.", bugs={"scale-or-default"})
nondeterministic_block_order = _variant(blocked_attention, "nondeterministic_block_order",
    "Key blocks reduced in an order that changes from call to call (split-K with atomic adds).",
    bugs={"shuffled-blocks"})
low_precision_running_state = _variant(blocked_attention, "low_precision_running_state",
    "Running max, sum and accumulator kept in the input's half precision.", work_dtype="input")
truncating_bfloat16_store = _variant(blocked_attention, "truncating_bfloat16_store",
    "The float32 result stored to bfloat16 by truncation (toward zero) instead of round-to-nearest.",
    bugs={"truncating-store"})
backward_writes_into_dout = _variant(manual_backward_attention, "backward_writes_into_dout",
    "The backward reuses dO's buffer as scratch for dO∘O (the caller's gradient is overwritten).",
    bugs={"scratch-dout"})
half_precision_lse = _variant(manual_backward_attention, "half_precision_lse",
    "The backward recomputes P from a log-sum-exp saved in the input's half precision.", bugs={"half-lse"})
backward_ignores_scale = _variant(manual_backward_attention, "backward_ignores_scale",
    "The backward uses 1/√D in dq and dk whatever scale the forward was given.", bugs={"ignores-scale-backward"})
backward_assumes_contiguous_dout = _variant(manual_backward_attention, "backward_assumes_contiguous_dout",
    "The backward addresses dO as if it were contiguous.", bugs={"contiguous-dout"})
nondeterministic_backward = _variant(manual_backward_attention, "nondeterministic_backward",
    "dV accumulated over query blocks in a call-dependent order (atomic adds).", bugs={"shuffled-dv"})


# --------------------------------------------------------------------------- the register


ALL_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@dataclass(frozen=True)
class Mutant:
    fn: Callable
    bug_class: str
    caught_by: str  # the invariant expected to name it, in every one of ``dtypes``
    dtypes: tuple[torch.dtype, ...] = ALL_DTYPES  # the dtypes the bug shows in
    backward: bool = False  # the bug lives in the backward pass

    @property
    def name(self) -> str:
        return self.fn.__name__


MUTANTS: tuple[Mutant, ...] = (
    Mutant(wrong_default_scale, "wrong default scale", "default-scale"),
    Mutant(ignored_explicit_scale, "ignored explicit scale", "explicit-scale"),
    Mutant(causal_leaks_next_key, "causal off by one (sees the next key)", "causality"),
    Mutant(causal_masks_diagonal, "causal off by one (masks the diagonal)", "causal-alignment"),
    Mutant(causal_bottom_right, "causal aligned bottom-right", "causal-alignment"),
    Mutant(mask_after_softmax, "mask applied after the softmax", "rows-sum-to-one"),
    Mutant(softmax_over_queries, "softmax over the wrong axis", "rows-sum-to-one"),
    Mutant(max_over_queries, "stabilising max over the wrong axis", "key-shift-invariance"),
    Mutant(normalised_scores_without_exp, "exponential missing from the softmax", "convex-hull"),
    Mutant(online_without_accumulator_rescale, "online softmax without accumulator rescale",
           "online-softmax-merge"),
    Mutant(online_without_denominator_rescale, "online softmax without denominator rescale", "rows-sum-to-one"),
    Mutant(dropped_tail_block, "dropped tail key block", "key-permutation-invariance"),
    Mutant(dropped_query_tail, "unwritten tail query block", "query-permutation-equivariance"),
    Mutant(gqa_modulo_heads, "wrong GQA head mapping (h % Hkv)", "gqa-equals-repeated-mha"),
    Mutant(no_max_subtraction, "no max subtraction (overflow at large logits)", "extreme-logits"),
    Mutant(global_max_subtraction, "global instead of per-row max", "mixed-magnitude-rows"),
    Mutant(finite_mask_sentinel, "finite mask sentinel (-1e4)", "hugely-negative-rows"),
    Mutant(unguarded_masked_block, "no guard for -inf - (-inf) on a fully masked block", "causal-alignment"),
    # float16 inside is no bug for float16 inputs, and for bfloat16 ones it is a different bug
    # (range, not precision: named by the robustness cases instead)
    Mutant(low_internal_precision, "silent low internal precision (float16 inside)", "reference-agreement",
           dtypes=(torch.float32,)),
    # float16 inputs: the empirical rule lets this pass (a float16 reference errs as much); only the
    # proved bound for the declared float32 accumulators refuses it
    Mutant(half_accumulators_declared_float32, "computes below its declared precision (float16 accumulators)",
           "rounding-attention-forward", dtypes=(torch.float16,)),
    Mutant(prescales_query_in_place, "writes into its input (in-place pre-scale of q)", "inputs-untouched"),
    Mutant(ignores_strides, "ignores the inputs' strides", "strided-inputs"),
    Mutant(wrong_output_dtype, "wrong output dtype", "output-dtype-shape", dtypes=(torch.float16, torch.bfloat16)),
    Mutant(backward_without_d_term, "softmax backward without the D term", "backward-key-gradient-sum",
           backward=True),
    Mutant(backward_dq_unscaled, "backward dq missing the scale", "softmax-jacobian", backward=True),
    Mutant(backward_gqa_unsummed, "GQA gradients not summed over the group", "backward-agreement",
           backward=True),
    # issue 12: realistic tiles, the training path, SDPA's whole contract, rounding bias
    Mutant(scale_or_default, "scale=0.0 read as None", "zero-scale"),
    Mutant(nondeterministic_block_order, "nondeterministic reduction order", "determinism"),
    Mutant(low_precision_running_state, "running state in half precision", "error-growth",
           dtypes=(torch.float16, torch.bfloat16)),
    # round-to-nearest in float16 stores is what torch does; the bug is a truncating bfloat16 store
    Mutant(truncating_bfloat16_store, "truncating (biased) bfloat16 store", "rounding-bias", dtypes=(torch.bfloat16,)),
    Mutant(backward_writes_into_dout, "backward writes into dO", "inputs-untouched-backward", backward=True),
    Mutant(half_precision_lse, "log-sum-exp saved in half precision", "backward-high-variance",
           dtypes=(torch.float16, torch.bfloat16), backward=True),
    Mutant(backward_ignores_scale, "backward ignores the explicit scale", "backward-scale-strided",
           backward=True),
    Mutant(backward_assumes_contiguous_dout, "backward assumes a contiguous dO", "backward-scale-strided",
           backward=True),
    Mutant(nondeterministic_backward, "nondeterministic backward accumulation", "backward-determinism",
           backward=True),
    Mutant(bool_mask_as_additive, "boolean mask read as additive 0/1", "attn-mask"),
    Mutant(mask_replaces_causal, "attn_mask silently drops is_causal", "attn-mask-with-causal"),
    Mutant(nan_in_empty_rows, "NaN in rows with no visible key", "attn-mask-empty-rows"),
    Mutant(attn_mask_ignored, "attn_mask ignored", "attn-mask-causal-equivalence"),
    Mutant(additive_mask_clamped, "additive mask clamped at 0", "attn-mask-row-shift"),
    Mutant(backward_ignores_mask, "backward ignores attn_mask", "attn-mask-gradients", backward=True),
    Mutant(dropout_without_rescale, "dropout without the 1/(1-p) rescale", "dropout-expectation"),
    Mutant(dropout_rescale_multiplied, "dropout rescale multiplied by (1-p)", "dropout-mask-law"),
    Mutant(dropout_p_as_keep_probability, "dropout p read as the keep probability", "dropout-variance"),
    Mutant(dropout_fresh_mask_in_backward, "backward with a different dropout mask", "dropout-forward-backward",
           backward=True),
    Mutant(dropout_own_generator, "dropout RNG outside torch's generator", "dropout-same-seed"),
    # the red team's escapes (issue 12, second round), one bug class each
    Mutant(dropout_backward_unscaled, "dropout backward without 1/(1-p) in dP", "dropout-forward-backward",
           backward=True),
    Mutant(additive_mask_backward_drops_values, "backward drops an additive mask's finite values",
           "attn-mask-gradients", backward=True),
    Mutant(key_padding_mask_misread, "one-row (key-padding) mask misread", "attn-mask"),
    Mutant(dropout_skipped_with_mask, "dropout skipped when attn_mask is given", "dropout-with-attn-mask"),
    Mutant(dropout_shared_across_heads, "dropout mask shared across heads and batch", "dropout-independence"),
    Mutant(dropout_rng_not_advanced, "dropout RNG state not advanced", "dropout-rng-advances"),
    Mutant(dropout_uint8_threshold, "dropout keep probability biased 0.5% (uint8 threshold)",
           "dropout-kept-fraction"),
    Mutant(split_kv_decode_without_rescale, "split-KV decode merge without max rescale", "reference-agreement"),
    Mutant(head_dim_truncated_at_128, "head dim truncated at 128", "reference-agreement"),
    Mutant(backward_assumes_contiguous_q, "backward assumes a contiguous q", "backward-scale-strided",
           backward=True),
    # the third red team's escapes (issue 12), one bug class each
    Mutant(scale_magnitude_only, "negative scale made positive (√|scale| on q and k)", "explicit-scale"),
    Mutant(kv_heads_grouped_without_gqa, "Hq ≠ Hkv grouped without enable_gqa", "mismatched-heads-refused"),
    Mutant(even_length_drops_last_block, "last key block skipped when Nk % 64 == 0", "reference-agreement"),
    Mutant(batch_stride_from_shape, "batch stride taken from the shape", "strided-inputs"),
    Mutant(storage_offset_ignored, "view's storage offset ignored", "strided-inputs"),
    Mutant(mask_3d_read_per_batch, "3-D attn_mask read per batch entry", "attn-mask"),
    Mutant(masked_leading_block_nan, "NaN when a row's first key block is fully masked", "attn-mask"),
    Mutant(dropout_skipped_for_one_query, "no dropout on the one-query path", "dropout-mask-law"),
    # finfo(float32/bfloat16).min is -3.4e38: as good as -inf there
    Mutant(bool_mask_as_dtype_min, "boolean mask as finfo(dtype).min (finite in float16)", "attn-mask",
           dtypes=(torch.float16,)),
    # the fourth red team's escapes, as bug classes
    Mutant(one_key_returns_view_of_v, "output is a view of v (one-key fast path)", "output-dtype-shape"),
    Mutant(last_stride_assumed_one, "head-dim stride assumed to be 1", "strided-inputs"),
    Mutant(rng_drawn_without_dropout, "RNG drawn at dropout_p = 0", "dropout-rng-advances"),
    Mutant(learned_bias_without_gradient, "learned additive mask gets no gradient", "attn-mask-bias-gradient",
           backward=True),
    # the third red team's dropout escapes, as bug classes: masks correlated across tiles or slices,
    # and a rescale biased below the 2× rule
    Mutant(dropout_mask_repeats_every_32_keys, "dropout mask repeats across key tiles", "dropout-independence"),
    Mutant(dropout_mask_repeats_every_16_queries, "dropout mask repeats across query tiles", "dropout-independence"),
    Mutant(dropout_offset_from_kv_heads, "dropout offset from Hkv: batches share masks under GQA",
           "dropout-independence"),
    # exact in float32 (1/(1-p) = 4/3 rounds the same there as the correct kernel's)
    Mutant(dropout_rescale_in_input_dtype, "dropout rescale rounded to the input dtype", "dropout-mask-law",
           dtypes=(torch.float16, torch.bfloat16)),
)


# --------------------------------------------------------------------------- the contract's edges and
# state across calls (kernels.harness.contract): each escapes the harness before contract.py and is
# named by one of its invariants.


def empty_keys_give_nan(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """With no keys at all, acc / l = 0 / 0: NaN where SDPA gives 0."""
    if k.shape[-2] == 0:
        return torch.full((*q.shape[:-1], v.shape[-1]), float("nan"), dtype=q.dtype, device=q.device)
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def mixed_dtypes_cast_silently(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                               enable_gqa=False):
    """k and v of another dtype cast to q's instead of refused."""
    return full_attention(q, k.to(q.dtype), v.to(q.dtype), attn_mask, dropout_p, is_causal, scale, enable_gqa)


def dropout_p_clamped_below_one(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                enable_gqa=False):
    """p clamped to 1 - 1e-6 'to avoid dividing by zero': at p = 1 some weights survive, scaled 10⁶."""
    return full_attention(q, k, v, attn_mask, min(dropout_p, 1 - 1e-6), is_causal, scale, enable_gqa)


def nan_inputs_zeroed(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """NaN in the inputs replaced by 0 (a 'sanitising' load): NaN hidden instead of propagated."""
    q, k, v = (torch.nan_to_num(t, nan=0.0) for t in (q, k, v))
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def frozen_kv_gives_no_dq(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """An inference path taken when k and v need no gradient, detaching q too: frozen K/V, no dq."""
    if not (k.requires_grad or v.requires_grad):
        q = q.detach()
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


class _TwiceDifferentiated(_ManualAttention):
    """The hand-written backward without once_differentiable: differentiating it again ignores that the
    saved P depends on q and k (saved tensors are constants to autograd)."""
    backward = staticmethod(_ManualAttention.backward.__wrapped__)


def double_backward_through_saved_p(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    """Double backward silently wrong: the backward is differentiated as if P were a constant."""
    return _TwiceDifferentiated.apply(q, k, v, is_causal, scale, enable_gqa, frozenset())


class _OutputByReference(torch.autograd.Function):
    """The output kept on ctx by reference (not save_for_backward), D = rowsum(dO∘O) read from it."""

    @staticmethod
    def forward(ctx, q, k, v, is_causal, scale, enable_gqa):
        result = full_attention(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)
        ctx.save_for_backward(q, k, v)
        ctx.result, ctx.meta = result, (is_causal, scale, enable_gqa)
        return result

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dout):
        q, k, v = ctx.saved_tensors
        is_causal, scale, enable_gqa = ctx.meta
        hq = q.shape[1]
        q32, k32, v32 = q.float(), k.float(), v.float()
        kr, vr = (k32.repeat_interleave(hq // k.shape[1], 1), v32.repeat_interleave(hq // k.shape[1], 1)) \
            if hq != k.shape[1] else (k32, v32)
        scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
        s = (q32 * scale) @ kr.transpose(-2, -1)  # (B, H, Nq, Nk)
        if is_causal:
            s = s.masked_fill(~_visible(q.shape[-2], k.shape[-2], q.device, "top-left"), float("-inf"))
        p = torch.softmax(s, dim=-1)
        do = dout.float()
        dp = do @ vr.transpose(-2, -1)  # (B, H, Nq, Nk)
        d = (do * ctx.result.float()).sum(-1, keepdim=True)  # the bug: O read after the caller changed it
        ds = p * (dp - d)
        dq, dk, dv = scale * ds @ kr, scale * ds.transpose(-2, -1) @ q32, p.transpose(-2, -1) @ do
        if hq != k.shape[1]:
            g = hq // k.shape[1]
            dk = dk.reshape(k.shape[0], k.shape[1], g, *dk.shape[2:]).sum(2)
            dv = dv.reshape(k.shape[0], k.shape[1], g, *dv.shape[2:]).sum(2)
        return dq.to(q.dtype), dk.to(q.dtype), dv.to(q.dtype), None, None, None


def output_kept_by_reference(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    """The output modified in place before backward goes unnoticed: the backward reads it untracked."""
    return _OutputByReference.apply(q, k, v, is_causal, scale, enable_gqa)


class _DoutStrideOrDefault(torch.autograd.Function):
    """Attention whose backward reads dO through `stride or contiguous stride`: 0 is falsy, so an
    expanded dO (every stride 0) is read as a dense tensor from its one-element buffer (the rest 0)."""

    @staticmethod
    def forward(ctx, q, k, v, is_causal, scale, enable_gqa):
        ctx.save_for_backward(q, k, v)
        ctx.meta = (is_causal, scale, enable_gqa)
        with torch.no_grad():
            return full_attention(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dout):
        q, k, v = ctx.saved_tensors
        if 0 in dout.stride():
            flat = dout.as_strided((dout.untyped_storage().nbytes() // dout.element_size(),), (1,), 0)
            dense = torch.zeros(dout.numel(), dtype=dout.dtype, device=dout.device)
            dense[:flat.numel()] = flat[:dout.numel()]
            dout = dense.view(dout.shape)  # the bug: strides of 0 replaced by the contiguous ones
        is_causal, scale, enable_gqa = ctx.meta
        with torch.enable_grad():
            leaves = [t.detach().requires_grad_() for t in (q, k, v)]
            out = full_attention(*leaves, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)
            grads = torch.autograd.grad(out, leaves, dout)
        return (*grads, None, None, None)


def dout_stride_zero_read_dense(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    """out.sum().backward() gives wrong gradients: dO's zero strides read as unset."""
    return _DoutStrideOrDefault.apply(q, k, v, is_causal, scale, enable_gqa)


class _BackwardMisreadsKeyPadding(torch.autograd.Function):
    """The forward right; the backward re-reads a one-row (key-padding) mask with the strides of a full
    one, so rows past 0 see every key in the backward only."""

    @staticmethod
    def forward(ctx, q, k, v, attn_mask, is_causal, scale, enable_gqa):
        ctx.save_for_backward(q, k, v)
        ctx.meta = (attn_mask, is_causal, scale, enable_gqa)
        with torch.no_grad():
            return full_attention(q, k, v, attn_mask, 0.0, is_causal, scale, enable_gqa)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dout):
        q, k, v = ctx.saved_tensors
        attn_mask, is_causal, scale, enable_gqa = ctx.meta
        with torch.enable_grad():
            leaves = [t.detach().requires_grad_() for t in (q, k, v)]
            out = full_attention(*leaves, attn_mask, 0.0, is_causal, scale, enable_gqa,
                                 bugs=frozenset({"one-row-mask-misread"}))
            grads = torch.autograd.grad(out, leaves, dout)
        return (*grads, None, None, None, None)


def key_padding_misread_in_backward(q, k, v, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
    """A broadcast (key-padding) mask read wrongly in the backward only."""
    return _BackwardMisreadsKeyPadding.apply(q, k, v, attn_mask, is_causal, scale, enable_gqa)


def additive_mask_sentinel_in_place(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                    enable_gqa=False):
    """The caller's additive mask converted in place (-inf to a finite -1e4 sentinel)."""
    if attn_mask is not None and attn_mask.is_floating_point():
        attn_mask.clamp_(min=-1e4)
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


_TRANSPOSED_K: dict = {}


def k_cached_by_data_ptr(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """Kᵀ and V cached by data_ptr (a 'prepacked KV' fast path): stale once the buffers change in place."""
    key = (k.data_ptr(), v.data_ptr(), tuple(k.shape), tuple(v.shape), k.dtype)
    if key not in _TRANSPOSED_K:
        _TRANSPOSED_K.clear()
        _TRANSPOSED_K[key] = (k.detach().clone(), v.detach().clone())
    k_cached, v_cached = _TRANSPOSED_K[key]
    return full_attention(q, k_cached, v_cached, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def flush_to_zero_left_on(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """Flush-to-zero switched on for speed and left on: every later subnormal in the process is 0."""
    torch.set_flush_denormal(True)
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def _plain_dropout_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa, keep):
    """SDPA in float32 by autograd, with the keep mask from ``keep(shape, p)``."""
    from kernels.harness import reference as ref

    p = ref.probabilities(q.float(), k.float(), is_causal=is_causal, scale=scale, enable_gqa=enable_gqa,
                          attn_mask=attn_mask)  # (B, H, Nq, Nk)
    if dropout_p > 0:
        p = p * keep(p.shape, dropout_p).to(p.dtype) / (1 - dropout_p) if dropout_p < 1 else p * 0
    vr = ref.repeat_kv(v.float(), q.shape[1]) if enable_gqa else v.float()
    return (p @ vr).to(q.dtype)


def dropout_offset_advanced_by_half(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                    enable_gqa=False):
    """The generator's offset advanced by half the draws used: each call's mask is the previous one
    shifted by half its length (Philox offset increment too small)."""
    def keep(shape, p):
        start = torch.get_rng_state()
        u = torch.rand(shape)
        torch.set_rng_state(start)
        torch.rand(math.prod(shape) // 2)  # the bug: advance by half
        return u >= p
    return _plain_dropout_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa, keep)


def dropout_uint8_threshold_256(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                enable_gqa=False):
    """Keep iff a random byte < floor((1-p)·256): exact at p = 0.25 and 0.5, 0.17% low at p = 0.1."""
    def keep(shape, p):
        return torch.randint(0, 256, shape) < math.floor((1 - p) * 256)
    return _plain_dropout_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa, keep)


def dropout_fresh_mask_with_attn_mask(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                      enable_gqa=False):
    """The masked path's backward regenerates the dropout mask instead of reusing the forward's."""
    bugs = {"dropout-fresh-mask-backward"} if attn_mask is not None else set()
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa, bugs=frozenset(bugs))


MUTANTS = MUTANTS + (
    Mutant(empty_keys_give_nan, "NaN for Nk = 0 (0/0) where SDPA gives 0", "empty-dims", backward=True),
    Mutant(mixed_dtypes_cast_silently, "q, k, v of mixed dtypes cast instead of refused", "refused-inputs"),
    Mutant(dropout_p_clamped_below_one, "dropout_p = 1 clamped below 1 (weights survive)", "dropout-p-one"),
    Mutant(nan_inputs_zeroed, "NaN inputs zeroed (NaN hidden)", "nan-propagation"),
    Mutant(frozen_kv_gives_no_dq, "frozen K/V: no dq", "gradient-subsets", backward=True),
    Mutant(double_backward_through_saved_p, "double backward silently wrong (P taken as constant)",
           "double-backward", dtypes=(torch.float32,), backward=True),  # half: saved float32 copies, torch refuses
    Mutant(output_kept_by_reference, "output modified in place before backward read untracked",
           "output-inplace-before-backward", backward=True),
    Mutant(dout_stride_zero_read_dense, "dO of stride 0 read as dense", "stride-zero-dout", backward=True),
    Mutant(key_padding_misread_in_backward, "key-padding mask misread in the backward only", "mask-forms-backward",
           backward=True),
    Mutant(additive_mask_sentinel_in_place, "caller's attn_mask written into", "attn-mask-untouched", backward=True),
    Mutant(k_cached_by_data_ptr, "K/V cached by data_ptr (stale after in-place update)",
           "buffers-mutated-between-calls"),
    Mutant(flush_to_zero_left_on, "flush-to-zero switched on and left on", "global-state-unchanged", backward=True),
    Mutant(dropout_offset_advanced_by_half, "dropout offset advanced by half: shifted copies across calls",
           "dropout-cross-call-correlation"),
    Mutant(dropout_uint8_threshold_256, "uint8 keep threshold floor((1-p)·256): biased where not whole",
           "dropout-keep-grid"),
    Mutant(dropout_fresh_mask_with_attn_mask, "backward regenerates the dropout mask when attn_mask is given",
           "dropout-forward-backward-masked", backward=True),
)


# the generator's catches: bugs in regions no fixed case reaches (head dims not a multiple of 8, dropout
# p above 1/2, a batched path with such head dims)


def _tail_dropped(x: torch.Tensor) -> torch.Tensor:
    """x with its last x.shape[-1] % 8 entries zeroed, as a loop of 8-wide vector loads without a tail."""
    d = x.shape[-1]
    keep = (torch.arange(d, device=x.device) < d - d % 8).to(x.dtype)
    return x * keep


def head_dim_tail_dropped(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """Head dims not a multiple of 8 lose their last D % 8 (and Dv % 8) entries (no tail loop)."""
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1]) if q.shape[-1] else 1.0
    out = full_attention(_tail_dropped(q), _tail_dropped(k), v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    return _tail_dropped(out)


class _BackwardTailDropped(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, attn_mask, is_causal, scale, enable_gqa):
        ctx.save_for_backward(q, k, v)
        ctx.meta = (attn_mask, is_causal, scale, enable_gqa)
        with torch.no_grad():
            return full_attention(q, k, v, attn_mask, 0.0, is_causal, scale, enable_gqa)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dout):
        q, k, v = ctx.saved_tensors
        attn_mask, is_causal, scale, enable_gqa = ctx.meta
        with torch.enable_grad():
            leaves = [t.detach().requires_grad_() for t in (q, k, v)]
            s = (1.0 / math.sqrt(q.shape[-1]) if q.shape[-1] else 1.0) if scale is None else scale
            out = full_attention(*(_tail_dropped(t) for t in leaves), attn_mask, 0.0, is_causal, s, enable_gqa)
            grads = torch.autograd.grad(out, leaves, dout)
        return (*grads, None, None, None, None)


def backward_head_dim_tail_dropped(q, k, v, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
    """The backward alone drops the last D % 8 and Dv % 8 entries of a head (forward right)."""
    return _BackwardTailDropped.apply(q, k, v, attn_mask, is_causal, scale, enable_gqa)


def dropout_high_p_rescaled_by_p(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """For 1/2 < p < 1 keep and drop are swapped to draw fewer randoms, the rescale left at 1/p."""
    def keep(shape, p):
        return torch.rand(shape) >= p
    if 0.5 < dropout_p < 1:
        out = _plain_dropout_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa, keep)
        return (out.float() * ((1 - dropout_p) / dropout_p)).to(q.dtype)  # the bug: 1/p, not 1/(1-p)
    return _plain_dropout_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa, keep)


def batched_path_drops_head_dim_tail(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                     enable_gqa=False):
    """The batched path (B ≥ 2) has no tail loop over the head dim; one sequence alone is right."""
    if q.shape[0] >= 2:
        return head_dim_tail_dropped(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(head_dim_tail_dropped, "head dim tail (D % 8) dropped", "generated-agreement"),
    Mutant(backward_head_dim_tail_dropped, "head dim tail dropped in the backward only", "generated-gradients",
           backward=True),
    Mutant(dropout_high_p_rescaled_by_p, "dropout rescale 1/p for p > 1/2", "generated-dropout"),
    Mutant(batched_path_drops_head_dim_tail, "batched path drops the head dim tail", "generated-metamorphic"),
)
