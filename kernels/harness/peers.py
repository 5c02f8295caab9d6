"""Correct implementations the harness must never refuse: the false-alarm survey's peers.

torch's SDPA forced onto each CPU backend (math; flash, which on the CPU has no dropout — "Both fused
kernels do not support non-zero dropout", so its wrapper's signature leaves dropout_p out and the
dropout invariants are not applicable — and no Dv ≠ D, so its cases run with Dv = D), FlexAttention in eager mode (forward; no attn_mask or
dropout in SDPA's form), the float64 reference, and the blocked online-softmax reference.
"""
from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from kernels.harness import reference as ref


def sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """torch's SDPA with its default CPU dispatch."""
    return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                                          scale=scale, enable_gqa=enable_gqa)


def sdpa_math(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """torch's SDPA forced onto its math backend."""
    with sdpa_kernel(SDPBackend.MATH):
        return sdpa(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def sdpa_flash(q, k, v, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
    """torch's SDPA forced onto its CPU flash backend (no dropout there)."""
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        return sdpa(q, k, v, attn_mask, 0.0, is_causal, scale, enable_gqa)


def _causal(score, b, h, q_idx, kv_idx):
    return torch.where(q_idx >= kv_idx, score, -float("inf"))


def flex_eager(q, k, v, is_causal=False, scale=None, enable_gqa=False):
    """FlexAttention, eager (not compiled), causal through a score_mod; forward only."""
    from torch.nn.attention.flex_attention import flex_attention

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # eager flex_attention warns that it is not compiled
        return flex_attention(q, k, v, score_mod=_causal if is_causal else None, scale=scale, enable_gqa=enable_gqa)


def blocked(q, k, v, is_causal=False, scale=None, enable_gqa=False):
    from kernels.mutants import blocked_attention

    return blocked_attention(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)


# name -> (impl, verify_attention options)
PEERS = {
    "sdpa-default": (sdpa, {}),
    "sdpa-math": (sdpa_math, {}),
    "sdpa-flash": (sdpa_flash, {"value_dim": False}),  # "Flash attention requires q,k,v to have the same last dimension"
    "flex-eager": (flex_eager, {"backward": False}),
    "float64-reference": (ref.float64_reference, {}),
    "blocked-reference": (blocked, {"backward": False}),
}
