"""Correct attention designs that differ from the plain one, for the false-alarm survey: the harness
must pass each of them.

* split_k_lse: FlashAttention-2's decode combine (FlashDecoding). The keys are cut into splits; each
  split gives its normalised partial output o_i and its log-sum-exp lse_i = m_i + log l_i (float32; float64
  for float64 inputs),
  merged as out = Σ_i exp(lse_i - lse) o_i with lse = logsumexp_i lse_i. It declares that merge
  (tolerance.declare_merge): never renormalised, its output is scaled by the rounding of lse, 2u·|lse|
  (tolerance.LSE_ROUNDINGS), an error the plain softmax cannot make.
"""
from __future__ import annotations

import math

import torch

from kernels.harness import reference as ref
from kernels.harness.references import autocast_as_sdpa, work_dtype_for
from kernels.harness.tolerance import LOG_SUM_EXP, declare_merge


@autocast_as_sdpa
def split_k_lse(q, k, v, *, is_causal=False, scale=None, enable_gqa=False, splits: int = 4, lse_dtype=None):
    """Split-K attention merged by log-sum-exp normalisation, float32 inside (float64 for float64 inputs: the
    survey of 2026-12-03 found it computing float64 in float32, 3.4e-07 against a bound of 8.6e-15), forward only.
    ``lse_dtype``: a dtype each lse_i is stored in (None: the working dtype), for showing a coarser store fails."""
    ref.require_sdpa_inputs(q, k, v)
    dtype = q.dtype
    if enable_gqa:
        k, v = ref.repeat_kv(k, q.shape[-3]), ref.repeat_kv(v, q.shape[-3])
    q, k, v = (x.to(work_dtype_for(dtype)) for x in (q, k, v))
    scale = (1 / math.sqrt(q.shape[-1]) if q.shape[-1] else 1.0) if scale is None else scale
    s = (q * scale) @ k.transpose(-2, -1)  # (B, H, Nq, Nk)
    if is_causal:
        s = s.masked_fill(~ref.causal_mask(q.shape[-2], k.shape[-2], q.device), float("-inf"))
    edges = [round(i * k.shape[-2] / splits) for i in range(splits + 1)]  # (not linspace: the default dtype)
    lses, outs = [], []
    for a, b in zip(edges[:-1], edges[1:]):
        if b <= a:
            continue
        block = s[..., a:b]
        m = block.amax(-1, keepdim=True)  # (B, H, Nq, 1)
        m = torch.where(torch.isneginf(m), torch.zeros_like(m), m)  # a split with every key hidden
        e = torch.exp(block - m)
        l = e.sum(-1, keepdim=True)
        outs.append((e @ v[..., a:b, :]) / torch.where(l > 0, l, torch.ones_like(l)))  # (B, H, Nq, Dv)
        lse_i = torch.where(l > 0, m + torch.log(l), torch.full_like(l, float("-inf")))  # (B, H, Nq, 1)
        lses.append(lse_i if lse_dtype is None else lse_i.to(lse_dtype).to(lse_i.dtype))
    if not outs:
        return torch.zeros(*q.shape[:-1], v.shape[-1], dtype=dtype, device=q.device)
    lse = torch.logsumexp(torch.stack(lses), 0)
    lse = torch.where(torch.isneginf(lse), torch.zeros_like(lse), lse)
    return sum(torch.exp(li - lse) * oi for li, oi in zip(lses, outs)).to(dtype)


declare_merge(split_k_lse, LOG_SUM_EXP)
