"""flash_attention: torch's SDPA contract on top of the Triton forward and backward kernels."""
from __future__ import annotations

import math
import numbers

import torch

from kernels.flash import runtime
from kernels.flash.backward import attention_backward
from kernels.flash.forward import LN2, attention_forward

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
MAX_HEAD_DIM = 256


def check_inputs(q, k, v, is_causal, scale, enable_gqa) -> None:
    """Raise a TypeError/ValueError naming the offending argument; never launch on bad input."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 4:
            raise ValueError(f"{name} must be 4-D (batch, heads, seq_len, head_dim), got shape {tuple(t.shape)}")
        if t.dtype not in SUPPORTED_DTYPES:
            raise TypeError(f"{name} has dtype {t.dtype}; flash_attention supports float16, bfloat16 and float32")
        for axis, what in enumerate(("batch", "head count", "sequence length", "head dim")):
            if t.shape[axis] == 0:
                raise ValueError(f"{name} has an empty {what} (shape {tuple(t.shape)}); every dimension must be >= 1")
    for name, t in (("k", k), ("v", v)):
        if t.dtype != q.dtype:
            raise TypeError(f"{name} has dtype {t.dtype} but q has {q.dtype}; q, k and v must share a dtype")
        if t.device != q.device:
            raise ValueError(f"{name} is on {t.device} but q is on {q.device}; q, k and v must share a device")
        if t.shape[0] != q.shape[0]:
            raise ValueError(f"{name} has batch {t.shape[0]} but q has {q.shape[0]}")
        if t.shape[3] != q.shape[3]:
            raise ValueError(f"{name} has head dim {t.shape[3]} but q has {q.shape[3]}; they must match")
    if v.shape[1] != k.shape[1] or v.shape[2] != k.shape[2]:
        raise ValueError(f"v has (heads, seq_len) {tuple(v.shape[1:3])} but k has {tuple(k.shape[1:3])}")
    if q.shape[3] > MAX_HEAD_DIM:
        raise ValueError(f"q has head dim {q.shape[3]}; flash_attention supports head dims up to {MAX_HEAD_DIM}")
    heads_q, heads_kv = q.shape[1], k.shape[1]
    if not enable_gqa and heads_q != heads_kv:
        raise ValueError(f"q has {heads_q} heads but k and v have {heads_kv}; pass enable_gqa=True for "
                         "grouped-query attention")
    if heads_q % heads_kv:
        raise ValueError(f"q's head count {heads_q} is not a multiple of k's and v's head count {heads_kv}")
    if not isinstance(is_causal, bool):
        raise TypeError(f"is_causal must be a bool, got {type(is_causal).__name__}")
    if not isinstance(enable_gqa, bool):
        raise TypeError(f"enable_gqa must be a bool, got {type(enable_gqa).__name__}")
    if scale is not None and (isinstance(scale, bool) or not isinstance(scale, numbers.Real)):
        raise TypeError(f"scale must be a real number or None, got {type(scale).__name__}")
    if scale is not None and not math.isfinite(scale):
        raise ValueError(f"scale must be finite, got {scale}")
    if q.device.type not in ("cpu", "cuda"):
        raise ValueError(f"q is on {q.device}; flash_attention runs on CUDA GPUs, or on CPU under the interpreter")
    if q.device.type == "cpu" and not runtime.interpreting():
        raise RuntimeError(runtime.HOW_TO_INTERPRET)


class FlashAttention(torch.autograd.Function):
    """Forward and backward both run Triton kernels; saved for backward: q, k, v, out and the
    base-2 lse the forward loop left (the backward recomputes P from exactly that)."""

    @staticmethod
    def forward(ctx, q, k, v, is_causal: bool, scale: float):
        batch, heads_q, n_q, head_dim = q.shape
        out = torch.empty((batch, heads_q, n_q, head_dim), dtype=q.dtype, device=q.device)  # (B, Hq, Nq, D)
        lse2 = torch.empty((batch, heads_q, n_q), dtype=torch.float32, device=q.device)  # (B, Hq, Nq)
        attention_forward(q, k, v, out, lse2, scale=scale, is_causal=is_causal)
        ctx.save_for_backward(q, k, v, out, lse2)
        ctx.set_materialize_grads(False)  # an unused lse then costs nothing in the backward
        ctx.is_causal, ctx.scale = is_causal, scale
        return out, lse2 * LN2  # natural-log lse (claim logsumexp-merge)

    @staticmethod
    def backward(ctx, grad_out, grad_lse):
        q, k, v, out, lse2 = ctx.saved_tensors
        if grad_out is None:  # only lse was used downstream
            grad_out = torch.zeros_like(out)
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        attention_backward(q, k, v, out, lse2, grad_out, grad_lse, dq, dk, dv, scale=ctx.scale,
                           is_causal=ctx.is_causal)
        return dq, dk, dv, None, None


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, is_causal: bool = False,
                    scale: float | None = None, enable_gqa: bool = False, return_lse: bool = False):
    """Scaled dot-product attention with torch SDPA's semantics, computed by Triton kernels.

    q (B, Hq, Nq, D); k, v (B, Hkv, Nk, D); float16, bfloat16 or float32; D <= 256; any
    strides. Default scale 1/√D. ``is_causal``: query i sees keys j <= i (top-left, also
    when Nq ≠ Nk), so every row sees key 0 and none is empty. ``enable_gqa``: query head h
    reads KV head h // (Hq / Hkv). Returns the output (B, Hq, Nq, D) in q's dtype and, with
    ``return_lse``, also the natural-log log-sum-exp of each row's scaled scores (B, Hq, Nq)
    in float32. Differentiable in q, k, v through both outputs.

    On CPU tensors the kernels need Triton's interpreter (TRITON_INTERPRET=1 before triton
    is imported); without it this raises a RuntimeError saying so.
    """
    check_inputs(q, k, v, is_causal, scale, enable_gqa)
    from kernels.decode import flash_decode, should_split  # here: kernels.decode imports this module

    needs_grad = torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v))
    if not needs_grad and should_split(q.shape[2], k.shape[2], batch=q.shape[0], q_heads=q.shape[1],
                                       kv_heads=k.shape[1], is_causal=is_causal, device=q.device):
        # Few queries, long keys, no backward: split-KV decoding merges partial states (issue 8).
        return flash_decode(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa, return_lse=return_lse)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    out, lse = FlashAttention.apply(q, k, v, is_causal, scale)
    return (out, lse) if return_lse else out
