"""The input rules of flash_attention and flash_decode, in one place.

Every check raises a TypeError or ValueError that names the offending argument, before any
launch. Its own module so that both kernels' APIs import it, and neither imports the other's.
"""
from __future__ import annotations

import math
import numbers

import torch

from kernels.flash import runtime

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
MAX_HEAD_DIM = 256


def check_ranks(q, k, v, attn_mask=None) -> None:
    """SDPA's q (..., Hq, Nq, D), k and v of one rank >= 2: rank 2 is one head of one entry, rank 3 has no batch
    dim, rank 5 and more several, which broadcast between q, k and v (flash_attention flattens them into one); a mask
    has at most q's rank (it broadcasts to q's leading dims, Hq, Nq and Nk)."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() < 2:
            raise ValueError(f"{name} has shape {tuple(t.shape)}; q, k and v must have rank >= 2 "
                             "(..., seq_len, head_dim)")
    for name, t in (("k", k), ("v", v)):
        if t.dim() != q.dim():
            raise ValueError(f"{name} has rank {t.dim()} but q has rank {q.dim()}; q, k and v must share a rank")
    try:  # SDPA broadcasts the leading (batch) dims as matmul does: a k, v of batch 1 serves every q
        torch.broadcast_shapes(q.shape[:-3], k.shape[:-3], v.shape[:-3])
    except RuntimeError:
        raise ValueError(f"the leading (batch) dims of q {tuple(q.shape[:-3])}, k {tuple(k.shape[:-3])} and v "
                         f"{tuple(v.shape[:-3])} do not broadcast") from None
    if isinstance(attn_mask, torch.Tensor) and attn_mask.dim() > q.dim():
        raise ValueError(f"attn_mask has {attn_mask.dim()} dims but q has rank {q.dim()}; the mask broadcasts to "
                         "q's leading dims, heads, q len and k len")
    if isinstance(attn_mask, torch.Tensor) and q.dim() > 4 and attn_mask.dim() > 3:
        lead, target = attn_mask.shape[:-3], q.shape[:-3][-(attn_mask.dim() - 3):]
        if any(n not in (1, t) for n, t in zip(lead, target)):
            raise ValueError(f"attn_mask has shape {tuple(attn_mask.shape)}; its leading dims {tuple(lead)} must "
                             f"broadcast to q's {tuple(target)}")


def check_inputs(q, k, v, is_causal, scale, enable_gqa, attn_mask=None, dropout_p=0.0) -> None:
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
    if k.shape[3] != q.shape[3]:
        raise ValueError(f"k has head dim {k.shape[3]} but q has {q.shape[3]}; they must match "
                         "(v's head dim may differ)")
    if v.shape[1] != k.shape[1] or v.shape[2] != k.shape[2]:
        raise ValueError(f"v has (heads, seq_len) {tuple(v.shape[1:3])} but k has {tuple(k.shape[1:3])}")
    for name, t in (("q", q), ("v", v)):
        if t.shape[3] > MAX_HEAD_DIM:
            raise ValueError(f"{name} has head dim {t.shape[3]}; flash_attention supports head dims up to "
                             f"{MAX_HEAD_DIM}")
    heads_q, heads_kv = q.shape[1], k.shape[1]
    # SDPA's math backend broadcasts a single k/v head across q's heads even without enable_gqa.
    if not enable_gqa and heads_q != heads_kv and heads_kv != 1:
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
    _check_dropout(dropout_p)
    if attn_mask is not None:
        _check_mask(attn_mask, q, k, is_causal)
    if q.device.type not in ("cpu", "cuda"):
        raise ValueError(f"q is on {q.device}; flash_attention runs on CUDA GPUs, or on CPU under the interpreter")
    if q.device.type == "cpu":
        runtime.require_interpreter()


def _check_dropout(dropout_p) -> None:
    if isinstance(dropout_p, bool) or not isinstance(dropout_p, numbers.Real):
        raise TypeError(f"dropout_p must be a real number in [0, 1), got {type(dropout_p).__name__}")
    if not 0.0 <= dropout_p < 1.0:  # also refuses NaN
        raise ValueError(f"dropout_p must be in [0, 1), got {dropout_p}")


def _check_mask(attn_mask, q, k, is_causal) -> None:
    """SDPA's rules: bool (True = attend), float32 or q's dtype (added to the scores), and
    broadcastable to (B, Hq, Nq, Nk) from 1 to 4 dims (a 1-D (Nk,) mask too, as SDPA)."""
    if not isinstance(attn_mask, torch.Tensor):
        raise TypeError(f"attn_mask must be a torch.Tensor or None, got {type(attn_mask).__name__}")
    if is_causal:
        raise ValueError("attn_mask and is_causal=True were both given; pass one of them (fold the causal "
                         "mask into attn_mask to apply both)")
    if attn_mask.dtype not in (torch.bool, torch.float32, q.dtype):
        raise TypeError(f"attn_mask has dtype {attn_mask.dtype}; it must be bool (True = attend), float32 or "
                        f"q's dtype {q.dtype} (added to the scores)")
    if attn_mask.device != q.device:
        raise ValueError(f"attn_mask is on {attn_mask.device} but q is on {q.device}")
    target = (q.shape[0], q.shape[1], q.shape[2], k.shape[2])  # (B, Hq, Nq, Nk)
    shape = tuple(attn_mask.shape)
    fits = 1 <= len(shape) <= 4 and all(n in (1, t) for n, t in zip(reversed(shape), reversed(target)))
    if not fits:
        raise ValueError(f"attn_mask has shape {shape}; it must broadcast to (batch, q heads, q len, k len) = "
                         f"{target} from 1 to 4 dims, e.g. {target[2:]}, ({target[3]},) or (batch | 1, heads | 1, {target[2]}, "
                         f"{target[3]})")
    if attn_mask.requires_grad and torch.is_grad_enabled():
        raise ValueError("attn_mask requires grad; flash_attention gives no gradient for the mask (detach it)")
