"""Correct attention implementations written the way kernels compute them, one step per method.

``reference.py`` holds the mathematics (the float64 golden values, the plain same-precision
reference); these are the loops real kernels run, which the harness must pass all the same:

- :class:`BlockedAttention`: FlashAttention-2's forward, a loop over key blocks with a running max,
  running sum and unnormalised accumulator, float32 inside;
- :class:`PlainAttention`: unblocked scores → weights → weights · V, float32 inside;
- :class:`SplitKVAttention`: split-KV decoding (one query over many keys: splits merged by their
  maxima and sums), the blocked loop for every other shape;
- :class:`ManualBackwardAttention`: a hand-written backward, dS = P∘(dP - D) with D = rowsum(dO∘O);
- :class:`FullAttention`: SDPA's whole signature (attn_mask, dropout_p) with a hand-written
  backward that reuses the forward's dropout mask and gives an additive mask its gradient.

Every step a kernel can get wrong is a method, so ``kernels/mutants.py`` cuts each mutant from one
of these by overriding one step (or setting one parameter): a mutant reads as the one bug it is,
and these classes hold no bug. kernels/tests/test_mutants.py checks that each passes the harness.
"""
from __future__ import annotations

import functools
import math

import torch

from kernels.harness.reference import (default_scale, flattened_mask, leading_flattened, require_sdpa_inputs,
                                      require_sdpa_mask)
from kernels.harness.rounding_bound import declare_recipe

BLOCK = 16  # small, so the harness's lengths (37, 53, 127) span several blocks and a partial one
SPLIT = 1024  # keys per split of split-KV decoding (real kernels often split at 1024)


def work_dtype_for(dtype: torch.dtype) -> torch.dtype:
    """Accumulate in float32 for the half types, as kernels do; float64 stays float64."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def autocast_as_sdpa(fn):
    """fn (a design in PyTorch ops) as SDPA behaves under torch.autocast: its floating inputs but float64 ones (q, k, v,
    a float mask; half ones too, measured: SDPA answers bfloat16 for float16 inputs under bfloat16 autocast) cast to
    the autocast dtype, then run with autocast off, the rule torch.amp.custom_fwd(cast_inputs=...) gives a
    custom op. Without it autocast puts the design's own float32 matmuls back into the half dtype one by one: split-K's
    partial outputs rounded to float16 before their merge erred 1.33× past the float16 rule (measured: the tiles
    path's autocast row, seed 0), where SDPA's autocast answer is the half call's, bit for bit."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        device = next((a.device.type for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)), "cpu")
        if not torch.is_autocast_enabled(device):
            return fn(*args, **kwargs)
        half = torch.get_autocast_dtype(device)

        def cast(a):
            return a.to(half) if isinstance(a, torch.Tensor) and a.is_floating_point() and a.dtype != torch.float64 else a
        with torch.autocast(device, enabled=False):
            return fn(*map(cast, args), **{name: cast(a) for name, a in kwargs.items()})
    return call


def as_if_contiguous(t: torch.Tensor) -> torch.Tensor:
    """t's storage read with the strides a contiguous tensor of its shape would have."""
    return t.as_strided(t.shape, torch.empty(t.shape, device="meta").stride(), t.storage_offset())


def any_rank(call):
    """``call`` on 4-D (B, H, N, D) inputs made to take SDPA's (..., N, D) of any rank >= 2: rank 2 (N, D) as one head
    of one entry, rank 3 (B, N, D) as one batch entry of B heads, rank 5 and more with the leading dims flattened into
    B; the output gets the leading dims back."""
    @functools.wraps(call)
    def wrapped(self, q, k, v, *args, **kwargs):
        if q.dim() == k.dim() == v.dim() == 2:  # (a mask of at most two dims broadcasts over the two added)
            return call(self, q[None, None], k[None, None], v[None, None], *args, **kwargs)[0, 0]  # (Nq, Dv)
        if q.dim() == k.dim() == v.dim() == 4 or min(q.dim(), k.dim(), v.dim()) < 3:
            return call(self, q, k, v, *args, **kwargs)
        # (k, v broadcast along some leading dims but not all, as (B1, 1) against q's (B1, B2), expanded to q's first:
        # flattened alone they would pair the wrong entries; those of one entry broadcast as they are)
        four = [x.unsqueeze(0) if x.dim() == 3 else leading_flattened(
            x if x.shape[:-3] == q.shape[:-3] or math.prod(x.shape[:-3]) == 1 else x.expand(*q.shape[:-3], *x.shape[-3:]))
            for x in (q, k, v)]
        if q.dim() >= 5:  # a mask with leading dims of its own: flattened with q's (one of 3 dims broadcasts as it is)
            if args:
                args = (flattened_mask(args[0], q.shape[:-3]),) + tuple(args[1:])
            elif "attn_mask" in kwargs:
                kwargs = {**kwargs, "attn_mask": flattened_mask(kwargs["attn_mask"], q.shape[:-3])}
        out = call(self, *four, *args, **kwargs)  # (B', H, Nq, Dv)
        return out.reshape(*q.shape[:-1], out.shape[-1])
    return wrapped


class Options:
    """Parameters given at construction override the class's (``BlockedAttention(block=64)``); an
    unknown one is refused, naming it."""

    def __init__(self, **options):
        for name, value in options.items():
            if not hasattr(type(self), name) or callable(getattr(type(self), name)):
                raise TypeError(f"{type(self).__name__} has no parameter {name!r}")
            setattr(self, name, value)


class Attention(Options):
    """The steps every implementation here shares: scale, KV heads, causal visibility."""

    def resolved_scale(self, scale, head_dim: int) -> float:
        return default_scale(head_dim) if scale is None else scale

    def head_index(self, hq: int, hkv: int, device) -> torch.Tensor:
        """The KV head each query head reads: SDPA maps query head h to KV head h // (Hq / Hkv)."""
        return torch.arange(hq, device=device) // (hq // hkv)

    def kv_for_query_heads(self, q, k, v, enable_gqa: bool):
        """k, v with one head per query head."""
        require_sdpa_inputs(q, k, v)
        hq, hkv = q.shape[1], k.shape[1]
        if hq == hkv:
            return k, v
        if v.shape[1] != hkv:  # SDPA maps v's heads by v's own count: k's map would read the wrong v heads
            raise ValueError(f"k has {hkv} heads and v {v.shape[1]}: k and v of different head counts are not served")
        if not enable_gqa and hkv != 1:  # SDPA's contract: one KV head broadcasts, other counts need enable_gqa
            raise ValueError(f"q has {hq} heads but k and v have {hkv}; pass enable_gqa=True")
        index = self.head_index(hq, hkv, q.device)
        return k[:, index], v[:, index]  # (B, Hq, Nk, D)

    def working_scores(self, q, k, v, scale, enable_gqa):
        """(q, k, v in the work dtype with one KV head per query head, the scale used, the scores)."""
        k, v = self.kv_for_query_heads(q, k, v, enable_gqa)
        q, k, v = (t.to(work_dtype_for(q.dtype)) for t in (q, k, v))
        scale = self.resolved_scale(scale, q.shape[-1])
        return q, k, v, scale, (q * scale) @ k.transpose(-2, -1)  # (B, H, Nq, Nk)

    def visible(self, n_q: int, n_k: int, device) -> torch.Tensor:
        """Causal, top-left aligned as SDPA: query i sees key j iff j <= i."""
        i = torch.arange(n_q, device=device)[:, None]  # (Nq, 1)
        j = torch.arange(n_k, device=device)[None, :]  # (1, Nk)
        return j <= i  # (Nq, Nk)


def summed_over_groups(g: torch.Tensor, hkv: int) -> torch.Tensor:
    """A gradient per query head (B, Hq, N, D) summed over each KV head's group: (B, Hkv, N, D)."""
    b, hq = g.shape[:2]
    return g.reshape(b, hkv, hq // hkv, *g.shape[2:]).sum(2)


# ============================================================================ forward loops


class BlockedAttention(Attention):
    """FlashAttention-2's loop in PyTorch: for each key block, update (m, l, acc); divide once."""

    block = BLOCK
    work_dtype = None  # None: float32 inside (float64 stays); "input": the input's own; or a dtype
    sentinel = float("-inf")  # what a hidden key's score is set to

    @any_rank
    def __call__(self, q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
        out_dtype = q.dtype
        work = q.dtype if self.work_dtype == "input" else (self.work_dtype or work_dtype_for(q.dtype))
        scale = self.resolved_scale(scale, q.shape[-1])
        k, v = self.kv_for_query_heads(q, k, v, enable_gqa)
        q, k, v = (t.to(work) for t in (q, k, v))
        n_q, n_k = q.shape[-2], k.shape[-2]
        visible = self.visible(n_q, n_k, q.device) if is_causal else None
        m = torch.full(q.shape[:-1] + (1,), float("-inf"), dtype=work, device=q.device)  # (B, H, Nq, 1)
        l = torch.zeros_like(m)  # (B, H, Nq, 1)
        acc = torch.zeros(q.shape[:-1] + (v.shape[-1],), dtype=work, device=q.device)  # (B, H, Nq, Dv)
        for j0 in self.block_starts(n_k):
            kb, vb = k[:, :, j0:j0 + self.block], v[:, :, j0:j0 + self.block]  # (B, H, bn, D)
            s = self.scores(q, kb, scale)  # (B, H, Nq, bn)
            if visible is not None:
                s = s.masked_fill(~visible[:, j0:j0 + self.block], self.sentinel)
            m_new = self.running_max(m, s)  # (B, H, Nq, 1)
            m_safe = self.guarded(m_new)
            alpha = torch.exp(m - m_safe)  # rescales what was accumulated under the old max
            p = torch.exp(s - m_safe)  # (B, H, Nq, bn)
            l = self.rescaled_sum(alpha, l) + p.sum(dim=-1, keepdim=True)
            acc = self.rescaled_accumulator(alpha, acc) + self.block_values(p, vb, out_dtype)  # (B, H, Nq, Dv)
            m = m_new
        return self.stored(self.normalised(acc, l), out_dtype)

    def block_starts(self, n_k: int) -> list[int]:
        return list(range(0, n_k, self.block))

    def scores(self, q, kb, scale):
        return (q * scale) @ kb.transpose(-2, -1)  # (B, H, Nq, bn)

    def running_max(self, m, s):
        return torch.maximum(m, s.amax(dim=-1, keepdim=True))

    def guarded(self, m_new):
        """-inf - (-inf) guarded: a row with every key so far hidden keeps m = -inf, exp uses 0."""
        return torch.where(torch.isinf(m_new), 0.0, m_new)

    def rescaled_sum(self, alpha, l):
        return alpha * l

    def rescaled_accumulator(self, alpha, acc):
        return alpha * acc

    def block_values(self, p, vb, dtype):
        """A key block's P·V, its weights not yet normalised (``dtype``: the inputs', a kernel's tile type)."""
        return p @ vb  # (B, H, Nq, Dv)

    def normalised(self, acc, l):
        """acc / l; a row that saw no key (Nk = 0: l = acc = 0) gives 0, as SDPA, not 0/0. A NaN l
        (an unguarded -inf - (-inf)) is not 0 and stays NaN."""
        return torch.where(l == 0, 0.0, acc / l)  # (B, H, Nq, Dv)

    def stored(self, out, out_dtype):
        return out.to(out_dtype)


@autocast_as_sdpa  # (its declared recipe is float32 accumulators: autocast must not put its matmuls into a half dtype)
def blocked_attention(q, k, v, *, is_causal=False, scale=None, enable_gqa=False, block=BLOCK, work_dtype=None):
    """:class:`BlockedAttention` behind SDPA's signature (``block``, ``work_dtype``: its parameters)."""
    return BlockedAttention(block=block, work_dtype=work_dtype)(q, k, v, is_causal=is_causal, scale=scale,
                                                                enable_gqa=enable_gqa)


declare_recipe(blocked_attention, "float32-blocked")  # the mutants (other functions) are judged as "loosest"


class PlainAttention(Attention):
    """Unblocked attention in float32: scores, then ``weights``, then weights · V."""

    @any_rank
    def __call__(self, q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
        dtype = q.dtype
        q, k, v, _, s = self.working_scores(q, k, v, scale, enable_gqa)  # s: (B, H, Nq, Nk)
        visible = self.visible(q.shape[-2], k.shape[-2], q.device) if is_causal else None
        return (self.weights(s, visible) @ v).to(dtype)  # (B, H, Nq, Dv)

    def weights(self, s, visible):
        """softmax over the keys, hidden ones at -inf (top-left causal leaves every row a key)."""
        return torch.softmax(masked(s, visible), dim=-1)


def masked(s, visible):
    return s if visible is None else s.masked_fill(~visible, float("-inf"))


class SplitKVAttention(Attention):
    """Split-KV decoding (at most ``decode_queries`` queries, not causal, more than ``split`` keys):
    each split's softmax output o_c with its max m_c and sum l_c per query row, merged as
    Σ w_c o_c / Σ w_c with w_c = l_c·exp(m_c - m), m the largest m_c. Every other shape takes the blocked loop."""

    split = SPLIT
    decode_queries = 8  # FlashDecoding's split path serves a few queries (speculative decoding) too

    @any_rank
    def __call__(self, q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
        if q.shape[-2] > self.decode_queries or is_causal or k.shape[-2] <= self.split:
            return blocked_attention(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)
        dtype = q.dtype
        k, v = self.kv_for_query_heads(q, k, v, enable_gqa)
        q, k, v = (t.to(work_dtype_for(dtype)) for t in (q, k, v))
        scale = self.resolved_scale(scale, q.shape[-1])
        outs, maxima, sums = [], [], []
        for j0 in self.split_starts(k.shape[-2]):
            s = (q * scale) @ k[:, :, j0:j0 + self.split].transpose(-2, -1)  # (B, H, Nq, n)
            maxima.append(s.amax(dim=-1, keepdim=True))  # (B, H, Nq, 1)
            e = torch.exp(s - maxima[-1])
            sums.append(e.sum(dim=-1, keepdim=True))  # (B, H, Nq, 1)
            outs.append(e @ v[:, :, j0:j0 + self.split] / sums[-1])  # (B, H, Nq, Dv)
        m = torch.stack(maxima).amax(dim=0)  # (B, H, Nq, 1)
        weights = [self.merge_weight(l_c, m_c, m) for l_c, m_c in zip(sums, maxima)]
        return (sum(w * o for w, o in zip(weights, outs)) / sum(weights)).to(dtype)

    def split_starts(self, n_k: int) -> list[int]:
        return list(range(0, n_k, self.split))

    def merge_weight(self, l_c, m_c, m):
        """A split's weight in the merge: its sum, brought from its own max m_c to the common m."""
        return l_c * torch.exp(m_c - m)


# ============================================================================ hand-written backward


class _ManualFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, impl, q, k, v, is_causal, scale, enable_gqa):
        return impl.forward(ctx, q, k, v, is_causal, scale, enable_gqa)

    @staticmethod
    def backward(ctx, dout):
        return (None,) + ctx.impl.differentiated(ctx, dout) + (None, None, None)


class ManualBackwardAttention(Attention):
    """Attention with a backward written by hand, as a kernel's backward pass computes it. A custom autograd
    Function: under torch.autocast it takes torch.amp.custom_fwd(cast_inputs=...)'s rule (autocast_as_sdpa), as SDPA
    does; left to autocast, its forward saved half weights beside float32 inputs and its backward raised on the mix
    (a training step's autocast rows, paths.threaded)."""

    @autocast_as_sdpa
    @any_rank
    def __call__(self, q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
        return _ManualFunction.apply(self, q, k, v, is_causal, scale, enable_gqa)

    def forward(self, ctx, q, k, v, is_causal, scale, enable_gqa):
        dtype, hq, hkv = q.dtype, q.shape[1], k.shape[1]
        q32, k32, v32, scale, s = self.working_scores(q, k, v, scale, enable_gqa)  # s: (B, H, Nq, Nk)
        if is_causal:
            s = s.masked_fill(~self.visible(q.shape[-2], k.shape[-2], q.device), float("-inf"))
        p = torch.softmax(s, dim=-1)  # (B, H, Nq, Nk)
        out = p @ v32  # (B, H, Nq, Dv)
        result = out.to(dtype)  # out itself in float32
        self.save(ctx, (q32, k32, v32, self.saved_probabilities(s, p, dtype), out), result)
        ctx.impl, ctx.meta = self, (dtype, scale, hq, hkv)
        return result

    def save(self, ctx, tensors, result):
        """What the backward reads, through save_for_backward: its version counters make autograd
        refuse a backward after the caller changed the output (in float32 the saved O) in place."""
        ctx.save_for_backward(*tensors)

    def saved(self, ctx):
        return ctx.saved_tensors

    def differentiated(self, ctx, dout):
        """The backward as autograd calls it: once_differentiable, so a double backward is refused
        (differentiating it would take the saved P for a constant)."""
        return torch.autograd.function.once_differentiable(self.backward)(ctx, dout)

    def saved_probabilities(self, s, p, dtype):
        """What the backward recomputes P from; here P itself, in float32."""
        return p

    def backward(self, ctx, dout):
        q, k, v, p, out = self.saved(ctx)
        dtype, scale, hq, hkv = ctx.meta
        scale = self.backward_scale(scale, q.shape[-1])
        q = self.saved_query(q)
        do = self.upstream(dout).to(q.dtype)  # (B, H, Nq, Dv)
        dv = self.value_gradient(p, do)  # (B, H, Nk, Dv)
        dp = do @ v.transpose(-2, -1)  # (B, H, Nq, Nk)
        d = self.row_term(do, out, dout)  # (B, H, Nq, 1)
        ds = self.score_gradient(p, dp, d)  # (B, H, Nq, Nk)
        dq = self.query_gradient(ds, k, scale)  # (B, H, Nq, D)
        dk = scale * ds.transpose(-2, -1) @ q  # (B, H, Nk, D)
        if hq != hkv:
            dk, dv = self.group_gradients(dk, hkv), self.group_gradients(dv, hkv)
        return tuple(self.gradient_stored(g, dtype) for g in (dq, dk, dv))

    def gradient_stored(self, g, dtype):
        """A float32 gradient in the inputs' dtype (round to nearest, as torch converts)."""
        return g.to(dtype)

    def backward_scale(self, scale, head_dim):
        return scale  # the forward's, explicit or default

    def saved_query(self, q):
        return q

    def upstream(self, dout):
        return dout

    def value_gradient(self, p, do):
        return p.transpose(-2, -1) @ do

    def row_term(self, do, out, dout):
        """D_i = rowsum(dO∘O) = rowsum(P∘dP)."""
        return (do * out).sum(dim=-1, keepdim=True)

    def score_gradient(self, p, dp, d):
        return p * (dp - d)

    def query_gradient(self, ds, k, scale):
        return scale * ds @ k

    def group_gradients(self, g, hkv):
        return summed_over_groups(g, hkv)


def manual_backward_attention(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    """:class:`ManualBackwardAttention` behind SDPA's signature."""
    return ManualBackwardAttention()(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)


# ============================================================================ SDPA's whole signature


class _FullFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, impl, q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa):
        return impl.forward(ctx, q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)

    @staticmethod
    @torch.autograd.function.once_differentiable  # the backward is not differentiable: refuse double backward
    def backward(ctx, dout):
        return (None,) + ctx.impl.backward(ctx, dout) + (None, None, None, None)


class FullAttention(Attention):
    """SDPA with attn_mask and dropout_p, float32 inside, and a hand-written backward.

    With dropout, O = W V for W = P∘M/(1-p); the backward uses the same M: dV = Wᵀ dO,
    dP = (dO Vᵀ)∘M/(1-p), dS = P∘(dP - rowsum(P∘dP)). A row with no visible key has P = 0 (torch's
    CPU SDPA gives output 0 there). An additive mask's gradient is dS summed over the dims it was
    broadcast along."""

    @autocast_as_sdpa  # (a custom Function: custom_fwd's rule under autocast, as ManualBackwardAttention)
    @any_rank
    def __call__(self, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        if not 0.0 <= dropout_p <= 1.0:
            raise ValueError(f"dropout_p must be in [0, 1], got {dropout_p}")
        return _FullFunction.apply(self, q, k, v, attn_mask, float(dropout_p), is_causal, scale, enable_gqa)

    def forward(self, ctx, q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa):
        dtype, hq, hkv = q.dtype, q.shape[1], k.shape[1]
        q32, k32, v32, scale, s = self.working_scores(q, k, v, scale, enable_gqa)  # s: (B, H, Nq, Nk)
        bias = self.mask_bias(attn_mask, s, dtype)
        unmasked = s  # the scores without attn_mask (causal still applied below)
        if bias is not None:
            s = s + bias
        before_causal = s
        if is_causal and self.causal_applies(attn_mask):
            hidden = ~self.visible(q.shape[-2], k.shape[-2], q.device)
            s, unmasked = s.masked_fill(hidden, float("-inf")), unmasked.masked_fill(hidden, float("-inf"))
        p = self.probabilities(s, attn_mask)  # (B, H, Nq, Nk)
        drop = None
        if dropout_p > 0 and self.dropout_applies(q, attn_mask):
            drop = self.dropout_mask(p, dropout_p, hkv, dtype)
        out = self.weighted_values(p, drop, v32, dropout_p, hkv, dtype, training=any(ctx.needs_input_grad[1:4]))
        backward_p = self.backward_probabilities(p, s, unmasked, bias)
        if is_causal and not self.backward_causal(attn_mask):
            backward_p = self.softmax_rows(before_causal)
        ctx.save_for_backward(q32, k32, v32, backward_p, drop)
        mask_shape = None if attn_mask is None else (attn_mask.shape, attn_mask.dtype)
        ctx.impl, ctx.meta = self, (dtype, scale, hq, hkv, dropout_p, mask_shape)
        return self.output_stored(out, dtype, attn_mask)

    def output_stored(self, out, dtype, attn_mask):
        """The float32 output in the inputs' dtype (round to nearest, as torch converts)."""
        return out.to(dtype)

    def backward(self, ctx, dout):
        q, k, v, saved, drop = ctx.saved_tensors
        p = self.probabilities_from_saved(saved)  # (B, H, Nq, Nk)
        dtype, scale, hq, hkv, dropout_p, mask_shape = ctx.meta
        if drop is not None:
            drop = self.backward_dropout_mask(drop, p, dropout_p, hkv, dtype)
        do = dout.to(q.dtype)  # (B, H, Nq, Dv)
        w = p if drop is None else p * drop
        dv = w.transpose(-2, -1) @ do  # (B, H, Nk, Dv)
        dp = do @ v.transpose(-2, -1)  # (B, H, Nq, Nk)
        if drop is not None:
            dp = self.dropped_score_gradient(dp, drop)
        ds = p * (dp - (p * dp).sum(dim=-1, keepdim=True))  # (B, H, Nq, Nk)
        dq = scale * ds @ k  # (B, H, Nq, D)
        dk = scale * ds.transpose(-2, -1) @ q  # (B, H, Nk, D)
        if hq != hkv:
            dk, dv = summed_over_groups(dk, hkv), summed_over_groups(dv, hkv)
        dmask = self.mask_gradient(ds, *mask_shape) if ctx.needs_input_grad[4] else None
        return dq.to(dtype), dk.to(dtype), dv.to(dtype), dmask

    # -------------------------------------------------------------- attn_mask
    def mask_bias(self, attn_mask, like: torch.Tensor, dtype: torch.dtype):
        """attn_mask as a term added to the scores: boolean True = attend (0), False = hidden (-inf).
        ``dtype`` is the inputs' (what a kernel might wrongly build the mask in)."""
        if attn_mask is None:
            return None
        require_sdpa_mask(attn_mask, dtype)
        if attn_mask.dtype == torch.bool:
            return torch.zeros(attn_mask.shape, dtype=like.dtype, device=like.device).masked_fill(~attn_mask,
                                                                                                   float("-inf"))
        return attn_mask.to(like.dtype)

    def causal_applies(self, attn_mask) -> bool:
        return True  # is_causal joins attn_mask: both hide

    def backward_causal(self, attn_mask) -> bool:
        return True  # the backward's P hides what the forward's did

    def probabilities(self, s, attn_mask):
        return self.softmax_rows(s)

    def softmax_rows(self, s):
        """softmax over keys; a row with every key hidden gets weights 0, as torch's CPU SDPA."""
        empty = torch.isneginf(s).all(dim=-1, keepdim=True)  # (B, H, Nq, 1)
        return torch.softmax(s.masked_fill(empty, 0.0), dim=-1).masked_fill(empty, 0.0)

    def backward_probabilities(self, p, s, unmasked, bias):
        """The P the backward differentiates through: the forward's own (attn_mask included)."""
        return p

    def probabilities_from_saved(self, saved):
        """P from what the forward saved for the backward (backward_probabilities): P itself."""
        return saved

    def mask_gradient(self, ds, shape, dtype):
        return ds.sum_to_size(shape).to(dtype)

    # -------------------------------------------------------------- dropout
    def dropout_applies(self, q, attn_mask) -> bool:
        return True  # on every path: masked or not, one query or many

    def generator(self, device):
        return None  # torch's global generator: torch.manual_seed reproduces the masks

    def uniforms(self, shape, generator, device, kv_heads: int) -> torch.Tensor:
        """One uniform per weight (B, H, Nq, Nk), each from its own RNG offset."""
        return torch.rand(shape, generator=generator, dtype=torch.float32, device=device)

    def kept(self, u, dropout_p):
        return u >= dropout_p  # kept with probability 1 - p

    def rescaled(self, keep, dropout_p, dtype):
        return keep / (1 - dropout_p) if dropout_p < 1 else keep  # p = 1 keeps nothing: 0, not 0/0

    def dropout_mask(self, p, dropout_p, kv_heads, dtype):
        """Keep (1) or drop (0) per weight, times the rescale 1/(1 - p)."""
        u = self.uniforms(p.shape, self.generator(p.device), p.device, kv_heads)
        return self.rescaled(self.kept(u, dropout_p).to(p.dtype), dropout_p, dtype)

    def weighted_values(self, p, drop, v, dropout_p, kv_heads, dtype, training: bool):
        """O = (P∘M/(1-p)) V (B, H, Nq, Dv): one keep mask for every output channel."""
        return (p if drop is None else p * drop) @ v

    def backward_dropout_mask(self, drop, p, dropout_p, kv_heads, dtype):
        return drop  # the forward's

    def dropped_score_gradient(self, dp, drop):
        return dp * drop  # dP through W = P∘M/(1-p)


def full_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """:class:`FullAttention` behind SDPA's signature."""
    return FullAttention()(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
