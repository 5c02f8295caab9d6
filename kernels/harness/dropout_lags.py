"""Dropout masks independent at long lags: along the keys past 2¹⁶, the queries past 2¹³, the heads
past 64 and the batch, where the V = I calls of dropout.py and crosscall.py (at most 65 536 draws a
call, Nk ≤ 256) cannot reach. A kernel whose RNG offset wraps (a 16-bit column offset, a row offset
modulo a tile of 4096 queries, a head index modulo 16) repeats a mask there and nowhere smaller.

With q = 0 every weight is 1/Nk, so one output row is o_i = Σ_j M_ij v_j / ((1 - p)·Nk): the row's keep
mask seen through V. At p = 1/2 (the most information per draw):

* Repeated rows (REPEAT_SHAPES): every row sees the same K and V, whose Dv = 16 columns are standard
  normal. Two rows whose masks differ on a set Δ of keys differ in column c by a normal of standard
  deviation ≥ 1/((1 - p)·Nk) (the v's), independently across columns, so all 16 columns lie within
  REPEAT_TOL/((1 - p)·Nk) of each other with probability ≤ (0.8·REPEAT_TOL)¹⁶ = 4.3e-23; the masks of
  64 keys are equal with probability 2⁻⁶⁴ = 5.4e-20. A pair of rows that close is a repeated mask. The
  rows are compared at every power-of-two lag along the batch, the heads and the queries (about 2.5e5
  pairs: a false alarm with probability < 1e-14), and for exact equality at every lag along the
  flattened (b, h, i) order. The tolerance is 3 bfloat16 ulps of an output row's size (|o| ≈ 0.18 at
  Nk = 64), so a repeated mask computed in another order still counts as one.
* Key lags (KEY_SHAPE): head h tests lag L = 2^h (h = 0..16, Nk = 2¹⁷ + 1). Its V pairs key j with key
  j + L (j in the even blocks [0, L), [2L, 3L), …, covering keys 0..2¹⁷ - 1; the last key's v is 0):
  v_{j+L} = -v_j, each ±1. Then o_c = Σ_pairs (M_j - M_{j+L}) v_jc / ((1 - p)·Nk): mean 0 and variance
  σ² = 2p(1 - p)·(Nk - 1)/2 / ((1 - p)·Nk)² when the two keys' draws are independent (2¹⁶ independent
  pairs: normal to a fraction of a percent), and exactly 0 when keys L apart share one draw. Over the
  Nq·Dv = 16 outputs of head h, T = Σ o²/σ² is χ²₁₆; a two-sided test at α/17 per head (a
  negatively correlated pair raises T). A mask repeating at lag L gives T ≈ 0 (rounding: < 1e-6 with
  float32 accumulation).

Both at α = dropout.ALPHA in all, Bonferroni over the tests. Cost: three calls a dtype, the key call
2¹⁷ keys by 17 heads (V of 18 M entries).

dropout-many-slices: one call of 69 632 (batch, head) slices, past CUDA's grid limit of 65 535, whose
masks must be uncorrelated at every slice lag (comment above SLICE_SHAPE). Cost ~0.22 CPU-s a dtype.
"""
from __future__ import annotations

import math

import scipy.fft
import torch

from kernels.harness import dropout as drop
from kernels.harness.cases import ACROSS, LONG_AXES, Case
from kernels.harness.invariants import DROPOUT, Invariant, register
from kernels.harness.subject import Outcome, Subject, worst

LAG_P = 0.5
# the p at which path_key_lags judges repeated rows and key lags besides the kept count
LAG_BAND = (0.3, 0.7)
# (B, H, Nq, Nk): batch lags 1..4 and head lags 1..64; query lags 1..2¹³
REPEAT_SHAPES = ((5, 65, 4, 64), (1, 1, 2 ** 14 + 1, 64))
REPEAT_DV = 16
REPEAT_TOL = 0.05  # in units of 1/((1 - p)·Nk), the least a differing key moves a column's output
KEY_LAGS = 17  # head h tests key lag 2^h, h < KEY_LAGS
KEY_SHAPE = (1, KEY_LAGS, 2, 2 ** KEY_LAGS + 1)  # (B, H, Nq, Nk)
KEY_DV = 8


def _call(s: Subject, v: torch.Tensor, shape, draw: int) -> torch.Tensor:
    """One seeded call with q = k = 0 (D = 1) and the given V: (B, H, Nq, Dv) in float64."""
    b, h, n_q, n_k = shape
    q = s.cast(torch.zeros(b, h, n_q, 1, dtype=torch.float64))  # (B, H, Nq, 1)
    k = s.cast(torch.zeros(b, h, n_k, 1, dtype=torch.float64))  # (B, H, Nk, 1)
    with drop.seeded(s, draw):
        return s.run(q=q, k=k, v=v, dropout_p=LAG_P, is_causal=False, scale=None,
                     enable_gqa=False).cpu().double()


def _repeated_rows(o: torch.Tensor, n_k: int, tol: float | None = None) -> tuple[int, str]:
    """(repeated pairs, where the first ones are) in o (B, H, Nq, Dv) at power-of-two lags along each axis,
    and exact repeats at any lag of the flattened rows (within ``tol``, by default REPEAT_TOL's at LAG_P)."""
    tol = REPEAT_TOL / ((1 - LAG_P) * n_k) if tol is None else tol
    count, where = 0, []
    for axis, name in ((0, "batch"), (1, "heads"), (2, "queries")):
        n, lag = o.shape[axis], 1
        while lag < n:
            a, b = o.narrow(axis, 0, n - lag), o.narrow(axis, lag, n - lag)
            close = int(((a - b).abs().amax(-1) <= tol).sum())
            if close:
                count += close
                where.append(f"{close} rows equal to the row {lag} {name} on")
            lag *= 2
    rows = o.flatten(0, 2)  # (B·H·Nq, Dv)
    exact = len(rows) - len(torch.unique(rows, dim=0))
    if exact:
        count += exact
        where.append(f"{exact} rows exact repeats of others")
    return count, "; ".join(where[:3])


def _key_lag_values(s: Subject) -> torch.Tensor:
    """V (1, KEY_LAGS, Nk, KEY_DV): head h's key j + 2^h carries minus key j's ±1 (j in even blocks)."""
    _, h, _, n_k = KEY_SHAPE
    g = s.rng("dropout key lags")
    signs = torch.randint(0, 2, (h, n_k, KEY_DV), generator=g, dtype=torch.int8) * 2 - 1  # (H, Nk, Dv)
    v = torch.zeros(h, n_k, KEY_DV, dtype=torch.int8)
    for head in range(h):
        lag = 2 ** head
        first = _paired_keys(n_k, lag)
        v[head, first] = signs[head, first]
        v[head, first + lag] = -signs[head, first]
    return s.cast(v[None].double())  # (1, H, Nk, Dv)


def _paired_keys(n_k: int, lag: int) -> torch.Tensor:
    """The keys j in the even blocks of ``lag`` whose partner j + lag is a key: each pair's first key."""
    j = torch.arange(n_k)
    first = j[(j // lag) % 2 == 0]
    return first[first + lag < n_k]


def _two_sided_z(t: float, dof: int) -> float:
    """The normal z of the two-sided χ²_dof p-value of t."""
    from scipy import stats

    tail = min(stats.chi2.cdf(t, dof), stats.chi2.sf(t, dof))
    return float(stats.norm.isf(tail)) if tail > 0 else math.inf


def dropout_long_lags(s: Subject) -> Outcome:
    outcomes, details = [], []
    n_tests = len(REPEAT_SHAPES) + KEY_LAGS
    for i, shape in enumerate(REPEAT_SHAPES):
        b, h, n_q, n_k = shape
        v = torch.randn(1, 1, n_k, REPEAT_DV, generator=s.rng("dropout repeats"), dtype=torch.float64)
        o = _call(s, s.cast(v.expand(b, h, n_k, REPEAT_DV)), shape, 11 + i)  # (B, H, Nq, Dv)
        if not torch.isfinite(o).all():
            outcomes.append(Outcome(math.inf, 0.0))
            details.append(f"(B, H, Nq, Nk) = {shape}: non-finite output")
            continue
        count, where = _repeated_rows(o, n_k)
        outcomes.append(Outcome(float(count), 0.0))
        details.append(f"(B, H, Nq, Nk) = {shape}: {count} repeated masks" + (f" ({where})" if count else ""))
    outcome, detail = _key_lag_test(s, KEY_SHAPE, 13, drop.ALPHA / n_tests)
    outcomes.append(outcome)
    details.append(detail)
    return worst(outcomes, details)


def _key_lag_test(s: Subject, shape, draw: int, alpha: float) -> tuple[Outcome, str]:
    """The key-lag call of ``shape`` (B = 1, head h pairing keys 2^h apart): the worst head's two-sided χ² z against
    z at ``alpha`` (each head's level)."""
    _, heads, n_q, n_k = shape
    o = _call(s, _key_lag_values(s), shape, draw)  # (1, H, Nq, Dv)
    sigma2 = 2 * LAG_P * (1 - LAG_P) * ((n_k - 1) // 2) / ((1 - LAG_P) * n_k) ** 2
    t = (o[0] ** 2).sum(dim=(-2, -1)) / sigma2  # (H,): χ²_{Nq·Dv} each under independence
    z = [_two_sided_z(float(x), n_q * KEY_DV) if math.isfinite(float(x)) else math.inf for x in t]
    worst_head = max(range(heads), key=lambda hh: z[hh])
    return (Outcome(z[worst_head], drop._z(alpha)),
            f"key lags 1..2^{heads - 1} at Nq = {n_q}: worst lag 2^{worst_head}, χ²_{n_q * KEY_DV} = "
            f"{float(t[worst_head]):.3g} (z = {z[worst_head]:.2f})")


# Past 65 535 (batch, head) slices: CUDA's grid y and z stop at 65 535, so a kernel that indexes its RNG offset by a
# slice number kept in a grid dimension, or in 16 bits, repeats slice s's mask at s + 65 535 or s + 65 536. One
# call of SLICE_SHAPE (B·H = 69 632 slices of 2 × 8 weights, V = I: 1 114 112 keep draws; V 18 MB in float32)
# at p = 1/2. With x the centred mask, one row per slice (69 632, 16), T_S = Σ_s Σ_c x_{s,c} x_{s+S,c} at every
# slice lag S ≥ 1 with ≥ SLICE_MIN_PAIRS pairs (one FFT per column): under independence its terms are
# uncorrelated (two terms share at most one centred draw), mean 0, variance n_S σ⁴ for n_S = 16·(69 632 - S)
# pairs; each a z-test at α / (number of lags) (Bonferroni over 69 569 lags: |z| > 6.75). A mask shared by
# slices s and s + S for every s (a slice offset wrapping at S, or an element offset wrapping at 16·S) gives
# z ≈ √n_S: 256 at S = 65 535 or 65 536 (2²⁰ draws), and above 6.75 for every period up to 69 569 slices
# (√1008 = 32 at the last); a wrap shared by a fraction f of the slice pairs gives f·√n_S. Not covered: two
# particular slices repeating (16 pairs), periods past 69 569 slices, element-offset periods that are not
# whole slices.
SLICE_SHAPE = (17, 4096, 2, 8)  # (B, H, Nq, Nk): B·H = 65 536 + 4096
SLICE_P = 0.5  # the largest variance per draw
SLICE_MIN_PAIRS = 1000


def _slice_lag_z(x: torch.Tensor) -> torch.Tensor:
    """z of T_S for S = 1, 2, …, the last lag with SLICE_MIN_PAIRS pairs; x (slices, draws) centred."""
    n, width = x.shape
    size = 1 << (2 * n - 1).bit_length()
    f = torch.fft.rfft(x, size, dim=0)  # (size // 2 + 1, width)
    sums = torch.fft.irfft(f.conj() * f, size, dim=0).sum(-1)  # sums[S] = Σ_s Σ_c x_{s,c} x_{s+S,c}
    lags = torch.arange(1, n - math.ceil(SLICE_MIN_PAIRS / width) + 1)
    pairs = (n - lags) * width
    sd = torch.sqrt(pairs.double()) * x.var(unbiased=False)
    return torch.where(sd > 0, sums[lags] / sd, torch.zeros_like(sd))


def dropout_many_slices(s: Subject) -> Outcome:
    """One call of B·H = 69 632 slices at p = 1/2 (q = 0, V = I: the output is the mask); its slices' masks
    uncorrelated at every slice lag, z-tests at α / 69 569 (comment above SLICE_SHAPE: power ≈ 1 against a
    wrap at 65 535, false-alarm rate ≤ α)."""
    b, h, n_q, n_k = SLICE_SHAPE
    q = s.cast(torch.zeros(b, h, n_q, 1, dtype=torch.float64))  # (B, H, Nq, 1)
    k = s.cast(torch.zeros(b, h, n_k, 1, dtype=torch.float64))  # (B, H, Nk, 1)
    v = s.cast(torch.eye(n_k, dtype=torch.float64).expand(b, h, n_k, n_k)).contiguous()  # (B, H, Nk, Nk)
    with drop.seeded(s, 23):
        out = s.run(q=q, k=k, v=v, dropout_p=SLICE_P, is_causal=False, scale=None, enable_gqa=False)
    mask = (out != 0).cpu().double().reshape(b * h, n_q * n_k)  # (slices, draws), slices in (b, h) order
    z = _slice_lag_z(mask - mask.mean())
    at = int(z.abs().argmax())
    threshold = drop._z(drop.ALPHA / len(z))
    return Outcome(float(z.abs()[at]), threshold,
                   f"{b * h} slices of {n_q}×{n_k} at p = {SLICE_P:g} (kept {float(mask.mean()):.3f}), slice lags "
                   f"1..{len(z)}: worst lag {at + 1}, z = {float(z[at]):+.2f}")


def _across(c: Case) -> bool:
    return c.kind == ACROSS


register(Invariant("dropout-long-lags", None, dropout_long_lags, _across, frozenset({DROPOUT}),
                   bug_classes="a dropout RNG offset that wraps past the small shapes: masks repeating along the "
                               "keys past 2¹⁶ (a 16-bit column offset), the queries past 4096 or the heads past 16"))
register(Invariant("dropout-many-slices", None, dropout_many_slices, _across, frozenset({DROPOUT}),
                   bug_classes="a dropout RNG offset per (batch, head) slice that wraps past 65 535 slices "
                               "(CUDA's grid limit) or 2¹⁶: slice s + 65 535 repeats slice s's mask; any period up "
                               "to 69 569 slices"))


# Along one slice's own axes, at lengths and on a path the calls above never take: a row (query) counter of 16 bits
# (query i + 65 536 draws query i's mask: REPEAT_SHAPES stop at 2¹⁴ + 1 queries), and a decode path (Nq = 1, the
# calls above have Nq ≥ 2) that splits the keys like split-K / flash-decoding and restarts its RNG offset in each
# split (key j draws key j mod 1024's keep, or j mod 1000 for a split that is not a power of two). q = k = 0 and
# V = I, so each output IS the keep mask (scaled), p = 1/2 (the largest variance per draw), one call each:
#
# * decode (PERIOD_DECODE_KEYS = 4097 keys, one query: V = I's 4097 columns in 17 calls of Dv = 256 under one seed, a
#   1 × 4097 mask; five splits of 1024, the last of one key, as decode-4097): the centred mask x_j,
#   T_L = Σ_j x_j x_{j+L} at EVERY lag L = 1..3097 (the last with SLICE_MIN_PAIRS = 1000 pairs), one FFT;
# * rows (PERIOD_ROWS = 2¹⁶ + 2¹² queries × PERIOD_ROW_KEYS = 8 keys: 557 056 draws): T_L = Σ_i Σ_c x_{i,c} x_{i+L,c}
#   at every row lag L = 1..69 507, one FFT per key column.
#
# Under independence the terms of T_L are uncorrelated (two share at most one centred draw), mean 0, variance
# n_L σ⁴ with n_L the pairs (at p = 1/2 the products of one lag are independent ±σ²: a symmetric binomial), so
# z_L = T_L / (√n_L σ²) is a z-test, each two-sided at α / (3097 + 69 507) (Bonferroni over both parts' lags:
# |z| > 6.76; α = dropout.ALPHA), the invariant's false-alarm rate ≤ α. Power: a mask repeating with period P gives
# z ≈ √n_P at lag P: √(4097 - 1024) = 55 at a 1024-key split (√3097 = 56 at 1000, √2561 = 51 at 1536; any period up
# to 3097 keys passes 6.76 with ≥ 1000 pairs, 32 at the last), √(8·4096) = 181 at row lag 65 536, and above 6.76
# for every row period up to 69 507 (a fraction f of the pairs repeating: f·√n). Not covered by these two calls:
# decode periods past 3097 keys (dropout-long-lags tests the key lags 2^0..2^16 at Nq = 2, not the decode path),
# row periods past 69 507, a repeat confined to a few particular keys or rows. Cost ≈ 0.11 CPU-s a dtype, most of it
# the decode calls' V (16.8 M entries in all; measured: 0.33 CPU-s for three dtypes with SDPA math, 0.37 with
# references.full_attention).
PERIOD_P = 0.5
PERIOD_DECODE_KEYS = 4 * 1024 + 1
PERIOD_ROWS = 2 ** 16 + 2 ** 12
PERIOD_ROW_KEYS = 8
PERIOD_MAX_DV = 256


def _keep_mask(s: Subject, n_q: int, n_k: int, draw: int) -> torch.Tensor:
    """The keep mask (Nq, Nk) as float64 0/1 of one (batch, head) slice at p = PERIOD_P, q = k = 0 (every weight 1/Nk),
    read through V = I (built in the dtype: 0 and 1 are exact). Past PERIOD_MAX_DV keys, V = I's columns go in chunks
    of PERIOD_MAX_DV, one call each under the same seed (the same draws: dropout-same-seed), so no call asks for a
    value head dim a kernel may not have (Dv ≤ 256 in FlashAttention)."""
    q = torch.zeros(1, 1, n_q, 1, dtype=s.dtype, device=s.device)  # (1, 1, Nq, 1)
    k = torch.zeros(1, 1, n_k, 1, dtype=s.dtype, device=s.device)  # (1, 1, Nk, 1)
    dv = min(n_k, PERIOD_MAX_DV)
    chunks = []
    for start in range(0, n_k, dv):
        v = torch.zeros(n_k, dv, dtype=s.dtype, device=s.device)  # (Nk, Dv): key start + c in column c
        width = min(dv, n_k - start)
        v[start:start + width, :width] = torch.eye(width, dtype=s.dtype, device=s.device)
        with drop.seeded(s, draw):
            out = s.run(q=q, k=k, v=v[None, None], dropout_p=PERIOD_P, is_causal=False, scale=None, enable_gqa=False)
        chunks.append(out[0, 0, :, :width] != 0)  # (Nq, width)
    return torch.cat(chunks, dim=-1).cpu().double()  # (Nq, Nk)


def period_z(mask: torch.Tensor) -> torch.Tensor:
    """z_L of the lag-L autocorrelation along the first axis of a 0/1 ``mask`` (n, columns), L = 1, 2, … while
    ≥ SLICE_MIN_PAIRS pairs (the comment above PERIOD_P)."""
    return _slice_lag_z(mask - mask.mean())


# The thorough run's part (case kind LONG_AXES, ~1 CPU-s a dtype): the decode path past the default's 4097 keys.
# Every lag 1..15 385 of one query's mask over PERIOD_LONG_DECODE_KEYS = 2¹⁴ + 1 keys (65 calls of Dv = 256 under one
# seed; z-tests as above: a split of up to 15 385 keys, 2048, 4096, 6000 or 8192, gives z ≥ √1000 = 32, √(16 385 -
# 6000) = 102 at 6000), and the power-of-two key lags 2^0..2^16 at Nq = 1 by dropout-long-lags' paired-keys design
# (KEY_SHAPE with one query: head h's T ~ χ²₈ two-sided, a key offset of 16 bits gives T ≈ 0 at lag 2^16). Bonferroni
# over the 15 385 lags and 17 heads: |z| > 6.53. Cost measured: 0.5-0.8 CPU-s a dtype in all.
PERIOD_LONG_DECODE_KEYS = 2 ** 14 + 1


def dropout_axis_periods(s: Subject) -> Outcome:
    """The keep masks of one slice uncorrelated at every lag along the keys on the decode path (Nq = 1) and along the
    queries past 2¹⁶ (comment above PERIOD_P: z-tests at α / 72 604, power ≈ 1 against a 1024- or 1000-key split
    restarting the offset and a 16-bit row counter); on the thorough run's LONG_AXES case, the decode path's keys at
    every lag up to 15 385 and at the powers of two up to 2¹⁶ instead (comment above PERIOD_LONG_DECODE_KEYS)."""
    if s.case.kind == LONG_AXES:
        return _long_decode_periods(s)
    decode = _keep_mask(s, 1, PERIOD_DECODE_KEYS, 31).T  # (Nk, 1): the one query's mask along the keys
    rows = _keep_mask(s, PERIOD_ROWS, PERIOD_ROW_KEYS, 32)  # (Nq, Nk)
    return _lag_outcomes((("decode (Nq = 1) keys", decode), ("rows", rows)))


def _lag_outcomes(parts, more_tests: int = 0) -> Outcome:
    """Each part's (name, mask (n, columns)) worst lag z against z at α / (every part's lags + ``more_tests``)."""
    zs = [period_z(m) for _, m in parts]
    threshold = drop._z(drop.ALPHA / (sum(len(z) for z in zs) + more_tests))
    outcomes, details = [], []
    for (name, m), z in zip(parts, zs):
        at = int(z.abs().argmax())
        outcomes.append(Outcome(float(z.abs()[at]), threshold))
        details.append(f"{name}: {m.shape[0]}×{m.shape[1]} at p = {PERIOD_P:g} (kept {float(m.mean()):.3f}), lags "
                       f"1..{len(z)}: worst lag {at + 1}, z = {float(z[at]):+.2f}")
    return worst(outcomes, details)


# Drawn dropout problems' keep masks along the keys and the queries (axis_periods): at lag L the statistic is
# S_L = Σ x_s x_{s+L} over the pairs both counted, x = keep - (1 - p), mean 0 and variance exactly
# n_L·(p(1 - p))² for independent draws (n_L: the counted pairs, from the same FFT of the 0/1 counted indicator, so a
# causal or masked pattern of counted entries is accounted for). Its normal approximation holds at the Bonferroni
# tail (z ≈ 6-7) where one Edgeworth term moves the tail by less than a factor 2: a product term's skewness is
# γ = (1 - 2p)²/(p(1 - p)), the sum's γ/√n_L, and γ·(z³ - 3z)/(6√n_L) < 1 at z = 6.5 needs n_L ≥ AXIS_PAIRS_PER_SKEW·γ²
# (so every lag at p = 1/2; 2400 pairs at p = 1/4; none at p < 1e-3, where coinciding drops are rare events).
AXIS_PAIRS_PER_SKEW = 1700


_AXES = ("slices", "queries", "keys")


def _counted_lag_z_nd(x: torch.Tensor, counted: torch.Tensor, p: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(lags (n, 3), z) of S_L for every lag L = (Δslice, Δquery, Δkey) of one half-space (S_{-L} = S_L) with enough
    counted pairs (comment above AXIS_PAIRS_PER_SKEW); x, counted (S, Nq, Nk). One FFT autocorrelation, padded to
    2n - 1 along each axis so that no lag wraps."""
    sizes = [1 << (2 * n - 2).bit_length() for n in x.shape]  # ≥ 2n - 1, a power of two (a prime length is slow)

    def lagged(t):  # R[L] = Σ_t t_t · t_{t+L}, L's components modulo each size
        # (SciPy's pocketfft, not torch.fft: torch 2.13's CPU irfftn writes out of bounds on some 3-D sizes, e.g.
        # (16, 4096, 16) from a (6, 1103, 8) mask: heap corruption, then a crash problems later, measured here)
        f = scipy.fft.rfftn(t.detach().cpu().numpy(), s=sizes)
        return torch.from_numpy(scipy.fft.irfftn(f * f.conj(), s=sizes))

    sums, pairs = lagged(x), lagged(counted.double()).round()
    signed = [torch.where(torch.arange(m) < n, torch.arange(m), torch.arange(m) - m) for m, n in zip(sizes, x.shape)]
    a, b, c = signed[0][:, None, None], signed[1][None, :, None], signed[2][None, None, :]  # (broadcast, not copied)
    half = (a > 0) | (a == 0) & (b > 0) | (a == 0) & (b == 0) & (c > 0)
    skew = (1 - 2 * p) ** 2 / (p * (1 - p))
    enough = (half & (pairs >= max(SLICE_MIN_PAIRS, AXIS_PAIRS_PER_SKEW * skew ** 2))).nonzero()  # (n, 3)
    lags = torch.stack([signed[i][enough[:, i]] for i in range(3)], dim=1)
    at = tuple(enough.T)
    return lags, sums[at] / (pairs[at].sqrt() * p * (1 - p))


def _lag_text(lag) -> str:
    moved = [(int(x), name) for x, name in zip(lag, _AXES) if x]
    if len(moved) == 1:
        return f"{moved[0][0]} along the {moved[0][1]}"
    return "(" + ", ".join(f"Δ{name.removesuffix('s').replace('querie', 'query')} {int(x):+d}"
                           for x, name in zip(lag, _AXES)) + ")"


def axis_periods(w: torch.Tensor, counted: torch.Tensor, p: float) -> Outcome | None:
    """A drawn dropout problem's keep masks uncorrelated at every lag of (slice, query, key) (W = P∘M/(1-p) of V = I,
    (B, Hq, Nq, Nk), its (batch, head) slices in order; ``counted``: the entries whose P the law counts). Red team
    rt44h: a split-K decode or split-KV prefill restarting the dropout offset in each split repeats a mask along the
    keys that no slice-pair test sees. Red team rt45h: an RNG counter forgetting the row stride (row + column: the
    lag (Δquery +1, Δkey -1)) or the slice stride (slice s's row i is slice s - 1's row i + 1) repeats a mask
    along a diagonal no one axis holds; so every lag, not the three axes. z-tests at α / (every lag tested; comment
    above AXIS_PAIRS_PER_SKEW); None where no lag has enough counted pairs."""
    if not 0 < p < 1 or w.numel() == 0:  # (an empty problem: nothing to correlate, and no FFT of length 0)
        return None
    x = torch.where(counted, (w != 0).double() - (1 - p), 0.0).flatten(0, 1)  # (B·Hq, Nq, Nk)
    lags, z = _counted_lag_z_nd(x, counted.flatten(0, 1), p)
    if not len(z):
        return None
    at = int(z.abs().argmax())
    return Outcome(float(z.abs()[at]), drop._z(drop.ALPHA / len(z)),
                   f"{len(z)} lags of (slice, query, key), worst lag {_lag_text(lags[at])}, z = {float(z[at]):+.2f}")


def _long_decode_periods(s: Subject) -> Outcome:
    decode = _keep_mask(s, 1, PERIOD_LONG_DECODE_KEYS, 33).T  # (Nk, 1)
    n_lags = PERIOD_LONG_DECODE_KEYS - SLICE_MIN_PAIRS
    lags = _lag_outcomes((("decode (Nq = 1) keys", decode),), KEY_LAGS)
    _, heads, _, n_k = KEY_SHAPE
    paired, detail = _key_lag_test(s, (1, heads, 1, n_k), 34, drop.ALPHA / (n_lags + KEY_LAGS))
    return worst([lags, paired], [lags.detail, detail])


register(Invariant("dropout-axis-periods", None, dropout_axis_periods, lambda c: c.kind in (ACROSS, LONG_AXES),
                   frozenset({DROPOUT}),
                   bug_classes="a dropout RNG counter or offset that wraps or restarts along one slice's axis where "
                               "no other check looks: a 16-bit row counter (query i + 65 536 repeats query i's mask), "
                               "a decode path (Nq = 1) restarting its offset in each key split (period 1024, 1000, "
                               "1536: any period up to 3097 keys; thorough: up to 15 385, and 2^k keys up to 2¹⁶)"))


# A covering row's dropout on a long path (paths.KEY_LAG_PATHS: a split-K decode over 2¹⁴+ keys, a split-KV prefill
# over 8192+, whole tiles of 1024², a serving batch, one query past 2¹⁷ keys), where V = I (O(Nk²) a slice) cannot go.
# Red team rt48: a prefill's RNG key index restarting in each 2048-key split, a tiles path's restarting in each tile
# of 128 keys, a serving batch sharing one mask over its entries, a decode ignoring dropout_p: each at the path's sizes
# only. With q = k = 0 every weight is 1/Nk, and one call with V of PATH_DV columns, the same for every slice, reads
# the keep masks through V (O(Nk · Dv) a slice):
# * COUNT_BLOCK-key blocks of ones, a column each (count_columns): o = kept/((1 - p)·Nk) of the block, each row's kept
#   count block by block; all rows' counts against Binomial(rows·Nk, 1 - p);
# * REPEAT_DV standard normal columns: two rows (any batch entry, head or query) with one mask give one output
#   (_repeated_rows, at every power-of-two lag along the batch, the heads and the queries);
# * KEY_DV columns a lag L for every power of two L < Nk with PATH_MIN_PAIRS pairs: key j + L carries minus key j's
#   ±1 (j in the even blocks of L), so o's variance is 2p(1-p)·pairs/((1-p)·Nk)² when the two keys draw independently
#   and o is 0 when keys L apart share a draw: T = Σ o²/σ² over the rows' KEY_DV outputs is χ² (two-sided, as
#   _key_lag_test). A restart every T keys for T a power of two repeats the mask at lag T (and every multiple).
# All at α = dropout.ALPHA, Bonferroni over the tests.
PATH_MIN_PAIRS = 64
# A column summing ones over all Nk keys reads no exact count in float32: each of the Nk additions of 1/((1 - p)·Nk)
# rounds at the running sum's scale, with one sign (measured: SDPA math, float32, p = 0.00329 over 159 243 keys, a
# count 184 keys over the kept 158 719, z = +8.6 where its float64 call's was -0.2). Over a block of K keys the
# rounding is at most K²·2⁻²⁴ of a key (a quarter at K = 2048), so each block's count, rounded, is exact.
COUNT_BLOCK = 2048


def count_columns(n_k: int) -> torch.Tensor:
    """(Nk, ceil(Nk / COUNT_BLOCK)) float64: column j ones over keys j·COUNT_BLOCK to (j + 1)·COUNT_BLOCK - 1."""
    blocks = torch.arange(n_k) // COUNT_BLOCK
    return torch.nn.functional.one_hot(blocks, int(blocks[-1]) + 1 if n_k else 0).double()


# The first columns of a long path's V (its ones and repeat columns) are given again past its last one, some 140 channels
# on: dropout drops a weight for every output channel at once, so the copies' outputs must agree (red team rt50: a
# decode kernel splitting Dv into blocks of 32 and drawing a keep mask per block escaped, every law holding for each
# block). Differing masks make the copies differ by about the spread of a remask; one mask, by rounding alone (another
# summation order of a column past a GEMM's tail): COPY_T is the share of the remask's expected square difference
# above which the masks are taken to differ (a remask gives ~1 over the 17 columns, rounding far less: measured below).
COPIED_DV = 1 + REPEAT_DV
COPY_T = 0.05


def copied_channels(a: torch.Tensor, b: torch.Tensor, v: torch.Tensor, n_k: int, p: float, offset: int) -> Outcome:
    """Outputs a and b (B, Hq, Nq, COPIED_DV) of the same value columns v (Nk, COPIED_DV) in one call with q = k = 0:
    t = Σ(a - b)² over its expectation were their keep masks drawn apart (2p(1-p)·Σv² / ((1-p)·Nk)² a row), judged
    against COPY_T."""
    rows = a[..., 0].numel()
    expected = 2 * p * (1 - p) * float((v ** 2).sum()) / ((1 - p) * n_k) ** 2 * rows
    t = float(((a - b) ** 2).sum()) / expected if expected > 0 else 0.0
    return Outcome(t, COPY_T, f"V's first {COPIED_DV} columns copied {offset} channels on: t = {t:.3g} of a remask's "
                              f"1 (at most {COPY_T})")


def path_values(s: Subject, n_k: int) -> tuple[torch.Tensor, list[tuple[int, int]]]:
    """V (Nk, 1 + REPEAT_DV + KEY_DV·lags) in float64 and [(lag, pairs)] of its lag columns."""
    g = s.rng("dropout path lags")
    columns, lags = [torch.ones(n_k, 1, dtype=torch.float64),
                     torch.randn(n_k, REPEAT_DV, generator=g, dtype=torch.float64)], []
    lag = 1
    while lag < n_k:
        first = _paired_keys(n_k, lag)
        if len(first) >= PATH_MIN_PAIRS:
            signs = (torch.randint(0, 2, (len(first), KEY_DV), generator=g) * 2 - 1).double()
            c = torch.zeros(n_k, KEY_DV, dtype=torch.float64)
            c[first], c[first + lag] = signs, -signs
            columns.append(c)
            lags.append((lag, len(first)))
        lag *= 2
    return torch.cat(columns, dim=-1), lags


def path_key_lags(s: Subject, batch: int, q_heads: int, kv_heads: int, n_q: int, n_k: int, p: float,
                  call) -> Outcome:
    """The dropout law at a long path's sizes: ``call(q, k, v)`` makes the problem's seeded call (its rank, its
    argument forms) on q = k = 0 of (B, Hq, Nq, 1), (B, Hkv, Nk, 1) and this V (B, Hkv, Nk, Dv), and gives
    (B, Hq, Nq, Dv)."""
    v64, lags = path_values(s, n_k)
    width = v64.shape[-1]
    # (Nk, width + COPIED_DV + blocks): the first columns again, then the count columns
    v64 = torch.cat([v64, v64[:, :COPIED_DV], count_columns(n_k)], dim=-1)
    q = s.cast(torch.zeros(batch, q_heads, n_q, 1, dtype=torch.float64))  # (B, Hq, Nq, 1)
    k = s.cast(torch.zeros(batch, kv_heads, n_k, 1, dtype=torch.float64))  # (B, Hkv, Nk, 1)
    v = s.cast(v64).expand(batch, kv_heads, n_k, v64.shape[-1]).contiguous()  # (B, Hkv, Nk, Dv)
    o = call(q, k, v).detach().cpu().double()  # (B, Hq, Nq, Dv)
    if not torch.isfinite(o).all():
        return Outcome(math.inf, 0.0, "non-finite output")
    n_tests = 2 + len(lags)
    copies = o[..., width:width + COPIED_DV]
    outcomes, details = [copied_channels(o[..., :COPIED_DV], copies, v64[:, :COPIED_DV], n_k, p, width)], []
    details.append(outcomes[0].detail)
    # kept counts: rounded to whole keys, block by block (a half output's rounding moves a block's count by a fraction
    # of COUNT_BLOCK/256)
    kept = int(torch.round(o[..., width + COPIED_DV:] * (1 - p) * n_k).sum())
    n = batch * q_heads * n_q * n_k
    z = drop.binomial_z(kept, n, 1 - p)
    outcomes.append(Outcome(abs(z) if math.isfinite(z) else math.inf, drop._z(drop.ALPHA / n_tests)))
    # (what was trusted: the path is taken by shape; its masks are judged with q = k = 0, no mask and no causal)
    details.append(f"q = k = 0, V's columns: kept {kept} of {n} (expected {1 - p:.3g}): z = {z:+.2f}")
    if not LAG_BAND[0] <= p <= LAG_BAND[1]:
        # (past the band rows repeat honestly, a row of few dropped keys like another, and a lag's χ² is no longer
        # one: the kept count alone, exact at any p)
        return worst(outcomes, details + [f"p = {p:g} outside {LAG_BAND}: repeated rows and key lags not judged"])
    normal = o[..., 1:1 + REPEAT_DV]
    # a repeat computed in another order: within a few ulps of the output's size, past the least a key moves a column
    ulps = 4 * torch.finfo(s.dtype).eps * float(normal.abs().max())
    count, where = _repeated_rows(normal, n_k, tol=max(REPEAT_TOL / ((1 - p) * n_k), ulps))
    outcomes.append(Outcome(float(count), 0.0))
    details.append(f"{count} repeated masks" + (f" ({where})" if count else ""))
    worst_z, worst_lag = 0.0, None
    for i, (lag, pairs) in enumerate(lags):
        cols = o[..., 1 + REPEAT_DV + i * KEY_DV:1 + REPEAT_DV + (i + 1) * KEY_DV]
        sigma2 = 2 * p * (1 - p) * pairs / ((1 - p) * n_k) ** 2
        t = float((cols ** 2).sum()) / sigma2
        zl = _two_sided_z(t, cols.numel())
        if worst_lag is None or zl > worst_z:  # (ties: the least lag, a repeat's period, not its multiples)
            worst_z, worst_lag = zl, (lag, t, cols.numel())
    if worst_lag is not None:
        outcomes.append(Outcome(worst_z, drop._z(drop.ALPHA / n_tests)))
        lag, t, dof = worst_lag
        details.append(f"key lags 1..{lags[-1][0]}: worst lag {lag}, χ²_{dof} = {t:.3g} (z = {worst_z:.2f})")
    return worst(outcomes, details)
