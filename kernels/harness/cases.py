"""The shapes and inputs the harness judges an implementation on.

Lengths are chosen to be multiples of no block size (1, 37, 53, 127: FlashAttention's tests use
113×203 and 1×147 for the same reason), Nq ≠ Nk both ways, head dims 16, 32, 64, 80, 128, MHA
and GQA/MQA. Real kernels use 64- or 128-wide tiles, so the default set also reaches past 256
with lengths ≡ 1 modulo 32, 64 and 128 (129, 257, 321, 385: the last block holds one key or
query), B = 2 in the causal, GQA and MQA paths, causal with Nq = 1 (it sees key 0 only), head
dims that are not multiples of 16 (40, 72, 24), a head dim above 128 (256: kernels support up to
256, and one built for 128 truncates), Dv ≠ Dqk both ways, an explicit scale that is not a power of
two, causal with Nq = 5 over 321 keys and with Nq > Nk + 128, and MQA decoding over 4097 keys with
B = 2 (split-K kernels split at 1024: five splits, the last of one key, merged by a tree of depth three). Robustness cases push the logits to extremes a stable kernel must
survive. A length sweep (one case) feeds the error-growth check.
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, replace

import torch

RANDOM = "random"
EXTREME = "extreme-logits"  # |scaled scores| as large as the case's magnitude
MIXED = "mixed-magnitude-rows"  # rows whose scores differ by orders of magnitude, in one batch
NEGATIVE = "hugely-negative-rows"  # every visible score of every row hugely negative
SWEEP = "length-sweep"  # not a shape of its own: the lengths of SWEEP_LENGTHS, for error growth
KEPT = "dropout-draws"  # not a shape of its own: many dropout draws for the kept-fraction power test
CONTRACT = "contract-edges"  # a small shape whose invariants probe SDPA's contract at its edges
ACROSS = "across-calls"  # not a shape of its own: dropout draws and state across consecutive calls
POSITIONS = "long-causal-positions"  # causal past POSITION_EXACT keys and queries, values 0 before the end
# not a shape of its own: one slice's dropout masks along the keys of the decode path past the default's lengths
# (thorough only: ~1 CPU-s a dtype, dropout_lags.dropout_axis_periods)
LONG_AXES = "dropout-long-axes"
SEED_SPACE = "dropout-seed-space"  # not a shape of its own: the thorough run's many consecutive calls (crosscall.py)
SYNTHETIC = (SWEEP, KEPT, ACROSS, LONG_AXES, SEED_SPACE)  # kinds whose invariant builds its own shapes

# Key lengths of the error-growth sweep: 1, 16 and 128 blocks of 64 (each + 1, so a tail block
# holds one key). A running sum or accumulator kept in the input's half precision rounds each
# block's contribution at the running total's scale: its error grows with length.
SWEEP_LENGTHS = (65, 1025, 8193)

# float16 holds every integer up to 2048 and no odd one past it (bfloat16: up to 256). A kernel that
# computes positions or indices in a half type (a causal mask built from float16 aranges) sees or
# hides the wrong key only in rows past it; the POSITIONS case runs POSITION_PAST rows and keys past.
POSITION_EXACT = 2048
POSITION_PAST = 8
# The POSITIONS case's inputs make one key wrongly seen or hidden by a last row stand out of every
# dtype's rounding: k = 0 (every score 0, so row i is exactly the mean of v[0..i]) and v = 0 before
# key POSITION_EXACT - POSITION_ZEROED_BEFORE, POSITION_VALUE_SCALE · N(0, 1) after. One key more or
# less in a row past 2048 moves it by ~256/2049 = 0.12, against bounds of ~5e-4 (float16) and ~1e-2
# (bfloat16) at its outputs' size (~0.7). With random inputs throughout, measured: a key seen wrongly
# moved a row by 4e-4 where float16's bound was 5.3e-3, and bfloat16's floor (eps · (|o| + 0.3))
# alone is 2.4e-3.
POSITION_ZEROED_BEFORE = 32
POSITION_VALUE_SCALE = 256.0

# (B, Hq, Hkv, Nq, Nk) of each call of the dropout kept-fraction power test: 65 536 Bernoulli draws.
KEPT_SHAPE = (2, 8, 8, 64, 64)


@dataclass(frozen=True)
class Case:
    name: str
    batch: int
    q_heads: int
    kv_heads: int
    n_q: int
    n_k: int
    head_dim: int
    causal: bool
    kind: str = RANDOM
    magnitude: float = 0.0  # target max |scaled score| for the robustness kinds
    value_dim: int | None = None  # Dv; None: the same as the query/key head dim
    scale: float | None = None  # the scale every call of the case passes (None: SDPA's 1/√D)
    # A case that exists for one forward path (split-K decoding over many keys): the backward,
    # attn_mask and dropout invariants skip it, which keeps an interpreted kernel's CI run short.
    forward_only: bool = False

    @property
    def gqa(self) -> bool:
        return self.q_heads != self.kv_heads

    @property
    def dv(self) -> int:
        return self.head_dim if self.value_dim is None else self.value_dim

    def describe(self) -> str:
        flags = ["causal" if self.causal else "full"]
        if self.gqa:
            flags.append("mqa" if self.kv_heads == 1 else "gqa")
        if self.kind == SWEEP:
            flags.append(f"Nk in {', '.join(map(str, SWEEP_LENGTHS))}")
        elif self.kind == KEPT:
            flags.append("dropout draws, p in 0.1, 0.25")
        elif self.kind == ACROSS:
            flags.append("consecutive calls")
        elif self.kind == LONG_AXES:
            flags.append("dropout along one slice's long axes")
        elif self.kind == SEED_SPACE:
            flags.append("many consecutive calls")
        elif self.kind == CONTRACT:
            flags.append("contract edges")
        elif self.kind == POSITIONS:
            flags.append(f"k = 0, v = 0 before key {POSITION_EXACT - POSITION_ZEROED_BEFORE}")
        elif self.kind != RANDOM:
            flags.append(f"{self.kind} {self.magnitude:.0e}")
        if self.scale is not None:
            flags.append(f"scale={self.scale:g}")
        if self.forward_only:
            flags.append("forward only")
        dv = f" Dv={self.dv}" if self.value_dim is not None else ""
        return (f"{self.name}: B={self.batch} Hq={self.q_heads} Hkv={self.kv_heads} "
                f"Nq={self.n_q} Nk={self.n_k} D={self.head_dim}{dv} {' '.join(flags)}")


def _c(name, b, hq, hkv, nq, nk, d, causal, kind=RANDOM, magnitude=0.0, *, dv=None, scale=None,
       forward_only=False) -> Case:
    return Case(name, b, hq, hkv, nq, nk, d, causal, kind, magnitude, dv, scale, forward_only)


DEFAULT_CASES: tuple[Case, ...] = (
    _c("square", 2, 2, 2, 53, 53, 64, False),
    _c("causal-square", 1, 2, 2, 127, 127, 32, True),
    # Nq < Nk with few queries over many keys, GQA: the path kernels take for 2 <= Nq <= 8 (decoding
    # several tokens, query heads packed per KV head) must align top-left like the rest.
    _c("causal-short-q", 1, 4, 2, 5, 321, 80, True),
    # Nq > Nk + 128: whole 64- and 128-row query tiles lie past the last key (they see every key).
    _c("causal-long-q", 1, 2, 2, 197, 37, 16, True),
    _c("one-query", 1, 2, 2, 1, 53, 128, False),
    _c("one-key", 1, 2, 2, 37, 1, 32, True),
    _c("gqa-causal", 1, 4, 2, 37, 53, 64, True),
    _c("gqa-full", 1, 6, 2, 53, 37, 32, False),
    _c("tiny", 1, 2, 2, 5, 5, 16, True),  # small enough for the symbolic Jacobian
    _c("extreme", 1, 2, 2, 37, 53, 64, False, EXTREME, 1e4),
    _c("extreme-far", 1, 2, 2, 53, 53, 32, True, EXTREME, 1e30),
    _c("mixed-rows", 2, 1, 1, 53, 37, 64, False, MIXED, 1e4),
    _c("negative-rows", 1, 2, 2, 53, 53, 16, True, NEGATIVE, 3e4),
    # Realistic tiles: past 256, ≡ 1 mod 32/64/128, B = 2 in causal/GQA/MQA, D % 16 ≠ 0, Dv ≠ D.
    _c("long-causal", 2, 2, 2, 257, 257, 64, True),
    _c("long-gqa", 2, 4, 2, 129, 385, 72, True),
    _c("mqa-decode", 2, 4, 1, 1, 321, 40, True),  # causal, Nq = 1: sees key 0 only
    _c("mqa-full", 2, 3, 1, 65, 128, 24, False, dv=40),  # Dv > D; Nk a multiple of 64 and 128 (even path)
    _c("value-dim", 2, 2, 2, 97, 65, 48, True, dv=24),  # Dv < D
    _c("scaled-0.3", 2, 4, 2, 65, 97, 64, True, scale=0.3),  # also the backward's explicit scale
    _c("length-sweep", 1, 2, 2, 32, SWEEP_LENGTHS[-1], 64, False, SWEEP),
    # Split-K decoding splits the keys (often at 1024): one query, 4097 keys, MQA, not causal, B = 2
    # (a split workspace indexed without the batch). Five splits, the last of one key: a merge that
    # is right for two or three partial results (one level of a reduction tree) but wrong from four
    # on shows here.
    _c("decode-4097", 2, 2, 1, 1, 4097, 64, False, forward_only=True),
    # Head dims above 128 (kernels support up to 256): a kernel truncating D at 128 drops scores.
    _c("head-dim-256", 1, 2, 2, 17, 33, 256, True),
    _c("dropout-draws", *KEPT_SHAPE, 32, False, KEPT),
    # Causal past 2048 queries and keys (positions): forward only, one head, a small head dim (the
    # scores alone are 4.2 M; the float64 golden value costs ~0.8 CPU-s a dtype).
    _c("causal-2056", 1, 1, 1, POSITION_EXACT + POSITION_PAST, POSITION_EXACT + POSITION_PAST, 16, True, POSITIONS,
       forward_only=True),
)

# The contract's edges (kernels.harness.contract): empty dimensions, refused inputs, NaN, partial
# requires_grad, double backward, in-place use of the output, a dO of stride 0, broadcast masks in
# the backward, state across calls. One small GQA shape with Dv ≠ D (every check builds its variants
# from it), and the across-calls draws. Part of the default and thorough runs; a caller passing its
# own ``cases`` (the Triton kernel's CI test) chooses whether to add them.
CONTRACT_CASES: tuple[Case, ...] = (
    _c("contract", 2, 4, 2, 11, 13, 24, False, CONTRACT, dv=16),
    _c("across-calls", *KEPT_SHAPE, 32, False, ACROSS),
)

# Larger shapes. What each adds is its length, tail, head dim or grouping; batch and heads are kept
# small where they are not the point, so the interpreted kernel's thorough run (three dtypes) stays
# within 15 minutes.
THOROUGH_CASES: tuple[Case, ...] = DEFAULT_CASES + (
    _c("fa-113x203", 1, 2, 2, 113, 203, 64, True),
    _c("fa-1x147", 2, 2, 2, 1, 147, 128, True),
    _c("fa-1023x1024", 1, 1, 1, 1023, 1024, 64, True),
    _c("long-full", 1, 2, 2, 257, 300, 128, False),
    _c("mqa-causal", 2, 4, 1, 127, 53, 80, True),
    _c("gqa-long", 1, 4, 1, 200, 200, 128, True),  # group of 4
    _c("wide-batch", 4, 3, 3, 37, 37, 64, False),
    _c("tiny-full", 1, 4, 2, 4, 6, 32, False),
    _c("extreme-gqa", 1, 4, 2, 127, 127, 64, True, EXTREME, 1e8),
    _c("mixed-rows-causal", 2, 2, 2, 127, 127, 64, True, MIXED, 1e4),
    _c("negative-rows-gqa", 1, 4, 2, 37, 127, 128, True, NEGATIVE, 3e4),
    _c("long-1025", 1, 1, 1, 1025, 1025, 128, True),
    _c("gqa-513", 1, 4, 2, 513, 513, 64, True),
    _c("mqa-decode-long", 2, 8, 1, 1, 2049, 128, True),
    _c("dv-wide", 1, 2, 2, 257, 129, 32, False, dv=96),
    _c("odd-dim-causal", 1, 2, 2, 129, 129, 100, True, scale=1.7),
    _c("head-dim-256-long", 1, 4, 2, 129, 257, 256, True),
    _c("head-dim-192", 1, 2, 2, 65, 129, 192, False, dv=160),
    _c("dropout-long-axes", *KEPT_SHAPE, 32, False, LONG_AXES),
    _c("seed-space", *KEPT_SHAPE, 32, False, SEED_SPACE),
)

# The largest |scaled score| asked of each dtype: a quarter of its range, so that the plain
# reference's scores and their sums stay finite (float16 cannot hold scores beyond 65504).
def magnitude_for(case: Case, dtype: torch.dtype) -> float:
    return min(case.magnitude, torch.finfo(dtype).max / 4)


def narrowed(cases, *, causal: bool = True, gqa: bool = True, value_dim: bool = True) -> list[Case]:
    """The cases for an implementation that lacks causal masking, GQA or Dv ≠ D: same shapes, feature off."""
    out = []
    for case in cases:
        if not causal and case.causal:
            case = replace(case, causal=False)
        if not gqa and case.gqa:
            case = replace(case, kv_heads=case.q_heads)
        if not value_dim and case.value_dim is not None:
            case = replace(case, value_dim=None)
        out.append(case)
    return out


def generator(seed: int, *labels) -> torch.Generator:
    """A generator that depends on the seed and the labels only (stable across runs and orders)."""
    key = zlib.crc32(repr((seed,) + labels).encode())
    return torch.Generator().manual_seed(key)


def randn(gen, *shape, dtype=torch.float32) -> torch.Tensor:
    """Standard normal draws as float64 values for inputs of ``dtype``: drawn in float32 and widened (exactly)
    unless ``dtype`` is float64. The draws of float16, bfloat16 and float32 inputs are rounded to float32 or
    coarser anyway, and float64's normal sampler costs 2.3× float32's plus the widening (measured, 4M draws,
    one thread: 0.083 s against 0.036 s): the inputs' draws were 16 % of the covering rows' CPU seconds.
    float64 inputs keep float64 draws: a value float32 can hold would hide a float64 impl that rounds its inputs
    through float32."""
    if dtype == torch.float64:
        return torch.randn(*shape, generator=gen, dtype=torch.float64)
    return torch.randn(*shape, generator=gen, dtype=torch.float32).double()


def make_inputs(case: Case, dtype: torch.dtype, device, seed: int):
    """(q, k, v, dout) for the case in ``dtype`` on ``device``; float64 draws rounded once."""
    gen = generator(seed, case.name, str(dtype))
    b, hq, hkv, nq, nk, d, dv = case.batch, case.q_heads, case.kv_heads, case.n_q, case.n_k, case.head_dim, case.dv
    q, k, v = (randn(gen, *shape, dtype=dtype) for shape in ((b, hq, nq, d), (b, hkv, nk, d), (b, hkv, nk, dv)))
    dout = randn(gen, b, hq, nq, dv, dtype=dtype)
    if case.kind in (EXTREME, MIXED, NEGATIVE):
        q, k = _robust_logits(case, dtype, gen, q, k)
    if case.kind == POSITIONS:
        k.zero_()
        v[:, :, :POSITION_EXACT - POSITION_ZEROED_BEFORE] = 0.0
        v *= POSITION_VALUE_SCALE
    return tuple(t.to(device=device, dtype=dtype) for t in (q, k, v, dout))


def _robust_logits(case: Case, dtype, gen, q, k):
    big = magnitude_for(case, dtype)
    if case.kind == NEGATIVE:
        return _hugely_negative(case, big, gen, q.shape, k.shape)
    g = case.q_heads // case.kv_heads
    s = (q / math.sqrt(case.head_dim)) @ k.repeat_interleave(g, dim=1).transpose(-2, -1)  # (B, Hq, Nq, Nk)
    row_max = s.abs().amax(dim=-1, keepdim=True)  # (B, Hq, Nq, 1)
    if case.kind == MIXED:
        # Each row gets its own magnitude, log-uniform in [1e-3, big]: a global (not per-row)
        # max subtraction underflows the small rows to 0/0.
        exponents = torch.rand(row_max.shape, generator=gen, dtype=torch.float64)
        target = 1e-3 * (big / 1e-3) ** exponents
        return q * target / row_max, k
    return q * big / row_max.amax(), k


def _hugely_negative(case: Case, big: float, gen, q_shape, k_shape):
    """Every key the all-ones vector and query row i the constant -c_i: each visible score of row i
    is exactly -c_i·√D, somewhere in [-big, -0.7·big], below any finite mask sentinel like -1e4.

    Equal scores make the exact answer the mean of the visible values. Random scores would not do:
    at |s| = 3e4 a bfloat16 score is only good to ±64, so the plain reference would pick among
    near-tied keys at random and its own error, which sets the bound, would be of order one.
    c_i is a multiple of 32, so q, k and the scaled scores are exact in every dtype tested."""
    root_d = math.sqrt(case.head_dim)
    u = torch.rand(q_shape[:-1] + (1,), generator=gen, dtype=torch.float64)  # (B, Hq, Nq, 1)
    c = 32 * torch.round(big * (0.7 + 0.3 * u) / root_d / 32)
    c = torch.minimum(c, 32 * torch.floor(torch.tensor(big / root_d / 32)))
    return -c.expand(q_shape).clone(), torch.ones(k_shape, dtype=torch.float64)


def standard_cases(thorough: bool = False) -> tuple[Case, ...]:
    """What a run without its own ``cases`` judges: the default (or thorough) shapes and the contract's."""
    return (THOROUGH_CASES if thorough else DEFAULT_CASES) + CONTRACT_CASES
