"""Deliberately wrong attention implementations, one bug class each, for testing the harness.

Each mutant is SDPA-compatible (``fn(q, k, v, *, is_causal=False, scale=None, enable_gqa=False)``,
or SDPA's whole signature) and differs from a correct implementation of
``kernels.harness.references`` by one bug of a kind real FlashAttention-style kernels have
shipped: a subclass overriding the one step the bug is in (or a reference given one wrong
parameter, or a reference called on inputs read wrongly). ``MUTANTS`` records, for each, the bug
class, the invariant of ``kernels.verify_attention`` expected to name it, and the dtypes in which
the bug shows.
"""
from __future__ import annotations

import functools
import math
import os
import time
import warnings
import weakref
from dataclasses import dataclass
from typing import Callable

import torch

from kernels.harness.references import (  # noqa: F401  (SPLIT, manual_backward_attention: re-exported)
    BLOCK, SPLIT, BlockedAttention, FullAttention, ManualBackwardAttention, PlainAttention, SplitKVAttention,
    as_if_contiguous, autocast_as_sdpa, blocked_attention, full_attention, manual_backward_attention, masked)
from kernels.harness import reference as ref
from kernels.harness.rounding_bound import declare_recipe


def _mutant(impl, name: str, doc: str):
    """``impl`` (a reference with one step wrong) behind SDPA's signature without attn_mask and dropout_p."""
    def mutant(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
        return impl(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)

    mutant.__name__ = mutant.__qualname__ = name
    mutant.__doc__ = doc
    return mutant


def _full_mutant(impl, name: str, doc: str):
    """``impl`` (a FullAttention with one step wrong) behind SDPA's whole signature."""
    def mutant(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        return impl(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)

    mutant.__name__ = mutant.__qualname__ = name
    mutant.__doc__ = doc
    return mutant


# --------------------------------------------------------------------------- the blocked forward loop


class _WrongDefaultScale(BlockedAttention):
    def resolved_scale(self, scale, head_dim):
        return 1.0 / head_dim if scale is None else scale  # the bug: 1/D


class _IgnoredScale(BlockedAttention):
    def resolved_scale(self, scale, head_dim):
        return 1.0 / math.sqrt(head_dim)  # the bug: the argument never read


class _ScaleOrDefault(BlockedAttention):
    def resolved_scale(self, scale, head_dim):
        return scale or 1.0 / math.sqrt(head_dim)  # the bug: 0.0 is falsy


def _sees(n_q, n_k, device, offset: int) -> torch.Tensor:
    """Query i sees key j iff j <= i + offset (SDPA's causal mask: offset 0)."""
    i = torch.arange(n_q, device=device)[:, None]  # (Nq, 1)
    j = torch.arange(n_k, device=device)[None, :]  # (1, Nk)
    return j <= i + offset  # (Nq, Nk)


class _CausalLeaksNextKey(BlockedAttention):
    def visible(self, n_q, n_k, device):
        return _sees(n_q, n_k, device, 1)  # the bug: j <= i + 1


class _CausalMasksDiagonal(BlockedAttention):
    def visible(self, n_q, n_k, device):
        return _sees(n_q, n_k, device, -1)  # the bug: j < i


class _KeyPositionsInFloat16(BlockedAttention):
    def visible(self, n_q, n_k, device):
        i = torch.arange(n_q, device=device)[:, None]  # (Nq, 1)
        j = torch.arange(n_k, device=device).to(torch.float16)[None, :]  # (1, Nk); the bug: 2049 -> 2048, 2051 -> 2052
        return j <= i  # (Nq, Nk)


class _CausalBottomRight(BlockedAttention):
    def visible(self, n_q, n_k, device):
        return _sees(n_q, n_k, device, n_k - n_q)  # the bug: aligned to the last key, not the first


class _GqaModulo(BlockedAttention):
    def head_index(self, hq, hkv, device):
        return torch.arange(hq, device=device) % hkv  # the bug: interleaved, not grouped


class _NoAccumulatorRescale(BlockedAttention):
    def rescaled_accumulator(self, alpha, acc):
        return acc  # the bug: acc kept at the old max's scale


class _BlockValuesInFloat16(BlockedAttention):
    def block_values(self, p, vb, dtype):
        if dtype != torch.float16:
            return p @ vb
        return (p.to(dtype) @ vb.to(dtype)).to(p.dtype)  # the bug: a block's Σ p·v (p up to 1) rounded to float16


class _NoSumRescale(BlockedAttention):
    def rescaled_sum(self, alpha, l):
        return l  # the bug: l kept at the old max's scale


class _DroppedTailBlock(BlockedAttention):
    def block_starts(self, n_k):
        return list(range(0, n_k - n_k % self.block, self.block))  # the bug: Nk // BLOCK blocks, no ceiling


class _DroppedQueryTail(BlockedAttention):
    def normalised(self, acc, l):
        out = acc / l
        n_q = out.shape[-2]
        out[:, :, n_q - n_q % self.block:] = 0.0  # the bug: the last, partial query block never written
        return out


class _NoMaxSubtraction(BlockedAttention):
    def running_max(self, m, s):
        return torch.zeros_like(m)  # the bug: exp(s) of the raw scores


class _GlobalMax(BlockedAttention):
    def running_max(self, m, s):
        return torch.maximum(m, s.amax())  # the bug: one max over every row


class _UnguardedMaskedBlock(BlockedAttention):
    """Blocks visited last-to-first (so a causal row's first visited block can be fully masked),
    with no guard for -inf - (-inf)."""

    def block_starts(self, n_k):
        return super().block_starts(n_k)[::-1]

    def guarded(self, m_new):
        return m_new  # the bug: exp(-inf - (-inf)) = NaN


class _ShuffledBlocks(BlockedAttention):
    def block_starts(self, n_k):
        starts = super().block_starts(n_k)
        return [starts[i] for i in torch.randperm(len(starts)).tolist()]  # the bug: call-dependent order


class _HeadDimTruncatedAt128(BlockedAttention):
    def scores(self, q, kb, scale):
        return (q[..., :128] * scale) @ kb[..., :128].transpose(-2, -1)  # the bug: built for D <= 128


class _TruncatingBfloat16Store(BlockedAttention):
    def stored(self, out, out_dtype):
        if out_dtype != torch.bfloat16:
            return super().stored(out, out_dtype)
        bits = out.to(torch.float32).contiguous().view(torch.int32) & -65536  # the bug: low 16 bits dropped
        return bits.view(torch.float32).to(torch.bfloat16)  # exact: the dropped bits are already zero


class _Float32Output(BlockedAttention):
    def stored(self, out, out_dtype):
        return out  # the bug: the accumulator's dtype returned


wrong_default_scale = _mutant(_WrongDefaultScale(), "wrong_default_scale",
    "scale=None read as 1/D instead of 1/√D.")
ignored_explicit_scale = _mutant(_IgnoredScale(), "ignored_explicit_scale",
    "The scale argument is accepted and ignored: always 1/√D.")
causal_leaks_next_key = _mutant(_CausalLeaksNextKey(), "causal_leaks_next_key",
    "Causal off by one, outward: query i also sees key i + 1.")
causal_masks_diagonal = _mutant(_CausalMasksDiagonal(), "causal_masks_diagonal",
    "Causal off by one, inward: query i does not see key i (row 0 sees nothing).")
causal_bottom_right = _mutant(_CausalBottomRight(), "causal_bottom_right",
    "Causal mask aligned bottom-right (query i sees j <= i + Nk - Nq) instead of SDPA's top-left.")
online_without_accumulator_rescale = _mutant(_NoAccumulatorRescale(), "online_without_accumulator_rescale",
    "Online softmax that rescales the running sum but not the accumulator when the max grows.")
block_values_in_float16 = _mutant(_BlockValuesInFloat16(), "block_values_in_float16",
    "Each key block's P·V (weights up to 1, not yet normalised) rounded to float16 before the float32 accumulator: "
    "a block's sum overflows 65504 where the output (its weighted mean) fits (red team rt57).")
online_without_denominator_rescale = _mutant(_NoSumRescale(), "online_without_denominator_rescale",
    "Online softmax that rescales the accumulator but not the running sum.")
dropped_tail_block = _mutant(_DroppedTailBlock(), "dropped_tail_block",
    "The last, partial key block is skipped (loop bound Nk // BLOCK instead of a ceiling).")
dropped_query_tail = _mutant(_DroppedQueryTail(), "dropped_query_tail",
    "Rows of the last, partial query block are never written (left zero).")
gqa_modulo_heads = _mutant(_GqaModulo(), "gqa_modulo_heads",
    "GQA query head h reads KV head h % Hkv instead of h // (Hq / Hkv).")
no_max_subtraction = _mutant(_NoMaxSubtraction(), "no_max_subtraction",
    "exp(s) without subtracting a running max: overflows to inf/inf = NaN at large logits.")
global_max_subtraction = _mutant(_GlobalMax(), "global_max_subtraction",
    "One max over the whole tensor instead of per row: small rows underflow to 0/0.")
finite_mask_sentinel = _mutant(BlockedAttention(sentinel=-1e4), "finite_mask_sentinel",
    "Masked scores set to -1e4 instead of -inf: real scores below -1e4 lose to masked keys.")
unguarded_masked_block = _mutant(_UnguardedMaskedBlock(), "unguarded_masked_block",
    "Key blocks visited last-to-first with no guard for -inf - (-inf): a row whose first visited block is "
    "fully masked turns NaN.")
low_internal_precision = _mutant(BlockedAttention(work_dtype=torch.float16), "low_internal_precision",
    "float32 inputs silently computed in float16 inside.")
half_accumulators_declared_float32 = declare_recipe(_mutant(
    BlockedAttention(work_dtype=torch.float16), "half_accumulators_declared_float32",
    "Declares FlashAttention-2's recipe (float32 accumulators) but accumulates in float16."), "flash-attention-2")
wrong_output_dtype = _mutant(_Float32Output(), "wrong_output_dtype",
    "Returns the float32 accumulator's dtype instead of q's.")
head_dim_truncated_at_128 = _mutant(_HeadDimTruncatedAt128(), "head_dim_truncated_at_128",
    "Scores from the first 128 dims of q and k only (a kernel built for head dims up to 128).")
scale_or_default = _mutant(_ScaleOrDefault(), "scale_or_default",
    "`scale or 1/√D`: an explicit scale=0.0 is read as None.")
nondeterministic_block_order = _mutant(_ShuffledBlocks(), "nondeterministic_block_order",
    "Key blocks reduced in an order that changes from call to call (split-K with atomic adds).")
low_precision_running_state = _mutant(BlockedAttention(work_dtype="input"), "low_precision_running_state",
    "Running max, sum and accumulator kept in the input's half precision.")
truncating_bfloat16_store = _mutant(_TruncatingBfloat16Store(), "truncating_bfloat16_store",
    "The float32 result stored to bfloat16 by truncation (toward zero) instead of round-to-nearest.")


class _SplitsWeightedBySumOnly(SplitKVAttention):
    def merge_weight(self, l_c, m_c, m):
        return l_c  # the bug: each l_c is under its own max m_c; exp(m_c - m) forgotten


split_kv_decode_without_rescale = _mutant(_SplitsWeightedBySumOnly(), "split_kv_decode_without_rescale",
    "Split-KV decoding (one query; keys in splits of SPLIT, each split's softmax output merged) that weights "
    "each split by its own sum l_c, forgetting that each l_c is taken under its own max m_c: the right weight "
    "is l_c·exp(m_c - m). Other shapes take the correct blocked loop.")


# --------------------------------------------------------------------------- the weights, unblocked


class _MaskAfterSoftmax(PlainAttention):
    def weights(self, s, visible):
        p = torch.softmax(s, dim=-1)  # the bug: normalised over every key, hidden ones zeroed after
        return p if visible is None else p * visible


class _SoftmaxOverQueries(PlainAttention):
    def weights(self, s, visible):
        return torch.nan_to_num(torch.softmax(masked(s, visible), dim=-2))  # the bug: dim -2


class _MaxOverQueries(PlainAttention):
    def weights(self, s, visible):
        s = masked(s, visible)
        e = torch.exp(s - s.amax(dim=-2, keepdim=True).clamp(min=-1e30))  # the bug: max per key column
        return e / e.sum(dim=-1, keepdim=True)


class _WithoutExp(PlainAttention):
    def weights(self, s, visible):
        s = s if visible is None else s * visible
        return s / s.sum(dim=-1, keepdim=True)  # the bug: exp forgotten


mask_after_softmax = _mutant(_MaskAfterSoftmax(), "mask_after_softmax",
    "Softmax over all keys, then the masked weights zeroed: rows no longer sum to 1.")
softmax_over_queries = _mutant(_SoftmaxOverQueries(), "softmax_over_queries",
    "Softmax normalised over the query axis (dim -2) instead of the key axis.")
max_over_queries = _mutant(_MaxOverQueries(), "max_over_queries",
    "Stabilising max taken per key column (over queries) instead of per query row.")
normalised_scores_without_exp = _mutant(_WithoutExp(), "normalised_scores_without_exp",
    "Weights s / Σ s (the exponential forgotten): rows still sum to 1, but weights go negative.")


# --------------------------------------------------------------------------- inputs read wrongly


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
        if t.dim() != 4:  # (other ranks: the rank wrapper's contiguous 4-D copies)
            return t
        return t.as_strided(t.shape, (t.shape[1] * t.shape[2] * t.shape[3], *t.stride()[1:]), t.storage_offset())
    return blocked_attention(wrong(q), wrong(k), wrong(v), is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)


def storage_offset_ignored(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    """Every input read from the start of its storage (the view's storage offset dropped)."""
    def wrong(t):
        return t.as_strided(t.shape, t.stride(), 0)
    return blocked_attention(wrong(q), wrong(k), wrong(v), is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)


def ignores_strides(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    """Addresses computed from the shape as if every input were contiguous, ignoring its strides."""
    return blocked_attention(as_if_contiguous(q), as_if_contiguous(k), as_if_contiguous(v), is_causal=is_causal,
                             scale=scale, enable_gqa=enable_gqa)


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


# --------------------------------------------------------------------------- the hand-written backward


class _NoDTerm(ManualBackwardAttention):
    def score_gradient(self, p, dp, d):
        return p * dp  # the bug: dS = P∘dP, D = rowsum(dO∘O) dropped


class _GroupSumOfEightHeads(ManualBackwardAttention):
    def group_gradients(self, grad, hkv):
        b, hq = grad.shape[:2]
        groups = grad.reshape(b, hkv, hq // hkv, *grad.shape[2:])  # (B, Hkv, G, N, D)
        return groups[:, :, :8].sum(2)  # the bug: a group's sum over its first 8 query heads (a fixed-size loop)


class _DqUnscaled(ManualBackwardAttention):
    def query_gradient(self, ds, k, scale):
        return ds @ k  # the bug: the scale forgotten


class _GqaFirstHead(ManualBackwardAttention):
    def group_gradients(self, grad, hkv):
        return grad[:, ::grad.shape[1] // hkv]  # the bug: the group's first query head, not the group's sum


class _ScratchDout(ManualBackwardAttention):
    def row_term(self, do, out, dout):
        dout.mul_(out.to(dout.dtype))  # the bug: dO's own buffer reused as scratch for dO∘O
        return super().row_term(do, out, dout)


class _HalfLse(ManualBackwardAttention):
    def saved_probabilities(self, s, p, dtype):
        lse = torch.logsumexp(s, dim=-1, keepdim=True).to(dtype).to(s.dtype)  # the bug: lse kept in half precision
        return torch.exp(s - lse)


class _BackwardIgnoresScale(ManualBackwardAttention):
    def backward_scale(self, scale, head_dim):
        return 1.0 / math.sqrt(head_dim)  # the bug: whatever scale the forward was given


class _ContiguousQ(ManualBackwardAttention):
    def saved_query(self, q):
        return as_if_contiguous(q)  # the bug: the saved q addressed as if contiguous


class _ContiguousDout(ManualBackwardAttention):
    def upstream(self, dout):
        return as_if_contiguous(dout)  # the bug: dO addressed as if contiguous


class _ShuffledDv(ManualBackwardAttention):
    def value_gradient(self, p, do):
        dv = torch.zeros(p.shape[:-2] + (p.shape[-1], do.shape[-1]), dtype=do.dtype, device=do.device)
        for i0 in torch.randperm(-(-p.shape[-2] // BLOCK)).tolist():  # the bug: a call-dependent order
            rows = slice(i0 * BLOCK, (i0 + 1) * BLOCK)
            dv = dv + p[..., rows, :].transpose(-2, -1) @ do[..., rows, :]
        return dv


backward_without_d_term = _mutant(_NoDTerm(), "backward_without_d_term",
    "Backward with dS = P∘dP: the D = rowsum(dO∘O) term of the softmax backward dropped.")
backward_dq_unscaled = _mutant(_DqUnscaled(), "backward_dq_unscaled",
    "Backward forgets the softmax scale in dq = scale · dS K.")
backward_gqa_group_sum_of_eight = _mutant(_GroupSumOfEightHeads(), "backward_gqa_group_sum_of_eight",
    "GQA's dk, dv summed over at most 8 query heads of each group (groups past 8 lose the rest).")
backward_gqa_unsummed = _mutant(_GqaFirstHead(), "backward_gqa_unsummed",
    "GQA backward takes dk, dv of the group's first query head instead of summing the group.")
backward_assumes_contiguous_q = _mutant(_ContiguousQ(), "backward_assumes_contiguous_q",
    "The backward addresses the saved q as if it were contiguous.")
backward_writes_into_dout = _mutant(_ScratchDout(), "backward_writes_into_dout",
    "The backward reuses dO's buffer as scratch for dO∘O (the caller's gradient is overwritten).")
half_precision_lse = _mutant(_HalfLse(), "half_precision_lse",
    "The backward recomputes P from a log-sum-exp saved in the input's half precision.")
backward_ignores_scale = _mutant(_BackwardIgnoresScale(), "backward_ignores_scale",
    "The backward uses 1/√D in dq and dk whatever scale the forward was given.")
backward_assumes_contiguous_dout = _mutant(_ContiguousDout(), "backward_assumes_contiguous_dout",
    "The backward addresses dO as if it were contiguous.")
nondeterministic_backward = _mutant(_ShuffledDv(), "nondeterministic_backward",
    "dV accumulated over query blocks in a call-dependent order (atomic adds).")


# --------------------------------------------------------------------------- SDPA's whole signature: attn_mask


class _BoolMaskAsAdditive(FullAttention):
    def mask_bias(self, attn_mask, like, dtype):
        if attn_mask is not None and attn_mask.dtype == torch.bool:
            return attn_mask.to(like.dtype)  # the bug: True/False read as the numbers 1/0
        return super().mask_bias(attn_mask, like, dtype)


class _MaskReplacesCausal(FullAttention):
    def causal_applies(self, attn_mask):
        return attn_mask is None  # the bug: with a mask, is_causal is silently dropped


class _NanInEmptyRows(FullAttention):
    def softmax_rows(self, s):
        return torch.softmax(s, dim=-1)  # the bug: 0/0 = NaN where every key is hidden


class _MaskIgnored(FullAttention):
    def mask_bias(self, attn_mask, like, dtype):
        return None  # the bug


class _AdditiveMaskClamped(FullAttention):
    def mask_bias(self, attn_mask, like, dtype):
        bias = super().mask_bias(attn_mask, like, dtype)
        if attn_mask is None or attn_mask.dtype == torch.bool:
            return bias
        return bias.clamp(max=0.0)  # the bug: assumes masks are <= 0


class _BackwardIgnoresMask(FullAttention):
    def backward_probabilities(self, p, s, unmasked, bias):
        return self.softmax_rows(unmasked)  # the bug: P recomputed without attn_mask


class _BackwardDropsAdditiveValues(FullAttention):
    def backward_probabilities(self, p, s, unmasked, bias):
        if bias is None:
            return p
        # the bug: the mask rebuilt from where it is -inf, its finite values dropped
        return self.softmax_rows(torch.where(torch.isneginf(bias).expand(s.shape), s, s - bias))


def _one_row(mask, s) -> bool:
    """A mask of one query row (key padding), broadcast over the Nq > 1 rows of the scores s."""
    return mask.dim() >= 2 and mask.shape[-2] == 1 < s.shape[-2]


def _rows_past_first(mask, n_q: int, attend):
    """A one-row mask read with a row stride of Nk: row 0 right, rows past 0 reading memory that says
    ``attend``."""
    rows = mask.expand(*mask.shape[:-2], n_q, mask.shape[-1]).clone()
    rows[..., 1:, :] = attend
    return rows


class _KeyPaddingMaskMisread(FullAttention):
    def mask_bias(self, attn_mask, like, dtype):
        if attn_mask is not None and _one_row(attn_mask, like):
            attn_mask = _rows_past_first(attn_mask, like.shape[-2], True if attn_mask.dtype == torch.bool else 0.0)
        return super().mask_bias(attn_mask, like, dtype)  # the bug: the misread mask


class _Mask3dPerBatch(FullAttention):
    def mask_bias(self, attn_mask, like, dtype):
        if attn_mask is not None and attn_mask.dim() == 3:
            attn_mask = attn_mask[:, None]  # the bug: (X, Nq, Nk) read as (B, 1, Nq, Nk), not per head
        return super().mask_bias(attn_mask, like, dtype)


class _LeadingBlockNan(FullAttention):
    def softmax_rows(self, s):
        # the bug, as an online softmax over 64-key blocks meets it: a row whose first block is all
        # hidden has m = -inf there, exp(-inf - (-inf)) = NaN, and the NaN stays in l and acc
        return super().softmax_rows(s).masked_fill(torch.isneginf(s[..., :64]).all(dim=-1, keepdim=True),
                                                   float("nan"))


class _BoolMaskAsDtypeMin(FullAttention):
    """A boolean mask made additive with the input dtype's most negative number, and rows hiding
    every key set to 0 afterwards (as transformers' eager path does)."""

    def mask_bias(self, attn_mask, like, dtype):
        if attn_mask is None or attn_mask.dtype != torch.bool:
            return super().mask_bias(attn_mask, like, dtype)
        hide = torch.finfo(dtype).min  # the bug: only -65504 in float16
        return torch.zeros(attn_mask.shape, dtype=like.dtype, device=like.device).masked_fill(~attn_mask, hide)

    def probabilities(self, s, attn_mask):
        p = super().probabilities(s, attn_mask)
        if attn_mask is not None and attn_mask.dtype == torch.bool:
            p = p.masked_fill(~attn_mask.any(dim=-1, keepdim=True), 0.0)
        return p


class _MaskNoGradient(FullAttention):
    def mask_gradient(self, ds, shape, dtype):
        return None  # the bug: the mask treated as a constant


bool_mask_as_additive = _full_mutant(_BoolMaskAsAdditive(), "bool_mask_as_additive",
    "A boolean attn_mask added as the numbers 1/0 instead of 0/-inf.")
mask_replaces_causal = _full_mutant(_MaskReplacesCausal(), "mask_replaces_causal",
    "With attn_mask given, is_causal=True is silently dropped (neither refused nor applied).")
nan_in_empty_rows = _full_mutant(_NanInEmptyRows(), "nan_in_empty_rows",
    "A row whose keys are all masked gives 0/0 = NaN (torch's CPU SDPA gives 0).")
attn_mask_ignored = _full_mutant(_MaskIgnored(), "attn_mask_ignored", "attn_mask accepted and ignored.")
additive_mask_clamped = _full_mutant(_AdditiveMaskClamped(), "additive_mask_clamped",
    "An additive mask clamped at 0 (a kernel that assumes masks are ≤ 0).")
backward_ignores_mask = _full_mutant(_BackwardIgnoresMask(), "backward_ignores_mask",
    "The backward recomputes P without attn_mask.")
additive_mask_backward_drops_values = _full_mutant(_BackwardDropsAdditiveValues(),
    "additive_mask_backward_drops_values",
    "The backward rebuilds an additive mask from where it is -inf, dropping its finite values.")
key_padding_mask_misread = _full_mutant(_KeyPaddingMaskMisread(), "key_padding_mask_misread",
    "A one-row (key-padding) mask read with a row stride of Nk: rows past the first see every key.")
mask_3d_read_per_batch = _full_mutant(_Mask3dPerBatch(), "mask_3d_read_per_batch",
    "A 3-D attn_mask (X, Nq, Nk) read as one mask per batch entry instead of per head.")
masked_leading_block_nan = _full_mutant(_LeadingBlockNan(), "masked_leading_block_nan",
    "Online softmax with no guard for a fully masked first key block: NaN in rows that see later keys only.")
bool_mask_as_dtype_min = _full_mutant(_BoolMaskAsDtypeMin(), "bool_mask_as_dtype_min",
    "A boolean mask made additive with finfo(input dtype).min: in float16 only -65504, so a hidden key "
    "whose score is 4e4 above the visible ones still wins.")
learned_bias_without_gradient = _full_mutant(_MaskNoGradient(), "learned_bias_without_gradient",
    "An additive attn_mask that requires grad (a learned bias) is accepted but gets no gradient.")


# --------------------------------------------------------------------------- SDPA's whole signature: dropout


class _DropoutWithoutRescale(FullAttention):
    def rescaled(self, keep, dropout_p, dtype):
        return keep  # the bug: no 1/(1 - p)


class _DropoutRescaleMultiplied(FullAttention):
    def rescaled(self, keep, dropout_p, dtype):
        return keep * (1 - dropout_p)  # the bug: multiplied, not divided


class _DropoutPAsKeepProbability(FullAttention):
    """p read as the keep probability: kept with probability p, rescaled by 1/p."""

    def kept(self, u, dropout_p):
        return u < dropout_p

    def rescaled(self, keep, dropout_p, dtype):
        return keep / dropout_p


class _FreshMaskInBackward(FullAttention):
    def backward_dropout_mask(self, drop, p, dropout_p, kv_heads, dtype):
        return self.dropout_mask(p, dropout_p, kv_heads, dtype)  # the bug: a new draw, not the forward's


class _MaskRedrawnFromLastSeed(FullAttention):
    """The backward redraws the keep mask from the RNG state the last forward started from (kept on the class,
    not on ctx: a 'memory saving' that stores a seed instead of the mask)."""
    last_state = None

    def dropout_mask(self, p, dropout_p, kv_heads, dtype):
        type(self).last_state = torch.get_rng_state()
        return super().dropout_mask(p, dropout_p, kv_heads, dtype)

    def backward_dropout_mask(self, drop, p, dropout_p, kv_heads, dtype):
        kept = torch.get_rng_state()
        torch.set_rng_state(type(self).last_state)  # the bug: the last forward's state, not this call's
        try:
            return super().dropout_mask(p, dropout_p, kv_heads, dtype)
        finally:
            torch.set_rng_state(kept)


class _OwnGenerator(FullAttention):
    def generator(self, device):
        return torch.Generator(device=device).manual_seed(time.perf_counter_ns())  # the bug: seeded from the clock


class _BackwardDropoutUnscaled(FullAttention):
    def dropped_score_gradient(self, dp, drop):
        return dp * (drop != 0)  # the bug: the forward's mask, without its 1/(1 - p)


class _DropoutSkippedWithMask(FullAttention):
    def dropout_applies(self, q, attn_mask):
        return attn_mask is None  # the bug: the masked path has no dropout


class _DropoutSkippedForOneQuery(FullAttention):
    def dropout_applies(self, q, attn_mask):
        return q.shape[-2] != 1  # the bug: the one-query (decode) path has none


class _DropoutSharedAcrossHeads(FullAttention):
    def uniforms(self, shape, generator, device, kv_heads):
        return super().uniforms((1, 1) + tuple(shape[2:]), generator, device, kv_heads).expand(shape)  # the bug


class _RngNotAdvanced(FullAttention):
    def uniforms(self, shape, generator, device, kv_heads):
        state = torch.get_rng_state()
        u = super().uniforms(shape, generator, device, kv_heads)
        torch.set_rng_state(state)  # the bug: the generator's offset not advanced past this call's draws
        return u


class _Uint8Threshold(FullAttention):
    def kept(self, u, dropout_p):
        # the bug: keep if a random byte < floor((1-p)·255): keep probability 191/256 at p = 1/4
        return (u * 256).floor() < math.floor((1 - dropout_p) * 255)


class _MaskRepeatsEvery32Keys(FullAttention):
    def uniforms(self, shape, generator, device, kv_heads):
        b, h, n_q, n_k = shape  # the bug: the offset from (row, col % 32): every 32-key tile repeats the first
        return super().uniforms((b, h, n_q, 32), generator, device, kv_heads).repeat(1, 1, 1, -(-n_k // 32))[..., :n_k]


class _MaskRepeatsEvery16Queries(FullAttention):
    def uniforms(self, shape, generator, device, kv_heads):
        b, h, n_q, n_k = shape  # the bug: the offset from (row % 16, col): every 16-query tile repeats
        return super().uniforms((b, h, 16, n_k), generator, device, kv_heads).repeat(1, 1, -(-n_q // 16), 1)[:, :, :n_q]


class _OffsetFromKvHeads(FullAttention):
    def uniforms(self, shape, generator, device, kv_heads):
        b, h, n_q, n_k = shape
        # the bug: the (batch, head) offset is b·Hkv + h, so batch b + 1's head h draws batch b's head h + Hkv
        pool = super().uniforms((b * kv_heads + h, n_q, n_k), generator, device, kv_heads)
        return pool[torch.arange(b)[:, None] * kv_heads + torch.arange(h)]  # (B, H, Nq, Nk)


class _RescaleInInputDtype(FullAttention):
    def rescaled(self, keep, dropout_p, dtype):
        return keep * float(torch.tensor(1 / (1 - dropout_p), dtype=dtype))  # the bug: 1/(1-p) rounded to dtype


def rng_drawn_without_dropout(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """A dropout seed is drawn from torch's generator on every call, also at dropout_p = 0."""
    if dropout_p == 0:
        torch.randint(2 ** 31, (1,))  # the bug: the seed drawn whether or not there is dropout
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


dropout_without_rescale = _full_mutant(_DropoutWithoutRescale(), "dropout_without_rescale",
    "Dropout keeps weights with probability 1 - p but does not rescale by 1/(1 - p).")
dropout_rescale_multiplied = _full_mutant(_DropoutRescaleMultiplied(), "dropout_rescale_multiplied",
    "Kept weights multiplied by (1 - p) instead of divided.")
dropout_p_as_keep_probability = _full_mutant(_DropoutPAsKeepProbability(), "dropout_p_as_keep_probability",
    "p read as the keep probability (kept with probability p, rescaled by 1/p).")
dropout_fresh_mask_in_backward = _full_mutant(_FreshMaskInBackward(), "dropout_fresh_mask_in_backward",
    "The backward draws a new dropout mask instead of reusing the forward's.")
dropout_mask_redrawn_from_last_seed = _full_mutant(_MaskRedrawnFromLastSeed(), "dropout_mask_redrawn_from_last_seed",
    "The backward redraws its keep mask from the last forward's RNG state: after another dropout call, that call's.")
dropout_own_generator = _full_mutant(_OwnGenerator(), "dropout_own_generator",
    "Dropout drawn from a generator of its own, seeded from the clock: torch.manual_seed does not reproduce it.")
dropout_backward_unscaled = _full_mutant(_BackwardDropoutUnscaled(), "dropout_backward_unscaled",
    "The backward masks dP with the forward's mask but leaves out its 1/(1 - p) (dq, dk wrong, dv right).")
dropout_skipped_with_mask = _full_mutant(_DropoutSkippedWithMask(), "dropout_skipped_with_mask",
    "With attn_mask given the kernel takes a masked path that has no dropout.")
dropout_skipped_for_one_query = _full_mutant(_DropoutSkippedForOneQuery(), "dropout_skipped_for_one_query",
    "The one-query (decode) path applies no dropout.")
dropout_shared_across_heads = _full_mutant(_DropoutSharedAcrossHeads(), "dropout_shared_across_heads",
    "One dropout mask of shape (Nq, Nk) drawn and broadcast over batch and heads.")
dropout_rng_not_advanced = _full_mutant(_RngNotAdvanced(), "dropout_rng_not_advanced",
    "The generator's state is restored after the draw: consecutive calls repeat the mask.")
dropout_uint8_threshold = _full_mutant(_Uint8Threshold(), "dropout_uint8_threshold",
    "Keep if a random byte < floor((1 - p)·255): keep probability 191/256 ≈ 0.746 at p = 1/4 (0.5% low).")
dropout_mask_repeats_every_32_keys = _full_mutant(_MaskRepeatsEvery32Keys(), "dropout_mask_repeats_every_32_keys",
    "The dropout RNG offset taken from (row, column mod 32): every 32-key tile reuses the first tile's mask.")
dropout_mask_repeats_every_16_queries = _full_mutant(_MaskRepeatsEvery16Queries(),
    "dropout_mask_repeats_every_16_queries",
    "The dropout RNG offset taken from (row mod 16, column): every 16-query tile reuses the first tile's mask.")
dropout_offset_from_kv_heads = _full_mutant(_OffsetFromKvHeads(), "dropout_offset_from_kv_heads",
    "The dropout RNG offset of (batch b, head h) is b·Hkv + h under GQA: batch b + 1 repeats a head of batch b.")
dropout_rescale_in_input_dtype = _full_mutant(_RescaleInInputDtype(), "dropout_rescale_in_input_dtype",
    "The dropout rescale 1/(1-p) rounded to the input's dtype (+0.2% in bfloat16 at p = 1/4, -0.02% in float16).")


# --------------------------------------------------------------------------- families the generator's
# regimes (generate.REGIMES) reach: long decoding, both lengths past 2048, mask dims equal to B, q·scale
# past float16's range


class _SixteenSplitsOnly(SplitKVAttention):
    def split_starts(self, n_k):
        return super().split_starts(n_k)[:16]  # the bug: a partials buffer of 16 splits; keys past 16·1024 unread


class _RectangularCausalPositionsInFloat16(BlockedAttention):
    def visible(self, n_q, n_k, device):
        if n_q == n_k:
            return super().visible(n_q, n_k, device)
        # the bug: the Nq ≠ Nk (chunked prefill) path holds positions in float16: 2049 -> 2048, 2051 -> 2052
        i = torch.arange(n_q, device=device).to(torch.float16)[:, None]  # (Nq, 1)
        j = torch.arange(n_k, device=device).to(torch.float16)[None, :]  # (1, Nk)
        return j <= i


class _TwoDimMaskAsKeyPadding(FullAttention):
    def mask_bias(self, attn_mask, like, dtype):
        if attn_mask is not None and attn_mask.dim() == 2 and attn_mask.shape[0] == like.shape[0]:
            attn_mask = attn_mask[:, None, None, :]  # the bug: (B, Nk) key padding, where SDPA reads (Nq, Nk)
        return super().mask_bias(attn_mask, like, dtype)


class _QueryScaledInInputDtype(FullAttention):
    def working_scores(self, q, k, v, scale, enable_gqa):
        scale = self.resolved_scale(scale, q.shape[-1])
        q32, k32, v32, _, _ = super().working_scores(q, k, v, 1.0, enable_gqa)
        # the bug: q·scale in the input dtype, before the float32 upcast (float16 overflows past 65504)
        return q32, k32, v32, scale, (q * scale).to(q32.dtype) @ k32.transpose(-2, -1)  # (B, H, Nq, Nk)


split_kv_decode_16_splits = _mutant(_SixteenSplitsOnly(), "split_kv_decode_16_splits",
    "Split-KV decoding with room for 16 splits of SPLIT keys: past 16 384 keys the rest are never read.")
rectangular_causal_positions_in_float16 = _mutant(_RectangularCausalPositionsInFloat16(block=1024),
    "rectangular_causal_positions_in_float16",
    "Causal with Nq ≠ Nk (a chunked-prefill path) compares query and key positions held in float16: wrong "
    "once both pass 2048 (the square path is right).")
two_dim_mask_as_key_padding = _full_mutant(_TwoDimMaskAsKeyPadding(), "two_dim_mask_as_key_padding",
    "A 2-D attn_mask whose first dim equals B is read as (B, Nk) key padding; SDPA reads every 2-D mask as "
    "(Nq, Nk).")
query_scaled_in_input_dtype = _full_mutant(_QueryScaledInInputDtype(), "query_scaled_in_input_dtype",
    "q multiplied by the scale in the input dtype before the float32 upcast: float16 q near its top "
    "overflows at |scale| ≥ 2 where SDPA (scaling in float32) does not.")


class _MaskStridesIgnored(FullAttention):
    def mask_bias(self, attn_mask, like, dtype):
        if attn_mask is not None:
            attn_mask = as_if_contiguous(attn_mask)  # the bug: the mask's storage read as contiguous
        return super().mask_bias(attn_mask, like, dtype)


class _MaskNonFiniteSanitised(FullAttention):
    def mask_bias(self, attn_mask, like, dtype):
        if attn_mask is not None and attn_mask.is_floating_point():
            attn_mask = torch.nan_to_num(attn_mask, nan=0.0)  # the bug: NaN to 0, +inf to the largest finite
        return super().mask_bias(attn_mask, like, dtype)


class _MaskCastToQueryDtype(FullAttention):
    def mask_bias(self, attn_mask, like, dtype):
        if attn_mask is not None and attn_mask.is_floating_point():
            attn_mask = attn_mask.to(dtype)  # the bug: a float32 bias rounded to half q's dtype
        return super().mask_bias(attn_mask, like, dtype)


class _MaskMustBeContiguous(FullAttention):
    def mask_bias(self, attn_mask, like, dtype):
        if attn_mask is not None and not attn_mask.is_contiguous():
            raise ValueError("attn_mask must be contiguous")  # the bug: SDPA accepts any strides
        return super().mask_bias(attn_mask, like, dtype)


mask_strides_ignored = _full_mutant(_MaskStridesIgnored(), "mask_strides_ignored",
    "attn_mask's storage read with a contiguous tensor's strides: a transposed, expanded or sliced mask read wrong.")
mask_nonfinite_sanitised = _full_mutant(_MaskNonFiniteSanitised(), "mask_nonfinite_sanitised",
    "NaN entries of an additive attn_mask turned into 0 (nan_to_num) where SDPA makes their rows NaN.")
mask_cast_to_query_dtype = _full_mutant(_MaskCastToQueryDtype(), "mask_cast_to_query_dtype",
    "A float32 additive attn_mask beside half q cast to q's dtype before use; SDPA keeps it in float32.")
mask_must_be_contiguous = _full_mutant(_MaskMustBeContiguous(), "mask_must_be_contiguous",
    "A non-contiguous attn_mask refused, which SDPA accepts.")


# --------------------------------------------------------------------------- families of SDPA's contract
# axes the later regimes reach (wide-head, many-heads, cache-slice, empty, far-masked-rows, long-decode
# without a mask), each a path real kernels take only past a size or for one layout


class _HeadDimFloorChunks(BlockedAttention):
    def scores(self, q, kb, scale):
        width = q.shape[-1] // 128 * 128 if q.shape[-1] > 128 else q.shape[-1]
        # the bug: head dims past 128 in floor(D / 128) chunks of 128: D = 129..255 loses its tail (256 is right)
        return (q[..., :width] * scale) @ kb[..., :width].transpose(-2, -1)  # (B, H, Nq, bn)


class _GqaBigGroupsTiled(BlockedAttention):
    def head_index(self, hq, hkv, device):
        if hq // hkv > 8:  # the bug: the large-group path tiles the KV heads (h % Hkv), not h // group
            return torch.arange(hq, device=device) % hkv
        return super().head_index(hq, hkv, device)


def batch_heads_tail_chunk_dropped(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    """B·Hq processed in grid chunks of 256: the last partial chunk is never launched (its heads stay 0)."""
    out = blocked_attention(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)  # (B, Hq, Nq, Dv)
    flat = out.reshape(-1, *out.shape[2:])  # (B·Hq, Nq, Dv)
    flat[flat.shape[0] // 256 * 256 if flat.shape[0] > 256 else flat.shape[0]:] = 0
    return flat.reshape(out.shape)


def kv_cache_batch_stride_from_shape(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    """A (B, N, H, D)-strided view (seq stride H·D, head stride D) re-strided with batch stride N·H·D
    from its shape: right for a whole (B, N, H, D) tensor, wrong for a slice of a longer KV cache."""
    def fast(t):
        if t.dim() != 4:  # (other ranks: the rank wrapper's contiguous 4-D copies)
            return t
        b, h, n, d = t.shape
        if not t.is_contiguous() and t.stride()[1:] == (d, h * d, 1):
            return t.as_strided(t.shape, (n * h * d, d, h * d, 1), t.storage_offset())
        return t
    return blocked_attention(fast(q), fast(k), fast(v), is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)


def empty_keys_divided_by_zero(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    """Nk = 0 answered early with the empty sum's 0/0 (NaN), SDPA giving 0; the early return's shape from
    broadcasting q's and k's leading dims raises for GQA heads, so only an MHA Nk = 0 shows it."""
    if k.shape[-2] == 0:
        shape = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]) + (q.shape[-2], v.shape[-1])
        return torch.full(shape, math.nan, dtype=q.dtype, device=q.device)
    return blocked_attention(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)


class _FiniteMaxStart(FullAttention):
    def softmax_rows(self, s):
        # the bug: the running max starts at a finite "-infinity", -1e20: a row whose every score is
        # below it gets exp(s - m) = 0 everywhere and the output 0, not the softmax of its scores
        m = s.amax(dim=-1, keepdim=True).clamp(min=-1e20)  # (B, H, Nq, 1)
        e = torch.exp(s - m)
        total = e.sum(dim=-1, keepdim=True)
        return torch.where(total == 0, 0.0, e / total)


class _OverlappingSplits(SplitKVAttention):
    def split_starts(self, n_k):
        return list(range(0, n_k, self.split - 1))  # the bug: splits advance by split - 1, a key counted twice


def split_kv_overlapping_without_mask(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                      enable_gqa=False):
    """The mask-free, dropout-free decode path is split-K with overlapping splits; every other call is right."""
    if attn_mask is None and dropout_p == 0:
        return _OverlappingSplits()(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


class _SixteenBitSeed(FullAttention):
    def generator(self, device):
        # the bug: a per-call generator seeded with 16 bits of torch's: calls repeat masks after ~300
        seed = int(torch.randint(0, 2 ** 16, (1,)))
        return torch.Generator(device=device).manual_seed(seed)


dropout_seed_16_bits = _full_mutant(_SixteenBitSeed(), "dropout_seed_16_bits",
    "Each call's dropout seed drawn with 16 bits: masks fresh per call, but repeated across ~300 calls.")


def refuses_rank_other_than_4(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    """q, k, v other than 4-D refused; SDPA takes (..., L, E) of any rank >= 3 (and 3-D (N, L, E) is common)."""
    if q.dim() != 4:
        raise ValueError(f"expected 4-D (B, H, N, D) inputs, got {q.dim()}-D")
    return blocked_attention(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)


head_dim_floor_chunks = _mutant(_HeadDimFloorChunks(), "head_dim_floor_chunks",
    "Head dims past 128 taken in floor(D / 128) chunks of 128: the tail of D = 129..255 dropped from QKᵀ.")
gqa_big_groups_tiled = _mutant(_GqaBigGroupsTiled(), "gqa_big_groups_tiled",
    "GQA groups larger than 8 map query head h to KV head h % Hkv instead of h // group.")
finite_max_start = _full_mutant(_FiniteMaxStart(), "finite_max_start",
    "Softmax's max starts at -1e20: rows masked wholly below it (finite additive values) answer 0.")


# --------------------------------------------------------------------------- the register


ALL_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@dataclass(frozen=True)
class Mutant:
    fn: Callable
    bug_class: str
    caught_by: str  # the invariant expected to name it: in every one of ``dtypes`` (a drawn relation: in a run over them)
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
    # realistic tiles, the training path, SDPA's whole contract, rounding bias
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
    # one bug class each, each reached by the invariant named beside it
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
    # one bug class each (further classes)
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
    # further bug classes
    Mutant(one_key_returns_view_of_v, "output is a view of v (one-key fast path)", "output-dtype-shape"),
    Mutant(last_stride_assumed_one, "head-dim stride assumed to be 1", "strided-inputs"),
    Mutant(rng_drawn_without_dropout, "RNG drawn at dropout_p = 0", "dropout-rng-advances"),
    Mutant(learned_bias_without_gradient, "learned additive mask gets no gradient", "attn-mask-bias-gradient",
           backward=True),
    # dropout bug classes: masks correlated across tiles or slices,
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


class _InfiniteScoresClamped(PlainAttention):
    def weights(self, s, visible):
        # the bug: an 'overflow guard' turning ±inf scores into ±max before the softmax (NaN left alone)
        s = torch.where(s.isinf(), s.sign() * torch.finfo(s.dtype).max, s)
        return torch.softmax(masked(s, visible), dim=-1)


infinite_scores_clamped = _mutant(_InfiniteScoresClamped(), "infinite_scores_clamped",
    "±inf scores clamped to ±max (an overflow guard): +inf in q gives a finite row where SDPA gives NaN.")


def dropout_skipped_under_inference_mode(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                        enable_gqa=False):
    """An 'evaluation' shortcut: under torch.inference_mode dropout is skipped (SDPA's functional form applies
    dropout_p in every autograd mode; only nn modules tie it to training)."""
    if torch.is_inference_mode_enabled():
        dropout_p = 0.0  # the bug
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def frozen_kv_gives_no_dq(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """An inference path taken when k and v need no gradient, detaching q too: frozen K/V, no dq."""
    if not (k.requires_grad or v.requires_grad):
        q = q.detach()
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


class _DifferentiatedThroughSavedP(ManualBackwardAttention):
    def differentiated(self, ctx, dout):
        return self.backward(ctx, dout)  # the bug: not once_differentiable, the saved P a constant to autograd


double_backward_through_saved_p = _mutant(_DifferentiatedThroughSavedP(), "double_backward_through_saved_p",
    "Double backward silently wrong: the backward is differentiated as if P were a constant.")


class _OutputByReference(ManualBackwardAttention):
    """The output kept on ctx by reference (not save_for_backward), D = rowsum(dO∘O) read from it."""

    def save(self, ctx, tensors, result):
        ctx.save_for_backward(*tensors[:-1])
        ctx.result = result  # the bug: out of reach of autograd's version check

    def saved(self, ctx):
        kept = ctx.saved_tensors
        return (*kept, ctx.result.to(kept[0].dtype))  # O as the caller left it


output_kept_by_reference = _mutant(_OutputByReference(), "output_kept_by_reference",
    "The output modified in place before backward goes unnoticed: the backward reads it untracked.")


class _DoutStrideOrDefault(ManualBackwardAttention):
    def upstream(self, dout):
        if 0 not in dout.stride():
            return dout
        # the bug: `stride or contiguous stride`, 0 being falsy: an expanded dO (strides 0) is read as a
        # dense tensor from its one-element buffer (the rest 0)
        flat = dout.as_strided((dout.untyped_storage().nbytes() // dout.element_size(),), (1,), 0)
        dense = torch.zeros(dout.numel(), dtype=dout.dtype, device=dout.device)
        dense[:flat.numel()] = flat[:dout.numel()]
        return dense.view(dout.shape)


dout_stride_zero_read_dense = _mutant(_DoutStrideOrDefault(), "dout_stride_zero_read_dense",
    "out.sum().backward() gives wrong gradients: dO's zero strides read as unset.")


class _BackwardMisreadsKeyPadding(FullAttention):
    def backward_probabilities(self, p, s, unmasked, bias):
        if bias is None or not _one_row(bias, s):
            return p
        # the bug, in the backward only: the one-row mask read as a full one, rows past 0 seeing every key
        return self.softmax_rows(unmasked + _rows_past_first(bias, s.shape[-2], 0.0))


def key_padding_misread_in_backward(q, k, v, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
    """A broadcast (key-padding) mask read wrongly in the backward only (the forward right)."""
    return _BackwardMisreadsKeyPadding()(q, k, v, attn_mask, 0.0, is_causal, scale, enable_gqa)


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
    impl = _FreshMaskInBackward() if attn_mask is not None else FullAttention()
    return impl(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(empty_keys_give_nan, "NaN for Nk = 0 (0/0) where SDPA gives 0", "empty-dims", backward=True),
    Mutant(mixed_dtypes_cast_silently, "q, k, v of mixed dtypes cast instead of refused", "refused-inputs"),
    Mutant(dropout_p_clamped_below_one, "dropout_p = 1 clamped below 1 (weights survive)", "dropout-p-range"),
    Mutant(nan_inputs_zeroed, "NaN inputs zeroed (NaN hidden)", "nan-propagation"),
    Mutant(dropout_mask_redrawn_from_last_seed, "dropout backward redraws the last forward's mask",
           "generated-dropout", backward=True),
    Mutant(dropout_skipped_under_inference_mode, "dropout skipped under inference_mode", "generated-dropout"),
    Mutant(infinite_scores_clamped, "±inf scores clamped to ±max (infinite inputs hidden)", "nan-propagation"),
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


class _BackwardTailDropped(ManualBackwardAttention):
    """The backward's loads of q and dO have no tail loop: their last D % 8 and Dv % 8 entries read
    as 0, so dk and dv lose their tails and dP its last Dv % 8 terms (the forward right)."""

    def saved_query(self, q):
        return _tail_dropped(q)

    def upstream(self, dout):
        return _tail_dropped(dout)


backward_head_dim_tail_dropped = _mutant(_BackwardTailDropped(), "backward_head_dim_tail_dropped",
    "The backward alone drops the last D % 8 and Dv % 8 entries of q and dO (forward right).")


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


# the contract's fourth round: k and v of different lengths, positions in low precision


def v_read_over_k_length(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """v read over k's length: a longer v silently truncated to Nk rows (a shorter one fails to index)."""
    return full_attention(q, k, v[..., :k.shape[-2], :], attn_mask, dropout_p, is_causal, scale, enable_gqa)


key_positions_in_float16 = _mutant(_KeyPositionsInFloat16(), "key_positions_in_float16",
    "The causal mask compares query i with key positions computed in float16: past 2048 odd positions round "
    "to even ones, so row 2048 sees key 2049 and row 2051 misses key 2051.")


MUTANTS = MUTANTS + (
    Mutant(v_read_over_k_length, "k and v of different lengths accepted (v truncated to Nk)", "kv-lengths-refused"),
    Mutant(key_positions_in_float16, "causal mask from float16 key positions (wrong past 2048)",
           "long-causal-positions"),
)


# bug classes: process-wide SDPA switches, masks that do not broadcast,
# the one-key case under a mask, the mask as the only input requiring grad, inputs written between
# forward and backward


def flash_sdp_switched_off(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """torch's flash SDPA backend switched off for the whole process 'to force the math fallback'."""
    torch.backends.cuda.enable_flash_sdp(False)
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def warnings_silenced_process_wide(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                   enable_gqa=False):
    """warnings.simplefilter('ignore') to silence a library's warning, left on for the whole process."""
    warnings.simplefilter("ignore")  # the bug: not inside warnings.catch_warnings()
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def attn_mask_sliced_to_fit(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """A mask with more query rows or key columns than the scores (built for a KV cache's full length)
    sliced to (Nq, Nk) instead of refused."""
    if attn_mask is not None:
        attn_mask = attn_mask[..., :q.shape[-2], :k.shape[-2]]
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def one_key_skips_mask(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """A one-key branch (the softmax of one score is 1) that leaves attn_mask out: a hidden key gives v, not 0."""
    if k.shape[-2] == 1:
        attn_mask = None
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def mask_gradient_needs_qkv_gradient(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                     enable_gqa=False):
    """The no-grad inference path taken whenever q, k, v need no gradient, also when attn_mask does."""
    if not (q.requires_grad or k.requires_grad or v.requires_grad):
        with torch.no_grad():
            return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


class _QueryByReference(ManualBackwardAttention):
    """The (float32 working) query kept on ctx by reference, not save_for_backward: dk = scale · dSᵀ Q
    reads whatever the caller wrote into q after the forward."""

    def save(self, ctx, tensors, result):
        ctx.save_for_backward(*tensors[1:])
        ctx.query = tensors[0]  # the bug: out of reach of autograd's version check

    def saved(self, ctx):
        return (ctx.query, *ctx.saved_tensors)


query_kept_by_reference = _mutant(_QueryByReference(), "query_kept_by_reference",
    "q modified in place between forward and backward goes unnoticed: the backward reads it untracked.")


MUTANTS = MUTANTS + (
    Mutant(flash_sdp_switched_off, "SDPA flash backend switched off process-wide", "global-state-unchanged",
           backward=True),
    Mutant(warnings_silenced_process_wide, "warnings filters changed process-wide", "global-state-unchanged",
           backward=True),
    Mutant(attn_mask_sliced_to_fit, "attn_mask too long for the scores sliced instead of refused",
           "attn-mask-shape-refused"),
    Mutant(one_key_skips_mask, "one-key branch ignores attn_mask", "attn-mask-one-key"),
    Mutant(mask_gradient_needs_qkv_gradient, "no mask gradient when q, k, v are frozen", "attn-mask-bias-gradient",
           backward=True),
    # in half precision the working float32 query is a copy of q, so the caller's write does not reach it
    Mutant(query_kept_by_reference, "q modified in place before backward read untracked",
           "input-inplace-before-backward", dtypes=(torch.float32,), backward=True),
)


MUTANTS = MUTANTS + (
    Mutant(split_kv_decode_16_splits, "split-K decoding drops keys past 16 splits", "generated-agreement"),
    Mutant(rectangular_causal_positions_in_float16, "causal positions in float16 when Nq != Nk (both past 2048)",
           "generated-agreement"),
    Mutant(two_dim_mask_as_key_padding, "2-D attn_mask read as (B, Nk) when its first dim is B",
           "generated-agreement"),
    # in float32 and bfloat16 q·scale overflows where float32 does: only float16's range is narrower
    Mutant(query_scaled_in_input_dtype, "q scaled in the input dtype (float16 overflow)", "generated-agreement",
           dtypes=(torch.float16,)),
    Mutant(mask_strides_ignored, "attn_mask strides ignored", "generated-agreement"),
    # only float16's range is narrower than float32's, where a block's sums are kept
    Mutant(block_values_in_float16, "a key block's P·V summed in float16 (overflow)", "generated-agreement",
           dtypes=(torch.float16,)),
    Mutant(mask_nonfinite_sanitised, "NaN in an additive attn_mask sanitised", "generated-agreement"),
    # in float32 the cast is a no-op: only a half q takes a float32 mask of another dtype
    Mutant(mask_cast_to_query_dtype, "float32 attn_mask cast to half q's dtype", "generated-agreement",
           dtypes=(torch.float16, torch.bfloat16)),
    Mutant(mask_must_be_contiguous, "non-contiguous attn_mask refused", "generated-agreement"),
    Mutant(dropout_seed_16_bits, "dropout seed of 16 bits (masks repeat across calls)", "dropout-distinct-masks",
           dtypes=(torch.float32,)),
    Mutant(refuses_rank_other_than_4, "3-D and 5-D q, k, v refused", "generated-agreement"),
    Mutant(head_dim_floor_chunks, "head dims 129..255 in floor(D/128) chunks", "generated-agreement"),
    Mutant(gqa_big_groups_tiled, "GQA groups > 8 tiled (h % Hkv)", "generated-agreement"),
    Mutant(batch_heads_tail_chunk_dropped, "last partial chunk of 256 batch-heads never run", "generated-agreement"),
    Mutant(kv_cache_batch_stride_from_shape, "KV-cache slice's batch stride taken from its shape",
           "generated-agreement"),
    Mutant(empty_keys_divided_by_zero, "Nk = 0 answered NaN (MHA only)", "empty-dims", backward=True),
    Mutant(finite_max_start, "softmax max started at -1e20 (rows masked below it answer 0)", "generated-agreement"),
    # in bfloat16 one key of 2¹⁵-2¹⁷ counted twice moves the output by ~1/Nk of a value, inside its rounding
    Mutant(split_kv_overlapping_without_mask, "mask-free split-K decode counts split boundaries twice",
           "generated-agreement", dtypes=(torch.float32, torch.float16)),
)


# --------------------------------------------------------------------------- combinations and call sequences
# (axes each drawn before, now drawn together: a scale with a backward, a mask form with requires_grad, ...)


class _BackwardScaleOrDefault(FullAttention):
    def backward(self, ctx, dout):
        dtype, scale, *rest = ctx.meta
        ctx.meta = (dtype, scale or 1.0 / math.sqrt(ctx.saved_tensors[0].shape[-1]), *rest)  # the bug: 0.0 is falsy
        return super().backward(ctx, dout)


backward_zero_scale_as_default = _full_mutant(_BackwardScaleOrDefault(), "backward_zero_scale_as_default",
    "The backward resolves the scale with `scale or 1/sqrt(D)`: an explicit 0 (forward right) differentiated "
    "at 1/sqrt(D).")

MUTANTS = MUTANTS + (
    Mutant(backward_zero_scale_as_default, "backward reads scale 0 as the default", "generated-gradients",
           backward=True),
)


class _OneKvHeadNeedsGqa(FullAttention):
    def kv_for_query_heads(self, q, k, v, enable_gqa):
        if q.shape[1] != k.shape[1] and not enable_gqa:  # the bug: SDPA broadcasts one KV head without the flag
            raise ValueError("k and v have fewer heads than q; pass enable_gqa=True")
        return super().kv_for_query_heads(q, k, v, enable_gqa)


one_kv_head_refused_without_gqa = _full_mutant(_OneKvHeadNeedsGqa(), "one_kv_head_refused_without_gqa",
    "Hkv = 1 < Hq without enable_gqa refused, where SDPA broadcasts the one KV head.")

MUTANTS = MUTANTS + (
    Mutant(one_kv_head_refused_without_gqa, "one KV head refused without enable_gqa", "generated-agreement"),
)


def one_key_returns_v_under_dropout(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                    enable_gqa=False):
    """A one-key fast path (softmax of one score is 1: the output is v) taken with dropout_p > 0 too."""
    if k.shape[-2] == 1 and attn_mask is None:
        dropout_p = 0.0  # the bug: the fast path skips dropout
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(one_key_returns_v_under_dropout, "one-key fast path skips dropout", "generated-dropout"),
)


class _QueryMaskReadAlongRows(FullAttention):
    def mask_bias(self, attn_mask, like, dtype):
        if attn_mask is not None and attn_mask.shape[-1] == 1 and like.shape[-1] > 1:
            # the bug: the broadcast view's strides, but the key stride taken from the mask itself, as if its
            # last dim were Nk wide: a (.., Nq, 1) query mask is read along its rows
            base = attn_mask.contiguous()
            strides = list(base.expand(like.shape).stride())
            strides[-1] = base.stride(-1)
            need = sum((n - 1) * st for n, st in zip(like.shape, strides)) + 1
            flat = torch.cat([base.reshape(-1), base.new_zeros(max(0, need - base.numel()))])
            attn_mask = flat.as_strided(like.shape, strides)
        return super().mask_bias(attn_mask, like, dtype)


class _MaskKeyStrideAssumedOne(FullAttention):
    def mask_bias(self, attn_mask, like, dtype):
        if attn_mask is not None and attn_mask.dim() and attn_mask.stride(-1) == 0 and attn_mask.shape[-1] > 1:
            # the bug: the key stride taken as 1, as for every mask but an expanded one (its other strides honoured)
            attn_mask = attn_mask.as_strided(attn_mask.shape, attn_mask.stride()[:-1] + (1,),
                                             attn_mask.storage_offset())
        return super().mask_bias(attn_mask, like, dtype)


class _IntegerMaskTakenAsBool(FullAttention):
    def mask_bias(self, attn_mask, like, dtype):
        if attn_mask is not None and not attn_mask.dtype.is_floating_point and attn_mask.dtype != torch.bool:
            attn_mask = attn_mask != 0  # the bug: an integer 0/1 mask taken as bool where SDPA raises
        return super().mask_bias(attn_mask, like, dtype)


class _BroadcastKvGradientOfEntryZero(FullAttention):
    def backward(self, ctx, dout):
        dq, dk, dv, dmask = super().backward(ctx, dout)
        q, k = ctx.saved_tensors[:2]
        if k.shape[0] == 1 < q.shape[0]:
            dk, dv = dk[:1], dv[:1]  # the bug: k, v broadcast over the batch get batch entry 0's gradient, not the sum
        return dq, dk, dv, dmask


class _MaskGradientOfHeadZero(FullAttention):
    def mask_gradient(self, ds, shape, dtype):
        if len(shape) >= 3 and shape[-3] == 1 and ds.shape[1] > 1:
            ds = ds[:, :1]  # the bug: a mask broadcast over heads gets head 0's dS, not the sum over heads
        return super().mask_gradient(ds, shape, dtype)


class _BackwardDropsCausalWithMask(FullAttention):
    def backward_causal(self, attn_mask):
        return attn_mask is None  # the bug: the backward's mask path takes the mask as the whole story


query_mask_read_along_rows = _full_mutant(_QueryMaskReadAlongRows(), "query_mask_read_along_rows",
    "A mask of key dim 1 ((B, 1, Nq, 1), (Nq, 1)) read with its own key stride instead of the broadcast 0.")
mask_key_stride_assumed_one = _full_mutant(_MaskKeyStrideAssumedOne(), "mask_key_stride_assumed_one",
    "An attn_mask expanded along the keys (key stride 0) read with key stride 1: the storage's own entries.")
integer_mask_taken_as_bool = _full_mutant(_IntegerMaskTakenAsBool(), "integer_mask_taken_as_bool",
    "An integer 0/1 attn_mask taken as bool (attend where nonzero) where SDPA refuses it.")
broadcast_kv_gradient_of_entry_zero = _full_mutant(_BroadcastKvGradientOfEntryZero(),
    "broadcast_kv_gradient_of_entry_zero",
    "k and v of batch 1 broadcast over q's batch get batch entry 0's dk, dv instead of the sum over the batch.")
mask_gradient_of_head_zero = _full_mutant(_MaskGradientOfHeadZero(), "mask_gradient_of_head_zero",
    "A learned mask broadcast over heads gets head 0's gradient instead of the sum over heads.")
backward_drops_causal_with_mask = _full_mutant(_BackwardDropsCausalWithMask(), "backward_drops_causal_with_mask",
    "With attn_mask and is_causal both, the backward drops is_causal (the forward applies both).")

MUTANTS = MUTANTS + (
    # every dtype shows it; float32's 22 agreement problems of seed 0 draw no query mask (its float32 catch is
    # test_rt22e_families' and the default run's)
    Mutant(query_mask_read_along_rows, "query mask (key dim 1) read along its rows", "generated-agreement",
           dtypes=(torch.float16, torch.bfloat16)),
    Mutant(mask_gradient_of_head_zero, "head-broadcast mask gets head 0's gradient", "generated-gradients",
           backward=True),
    Mutant(backward_gqa_group_sum_of_eight, "GQA backward sums 8 heads of a group", "generated-gradients",
           backward=True),
    Mutant(broadcast_kv_gradient_of_entry_zero, "broadcast k, v get batch entry 0's gradient",
           "generated-gradients", backward=True),
    Mutant(integer_mask_taken_as_bool, "integer attn_mask taken as bool", "attn-mask-dtype-refused"),
    Mutant(mask_key_stride_assumed_one, "mask expanded along the keys read with key stride 1",
           "generated-agreement"),
    Mutant(backward_drops_causal_with_mask, "backward drops is_causal beside attn_mask", "generated-gradients",
           backward=True),
)


class _ProbabilitiesInShapeWorkspace(FullAttention):
    """P kept for the backward in one preallocated buffer per shape (a workspace), aliased through .data,
    out of reach of autograd's version check."""
    workspace: dict = {}

    def backward_probabilities(self, p, s, unmasked, bias):
        key = (tuple(p.shape), p.dtype, p.device)
        buf = self.workspace.setdefault(key, torch.empty_like(p))
        return buf.copy_(p).data  # the bug: the next forward of this shape overwrites it


class _SavedProbabilitiesRescaledInPlace(FullAttention):
    def backward(self, ctx, dout):
        grads = super().backward(ctx, dout)
        ctx.saved_tensors[3].data.mul_(1.4426950408889634)  # the bug: P converted in place, once per backward
        return grads


class _SavedProbabilitiesFreedAfterBackward(FullAttention):
    def backward(self, ctx, dout):
        grads = super().backward(ctx, dout)
        ctx.saved_tensors[3].data.zero_()  # the bug: P "freed" after the first backward, retain_graph or not
        return grads


probabilities_in_shape_workspace = _full_mutant(_ProbabilitiesInShapeWorkspace(), "probabilities_in_shape_workspace",
    "The backward's P kept in one workspace per shape: forward(A), forward(B), backward(A) uses B's.")
saved_probabilities_rescaled_in_place = _full_mutant(_SavedProbabilitiesRescaledInPlace(),
    "saved_probabilities_rescaled_in_place",
    "The backward rescales the saved P in place: a second backward (retain_graph=True) reads it changed.")

saved_probabilities_freed_after_backward = _full_mutant(_SavedProbabilitiesFreedAfterBackward(),
    "saved_probabilities_freed_after_backward",
    "The backward zeroes the saved P to free it: a second backward (retain_graph=True) gets dq = dk = dv = 0.")

MUTANTS = MUTANTS + (
    Mutant(saved_probabilities_freed_after_backward, "saved P freed by the first backward (retain_graph)",
           "gradient-sequences", backward=True),
    Mutant(probabilities_in_shape_workspace, "backward state in a per-shape workspace (two layers)",
           "generated-gradients", backward=True),
    Mutant(saved_probabilities_rescaled_in_place, "saved P changed by the first backward (retain_graph)",
           "generated-gradients", backward=True),
)


def inputs_made_contiguous_in_place(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                    enable_gqa=False):
    """Non-contiguous inputs made contiguous on the caller's tensor objects (``t.data = ...``): values
    unchanged, but a view of a packed QKV buffer no longer sees the buffer."""
    for t in (q, k, v):
        if not t.is_contiguous():
            t.data = t.data.contiguous()  # the bug
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def grad_path_output_in_float32(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                enable_gqa=False):
    """The training path (inputs requiring grad) returns the float32 working output, not q's dtype."""
    out = full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    return out.float() if out.requires_grad else out  # the bug: no cast back on the grad path


MUTANTS = MUTANTS + (
    Mutant(inputs_made_contiguous_in_place, "caller's q, k, v made contiguous in place (.data)",
           "generated-agreement"),
    # in float32 the working dtype is q's
    Mutant(grad_path_output_in_float32, "grad path returns float32 for half q", "generated-gradients",
           dtypes=(torch.float16, torch.bfloat16), backward=True),
)


def grid_past_65535_dropped(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """One program per (batch, head) on a grid axis capped at 65535: the heads past it are never run (left 0)."""
    out = full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    if out.numel() == 0:
        return out
    flat = out.reshape(-1, *out.shape[-2:]).clone()  # (B·Hq, Nq, Dv)
    flat[65535:] = 0  # the bug
    return flat.reshape(out.shape)


def value_dim_past_256_dropped(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                               enable_gqa=False):
    """The output computed in one 256-wide chunk of value columns: columns past 256 left 0."""
    out = full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa).clone()
    out[..., 256:] = 0  # the bug
    return out


MUTANTS = MUTANTS + (
    Mutant(grid_past_65535_dropped, "(batch, head) programs past 65535 never run", "generated-agreement"),
    Mutant(value_dim_past_256_dropped, "value columns past 256 never written", "generated-agreement"),
)


def rank3_gqa_heads_tiled(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """Rank-3 (H, N, D) inputs under enable_gqa have their KV heads expanded with .repeat (head h reads KV
    head h % Hkv) instead of repeat_interleave (h // group); rank 4 is right."""
    if q.dim() == 3 and enable_gqa and k.shape[0] != q.shape[0]:
        group = q.shape[0] // k.shape[0]
        k, v = k.repeat(group, 1, 1), v.repeat(group, 1, 1)  # the bug: tiles the heads
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def kv_batch_broadcast_as_groups(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """k, v of batch 1 against q's batch B, flattened to (B·H) rows and grouped as GQA heads are: query row
    b·H + h reads KV row (b·H + h) // B instead of h."""
    if k.dim() == 4 and k.shape[0] == 1 < q.shape[0] and k.shape[1] == q.shape[1]:
        b, h = q.shape[:2]
        rows = torch.arange(b * h, device=q.device) // b  # the bug: should be % h
        k, v = (x[0][rows].reshape(b, h, *x.shape[2:]) for x in (k, v))  # (B, H, Nk, ·)
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(rank3_gqa_heads_tiled, "rank-3 GQA heads tiled, not grouped", "generated-agreement"),
    Mutant(kv_batch_broadcast_as_groups, "k, v batch broadcast read as GQA groups", "generated-agreement"),
)


# --------------------------------------------------------------------------- limits at lengths only long problems reach


class _CausalKeyPositionsInt16(BlockedAttention):
    def visible(self, n_q, n_k, device):
        i = torch.arange(n_q, device=device)[:, None]  # (Nq, 1)
        j = torch.arange(n_k, device=device).to(torch.int16).to(torch.int64)[None, :]  # the bug: wraps past 32767
        return j <= i  # (Nq, Nk)


class _TwoHundredFiftySixSplitsOnly(SplitKVAttention):
    def split_starts(self, n_k):
        return super().split_starts(n_k)[:256]  # the bug: partials for 256 splits; keys past 2¹⁸ unread


class _BackwardSixtyFourKeyTiles(FullAttention):
    def backward_probabilities(self, p, s, unmasked, bias):
        p = super().backward_probabilities(p, s, unmasked, bias).clone()
        p[..., 64 * 128:] = 0  # the bug: the backward's loop visits 64 key tiles of 128
        return p


class _DropoutSkippedPast2048Keys(FullAttention):
    def dropout_mask(self, p, dropout_p, kv_heads, dtype):
        if p.shape[-1] > 2048:
            return torch.ones_like(p)  # the bug: the long-KV path has no dropout
        return super().dropout_mask(p, dropout_p, kv_heads, dtype)


def split_kv_nan_sanitised(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    """The split-KV path's merged output passed through nan_to_num ('safety'): NaN in q, k or v of a long
    decode is hidden (the blocked path is right)."""
    out = SplitKVAttention()(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)
    split_path = q.shape[-2] <= SplitKVAttention.decode_queries and not is_causal and k.shape[-2] > SPLIT
    return torch.nan_to_num(out) if split_path else out  # the bug


causal_key_positions_int16 = _mutant(_CausalKeyPositionsInt16(), "causal_key_positions_int16",
    "Causal key positions held in int16: keys past 32767 wrap negative and every query sees them.")
split_kv_decode_256_splits = _mutant(_TwoHundredFiftySixSplitsOnly(), "split_kv_decode_256_splits",
    "Split-KV decoding with room for 256 splits of SPLIT keys: past 2¹⁸ keys the rest are never read.")
backward_64_key_tiles = _full_mutant(_BackwardSixtyFourKeyTiles(), "backward_64_key_tiles",
    "The backward visits at most 64 key tiles of 128: dk, dv of keys past 8192 are 0 and dq misses them.")
dropout_skipped_past_2048_keys = _full_mutant(_DropoutSkippedPast2048Keys(), "dropout_skipped_past_2048_keys",
    "Dropout skipped when Nk > 2048 (a long-KV path that never got it).")

MUTANTS = MUTANTS + (
    Mutant(causal_key_positions_int16, "causal key positions in int16 (past 32767)", "generated-agreement"),
    Mutant(split_kv_decode_256_splits, "split-K decoding drops keys past 256 splits", "generated-agreement"),
    Mutant(backward_64_key_tiles, "backward drops keys past 64 tiles", "generated-gradients", backward=True),
    Mutant(dropout_skipped_past_2048_keys, "dropout skipped past 2048 keys", "generated-dropout"),
    Mutant(split_kv_nan_sanitised, "split-K merge hides NaN", "generated-agreement"),
)


# --------------------------------------------------------------------------- dropout beside other axes


class _DropoutIgnoredInValueOnlyBackward(FullAttention):
    def backward(self, ctx, dout):
        # (q, k and the mask frozen: LoRA on the value projection) needs_input_grad: impl, q, k, v, attn_mask, ...
        self.value_only = ctx.needs_input_grad[3] and not any(ctx.needs_input_grad[1:3]) and not ctx.needs_input_grad[4]
        return super().backward(ctx, dout)

    def backward_dropout_mask(self, drop, p, dropout_p, kv_heads, dtype):
        return torch.ones_like(drop) if self.value_only else drop  # the bug: the dv-only path uses P, not P∘M/(1-p)


class _MaskGradientIgnoresDropout(FullAttention):
    def backward(self, ctx, dout):
        dq, dk, dv, dmask = super().backward(ctx, dout)
        q, k, v, p, drop = ctx.saved_tensors
        if dmask is not None and drop is not None:
            dp = dout.to(q.dtype) @ v.transpose(-2, -1)  # (B, H, Nq, Nk): the bug, dP without the dropout mask
            dmask = self.mask_gradient(p * (dp - (p * dp).sum(dim=-1, keepdim=True)), *ctx.meta[5])
        return dq, dk, dv, dmask


class _DropoutSkippedBelowHalfPercent(FullAttention):
    def dropout_mask(self, p, dropout_p, kv_heads, dtype):
        if dropout_p <= 0.005:
            return torch.ones_like(p)  # the bug: "negligible" dropout skipped, weights neither dropped nor rescaled
        return super().dropout_mask(p, dropout_p, kv_heads, dtype)


dropout_ignored_in_value_only_backward = _full_mutant(_DropoutIgnoredInValueOnlyBackward(),
    "dropout_ignored_in_value_only_backward",
    "With only v requiring grad the backward's dv is Pᵀ dO: the forward's dropout mask and rescale ignored.")
mask_gradient_ignores_dropout = _full_mutant(_MaskGradientIgnoresDropout(), "mask_gradient_ignores_dropout",
    "A learned additive mask's gradient from the undropped dP: dq, dk, dv right, dmask wrong under dropout.")
dropout_skipped_below_half_percent = _full_mutant(_DropoutSkippedBelowHalfPercent(),
    "dropout_skipped_below_half_percent", "dropout_p <= 0.005 treated as 0 (no drop, no rescale).")

MUTANTS = MUTANTS + (
    Mutant(dropout_ignored_in_value_only_backward, "dropout ignored when only v requires grad", "generated-dropout",
           backward=True),
    Mutant(mask_gradient_ignores_dropout, "mask gradient ignores dropout", "generated-dropout", backward=True),
    # the missing rescale 1/(1 - p), p <= 0.005, is within a rounding or two of bfloat16's kept weights, and of
    # float16's where P is small: seed 0's float16 draws with p <= 0.005 (three) do not show it
    Mutant(dropout_skipped_below_half_percent, "dropout skipped at p <= 0.005", "generated-dropout",
           dtypes=(torch.float32,)),
)


class _Float64InFloat32(FullAttention):
    def working_scores(self, q, k, v, scale, enable_gqa):
        if q.dtype == torch.float64:
            q, k, v = q.float(), k.float(), v.float()  # the bug: the kernel's fixed float32 compute dtype
        return super().working_scores(q, k, v, scale, enable_gqa)


float64_computed_in_float32 = _full_mutant(_Float64InFloat32(), "float64_computed_in_float32",
    "float64 inputs computed with float32 accumulators and cast back to float64.")

MUTANTS = MUTANTS + (
    # the float64 problems are judged in the float32 pass
    Mutant(float64_computed_in_float32, "float64 computed in float32", "float64-agreement", dtypes=(torch.float32,)),
)


def one_dim_mask_read_along_queries_when_square(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                                enable_gqa=False):
    """A 1-D attn_mask read as a query mask ((Nq, 1)) when Nq == Nk; SDPA reads it as (Nk,) always."""
    if attn_mask is not None and attn_mask.dim() == 1 and q.shape[-2] == k.shape[-2]:
        attn_mask = attn_mask[:, None]  # the bug: the square case takes the first matching dim
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(one_dim_mask_read_along_queries_when_square, "1-D mask read along the queries when Nq == Nk",
           "generated-agreement"),
)


class _BackwardGridCapped(FullAttention):
    def backward(self, ctx, dout):
        grads = list(super().backward(ctx, dout))
        for i, g in enumerate(grads[:3]):
            if g is not None and g.numel():
                flat = g.reshape(-1, *g.shape[-2:]).clone()  # (B·H, N, ·)
                flat[65535:] = 0  # the bug: one backward program per (batch, head) on a grid axis capped at 65535
                grads[i] = flat.reshape(g.shape)
        return tuple(grads)


backward_grid_capped = _full_mutant(_BackwardGridCapped(), "backward_grid_capped",
    "The backward's grid of (batch, head) programs is capped at 65535: the gradients of the heads past it stay 0 "
    "(the forward is right).")

MUTANTS = MUTANTS + (
    Mutant(backward_grid_capped, "backward (batch, head) programs past 65535 never run", "generated-gradients",
           backward=True),
)


class _MaskGradientOfQueryZero(FullAttention):
    def mask_gradient(self, ds, shape, dtype):
        if len(shape) >= 2 and shape[-2] == 1 and ds.shape[-2] > 1:
            ds = ds[..., :1, :]  # the bug: a key bias broadcast over queries gets query 0's dS, not the sum
        return super().mask_gradient(ds, shape, dtype)


mask_gradient_of_query_zero = _full_mutant(_MaskGradientOfQueryZero(), "mask_gradient_of_query_zero",
    "A learned key bias ((B, 1, 1, Nk), (1, 1, 1, Nk)) gets the first query's gradient instead of the sum over queries.")

MUTANTS = MUTANTS + (
    Mutant(mask_gradient_of_query_zero, "query-broadcast mask gets query 0's gradient", "generated-gradients",
           backward=True),
)


# the generator's fifth round (red team rt34h's escapes): bugs that need two features at once

QUERY_CHUNK = 4096  # queries per launch of a kernel whose grid is capped


def _query_chunks(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa, *, restart_positions=False,
                  batch_zero_kv=False, chunk=QUERY_CHUNK):
    """full_attention over chunks of ``chunk`` queries (the way a kernel with a capped grid is
    launched), with one of two bugs of the chunked path. A mask with a query dim is sliced with q."""
    n_q = q.shape[-2]
    if n_q <= chunk:
        return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    outs = []
    for i0 in range(0, n_q, chunk):
        qc = q[..., i0:i0 + chunk, :]
        m = attn_mask
        if m is not None and m.dim() >= 2 and m.shape[-2] > 1:
            m = m[..., i0:i0 + chunk, :]
        kc, vc = k, v
        if batch_zero_kv and k.dim() >= 4 and k.shape[0] > 1:
            kc, vc = k[:1].expand(k.shape), v[:1].expand(v.shape)  # the bug: one K/V base pointer for every batch entry
        if is_causal and not restart_positions:
            # a chunk's query i0 + i sees keys j <= i0 + i: as a mask, the chunk's rows of the full one
            rows = torch.arange(i0, i0 + qc.shape[-2], device=q.device)[:, None]  # (chunk, 1)
            seen = torch.arange(k.shape[-2], device=q.device)[None, :] <= rows  # (chunk, Nk)
            m = seen if m is None else (seen & m if m.dtype == torch.bool
                                        else m + torch.zeros(seen.shape, dtype=m.dtype).masked_fill(~seen, float("-inf")))
            outs.append(full_attention(qc, kc, vc, m, dropout_p, False, scale, enable_gqa))
        else:  # restart_positions: is_causal passed on, so each chunk's queries count from 0 (the bug)
            outs.append(full_attention(qc, kc, vc, m, dropout_p, is_causal, scale, enable_gqa))
    return torch.cat(outs, dim=-2)  # (..., Nq, Dv)


def causal_positions_restart_per_query_chunk(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                             enable_gqa=False):
    """Queries launched in chunks of 4096, is_causal passed to each launch: the queries of the second
    chunk on count their positions from 0 and see too few keys."""
    return _query_chunks(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa, restart_positions=True)


def causal_positions_restart_per_8192_queries(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                              enable_gqa=False):
    """As causal_positions_restart_per_query_chunk with chunks of 8192 queries (red team rt37h's, which
    escaped a regime that stopped at 4160 queries)."""
    return _query_chunks(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa, restart_positions=True,
                         chunk=2 * QUERY_CHUNK)


def query_chunks_read_batch_zero_kv(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                    enable_gqa=False):
    """Queries launched in chunks of 4096; the chunked path takes K/V's base pointer without the batch
    offset, so past 4096 queries every batch entry reads batch 0's keys and values."""
    return _query_chunks(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa, batch_zero_kv=True)


def causal_dropped_past_rank_4(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """Inputs of rank 5 and more flattened into rank 4 on a path that forgets is_causal."""
    if q.dim() >= 5:
        is_causal = False  # the bug
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def tiny_dropout_skipped(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """dropout_p below 1e-3 taken for 0 ("negligible"): nothing dropped, nothing rescaled."""
    return full_attention(q, k, v, attn_mask, 0.0 if dropout_p < 1e-3 else dropout_p, is_causal, scale, enable_gqa)


class _HeadDimTruncatedAt384(BlockedAttention):
    def scores(self, q, kb, scale):
        return (q[..., :384] * scale) @ kb[..., :384].transpose(-2, -1)  # the bug: built for D <= 384


head_dim_truncated_at_384 = _mutant(_HeadDimTruncatedAt384(), "head_dim_truncated_at_384",
    "Head dims past 384 truncated to their first 384 (red team rt37h's; the wide-head regime stopped at 255).")


class _Bfloat16StoredThroughFloat16(BlockedAttention):
    def stored(self, out, out_dtype):
        if out_dtype == torch.bfloat16:
            return out.to(torch.float16).to(out_dtype)  # the bug: the float16 epilogue, past 65504 inf
        return super().stored(out, out_dtype)


bfloat16_stored_through_float16 = _mutant(_Bfloat16StoredThroughFloat16(), "bfloat16_stored_through_float16",
    "A bfloat16 output stored through the float16 epilogue: values past 65504 become inf.")

MUTANTS = MUTANTS + (
    Mutant(causal_positions_restart_per_query_chunk, "causal positions restart in each chunk of 4096 queries",
           "generated-agreement"),
    Mutant(query_chunks_read_batch_zero_kv, "past 4096 queries every batch entry reads batch 0's K/V",
           "generated-agreement"),
    Mutant(causal_dropped_past_rank_4, "is_causal dropped for inputs of rank 5 and more", "generated-agreement"),
    Mutant(tiny_dropout_skipped, "dropout_p below 1e-3 taken for 0", "generated-dropout"),
    Mutant(causal_positions_restart_per_8192_queries, "causal positions restart in each chunk of 8192 queries",
           "generated-agreement"),
    Mutant(head_dim_truncated_at_384, "head dims past 384 truncated", "generated-agreement"),
    Mutant(bfloat16_stored_through_float16, "bfloat16 output stored through float16", "generated-agreement",
           dtypes=(torch.bfloat16,)),
)


# float64 paths (red team rt37h): a float64 forward right, and a path of float32 beside it

def float64_causal_in_float32(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    """float64 inputs with is_causal computed in float32 and cast back (the causal kernel has one compute dtype)."""
    if q.dtype == torch.float64 and is_causal:  # the bug
        return full_attention(q.float(), k.float(), v.float(), None, 0.0, True, scale, enable_gqa).to(q.dtype)
    return full_attention(q, k, v, None, 0.0, is_causal, scale, enable_gqa)


class _BackwardInFloat32(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, is_causal, scale, enable_gqa):
        ctx.save_for_backward(q, k, v)
        ctx.options = (is_causal, scale, enable_gqa)
        return full_attention(q, k, v, None, 0.0, is_causal, scale, enable_gqa)

    @staticmethod
    def backward(ctx, dout):
        q, k, v = ctx.saved_tensors
        with torch.enable_grad():
            leaves = [t.detach().float().requires_grad_() for t in (q, k, v)]  # the bug: float32 for every dtype
            out = full_attention(*leaves, None, 0.0, *ctx.options)
            grads = torch.autograd.grad(out, leaves, dout.float())
        return tuple(g.to(t.dtype) for g, t in zip(grads, (q, k, v))) + (None, None, None)


def float64_backward_in_float32(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    """The forward in the inputs' dtype; the backward recomputed in float32 (a backward kernel of one compute
    dtype): float64 gradients at float32's precision."""
    if q.dtype != torch.float64:
        return full_attention(q, k, v, None, 0.0, is_causal, scale, enable_gqa)
    return _BackwardInFloat32.apply(q, k, v, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(float64_causal_in_float32, "float64 causal computed in float32", "float64-causal", dtypes=(torch.float32,)),
    Mutant(float64_backward_in_float32, "float64 gradients computed in float32", "float64-gradients",
           dtypes=(torch.float32,), backward=True),
)


# dropout RNG offsets that wrap only past the small shapes (red team rt37h): dropout-long-lags

class _MaskRepeatsPast65536Keys(FullAttention):
    def uniforms(self, shape, generator, device, kv_heads):
        b, h, n_q, n_k = shape  # the bug: a 16-bit column offset, key j + 65536 draws key j's uniform
        u = super().uniforms((b, h, n_q, min(n_k, 2 ** 16)), generator, device, kv_heads)
        return u[..., torch.arange(n_k, device=device) % 2 ** 16]


class _MaskRepeatsPast4096Queries(FullAttention):
    def uniforms(self, shape, generator, device, kv_heads):
        b, h, n_q, n_k = shape  # the bug: the row offset modulo a 4096-query tile
        u = super().uniforms((b, h, min(n_q, 4096), n_k), generator, device, kv_heads)
        return u[:, :, torch.arange(n_q, device=device) % 4096]


class _MaskRepeatsPast16Heads(FullAttention):
    def uniforms(self, shape, generator, device, kv_heads):
        b, h, n_q, n_k = shape  # the bug: the head offset modulo 16
        u = super().uniforms((b, min(h, 16), n_q, n_k), generator, device, kv_heads)
        return u[:, torch.arange(h, device=device) % 16]


dropout_mask_repeats_past_65536_keys = _full_mutant(_MaskRepeatsPast65536Keys(), "dropout_mask_repeats_past_65536_keys",
    "The dropout RNG's column offset kept in 16 bits: keys j and j + 65536 share their keep draw.")
dropout_mask_repeats_past_4096_queries = _full_mutant(_MaskRepeatsPast4096Queries(),
    "dropout_mask_repeats_past_4096_queries",
    "The dropout RNG's row offset taken modulo 4096: query i + 4096 repeats query i's mask.")
dropout_mask_repeats_past_16_heads = _full_mutant(_MaskRepeatsPast16Heads(), "dropout_mask_repeats_past_16_heads",
    "The dropout RNG's head offset taken modulo 16: head h + 16 repeats head h's mask.")

MUTANTS = MUTANTS + (
    Mutant(dropout_mask_repeats_past_65536_keys, "dropout mask repeating past 65536 keys", "dropout-long-lags"),
    Mutant(dropout_mask_repeats_past_4096_queries, "dropout mask repeating past 4096 queries", "dropout-long-lags"),
    Mutant(dropout_mask_repeats_past_16_heads, "dropout mask repeating past 16 heads", "dropout-long-lags"),
)


class _BackwardQueryRowsCapped(FullAttention):
    def backward(self, ctx, dout):
        grads = list(super().backward(ctx, dout))
        if grads[0] is not None and grads[0].shape[-2] > 4096:
            grads[0] = grads[0].clone()
            grads[0][..., 4096:, :] = 0  # the bug: the dq pass launched over 4096 query rows at most
        return tuple(grads)


backward_query_rows_capped = _full_mutant(_BackwardQueryRowsCapped(), "backward_query_rows_capped",
    "dq written for the first 4096 query rows only (a dq grid sized for 4096 queries); the forward, dk and dv right.")

MUTANTS = MUTANTS + (
    Mutant(backward_query_rows_capped, "dq rows past 4096 left 0", "generated-gradients", backward=True),
)


def rank5_mask_read_as_first_batch(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                   enable_gqa=False):
    """A mask of 5 dims or more taken as its first leading entry (leading dims assumed to be 1): every batch
    entry reads batch 0's mask."""
    while attn_mask is not None and attn_mask.dim() > 4:
        attn_mask = attn_mask[0]  # the bug
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(rank5_mask_read_as_first_batch, "rank-5 mask read as its first batch entry", "generated-agreement"),
)


def numpy_rng_consumed(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """Every call draws from NumPy's global generator (an autotuner's random pick of a tile size): a caller's
    seeded NumPy stream moves under it."""
    import numpy as np

    np.random.rand()  # the bug
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(numpy_rng_consumed, "NumPy's global RNG consumed by every call", "global-state-unchanged", backward=True),
)


class _GqaGroupsTiledBy32(BlockedAttention):
    def head_index(self, hq, hkv, device):
        if hq // hkv > 32:  # the bug: a group tile of 32 query heads, KV head h // 32 (clamped to the last)
            return (torch.arange(hq, device=device) // 32).clamp(max=hkv - 1)
        return super().head_index(hq, hkv, device)


gqa_groups_tiled_by_32 = _mutant(_GqaGroupsTiledBy32(), "gqa_groups_tiled_by_32",
    "GQA groups past 32 read KV head h // 32 (a tile of 32 query heads per KV head).")

MUTANTS = MUTANTS + (
    Mutant(gqa_groups_tiled_by_32, "GQA groups past 32 tiled by 32", "generated-agreement"),
)


# --------------------------------------------------------------------------- dropout across call forms (red team rt40h)

def dropout_dropped_at_rank_3(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """A wrapper taking (B·H, N, D) and (B, 1, H, N, D) inputs to the 4-D kernel forwards every argument but
    dropout_p."""
    if q.dim() != 4:
        dropout_p = 0.0  # the bug
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def dropout_dropped_in_float64(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                               enable_gqa=False):
    """A float64 fallback (the fast kernel takes half types and float32) that forgets dropout_p."""
    if q.dtype == torch.float64:
        dropout_p = 0.0  # the bug
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def dropout_mask_shared_by_broadcast_batch(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                           enable_gqa=False):
    """k, v of batch 1 broadcast over q's batch: the RNG offset taken from k's batch index, so every batch entry
    draws the same keep mask."""
    if not (dropout_p > 0 and q.dim() == 4 and k.shape[0] == 1 < q.shape[0]):
        return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    state, outs = torch.get_rng_state(), []
    for b in range(q.shape[0]):
        torch.set_rng_state(state)  # the bug: one offset for every batch entry
        m = attn_mask if attn_mask is None or attn_mask.dim() < 4 or attn_mask.shape[0] == 1 else attn_mask[b:b + 1]
        outs.append(full_attention(q[b:b + 1], k, v, m, dropout_p, is_causal, scale, enable_gqa))
    return torch.cat(outs)


def dropout_negative_p_rescaled(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                enable_gqa=False):
    """dropout_p < 0 accepted: nothing dropped (u ≥ p always), every weight still scaled by 1/(1 - p)."""
    if dropout_p < 0:
        return full_attention(q, k, v, attn_mask, 0.0, is_causal, scale, enable_gqa) / (1 - dropout_p)  # the bug
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(dropout_dropped_at_rank_3, "rank-3/5 wrapper drops dropout_p", "generated-dropout"),
    Mutant(dropout_dropped_in_float64, "float64 fallback drops dropout_p", "generated-dropout"),
    Mutant(dropout_mask_shared_by_broadcast_batch, "one dropout mask for a broadcast k's batch entries",
           "generated-dropout"),
    Mutant(dropout_negative_p_rescaled, "dropout_p < 0 accepted and rescaled", "dropout-p-range"),
)


# --------------------------------------------------------------------------- GQA on the decode paths (red team rt40h)

class _SplitKvGqaModulo(SplitKVAttention):
    def head_index(self, hq, hkv, device):
        return torch.arange(hq, device=device) % hkv  # the bug, on the split-K decode path only


class _DecodeBackwardGqaModulo(ManualBackwardAttention):
    decode = False

    def backward(self, ctx, dout):
        self.decode = dout.shape[-2] == 1  # a decode step's backward: one query row
        return super().backward(ctx, dout)

    def group_gradients(self, grad, hkv):
        if not self.decode:
            return super().group_gradients(grad, hkv)
        b, hq = grad.shape[:2]
        # the bug: one query's backward sums query head h into KV head h % Hkv
        return grad.reshape(b, hq // hkv, hkv, *grad.shape[2:]).sum(1)  # (B, Hkv, Nk, D)


split_kv_gqa_modulo = _mutant(_SplitKvGqaModulo(), "split_kv_gqa_modulo",
    "Split-K decoding (one to eight queries past SPLIT keys) maps query head h to KV head h % Hkv.")
decode_backward_gqa_modulo = _mutant(_DecodeBackwardGqaModulo(), "decode_backward_gqa_modulo",
    "A one-query backward sums query head h's dk, dv into KV head h % Hkv, not h // (Hq / Hkv).")

MUTANTS = MUTANTS + (
    Mutant(split_kv_gqa_modulo, "split-K decoding maps heads h % Hkv", "generated-agreement"),
    Mutant(decode_backward_gqa_modulo, "one-query backward groups heads h % Hkv", "generated-gradients",
           backward=True),
)


class _Bfloat16MaskThroughFloat16(FullAttention):
    def mask_bias(self, attn_mask, like, dtype):
        if attn_mask is not None and attn_mask.dtype == torch.bfloat16:
            # the bug: a bfloat16 mask staged through a float16 buffer (entries past 65504 become ±inf)
            attn_mask = attn_mask.to(torch.float16).to(torch.bfloat16)
        return super().mask_bias(attn_mask, like, dtype)


bfloat16_mask_through_float16 = _full_mutant(_Bfloat16MaskThroughFloat16(), "bfloat16_mask_through_float16",
    "A bfloat16 additive mask staged through float16: a row at -1e20 becomes -inf (SDPA: the mean of v there).")

MUTANTS = MUTANTS + (
    Mutant(bfloat16_mask_through_float16, "bfloat16 mask staged through float16", "generated-agreement",
           dtypes=(torch.bfloat16,)),
)


def mask_rows_restart_per_query_chunk(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                      enable_gqa=False):
    """Queries in chunks of 4096 (a grid limit), each chunk reading the mask's rows from 0 again."""
    n = q.shape[-2]
    if attn_mask is None or n <= 4096 or attn_mask.dim() < 2 or attn_mask.shape[-2] == 1:
        return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    outs = [full_attention(q[..., i:i + 4096, :], k, v, attn_mask[..., :min(4096, n - i), :],  # the bug: not i:
                           dropout_p, is_causal, scale, enable_gqa) for i in range(0, n, 4096)]
    return torch.cat(outs, dim=-2)


MUTANTS = MUTANTS + (
    Mutant(mask_rows_restart_per_query_chunk, "query chunks of 4096 read the mask's first rows",
           "generated-gradients", backward=True),
)


class _CausalBiasCachedInPlace(FullAttention):
    """is_causal served by an additive bias cached per (Nq, Nk, dtype); a 2-D mask beside is_causal is added into
    the cached bias in place, so a later plain causal call of that shape also hides what the mask hid."""
    biases: dict = {}

    def __call__(self, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        if not is_causal or q.dim() != 4 or attn_mask is not None and (attn_mask.dim() > 2
                                                                     or attn_mask.dtype == torch.bool):
            return super().__call__(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
        n_q, n_k = q.shape[-2], k.shape[-2]
        key = (n_q, n_k, q.dtype, q.device)
        if key not in self.biases:
            seen = torch.ones(n_q, n_k, dtype=torch.bool, device=q.device).tril()
            self.biases[key] = torch.zeros(n_q, n_k, dtype=q.dtype, device=q.device).masked_fill(~seen, float("-inf"))
        bias = self.biases[key]  # (Nq, Nk)
        if attn_mask is not None:
            bias = bias.add_(attn_mask.to(q.dtype))  # the bug: in place, into the cached bias
        return super().__call__(q, k, v, bias, dropout_p, False, scale, enable_gqa)


causal_bias_cached_in_place = _full_mutant(_CausalBiasCachedInPlace(), "causal_bias_cached_in_place",
    "The causal bias is cached per shape and a 2-D mask beside is_causal is added into it in place.")

MUTANTS = MUTANTS + (
    Mutant(causal_bias_cached_in_place, "cached causal bias written into by a mask", "generated-agreement"),
)


def dropout_skipped_on_split_k_decode(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                      enable_gqa=False):
    """One query over more than SPLIT keys, no mask, not causal: a split-K decode path that has no dropout."""
    if q.shape[-2] == 1 and k.shape[-2] > SPLIT and attn_mask is None and not is_causal:
        dropout_p = 0.0  # the bug
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(dropout_skipped_on_split_k_decode, "split-K decode path without dropout", "generated-dropout"),
)


def numpy_errors_silenced(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """NumPy's floating-point warnings silenced for a host-side step and never restored."""
    import numpy as np

    np.seterr(all="ignore")  # the bug: the caller's error handling changed for good
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def gc_left_disabled_when_refusing(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                   enable_gqa=False):
    """The garbage collector paused around the call (fewer pauses mid-kernel) and re-enabled only on success."""
    import gc

    gc.disable()
    out = full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)  # raises on refused inputs
    gc.enable()  # the bug: not in a finally
    return out


MUTANTS = MUTANTS + (
    Mutant(numpy_errors_silenced, "NumPy's error handling changed and left", "global-state-unchanged", backward=True),
    Mutant(gc_left_disabled_when_refusing, "gc left disabled by a refused call", "global-state-unchanged",
           backward=True),
)


_KV_BY_BASE: dict = {}


def kv_cached_by_base_buffer(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """K and V prepacked and cached per (base buffer, shape, strides, version): two sibling views of one KV buffer
    (another storage offset) get the first one's K and V."""
    def base(x):
        return x._base if x._base is not None else x

    key = (id(base(k)), id(base(v)), tuple(k.shape), k.stride(), k._version, v._version, k.dtype)  # the bug: no offset
    if key not in _KV_BY_BASE:
        _KV_BY_BASE.clear()
        _KV_BY_BASE[key] = (k.detach().clone(), v.detach().clone())
    k_cached, v_cached = _KV_BY_BASE[key]
    return full_attention(q, k_cached, v_cached, attn_mask, dropout_p, is_causal, scale, enable_gqa)


_MASK_BY_OBJECT: dict = {}


def mask_cached_by_object(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """The attn_mask's conversion cached per mask object (a padding mask reused across steps), its version not
    in the key: a mask written in place is read as it was."""
    if attn_mask is not None:
        key = (id(attn_mask), tuple(attn_mask.shape), attn_mask.dtype)  # the bug: attn_mask._version left out
        if key not in _MASK_BY_OBJECT:
            _MASK_BY_OBJECT.clear()
            _MASK_BY_OBJECT[key] = attn_mask.detach().clone()
        attn_mask = _MASK_BY_OBJECT[key]
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(kv_cached_by_base_buffer, "K/V cached per base buffer without the storage offset",
           "buffers-mutated-between-calls"),
    Mutant(mask_cached_by_object, "attn_mask cached per object, its version ignored", "mask-mutated-between-calls"),
)


def scale_honoured_only_as_float(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """`scale if isinstance(scale, float) else None`: an int or NumPy scale falls back to 1/√D."""
    scale = scale if isinstance(scale, float) and type(scale) is float else None  # the bug
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def causal_tested_by_identity(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """`is_causal is True`: numpy.bool_(True), 1 or a tensor is accepted and read as not causal."""
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal is True, scale, enable_gqa)  # the bug


MUTANTS = MUTANTS + (
    Mutant(scale_honoured_only_as_float, "int or NumPy scale taken for None", "argument-types"),
    Mutant(causal_tested_by_identity, "is_causal tested by identity", "argument-types"),
)


class _AliasedQueryKeySymmetric(FullAttention):
    """A self-attention fast path: when q is k, dq and dk are taken as one, 2·dS·K·scale, as if dS were symmetric."""

    def __call__(self, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        if q is not k or not q.requires_grad:
            return super().__call__(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
        # the bug: dk's share replaced by dq's (both through the query slot)
        return super().__call__(q, q.detach(), v, attn_mask, dropout_p, is_causal, scale, enable_gqa) * 1.0 + (
            _query_twice(q, v, attn_mask, dropout_p, is_causal, scale, enable_gqa, self))


def _query_twice(q, v, attn_mask, dropout_p, is_causal, scale, enable_gqa, impl):
    """0 in value, dq's gradient in the graph: out(q, k = q) differentiated in the query slot once more."""
    out = FullAttention.__call__(impl, q, q.detach(), v.detach(), attn_mask, dropout_p, is_causal, scale, enable_gqa)
    return out - out.detach()


aliased_query_key_symmetric = _full_mutant(_AliasedQueryKeySymmetric(), "aliased_query_key_symmetric",
    "When q is k, the key slot's gradient is replaced by a second query-slot gradient (dS taken as symmetric).")

MUTANTS = MUTANTS + (
    Mutant(aliased_query_key_symmetric, "q is k: dk taken as dq (dS symmetric)", "aliased-inputs", backward=True),
)


class _AliasedKeyValueTwice(FullAttention):
    """A cross-attention fast path for one memory tensor as keys and values (`attn(q, m, m)`): the key slot's gradient
    added twice into the shared leaf (red team rt47's family; attn(x, x, x), q being k too, takes the plain path)."""

    def __call__(self, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        out = super().__call__(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
        if k is not v or q is k or not k.requires_grad:
            return out
        # the bug: dk once more in the graph (0 in value)
        again = FullAttention.__call__(self, q.detach(), k, v.detach(), attn_mask, dropout_p, is_causal, scale,
                                       enable_gqa)
        return out + (again - again.detach())


aliased_key_value_twice = _full_mutant(_AliasedKeyValueTwice(), "aliased_key_value_twice",
    "When k is v and q apart, the shared leaf's gradient holds dk twice.")

MUTANTS = MUTANTS + (
    Mutant(aliased_key_value_twice, "k is v, q apart: dk added twice", "aliased-inputs", backward=True),
)


class _HeadDimTemplate224(BlockedAttention):
    """Head dims dispatched to templates of 32, 64, …, 256 channels; the 224 template reads only 192 of them."""

    def scores(self, q, kb, scale):
        if 192 < q.shape[-1] <= 224:  # the bug: the 224 template's loads sized for 192
            return (q[..., :192] * scale) @ kb[..., :192].transpose(-2, -1)
        return super().scores(q, kb, scale)


class _DeterministicDropsTail(BlockedAttention):
    """Under torch.use_deterministic_algorithms(True), a fixed-order path over whole key blocks only."""

    def block_starts(self, n_k):
        if torch.are_deterministic_algorithms_enabled():
            return list(range(0, n_k - n_k % self.block, self.block))  # the bug: no partial last block
        return super().block_starts(n_k)


head_dim_template_224_reads_192 = _mutant(_HeadDimTemplate224(), "head_dim_template_224_reads_192",
    "Head dims 193..224 (a 224-channel template) score over their first 192 channels only.")
deterministic_mode_drops_tail = _mutant(_DeterministicDropsTail(), "deterministic_mode_drops_tail",
    "Under torch's deterministic mode the last, partial key block is skipped.")

MUTANTS = MUTANTS + (
    Mutant(head_dim_template_224_reads_192, "head dims 193..224 read 192 channels", "generated-agreement",
           backward=True),
    Mutant(deterministic_mode_drops_tail, "deterministic mode drops the partial key block", "generated-agreement",
           backward=True),
)


def mha_fastpath_switched_off(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """torch.backends.mha's fast path switched off for the whole process 'so nn.MultiheadAttention calls this'."""
    torch.backends.mha.set_fastpath_enabled(False)  # the bug: never restored
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(mha_fastpath_switched_off, "MHA fast path switched off process-wide", "global-state-unchanged",
           backward=True),
)



def _compressing_pack(t):
    return t.to(torch.float16) if t.dtype == torch.float32 else t


def _compressing_unpack(t):
    return t.float() if t.dtype == torch.float16 else t


def saved_tensor_hooks_leaked_on_refusal(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                         enable_gqa=False):
    """Activation compression entered by hand (saved_tensors_hooks.__enter__) before the argument checks: a call
    that is refused leaves the hooks on autograd's stack, and every later graph saves float16 copies."""
    hooks = torch.autograd.graph.saved_tensors_hooks(_compressing_pack, _compressing_unpack)
    hooks.__enter__()
    if k.dtype != q.dtype or v.dtype != q.dtype:  # the bug: raises with the hooks pushed
        raise RuntimeError(f"q, k, v must share a dtype; got {q.dtype}, {k.dtype}, {v.dtype}")
    try:
        return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    finally:
        hooks.__exit__(None, None, None)


def no_grad_output_from_inference_mode(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                       enable_gqa=False):
    """A 'faster' no-grad path run under inference_mode: the output is an inference tensor."""
    if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    with torch.inference_mode():  # the bug: the caller did not ask for inference tensors
        return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(saved_tensor_hooks_leaked_on_refusal, "saved-tensor hooks left pushed by a refused call",
           "global-state-unchanged", backward=True),
    Mutant(no_grad_output_from_inference_mode, "an inference tensor returned outside inference_mode",
           "output-dtype-shape"),
)


# dropout at the extremes (red team: tiny p, half-dtype uniforms, a 24-bit seed, slices past 65 535)

class _DropoutSkippedBelow1e4(FullAttention):
    def dropout_mask(self, p, dropout_p, kv_heads, dtype):
        if dropout_p < 1e-4:
            return torch.ones_like(p)  # the bug: "negligible" dropout skipped (p < 1e-4 taken for 0)
        return super().dropout_mask(p, dropout_p, kv_heads, dtype)


class _DropoutUniformsInInputDtype(FullAttention):
    def dropout_mask(self, p, dropout_p, kv_heads, dtype):
        u = torch.rand(p.shape, dtype=dtype, device=p.device)  # the bug: uniforms in q's (half) dtype
        return self.rescaled(self.kept(u, dropout_p).to(p.dtype), dropout_p, dtype)


class _TwentyFourBitSeed(FullAttention):
    def generator(self, device):
        # the bug: a per-call seed read from one float32 uniform (2²⁴ values): masks repeat after ~4000 calls
        seed = int(torch.rand(()) * 2 ** 31)
        return torch.Generator(device=device).manual_seed(seed)


class _ThirtyOneBitSeed(FullAttention):
    def generator(self, device):
        seed = int(torch.randint(2 ** 31 - 1, ()))  # the bug: a 31-bit per-call seed: masks repeat after ~2^16 calls
        return torch.Generator(device=device).manual_seed(seed)


class _SliceOffsetWrapsAt65535(FullAttention):
    def uniforms(self, shape, generator, device, kv_heads):
        b, h, n_q, n_k = shape  # the bug: the (batch, head) slice's RNG offset taken modulo 65 535 (CUDA's grid y limit)
        slices = b * h
        u = super().uniforms((min(slices, 65535), n_q, n_k), generator, device, kv_heads)
        return u[torch.arange(slices, device=device) % 65535].reshape(shape)


dropout_skipped_below_1e4 = _full_mutant(_DropoutSkippedBelow1e4(), "dropout_skipped_below_1e4",
    "dropout_p < 1e-4 treated as 0: no weight dropped.")
dropout_uniforms_in_input_dtype = _full_mutant(_DropoutUniformsInInputDtype(), "dropout_uniforms_in_input_dtype",
    "Dropout's uniforms drawn in the input's dtype: in float16 P(u < p) = p + 2^-12, in bfloat16 p + 2^-9.")
dropout_seed_24_bits = _full_mutant(_TwentyFourBitSeed(), "dropout_seed_24_bits",
    "A per-call dropout generator seeded from int(torch.rand(()) * 2**31): 2^24 seeds.")
# (caught by the thorough run's seed-space case alone, so judged by test_rt57_families, not among MUTANTS)
dropout_seed_31_bits = _full_mutant(_ThirtyOneBitSeed(), "dropout_seed_31_bits",
    "A per-call dropout generator seeded from torch.randint(2**31 - 1) (red team rt57): 2^31 seeds.")
dropout_slice_offset_wraps_at_65535 = _full_mutant(_SliceOffsetWrapsAt65535(), "dropout_slice_offset_wraps_at_65535",
    "The dropout RNG offset of (batch, head) slice s is that of s mod 65535: slices 65535 apart share a mask.")

MUTANTS = MUTANTS + (
    Mutant(dropout_skipped_below_1e4, "dropout skipped at p < 1e-4", "dropout-tiny-p"),
    # in float32 torch.rand in q's dtype is the reference's own draw
    Mutant(dropout_uniforms_in_input_dtype, "dropout uniforms drawn in the input's half dtype", "dropout-tiny-p",
           dtypes=(torch.float16, torch.bfloat16)),
    Mutant(dropout_seed_24_bits, "dropout seed of 24 bits (masks repeat after ~4000 calls)", "dropout-seed-space",
           dtypes=(torch.float32,)),
    Mutant(dropout_slice_offset_wraps_at_65535, "dropout RNG slice offset wrapping at 65535 slices",
           "dropout-many-slices"),
)


def dropout_only_for_python_float(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                  enable_gqa=False):
    """dropout applied only when dropout_p is a Python float: a NumPy float32 or a 0-d tensor (both accepted by
    SDPA) is taken for 0."""
    p = dropout_p if isinstance(dropout_p, float) else 0.0  # the bug
    return full_attention(q, k, v, attn_mask, p, is_causal, scale, enable_gqa)


def flash_attn_argument_order(q, k, v, attn_mask=None, dropout_p=0.0, scale=None, is_causal=False, enable_gqa=False):
    """A wrapper in flash_attn_func's order (softmax_scale before causal): a positional caller's is_causal
    becomes the scale, and the call runs without the causal mask."""
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def causal_unless_false_by_identity(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                    enable_gqa=False):
    """is_causal tested as `is not False`: numpy.bool_(False), 0 and tensor(False) turn the causal mask on (SDPA
    refuses each of them)."""
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal is not False, scale, enable_gqa)  # the bug


MUTANTS = MUTANTS + (
    Mutant(causal_unless_false_by_identity, "is_causal tested by identity with False", "argument-types"),
    Mutant(dropout_only_for_python_float, "dropout_p honoured only as a Python float", "generated-dropout"),
    Mutant(flash_attn_argument_order, "scale and is_causal in flash_attn_func's positional order",
           "generated-agreement"),
)


# --------------------------------------------------------------------------- red team rt42h's batched decodes,
# per-head rank-3 masks and retain_graph with dropout (regimes long-decode-batched, long-decode-padded,
# rank-head-mask; generated-dropout's retain-graph sequence)


class _SplitWorkspaceWithoutBatch(SplitKVAttention):
    def __call__(self, q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
        out = super().__call__(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)
        if (q.dim() == 4 and q.shape[0] > 1 and q.shape[-2] <= self.decode_queries and not is_causal
                and k.shape[-2] > self.split):
            # the bug: one (splits, Hq, Nq, Dv) workspace for every batch entry, merged after the last one wrote it
            out = out[-1:].expand_as(out).clone()
        return out


class _DecodeMaskOfEntryZero(FullAttention):
    def mask_bias(self, attn_mask, like, dtype):
        if (attn_mask is not None and attn_mask.dim() == 4 and attn_mask.shape[0] > 1 and like.shape[-2] == 1
                and like.shape[-1] > SPLIT):
            attn_mask = attn_mask[:1].expand(attn_mask.shape)  # the bug: the decode path's mask pointer stays at entry 0
        return super().mask_bias(attn_mask, like, dtype)


class _DecodeMergeNaNForEmptyRow(FullAttention):
    def probabilities(self, s, attn_mask):
        p = super().probabilities(s, attn_mask)
        if s.shape[-2] == 1 and s.shape[-1] > SPLIT:
            # the bug: the split-K merge Σ w_c o_c / Σ w_c with every split's w_c = 0 for a row with no visible key
            p = p.masked_fill(torch.isneginf(s).all(dim=-1, keepdim=True), float("nan"))
        return p


class _KeepMaskRedrawnOnSecondBackward(FullAttention):
    redraw = False

    def backward(self, ctx, dout):
        again, ctx.backward_ran = getattr(ctx, "backward_ran", False), True
        self.redraw = again  # the bug: the keep mask was freed by the first backward; a second one draws anew
        try:
            return super().backward(ctx, dout)
        finally:
            self.redraw = False

    def backward_dropout_mask(self, drop, p, dropout_p, kv_heads, dtype):
        if self.redraw:
            return self.dropout_mask(p, dropout_p, kv_heads, dtype)
        return super().backward_dropout_mask(drop, p, dropout_p, kv_heads, dtype)


split_kv_workspace_without_batch = _mutant(_SplitWorkspaceWithoutBatch(), "split_kv_workspace_without_batch",
    "Split-KV decoding whose partials' workspace has no batch dim: every entry merges the last entry's partials.")
decode_mask_of_entry_zero = _full_mutant(_DecodeMaskOfEntryZero(), "decode_mask_of_entry_zero",
    "One query over more than SPLIT keys (a decode path) reads batch entry 0's mask for every entry.")
decode_merge_nan_for_empty_row = _full_mutant(_DecodeMergeNaNForEmptyRow(), "decode_merge_nan_for_empty_row",
    "One query over more than SPLIT keys: a row with no visible key merges to NaN (0/0), where SDPA gives 0.")
keep_mask_redrawn_on_second_backward = _full_mutant(_KeepMaskRedrawnOnSecondBackward(),
    "keep_mask_redrawn_on_second_backward",
    "The dropout keep mask is freed by the first backward; retain_graph's second backward draws another one.")


def rank3_mask_of_head_zero(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """Rank-3 inputs (B·H, N, D) taken as one unbatched head group: a 3-D mask's first entry is used for all."""
    if q.dim() == 3 and attn_mask is not None and attn_mask.dim() == 3:
        attn_mask = attn_mask[0]  # the bug: (B·H, Nq, Nk) read as "unbatched", head 0's rows for every head
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(split_kv_workspace_without_batch, "split-K workspace without a batch dim", "generated-agreement"),
    Mutant(decode_mask_of_entry_zero, "decode path reads batch entry 0's mask", "generated-agreement"),
    Mutant(decode_merge_nan_for_empty_row, "decode merge NaN for a row without keys", "generated-agreement"),
    Mutant(rank3_mask_of_head_zero, "rank-3 per-head mask: head 0's for all", "generated-agreement"),
    Mutant(keep_mask_redrawn_on_second_backward, "retain_graph's second backward redraws the keep mask",
           "generated-dropout", backward=True),
)


_SCRATCH: dict = {}


def shared_score_scratch(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """Inference without grad or dropout writes its scores into one module-level buffer per shape, shared by every
    caller: two threads calling at once read each other's scores."""
    if (torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v))) or dropout_p or attn_mask is not None \
            or q.dim() != 4:
        return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    if enable_gqa and k.shape[1] != q.shape[1]:
        k, v = (x.repeat_interleave(q.shape[1] // x.shape[1], dim=1) for x in (k, v))
    shape = (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])
    s = _SCRATCH.setdefault(shape, torch.empty(shape))  # the bug: one workspace for every caller and thread
    torch.matmul(q.float(), k.float().transpose(-2, -1), out=s)  # (B, H, Nq, Nk)
    s.mul_(1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if is_causal:
        s.masked_fill_(~torch.ones(shape[-2:], dtype=torch.bool).tril(), float("-inf"))
    return torch.softmax(s, dim=-1).matmul(v.float()).to(q.dtype)


MUTANTS = MUTANTS + (
    Mutant(shared_score_scratch, "a score workspace shared by concurrent callers", "concurrent-calls",
           dtypes=(torch.float32,)),
)


# --------------------------------------------------------------------------- red team rt43h's families: state by path
# and across calls, judged around every drawn problem (generate.check_problem, PRIOR_CALLS)

LONG_DECODE_KEYS = 4096  # past it, the "decode path" of the mutants below (the long-decode regimes draw 2¹⁴ and more)


class _FlushToZeroOnLongDecode(FullAttention):
    def forward(self, ctx, q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa):
        if q.shape[-2] == 1 and k.shape[-2] > LONG_DECODE_KEYS:
            torch.set_flush_denormal(True)  # the bug: a speed-up for the long decode loop, never put back
        return super().forward(ctx, q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


class _FloatMaskPromotesOutput(FullAttention):
    def forward(self, ctx, q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa):
        out = super().forward(ctx, q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
        if attn_mask is not None and attn_mask.is_floating_point() and attn_mask.dtype != q.dtype:
            return out.to(torch.promote_types(q.dtype, attn_mask.dtype))  # the bug: the mask's dtype promotes
        return out


_STRIDELESS: dict = {}


def _staged(x: torch.Tensor | None) -> torch.Tensor | None:
    """A contiguous copy of x, reused while x's storage lives: keyed by (data_ptr, shape, dtype, version)."""
    if x is None:
        return None
    root = x if x._base is None else x._base
    key = (x.data_ptr(), tuple(x.shape), x.dtype, x._version)
    held = _STRIDELESS.get(key)
    if held is not None and held[0]() is root:
        return held[1]  # the bug: the strides are not in the key
    staged = x.detach().contiguous().clone()
    _STRIDELESS[key] = (weakref.ref(root), staged)
    while len(_STRIDELESS) > 8:  # bounded: the oldest out
        _STRIDELESS.pop(next(iter(_STRIDELESS)))
    return staged


def staged_inputs_without_strides(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                  enable_gqa=False):
    """Inference calls stage k, v and the mask into contiguous buffers reused while the caller's storage lives,
    keyed by (data_ptr, shape, dtype, version): another view of the same storage gets the stale buffer."""
    if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    return full_attention(q, _staged(k), _staged(v), _staged(attn_mask), dropout_p, is_causal, scale, enable_gqa)


flush_to_zero_on_long_decode = _full_mutant(_FlushToZeroOnLongDecode(), "flush_to_zero_on_long_decode",
    "One query over more than 4096 keys turns flush-to-zero on for the process (a decode speed-up) and leaves it on.")
float_mask_promotes_output = _full_mutant(_FloatMaskPromotesOutput(), "float_mask_promotes_output",
    "An additive mask of another float dtype (float32 beside half q) promotes the output to the mask's dtype.")

_MEMO: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()


def output_memo_held_weakly(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """Inference outputs memoised while alive, keyed by the inputs' (data_ptr, version, shape, strides) and the
    arguments: the same call again returns the earlier output object itself, whatever the caller wrote into it."""
    if dropout_p or torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    tensors = (q, k, v) + (() if attn_mask is None else (attn_mask,))
    key = tuple((t.data_ptr(), t._version, tuple(t.shape), t.stride(), t.dtype) for t in tensors) + (
        attn_mask is None, float(dropout_p), bool(is_causal), None if scale is None else float(scale), enable_gqa)
    out = _MEMO.get(key)
    if out is None:
        out = full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
        _MEMO[key] = out
    return out  # the bug: the memo's object, not a copy


_HIDDEN: dict = {}


def inference_cached_hidden_mask(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """Without dropout, plain autograd ops with the hidden-key mask cached per (Nq, Nk, causal): built
    under inference_mode it is an inference tensor, which masked_fill then saves for a training call's backward."""
    if dropout_p or q.dim() != 4:
        return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    n_q, n_k = q.shape[-2], k.shape[-2]
    key = (n_q, n_k, bool(is_causal), q.device)
    if key not in _HIDDEN:  # the bug: cached whatever the mode it was built in
        _HIDDEN[key] = (~torch.ones(n_q, n_k, dtype=torch.bool, device=q.device).tril()) if is_causal \
            else torch.zeros(n_q, n_k, dtype=torch.bool, device=q.device)
    if enable_gqa and k.shape[1] != q.shape[1]:
        k, v = (x.repeat_interleave(q.shape[1] // x.shape[1], dim=1) for x in (k, v))
    s = (q.float() @ k.float().transpose(-2, -1)) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if attn_mask is not None:
        s = s + FullAttention().mask_bias(attn_mask, s, q.dtype)
    s = s.masked_fill(_HIDDEN[key], float("-inf"))  # (B, H, Nq, Nk)
    empty = torch.isneginf(s).all(-1, keepdim=True)
    p = torch.softmax(s.masked_fill(empty, 0.0), -1).masked_fill(empty, 0.0)
    return (p @ v.float()).to(q.dtype)


MUTANTS = MUTANTS + (
    Mutant(flush_to_zero_on_long_decode, "flush-to-zero left on by the long-decode path only", "generated-agreement"),
    Mutant(float_mask_promotes_output, "a float32 mask promotes a half output", "generated-agreement",
           dtypes=(torch.float16, torch.bfloat16)),
    Mutant(staged_inputs_without_strides, "staged k, v and mask cached without their strides", "generated-agreement"),
    Mutant(output_memo_held_weakly, "outputs memoised weakly and returned by reference", "generated-agreement"),
    Mutant(inference_cached_hidden_mask, "a mask cached as an inference tensor breaks training calls",
           "generated-agreement"),
)


BATCH_CHUNK = 16


def batch_chunks_mask_from_entry_zero(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                      enable_gqa=False):
    """More than 16 batch entries run in chunks of 16; a per-entry mask is sliced from entry 0 in every chunk."""
    if q.dim() != 4 or q.shape[0] <= BATCH_CHUNK:
        return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    outs = []
    for start in range(0, q.shape[0], BATCH_CHUNK):
        n = min(BATCH_CHUNK, q.shape[0] - start)
        m = attn_mask
        if m is not None and m.dim() == 4 and m.shape[0] > 1:
            m = m[:n]  # the bug: m[start:start + n]
        kv = [x if x.shape[0] == 1 else x[start:start + n] for x in (k, v)]
        outs.append(full_attention(q[start:start + n], *kv, m, dropout_p, is_causal, scale, enable_gqa))
    return torch.cat(outs)


def float64_through_float32_past_1024_keys(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                           enable_gqa=False):
    """float64 inputs over more than 1024 keys routed through the float32 kernel and cast back."""
    if q.dtype == torch.float64 and k.shape[-2] > 1024:
        m = attn_mask.float() if attn_mask is not None and attn_mask.is_floating_point() else attn_mask
        return full_attention(q.float(), k.float(), v.float(), m, dropout_p, is_causal, scale,
                              enable_gqa).double()
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(batch_chunks_mask_from_entry_zero, "batch chunks of 16 read the mask from entry 0", "generated-agreement"),
    # (float64 problems are drawn by the float64-long regime in every dtype's run)
    Mutant(float64_through_float32_past_1024_keys, "float64 through a float32 kernel past 1024 keys",
           "generated-agreement"),
)


# --------------------------------------------------------------------------- dropout RNG counters that wrap or
# restart along one slice's axis, at a length or on a path the other dropout checks never take: dropout-axis-periods


class _RowCounter16Bits(FullAttention):
    def uniforms(self, shape, generator, device, kv_heads):
        b, h, n_q, n_k = shape  # the bug: the RNG's row (query) counter kept in 16 bits: row i + 65536 draws row i's
        u = super().uniforms((b, h, min(n_q, 2 ** 16), n_k), generator, device, kv_heads)
        return u[:, :, torch.arange(n_q, device=device) % 2 ** 16]


class _DecodeOffsetRestartsPerSplit(FullAttention):
    split = SPLIT  # keys per split of the decode path

    def uniforms(self, shape, generator, device, kv_heads):
        b, h, n_q, n_k = shape
        if n_q != 1 or n_k <= self.split:
            return super().uniforms(shape, generator, device, kv_heads)
        # the bug: one query's keys split like split-K decoding, each split's RNG key offset restarting at 0
        u = super().uniforms((b, h, 1, self.split), generator, device, kv_heads)
        return u[..., torch.arange(n_k, device=device) % self.split]


dropout_row_counter_16_bits = _full_mutant(_RowCounter16Bits(), "dropout_row_counter_16_bits",
    "The dropout RNG's row counter kept in 16 bits: rows i and i + 65536 of a slice share their keep masks.")
decode_dropout_offset_restarts_per_split = _full_mutant(_DecodeOffsetRestartsPerSplit(),
    "decode_dropout_offset_restarts_per_split",
    "One query over more than SPLIT keys (a split-K decode path): each split of 1024 keys restarts the dropout RNG's "
    "key offset, so key j keeps or drops as key j mod 1024 does.")

MUTANTS = MUTANTS + (
    Mutant(dropout_row_counter_16_bits, "dropout row counter of 16 bits (rows 65536 apart share masks)",
           "dropout-axis-periods"),
    Mutant(decode_dropout_offset_restarts_per_split, "decode dropout offset restarting per key split",
           "dropout-axis-periods"),
)


# --------------------------------------------------------------------------- shapes SDPA refuses or broadcasts


def kv_batch_larger_than_q_accepted(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                    enable_gqa=False):
    """k and v with more batch entries than q (a KV cache allocated for the largest batch) read over q's first
    entries, where SDPA refuses: batch dims must broadcast."""
    if q.dim() == k.dim() == v.dim() and k.shape[0] > q.shape[0] and v.shape[0] > q.shape[0]:
        k, v = k[:q.shape[0]], v[:q.shape[0]]  # the bug: the extra entries silently dropped
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


class _ValueHeadsThroughKeyMap(FullAttention):
    def kv_for_query_heads(self, q, k, v, enable_gqa):
        hq, hkv = q.shape[1], k.shape[1]
        if hq == hkv or v.shape[1] == hkv or (not enable_gqa and hkv != 1):
            return super().kv_for_query_heads(q, k, v, enable_gqa)
        index = self.head_index(hq, hkv, q.device)
        return k[:, index], v[:, index]  # the bug: v's heads read through k's GQA map, not v's own


value_heads_read_through_key_map = _full_mutant(_ValueHeadsThroughKeyMap(), "value_heads_read_through_key_map",
    "v with a head count other than k's (SDPA accepts each dividing Hq) read through k's GQA map.")


# --------------------------------------------------------------------------- arguments kept after the call


_OUTPUT_MEMO: dict = {}


def output_memo_by_reference(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """Without grad or dropout, the output memoised by the inputs' (data_ptr, version, shape, strides) and the
    cached tensor returned by reference; the memo holds the inputs too (so their addresses are not reused) and
    is never emptied."""
    tensors = [t for t in (q, k, v, attn_mask) if isinstance(t, torch.Tensor)]
    if (torch.is_grad_enabled() and any(t.requires_grad for t in tensors)) or dropout_p \
            or any(t.is_inference() for t in tensors):  # (an inference tensor has no version counter)
        return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    key = (tuple((t.data_ptr(), t._version, t.shape, t.stride(), t.dtype) for t in tensors),
           attn_mask is None, is_causal, scale, enable_gqa)
    if key not in _OUTPUT_MEMO:  # the bug: every call's inputs and output kept for good
        _OUTPUT_MEMO[key] = (tensors, full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa))
    return _OUTPUT_MEMO[key][1]


@functools.lru_cache(maxsize=None)  # the bug: unbounded, keyed by the mask tensor: every caller's mask kept alive
def _bool_mask_bias(mask, version, dtype, device):
    return torch.zeros(mask.shape, dtype=dtype, device=device).masked_fill(~mask, float("-inf"))


class _MaskCacheUnbounded(FullAttention):
    def mask_bias(self, attn_mask, like, dtype):
        if attn_mask is None or attn_mask.dtype != torch.bool or attn_mask.is_inference():
            return super().mask_bias(attn_mask, like, dtype)
        return _bool_mask_bias(attn_mask, attn_mask._version, like.dtype, like.device)  # (version: never stale)


mask_cache_unbounded = _full_mutant(_MaskCacheUnbounded(), "mask_cache_unbounded",
    "Boolean masks converted to additive ones through an unbounded functools.lru_cache keyed by the mask tensor.")


MUTANTS = MUTANTS + (
    Mutant(kv_batch_larger_than_q_accepted, "k/v batch larger than q's accepted", "shape-contract"),
    Mutant(value_heads_read_through_key_map, "v's heads read through k's GQA map", "shape-contract"),
    Mutant(output_memo_by_reference, "an output memo returning the cached tensor by reference",
           "arguments-released"),
    Mutant(mask_cache_unbounded, "an unbounded cache of converted masks keyed by the mask", "arguments-released"),
)


# --------------------------------------------------------------------------- non-finite inputs on fast paths


def one_key_fast_path_returns_v(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                enable_gqa=False):
    """Over one key (and no mask or dropout) every weight is 1: v is returned as each query's output, its scores
    never computed, so a NaN or infinity in q or k vanishes."""
    if k.shape[-2] == 1 and attn_mask is None and not dropout_p and q.dim() == 4 and q.shape[-2] > 0:
        if enable_gqa and v.shape[1] != q.shape[1]:
            v = v.repeat_interleave(q.shape[1] // v.shape[1], dim=1)
        return v.expand(*torch.broadcast_shapes(q.shape[:-2], v.shape[:-2]), q.shape[-2], v.shape[-1]).clone()
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


SKIP_BELOW = -88.0  # exp of less is below float32's smallest normal: the block "contributes nothing"


def underflowed_key_blocks_skipped(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                   enable_gqa=False):
    """Key blocks of 64 whose scores all fall SKIP_BELOW under their rows' maxima are skipped (their weights
    underflow anyway): a NaN or infinity in such a block's v never reaches the output."""
    if attn_mask is not None or dropout_p or is_causal or q.dim() != 4 or 0 in q.shape or 0 in k.shape:
        return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    if enable_gqa and k.shape[1] != q.shape[1]:
        k, v = (x.repeat_interleave(q.shape[1] // x.shape[1], dim=1) for x in (k, v))
    work = torch.promote_types(q.dtype, torch.float32)
    s = (q.to(work) @ k.to(work).transpose(-2, -1)) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    below = (s - s.amax(-1, keepdim=True)) < SKIP_BELOW  # (B, H, Nq, Nk)
    keep = torch.ones(k.shape[-2], dtype=torch.bool)
    for start in range(0, k.shape[-2], 64):
        if bool(below[..., start:start + 64].all()):
            keep[start:start + 64] = False  # the bug: a NaN in v there is dropped with the block
    p = FullAttention().softmax_rows(s)[..., keep]  # (B, H, Nq, kept keys)
    return (p @ v.to(work)[..., keep, :]).to(q.dtype)


MUTANTS = MUTANTS + (
    Mutant(one_key_fast_path_returns_v, "one-key fast path returning v (NaN in q or k hidden)", "generated-agreement"),
    Mutant(underflowed_key_blocks_skipped, "key blocks of underflowing weights skipped (NaN in v hidden)",
           "generated-agreement"),
)


# backward paths the drawn gradient problems never reached: a non-finite dO, a backward under a drawn mode (torch's
# deterministic mode), gradients held while the next backward of the shape runs (red team: each escaped)


class _BackwardClampsNonfiniteDout(ManualBackwardAttention):
    def upstream(self, dout):
        top = torch.finfo(dout.dtype).max
        return dout.clamp(-top, top)  # the bug: an infinite dO "sanitised" to the largest finite value


class _ScoreGradientNanToNum(ManualBackwardAttention):
    def score_gradient(self, p, dp, d):
        return torch.nan_to_num(p * (dp - d))  # the bug: NaN from dO (or the inputs) hidden as 0, ±inf as ±max


class _DeterministicBackwardDropsTailBlock(ManualBackwardAttention):
    def score_gradient(self, p, dp, d):
        ds = super().score_gradient(p, dp, d)  # (B, H, Nq, Nk)
        if torch.are_deterministic_algorithms_enabled():  # the fixed-order path's key loop: whole blocks only
            ds = ds.clone()
            ds[..., ds.shape[-1] - ds.shape[-1] % BLOCK:] = 0  # the bug: the partial last block never visited
        return ds


class _GradientsInPersistentBuffers(ManualBackwardAttention):
    workspace: dict = {}

    def backward(self, ctx, dout):
        grads = super().backward(ctx, dout)
        key = tuple((g.shape, g.dtype, g.device) for g in grads)
        held = self.workspace.setdefault(key, tuple(torch.empty_like(g) for g in grads))
        return tuple(h.copy_(g) for h, g in zip(held, grads))  # the bug: the next backward of this shape overwrites them


backward_clamps_nonfinite_dout = _mutant(_BackwardClampsNonfiniteDout(), "backward_clamps_nonfinite_dout",
    "The backward clamps dO to the finite range: an infinite dO gives finite gradients where SDPA's are not.")
backward_score_gradient_nan_to_num = _mutant(_ScoreGradientNanToNum(), "backward_score_gradient_nan_to_num",
    "The backward runs dS through nan_to_num: a NaN in dO leaves dq's row and dk finite, SDPA's NaN.")
deterministic_backward_drops_tail_block = _mutant(_DeterministicBackwardDropsTailBlock(),
    "deterministic_backward_drops_tail_block",
    "Under torch.use_deterministic_algorithms(True) the backward's key loop skips the partial last block of 16 keys.")
gradients_in_persistent_buffers = _mutant(_GradientsInPersistentBuffers(), "gradients_in_persistent_buffers",
    "dq, dk, dv returned in one buffer per shape: the next backward of that shape changes the caller's gradients.")

MUTANTS = MUTANTS + (
    Mutant(backward_clamps_nonfinite_dout, "an infinite dO clamped to the finite range in the backward",
           "generated-gradients", backward=True),
    Mutant(backward_score_gradient_nan_to_num, "dS through nan_to_num in the backward", "generated-gradients",
           backward=True),
    Mutant(deterministic_backward_drops_tail_block, "deterministic-mode backward drops the partial last key block",
           "generated-gradients", backward=True),
    Mutant(gradients_in_persistent_buffers, "gradients in per-shape buffers the next backward overwrites",
           "generated-gradients", backward=True),
)


_RECOMPUTE_STASH: list = []


class _InputsStashedForRecompute(FullAttention):
    def forward(self, ctx, q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa):
        _RECOMPUTE_STASH.append((q, k, v))  # the bug: a recompute stash outside ctx, never emptied
        return super().forward(ctx, q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def inputs_stashed_for_recompute(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """Training calls (an input requiring grad) append q, k, v to a module-level recompute stash that nothing
    empties: every step's inputs stay alive."""
    if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        return _InputsStashedForRecompute()(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(inputs_stashed_for_recompute, "training inputs stashed outside ctx, never freed",
           "arguments-released-backward", backward=True),
)


# --------------------------------------------------------------------------- red team rt44h: one feature wrong on one
# path only (a split-KV prefill, a split-K decode, a broadcast k, v), which the regimes' one-axis-at-a-time problems
# never paired: the covering array's rows (paths.py) meet every (path, feature) pair in every run

PREFILL_QUERIES, PREFILL_KEYS, PREFILL_SPLIT = 16, 8192, 4096  # the split-KV prefill path of the mutant below


class _PrefillSplitsReadMaskFromColumnZero(FullAttention):
    def mask_bias(self, attn_mask, like, dtype):
        bias = super().mask_bias(attn_mask, like, dtype)
        n_q, n_k = like.shape[-2:]
        if bias is None or n_q < PREFILL_QUERIES or n_k <= PREFILL_KEYS or bias.shape[-1] == 1:
            return bias
        # the bug: each split of PREFILL_SPLIT keys reads the mask's columns from 0, not from its own first key
        return bias[..., torch.arange(n_k, device=bias.device) % PREFILL_SPLIT]


class _SpeculativeDecodeDropoutRestartsPerSplit(FullAttention):
    def uniforms(self, shape, generator, device, kv_heads):
        b, h, n_q, n_k = shape
        if not 2 <= n_q <= 8 or n_k <= 2 * SPLIT:
            return super().uniforms(shape, generator, device, kv_heads)
        # the bug: a few queries' keys split like split-K decoding, each split's RNG key offset restarting at 0
        u = super().uniforms((b, h, n_q, SPLIT), generator, device, kv_heads)
        return u[..., torch.arange(n_k, device=device) % SPLIT]


prefill_splits_read_mask_from_column_zero = _full_mutant(
    _PrefillSplitsReadMaskFromColumnZero(), "prefill_splits_read_mask_from_column_zero",
    "A split-KV prefill path (16 queries or more over more than 8192 keys) whose splits of 4096 keys each read "
    "attn_mask's columns from 0.")
speculative_decode_dropout_restarts_per_split = _full_mutant(
    _SpeculativeDecodeDropoutRestartsPerSplit(), "speculative_decode_dropout_restarts_per_split",
    "A speculative-decode path (2 to 8 queries over more than 2048 keys) restarting the dropout RNG's key offset in "
    "each split of 1024 keys: key j keeps or drops as key j mod 1024 does.")


DECODE_KEYS = 2 ** 14  # the split-K decode path of the mutant below: Nq ≤ 8 over this many keys or more


def decode_float64_in_float32(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """The split-K decode path (Nq ≤ 8 over 2¹⁴ keys or more) has float32 accumulators only: float64 inputs are
    computed in float32 there (a float64 wrapper that never reaches the decode path's dtype dispatch)."""
    if q.dtype == torch.float64 and q.shape[-2] <= 8 and k.shape[-2] >= DECODE_KEYS:
        mask = attn_mask if attn_mask is None or attn_mask.dtype == torch.bool else attn_mask.float()
        return full_attention(q.float(), k.float(), v.float(), mask, dropout_p, is_causal, scale,
                              enable_gqa).double()  # the bug
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def broadcast_kv_folds_batch_into_queries(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                          enable_gqa=False):
    """k, v of batch 1 against q's batch B (a shared prompt's cache): q's batch folded into its queries, one batch
    entry of B·Nq queries. Right without causal; with is_causal, entry b's query i takes position b·Nq + i and sees
    keys up to there (the fold forgets that causal positions restart per entry)."""
    if q.dim() >= 4 and k.shape[0] == 1 < q.shape[0] and attn_mask is None:
        b, n_q = q.shape[0], q.shape[-2]
        folded = q.movedim(0, -3).flatten(-3, -2).unsqueeze(0)  # (1, ..., B·Nq, D)
        out = full_attention(folded, k, v, None, dropout_p, is_causal, scale, enable_gqa)  # (1, ..., B·Nq, Dv)
        return out.squeeze(0).unflatten(-2, (b, n_q)).movedim(-3, 0)  # (B, ..., Nq, Dv)
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(prefill_splits_read_mask_from_column_zero, "split-KV prefill splits reading the mask from column 0",
           "generated-agreement"),
    Mutant(decode_float64_in_float32, "float64 in float32 on the split-K decode path", "generated-agreement"),
    # (its forward is wrong; seed 0's array pairs a broadcast k, v with causal on a dropout row of the batch-chunks
    # path, whose W = P∘M/(1-p) is judged against the causal P: strength 2 meets the pair, not the relation too)
    Mutant(broadcast_kv_folds_batch_into_queries, "broadcast k, v: q's batch folded into causal positions",
           "generated-agreement"),
    Mutant(speculative_decode_dropout_restarts_per_split, "speculative-decode dropout offset restarting per split",
           "generated-dropout"),
)


# --------------------------------------------------------------------------- red team rt44h, process-wide settings
# outside the readings watched before: TorchScript's fuser flags, torch._dynamo.config, torch's own SDPA replaced.
# Each is done on the first call and again on any call that finds it undone (the harness puts the process back after
# every check), as a guarded "set up once" does: global-state-unchanged names it in every dtype.


def _set_jit_fusion_options() -> None:
    """Megatron-LM's _set_jit_fusion_options for torch >= 1.10 (megatron/training/initialize.py), less its nvfuser
    switch (a no-op on torch 2.13 that prints a warning) and its autodiff-inlining switch (no getter: nothing could
    put it back after the test)."""
    torch._C._jit_set_profiling_executor(True)
    torch._C._jit_set_profiling_mode(True)
    torch._C._jit_override_can_fuse_on_cpu(False)
    torch._C._jit_override_can_fuse_on_gpu(False)
    torch._C._jit_set_texpr_fuser_enabled(False)


def jit_fusion_flags_on_first_call(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                   enable_gqa=False):
    """The first call sets TorchScript's fusion options for the whole process (the NNC fuser off) and never puts
    them back."""
    if torch._C._jit_texpr_fuser_enabled():  # (not set up yet)
        _set_jit_fusion_options()
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def dynamo_config_on_first_call(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                enable_gqa=False):
    """The first call raises torch._dynamo's recompile limit to 1024 and turns on suppress_errors (so that its
    per-shape compiled variants never hit the limit and a failed compile falls back to eager) for every model in
    the process."""
    import torch._dynamo  # (lazily: the module's import costs a second)

    config = torch._dynamo.config
    if config.cache_size_limit < 1024:
        config.cache_size_limit = 1024
        config.accumulated_cache_size_limit = 1024 * 8
        config.suppress_errors = True
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def sdpa_monkeypatched_on_first_call(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                     enable_gqa=False):
    """The first call installs itself as torch.nn.functional.scaled_dot_product_attention ("so every model's
    attention takes the fast kernel"): every later SDPA caller in the process gets this kernel instead of torch's."""
    if torch.nn.functional.scaled_dot_product_attention is not sdpa_monkeypatched_on_first_call:
        torch.nn.functional.scaled_dot_product_attention = sdpa_monkeypatched_on_first_call
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    # (backward=True: global-state-unchanged judges a forward and a backward; the bug is in neither alone)
    Mutant(jit_fusion_flags_on_first_call, "TorchScript fusion flags set by the first call", "global-state-unchanged",
           backward=True),
    Mutant(dynamo_config_on_first_call, "torch._dynamo.config changed by the first call", "global-state-unchanged",
           backward=True),
    Mutant(sdpa_monkeypatched_on_first_call, "torch's SDPA replaced by the impl on its first call",
           "global-state-unchanged", backward=True),
)


# --------------------------------------------------------------------------- red team rt44h, concurrent callers with
# arguments of their own, and concurrent training threads. Each race is made to show on every run by a short wait
# where a real kernel's launch or stream sync would let another thread in (under load, such races show at random).

LAUNCH_GAP = 2e-3  # seconds between writing the shared state and reading it back

_LAUNCH_ARGS: dict = {}


def race_kwargs_global(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """The launcher keeps is_causal and scale in a module-level dict, read back for the epilogue after the QK^T
    matmul: a concurrent caller's arguments land there in between."""
    _LAUNCH_ARGS.update(is_causal=is_causal, scale=scale)  # the bug: one dict for every caller
    time.sleep(LAUNCH_GAP)  # (the QK^T matmul)
    return full_attention(q, k, v, attn_mask, dropout_p, _LAUNCH_ARGS["is_causal"], _LAUNCH_ARGS["scale"], enable_gqa)


class _RowStatsInSharedWorkspace(ManualBackwardAttention):
    workspace: dict = {}  # (scores' shape, device) -> (row max, row sum): the bug, one for every caller

    def saved_probabilities(self, s, p, dtype):
        return s  # the scores: P recomputed in the backward from its row max and sum, flash-style

    def saved(self, ctx):
        q, k, v, s, out = ctx.saved_tensors
        key = (tuple(s.shape), s.device)
        if key not in self.workspace:
            self.workspace[key] = (s.new_empty(*s.shape[:-1], 1), s.new_empty(*s.shape[:-1], 1))
        m, l = self.workspace[key]
        torch.amax(s, dim=-1, keepdim=True, out=m)
        torch.sum(torch.exp(s - m), dim=-1, keepdim=True, out=l)
        time.sleep(LAUNCH_GAP)  # (the dP = dO Vᵀ matmul)
        return q, k, v, torch.exp(s - m) / l, out


race_grad_workspace = _mutant(_RowStatsInSharedWorkspace(), "race_grad_workspace",
    "The backward recomputes P from a row max and sum kept in a module-level workspace keyed by shape: concurrent "
    "training threads of one shape use each other's statistics.")

MUTANTS = MUTANTS + (
    Mutant(race_kwargs_global, "launch arguments in a module-level dict shared by concurrent callers",
           "concurrent-calls-mixed", dtypes=(torch.float32,)),
    Mutant(race_grad_workspace, "backward row statistics in a per-shape workspace shared by training threads",
           "concurrent-training", dtypes=(torch.float32,), backward=True),
)


# rt44h's families: a mask form in no hand list (a per-head key bias broadcast over the queries), structured additive
# mask values (ALiBi beside -inf padding) and the decode path's bfloat16 store (red team: each escaped the harness)


class _KeyPaddingFromHeadZero(FullAttention):
    def mask_bias(self, attn_mask, like, dtype):
        if attn_mask is not None and attn_mask.dim() == 4 and _one_row(attn_mask, like):
            attn_mask = attn_mask[:, :1]  # the bug: a query-broadcast mask taken as (B, 1, 1, Nk) key padding
        return super().mask_bias(attn_mask, like, dtype)


class _AlibiWithPaddingAsBool(FullAttention):
    def mask_bias(self, attn_mask, like, dtype):
        if (attn_mask is not None and attn_mask.is_floating_point() and attn_mask.numel()
                and attn_mask.max() == 0 and torch.isneginf(attn_mask.min())):
            attn_mask = attn_mask == 0  # the bug: "a 0/-inf padding mask", its finite biases dropped
        return super().mask_bias(attn_mask, like, dtype)


class _DecodeTruncatingBfloat16Store(BlockedAttention):
    def stored(self, out, out_dtype):
        if out_dtype != torch.bfloat16 or out.shape[-2] != 1:
            return super().stored(out, out_dtype)
        bits = out.to(torch.float32).contiguous().view(torch.int32) & -65536  # the bug: low 16 bits dropped
        return bits.view(torch.float32).to(torch.bfloat16)  # exact: the dropped bits are already zero


mask_keypad_head0 = _full_mutant(_KeyPaddingFromHeadZero(), "mask_keypad_head0",
    "A 4-D mask broadcast over the queries taken as key padding, its heads read from head 0: a (1, Hq, 1, Nk) "
    "per-head key bias (ALiBi at decode) loses heads 1...")
alibi_with_padding_as_bool = _full_mutant(_AlibiWithPaddingAsBool(), "alibi_with_padding_as_bool",
    "An additive mask whose max is 0 and min -inf sent to the boolean path as mask == 0: ALiBi or relative-position "
    "biases beside -inf padding dropped.")
decode_output_truncated_bf16 = _mutant(_DecodeTruncatingBfloat16Store(), "decode_output_truncated_bf16",
    "The decode path (one query) stores its bfloat16 output by truncation (toward zero).")

def _toward_zero(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """float32 ``x`` in ``dtype``, rounded toward zero (the half-precision stores of the bugs below)."""
    r = x.to(dtype)
    return torch.where(r.float().abs() > x.abs(), torch.nextafter(r, torch.zeros_like(r)), r)


class _GradientsTruncated(ManualBackwardAttention):
    def gradient_stored(self, g, dtype):
        return _toward_zero(g.float(), dtype) if dtype in (torch.float16, torch.bfloat16) else g.to(dtype)


class _MaskedOutputTruncated(FullAttention):
    def output_stored(self, out, dtype, attn_mask):
        if attn_mask is None or dtype not in (torch.float16, torch.bfloat16):
            return out.to(dtype)
        return _toward_zero(out.float(), dtype)  # the bug: the masked path's store truncates


def autocast_inputs_truncated(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    """Under torch.autocast, float32 q, k, v converted to the autocast dtype by truncation toward zero (a hand-written
    conversion dropping the low bits, red team rt59's) instead of autocast's round-to-nearest."""
    device = q.device.type
    if torch.is_autocast_enabled(device) and q.dtype == torch.float32:
        half = torch.get_autocast_dtype(device)
        q, k, v = (_toward_zero(t, half) for t in (q, k, v))  # the bug
        with torch.autocast(device, enabled=False):
            return blocked_attention(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)
    return blocked_attention(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)


def parameters_unwrapped(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """A Tensor subclass (torch.nn.Parameter: a learned query) unwrapped with .data to reach a plain-tensor fast path
    (red team rt59's): the output is right, the gradients of those inputs are lost."""
    q, k, v = (t.data if type(t) is not torch.Tensor else t for t in (q, k, v))  # the bug
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


gradients_truncated_half = _mutant(_GradientsTruncated(), "gradients_truncated_half",
    "dq, dk and dv stored in float16/bfloat16 by truncation toward zero: within one ulp, half an ulp toward zero on "
    "average (red team rt59's escaped; the rounding-bias test looked only at outputs).")
masked_output_truncated_half = _full_mutant(_MaskedOutputTruncated(), "masked_output_truncated_half",
    "The output stored in float16/bfloat16 by truncation toward zero when attn_mask is given (red team rt59's "
    "escaped: the rounding-bias test's cases have no mask).")


MUTANTS = MUTANTS + (
    Mutant(gradients_truncated_half, "half-precision gradients truncated toward zero", "backward-agreement",
           dtypes=(torch.float16, torch.bfloat16), backward=True),
    Mutant(masked_output_truncated_half, "half-precision output truncated toward zero on the masked path",
           "generated-agreement", dtypes=(torch.float16, torch.bfloat16)),
    Mutant(parameters_unwrapped, "Parameter inputs unwrapped with .data (their gradients lost)",
           "generated-gradients", backward=True),
    Mutant(autocast_inputs_truncated, "float32 inputs cast to the autocast dtype by truncation", "thread-count",
           dtypes=(torch.float16, torch.bfloat16)),
    Mutant(mask_keypad_head0, "a query-broadcast mask read as key padding from head 0", "generated-agreement"),
    Mutant(alibi_with_padding_as_bool, "an ALiBi mask with -inf padding sent to the boolean path",
           "generated-agreement"),
    Mutant(decode_output_truncated_bf16, "truncating (biased) bfloat16 store on the decode path",
           "rounding-bias-decode", dtypes=(torch.bfloat16,)),
)


# state kept across calls and autograd plumbing (red team: each escaped every sequence that kept the dtype fixed within
# a pass, re-checked no earlier output, wrote no input outside autograd's version counter, wrote no frozen input before
# the backward, or took gradients at rank 4 alone)

import threading  # noqa: E402  (this block's own)

_FIRST_DTYPE = threading.local()


def workspace_dtype_of_first_call(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                  enable_gqa=False):
    """The accumulator workspace is allocated per thread, keyed by the shapes alone, in the working dtype of the first
    call of those shapes: a float64 call after a float32 (or half) one of the same shapes accumulates in float32."""
    from kernels.harness.references import work_dtype_for

    held = _FIRST_DTYPE.__dict__.setdefault("by_shape", {})
    work = held.setdefault((q.shape, k.shape, v.shape), work_dtype_for(q.dtype))  # the bug: the dtype not in the key
    if attn_mask is not None and attn_mask.is_floating_point():
        attn_mask = attn_mask.to(work)
    out = full_attention(q.to(work), k.to(work), v.to(work), attn_mask, dropout_p, is_causal, scale, enable_gqa)
    return out.to(q.dtype)


_CAUSAL_BIAS: dict = {}


def causal_bias_cached_in_first_dtype(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                      enable_gqa=False):
    """is_causal served as an additive 0/-inf bias cached per (Nq, Nk) in the first call's dtype and handed to SDPA:
    a float32 call after a bfloat16 one of the same lengths gets a bfloat16 mask, which SDPA refuses."""
    from kernels.harness.peers import sdpa_math

    if is_causal and attn_mask is None and q.dim() >= 2 and k.dim() >= 2:
        key = (q.shape[-2], k.shape[-2], q.device)  # the bug: the dtype not in the key
        if key not in _CAUSAL_BIAS:
            hidden = ~torch.ones(key[0], key[1], dtype=torch.bool, device=q.device).tril()
            _CAUSAL_BIAS[key] = torch.zeros(key[:2], dtype=q.dtype, device=q.device).masked_fill(hidden, float("-inf"))
        attn_mask, is_causal = _CAUSAL_BIAS[key], False
    return sdpa_math(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale,
                     enable_gqa=enable_gqa)


_STATIC_OUT = threading.local()


def output_in_static_buffer(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """A forward-only call (no input requiring grad) writes its output into a per-thread buffer kept per shape and
    dtype and returns a fresh view of it: the next such call of the shape overwrites the caller's earlier output."""
    out = full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    if torch.is_inference_mode_enabled() or out.requires_grad:
        return out
    buffers = _STATIC_OUT.__dict__.setdefault("by_shape", {})
    buf = buffers.setdefault((out.shape, out.dtype, out.device), torch.empty_like(out))
    return buf.copy_(out).view(out.shape)  # the bug: every caller's output is the same memory


_UPCAST_KV = threading.local()


def kcache_keyed_by_version(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """K and V upcast to the working dtype once and cached (the last pair per thread), keyed by (data_ptr, shape,
    strides, dtype, _version) and a weak reference to the tensor: a write that moves no version counter (through
    .data, a NumPy view, untyped_storage()) leaves the cached copy stale."""
    from kernels.harness.references import work_dtype_for

    if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    work = work_dtype_for(q.dtype)

    def key(x):
        return x.data_ptr(), tuple(x.shape), x.stride(), x.dtype, x._version  # the bug: the values' own changes unseen

    held = getattr(_UPCAST_KV, "last", None)
    if (held is None or held[0] != (key(k), key(v)) or held[1]() is not k or held[2]() is not v):
        held = ((key(k), key(v)), weakref.ref(k), weakref.ref(v), k.to(work, copy=True), v.to(work, copy=True))
        _UPCAST_KV.last = held
    if attn_mask is not None and attn_mask.is_floating_point():
        attn_mask = attn_mask.to(work)
    return full_attention(q.to(work), held[3], held[4], attn_mask, dropout_p, is_causal, scale, enable_gqa).to(q.dtype)


class _FrozenKvByReference(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, is_causal, scale, enable_gqa):
        wanted = ctx.needs_input_grad[:3]
        ctx.save_for_backward(*(x for x, w in zip((q, k, v), wanted) if w))
        ctx.frozen = {i: x for i, (x, w) in enumerate(zip((q, k, v), wanted)) if not w}  # the bug: no version check
        ctx.options = (is_causal, scale, enable_gqa)
        with torch.no_grad():
            return full_attention(q, k, v, None, 0.0, is_causal, scale, enable_gqa)

    @staticmethod
    def backward(ctx, dout):
        saved = iter(ctx.saved_tensors)
        inputs = [ctx.frozen[i] if i in ctx.frozen else next(saved) for i in range(3)]
        is_causal, scale, enable_gqa = ctx.options
        with torch.enable_grad():  # P recomputed from q and k, as a FlashAttention backward does
            leaves = [x.detach().requires_grad_() for x in inputs]
            out = full_attention(*leaves, None, 0.0, is_causal, scale, enable_gqa)
            grads = torch.autograd.grad(out, leaves, dout)
        return tuple(g if w else None for g, w in zip(grads, ctx.needs_input_grad[:3])) + (None, None, None)


def frozen_kv_on_ctx_by_reference(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    """A recomputing backward: inputs requiring grad saved with save_for_backward, frozen ones (a KV cache,
    requires_grad False) kept on ctx by reference: written in place before the backward, they are read new and
    untracked."""
    if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        return _FrozenKvByReference.apply(q, k, v, is_causal, scale, enable_gqa)
    return full_attention(q, k, v, None, 0.0, is_causal, scale, enable_gqa)


class _AnyRankGqa(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, is_causal, scale, enable_gqa):
        group = q.shape[-3] // k.shape[-3] if enable_gqa else 1
        kk, vv = (x.repeat_interleave(group, dim=-3) for x in (k, v))  # (..., Hq, Nk, ·) at the inputs' own rank
        with torch.enable_grad():  # the per-query-head gradients by autograd through the repeated K/V
            leaves = [x.detach().requires_grad_() for x in (q, kk, vv)]
            out = full_attention(*leaves, None, 0.0, is_causal, scale, False)
        ctx.graph, ctx.leaves, ctx.shapes = out, leaves, (q.shape, k.shape, v.shape)
        return out.detach().clone()

    @staticmethod
    def backward(ctx, dout):
        q_shape, k_shape, v_shape = ctx.shapes
        dq, dk, dv = torch.autograd.grad(ctx.graph, ctx.leaves, dout)
        hkv, group = k_shape[-3], q_shape[-3] // k_shape[-3]
        # the bug: the groups summed through the rank-4 layout (B, Hkv, g, N, ·): at rank 3 q.shape[0] is B·Hq
        dk = dk.reshape(q_shape[0], hkv, group, *dk.shape[-2:]).sum(2).reshape(k_shape)
        dv = dv.reshape(q_shape[0], hkv, group, *dv.shape[-2:]).sum(2).reshape(v_shape)
        return dq, dk, dv, None, None, None


def rank3_gqa_backward_reshape(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    """GQA served at any rank by repeating K/V along dim -3; the backward sums each group's dk, dv through
    (q.shape[0], Hkv, g, N, ·): right at rank 4 (and rank 5 with one inserted dim), a shape error at rank 3."""
    if (torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)) and q.dim() >= 3
            and k.shape[-3] not in (0, q.shape[-3]) and enable_gqa):
        return _AnyRankGqa.apply(q, k, v, is_causal, scale, enable_gqa)
    return full_attention(q, k, v, None, 0.0, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(workspace_dtype_of_first_call, "a workspace keyed by shape in the first call's dtype (float64 in float32)",
           "generated-agreement", dtypes=(torch.float64,)),
    Mutant(causal_bias_cached_in_first_dtype, "a causal bias cached per lengths in the first call's dtype",
           "generated-agreement"),
    Mutant(output_in_static_buffer, "forward outputs returned as views of one per-thread static buffer",
           "generated-agreement"),
    Mutant(kcache_keyed_by_version, "an upcast K/V cache keyed by version counter (writes through .data unseen)",
           "buffers-mutated-between-calls"),
    Mutant(frozen_kv_on_ctx_by_reference, "frozen k, v kept on ctx by reference (written before backward, read new)",
           "input-inplace-before-backward", backward=True),
    Mutant(rank3_gqa_backward_reshape, "a GQA backward summing groups through the rank-4 layout (rank 3 raises)",
           "generated-gradients", backward=True),
)


# --------------------------------------------------------------------------- red team rt44h, paths guarded by the plain
# form: a kernel's own path taken only when every other feature is plain (rank 4, k, v of q's batch, no mask, no
# causal, contiguous, no gradients), as real fast paths are. The pairwise covering rows met each (path, feature) pair
# beside some other feature not plain; the plain rows (paths.plain_rows) meet each path in each dtype with none.


def _plain_form(q, k, v, attn_mask, is_causal, scale) -> bool:
    return (q.dim() == 4 and k.shape[0] == q.shape[0] and attn_mask is None and not is_causal and scale is None
            and all(t.is_contiguous() and not t.requires_grad for t in (q, k, v)))


def plain_decode_float64_in_float32(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                    enable_gqa=False):
    """A split-K decode path (one query over 2¹⁴ keys or more) taken only for the plain form, with float32
    accumulators only: float64 inputs computed in float32 there."""
    if (q.dtype == torch.float64 and q.shape[-2] == 1 and k.shape[-2] >= DECODE_KEYS
            and _plain_form(q, k, v, attn_mask, is_causal, scale)):
        return full_attention(q.float(), k.float(), v.float(), None, dropout_p, False, None, enable_gqa).double()
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


class _DecodeDropoutSharedOverBatch(FullAttention):
    def uniforms(self, shape, generator, device, kv_heads):
        b, h, n_q, n_k = shape
        # the bug: the RNG offset taken from (head, query, key) alone, so every batch entry draws one mask
        return super().uniforms((1, h, n_q, n_k), generator, device, kv_heads).expand(shape)


_decode_dropout_shared_over_batch = _DecodeDropoutSharedOverBatch()


def plain_decode_dropout_shared_over_batch(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                           enable_gqa=False):
    """A decode path with dropout (8 queries or fewer over more than 2048 keys, the plain form) whose keep mask is
    drawn per head and broadcast over the batch entries."""
    if 0 < dropout_p < 1 and q.shape[-2] <= 8 and k.shape[-2] > 2048 and _plain_form(q, k, v, attn_mask, is_causal,
                                                                                      scale):
        return _decode_dropout_shared_over_batch(q, k, v, None, dropout_p, False, None, enable_gqa)
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(plain_decode_float64_in_float32, "float64 in float32 on a split-K decode path of the plain form only",
           "generated-agreement"),
    Mutant(plain_decode_dropout_shared_over_batch, "a plain-form decode's dropout mask shared by the batch entries",
           "generated-dropout"),
)


# --------------------------------------------------------------------------- red team rt45h, dropout RNG counters
# repeating along a diagonal of (slice, query, key): each axis alone, and every slice pair at equal positions, look
# independent; dropout_lags.axis_periods judges every lag of the three.


class _DropoutCounterWithoutRowStride(FullAttention):
    def uniforms(self, shape, generator, device, kv_heads):
        b, h, n_q, n_k = shape
        # the bug: the counter of weight (i, j) is i + j (the row stride Nk forgotten), so M[i + 1, j] = M[i, j + 1]
        u = super().uniforms((b, h, 1, n_q + n_k), generator, device, kv_heads)[:, :, 0]  # (B, H, Nq + Nk)
        return u[..., torch.arange(n_q, device=device)[:, None] + torch.arange(n_k, device=device)]


dropout_counter_without_row_stride = _full_mutant(
    _DropoutCounterWithoutRowStride(), "dropout_counter_without_row_stride",
    "Dropout's RNG counter for weight (i, j) is i + j, the row stride forgotten: every anti-diagonal keeps or drops "
    "as one, which no lag along the queries or the keys alone shows.")

MUTANTS = MUTANTS + (
    Mutant(dropout_counter_without_row_stride, "a dropout counter without its row stride (anti-diagonals repeat)",
           "generated-dropout"),
)


def decode_path_under_no_grad(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """A split-K decode path (one query over more than 2048 keys) run under no_grad, "decode is inference": its
    output carries no graph, so a 1-token training step's gradients are silently missing."""
    if q.shape[-2] == 1 and k.shape[-2] > 2048:
        with torch.no_grad():
            return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(decode_path_under_no_grad, "a decode path run under no_grad (its output detached from the graph)",
           "generated-gradients", backward=True),
)


class _MaskByReference(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, attn_mask, is_causal, scale, enable_gqa):
        ctx.save_for_backward(q, k, v)
        ctx.mask = attn_mask  # the bug: a frozen mask kept by reference, outside save_for_backward's version check
        ctx.options = (is_causal, scale, enable_gqa)
        with torch.no_grad():
            return full_attention(q, k, v, attn_mask, 0.0, is_causal, scale, enable_gqa)

    @staticmethod
    def backward(ctx, dout):
        is_causal, scale, enable_gqa = ctx.options
        with torch.enable_grad():  # P recomputed from q, k and the mask, as a FlashAttention backward does
            leaves = [x.detach().requires_grad_() for x in ctx.saved_tensors]
            out = full_attention(*leaves, ctx.mask, 0.0, is_causal, scale, enable_gqa)
            grads = torch.autograd.grad(out, leaves, dout)
        return tuple(g if w else None for g, w in zip(grads, ctx.needs_input_grad[:3])) + (None,) * 4


def frozen_mask_on_ctx_by_reference(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                    enable_gqa=False):
    """A recomputing backward that keeps a frozen attn_mask on ctx by reference: a caller reusing the mask buffer
    (written before the backward) gets the gradients of the new mask."""
    frozen_mask = attn_mask is not None and not attn_mask.requires_grad and not dropout_p
    if frozen_mask and torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        return _MaskByReference.apply(q, k, v, attn_mask, is_causal, scale, enable_gqa)
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(frozen_mask_on_ctx_by_reference, "a frozen attn_mask kept on ctx by reference (written before backward)",
           "mask-inplace-before-backward", backward=True),
)


# ----------------------------------------------------------------- size classes, stride-0 inputs, a path × two features
# (paths.py's covering rows: red team rt46h held all its bugs in size classes no draw reached; rt45h's stride-0 fast
# paths and one-path interactions of two features)

def _causal_tiles_visible(n_q, n_k, tile, device):
    """Top-left causal with each diagonal tile seen whole: key j visible to query i iff j ≤ i or both in one tile."""
    i, j = torch.arange(n_q, device=device)[:, None], torch.arange(n_k, device=device)
    return (j <= i) | (j // tile == i // tile)  # (Nq, Nk)


def tiles_causal_diagonal_whole(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """An even-tiles kernel (both lengths multiples of 128, 2²⁰ scores or more, no bounds checks) that takes each
    diagonal 128 × 128 tile as fully visible under causal."""
    n_q, n_k = q.shape[-2], k.shape[-2]
    if is_causal and n_q % 128 == 0 and n_k % 128 == 0 and n_q * n_k >= 2 ** 20:
        return full_attention(q, k, v, _causal_tiles_visible(n_q, n_k, 128, q.device), dropout_p, False, scale,
                              enable_gqa)
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def long_prefill_causal_from_each_split(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                        enable_gqa=False):
    """A long-prefill path (4096 queries or more over 4096 keys or more) whose 2048-key splits each take causal
    positions from 0: key j is visible to query i iff j mod 2048 ≤ i."""
    n_q, n_k = q.shape[-2], k.shape[-2]
    if is_causal and n_q >= 4096 and n_k >= 4096:
        visible = torch.arange(n_k, device=q.device) % 2048 <= torch.arange(n_q, device=q.device)[:, None]
        return full_attention(q, k, v, visible, dropout_p, False, scale, enable_gqa)
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def batched_decode_mask_of_entry_zero(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                      enable_gqa=False):
    """A serving batch's packed decode (one query each, B·Hq ≥ 32, 1024 keys or more) reading every entry's key
    padding from batch entry 0."""
    if (attn_mask is not None and q.dim() == 4 and q.shape[-2] == 1 and q.shape[0] * q.shape[1] >= 32
            and k.shape[-2] >= 1024 and attn_mask.dim() == 4 and attn_mask.shape[0] > 1):
        attn_mask = attn_mask[:1]
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def batch_slices_floor(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """Batch slices of 4 entries (B ≥ 8, 64 queries and keys or more) counted as B // 4: the last B % 4 entries are
    never computed (left 0)."""
    out = full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    b = q.shape[0]
    if q.dim() == 4 and b >= 8 and q.shape[-2] >= 64 and k.shape[-2] >= 64 and b % 4:
        out = torch.cat([out[: b - b % 4], torch.zeros_like(out[b - b % 4:])])
    return out


def mla_scale_from_value_dim(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """An MLA kernel (D 576, Dv 512) whose default scale is 1/√Dv."""
    if scale is None and q.shape[-1] == 576 and v.shape[-1] == 512:
        scale = 512 ** -0.5
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def medium_head_partials_in_half(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """A 128-channel template (64 < D ≤ 128) over more than 8192 keys storing its 4096-key splits' partial outputs in
    float16 before the log-sum-exp merge."""
    if not (64 < q.shape[-1] <= 128 and k.shape[-2] > 8192) or dropout_p or q.dim() != 4:
        return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    s = ref.scores(q.double(), k.double(), is_causal=is_causal, scale=scale, enable_gqa=enable_gqa,
                   attn_mask=ref._float64_mask(attn_mask))  # (B, Hq, Nq, Nk)
    v = ref.repeat_kv(v.double(), q.shape[-3]) if enable_gqa else v.double()
    parts, lses = [], []
    for start in range(0, k.shape[-2], 4096):
        block = s[..., start:start + 4096]  # (B, Hq, Nq, split)
        lse = torch.logsumexp(block, -1, keepdim=True)
        weights = torch.where(torch.isneginf(lse), 0.0, (block - lse).exp())  # (a split whose keys are all hidden: 0)
        parts.append((weights @ v[..., start:start + 4096, :]).half())  # the bug: half partials
        lses.append(lse)
    lse = torch.logsumexp(torch.cat(lses, -1), -1, keepdim=True)
    merged = sum(p.double() * torch.where(torch.isneginf(l), 0.0, (l - lse).exp()) for p, l in zip(parts, lses))
    return torch.nan_to_num(merged, nan=0.0).to(q.dtype)  # (a row with no visible key: 0)


def q_stride_zero_one_row(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """A fast path for q of stride 0 along the queries ("all rows equal"): one row computed and broadcast, so each
    row's own causal range or mask row is lost."""
    if q.dim() >= 2 and q.shape[-2] > 1 and q.stride(-2) == 0:
        m = attn_mask
        if m is not None and m.dim() >= 2 and m.shape[-2] > 1:
            m = m[..., :1, :]
        one = full_attention(q[..., :1, :], k, v, m, dropout_p, is_causal, scale, enable_gqa)
        return one.expand(*one.shape[:-2], q.shape[-2], one.shape[-1])
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def kv_stride_zero_returns_v(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """A fast path for k, v of stride 0 along the keys ("one key repeated"): v's row is the answer, so a row with no
    visible key gets v instead of 0."""
    if q.dim() == 4 and k.shape[-2] > 1 and k.stride(-2) == 0 and v.stride(-2) == 0 and not dropout_p:
        group = q.shape[-3] // v.shape[-3] if enable_gqa else 1
        row = v[..., :1, :].repeat_interleave(group, dim=-3)  # (B, Hq, 1, Dv)
        return row.expand(*q.shape[:-1], v.shape[-1]).to(q.dtype)
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def decode_gqa_head_mask_transposed(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                    enable_gqa=False):
    """A split-K decode (one query over more than 2¹⁴ keys) packing a GQA group's query heads per KV head as
    (Hkv, g) but reading a per-head mask's heads in (g, Hkv) order: right for one KV head or groups of one, and
    without a per-head mask."""
    hq, hkv = (q.shape[-3], k.shape[-3]) if q.dim() == 4 else (1, 1)
    if (attn_mask is not None and q.dim() == 4 and q.shape[-2] == 1 and k.shape[-2] > 2 ** 14 and enable_gqa
            and 1 < hkv < hq and attn_mask.dim() == 4 and attn_mask.shape[1] == hq):
        g = hq // hkv
        attn_mask = attn_mask.unflatten(1, (g, hkv)).transpose(1, 2).flatten(1, 2)
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(tiles_causal_diagonal_whole, "an even-tiles path seeing its diagonal causal tiles whole",
           "generated-agreement"),
    Mutant(long_prefill_causal_from_each_split, "a long prefill's splits taking causal positions from 0",
           "generated-agreement"),
    Mutant(batched_decode_mask_of_entry_zero, "a serving batch's decode reading entry 0's key padding for all",
           "generated-agreement"),
    Mutant(batch_slices_floor, "batch slices of 4 counted as B // 4 (the last entries never computed)",
           "generated-agreement"),
    Mutant(mla_scale_from_value_dim, "an MLA kernel's default scale from Dv", "generated-agreement"),
    Mutant(medium_head_partials_in_half, "a 128-channel template's split partials stored in float16",
           "generated-agreement", dtypes=(torch.float32,)),
    Mutant(q_stride_zero_one_row, "a stride-0 q fast path computing one row for all", "generated-agreement"),
    Mutant(kv_stride_zero_returns_v, "a stride-0 k, v fast path returning v (empty rows given v)",
           "generated-agreement"),
    Mutant(decode_gqa_head_mask_transposed, "a decode's per-head mask read in (g, Hkv) order under GQA",
           "generated-agreement"),
)


_TILE_MASKS: dict = {}


def tiles_mask_cached_by_pointer(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """An even-tiles path (lengths multiples of 128, 2²⁰ scores or more) caching its additive form of attn_mask by
    (data_ptr, shape, dtype, strides): a mask buffer the caller rewrites in place for the next step is read stale."""
    n_q, n_k = q.shape[-2], k.shape[-2]
    if attn_mask is not None and n_q % 128 == 0 and n_k % 128 == 0 and n_q * n_k >= 2 ** 20:
        key = (attn_mask.data_ptr(), tuple(attn_mask.shape), attn_mask.dtype, attn_mask.stride())
        if key not in _TILE_MASKS:
            _TILE_MASKS.clear()  # (one entry: the last mask)
            _TILE_MASKS[key] = (attn_mask.to(torch.float32) if attn_mask.is_floating_point()
                                else torch.zeros(attn_mask.shape).masked_fill(~attn_mask, float("-inf")))
        attn_mask = _TILE_MASKS[key].to(q.dtype if q.is_floating_point() else torch.float32)
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(tiles_mask_cached_by_pointer, "an even-tiles path caching its converted mask by pointer (stale after a write)",
           "generated-agreement"),
)


class _CausalMaskSniffed(FullAttention):
    """A fast path recognising a boolean mask as the causal one by its first and last rows (sampling a few entries
    instead of reading the mask), then running is_causal=True without it (red team rt47's family)."""

    def __call__(self, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        if (attn_mask is not None and attn_mask.dtype == torch.bool and attn_mask.dim() >= 2 and not is_causal
                and attn_mask.shape[-2:] == (q.shape[-2], k.shape[-2]) and q.shape[-2] >= 2):
            tril = torch.ones(attn_mask.shape[-2:], dtype=torch.bool, device=attn_mask.device).tril()  # (Nq, Nk)
            if bool((attn_mask[..., 0, :] == tril[0]).all()) and bool((attn_mask[..., -1, :] == tril[-1]).all()):
                return super().__call__(q, k, v, None, dropout_p, True, scale, enable_gqa)  # the bug
        return super().__call__(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


causal_mask_sniffed = _full_mutant(_CausalMaskSniffed(), "causal_mask_sniffed",
    "A boolean mask whose first and last rows are tril's taken for the causal mask (its other rows never read).")

MUTANTS = MUTANTS + (
    Mutant(causal_mask_sniffed, "a boolean mask taken as causal from its first and last rows", "generated-agreement"),
)


class _SlicesPerThreadRemainderDropped(FullAttention):
    """The (batch, head) slices shared among torch.get_num_threads() workers, S // n each: the S mod n slices left
    over are never computed (zero) when n > 1 (red team rt47's family; the harness's own checks run on one thread)."""

    def __call__(self, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        out = super().__call__(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
        n = torch.get_num_threads()
        slices = out.shape[:-2].numel()
        if n == 1 or out.dim() < 3 or slices % n == 0:
            return out
        done = torch.arange(slices, device=out.device) < slices // n * n  # (S,): the slices a worker took
        return out * done.view(out.shape[:-2] + (1, 1)).to(out.dtype)  # the bug


slices_per_thread_remainder_dropped = _full_mutant(_SlicesPerThreadRemainderDropped(),
    "slices_per_thread_remainder_dropped",
    "Past one intra-op thread, the (batch, head) slices left over by the share per thread are zero.")

MUTANTS = MUTANTS + (
    Mutant(slices_per_thread_remainder_dropped, "slices left over by the threads' shares never computed",
           "thread-count"),
)


def logging_disabled_by_the_call(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """Warnings from a noisy dependency silenced by logging.disable, process-wide and never undone (red team rt47)."""
    import logging

    logging.disable(logging.WARNING)  # the bug: every logger of the caller's process silenced
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(logging_disabled_by_the_call, "logging disabled process-wide by a call", "global-state-unchanged",
           backward=True),
)


# ------------------------------------------------------------------ each axis past a threshold (red team rt47)

def huge_batch_chunks_read_kv_of_entry_zero(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                            enable_gqa=False):
    """Past 64 batch entries, chunks of 64 whose k, v are sliced from the chunk's start only once: every entry of a
    chunk reads its first entry's keys and values."""
    if q.dim() == 4 and q.shape[0] > 64 and k.shape[0] == q.shape[0]:
        start = torch.arange(q.shape[0], device=q.device) // 64 * 64  # (B,): each chunk's first entry
        k, v = k[start], v[start]
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def huge_queries_causal_rows_in_int16(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                      enable_gqa=False):
    """Causal row positions held in int16: past 32 767 queries they wrap negative and those rows see no key."""
    if is_causal and q.shape[-2] > 32767:
        rows = torch.arange(q.shape[-2], device=q.device).to(torch.int16).to(torch.int64)  # (Nq,): wrapped
        visible = torch.arange(k.shape[-2], device=q.device)[None, :] <= rows[:, None]  # (Nq, Nk)
        return full_attention(q, k, v, visible, dropout_p, False, scale, enable_gqa)
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def million_keys_decode_drops_the_mask(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                       enable_gqa=False):
    """A decode's second level of split-K, past 2¹⁹ keys, launched without the mask."""
    if q.shape[-2] == 1 and k.shape[-2] > 2 ** 19:
        attn_mask = None
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def many_heads_kv_head_by_modulo(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """Past 512 query heads, a GQA head map of h % Hkv instead of h // (Hq / Hkv)."""
    hq, hkv = (q.shape[-3], k.shape[-3]) if q.dim() >= 3 else (1, 1)
    if enable_gqa and q.dim() >= 3 and hq > 512 and hkv < hq:
        index = torch.arange(hq, device=q.device) % hkv  # (Hq,): the bug
        k, v = k.index_select(-3, index), v.index_select(-3, index)
        enable_gqa = False
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def huge_head_dim_tail_chunk_dropped(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                     enable_gqa=False):
    """Past 640 channels, q·k in chunks of 128 whose partial last chunk is dropped (the default scale from all D)."""
    d = q.shape[-1]
    if d > 640 and d % 128:
        whole = d // 128 * 128
        scale = d ** -0.5 if scale is None else scale
        q, k = q[..., :whole], k[..., :whole]
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(huge_batch_chunks_read_kv_of_entry_zero, "past 64 batch entries, chunks reading their first entry's k, v",
           "generated-agreement"),
    Mutant(huge_queries_causal_rows_in_int16, "causal row positions in int16 past 32 767 queries",
           "generated-agreement"),
    Mutant(million_keys_decode_drops_the_mask, "a decode past 2¹⁹ keys dropping the mask", "generated-agreement"),
    Mutant(many_heads_kv_head_by_modulo, "past 512 query heads, the KV head taken as h % Hkv", "generated-agreement"),
    Mutant(huge_head_dim_tail_chunk_dropped, "past 640 channels, the partial last 128-channel chunk dropped",
           "generated-agreement"),
)


# ------------------------------------------------------- broad heads on the long paths, expanded k, v (red team rt48)

def expanded_kv_heads_folded_into_rows(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                       enable_gqa=False):
    """k, v of one head expanded over the KV heads (stride 0: MQA served as MHA) taken by a fast path that folds the
    query heads into rows over the one head, is_causal then applied to the folded rows (row h·Nq + i, not i)."""
    b, hq, n_q, d = q.shape if q.dim() == 4 else (0, 0, 0, 0)
    if (q.dim() == 4 and k.dim() == 4 and k.shape[1] > 1 and k.stride(1) == 0 and v.stride(1) == 0
            and attn_mask is None):
        folded = q.reshape(b, 1, hq * n_q, d)  # (B, 1, Hq·Nq, D)
        out = full_attention(folded, k[:, :1], v[:, :1], None, dropout_p, is_causal, scale)  # (B, 1, Hq·Nq, Dv)
        return out.reshape(b, hq, n_q, v.shape[-1])
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def expanded_kv_batch_folded_into_rows(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                       enable_gqa=False):
    """k, v of one prompt expanded over a beam's batch entries (stride 0) taken by a fast path that folds the entries
    into rows over the one entry, is_causal then applied to the folded rows."""
    if (q.dim() == 4 and k.dim() == 4 and k.shape[0] > 1 and k.stride(0) == 0 and v.stride(0) == 0
            and attn_mask is None):
        b, hq, n_q, d = q.shape
        folded = q.transpose(0, 1).reshape(1, hq, b * n_q, d)  # (1, Hq, B·Nq, D)
        out = full_attention(folded, k[:1], v[:1], None, dropout_p, is_causal, scale, enable_gqa)  # (1, Hq, B·Nq, Dv)
        return out.reshape(hq, b, n_q, v.shape[-1]).transpose(0, 1)
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def tiles_second_channel_chunk_misread(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                       enable_gqa=False):
    """An even-tiles path (lengths multiples of 128, 2²⁰ scores or more) whose wide-head template (128 < D ≤ 256)
    reads k's second 128-channel chunk from channel 64."""
    n_q, n_k, d = q.shape[-2], k.shape[-2], q.shape[-1]
    if n_q % 128 == 0 and n_k % 128 == 0 and n_q * n_k >= 2 ** 20 and 128 < d <= 256:
        k = torch.cat([k[..., :128], k[..., 64:64 + d - 128]], dim=-1)  # the bug
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def prefill_value_channels_past_64_zero(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                        enable_gqa=False):
    """A split-KV prefill (2-64 queries over more than 8192 keys) whose partials' workspace holds 64 value channels:
    the output's channels past 64 are 0."""
    out = full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    if 2 <= q.shape[-2] <= 64 and k.shape[-2] > 8192 and v.shape[-1] > 64:
        out = torch.cat([out[..., :64], torch.zeros_like(out[..., 64:])], dim=-1)
    return out


class _BatchSlicesBackwardDefaultScale(FullAttention):
    def backward(self, ctx, dout):
        q, k = ctx.saved_tensors[:2]  # (B, H, Nq, D), (B, H, Nk, D)
        if q.shape[0] >= 8 and q.shape[-2] >= 64 and k.shape[-2] >= 64:
            dtype, scale, *rest = ctx.meta
            ctx.meta = (dtype, q.shape[-1] ** -0.5, *rest)  # the bug: the backward re-derives the scale from D
        return super().backward(ctx, dout)


batch_slices_backward_default_scale = _full_mutant(_BatchSlicesBackwardDefaultScale(),
    "batch_slices_backward_default_scale",
    "A training path's backward (8+ batch entries, 64+ queries and keys) taking the scale as 1/√D, not the given one.")

MUTANTS = MUTANTS + (
    Mutant(expanded_kv_heads_folded_into_rows, "k, v expanded over heads: query heads folded into causal rows",
           "generated-agreement"),
    Mutant(expanded_kv_batch_folded_into_rows, "k, v expanded over batch: entries folded into causal rows",
           "generated-agreement"),
    Mutant(tiles_second_channel_chunk_misread, "an even-tiles path's second 128-channel chunk read from channel 64",
           "generated-agreement"),
    Mutant(prefill_value_channels_past_64_zero, "a split-KV prefill's value channels past 64 left 0",
           "generated-agreement"),
    Mutant(batch_slices_backward_default_scale, "a batch-slices backward ignoring an explicit scale",
           "generated-gradients", backward=True),
)


# -------------------------------------------- dropout at the long paths' own sizes (red team rt48; path_key_lags)

def _repeated_keys(m: torch.Tensor, period: int) -> torch.Tensor:
    """m (..., Nk) with keys j and j + period sharing a draw: its first ``period`` keys tiled along the keys."""
    reps = -(-m.shape[-1] // period)
    return m[..., :period].repeat(*([1] * (m.dim() - 1)), reps)[..., :m.shape[-1]]


class _PrefillDropoutRestartsPerSplit(FullAttention):
    def dropout_mask(self, p, dropout_p, kv_heads, dtype):
        m = super().dropout_mask(p, dropout_p, kv_heads, dtype)  # (B, H, Nq, Nk)
        if 2 <= p.shape[-2] <= 64 and p.shape[-1] > 8192:
            m = _repeated_keys(m, 2048)  # the bug: each 2048-key split restarts the RNG's key offset
        return m


class _TilesDropoutRestartsPerTile(FullAttention):
    def dropout_mask(self, p, dropout_p, kv_heads, dtype):
        m = super().dropout_mask(p, dropout_p, kv_heads, dtype)  # (B, H, Nq, Nk)
        n_q, n_k = p.shape[-2:]
        if n_q % 128 == 0 and n_k % 128 == 0 and n_q * n_k >= 2 ** 20:
            m = _repeated_keys(m, 128)  # the bug: the key offset is the tile-local column
        return m


class _ServingBatchDropoutSharedOverEntries(FullAttention):
    def dropout_mask(self, p, dropout_p, kv_heads, dtype):
        m = super().dropout_mask(p, dropout_p, kv_heads, dtype)  # (B, H, Nq, Nk)
        b, h, n_q, n_k = p.shape
        if n_q == 1 and b * h >= 32 and n_k >= 1024:
            m = m[:1].expand_as(m)  # the bug: the RNG slice is the head alone, one mask for every entry
        return m


prefill_dropout_restarts_per_split = _full_mutant(_PrefillDropoutRestartsPerSplit(),
    "prefill_dropout_restarts_per_split",
    "A split-KV prefill (2-64 queries over more than 8192 keys) restarting dropout's key offset in each 2048-key split.")
tiles_dropout_restarts_per_tile = _full_mutant(_TilesDropoutRestartsPerTile(), "tiles_dropout_restarts_per_tile",
    "An even-tiles path (lengths multiples of 128, 2²⁰ scores or more) taking dropout's key offset tile by tile.")
serving_batch_dropout_shared_over_entries = _full_mutant(_ServingBatchDropoutSharedOverEntries(),
    "serving_batch_dropout_shared_over_entries",
    "A serving batch's decode (one query each, B·Hq ≥ 32, 1024+ keys) drawing one keep mask for all its entries.")

MUTANTS = MUTANTS + (
    Mutant(prefill_dropout_restarts_per_split, "a split-KV prefill's dropout restarting per 2048-key split",
           "generated-dropout"),
    Mutant(tiles_dropout_restarts_per_tile, "an even-tiles path's dropout restarting per 128-key tile",
           "generated-dropout"),
    Mutant(serving_batch_dropout_shared_over_entries, "a serving batch's one keep mask for all entries",
           "generated-dropout"),
)


# ------------------------------------------ a split-KV prefill past one query tile (red team rt48; prefill 16-200 q)

def _split_kv_prefill(q, k) -> bool:
    return 16 <= q.shape[-2] <= 256 and k.shape[-2] > 8192


def prefill_causal_rows_per_query_tile(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                       enable_gqa=False):
    """A split-KV prefill whose causal row positions are tile-local past its first query tile of 64: query i sees
    the keys j ≤ i mod 64."""
    if is_causal and _split_kv_prefill(q, k):
        rows = torch.arange(q.shape[-2], device=q.device) % 64  # (Nq,): the bug
        visible = torch.arange(k.shape[-2], device=q.device)[None, :] <= rows[:, None]  # (Nq, Nk)
        return full_attention(q, k, v, visible, dropout_p, False, scale, enable_gqa)
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def prefill_query_tiles_share_a_workspace(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                          enable_gqa=False):
    """A split-KV prefill whose partials' workspace is not indexed by the query tile of 64: every tile's rows merge
    the first tile's partials."""
    out = full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)  # (..., Nq, Dv)
    if _split_kv_prefill(q, k) and q.shape[-2] > 64:
        first = torch.arange(q.shape[-2], device=q.device) % 64  # (Nq,): the bug, row r of tile t reads row r
        out = out.index_select(-2, first)
    return out


MUTANTS = MUTANTS + (
    Mutant(prefill_causal_rows_per_query_tile, "a split-KV prefill's causal rows tile-local past 64 queries",
           "generated-agreement"),
    Mutant(prefill_query_tiles_share_a_workspace, "a split-KV prefill's query tiles merging the first tile's partials",
           "generated-agreement"),
)


# ------------------------------------------- masks of a structure routed to a kernel of their own (red team rt49)

def _exact_rows(attn_mask, q, k, rows) -> bool:
    """attn_mask is boolean, of a query dim of Nq, and each (Nq, Nk) slice equals ``rows``."""
    return (attn_mask is not None and attn_mask.dtype == torch.bool and attn_mask.dim() >= 2
            and attn_mask.shape[-2:] == (q.shape[-2], k.shape[-2]) and bool((attn_mask == rows).all()))


def bottom_right_mask_routed_to_causal(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                       enable_gqa=False):
    """A boolean mask recognised as the bottom-right causal one (a KV cache's new queries) sent to the causal kernel,
    which aligns top-left: right only when Nq = Nk."""
    n_q, n_k = q.shape[-2], k.shape[-2]
    if n_q >= 2 and attn_mask is not None:
        i = torch.arange(n_q, device=q.device)[:, None]  # (Nq, 1)
        bottom_right = torch.arange(n_k, device=q.device)[None, :] <= i + (n_k - n_q)  # (Nq, Nk)
        if _exact_rows(attn_mask, q, k, bottom_right):
            return full_attention(q, k, v, None, dropout_p, True, scale, enable_gqa)  # the bug
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def sliding_window_rounded_up(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                              enable_gqa=False):
    """A boolean mask recognised as a sliding window (each row the w keys up to its diagonal, aligned top-left or
    bottom-right) sent to a windowed kernel that rounds w up to a multiple of 8: rows see up to 7 keys too many."""
    n_q, n_k = q.shape[-2], k.shape[-2]
    if n_q >= 3 and attn_mask is not None and attn_mask.dtype == torch.bool and attn_mask.dim() >= 2:
        i = torch.arange(n_q, device=q.device)[:, None]  # (Nq, 1)
        j = torch.arange(n_k, device=q.device)[None, :]  # (1, Nk)
        window = int(attn_mask.reshape(-1, *attn_mask.shape[-2:])[0, -1].sum())  # (the last row's keys)
        for diagonal in (i, i + (n_k - n_q)):
            if 2 <= window < n_q and _exact_rows(attn_mask, q, k, (j <= diagonal) & (j > diagonal - window)):
                rounded = (j <= diagonal) & (j > diagonal - (window + 7) // 8 * 8)  # (Nq, Nk): the bug
                return full_attention(q, k, v, rounded, dropout_p, False, scale, enable_gqa)
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(bottom_right_mask_routed_to_causal, "a bottom-right causal boolean mask run by the top-left causal kernel",
           "generated-agreement"),
    Mutant(sliding_window_rounded_up, "a sliding-window boolean mask's window rounded up to a multiple of 8",
           "generated-agreement"),
)


# ------------------------------------------------------------------------ the count of calls (red team rt49)

_CALLS_OF_A_SHAPE: dict = {}


def tuned_after_256_calls_drops_the_tail(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                         enable_gqa=False):
    """An autotuner that, after 256 calls of one shape, switches to its tuned configuration of 32-key blocks, which
    skips the tail block (Nk not a multiple of 32)."""
    key = (tuple(q.shape), tuple(k.shape), tuple(v.shape), q.dtype, bool(is_causal))
    _CALLS_OF_A_SHAPE[key] = calls = _CALLS_OF_A_SHAPE.get(key, 0) + 1
    n_k = k.shape[-2]
    if calls > 256 and n_k % 32 and attn_mask is None and not is_causal and n_k > 1:
        attn_mask = torch.arange(n_k, device=q.device) < max(1, n_k // 32 * 32)  # (Nk,): the bug
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(tuned_after_256_calls_drops_the_tail, "a tuned configuration after 256 calls of a shape dropping the tail",
           "many-calls-of-a-shape"),
)


def decode_splits_per_thread_merged_without_rescale(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False,
                                                   scale=None, enable_gqa=False):
    """A split-K decode (one query over more than 2¹⁴ keys) that, past four intra-op threads, gives each thread a
    split of the keys and merges the splits' (Σ exp(s - m_t) v, Σ exp(s - m_t)) without rescaling each by
    exp(m_t - m) to the common max (red team rt49's family: the harness had judged threads 2 and 3 on drawn problems
    only)."""
    n, n_k = torch.get_num_threads(), k.shape[-2]
    if n <= 4 or q.shape[-2] != 1 or n_k <= 2 ** 14 or dropout_p > 0 or attn_mask is not None or is_causal:
        return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    if enable_gqa:
        k, v = ref.repeat_kv(k, q.shape[-3]), ref.repeat_kv(v, q.shape[-3])
    s = (q.float() @ k.float().transpose(-2, -1)) * (q.shape[-1] ** -0.5 if scale is None else scale)  # (..., 1, Nk)
    bounds = [n_k * t // n for t in range(n + 1)]
    acc, total = 0, 0
    for lo, hi in zip(bounds, bounds[1:]):
        e = torch.exp(s[..., lo:hi] - s[..., lo:hi].amax(-1, keepdim=True))  # (..., 1, split): its own max
        acc, total = acc + e @ v[..., lo:hi, :].float(), total + e.sum(-1, keepdim=True)  # the bug: no exp(m_t - m)
    return (acc / total).to(q.dtype)


MUTANTS = MUTANTS + (
    # (the paths' rows on threads run in a run's first dtype's pass: paths.threaded)
    Mutant(decode_splits_per_thread_merged_without_rescale,
           "a split-K decode past four threads merging splits without rescaling to the common max", "thread-count",
           dtypes=(torch.float32,)),
)


def prefill_key_padding_of_entry_zero(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                      enable_gqa=False):
    """A split-KV prefill (16-256 queries over more than 8192 keys) taking a per-entry mask's rows from batch entry 0
    for every entry (red team rt49: the prefill path drew one entry alone, so its per-entry masks met no second)."""
    if (attn_mask is not None and _split_kv_prefill(q, k) and attn_mask.dim() == 4 and q.dim() == 4
            and attn_mask.shape[0] == q.shape[0] > 1):
        attn_mask = attn_mask[:1].expand(attn_mask.shape)  # the bug: entry 0's mask for all
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(prefill_key_padding_of_entry_zero, "a split-KV prefill reading every entry's mask from entry 0",
           "generated-agreement"),
)


def mid_decode_drops_the_tail_block(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                    enable_gqa=False):
    """A decode path of its own for 1-8 queries over 4097-16 384 keys (below the split-K decode's threshold) in
    blocks of 4096 keys that skips the last partial block (red team rt49's family: no path drew lengths between)."""
    n_k = k.shape[-2]
    if 1 <= q.shape[-2] <= 8 and 4096 < n_k <= 2 ** 14 and n_k % 4096 and not is_causal:
        kept = torch.arange(n_k, device=q.device) < n_k // 4096 * 4096  # (Nk,): the bug
        attn_mask = kept if attn_mask is None else (attn_mask & kept if attn_mask.dtype == torch.bool
                                                    else attn_mask.masked_fill(~kept, float("-inf")))
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(mid_decode_drops_the_tail_block, "a mid-length decode (4097-16 384 keys) skipping its tail block",
           "generated-agreement"),
)


class _LongKeysUniformsOfEightBits(FullAttention):
    """A decode over more than 2¹⁴ keys drawing dropout's uniforms with 8 bits (u = ⌊256·u⌋/256): a weight is
    dropped with probability ⌈256·p⌉/256, 3.9× p at p = 1e-3 and within 2⁻⁸ of p in the middle band (red team
    rt49's family: the long paths' dropout rows drew p of 0.3-0.7 alone)."""

    def uniforms(self, shape, generator, device, kv_heads: int) -> torch.Tensor:
        u = super().uniforms(shape, generator, device, kv_heads)  # (B, H, Nq, Nk)
        return torch.floor(u * 256) / 256 if shape[-1] > 2 ** 14 else u  # the bug


long_keys_dropout_uniforms_of_eight_bits = _full_mutant(_LongKeysUniformsOfEightBits(),
    "long_keys_dropout_uniforms_of_eight_bits",
    "A decode over more than 2¹⁴ keys drawing dropout's uniforms with 8 bits: small p dropped up to 3.9× too often.")

MUTANTS = MUTANTS + (
    Mutant(long_keys_dropout_uniforms_of_eight_bits, "a long decode's dropout uniforms of 8 bits", "generated-dropout"),
)


# ----------------------------------------------------------- layouts of serving engines (red team rt49)

def packed_kv_cache_strides_from_nk(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                    enable_gqa=False):
    """A fast path for k, v interleaved in one (B, Ncap, 2, Hkv, D) cache that re-derives their strides from the cache's
    start as if it held exactly Nk rows: past batch entry 0 (and at any offset into the cache) it reads other rows."""
    if (q.dim() == 4 and k.shape == v.shape and k.untyped_storage().data_ptr() == v.untyped_storage().data_ptr()
            and k.dtype == v.dtype and k.numel() > 0):
        b, h, n, d = k.shape
        if k.stride() == v.stride() == (k.stride(0), d, 2 * h * d, 1) and v.storage_offset() - k.storage_offset() == h * d:
            base = torch.empty(0, dtype=k.dtype, device=k.device).set_(k.untyped_storage())
            strides = (n * 2 * h * d, d, 2 * h * d, 1)  # the bug: the batch stride of an Nk-row cache, offset 0
            k, v = base.as_strided(k.shape, strides, 0), base.as_strided(v.shape, strides, h * d)
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def rank5_kv_broadcast_read_by_flat_index(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                          enable_gqa=False):
    """Inputs of rank 5 or more with k, v broadcast along some batch dims, flattened and read at entry b mod (their
    entries): right for a broadcast along the leading dims, wrong along a later one (k of (B1, 1) read at b mod B1,
    not b // B2)."""
    lead = q.shape[:-3]
    if (q.dim() >= 5 and k.dim() == q.dim() and k.shape[:-3] != lead and math.prod(k.shape[:-3]) > 1
            and (attn_mask is None or attn_mask.dim() < 5)):
        index = torch.arange(math.prod(lead), device=q.device) % math.prod(k.shape[:-3])  # (B,): the bug
        kf, vf = (x.reshape(-1, *x.shape[-3:])[index] for x in (k, v))  # (B, Hkv, Nk, D)
        out = full_attention(q.reshape(-1, *q.shape[-3:]), kf, vf, attn_mask, dropout_p, is_causal, scale, enable_gqa)
        return out.unflatten(0, lead)
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(packed_kv_cache_strides_from_nk, "an interleaved KV cache's strides re-derived as if exactly Nk long",
           "generated-agreement"),
    Mutant(rank5_kv_broadcast_read_by_flat_index, "rank-5 k, v broadcast along the middle batch dim read by b mod B1",
           "generated-agreement"),
)


class _BackwardMaskRegeneratedPerKeyChunk(FullAttention):
    """A training path past 512 keys that keeps a seed, not the keep mask, and regenerates the mask in the backward
    chunk by chunk of 512 keys with the key offset restarting in each: the backward's mask is the forward's first
    chunk tiled along the keys (red team rt49's family: its chunks were of 4096 keys)."""

    def backward_dropout_mask(self, drop, p, dropout_p, kv_heads, dtype):
        drop = super().backward_dropout_mask(drop, p, dropout_p, kv_heads, dtype)  # (B, H, Nq, Nk)
        return _repeated_keys(drop, 512) if drop.shape[-1] > 512 else drop  # the bug


dropout_backward_mask_per_key_chunk = _full_mutant(_BackwardMaskRegeneratedPerKeyChunk(),
    "dropout_backward_mask_per_key_chunk",
    "Past 512 keys, the backward regenerates dropout's keep mask per 512-key chunk, each chunk's key offset from 0.")

MUTANTS = MUTANTS + (
    Mutant(dropout_backward_mask_per_key_chunk, "dropout's backward mask regenerated per 512-key chunk",
           "generated-dropout", backward=True),
)


# ------------------------------------- ranks, head dims and groups past the levels drawn before (red team rt49)

def rank6_wrapper_drops_is_causal(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                  enable_gqa=False):
    """Inputs of rank 6 or more go through a generic N-D wrapper that forwards every argument but is_causal."""
    if q.dim() >= 6:
        is_causal = False  # the bug
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def wide_heads_long_keys_one_channel_chunk(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                           enable_gqa=False):
    """Head dims of 257-512 over 1024 keys or more: a long-KV kernel whose q·k loop covers one 256-channel chunk."""
    if 256 < q.shape[-1] <= 512 and k.shape[-2] >= 1024:
        d = q.shape[-1]
        q, k = q[..., :256], k[..., :256]  # the bug: the scores of the first chunk of channels alone
        scale = d ** -0.5 if scale is None else scale
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def gqa_big_group_rows_unpacked_head_major(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                           enable_gqa=False):
    """GQA groups of 8 or more with 16 queries or more: a group's rows packed query-major (row i·g + j: query i, head
    j) and unpacked head-major (row j·Nq + i), so heads and queries are interleaved wrongly."""
    out = full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)  # (..., Hq, Nq, Dv)
    hq, hkv, n_q = (q.shape[-3], k.shape[-3], q.shape[-2]) if q.dim() == 4 else (1, 1, q.shape[-2])
    if q.dim() == 4 and enable_gqa and hkv < hq and hq % hkv == 0 and hq // hkv >= 8 and n_q >= 16:
        g = hq // hkv
        rows = out.unflatten(1, (hkv, g)).transpose(-2, -3).reshape(*out.shape[:1], hkv, n_q * g, -1)  # query-major
        out = rows.reshape(out.shape[0], hkv, g, n_q, -1).flatten(1, 2)  # the bug: read back head-major
    return out


MUTANTS = MUTANTS + (
    Mutant(rank6_wrapper_drops_is_causal, "rank-6 inputs through a wrapper dropping is_causal", "generated-agreement"),
    Mutant(wide_heads_long_keys_one_channel_chunk, "257-512 channels over 1024+ keys: q·k over one 256-channel chunk",
           "generated-agreement"),
    Mutant(gqa_big_group_rows_unpacked_head_major, "GQA groups of 8+ packed query-major, unpacked head-major",
           "generated-agreement"),
)


# ----------------------------------------------------------- callers, machines and sizes past the drawn ones (red team rt50)

def _mask_per_channel_block(impl: FullAttention, p, drop, v, dropout_p, kv_heads, dtype, width: int):
    """(P∘M_c/(1-p)) V_c for each block c of ``width`` channels of V, M_c a keep mask of the block's own (the first
    block's the forward's): every channel's weights a right Bernoulli mask, the channels of one weight not one mask."""
    blocks = [(p * (drop if lo == 0 else impl.dropout_mask(p, dropout_p, kv_heads, dtype))) @ v[..., lo:lo + width]
              for lo in range(0, v.shape[-1], width)]
    return torch.cat(blocks, dim=-1)  # (B, H, Nq, Dv)


class _DecodeValueBlocksRemasked(FullAttention):
    """A forward-only decode (1-8 queries) whose grid splits Dv into blocks of 32 channels, each block drawing its own
    keep mask (its Philox offset includes the block)."""

    def weighted_values(self, p, drop, v, dropout_p, kv_heads, dtype, training: bool):
        if drop is None or training or p.shape[-2] > 8 or v.shape[-1] <= 32:
            return super().weighted_values(p, drop, v, dropout_p, kv_heads, dtype, training)
        return _mask_per_channel_block(self, p, drop, v, dropout_p, kv_heads, dtype, 32)  # the bug


class _ValueChunksRemasked(FullAttention):
    """A forward-only path for Dv past 256 taking V in 256-channel chunks, each chunk drawing its own keep mask."""

    def weighted_values(self, p, drop, v, dropout_p, kv_heads, dtype, training: bool):
        if drop is None or training or v.shape[-1] <= 256:
            return super().weighted_values(p, drop, v, dropout_p, kv_heads, dtype, training)
        return _mask_per_channel_block(self, p, drop, v, dropout_p, kv_heads, dtype, 256)  # the bug


class _KeysMajorUniforms(FullAttention):
    """Dropout's uniforms drawn keys-major, (B, H, Nk, Nq) transposed."""

    def uniforms(self, shape, generator, device, kv_heads: int) -> torch.Tensor:
        return torch.rand(*shape[:-2], shape[-1], shape[-2], generator=generator, device=device).transpose(-2, -1)


_KEYS_MAJOR = _KeysMajorUniforms()


def dropout_stream_keyed_by_grad_mode(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                      enable_gqa=False):
    """Without grad (inference) the keep uniforms are drawn keys-major, with grad query-major: the same seed gives
    another mask in each mode, so activation checkpointing (forward under no_grad, recompute with grad) trains on the
    gradients of another mask than its loss's."""
    impl = full_attention if torch.is_grad_enabled() else _KEYS_MAJOR
    return impl(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


class _WorkerThreadGenerator(FullAttention):
    """Off the main thread, dropout draws from a generator of the thread's own, seeded once (at its first use) with
    torch.initial_seed(): torch.manual_seed no longer reproduces a worker thread's masks."""

    def __init__(self):
        self.local = threading.local()

    def generator(self, device):
        if threading.current_thread() is threading.main_thread():
            return super().generator(device)
        if getattr(self.local, "generator", None) is None:
            self.local.generator = torch.Generator(device=device).manual_seed(torch.initial_seed())
        return self.local.generator  # the bug: seeded once per thread


class _ThreadLocalDefaultScale(FullAttention):
    """Off the main thread, the default scale is a thread-local set at the thread's first call (1/√D of that call)."""

    def __init__(self):
        self.local = threading.local()

    def resolved_scale(self, scale, head_dim):
        if scale is not None or threading.current_thread() is threading.main_thread():
            return super().resolved_scale(scale, head_dim)
        if getattr(self.local, "scale", None) is None:
            self.local.scale = super().resolved_scale(None, head_dim)
        return self.local.scale  # the bug: the first call's


decode_value_blocks_remasked = _full_mutant(_DecodeValueBlocksRemasked(), "decode_value_blocks_remasked",
    "A forward-only decode drawing a keep mask per 32-channel block of V.")
value_chunks_remasked = _full_mutant(_ValueChunksRemasked(), "value_chunks_remasked",
    "A forward-only path for Dv past 256 drawing a keep mask per 256-channel chunk of V.")
worker_thread_dropout_generator = _full_mutant(_WorkerThreadGenerator(), "worker_thread_dropout_generator",
    "Off the main thread, dropout draws from a thread-local generator seeded once with torch.initial_seed().")
thread_local_default_scale = _full_mutant(_ThreadLocalDefaultScale(), "thread_local_default_scale",
    "Off the main thread, the default scale is cached at the thread's first call.")


def _split_k_into_eight_slots(q, k, v, splits: int, scale):
    """A split-K decode of ``splits`` splits whose merge has 8 slots: split t goes to slot t % 8, overwriting."""
    s = (q.float() @ k.float().transpose(-2, -1)) * (q.shape[-1] ** -0.5 if scale is None else scale)  # (..., 1, Nk)
    m = s.amax(-1, keepdim=True)
    bounds = [k.shape[-2] * t // splits for t in range(splits + 1)]
    slots = {}
    for t, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
        e = torch.exp(s[..., lo:hi] - m)
        slots[t % 8] = (e @ v[..., lo:hi, :].float(), e.sum(-1, keepdim=True))  # the bug: past 8 splits, overwritten
    acc, total = (sum(x[i] for x in slots.values()) for i in (0, 1))
    return (acc / total).to(q.dtype)


def _plain_decode(q, k, attn_mask, dropout_p, is_causal, enable_gqa) -> bool:
    return (q.dim() == 4 and q.shape[-2] == 1 and k.shape[-2] > 2 ** 12 and dropout_p == 0 and attn_mask is None
            and not is_causal and (q.shape[1] == k.shape[1] or enable_gqa))


def decode_splits_per_thread_into_eight_slots(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                              enable_gqa=False):
    """A split-K decode (one query over 4097+ keys) with a split per intra-op thread, merged into 8 slots: past 8
    threads, splits are lost."""
    if not _plain_decode(q, k, attn_mask, dropout_p, is_causal, enable_gqa):
        return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    k, v = ref.repeat_kv(k, q.shape[-3]), ref.repeat_kv(v, q.shape[-3])
    return _split_k_into_eight_slots(q, k, v, torch.get_num_threads(), scale)


def decode_splits_per_cpu_into_eight_slots(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                           enable_gqa=False):
    """As decode_splits_per_thread_into_eight_slots, with a split per CPU of the machine (os.cpu_count())."""
    if not _plain_decode(q, k, attn_mask, dropout_p, is_causal, enable_gqa):
        return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    k, v = ref.repeat_kv(k, q.shape[-3]), ref.repeat_kv(v, q.shape[-3])
    return _split_k_into_eight_slots(q, k, v, os.cpu_count() or 1, scale)


def decode_splits_per_thread_merged_by_halves(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                              enable_gqa=False):
    """A split-K decode (one query over 4097+ keys) with a split per intra-op thread from four threads on, merged by
    a halving tree, split t with split t + n/2: where the count is not a power of two the odd one is lost (red team
    rt57: 5-7 and 9-15 threads, where the harness ran 8, 16 and 32)."""
    if not _plain_decode(q, k, attn_mask, dropout_p, is_causal, enable_gqa) or torch.get_num_threads() < 4:
        return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    k, v = ref.repeat_kv(k, q.shape[-3]), ref.repeat_kv(v, q.shape[-3])
    s = (q.float() @ k.float().transpose(-2, -1)) * (q.shape[-1] ** -0.5 if scale is None else scale)  # (..., 1, Nk)
    e = torch.exp(s - s.amax(-1, keepdim=True))
    splits = torch.get_num_threads()
    bounds = [k.shape[-2] * t // splits for t in range(splits + 1)]
    parts = [(e[..., lo:hi] @ v[..., lo:hi, :].float(), e[..., lo:hi].sum(-1, keepdim=True))
             for lo, hi in zip(bounds, bounds[1:])]
    while len(parts) > 1:
        half = len(parts) // 2
        parts = [(a[0] + b[0], a[1] + b[1]) for a, b in zip(parts[:half], parts[half:2 * half])]  # the bug: an odd
        # count's last part dropped
    acc, total = parts[0]
    return (acc / total).to(q.dtype)


def causal_positions_in_the_default_dtype(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                          enable_gqa=False):
    """is_causal's positions built by torch.arange in torch.get_default_dtype(): under a half default (a model loader's
    torch.set_default_dtype(torch.float16)) positions past 2048 (bfloat16: 256) round, and rows see later keys."""
    if is_causal and attn_mask is None and q.shape[-2] > 1:
        rows, cols = torch.arange(float(q.shape[-2])), torch.arange(float(k.shape[-2]))  # the bug: the default dtype
        attn_mask = (cols[None, :] <= rows[:, None]).to(q.device)  # (Nq, Nk)
        is_causal = False
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def mqa_decode_128_head_tiles(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """MQA decoding (one KV head, 1-8 queries) in tiles of 128 query heads whose second 64 heads read the first 64's
    queries (MLA's 128 heads over one latent head)."""
    if q.dim() == 4 and k.dim() == 4 and k.shape[1] == 1 and q.shape[1] >= 128 and q.shape[-2] <= 8:
        heads = torch.arange(q.shape[1], device=q.device)
        q = q[:, heads - 64 * ((heads % 128) >= 64)]  # the bug: heads 64-127 of a tile read heads 0-63
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def causal_query_positions_in_uint16(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                     enable_gqa=False):
    """is_causal's query positions held in uint16: rows past 65 535 restart from 0."""
    if is_causal and attn_mask is None and q.shape[-2] > 2 ** 16:
        rows = torch.arange(q.shape[-2], device=q.device) % 2 ** 16  # the bug
        attn_mask = torch.arange(k.shape[-2], device=q.device)[None, :] <= rows[:, None]  # (Nq, Nk)
        is_causal = False
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(decode_value_blocks_remasked, "a decode's keep mask drawn per 32-channel block of V", "generated-dropout"),
    Mutant(value_chunks_remasked, "a keep mask drawn per 256-channel chunk of V", "generated-dropout"),
    Mutant(dropout_stream_keyed_by_grad_mode, "dropout's uniforms in another order without grad",
           "generated-dropout"),
    Mutant(worker_thread_dropout_generator, "a worker thread's dropout generator seeded once",
           "generated-dropout"),
    Mutant(thread_local_default_scale, "a worker thread's default scale cached at its first call", "thread-count",
           dtypes=(torch.float32,)),
    Mutant(decode_splits_per_thread_into_eight_slots, "a split-K decode's split per thread merged into 8 slots",
           "thread-count", dtypes=(torch.float32,)),
    Mutant(decode_splits_per_cpu_into_eight_slots, "a split-K decode's split per CPU merged into 8 slots",
           "thread-count", dtypes=(torch.float32,)),
    Mutant(decode_splits_per_thread_merged_by_halves, "a split-K decode's splits per thread merged by halves",
           "thread-count", dtypes=(torch.float32,)),
    Mutant(causal_positions_in_the_default_dtype, "causal positions built in the default dtype", "thread-count",
           dtypes=(torch.float32,)),
    Mutant(mqa_decode_128_head_tiles, "MQA decoding's 128-head tiles reading the first 64 heads' queries",
           "generated-agreement"),
    Mutant(causal_query_positions_in_uint16, "causal query positions in uint16", "generated-agreement"),
)


_STAGING: dict = {}


def half_inputs_staged_in_shared_buffers(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                         enable_gqa=False):
    """Half-precision inference upcasts q, k, v into module-level float32 staging buffers kept per shape, without a
    lock: concurrent float16 or bfloat16 callers of one shape compute on each other's inputs."""
    if q.dtype not in (torch.float16, torch.bfloat16) or torch.is_grad_enabled() and any(
            t.requires_grad for t in (q, k, v)) or dropout_p:
        return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    staged = []
    for name, x in zip("qkv", (q, k, v)):
        buffer = _STAGING.setdefault((name, tuple(x.shape), x.device), torch.empty(x.shape, device=x.device))  # the bug
        staged.append(buffer.copy_(x))
    time.sleep(LAUNCH_GAP)  # (the launch)
    return full_attention(*staged, attn_mask, dropout_p, is_causal, scale, enable_gqa).to(q.dtype)


MUTANTS = MUTANTS + (
    Mutant(half_inputs_staged_in_shared_buffers, "half inputs upcast into float32 staging buffers shared by callers",
           "concurrent-calls", dtypes=(torch.float16, torch.bfloat16)),
)


class _HashSeededDropout(FullAttention):
    """Dropout's seed is a draw from torch's generator mixed with hash() of a name: str hashing is randomised per
    process, so torch.manual_seed reproduces a run within a process only."""

    def generator(self, device):
        draw = int(torch.randint(0, 2 ** 62, (1,)))
        return torch.Generator(device=device).manual_seed(draw ^ (hash("attention-dropout") & (2 ** 62 - 1)))  # the bug


hash_seeded_dropout = _full_mutant(_HashSeededDropout(), "hash_seeded_dropout",
    "Dropout seeded by a draw from torch's generator XOR hash() of a str: not reproduced in another process.")


def avx2_path_drops_the_head_dim_tail(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                      enable_gqa=False):
    """On a CPU path below the machine's own (torch dispatching to a capability ATEN_CPU_CAPABILITY forced down, as a
    server without AVX-512 dispatches AVX2) q·k runs in 8-channel vectors and drops the tail past the last whole vector
    (D % 8 channels); the default scale is still 1/√D. (Keyed on the forced capability, not on "AVX2": on an AVX2-only
    machine the harness's child runs the default capability, and a bug of AVX2 alone showed in every process; CI's
    machine of 2026-12-07 was one.)"""
    d = q.shape[-1]
    if os.environ.get("ATEN_CPU_CAPABILITY") and d % 8 and d > 8:
        scale = d ** -0.5 if scale is None else scale
        q, k = q[..., :d // 8 * 8], k[..., :d // 8 * 8]  # the bug
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(hash_seeded_dropout, "dropout seeded with hash() of a str", "fresh-process", dtypes=(torch.float32,)),
    Mutant(avx2_path_drops_the_head_dim_tail, "an AVX2 path dropping the head dim's tail", "fresh-process",
           dtypes=(torch.float32,)),
)


class _RowStatsPerShape(FullAttention):
    """The forward keeps the rows' max and sum in a module-level workspace per shape and saves the scores; the backward
    recomputes P from them (flash-style)."""
    workspace: dict = {}  # scores' shape -> (row max, row sum): the bug, one for every call of the shape

    def backward_probabilities(self, p, s, unmasked, bias):
        m = s.amax(dim=-1, keepdim=True)  # (B, H, Nq, 1)
        self.workspace[tuple(s.shape)] = (m, torch.exp(s - m).sum(dim=-1, keepdim=True))
        return s

    def probabilities_from_saved(self, saved):
        m, total = self.workspace[tuple(saved.shape)]  # the last forward's of the shape
        return torch.exp(saved - m) / total


_ROW_STATS_PER_SHAPE = _RowStatsPerShape()


def half_training_row_stats_per_shape(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                      enable_gqa=False):
    """Half-precision MHA training without a mask keeps the backward's row max and sum in a module-level workspace per
    shape: a second forward of the same shape before the backward (the next layer) gives the first's backward its
    statistics."""
    impl = full_attention
    if (q.dtype in (torch.float16, torch.bfloat16) and q.dim() == 4 and k.dim() == 4 and k.shape[1] == q.shape[1]
            and q.shape[0] == k.shape[0] and attn_mask is None and not dropout_p and not is_causal
            and torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v))):
        impl = _ROW_STATS_PER_SHAPE  # the bug's path
    return impl(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(half_training_row_stats_per_shape, "a half MHA training path's row statistics in a per-shape workspace",
           "gradient-sequences", dtypes=(torch.float16, torch.bfloat16), backward=True),
)



class _RunningSumInTheAutocastDtype(BlockedAttention):
    def rescaled_sum(self, alpha, l):
        if torch.is_autocast_enabled(l.device.type):  # the bug: the running sum rounded to the autocast dtype
            return (alpha * l).to(torch.get_autocast_dtype(l.device.type)).to(l.dtype)
        return alpha * l


running_sum_in_the_autocast_dtype = _mutant(
    _RunningSumInTheAutocastDtype(), "running_sum_in_the_autocast_dtype",
    "Under torch.autocast the blocked loop's running sum is kept in the autocast dtype between key blocks (red team "
    "rt50: a kernel keeping its running statistics in the autocast dtype): past 2⁸ or 2¹¹ blocks' worth of weight "
    "(bfloat16, float16) a block's sum rounds away, and float16's overflows past 65 504.")


MUTANTS = MUTANTS + (
    Mutant(running_sum_in_the_autocast_dtype, "the running sum kept in the autocast dtype between key blocks",
           "thread-count", dtypes=(torch.float16, torch.bfloat16)),
)


# --------------------------------------------------------------------------- red team rt51: the callers of a training
# step, rank 2, and float16 outputs below its least normal

class _RowStatsPerThread(FullAttention):
    """The forward keeps the rows' max and sum in a workspace of its thread's own, keyed by the saved scores' buffer,
    and saves the scores; the backward recomputes P from them (flash-style), reading the workspace of the thread it
    runs on."""

    def backward_probabilities(self, p, s, unmasked, bias):
        m = s.amax(dim=-1, keepdim=True)  # (B, H, Nq, 1)
        _workspace().update({s.data_ptr(): (m, torch.exp(s - m).sum(dim=-1, keepdim=True))})
        return s

    def probabilities_from_saved(self, saved):
        # the bug: the backward's thread's workspace, a fresh one (max 0, sum 1) on a thread its forward did not run on
        m, total = _workspace().get(saved.data_ptr(), (torch.zeros(()), torch.ones(())))
        return torch.exp(saved - m) / total


def _workspace() -> dict:
    """This thread's workspace: one per thread, made at its first use."""
    if not hasattr(_THREAD_WORKSPACES, "stats"):
        _THREAD_WORKSPACES.stats = {}
    return _THREAD_WORKSPACES.stats


_THREAD_WORKSPACES = threading.local()

backward_workspace_per_thread = _full_mutant(
    _RowStatsPerThread(), "backward_workspace_per_thread",
    "The backward reads the row statistics from a workspace of the thread it runs on, which the forward filled on its "
    "own (red team rt51): right while forward and backward share a thread, as on the CPU by default; on CUDA autograd "
    "runs the backward on a device thread of its own.")


class _CausalBackward(torch.autograd.Function):
    """The forward is full_attention's with is_causal; the backward differentiates full_attention under a causal mask it
    builds itself."""

    @staticmethod
    def forward(ctx, q, k, v, scale, enable_gqa):
        ctx.save_for_backward(q, k, v)
        ctx.options = scale, enable_gqa
        return full_attention(q, k, v, is_causal=True, scale=scale, enable_gqa=enable_gqa)

    @staticmethod
    def backward(ctx, dout):
        q, k, v = ctx.saved_tensors
        i = torch.arange(0, q.shape[-2], 1.0)[:, None]  # (Nq, 1): the bug, positions in the default dtype
        j = torch.arange(0, k.shape[-2], 1.0)[None, :]  # (1, Nk)
        with torch.enable_grad():
            leaves = [t.detach().requires_grad_() for t in (q, k, v)]
            out = full_attention(*leaves, attn_mask=j <= i, scale=ctx.options[0], enable_gqa=ctx.options[1])
            return (*torch.autograd.grad(out, leaves, dout), None, None)


def backward_causal_positions_in_the_default_dtype(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False,
                                                   scale=None, enable_gqa=False):
    """A causal training call's backward builds the causal mask from positions made by torch.arange(0, N, 1.0), in the
    default dtype (red team rt51): under a default dtype of bfloat16 (a model loaded in it) rows past 256 see keys
    past them; the forward is right."""
    if (is_causal and attn_mask is None and not dropout_p and q.dim() == 4 and torch.is_grad_enabled()
            and any(t.requires_grad for t in (q, k, v))):
        return _CausalBackward.apply(q, k, v, scale, enable_gqa)
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def training_under_autocast_in_float16(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                       enable_gqa=False):
    """Under torch.autocast a training call (an input requiring grad) runs its float16 kernel whatever the autocast
    dtype (red team rt51): under bfloat16 autocast its output is float16."""
    device = q.device.type
    if (torch.is_autocast_enabled(device) and torch.is_grad_enabled()
            and any(t.requires_grad for t in (q, k, v))):
        with torch.autocast(device, enabled=False):
            return full_attention(*(t.to(torch.float16) for t in (q, k, v)), attn_mask, dropout_p, is_causal, scale,
                                  enable_gqa)  # the bug: float16, not torch.get_autocast_dtype(device)
    return autocast_as_sdpa(full_attention)(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def causal_dropped_at_rank_two(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                               enable_gqa=False):
    """(N, D) inputs, which SDPA takes as one entry of one head, go through a 2-D path that drops is_causal (red team
    rt51)."""
    if q.dim() == 2:
        is_causal = False  # the bug
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def float16_outputs_flushed_below_normal(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                         enable_gqa=False):
    """The float16 output is stored flushing subnormals to zero (red team rt51's fp16_store_ftz): outputs below 2⁻¹⁴
    (6.1e-5) become 0, small values' attention over v of 1e-6."""
    out = full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    if out.dtype != torch.float16:
        return out
    return out.masked_fill(out.abs() < torch.finfo(torch.float16).smallest_normal, 0.0)  # the bug


MUTANTS = MUTANTS + (
    Mutant(backward_workspace_per_thread, "the backward's row statistics read from its own thread's workspace",
           "thread-count", dtypes=(torch.float32,), backward=True),
    Mutant(backward_causal_positions_in_the_default_dtype, "a backward's causal positions in the default dtype",
           "thread-count", dtypes=(torch.float32,), backward=True),
    Mutant(training_under_autocast_in_float16, "a training call under autocast in float16 whatever its dtype",
           "thread-count", dtypes=(torch.bfloat16,), backward=True),
    Mutant(causal_dropped_at_rank_two, "is_causal dropped on (N, D) inputs", "generated-agreement"),
    Mutant(float16_outputs_flushed_below_normal, "float16 outputs flushed to 0 below its least normal",
           "generated-agreement", dtypes=(torch.float16,)),
)


LONG_CONTEXT_QUERIES, LONG_CONTEXT_KEYS = 9, 2 ** 14  # the chunked-prefill path of the mutants below


def _long_context_chunk(q, k) -> bool:
    """A chunk of 9 queries or more over more than 2¹⁴ keys: a kernel's chunked-prefill path (split over the KV cache)."""
    return q.shape[-2] >= LONG_CONTEXT_QUERIES and k.shape[-2] > LONG_CONTEXT_KEYS


def long_context_prefill_drops_the_mask(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                        enable_gqa=False):
    """The chunked-prefill path (9 queries or more over more than 2¹⁴ keys) never reads attn_mask (red team rt51's
    prefill_long_mask_dropped): right for the decode and the prompt's own prefill, which take other paths."""
    if _long_context_chunk(q, k):
        attn_mask = None  # the bug
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def long_context_prefill_without_dropout(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                         enable_gqa=False):
    """The chunked-prefill path (9 queries or more over more than 2¹⁴ keys) has no dropout (red team rt51's
    prefill_long_no_dropout)."""
    if _long_context_chunk(q, k):
        dropout_p = 0.0  # the bug
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(long_context_prefill_drops_the_mask, "a chunked prefill over a long context dropping the mask",
           "generated-agreement"),
    Mutant(long_context_prefill_without_dropout, "a chunked prefill over a long context without dropout",
           "generated-dropout", dtypes=(torch.float32,)),
)


# --------------------------------------------------------------------------- red team rt52: values drawn from lists
# (group sizes, explicit scales, head dims, mask magnitudes) and inputs never exactly 0 at the ends


def _group(q, k) -> int:
    """Query heads per KV head (dim -3), 1 below rank 3."""
    return q.shape[-3] // k.shape[-3] if q.dim() >= 3 and k.dim() >= 3 and k.shape[-3] else 1


def _groups_of_five_to_seven(q, k, enable_gqa) -> bool:
    return enable_gqa and k.dim() >= 3 and k.shape[-3] >= 2 and 5 <= _group(q, k) <= 7


def gqa_groups_of_five_to_seven_tiled(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                      enable_gqa=False):
    """Groups of 5 to 7 query heads over two KV heads or more take the KV heads tiled (head h reads KV head h % Hkv),
    not grouped (red team rt52's b07): a packing written for groups of 2, 4 and 8, where a power-of-two layout kept
    the two the same in the tests."""
    if _groups_of_five_to_seven(q, k, enable_gqa):
        g = _group(q, k)
        k, v, enable_gqa = torch.cat([k] * g, dim=-3), torch.cat([v] * g, dim=-3), False  # the bug: tiled
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


class _FirstFourOfEachGroup(torch.autograd.Function):
    """Each KV head repeated over its group (forward), the group's gradients summed over its first four heads alone
    (backward)."""

    @staticmethod
    def forward(ctx, x, g):
        ctx.g = g
        return x.repeat_interleave(g, dim=-3)

    @staticmethod
    def backward(ctx, grad):
        grouped = grad.unflatten(-3, (grad.shape[-3] // ctx.g, ctx.g))  # (..., Hkv, G, N, D)
        return grouped.narrow(-3, 0, 4).sum(dim=-3), None  # the bug: a group of four heads summed


def gqa_backward_sums_four_heads_of_groups_of_five_to_seven(q, k, v, attn_mask=None, dropout_p=0.0,
                                                            is_causal=False, scale=None, enable_gqa=False):
    """For groups of 5 to 7 query heads over two KV heads or more, dk and dv sum the gradients of the first four heads
    of each group only (red team rt52's b13: a backward reduction unrolled for groups of at most four); the forward
    is right."""
    if _groups_of_five_to_seven(q, k, enable_gqa):
        g = _group(q, k)
        k, v, enable_gqa = _FirstFourOfEachGroup.apply(k, g), _FirstFourOfEachGroup.apply(v, g), False
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


class _OtherBackward(torch.autograd.Function):
    """The forward full_attention's with ``options``; the backward the gradients of ``recompute`` (full_attention's
    signature) with ``backward_options(options)``, passed through ``grads(dq, dk, dv)``: one bug of a backward, its
    forward right."""

    @staticmethod
    def forward(ctx, q, k, v, options, backward_options, grads, recompute):
        ctx.save_for_backward(q, k, v)
        ctx.options, ctx.backward_options, ctx.grads, ctx.recompute = options, backward_options, grads, recompute
        return full_attention(q, k, v, **options)

    @staticmethod
    def backward(ctx, dout):
        with torch.enable_grad():
            leaves = [t.detach().requires_grad_() for t in ctx.saved_tensors]
            out = ctx.recompute(*leaves, **ctx.backward_options(ctx.options))
            return (*ctx.grads(*torch.autograd.grad(out, leaves, dout)), None, None, None, None)


def _backward_bug(q, k, v, options: dict, backward_options=lambda options: options, grads=lambda *g: g,
                  recompute=full_attention):
    """full_attention with ``options`` whose backward has the bug (_OtherBackward), where a backward runs (grad enabled,
    one of q, k, v requiring it, no dropout, no mask requiring grad); full_attention itself elsewhere."""
    mask = options.get("attn_mask")
    if (options.get("dropout_p", 0.0) or not torch.is_grad_enabled() or not any(t.requires_grad for t in (q, k, v))
            or isinstance(mask, torch.Tensor) and mask.requires_grad):
        return full_attention(q, k, v, **options)
    return _OtherBackward.apply(q, k, v, options, backward_options, grads, recompute)


def backward_reads_scale_one_as_unset(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                      enable_gqa=False):
    """The backward reads an explicit scale of 1.0 as unset and uses 1/√D (red team rt52's b27: `scale or default`
    on a launch argument defaulting to 1.0); the forward is right."""
    options = dict(attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)
    if scale == 1.0:
        return _backward_bug(q, k, v, options, lambda o: {**o, "scale": None})  # the bug: 1.0 read as unset
    return full_attention(q, k, v, **options)


def scale_near_one_snapped(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """An explicit scale within 5% of 1 is taken as 1 (red team rt52's b32: a kernel specialised for unscaled
    scores, chosen by a tolerance)."""
    if scale is not None and abs(float(scale) - 1.0) < 0.05:
        scale = 1.0  # the bug
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def head_dim_past_1024_truncated(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """Past 1024 channels q and k are read to their 1024th only, the default scale still 1/√D (red team rt52's b10:
    a channel loop bounded by the widest template)."""
    d = q.shape[-1]
    if d > 1024:
        scale = 1.0 / math.sqrt(d) if scale is None else scale
        q, k = q[..., :1024], k[..., :1024]  # the bug
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def _trailing_zero_rows(*tensors) -> int:
    """How many rows (dim -2) at the end are exactly 0 in every one of ``tensors``, in every entry and head."""
    zero = torch.stack([(t == 0).flatten(0, -3).all(dim=0).all(dim=-1) if t.dim() > 2 else (t == 0).all(dim=-1)
                        for t in tensors]).all(dim=0)  # (N,)
    n = zero.shape[0]
    return n - int(torch.nonzero(~zero).max()) - 1 if (~zero).any() else 0


def trailing_zero_keys_dropped(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """Keys at the end whose k and v rows are exactly 0 everywhere are taken for right padding and dropped (red team
    rt52's b02: a varlen kernel unpadding by value); SDPA attends to them (score 0)."""
    t = _trailing_zero_rows(k, v)
    if t:
        n = k.shape[-2] - t
        k, v = k[..., :n, :], v[..., :n, :]  # the bug
        if isinstance(attn_mask, torch.Tensor) and attn_mask.shape[-1] > 1:
            attn_mask = attn_mask[..., :n]
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def trailing_zero_queries_answered_zero(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                        enable_gqa=False):
    """Query rows at the end that are exactly 0 everywhere (some row not) are taken for padding and answered 0 (red
    team rt52's b12); SDPA answers a zero query with the mean of the values it sees."""
    out = full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    t = _trailing_zero_rows(q)
    if 0 < t < q.shape[-2]:
        out = out.clone()
        out[..., q.shape[-2] - t:, :] = 0  # the bug
    return out


def small_frozen_mask_read_as_zero_inf(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                       enable_gqa=False):
    """A float mask that does not require grad and whose finite values are all below 1e-3 in size is taken for a
    0/-inf mask and sent to the boolean path (red team rt52's b03: a fast path chosen by a tolerance)."""
    if (isinstance(attn_mask, torch.Tensor) and attn_mask.is_floating_point() and not attn_mask.requires_grad
            and attn_mask.numel()):
        finite = attn_mask[attn_mask.isfinite()]
        if finite.numel() and float(finite.abs().max()) < 1e-3:
            attn_mask = attn_mask > float("-inf")  # the bug
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(gqa_groups_of_five_to_seven_tiled, "groups of 5 to 7 query heads take the KV heads tiled",
           "generated-agreement"),
    Mutant(gqa_backward_sums_four_heads_of_groups_of_five_to_seven,
           "dk, dv summed over four heads of groups of 5 to 7", "generated-gradients", backward=True),
    Mutant(backward_reads_scale_one_as_unset, "the backward reads an explicit scale of 1.0 as unset",
           "generated-gradients", backward=True),
    Mutant(scale_near_one_snapped, "an explicit scale within 5% of 1 taken as 1", "generated-agreement",
           dtypes=(torch.float32,)),
    Mutant(head_dim_past_1024_truncated, "q and k read to their 1024th channel past it", "generated-agreement"),
    Mutant(trailing_zero_keys_dropped, "trailing zero keys dropped as padding", "generated-agreement"),
    Mutant(trailing_zero_queries_answered_zero, "trailing zero queries answered 0", "generated-agreement"),
    Mutant(small_frozen_mask_read_as_zero_inf, "a frozen mask below 1e-3 read as 0/-inf", "generated-agreement",
           dtypes=(torch.float32,)),
)


CHUNKED_PREFILL_QUERIES, CHUNKED_PREFILL_KEYS = (257, 1024), 2 ** 14  # the chunked-prefill path of the mutants below


def _chunked_prefill(q, k) -> bool:
    """A chunk of 257-1024 queries over more than 2¹⁴ keys: a serving kernel's chunked prefill over a long KV cache."""
    return CHUNKED_PREFILL_QUERIES[0] <= q.shape[-2] <= CHUNKED_PREFILL_QUERIES[1] and k.shape[-2] > CHUNKED_PREFILL_KEYS


def chunked_prefill_causal_bottom_right(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                        enable_gqa=False):
    """The chunked-prefill path (257-1024 queries over more than 2¹⁴ keys) aligns is_causal bottom-right, the chunk
    being the prompt's last tokens, as vLLM-style kernels do (red team rt52's b16); SDPA aligns it top-left."""
    if is_causal and _chunked_prefill(q, k):
        n_q, n_k = q.shape[-2], k.shape[-2]
        visible = torch.ones(n_q, n_k, dtype=torch.bool, device=q.device).tril(n_k - n_q)  # the bug: bottom-right
        return full_attention(q, k, v, visible, dropout_p, False, scale, enable_gqa)
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def chunked_prefill_drops_the_mask(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                   enable_gqa=False):
    """The chunked-prefill path (257-1024 queries over more than 2¹⁴ keys) never reads attn_mask (red team rt52's
    b17)."""
    if _chunked_prefill(q, k):
        attn_mask = None  # the bug
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(chunked_prefill_causal_bottom_right, "a chunked prefill over a long KV cache aligned bottom-right",
           "generated-agreement"),
    Mutant(chunked_prefill_drops_the_mask, "a chunked prefill over a long KV cache dropping the mask",
           "generated-agreement"),
)


TRAINING_LENGTH = 512  # the training path of the mutants below: two entries or more, 512 queries and keys or more


def _training_step(q, k) -> bool:
    """A batch of two entries or more over 512 queries and 512 keys or more: a training kernel's backward."""
    return q.dim() == 4 and q.shape[0] >= 2 and min(q.shape[-2], k.shape[-2]) >= TRAINING_LENGTH


def _options(attn_mask, dropout_p, is_causal, scale, enable_gqa) -> dict:
    return dict(attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)


def training_dq_of_the_last_entry(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                  enable_gqa=False):
    """At training shapes every batch entry's dq is the last entry's: a dq workspace indexed by head alone, the
    batch's programs each overwriting it (red team rt53's family: backward bugs at training shapes alone)."""
    options = _options(attn_mask, dropout_p, is_causal, scale, enable_gqa)
    if _training_step(q, k):
        return _backward_bug(q, k, v, options, grads=lambda dq, dk, dv: (dq[-1:].expand_as(dq).clone(), dk, dv))
    return full_attention(q, k, v, **options)


def training_causal_gqa_backward_without_causal(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                                enable_gqa=False):
    """At training shapes, a causal GQA backward recomputes P without causal (its grouped-rows kernel takes the
    causal flag from the MHA launch's argument list, one slot off); the forward is right."""
    options = _options(attn_mask, dropout_p, is_causal, scale, enable_gqa)
    if is_causal and enable_gqa and _training_step(q, k) and q.shape[-3] != k.shape[-3]:
        return _backward_bug(q, k, v, options, lambda o: {**o, "is_causal": False})
    return full_attention(q, k, v, **options)


def training_key_padding_of_entry_zero_in_backward(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False,
                                                   scale=None, enable_gqa=False):
    """At training shapes, the backward reads every entry's key padding ((B, 1, 1, Nk)) from entry 0; the forward
    reads each entry's own."""
    options = _options(attn_mask, dropout_p, is_causal, scale, enable_gqa)
    if (_training_step(q, k) and isinstance(attn_mask, torch.Tensor) and attn_mask.dim() == 4
            and attn_mask.shape[0] >= 2 and attn_mask.shape[1:3] == (1, 1)):
        return _backward_bug(q, k, v, options, lambda o: {**o, "attn_mask": o["attn_mask"][:1]})
    return full_attention(q, k, v, **options)


MUTANTS = MUTANTS + (
    Mutant(training_dq_of_the_last_entry, "dq of the batch's last entry for every entry, at training shapes",
           "generated-gradients", backward=True),
    Mutant(training_causal_gqa_backward_without_causal, "a causal GQA backward without causal, at training shapes",
           "generated-gradients", backward=True),
    Mutant(training_key_padding_of_entry_zero_in_backward,
           "the backward's key padding read from entry 0, at training shapes", "generated-gradients", backward=True),
)


def _packed_documents(m: torch.Tensor) -> bool:
    """Whether the boolean (Nq, Nk) slice ``m`` is causal documents: each row's visible keys one run ending at its
    diagonal, and a row past the first that starts a document (sees itself alone), as a varlen kernel's dispatcher
    recognises them."""
    n_q, n_k = m.shape
    i, j = torch.arange(n_q, device=m.device)[:, None], torch.arange(n_k, device=m.device)[None, :]
    first = torch.where(m.any(-1), m.to(torch.uint8).argmax(-1), n_k)  # (Nq,): each row's first visible key
    runs = (j >= first[:, None]) & (j <= i)  # (Nq, Nk)
    return bool((m == runs).all()) and bool((first[1:] == i[1:, 0]).any())


def packed_documents_of_the_first_slice(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                        enable_gqa=False):
    """A boolean mask of several (Nq, Nk) slices whose first is causal documents (packed sequences) is read as its
    first slice for every entry and head: the documents' boundaries (cu_seqlens) taken from entry 0 (red team rt53's
    packed-document family)."""
    if (isinstance(attn_mask, torch.Tensor) and attn_mask.dtype == torch.bool and attn_mask.dim() >= 3
            and attn_mask.shape[-2] >= 3 and math.prod(attn_mask.shape[:-2]) > 1):
        first = attn_mask.reshape(-1, *attn_mask.shape[-2:])[0]  # (Nq, Nk)
        if _packed_documents(first):
            attn_mask = first  # the bug
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(packed_documents_of_the_first_slice, "packed documents read from the mask's first slice for every slice",
           "generated-agreement"),
)


class _DropoutBackwardRewindsTheRng(FullAttention):
    """The backward regenerates the keep mask by rewinding torch's global generator to the forward's state, and
    leaves it there: right gradients, and every draw the caller made between its forward and its backward is made
    again after it (red team rt53's dropout backward; a kernel saving the generator's state instead of a seed and
    an offset)."""

    def dropout_mask(self, p, dropout_p, kv_heads, dtype):
        self.state = torch.get_rng_state()
        return super().dropout_mask(p, dropout_p, kv_heads, dtype)

    def backward_dropout_mask(self, drop, p, dropout_p, kv_heads, dtype):
        torch.set_rng_state(self.state)  # the bug: rewound, never put back
        return super().dropout_mask(p, dropout_p, kv_heads, dtype)


def dropout_backward_rewinds_the_rng(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                     enable_gqa=False):
    """:class:`_DropoutBackwardRewindsTheRng`, one per call (it keeps the forward's generator state)."""
    return _DropoutBackwardRewindsTheRng()(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


MUTANTS = MUTANTS + (
    Mutant(dropout_backward_rewinds_the_rng, "a dropout backward rewinding the caller's generator, never restored",
           "generated-dropout", backward=True),
)


def _dq_of_whole_thread_shares(q, k, v, is_causal, scale, enable_gqa):
    """Attention whose q-gradient sees only the keys of whole shares of torch.get_num_threads() (the scores of the
    leftover keys reach q through a detached copy): dq drops them; dk, dv and the output are right."""
    threads, n_k = torch.get_num_threads(), k.shape[-2]
    cut = n_k - n_k % threads
    if enable_gqa and q.shape[-3] != k.shape[-3]:
        k, v = (x.repeat_interleave(q.shape[-3] // k.shape[-3], dim=-3) for x in (k, v))  # (B, Hq, Nk, D)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = torch.cat([q @ k[..., :cut, :].transpose(-2, -1), q.detach() @ k[..., cut:, :].transpose(-2, -1)], -1)
    s = s.float() * scale  # (B, Hq, Nq, Nk)
    if is_causal:
        s = s.masked_fill(~torch.ones(q.shape[-2], n_k, dtype=torch.bool, device=q.device).tril(), float("-inf"))
    return (torch.softmax(s, -1) @ v.float()).to(q.dtype)


def backward_dq_drops_the_leftover_keys_past_four_threads(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False,
                                                          scale=None, enable_gqa=False):
    """On four threads or more the backward splits the keys into whole shares per thread, and dq drops the keys left
    over (Nk mod threads); the forward is right (red team rt53's threaded backward)."""
    options = _options(attn_mask, dropout_p, is_causal, scale, enable_gqa)
    threads = torch.get_num_threads()
    if threads >= 4 and k.shape[-2] % threads and attn_mask is None and q.dim() == 4:
        return _backward_bug(q, k, v, options, recompute=lambda q, k, v, attn_mask, dropout_p, **o:
                             _dq_of_whole_thread_shares(q, k, v, **o))
    return full_attention(q, k, v, **options)


MUTANTS = MUTANTS + (
    # (the paths' gradient rows on many threads run in a run's first dtype's pass: paths.threaded)
    Mutant(backward_dq_drops_the_leftover_keys_past_four_threads,
           "dq dropping the keys left over by whole shares per thread, on four threads or more", "thread-count",
           dtypes=(torch.float32,), backward=True),
)


def _split_k_decode(q, k, v, scale, enable_gqa, split: int, splits: int):
    """FlashDecoding's split-K: ``splits`` splits of ``split`` keys (the last ones empty past the keys), each split's
    normalised output o_c and log-sum-exp lse_c = m_c + log l_c, merged as
    Σ exp(lse_c - L)·o_c, L the log-sum-exp of the lse_c. An empty split's m_c is -inf, l_c 0 and o_c 0/0."""
    dtype = q.dtype
    if enable_gqa and q.shape[-3] != k.shape[-3]:
        k, v = (x.repeat_interleave(q.shape[-3] // k.shape[-3], dim=-3) for x in (k, v))  # (B, Hq, Nk, D)
    work = torch.float64 if dtype == torch.float64 else torch.float32
    q, k, v = (t.to(work) for t in (q, k, v))
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    outs, lses = [], []
    for c in range(splits):
        s = (q * scale) @ k[..., c * split:(c + 1) * split, :].transpose(-2, -1)  # (B, H, Nq, n)
        m = s.amax(-1, keepdim=True) if s.shape[-1] else s.new_full((*s.shape[:-1], 1), float("-inf"))
        e = torch.exp(s - m)
        l_c = e.sum(-1, keepdim=True)  # (B, H, Nq, 1)
        outs.append(e @ v[..., c * split:(c + 1) * split, :] / l_c)  # (B, H, Nq, Dv)
        lses.append(m + torch.log(l_c))
    lse = torch.stack(lses)  # (splits, B, H, Nq, 1)
    weights = torch.exp(lse - torch.logsumexp(lse, 0))
    return sum(w * o for w, o in zip(weights, outs)).to(dtype)


def _decode_path(q, k, attn_mask, dropout_p, is_causal) -> bool:
    """A split-K decode's shapes: 8 queries at most over 2048 keys or more, rank 4, no mask, causal or dropout."""
    return (q.dim() == 4 and q.shape[-2] <= 8 and k.shape[-2] >= 2048 and attn_mask is None and not is_causal
            and not dropout_p)


def split_k_with_an_empty_last_split(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                     enable_gqa=False):
    """A split-K decode launching Nk // 768 + 1 splits of 768 keys: where 768 divides Nk the last split is empty, and
    its 0/0 output poisons the merge with NaN (red team rt56: a length divisible by a split size)."""
    if _decode_path(q, k, attn_mask, dropout_p, is_causal):
        return _split_k_decode(q, k, v, scale, enable_gqa, 768, k.shape[-2] // 768 + 1)  # the bug: not ceil
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def _keys_cut(attn_mask, keys: int):
    """attn_mask over the first ``keys`` keys (a mask broadcast over the keys as it is)."""
    return attn_mask[..., :keys] if isinstance(attn_mask, torch.Tensor) and attn_mask.shape[-1] > 1 else attn_mask


def wide_head_key_tile_of_80_stops_early(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                         enable_gqa=False):
    """The wide-head template (D > 128, key tiles of 80, FA3's): its whole-tiles path, taken where 80 divides Nk,
    stops one key tile early (red team rt56: a length divisible by a tile)."""
    n_k = k.shape[-2]
    if q.shape[-1] > 128 and n_k >= 160 and n_k % 80 == 0:
        k, v, attn_mask = k[..., :-80, :], v[..., :-80, :], _keys_cut(attn_mask, n_k - 80)  # the bug
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def query_tile_of_96_last_tile_unwritten(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                         enable_gqa=False):
    """The 65-96-channel template (query tiles of 96): where 96 divides Nq its last query tile is never written (0)
    (red team rt56: a length divisible by a tile). Not among MUTANTS: the array of an impl without a backward met no
    medium head at such a length at seed 0 (test_rt56_families judges it on its problem)."""
    out = full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    n_q = q.shape[-2]
    if 64 < q.shape[-1] <= 96 and n_q >= 192 and n_q % 96 == 0:
        out = out.clone()
        out[..., -96:, :] = 0  # the bug
    return out


def k_expanded_over_the_batch_taken_as_a_shared_prompt(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False,
                                                       scale=None, enable_gqa=False):
    """k expanded over the batch (stride 0) is taken for a prompt shared by a beam: k's and v's first entry read for
    every entry, v's own strides unread (red team rt56: k and v expanded apart)."""
    if k.dim() == 4 and k.shape[0] > 1 and k.stride(0) == 0:
        v = v[:1].expand_as(v)  # the bug
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def _summed_over_stride_zero(grad, x):
    """grad as written through x's own strides: along a dim of stride 0 every entry holds the sum."""
    for dim, (n, stride) in enumerate(zip(x.shape, x.stride())):
        if stride == 0 and n > 1:
            grad = grad.sum(dim, keepdim=True).expand_as(grad).clone()
    return grad


def expanded_kv_gradients_written_through_their_strides(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False,
                                                        scale=None, enable_gqa=False):
    """dk and dv written into buffers of k's and v's strides: where k or v is expanded (stride 0 over the batch or the
    heads) every entry of its gradient holds the sum (red team rt56: the gradients of expanded k, v); the forward is
    right."""
    options = _options(attn_mask, dropout_p, is_causal, scale, enable_gqa)
    if any(s == 0 and n > 1 for x in (k, v) for n, s in zip(x.shape, x.stride())):
        return _backward_bug(q, k, v, options, grads=lambda dq, dk, dv: (
            dq, _summed_over_stride_zero(dk, k), _summed_over_stride_zero(dv, v)))
    return full_attention(q, k, v, **options)


def float64_beside_a_float32_mask_in_float32(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                             enable_gqa=False):
    """float64 q, k, v beside a float32 additive attn_mask computed in float32, the mask's dtype taken for the
    accumulators' (red team rt57); SDPA computes in float64."""
    options = _options(attn_mask, dropout_p, is_causal, scale, enable_gqa)
    if q.dtype == torch.float64 and attn_mask is not None and attn_mask.dtype == torch.float32:
        return full_attention(q.float(), k.float(), v.float(), **options).double()  # the bug
    return full_attention(q, k, v, **options)


def boolean_mask_of_equal_counts_read_as_key_padding(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False,
                                                      scale=None, enable_gqa=False):
    """A boolean attn_mask whose first and last rows agree and whose rows all see as many keys is taken for key padding
    and read from its first row (red team rt57: a mask-structure heuristic)."""
    if attn_mask is not None and attn_mask.dtype == torch.bool and attn_mask.dim() >= 2 and attn_mask.shape[-2] > 1:
        counts = attn_mask.sum(-1)  # (..., Nq)
        if bool((attn_mask[..., 0, :] == attn_mask[..., -1, :]).all()) and bool((counts == counts[..., :1]).all()):
            attn_mask = attn_mask[..., :1, :]  # the bug: one row for all
    return full_attention(q, k, v, **_options(attn_mask, dropout_p, is_causal, scale, enable_gqa))


MUTANTS = MUTANTS + (
    Mutant(boolean_mask_of_equal_counts_read_as_key_padding, "a boolean mask of equal row counts and equal first and "
           "last rows read as key padding", "generated-agreement"),
    Mutant(float64_beside_a_float32_mask_in_float32, "float64 inputs beside a float32 mask computed in float32",
           "generated-agreement"),
    Mutant(split_k_with_an_empty_last_split, "split-K decode with an empty last split where 768 divides Nk",
           "generated-agreement"),
    Mutant(wide_head_key_tile_of_80_stops_early, "key tiles of 80 past 128 channels stopping a tile early where 80 "
           "divides Nk", "generated-agreement"),
    Mutant(k_expanded_over_the_batch_taken_as_a_shared_prompt, "k expanded over the batch taken as a shared prompt, "
           "v's first entry read for every entry", "generated-agreement"),
    Mutant(expanded_kv_gradients_written_through_their_strides, "dk, dv of an expanded k or v written through its "
           "strides, every entry the sum", "generated-gradients", backward=True),
)
