"""``flash_decode``: split-KV attention for decoding, with SDPA's arguments and semantics.

Forward only: decoding runs under ``torch.no_grad()``. A call that would need gradients
raises ``NotImplementedError`` (use ``kernels.flash_attention`` to train).
"""
from __future__ import annotations

import math
import numbers

import torch
import triton

from kernels.decode import dispatch
from kernels.decode.kernel import combine_partials, split_kv_partials
from kernels.flash import runtime
from kernels.flash.forward import LOG2E, head_block
from kernels.flash.inputs import check_inputs

COMBINE_BLOCK_D = 64  # head-dim slice per combine program
COMBINE_TILE = 8192  # float32 workspace entries per combine program: 64 registers a thread at 4 warps


def _check(q, k, v, is_causal, scale, enable_gqa, num_splits, return_lse):
    # One set of input rules for both kernels: flash_attention's, then what only decoding adds.
    check_inputs(q, k, v, is_causal, scale, enable_gqa)
    if not isinstance(return_lse, bool):
        raise TypeError(f"return_lse must be a bool, got {type(return_lse).__name__}")
    if num_splits is not None:
        if isinstance(num_splits, bool) or not isinstance(num_splits, numbers.Integral):
            raise TypeError(f"num_splits must be an int or None, got {type(num_splits).__name__}")
        if num_splits < 1:
            raise ValueError(f"num_splits must be >= 1, got {num_splits}")
    if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        raise NotImplementedError("flash_decode is forward-only: call it under torch.no_grad() (or on inputs "
                                  "that do not require grad), or use kernels.flash_attention, which has a backward")


def block_n(head_dim: int, dtype: torch.dtype) -> int:
    """Keys per tile: 64, or 32 where a 64-key tile of wide float32 rows would overflow
    shared memory on a GPU (two operands, two pipeline stages)."""
    row_bytes = head_block(head_dim) * torch.empty((), dtype=dtype).element_size()
    return dispatch.BLOCK_N if row_bytes <= 512 else dispatch.BLOCK_N // 2


def partials(q, k, v, m_ws, l_ws, acc_ws, *, is_causal: bool, scale: float, num_splits: int):
    """Launch the split kernel: the state of each (query row, key range) into the workspace
    m_ws, l_ws (R, S) and acc_ws (R, S, Dv), R = B·Hq·Nq rows in (b, hq, i) order."""
    bsz, hq, nq, d = q.shape
    hkv, nk, dv = k.shape[1], k.shape[2], v.shape[3]
    group = hq // hkv
    bn = block_n(max(d, dv), q.dtype)
    chunk = triton.cdiv(triton.cdiv(nk, num_splits), bn) * bn  # whole tiles: none straddles two splits
    grid = (triton.cdiv(group * nq, dispatch.BLOCK_M), bsz * hkv, num_splits)
    split_kv_partials[grid](
        q, k, v, m_ws, l_ws, acc_ws,
        *q.stride(), *k.stride(), *v.stride(),
        scale * LOG2E, nq, nk, hkv, chunk, num_splits,
        GROUP=group, HEAD_DIM=d, HEAD_DIM_V=dv, IS_CAUSAL=is_causal, UPCAST=runtime.upcast_operands(q.dtype),
        DOT_PRECISION=runtime.dot_precision(q.dtype), BLOCK_M=dispatch.BLOCK_M, BLOCK_N=bn, BLOCK_D=head_block(d),
        BLOCK_DV=head_block(dv), num_warps=4, num_stages=2,
    )


def combine(m_ws, l_ws, acc_ws, out, lse):
    """Merge each row's S states into out (R, Dv) and the natural-log lse (R,) in float32."""
    rows, splits, d = acc_ws.shape
    block_s = max(2, triton.next_power_of_2(splits))
    block_d = min(COMBINE_BLOCK_D, head_block(d))
    # Rows per program: as many as keep a (rows, splits, head-dim slice) tile within the budget.
    block_r = max(1, min(triton.next_power_of_2(rows), COMBINE_TILE // (block_s * block_d)))
    grid = (triton.cdiv(rows, block_r), triton.cdiv(d, block_d))
    combine_partials[grid](
        m_ws, l_ws, acc_ws, out, lse, *out.stride(), rows, splits,
        HEAD_DIM=d, BLOCK_R=block_r, BLOCK_S=block_s, BLOCK_D=block_d, num_warps=4,
    )


def workspace(rows: int, splits: int, head_dim: int, device, fill: float | None = None):
    """Float32 m, l (R, S) and acc (R, S, D) buffers; tests fill them with NaN so that a
    state the kernel failed to write shows up."""
    shapes = ((rows, splits), (rows, splits), (rows, splits, head_dim))
    kw = dict(dtype=torch.float32, device=device)
    return tuple(torch.empty(s, **kw) if fill is None else torch.full(s, fill, **kw) for s in shapes)


def flash_decode(q, k, v, *, is_causal=False, scale=None, enable_gqa=False, num_splits=None, return_lse=False):
    """Split-KV attention: SDPA's result for q (B, Hq, Nq, D), k (B, Hkv, Nk, D), v (B, Hkv, Nk, Dv).

    Default scale 1/√D, top-left causal mask, GQA head h reads KV head h // (Hq / Hkv).
    ``num_splits`` (default: ``dispatch.num_splits_for`` this device) cuts the key range into
    that many whole-tile pieces; pieces past the keys, or masked by causality, contribute the
    identity state. Returns the output in q's dtype, and with ``return_lse=True`` also the
    natural-log log-sum-exp (B, Hq, Nq) in float32. Forward only; no attn_mask or dropout
    (flash_attention serves those).
    """
    _check(q, k, v, is_causal, scale, enable_gqa, num_splits, return_lse)
    bsz, hq, nq, d = q.shape
    hkv, nk, dv = k.shape[1], k.shape[2], v.shape[3]
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    if num_splits is None:
        num_splits = dispatch.num_splits_for(nq, nk, batch=bsz, q_heads=hq, kv_heads=hkv, is_causal=is_causal,
                                             sms=dispatch.sm_count(q.device), block_n=block_n(max(d, dv), q.dtype))
    rows = bsz * hq * nq
    m_ws, l_ws, acc_ws = workspace(rows, num_splits, dv, q.device)
    partials(q, k, v, m_ws, l_ws, acc_ws, is_causal=is_causal, scale=scale, num_splits=num_splits)
    out = torch.empty((bsz, hq, nq, dv), dtype=q.dtype, device=q.device)  # (B, Hq, Nq, Dv)
    lse = torch.empty((bsz, hq, nq), dtype=torch.float32, device=q.device)  # (B, Hq, Nq)
    combine(m_ws, l_ws, acc_ws, out.view(rows, dv), lse.view(rows))
    return (out, lse) if return_lse else out
