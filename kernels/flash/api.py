"""flash_attention: torch's SDPA contract on top of the Triton forward and backward kernels."""
from __future__ import annotations

import math

import torch

from kernels import decode  # looked up per call: kernels.decode.should_split and flash_decode
from kernels.flash.backward import attention_backward
from kernels.flash.forward import LN2, Extras, attention_forward
from kernels.flash.inputs import check_inputs, check_ranks

class FlashAttention(torch.autograd.Function):
    """Forward and backward both run Triton kernels; saved for backward: q, k, v, out, the
    base-2 lse the forward loop left (the backward recomputes P from exactly that) and the
    expanded mask view; dropout's seed rides on ctx, so its mask is regenerated, never stored."""

    @staticmethod
    def forward(ctx, q, k, v, mask, dropout_p: float, seed: int, is_causal: bool, scale: float):
        batch, heads_q, n_q, _ = q.shape
        out = torch.empty((batch, heads_q, n_q, v.shape[3]), dtype=q.dtype, device=q.device)  # (B, Hq, Nq, Dv)
        lse2 = torch.empty((batch, heads_q, n_q), dtype=torch.float32, device=q.device)  # (B, Hq, Nq)
        attention_forward(q, k, v, out, lse2, scale=scale, is_causal=is_causal,
                          extras=Extras(mask, dropout_p, seed))
        ctx.save_for_backward(q, k, v, out, lse2, mask)
        ctx.set_materialize_grads(False)  # an unused lse then costs nothing in the backward
        ctx.is_causal, ctx.scale, ctx.dropout_p, ctx.seed = is_causal, scale, dropout_p, seed
        return out, lse2 * LN2  # natural-log lse (claim logsumexp-merge)

    @staticmethod
    def backward(ctx, grad_out, grad_lse):
        q, k, v, out, lse2, mask = ctx.saved_tensors
        if grad_out is None:  # only lse was used downstream
            grad_out = torch.zeros_like(out)
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        attention_backward(q, k, v, out, lse2, grad_out, grad_lse, dq, dk, dv, scale=ctx.scale,
                           is_causal=ctx.is_causal, extras=Extras(mask, ctx.dropout_p, ctx.seed))
        return dq, dk, dv, None, None, None, None, None


def draw_seed() -> int:
    """A Philox key for one call's dropout, drawn from torch's default generator: after
    torch.manual_seed(s) the same calls draw the same keys, so dropout is reproducible."""
    return int(torch.randint(0, 2**62, (1,)).item())


def as_four_dims(q, k, v, attn_mask):
    """q, k, v of SDPA's any rank >= 2 as (B, H, N, D), and the mask to match: rank 2 (N, D) as one head of one entry
    (its mask of at most two dims broadcasts as it is), rank 3 (H, N, D) as one
    batch entry (dim -3 stays the heads, which enable_gqa groups, as in SDPA), rank 5 and more with
    the leading dims flattened into B (views where the strides allow). A mask of up to 3 dims
    broadcasts as it is; a longer one gets q's leading dims (stride 0 where it broadcasts over them)
    and is flattened with them (copied only when its leading strides cannot merge)."""
    if q.dim() == 4:
        return q, k, v, attn_mask
    if q.dim() == 2:
        return q[None, None], k[None, None], v[None, None], attn_mask  # (1, 1, N, D)
    if q.dim() == 3:
        return q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), attn_mask
    lead = q.shape[:-3]
    # sizes spelled out: reshape(-1, ...) is ambiguous for a tensor of no elements (no keys: SDPA accepts it)
    four = [t.reshape(math.prod(t.shape[:-3]), *t.shape[-3:]) for t in (q, k, v)]  # (B·…, H, N, D)
    if isinstance(attn_mask, torch.Tensor) and attn_mask.dim() > 3:
        m = attn_mask[(None,) * (q.dim() - attn_mask.dim())]  # as many dims as q
        attn_mask = m.expand(*lead, *m.shape[-3:]).reshape(math.prod(lead), *m.shape[-3:])
    return (*four, attn_mask)


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attn_mask: torch.Tensor | None = None,
                    dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                    enable_gqa: bool = False, *, return_lse: bool = False):
    """Scaled dot-product attention with torch SDPA's semantics, computed by Triton kernels.

    q (B, Hq, Nq, D); k (B, Hkv, Nk, D); v (B, Hkv, Nk, Dv), Dv may differ from D; float16,
    bfloat16 or float32; D, Dv <= 256; any strides. Default scale 1/√D. As SDPA, q, k and v may
    also be of rank 2 ((Nq, D), one head), 3 ((Hq, Nq, D), no batch dim) or more than 4 (several batch dims); their batch
    dims broadcast (a k, v of batch 1 serves every q); the output and lse have the broadcast dims.

    ``attn_mask``: bool (True = attend) or additive (float32 or q's dtype, added to the
    scaled scores), of any shape that broadcasts to (B, Hq, Nq, Nk) from 1 to 4 dims, any
    strides; read tile by tile, never expanded in memory. Not together with ``is_causal``
    (a ValueError: fold the causal mask into attn_mask). A row whose every key is hidden
    gets output 0, lse −∞ and zero gradients, as SDPA on CPU gives. No gradient flows to
    the mask.

    ``dropout_p`` in [0, 1): each attention weight is kept with probability 1 − p and scaled
    by 1/(1 − p), always (SDPA has no training flag either). The mask comes from Philox
    keyed by a seed drawn from torch's default generator, so torch.manual_seed(s) makes a
    call reproducible bit for bit; the backward regenerates it. The lse is of the undropped
    scores.

    ``is_causal``: query i sees keys j <= i (top-left, also when Nq ≠ Nk), so every row sees
    key 0 and none is empty. ``enable_gqa``: query head h reads KV head h // (Hq / Hkv).
    Returns the output (B, Hq, Nq, Dv) in q's dtype and, with ``return_lse``, also the
    natural-log log-sum-exp of each row's scaled (and masked) scores (B, Hq, Nq) in float32.
    Differentiable in q, k, v through both outputs.

    On CPU tensors the kernels need Triton's interpreter (TRITON_INTERPRET=1 before triton
    is imported); without it this raises a RuntimeError saying so.
    """
    check_ranks(q, k, v, attn_mask)
    batch = torch.broadcast_shapes(q.shape[:-3], k.shape[:-3], v.shape[:-3])
    q, k, v = (t.expand(*batch, *t.shape[-3:]) for t in (q, k, v))  # (..., H, N, D): stride 0 where broadcast
    rank, lead = q.dim(), q.shape[:-2]  # (..., Hq)
    q, k, v, attn_mask = as_four_dims(q, k, v, attn_mask)
    out = _flash_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa, return_lse)
    if rank == 4:
        return out
    if return_lse:
        return out[0].reshape(*lead, *out[0].shape[-2:]), out[1].reshape(*lead, out[1].shape[-1])
    return out.reshape(*lead, *out.shape[-2:])


def _as_number(x):
    """A 0-d floating tensor given for scale or dropout_p as the Python float it holds (SDPA accepts those, and
    NumPy scalars, for both: measured, torch 2.13); anything else as given, for check_inputs to judge."""
    return float(x) if isinstance(x, torch.Tensor) and x.dim() == 0 and x.is_floating_point() else x


def _flash_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa, return_lse):
    """flash_attention on 4-D q, k, v."""
    scale, dropout_p = _as_number(scale), _as_number(dropout_p)
    check_inputs(q, k, v, is_causal, scale, enable_gqa, attn_mask, dropout_p)
    if not isinstance(return_lse, bool):
        raise TypeError(f"return_lse must be a bool, got {type(return_lse).__name__}")

    plain = attn_mask is None and dropout_p == 0
    needs_grad = torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v))
    if plain and not needs_grad and decode.should_split(q.shape[2], k.shape[2], batch=q.shape[0],
                                                        q_heads=q.shape[1], kv_heads=k.shape[1],
                                                        is_causal=is_causal, device=q.device):
        # Few queries, long keys, no backward, no mask or dropout: split-KV decoding merges
        # partial states.
        return decode.flash_decode(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa, return_lse=return_lse)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    mask = None
    if attn_mask is not None:  # a (B, Hq, Nq, Nk) view, stride 0 along broadcast dims: no copy
        mask = attn_mask.expand(q.shape[0], q.shape[1], q.shape[2], k.shape[2])
    seed = draw_seed() if dropout_p > 0 else 0
    out, lse = FlashAttention.apply(q, k, v, mask, float(dropout_p), seed, is_causal, scale)
    return (out, lse) if return_lse else out
