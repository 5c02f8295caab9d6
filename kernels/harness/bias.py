"""Rounding bias: the signed error of a half-precision output must average to about zero.

Claim ``round-to-nearest-unbiased`` (proofs/theorems/rounding_bias.py): an exact value whose
position inside its rounding cell is uniform has round-to-nearest error of mean 0 (variance
h²/12), while truncation toward zero has mean -h/2 in the direction of the value's sign. A
kernel that truncates its bfloat16 store stays within the 2× magnitude rule, yet that bias, summed
over a training run, is what Qiu & Yao (arXiv 2510.04212) trace loss explosions to.

The test. Each output element's error against float64 is expressed in units of its own rounding
cell (ulp of the golden value in the dtype), e = (out - gold) / ulp(gold), both as is (catches
rounding toward -∞ or +∞) and times sign(gold) (catches truncation toward zero). Elements of one
row share the row's normaliser, so their errors are correlated; rows are independent, so the
unit is the row mean. H0: |E[row mean]| ≤ δ, with δ one fifth of the derived truncation bias
(0.1 ulp); it is rejected when (|mean| - δ)/se > z at one-sided α = 1e-6 per statistic (se the
rows' standard error; the CLT over ≥ 64 rows). Only float16/bfloat16 outputs are judged: in
float32 the output's rounding is one of many same-size rounding steps inside the kernel, which
the claim does not cover.
"""
from __future__ import annotations

import functools
import math

import torch

from kernels.harness.cases import RANDOM
from kernels.harness.invariants import Invariant, _proved, register
from kernels.harness import reference as ref
from kernels.harness.subject import Outcome, Subject, worst

ALPHA = 1e-6
MIN_ROWS = 64
BIASED_DTYPES = frozenset({torch.float16, torch.bfloat16})  # the dtypes whose output rounding is judged


@functools.lru_cache(maxsize=1)
def truncation_bias() -> float:
    """The derived mean error of truncation toward zero, in units of the rounding cell (-1/2)."""
    return float(_proved("round-to-nearest-unbiased").result["truncation_mean"])


@functools.lru_cache(maxsize=1)
def _z() -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(1 - ALPHA)


def ulp(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The spacing of ``dtype`` at |x| (float64; subnormal spacing below the smallest normal)."""
    info = torch.finfo(dtype)
    mag = x.abs().clamp(min=info.tiny)
    return torch.exp2(torch.floor(torch.log2(mag))) * info.eps


def bias_statistics(out: torch.Tensor, gold: torch.Tensor, dtype: torch.dtype, where=None) -> dict:
    """Row-mean errors in ulps, signed and sign-adjusted, over the entries with gold ≠ 0 (and
    ``where`` True, if given; rows with none are left out): {name: (mean, standard error, rows)}."""
    gold = gold.double()
    use = gold != 0 if where is None else (gold != 0) & where.cpu()
    err = torch.where(use, (out.cpu().double() - gold) / ulp(gold, dtype), torch.zeros_like(gold))  # (B, H, Nq, Dv)
    count = use.sum(dim=-1)  # (B, H, Nq)
    stats = {}
    for name, e in (("signed", err), ("toward zero", err * torch.sign(gold))):
        rows = (e.sum(dim=-1) / count.clamp(min=1))[count > 0]  # (rows,)
        n = rows.numel()
        stats[name] = (float(rows.mean()), float(rows.std() / math.sqrt(n)) if n > 1 else math.inf, n)
    return stats


def bias_outcome(out: torch.Tensor, gold: torch.Tensor, dtype: torch.dtype, where=None) -> Outcome:
    """The one-sided z-tests of H0 |E[row-mean error]| ≤ δ, both statistics, as one outcome."""
    margin = abs(truncation_bias()) / 5
    worst_z, details = 0.0, []
    for name, (mean, se, n) in bias_statistics(out, gold, dtype, where).items():
        excess = abs(mean) - margin
        z = (excess / se if se > 0 else (math.inf if excess > 0 else 0.0)) if math.isfinite(mean) else math.inf
        worst_z = max(worst_z, z)
        details.append(f"{name}: mean {mean:+.3f} ulp ± {se:.3f} over {n} rows")
    return Outcome(max(worst_z, 0.0), _z(), "; ".join(details) + f" (H0 |bias| ≤ {margin:g} ulp, α = {ALPHA:g})")


def rounding_bias(s: Subject) -> Outcome:
    return bias_outcome(s.output(), s.base.value, s.dtype)


# The decode path (one query row per (batch, head)): no fixed case has MIN_ROWS rows of it (decode-4097 has 4), so the
# decode case builds its own: B = 2 and 32 query heads (the case's grouping kept), one query, over 257 keys at the
# case's head dim and over the case's keys (past 4096: a split-K path) at a head dim of 16. Red team rt44h: a decode
# kernel truncating its bfloat16 store escaped. Each shape's two statistics at ALPHA, as rounding-bias's.
DECODE_BATCH, DECODE_HEADS = 2, 32
DECODE_SHORT_KEYS, DECODE_LONG_HEAD_DIM = 257, 16
LONG_DECODE_KEYS = 4096


def decode_shapes(c) -> dict[str, tuple[int, int, int, int, int]]:
    """{label: (B, Hq, Hkv, Nk, D)} of the decode shapes built on case ``c`` (one query each, B·Hq = MIN_ROWS)."""
    hkv = DECODE_HEADS * c.kv_heads // c.q_heads
    return {f"Nk={DECODE_SHORT_KEYS}": (DECODE_BATCH, DECODE_HEADS, hkv, DECODE_SHORT_KEYS, c.head_dim),
            f"Nk={c.n_k}, D={DECODE_LONG_HEAD_DIM}": (DECODE_BATCH, DECODE_HEADS, hkv, c.n_k, DECODE_LONG_HEAD_DIM)}


def rounding_bias_decode(s: Subject) -> Outcome:
    """rounding-bias's test on one-query problems of MIN_ROWS rows (decode_shapes), the worst shape's."""
    outcomes, details = [], []
    for label, (b, hq, hkv, nk, d) in decode_shapes(s.case).items():
        gen = s.rng(f"decode bias {label}")
        q, k, v = (s.randn(gen, *shape) for shape in ((b, hq, 1, d), (b, hkv, nk, d), (b, hkv, nk, d)))
        kw = s.kwargs(is_causal=False, enable_gqa=hq != hkv)
        o = bias_outcome(s.run(q, k, v, **kw), ref.attention64(q.cpu(), k.cpu(), v.cpu(), **kw), s.dtype)
        outcomes.append(o)
        details.append(f"B={b} Hq={hq} Hkv={hkv} Nq=1 {label}: z {o.discrepancy:.3g}/{o.bound:.3g}, {o.detail}")
    return worst(outcomes, details)


register(Invariant("rounding-bias-decode", "round-to-nearest-unbiased", rounding_bias_decode,
                   lambda c: c.kind == RANDOM and c.n_q == 1 and c.n_k > LONG_DECODE_KEYS,
                   bug_classes="biased rounding of the decode path's output (a one-query kernel truncating its "
                               "bfloat16 store)",
                   dtypes=BIASED_DTYPES))
register(Invariant("rounding-bias", "round-to-nearest-unbiased", rounding_bias,
                   lambda c: c.kind == RANDOM and c.batch * c.q_heads * c.n_q >= MIN_ROWS,
                   bug_classes="biased rounding of the output (truncating bfloat16 store)",
                   dtypes=BIASED_DTYPES))
