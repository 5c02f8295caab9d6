"""Every (path, feature) pair and every (path, feature, feature) triple of the structural features in every run:
problems from a covering array (covering.py) over the size classes a kernel's dispatcher tells apart and the features
each path must carry.

A FlashAttention-style kernel chooses a code path from a region of sizes: a split-K decode for one query over
many keys, a speculative decode for a few, a split-KV prefill for a chunk of queries over more than 8192 keys,
query chunks past 1024, batch chunks past 32, whole tiles without bounds checks, a long prefill, a serving batch's
packed decode, batch slices. Each path has its own copy of the mask reading, the causal offset, the GQA head map, the
dropout RNG, the accumulator dtype, the NaN handling and the backward. Red team rt44h's largest family (13 of 31
escapes) was one feature wrong on one path: the regimes move one axis past a threshold with the other features
pinned, and random draws leave most pairs out of a default run; rt45h's (6 of 15) one path with two features; rt46h
put all 34 of its bugs on paths at sizes no draw reached. Here the factors are the path (PATHS, THOROUGH_PATHS) and
the features (FEATURE_LEVELS); the rows cover every allowed pair of values of two factors (path × mask form, path ×
dtype, mask × dtype, causal × kv broadcast, NaN × path, dropout × path, ...) and every allowed (path, a, b) triple of
the structural factors (triples()); ``problems`` turns each row into a generate.Problem judged by its relation
(forward against float64, on sampled query rows past generate.SAMPLE_ABOVE scores; the gradients of the inputs
requiring grad and the output; the dropout law with V = I), in the row's dtype. float64 rows are dealt over the
dtypes' passes (problems()); the rows of another dtype the run lacks run in the first pass, in the first dtype.

Sizes are drawn inside each path's ranges per run seed, with D ≤ 16 past the small path (but for the head-dim
factor's wider levels), so a long problem costs O(B·Hq·Nq·Nk·D) with B·Hq·Nq·Nk ≤ 2¹⁸ where the path's least sizes
allow: the whole array is ~565 problems a run at seed 0 with every feature (plain rows, pairwise ones, and the rows for
the triples, plain_formed and one_form), 20 of the (Nq, Nk) plane (plane()) and 6 training steps (training()): 76
CPU-s of SDPA math in one process before the steps, measured on 2026-12-07 (timing.py), about 1.5 more for them.
"""
from __future__ import annotations

import bisect
import functools
import math
import zlib
from dataclasses import replace

from kernels.harness import reference as ref
from kernels.harness.covering import _completable, allowed_triples, covering_array, not_held
from kernels.harness.generate import (AGREEMENT, DROPOUT_LAW, GRAD_SUBSETS, GRADIENTS, HEAD_DIMS, KEY_LAG_PATHS,
                                     SAMPLED_BACKWARD_PATHS, STRIDE_ZERO, Problem, _rng)
from kernels.harness.invariants import ATTN_MASK, BACKWARD, CAUSAL, DROPOUT, GQA
from kernels.harness.dropout_lags import LAG_BAND
from kernels.harness.callers import AUTOCAST, AUTOCAST_DTYPES, CALLERS, GRADIENT_CALLERS
from kernels.harness.masks import NEAR_STRUCTURES, PACKED

# the thread counts of the paths' threaded rows (threaded), each on a machine of as many CPUs (callers.machine_of):
# past 8, where red team rt50's splits per thread, or per CPU, went into 8 merge slots (a server has 16-192); none a
# power of two (red team rt57: a merge of the per-thread splits by halving lost one at 5-7 and 9-15 threads, where
# these were 8, 16 and 32)
PATH_THREAD_COUNTS = (6, 12, 24)

# name: ((B least, most), (Nq least, most), (Nk least, most), largest D), each range inclusive. The lengths sit past
# the thresholds of the paths rt44h's kernels took: one query or 2-8 over 2¹⁴ keys (split-K decode), 16-40 queries
# over 8192 (split-KV prefill), 1025-16448 queries (chunks of 1024, and the backward's: up to 16 of them, where an
# accumulator kept in half across chunks drifts), 33-40 entries (batch chunks of 32), and one query past 2¹⁷ keys
# (256-way splits of 512).
PATHS = {
    "small": ((1, 3), (1, 64), (1, 64), 64),
    "decode": ((1, 4), (1, 1), (2 ** 14 + 1, 2 ** 15), 16),
    "spec-decode": ((1, 2), (2, 8), (2 ** 14 + 1, 2 ** 15), 16),
    # (16-200 queries: past one query tile of 64 or 128, red team rt48's workspace and causal positions per tile)
    "prefill": ((1, 1), (16, 200), (2 ** 13 + 1, 12000), 16),
    "long-queries": ((1, 1), (1025, 16448), (2, 200), 16),
    "many-batch": ((33, 40), (1, 8), (2, 48), 16),
    "longest-decode": ((1, 1), (1, 1), (2 ** 17 + 1, 2 ** 17 + 2 ** 15), 8),
    # the size classes of serving and training shapes a dispatcher tells apart besides (red team rt46h: 8 paths, each
    # at sizes no draw reached, held all 34 of its bugs): both lengths whole tiles of 128 past 2²⁰ scores (an
    # even-tiles kernel without bounds checks), a long prefill (4096 queries over 4096 keys or more; judged on sampled
    # query rows, generate.SAMPLE_ABOVE), a serving batch of one query each (B·Hq ≥ 32 over 1024+ keys), and batch
    # slices (B ≥ 8 with 64+ queries and keys)
    "tiles": ((1, 1), (1024, 1536), (1024, 1536), 16),
    "long-prefill": ((1, 1), (4096, 4224), (4096, 4224), 16),
    "batched-decode": ((32, 40), (1, 1), (1024, 4096), 16),
    "batch-slices": ((9, 11), (64, 160), (64, 160), 16),  # (9-11: no whole number of slices of 4 or 8)
    # each axis past the thresholds a dispatcher or an index type sets (red team rt47: a batch chunked past 64 entries,
    # causal row positions in int16 past 32 767 queries, a second level of split-K past 2¹⁹ keys), the other axes
    # least, so a row costs what its one long axis costs
    "huge-batch": ((65, 130), (1, 4), (1, 24), 16),
    # (rows past 32 767 and 65 535, int16's and uint16's: red team rt50's causal query positions in uint16 escaped
    # 33 000-40 000 queries; two keys at least, or a row wrapped to position 0 still sees every key)
    "huge-queries": ((1, 1), (65537, 70000), (2, 8), 8),
    "million-keys": ((1, 1), (1, 1), (2 ** 19 + 1, 2 ** 20 + 2 ** 17), 8),
    "many-heads": ((1, 2), (1, 8), (1, 64), 16),  # (heads: HEADS_TIMES, 256 to 4096 query heads)
    # the bands between the paths, lengths drawn log-uniformly (LOG_UNIFORM) so that each octave is met: a dispatcher's
    # threshold may sit anywhere (red team rt49: a decode path of its own for 1-8 queries over 8193-16 384 keys, below
    # the split-K decode's 16 385, escaped; the paths above were each drawn past a threshold an earlier kernel had)
    "mid-decode": ((1, 4), (1, 8), (65, 2 ** 14), 16),
    "mid-prefill": ((1, 2), (9, 1024), (65, 2 ** 13), 16),
    # a chunk of queries over a long context (chunked prefill, a long prompt's extension, a verifier's draft tokens over
    # a long KV cache): the cell of the (Nq, Nk) plane the other paths left, 9-64 queries over 2¹⁴-2¹⁷ keys, both
    # log-uniform (red team rt51: its prefill past 8192 keys dropping the mask, the bottom-right causal offset or
    # dropout escaped, the prefill path being drawn at 8193 keys and mid-prefill stopping at 8192)
    "long-context": ((1, 1), (9, 64), (2 ** 14 + 1, 2 ** 17), 8),
}
LOG_UNIFORM = ("mid-decode", "mid-prefill", "long-context")
# a thorough run's paths besides: a training step's backward over 2048 queries and keys or more, and dropout over more
# than 4096 keys with 16 queries or more (red team rt46h; 2-10 CPU-s a row, past a default run's budget)
THOROUGH_PATHS = {
    # (past 4096 queries and keys, red team rt48's recompute backward; judged on sampled rows of dO:
    # generate.SAMPLED_BACKWARD_PATHS)
    "long-backward": ((1, 1), (4097, 4200), (4097, 4200), 8),
    "long-dropout": ((1, 1), (16, 20), (4097, 4300), 8),
    # one slice of more than 2²⁶ scores (red team rt47: query chunks of 2048 past 2²⁵, causal rows from 0 in each;
    # rt48: chunks of 4096 queries past 2²⁶, causal positions and mask rows restarting in each; judged on sampled rows)
    "big-slice": ((1, 1), (8193, 8400), (8193, 8400), 8),
    # one step past the default paths' largest axis each (red team rt48, every one past every drawn size: a second
    # split-K merge level past 2²¹ keys, batch chunks of 256 entries reading the mask from the chunk's own entry, and
    # GQA's packed rows (query × group) launched in chunks of 65 536 with causal positions chunk-local)
    "two-million-keys": ((1, 1), (1, 1), (2 ** 21 + 1, 2 ** 21 + 2 ** 18), 8),
    "batch-257": ((257, 300), (1, 2), (1, 16), 16),
    "packed-queries": ((1, 1), (16385, 17000), (1, 8), 8),  # (heads: PACKED_HEADS, a group of 4)
}
PACKED_HEADS = "4/1"
ALL_PATHS = {**PATHS, **THOROUGH_PATHS}
PATH_RELATIONS = {"long-prefill": ("forward",), "long-context": ("forward", "dropout"), "long-backward": ("gradients",), "long-dropout": ("dropout",),
                  "million-keys": ("forward",), "big-slice": ("forward",), "huge-queries": ("forward", "gradients"),
                  "two-million-keys": ("forward",), "batch-257": ("forward", "gradients"),
                  "packed-queries": ("forward", "gradients")}
MULTIPLE_OF = {"tiles": 128}  # a path's lengths are multiples of this
# the paths whose least sizes cost a second or more a triple row (their pairs are met; triples() leaves them out), and
# whose plain rows are of two dtypes (a half one and float32; the others meet them pairwise)
COSTLY = ("tiles", "long-prefill", "million-keys", "huge-queries", "long-context") + tuple(THOROUGH_PATHS)
COSTLY_PLAIN_DTYPES = ("float32", "bfloat16")
# A dropout problem takes V = I (Dv = Nk): the harness's own work (v drawn, one-hot values, the law's float64
# sensitivities) is O(B·Hkv·Nk²) and the impl's O(B·Hq·Nq·Nk²) (measured: 5.8 s for B·Hq = 8 slices over 3461 keys in
# float64), within DROPOUT_COST; on the long paths (generate.KEY_LAG_PATHS) q = k = 0 and V of O(log Nk) columns
# instead (dropout_lags.path_key_lags), at the path's own sizes.
# B·Hq·Nq·Nk·max(Nk, DROPOUT_ENTRY) of a dropout problem: V = I's O(Nk²) a slice's row, and past few keys the
# per-weight work (the law, the slice pairs, the lag FFT padded to powers of two) as if of 256 keys (measured: 3.5
# CPU-s for 6 heads × 13 506 queries × 11 keys, whose Nk² cost was 0.6 of the cap)
DROPOUT_COST = 2 ** 24
DROPOUT_ENTRY = 256
# B·Hq·Nq·Nk of a forward problem and of a gradient one (the float64 golden values, their sensitivities and, for the
# gradients, float64 autograd over every requires_grad subset cost O(that · D) several times over: measured at load 1,
# ~0.1 s a forward problem of 2¹⁸ scores; the gradients' ten times that)
SCORES = {AGREEMENT: 2 ** 18, GRADIENTS: 2 ** 16, DROPOUT_LAW: 2 ** 18}  # (dropout's: of its key-lag rows)
# Past the cost, the sizes are halved in this order, the axis that makes the path last (rt44h: the long-queries
# gradient row, halved in Nq first, came down to 1025 queries, one chunk and a query, so dk, dv summed in half across
# chunks stayed within the bound)
HALVING = {"long-queries": ("n_k", "batch", "n_q"), "many-batch": ("n_q", "n_k", "batch"),
           "batch-slices": ("n_q", "n_k"), "mid-decode": ("batch", "n_q", "n_k")}
HALVING_DEFAULT = ("n_q", "batch", "n_k")
# and for the forward and dropout rows (their golden values on sampled query rows past generate.SAMPLE_ABOVE, the
# key-lag call's O(Nk·log Nk) a query), the prefill's queries kept past its query tiles
UNGRADED_HALVING = {"prefill": ("batch", "n_k"), "long-context": ("batch",)}  # (long-context: its cell kept)
NEAR = "bool (Nq, Nk) of a structure, exact or one entry off"
PACKED_FORM = "(B, 1, Nq, Nk)"  # (the NEAR rows' form for packed documents, problem())
MASKS = {  # level: (form, kind) of generate.MASK_FORMS
    "bool key padding": ("(B, 1, 1, Nk)", "bool"),
    "additive (Nq, Nk)": ("(Nq, Nk)", "additive"),
    "bool (B, Hq, Nq, Nk)": ("(B, Hq, Nq, Nk)", "bool"),
    "additive key bias": ("(1, 1, 1, Nk)", "additive"),
    # causal (top-left or bottom-right), a sliding window, key padding or all visible, exact or but one entry
    # (masks.NEAR_STRUCTURES, in turn over the rows: rows()), where Nq >= 3
    NEAR: ("(Nq, Nk)", "bool"),
}
# Hq/Hkv: MHA, GQA groups of 2 and 4, and of 3 over two KV heads (red team rt45h: a KV head taken as h >> log2(g),
# right for every group of a power of two), and a group of two query heads: the costly paths' GQA (red team rt46h: a
# long prefill's KV head taken as h // Hkv, where the costly paths took two query heads at most, without a group)
# and a group of 8 over two KV heads, as Llama-3 70B's 64/8 (red team rt49: groups of 8 or more packed query-major
# and unpacked head-major)
# and groups of G over two KV heads, G dealt over the rows of each relation from GROUPS (every size 3 to 7, 9, 12 and
# 15: red team rt52's KV heads tiled, one dropout keep mask per KV head and dk, dv summed over a group's first four
# heads, each for groups of 5-7 alone, escaped every group the array drew, 1, 2, 3, 4 and 8; real models group 5
# (Qwen2.5-32B, 40/8), 6 (Qwen2-1.5B, 12/2) and 7 (Qwen2.5-7B, 28/4))
HEAD_LEVELS = {"1/1": (1, 1), "2/2": (2, 2), "4/2": (4, 2), "4/1": (4, 1), "G/2": (6, 2), "2/1": (2, 1),
               "16/2": (16, 2)}
GROUPED = "G/2"
GROUPS = (3, 5, 6, 7, 9, 12, 15)
# (groups past 7 in the gradients and on the paths of 2¹³ keys or more: 1-4 CPU-s a row of SDPA math, whose least
# sizes the halving cannot go below; measured, the array took 87 CPU-s of SDPA math with every group on every grouped
# row, 76 with these, 67 before groups past 3)
COSTLY_GROUPS = GROUPS[:4]
GROUP = "group"  # (a row's key: its G, rows())
# a path whose heads are its row's head level times this (red team rt47: h % Hkv for h // g past 512 query heads); one
# KV head stays one (MQA as MLA decodes it: 128 query heads or more over one latent head; red team rt50: a 128-head
# tile of MQA decoding reading its first 64 heads' queries escaped, no row having more than 65 heads over one)
HEADS_TIMES = {"many-heads": 256}
RELATIONS = {"forward": AGREEMENT, "gradients": GRADIENTS, "dropout": DROPOUT_LAW}
EXPANDED = ("k, v expanded over heads", "k, v expanded over batch")
# which of k and v an expanded level's rows expand, in turn (generate.STRIDE_ZERO; red team rt56: k expanded over the
# batch taken as a shared prompt, v's first entry read for every entry too, escaped rows that expanded both)
EXPANSIONS = ("k, v", "k", "k, v", "v")  # (both every other row: rt48's folded rows need both, and the arrays
# of impls without a backward hold few expanded rows)
EXPANSION = "expanded"  # (a row's key, rows())
# A row's lengths: drawn in the path's ranges, or (keys alone, or both) a multiple of a tile drawn from SMOOTH_TILES,
# twice over at least, the most divisible by the others in an octave below a draw (smooth_length): the tiles and split sizes a
# kernel picks by the head dim (FlashAttention's 64 and 128, FA3's 80, 96, 112, 176 and 192), whose whole-tile or
# whole-split path (no bounds checks; the last split) is taken only when one divides the length. Red team rt56: an
# empty last split when 768 divided Nk, a key tile of 80 for D > 128 stopping a block early when 80 divided Nk, and a
# query tile of 96 for D 65-96 leaving the last tile unwritten, escaped every drawn length (none of a default run's
# 1029 problems had a length divisible by 768, 640, 1000, 1536 or 3072). A path's rows of each head dim take the
# kinds in turn: the narrow heads' first drawn, the others' first with both lengths smooth (their groups are small).
LENGTHS = "lengths"  # (a row's key, rows())
LENGTH_KINDS = ("drawn", "smooth keys", "smooth both")
SMOOTH_TILES = (16, 32, 48, 64, 80, 96, 112, 128, 160, 176, 192, 256, 384, 512, 640, 768, 1000, 1024, 1536, 2048,
                3072, 4096)
SMOOTH_CHOICES = 3  # (a smooth length is drawn among the octave's most divisible this many)
SMOOTH_PAST_LEAST = 8  # (a halved smooth length may sit up to 1/8 past the path's least: problem())
# An explicit scale's value: the rows of each relation take these in turn (rows()), so the gradients meet 1.0 as the
# forward does, and values near 1 and near the default 1/√D are drawn continuously, 1 ± 10^u with u uniform in
# NEAR_EXPONENTS, either sign; "broad": ±10^u, u uniform in BROAD_EXPONENTS (red team rt52: a backward reading an
# explicit 1.0 as unset, and a scale within 5% of 1 snapped to 1, escaped the list 0.3, 2, -0.5)
EXPLICIT_SCALES = ("one", "near one", "near default", "broad")
NEAR_EXPONENTS = (-4.0, -1.0)
BROAD_EXPONENTS = (-1.5, 0.7)
SCALE = "scale value"  # (a row's key, rows())
ZERO_TAILS = "zero tails"
FEATURE_LEVELS = {
    "mask": ("none",) + tuple(MASKS),
    "mask dtype": ("q's", "float32"),  # a float32 additive mask beside half q (shifted by generate.MASK_SHIFT)
    "causal": (False, True),
    "heads": tuple(HEAD_LEVELS),
    "kv batch": ("own", "broadcast"),  # k, v of batch 1 broadcast over q's
    # one element of q, k or v (k or v only where no key is hidden); "v underflowed": where the weights are 0; "zero
    # tails": the last quarter of the keys (k and v rows) and of the queries exactly 0 in every entry and head, padding
    # a caller left in place, which SDPA attends to as any key (red team rt52: trailing zero keys dropped as padding,
    # trailing zero queries answered 0, escaped inputs that were never exactly 0 at the ends)
    "nonfinite": ("none", "one input", "v underflowed", ZERO_TAILS),
    "relation": tuple(RELATIONS),
    # (2: (N, D), one entry of one head, the least rank torch's SDPA takes, measured: rank 1 refused, 2 to 6 taken,
    # masks of at most two dims at rank 2; red team rt51: an impl refusing rank 2, another dropping is_causal there)
    "rank": (4, 3, 5, 2),
    # (and stride 0: generate.STRIDE_ZERO; an expanded level's rows expand k and v, k alone or v alone in turn, rows())
    "layout": ("contiguous", "transposed", "slice", "q stride 0", "k, v stride 0") + EXPANDED,
    "scale": ("default", "explicit"),
    # D and Dv up to the path's cap, or past 128 (a kernel's wide-head template, its own accumulators: red team
    # rt45h's decode kept them in half for D > 128 only)
    # and the head dims of real models: 65-128 (a 128-channel template over many keys) and DeepSeek's MLA (D 576, Dv 512)
    # and past 640 (red team rt47: a 128-channel chunk loop dropping the tail past five chunks), on the small path
    "head dim": ("narrow", "wide", "medium", "MLA", "huge", "wider"),
    # the same call just before on the very buffers, holding other values the caller then overwrote in place
    # (generate.PRIOR_CALLS' "same buffers, written": state a path caches by pointer goes stale)
    "earlier call": ("none", "same buffers, written"),
}
STALE = FEATURE_LEVELS["earlier call"][1]
WIDE = (129, 256)  # (past the 128-channel template, up to FlashAttention's largest head dim; rt48: a 256-channel one)
WIDER = (257, 512)  # (past it, rt49: a long-KV kernel's q·k loop over one 256-channel chunk)
MEDIUM = (72, 80, 96, 100, 112, 127, 128)
BROAD = ("wide", "medium", "wider")  # the head dims past the narrow ones (allowed(): forward only, not the longest paths)
MLA = (576, 512)
# the huge level's head dims: its rows take these octaves in turn (rows()), one past every power of two from 512 to
# 4096 (red team rt52: q and k truncated to 1024 channels past 1024 escaped heads that stopped at 1024)
HUGE_OCTAVES = ((641, 1024), (1025, 2048), (2049, 4096), (4097, 8192))  # (rt59: q·k past 4096 channels dropped)
HUGE = (HUGE_OCTAVES[0][0], HUGE_OCTAVES[-1][1])
OCTAVE = "octave"  # (a row's key, rows())
MAX_RANK = 8  # the rank level 5's rows run at 5 to MAX_RANK in turn (SDPA takes any rank from 2, measured to 9)
# an additive random mask's magnitude (its values N(0, 2²) times it): every other row of each dtype's additive
# masks takes 10^u, u over MASK_EXPONENTS' decades in turn (mask_magnitude), frozen or learned (red team
# rt52: a frozen mask below 1e-3 in magnitude skipped escaped masks of size 1 or more)
MASK_EXPONENTS = (-5.0, 1.0)
MAGNITUDE = "mask magnitude"  # (a row's key: its turn, rows())
HALF = ("float16", "bfloat16")
# every run's array has every dtype as a level, whatever dtypes the run asks for, so a run of one dtype judges the
# same rows (and pairs) as the default run: a row of a dtype the run lacks runs in the run's first dtype
DTYPES = ("float32", "float16", "bfloat16", "float64")
THOROUGH_ARRAYS = 4
# Every (path, a, b) triple of these factors is met too, past the small path, the costly paths and dropout (red team
# rt45h: 6 of its 15 escapes were one path with two features: GQA over several KV heads with a per-head mask, k, v
# broadcast with a per-entry mask or with gradients, an additive mask's gradient, D past 128 in half, a default scale
# with D not a multiple of 32, each on a decode or prefill path alone, while the pairs were each met on another path).
# The factors a path's own kernel branches on; the forms (rank, layout, the mask's dtype, non-finite inputs) are met
# pairwise. A default run meets the triples of the structural features (the mask, the head map, k, v's batch, the
# gradients) with groups of a size not a power of two over several KV heads, or a group of two over one (TRIPLE_HEADS);
# a thorough run every triple of TRIPLE_FACTORS with every head level. The rows they add are drawn at their path's
# least sizes (TRIPLE_SHRINK: an eighth of the cost cap).
TRIPLE_FACTORS = ("dtype", "mask", "causal", "heads", "kv batch", "relation", "scale", "head dim")
DEFAULT_TRIPLE_FACTORS = ("mask", "heads", "kv batch", "relation", "scale")
TRIPLE_HEADS = (GROUPED, "2/1")
TRIPLE_ROW = "triple"
STRUCTURE = "structure"  # (a row's key: the NEAR mask's structure, rows())
# A dropout row's p: the middle band, where its keep masks' lags are judged from 1000 counted pairs on
# (dropout_lags.AXIS_PAIRS_PER_SKEW) and, on the long paths, its key lags and repeated rows (dropout_lags.LAG_BAND);
# and small p, where the kept count alone is judged and a keep probability off by a few 2⁻⁸ of p shows (red team
# rt49: uniforms drawn in half on a long-KV path dropped 3× too many at p = 1e-3, ~8e-4 too many at 0.3-0.7, which
# no count over a path's weights can see). log10 p uniform over the small band.
P_BAND = "p band"  # (a row's key, rows())
P_BANDS = {"middle": LAG_BAND, "small": (-3.0, -1.5)}
# The long paths' small-p rows are of these dtypes: their kept count is read from a ones column of V, whose half output
# rounds by 2⁻⁹ of itself, a count off by a few keys in Nk ≥ 1024 (measured: SDPA math in bfloat16 over the tiles'
# 1024 keys, z = -7.4 at p = 0.0125, a rounding bias, not dropout's), which the count's spread at small p cannot hide
SMALL_P_DTYPES = ("float32", "float64")
# A dropout row's key: the impl has a backward, so the row draws a requires_grad subset, judged with the forward's keep
# mask (generate._dropout) where V = I (rank 4, k, v of q's batch; the long paths' rows read the masks through V's
# columns, no gradients). Red team rt49: a backward regenerating the keep mask per 4096-key chunk escaped where only
# the drawn problems, over few keys, judged dropout's gradients.
DROPOUT_GRADS = "dropout gradients"
# the structural features and the input forms (plain_formed)
FEATURE_FACTORS = ("dtype", "mask", "mask dtype", "causal", "heads", "scale", "head dim")
FORM_FACTORS = ("kv batch", "nonfinite", "rank", "layout", "earlier call")
TRIPLE_CANDIDATES = 4
TRIPLE_SHRINK = 8


def chosen_paths(names=None) -> tuple[str, ...] | None:
    """``names`` checked against PATHS, PLANE and TRAINING (None: every path, a thorough run's besides)."""
    if names is None:
        return None
    names = tuple(names) if not isinstance(names, str) else (names,)
    known = tuple(ALL_PATHS) + (PLANE, TRAINING)
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise ValueError(f"paths: {', '.join(map(repr, unknown)) or 'none given'}; the paths are {', '.join(known)}")
    return names


def factors(features: frozenset, thorough: bool = False, kept: tuple[str, ...] | None = None) -> dict[str, tuple]:
    """The covering array's factors for an impl with ``features``: levels an impl lacks the feature for are left out
    (as the fixed cases switch them off); a thorough run's paths too; only the paths ``kept`` when given."""
    levels = dict(FEATURE_LEVELS)
    if ATTN_MASK not in features:
        levels["mask"], levels["mask dtype"] = ("none",), ("q's",)
    if CAUSAL not in features:
        levels["causal"] = (False,)
    if GQA not in features:
        levels["heads"] = ("1/1", "2/2")
    levels["relation"] = tuple(r for r in RELATIONS if (r != "dropout" or DROPOUT in features)
                               and (r != "gradients" or BACKWARD in features))
    paths = tuple(PATHS) + (tuple(THOROUGH_PATHS) if thorough else ())
    paths = tuple(p for p in paths if set(PATH_RELATIONS.get(p, levels["relation"])) & set(levels["relation"])
                  and (kept is None or p in kept))
    return {"path": paths, "dtype": DTYPES, **levels}


def allowed(row: dict) -> bool:
    """The constraints, on two factors each (one on three): what SDPA refuses, what a relation cannot judge, what costs
    too much. (Each rule asks for its factors inline, ``"a" in row and "b" in row``: building a run's array asks this
    of 350 000 partial rows, and a helper's call per rule was a third of its 4.2 s.)"""
    relation, nonfinite, mask = row.get("relation"), row.get("nonfinite"), row.get("mask")
    rules = (
        "mask" in row and "causal" in row and mask != "none" and row["causal"],  # SDPA refuses attn_mask with is_causal
        # a NaN key a mask or causal hides: SDPA math's output is NaN there (it adds the mask to the NaN score), the
        # masked-out float64 golden value's not; either is defensible, so there only a NaN in q (problem() picks it)
        "nonfinite" in row and "mask" in row and nonfinite == "v underflowed" and mask != "none",
        "nonfinite" in row and "causal" in row and nonfinite == "v underflowed" and row["causal"],
        # (zero tails in the gradients too, not dropout's V = I)
        "nonfinite" in row and "relation" in row and nonfinite not in ("none", ZERO_TAILS) and relation != "forward",
        "nonfinite" in row and "relation" in row and nonfinite == ZERO_TAILS and relation == "dropout",
        "nonfinite" in row and "kv batch" in row and nonfinite != "none" and row["kv batch"] == "broadcast",
        "nonfinite" in row and "scale" in row and nonfinite == "v underflowed" and row["scale"] == "explicit",
        "kv batch" in row and "rank" in row and row["kv batch"] == "broadcast" and row["rank"] == 3,
        # (k, v broadcast at rank 5 or 6 along one of two batch dims needs an even batch of 4 or more: on a path
        # drawing one (problem()), or the pair met a path of three entries at most and the split was never drawn)
        "kv batch" in row and "rank" in row and "path" in row and row["kv batch"] == "broadcast" and row["rank"] == 5
        and not _splits_batch(row["path"]),
        # rank 2 is one entry of one head (and no dropout: its law judges two entries at least)
        "rank" in row and "path" in row and row["rank"] == 2
        and (ALL_PATHS[row["path"]][0][0] > 1 or row["path"] in HEADS_TIMES),
        "rank" in row and "heads" in row and row["rank"] == 2 and row["heads"] != "1/1",
        "rank" in row and "kv batch" in row and row["rank"] == 2 and row["kv batch"] == "broadcast",
        "rank" in row and "mask" in row and row["rank"] == 2 and MASKS.get(row["mask"], ("",))[0].startswith("(B,"),
        "rank" in row and "layout" in row and row["rank"] == 2 and row["layout"] in EXPANDED,
        "rank" in row and "relation" in row and row["rank"] == 2 and relation == "dropout",
        # (generate._gradients takes a broadcast k, v at rank 4 only)
        "rank" in row and "relation" in row and "kv batch" in row and row["rank"] != 4 and relation == "gradients"
        and row["kv batch"] == "broadcast",
        # a float64 backward over 2¹⁷ keys costs seconds (generate.draw leaves the long decodes out of gradients too)
        "relation" in row and "path" in row and relation == "gradients" and row["path"] == "longest-decode",
        # a head of 65-192 channels on the longest paths or with gradients or dropout: 1-10 CPU-s of float64 work
        # each (the halving cannot go below a path's least sizes: 2¹⁷ keys, 16 queries over 8193, 1025 queries);
        # MLA's 576 channels on the small path alone, and not with dropout (V = I sets Dv)
        # (red team rt48: a 256-channel template on the split-K decode, a tiles path's second 128-channel chunk, a
        # prefill workspace of 64 value channels, each escaped where no broad head met the path; those paths' forward
        # rows are now judged on sampled query rows, generate.sampled_rows, so only the calls themselves stay too
        # costly on a million keys, a long prefill, 2¹⁷ keys and 33 000 queries: measured, 1.5-6.2 CPU-s a row of
        # SDPA math over 131 073 keys or 33 000 queries at D 80-232, 27 CPU-s of a default run's 119; a broad head's
        # template meets the split-K decode at 2¹⁴ keys, the query chunks at 1025+ queries)
        "head dim" in row and "path" in row and row["head dim"] in BROAD and row["path"] in (
            "million-keys", "long-prefill", "longest-decode", "huge-queries", "long-context") + tuple(THOROUGH_PATHS),
        # (257-512 channels over 2¹³-2¹⁵ keys: 1.2-1.9 CPU-s a row, measured; they meet 1024+ keys on the serving
        # batch, the tiles and the mid-length decodes; over 1025+ queries an output of 8 M elements at 16 heads, 2.5
        # CPU-s of the judge's own work for a query-chunk path whose few keys a channel loop never meets)
        "head dim" in row and "path" in row and row["head dim"] == "wider" and row["path"] in (
            "decode", "spec-decode", "prefill", "long-queries"),
        "head dim" in row and "relation" in row and row["head dim"] in BROAD and relation != "forward",
        "head dim" in row and "path" in row and row["head dim"] in ("MLA", "huge") and row["path"] != "small",
        "head dim" in row and "relation" in row and row["head dim"] == "huge" and relation != "forward",
        # (hundreds of heads: dropout's slice pairs are O((B·Hq)²), and a broad head multiplies every score's cost)
        "relation" in row and "path" in row and relation == "dropout" and row["path"] in HEADS_TIMES,
        "head dim" in row and "path" in row and row["head dim"] in BROAD and row["path"] in HEADS_TIMES,
        "head dim" in row and "relation" in row and row["head dim"] == "MLA" and relation == "dropout",
        # the long prefill forward only (its golden values on sampled rows), no dropout on the whole tiles or the
        # serving batch (V = I over 1024+ keys: O(Nk²) a row); one or two heads and k, v of q's batch on the costly paths
        "relation" in row and "path" in row and relation not in PATH_RELATIONS.get(row["path"], (relation,)),
        # (dropout on the long paths: q = k = 0 and V's columns, generate.KEY_LAG_PATHS; no mask, no causal there)
        "relation" in row and "path" in row and relation == "dropout" and row["path"] in KEY_LAG_PATHS
        and (row.get("mask", "none") != "none" or row.get("causal", False)),
        "heads" in row and "path" in row and row["path"] in COSTLY and row["path"] != "packed-queries"
        and HEAD_LEVELS[row["heads"]][0] > 2,
        "heads" in row and "path" in row and row["path"] == "packed-queries" and row["heads"] != PACKED_HEADS,
        # (a group of 8 over two KV heads: 16 query heads over 2¹³ keys or more, or a serving batch's 32 entries, cost
        # 0.3-1 CPU-s a row; its packing meets the queries of the small, prefill-sized and query-chunk paths)
        "heads" in row and "path" in row and row["heads"] == "16/2" and (ALL_PATHS[row["path"]][2][0] >= 2 ** 13
                                                             or row["path"] == "batched-decode"),
        # (a serving batch's gradients: 32 entries, two heads at most)
        "heads" in row and "path" in row and row["path"] == "batched-decode" and relation == "gradients"
        and HEAD_LEVELS[row["heads"]][0] > 2,
        "kv batch" in row and "path" in row and row["path"] in COSTLY and row["kv batch"] == "broadcast",
        # (a path of one batch entry: k, v of batch 1 are its own)
        "kv batch" in row and "path" in row and row["kv batch"] == "broadcast" and ALL_PATHS[row["path"]][0][1] < 2,
        # (the long prefill's sampled rows are judged without a non-finite input)
        "nonfinite" in row and "path" in row and row["path"] == "long-prefill" and nonfinite != "none",
        # more than two query heads over the decode paths' 2049+ keys (V = I for dropout, or a wide head) or over the
        # batch chunks' 33+ entries (dropout's slice pairs, O((B·Hq)²)): 1-2 CPU-s each, past their caps (a path's
        # least sizes bound the halving)
        "heads" in row and "path" in row and HEAD_LEVELS[row["heads"]][0] > 2
        and (row.get("relation") == "dropout" and row["path"] in ("decode", "spec-decode", "many-batch",
                                                                   "batch-slices", "huge-batch")
             or row.get("head dim") in BROAD and row["path"] in ("decode", "spec-decode", "batched-decode")),
        "relation" in row and "layout" in row and relation == "dropout" and row["layout"] != "contiguous",
        # (agreement's)
        "earlier call" in row and "relation" in row and row["earlier call"] != "none" and relation != "forward",
        # (one input element made non-finite, or keys made to underflow, in values repeated along the sequence)
        "nonfinite" in row and "layout" in row and nonfinite != "none" and row["layout"] in STRIDE_ZERO,
        # one key repeated: every visible key the same score and value, so the output is v's row wherever a key is
        # visible, whatever the scale, the mask's values, causal or the head map; only an empty row (the key padding
        # level's empty entry) tells it apart. Elsewhere it would hide the row's other features (red team rt46h's
        # even-tiles path ignoring an explicit scale met its only explicit-scale row there)
        "layout" in row and "mask" in row and row["layout"] == "k, v stride 0" and mask != "bool key padding",
        "layout" in row and "scale" in row and row["layout"] == "k, v stride 0" and row["scale"] != "default",
        "layout" in row and "relation" in row and row["layout"] == "k, v stride 0" and relation != "forward",
        "layout" in row and "heads" in row and row["layout"] == "k, v stride 0" and row["heads"] != "1/1",
        # (one entry)
        "layout" in row and "path" in row and row["layout"] == "k, v stride 0" and ALL_PATHS[row["path"]][0][1] < 2,
        # k, v of one head or entry expanded: a forward form (as stride 0 along the keys), over two KV heads or entries
        # (and their gradients, through a leaf of stride 0: red team rt56's dk, dv written through k's, v's strides, every
        # entry holding the sum, escaped forward-only rows; no dropout, whose V = I is its own)
        "layout" in row and "relation" in row and row["layout"] in EXPANDED and relation == "dropout",
        "layout" in row and "heads" in row and row["layout"] == "k, v expanded over heads"
        and HEAD_LEVELS[row["heads"]][1] < 2,
        "layout" in row and "path" in row and row["layout"] == "k, v expanded over batch"
        and ALL_PATHS[row["path"]][0][1] < 2,
        "layout" in row and "kv batch" in row and row["layout"] == "k, v expanded over batch"
        and row["kv batch"] == "broadcast",
        "relation" in row and "mask dtype" in row and relation == "dropout" and row["mask dtype"] == "float32",
        "mask dtype" in row and "mask" in row and row["mask dtype"] == "float32" and not mask.startswith("additive"),
        "mask dtype" in row and "dtype" in row and row["mask dtype"] == "float32" and row["dtype"] not in HALF,
    )
    return not any(rules)


def _splits_batch(path: str) -> bool:
    """A path whose rows of k, v broadcast at rank 5 take an even batch of 4 or more (problem())."""
    (b_lo, b_hi), k_lo = ALL_PATHS[path][0], ALL_PATHS[path][2][0]
    return b_hi >= 4 and k_lo < 2 ** 13


def plain_rows(features: frozenset, thorough: bool = False, kept=None) -> tuple[dict, ...]:
    """Rows with every feature at its plain level (no mask, rank 4, contiguous, k, v of q's batch, the default scale)
    on each path but the small one: its first relation (the forward, where the path has it) in each dtype, and each
    other relation once (dropout once for each band of p, P_BANDS), in a dtype that turns with the path. Red team rt44h: a path's own code guarded by the plain
    form (a split-K decode taken only without a mask, a batch-chunk dropout only at rank 4 with k, v of q's batch) is
    met by no pairwise row whose spare factors are not plain: its float64 accumulators in float32, its dropout seeds
    shared by batch entries escaped. (The relations once took turns over the dtypes: a path with two relations then
    met float64 only with dropout, and a float64-in-float32 decode escaped.)"""
    levels = factors(features, thorough, kept)
    out = []
    for i, path in enumerate(p for p in levels["path"] if p != "small"):  # (the small path's: the fixed cases')
        # (each feature's first level the path allows: the packed path's heads are a group of 4)
        plain = {name: next(v for v in values if allowed({"path": path, name: v}))
                 for name, values in levels.items() if name not in ("path", "dtype", "relation")}
        first, *others = [r for r in levels["relation"] if allowed({"path": path, "relation": r})]
        dtypes = COSTLY_PLAIN_DTYPES if path in COSTLY else levels["dtype"]
        out += [{"path": path, "dtype": dtype, **plain, "relation": first} for dtype in dtypes]
        out += [{"path": path, "dtype": dtypes[(i + j) % len(dtypes)], **plain, "relation": r}
                for j, r in enumerate(others, 1)]
        # (dropout again, for the small band of p: rows() gives a path's dropout rows the bands in turn, in float32,
        # where the long paths' kept counts are exact: SMALL_P_DTYPES)
        out += [{"path": path, "dtype": "float32", **plain, "relation": "dropout"}] if "dropout" in others else []
    return tuple(out)


def _triple_wanted(thorough: bool):
    def wanted(row: dict) -> bool:
        return row.get("path") not in ("small",) + COSTLY and (thorough or row.get("heads", GROUPED) in TRIPLE_HEADS)
    return wanted


def _cheap(row: dict) -> bool:
    """allowed() for the rows the triples add: no dropout (V = I, O(Nk²) a row), and a wide head with one entry of k,
    v and two heads at most (0.5-1 CPU-s a row otherwise over a decode's 16 385 keys)."""
    wide = row.get("head dim") in BROAD
    return allowed(row) and row.get("relation") != "dropout" and not (
        wide and (row.get("kv batch") == "broadcast" or HEAD_LEVELS[row.get("heads", "1/1")][0] > 2))


def triples(features: frozenset, thorough: bool = False, kept=None) -> set:
    """Every allowed value triple (path, a, b) of a run's triple factors (DEFAULT_TRIPLE_FACTORS, or TRIPLE_FACTORS in
    a thorough run), the small and costly paths and dropout aside; and the plain-formed rows' tuples (plain_formed)."""
    levels = factors(features, thorough, kept)
    names = [n for n in levels if n in (TRIPLE_FACTORS if thorough else DEFAULT_TRIPLE_FACTORS)]
    shapes = [("path", a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    return allowed_triples(levels, _cheap, shapes, _triple_wanted(thorough)) | plain_formed(levels) | one_form(levels)


def plain_formed(levels: dict) -> set:
    """Each level of each structural feature (FEATURE_FACTORS) on each path but the small one, in a forward problem
    whose input forms (FORM_FACTORS) are all plain: a path's own code is often taken only for the forms it serves (rank
    4, contiguous, finite, k and v of q's batch), the rest handed to another path. Red team rt46h: its paths handed
    other ranks, broadcast k, v and non-finite inputs to SDPA; its long prefill's causal offset, an even-tiles path's
    diagonal tiles, a 128-channel template's NaN handling met causal, or the head dims, only in rows of rank 5, a
    gradient problem or a stride-0 layout, and escaped. And on each path a mask (its level turning with the path)
    after the same call on the buffers the caller then wrote (STALE): a path converting the mask and caching the
    result by pointer goes stale only there, a triple the pairs do not hold."""
    plain = tuple((f, levels[f][0]) for f in FORM_FACTORS if f in levels)
    masks = [m for m in levels.get("mask", ())[1:] if allowed({"mask": m, "earlier call": STALE})]
    out = set()
    for i, path in enumerate(levels["path"]):
        wanted = [{f: value} for f in FEATURE_FACTORS for value in levels.get(f, ())]
        if masks and STALE in levels.get("earlier call", ()):
            wanted.append({"mask": masks[i % len(masks)], "earlier call": STALE})
        for extra in wanted:
            row = {"path": path, "relation": "forward", **dict(plain), **extra}
            if path != "small" and _cheap(row) and _completable(row, levels, _cheap):
                out.add(tuple(sorted(row.items(), key=lambda kv: list(levels).index(kv[0]))))
    return out


def one_form(levels: dict) -> set:
    """Each non-plain level of each input form (FORM_FACTORS) with each level of each structural feature
    (FEATURE_FACTORS), the other forms plain, in a forward problem on the small path. A fast path is often keyed on
    one form with the rest plain (red team rt48: k, v expanded over the heads taken as MQA, at rank 4 without a mask,
    its query heads folded into causal rows; the pair (expanded, causal) was met at rank 5 only)."""
    plain = {f: levels[f][0] for f in FORM_FACTORS if f in levels}
    out = set()
    for f in plain:
        for form in levels[f][1:]:
            for g in FEATURE_FACTORS:
                for value in levels.get(g, ()):
                    row = {**plain, "path": "small", "relation": "forward", f: form, g: value}
                    if _cheap(row) and _completable(row, levels, _cheap):
                        out.add(tuple(sorted(row.items(), key=lambda kv: list(levels).index(kv[0]))))
    return out


@functools.lru_cache(maxsize=16)  # (each dtype's pass asks for the run's array)
def rows(seed: int, features: frozenset, array: int = 0, thorough: bool = False, kept=None) -> tuple[dict, ...]:
    """The run's covering array number ``array`` (a function of the seed, the features, that number and ``thorough``
    alone): the plain rows, then pairwise ones, then the rows for the (path, a, b) triples those leave, marked
    TRIPLE_ROW (drawn at their path's least sizes, problem()). A thorough run's first array adds THOROUGH_PATHS and
    every triple of TRIPLE_FACTORS; its others are as a default run's, of other seeds."""
    full = thorough and array == 0  # (the thorough paths and triples once a run; its other arrays as a default run's)
    levels, plain = factors(features, full, kept), frozenset(FEATURE_LEVELS) - {"relation"}
    rng = _rng(seed, "covering", sorted(features), array)
    pairwise = covering_array(levels, allowed, rng, base=plain_rows(features, full, kept), plain=plain)
    more = covering_array(levels, _cheap, rng, candidates=TRIPLE_CANDIDATES, plain=plain,
                          targets=not_held(pairwise, triples(features, full, kept)))
    out = list(pairwise) + [{**row, TRIPLE_ROW: True} for row in more]
    # the structured masks' rows take the structures in turn: the rows of paths of three queries or more in a turn of
    # their own, as a structure needs three (problem()); a turn over rows that may draw fewer lost the exact sliding
    # window when the array changed
    _deal(out, lambda row: row.get("mask") == NEAR, STRUCTURE, NEAR_STRUCTURES,
          by=lambda row: ALL_PATHS[row["path"]][1][0] >= 3)
    # each path's dropout rows the bands of p (a path's first: the middle band)
    _deal(out, lambda row: row.get("relation") == "dropout", P_BAND, tuple(P_BANDS), by=lambda row: row["path"])
    out = [{**row, DROPOUT_GRADS: "gradients" in levels["relation"]} if P_BAND in row else row for row in out]
    # each relation's grouped rows the group sizes, and its explicit scales the kinds of value
    for groups in (GROUPS, COSTLY_GROUPS):
        _deal(out, lambda row: row.get("heads") == GROUPED and _costly_group(row) == (groups == COSTLY_GROUPS), GROUP,
              groups, by=lambda row: row["relation"])
    _deal(out, lambda row: row.get("scale") == "explicit", SCALE, EXPLICIT_SCALES, by=lambda row: row["relation"])
    # the huge heads the octaves, and each dtype's additive masks their turns of magnitude
    _deal(out, lambda row: row.get("head dim") == "huge", OCTAVE, HUGE_OCTAVES)
    _deal(out, lambda row: row.get("layout") in EXPANDED, EXPANSION, EXPANSIONS, by=lambda row: row["layout"])
    for first in LENGTH_KINDS[::2]:  # (the narrow heads' rows first drawn, the others' first smooth in both)
        _deal(out, lambda row: (row.get("head dim") == "narrow") == (first == "drawn"), LENGTHS,
              LENGTH_KINDS[LENGTH_KINDS.index(first):] + LENGTH_KINDS[:LENGTH_KINDS.index(first)],
              by=lambda row: (row["path"], row["head dim"]))
    _deal(out, lambda row: MASKS.get(row.get("mask"), ("", ""))[1] == "additive", MAGNITUDE, None,
          by=lambda row: row["dtype"])
    return tuple(out)


# the keys rows() adds to a row beside its factors' levels
ROW_KEYS = (TRIPLE_ROW, STRUCTURE, P_BAND, DROPOUT_GRADS, GROUP, SCALE, OCTAVE, MAGNITUDE, EXPANSION, LENGTHS)


def _costly_group(row: dict) -> bool:
    """Whether a grouped row takes COSTLY_GROUPS."""
    return row["relation"] == "gradients" or ALL_PATHS[row["path"]][2][0] >= 2 ** 13


def _deal(out: list, wanted, key: str, values, by=lambda row: 0) -> None:
    """Each row ``wanted`` takes values[t] under ``key`` (or t itself where ``values`` is None), t its turn among the
    wanted rows of its group ``by``: a group of as many rows as values meets each value, whatever the array's seed (a
    draw per row leaves a value out of a group of that size one time in several)."""
    turns: dict = {}
    for i, row in enumerate(out):
        if wanted(row):
            turn = turns[by(row)] = turns.get(by(row), -1) + 1
            out[i] = {**row, key: turn if values is None else values[turn % len(values)]}


def problem(row: dict, seed: int, index: int, value_dim: bool = True, array: int = 0) -> Problem:
    """Row ``index`` of the run's array as a Problem of its path's sizes (drawn by a generator of its own)."""
    r = _rng(seed, "covering problem", index, *((array,) if array else ()))
    (b_lo, b_hi), (q_lo, q_hi), (k_lo, k_hi), d_cap = ALL_PATHS[row["path"]]
    b_hi = b_lo if row["rank"] == 2 else b_hi  # (rank 2: one entry, of a path whose least is one: allowed())
    relation = RELATIONS[row["relation"]]
    lagged = relation == DROPOUT_LAW and row["path"] in KEY_LAG_PATHS  # (V of O(log Nk) columns, not V = I)
    dropout_grads = (relation == DROPOUT_LAW and row.get(DROPOUT_GRADS) and not lagged and row["rank"] == 4
                     and row["kv batch"] == "own")
    grads = r.choice(GRAD_SUBSETS) if relation == GRADIENTS or dropout_grads else ""
    sampled_backward = relation == GRADIENTS and row["path"] in SAMPLED_BACKWARD_PATHS  # (q, k and v, no mask's)
    grads = "qkv" if sampled_backward else grads
    batch, n_q, n_k = r.randint(b_lo, b_hi), r.randint(q_lo, q_hi), r.randint(k_lo, k_hi)
    if row["path"] in LOG_UNIFORM:
        n_q, n_k = (min(hi, int(lo * (hi / lo) ** r.random())) for lo, hi in ((q_lo, q_hi), (k_lo, k_hi)))
    if row["path"] in MULTIPLE_OF:
        tile = MULTIPLE_OF[row["path"]]
        n_q, n_k = (r.randint(lo // tile, hi // tile) * tile for lo, hi in ((q_lo, q_hi), (k_lo, k_hi)))
    lengths, multiple = row.get(LENGTHS, "drawn"), MULTIPLE_OF.get(row["path"], 1)
    smooth = {"n_k": (k_lo, k_hi)} if lengths == "smooth keys" else {} if lengths == "drawn" else {
        "n_k": (k_lo, k_hi), "n_q": (q_lo, q_hi)}  # (axis: its range)
    n_k, n_q = (smooth_length(*smooth[axis], multiple, r) or n if axis in smooth else n
                for axis, n in (("n_k", n_k), ("n_q", n_q)))
    hq, hkv = HEAD_LEVELS[row["heads"]]
    hq = hkv * row[GROUP] if GROUP in row else hq
    times = HEADS_TIMES.get(row["path"], 1)
    hq, hkv = hq * times, hkv if hkv == 1 < hq else hkv * times  # (MQA's one KV head stays one)
    broadcast = row["kv batch"] == "broadcast"
    # two entries at least where the path allows: a broadcast k, v needs them, and the dropout law's slice pairs
    # judge entries against each other (rt44h: one keep mask per head broadcast over a decode's batch; the plain
    # rows' one head keeps them within the cost)
    least_batch = min(2, b_hi) if broadcast or row["layout"] == "k, v expanded over batch" else b_lo
    # a mask of its own per batch entry meets two entries on every path, one-entry paths too (red team rt49: a
    # prefill reading entry 0's key padding for every entry escaped where nine paths drew B = 1 alone), but the costly
    # ones (a second entry of a long prefill or a million keys: 2-3 CPU-s a row, measured)
    # packed documents differ per batch entry: a structured row of them takes a mask of its own per entry, PACKED_FORM,
    # at rank 4 (red team rt53: every entry given entry 0's documents escaped (Nq, Nk) masks, one slice for all)
    packed = (row["mask"] == NEAR and str(row.get(STRUCTURE, "")).startswith(PACKED) and row["rank"] == 4
              and row["path"] not in COSTLY and b_hi >= 2 and q_hi >= 3)
    if (MASKS.get(row["mask"], ("",))[0].startswith("(B,") or packed) and row["path"] not in COSTLY:
        least_batch = max(least_batch, 2)
    # and k, v broadcast at rank 5 or 6 meet two batch dims of 2 or more (generate._split_batch: an even batch of 4+),
    # on the paths of fewer than 2¹³ keys (four entries of a decode's 16 385 keys in a wide head: 5 CPU-s a row)
    if broadcast and row["rank"] == 5 and _splits_batch(row["path"]):
        least_batch = max(least_batch, 4)
    batch = max(batch, least_batch, min(2, b_hi) if relation == DROPOUT_LAW else 1)  # (halved to one past the cost)
    if relation == DROPOUT_LAW:  # enough weights for the kept fraction (generate.draw's least)
        n_k = max(n_k, 8)
    # within the cost: halved in the path's HALVING order towards its least (B not below least_batch)
    size = {"batch": batch, "n_q": n_q, "n_k": n_k}
    least = {"batch": least_batch, "n_q": q_lo, "n_k": max(k_lo, 8) if relation == DROPOUT_LAW else k_lo}
    if row["head dim"] == "MLA":
        d, dv = MLA if value_dim else (MLA[0], MLA[0])
    elif row["head dim"] == "medium":
        d = r.choice(MEDIUM)
        dv = r.choice(MEDIUM) if value_dim and r.random() < 0.3 else d
    elif row["head dim"] == "huge":
        octave = row.get(OCTAVE, HUGE_OCTAVES[0])
        d = r.randint(*octave)
        dv = r.randint(*octave) if value_dim and r.random() < 0.5 else d
    elif row["head dim"] == "wide":
        d = r.randint(*WIDE)
        dv = r.randint(*WIDE) if value_dim and r.random() < 0.3 else d
    elif row["head dim"] == "wider":
        d = r.randint(*WIDER)
        dv = r.randint(*WIDER) if value_dim and r.random() < 0.3 else d
    else:
        d = r.choice([x for x in HEAD_DIMS if x <= d_cap])
        dv = r.choice([x for x in HEAD_DIMS if x <= d_cap]) if value_dim and r.random() < 0.3 else d
    width = max(1, (d + dv) // 32)  # (the float64 work grows with D + Dv: a score of narrow heads counts one)
    cost, cap = ((lambda: size["batch"] * hq * size["n_q"] * size["n_k"] * max(size["n_k"], DROPOUT_ENTRY),
                  DROPOUT_COST) if relation == DROPOUT_LAW and not lagged
                 else (lambda: size["batch"] * hq * size["n_q"] * size["n_k"] * width, SCORES[relation]))
    if row.get(TRIPLE_ROW):
        cap //= TRIPLE_SHRINK
    halving = (UNGRADED_HALVING if relation != GRADIENTS else {}).get(row["path"]) or HALVING.get(row["path"],
                                                                                                 HALVING_DEFAULT)
    for axis in halving:
        while cost() > cap and size[axis] > least[axis]:
            size[axis] = max(least[axis], size[axis] // 2)
    # a smooth length halved: the most divisible below it again, or within an eighth past the path's least (its least
    # sizes are a threshold, rarely divisible: the wide heads' rows, the costliest, are halved to them)
    for axis, (lo, hi) in smooth.items():
        if size[axis] < {"n_q": n_q, "n_k": n_k}[axis]:
            top = min(hi, max(size[axis], lo + lo // SMOOTH_PAST_LEAST))
            size[axis] = smooth_length(lo, top, multiple, r, octave=False) or size[axis]
    batch, n_q, n_k = size["batch"], size["n_q"], size["n_k"]
    if broadcast and row["rank"] == 5 and batch % 2:
        batch += 1 if batch < b_hi else -1  # (even: the path's least is 4 or an even one below its most)
    if row["nonfinite"] == "v underflowed" or relation == GRADIENTS or row["causal"]:
        # (a first half of the keys to underflow; over one key dq and dk are exactly 0, and causal hides nothing)
        n_k = max(n_k, min(2, k_hi))
    if relation == DROPOUT_LAW and not lagged:
        dv = n_k
    form, kind = MASKS.get(row["mask"], (None, "bool"))
    form = PACKED_FORM if packed else form
    hidden = form is not None or row["causal"]  # (some key hidden: a non-finite input in q, see allowed())
    nonfinite = {"none": None, "one input": "q" if hidden else r.choice("qkv"), "v underflowed": "v",
                 ZERO_TAILS: None}[row["nonfinite"]]
    scale = _explicit_scale(row.get(SCALE, "broad"), d, r) if row["scale"] == "explicit" else None
    layout = row["layout"].replace("k, v", row[EXPANSION], 1) if EXPANSION in row else row["layout"]
    return Problem(batch, hq, hkv, n_q, n_k, d, dv, bool(row["causal"]), row["dtype"], layout=layout,
                   mask=form, mask_kind=kind,
                   # (in the row's band, P_BANDS; the drawn problems step through the other p: generate.DROPOUT_PS)
                   dropout_p=_dropout_p(row, r) if relation == DROPOUT_LAW else 0.0,
                   grads=grads, scale=scale, relation=relation,
                   seed=zlib.crc32(repr((seed, row["dtype"], "covering", index) + ((array,) if array else ())).encode()),
                   # (and every other float64 forward row's additive mask: red team rt57's kernel took a float32 mask's
                   # dtype for its accumulators beside float64 q; SDPA computes in float64. Not a gradient row's: the
                   # mask's gradient is then float32's)
                   mask_dtype="float32" if form is not None and (row["mask dtype"] == "float32" or (
                       row["dtype"] == "float64" and kind == "additive" and relation == AGREEMENT and index % 2))
                   else None,
                   # (rank "5": 5 to 8 by the row's index, ranks past 5 leading 1s before rank 5's batch dims; red
                   # team rt59: a wrapper flattening the batch dims of q and of k, v apart past rank 6 escaped ranks ≤ 6)
                   rank=row["rank"] + index % (MAX_RANK - 4) if row["rank"] == 5 else row["rank"],
                   kv_broadcast=broadcast,
                   # (±inf in q beside hidden keys: the hidden scores ±inf, SDPA math's added mask makes NaN of +inf
                   # and -inf where a kernel selecting by the mask gives -inf; either is defensible, as for a NaN key)
                   input_nan=nonfinite, input_value=("NaN" if hidden else r.choice(ref.NONFINITE)) if nonfinite
                   else "NaN",
                   underflow=row["nonfinite"] == "v underflowed", zero_tails=row["nonfinite"] == ZERO_TAILS,
                   mask_magnitude=mask_magnitude(row.get(MAGNITUDE), seed) if kind == "additive" else 1.0,
                   mask_grad=relation == GRADIENTS and kind == "additive" and form is not None and not sampled_backward,
                   # key padding of prefixes, one entry's empty: each path's empty rows (red team rt45h: a stride-0 k, v
                   # fast path returning v for them escaped)
                   mask_padding=row["mask"] == "bool key padding" and batch >= 2,
                   prior=None if row["earlier call"] == "none" else row["earlier call"],
                   mask_near=row.get(STRUCTURE, NEAR_STRUCTURES[index % len(NEAR_STRUCTURES)])
                   if row["mask"] == NEAR and n_q >= 3 and n_k >= 2 else None,
                   path=row["path"])


@functools.lru_cache(maxsize=1)
def _smooth_numbers() -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(the numbers 2^a·3^b·5^c·7^d·11^e from 32 to the paths' longest length, sorted; how many of SMOOTH_TILES each is
    a multiple of, twice the tile at least)."""
    top = max(max(q[1], k[1]) for _, q, k, _ in ALL_PATHS.values())
    numbers = {1}
    for prime in (2, 3, 5, 7, 11):
        numbers = {n * prime ** e for n in numbers for e in range(int(math.log(top, prime)) + 1) if n * prime ** e <= top}
    numbers = sorted(n for n in numbers if n >= 2 * SMOOTH_TILES[0])
    return tuple(numbers), tuple(sum(n % t == 0 and n >= 2 * t for t in SMOOTH_TILES) for n in numbers)


def smooth_length(lo: int, hi: int, multiple: int, r, octave: bool = True) -> int | None:
    """A length in [lo, hi], a multiple of ``multiple`` and of a tile t drawn from SMOOTH_TILES (twice over at least),
    among the SMOOTH_CHOICES such lengths most divisible by the tiles, in the octave below a log-uniform draw x, [x/2,
    x] (or in the whole range, not ``octave``); None where the range holds no multiple of a tile twice over."""
    numbers, scores = _smooth_numbers()
    x = lo * (hi / lo) ** r.random() if octave else hi
    for low, high in ((max(lo, x / 2 if octave else lo), x), (lo, hi)):  # (an octave below lo's: the range's own)
        start, end = bisect.bisect_left(numbers, low), bisect.bisect_right(numbers, high)
        tiles = [t for t in SMOOTH_TILES if any(numbers[i] % math.lcm(t, multiple) == 0 and numbers[i] >= 2 * t
                                                  for i in range(start, end))]
        if tiles:
            tile = r.choice(tiles)
            held = sorted(((scores[i], numbers[i]) for i in range(start, end)
                           if numbers[i] % math.lcm(tile, multiple) == 0 and numbers[i] >= 2 * tile), reverse=True)
            return r.choice(held[:SMOOTH_CHOICES])[1]
    return None


def _explicit_scale(kind: str, head_dim: int, r) -> float:
    """An explicit scale of ``kind`` (EXPLICIT_SCALES), drawn with ``r``."""
    if kind == "one":
        return 1.0
    sign = r.choice((-1.0, 1.0))
    if kind == "broad":
        return sign * 10 ** r.uniform(*BROAD_EXPONENTS)
    centre = 1.0 if kind == "near one" else 1.0 / math.sqrt(max(head_dim, 1))
    return float(f"{centre * (1.0 + sign * 10 ** r.uniform(*NEAR_EXPONENTS)):.9g}")


def mask_magnitude(turn: int | None, seed: int) -> float:
    """An additive random mask's magnitude for its turn (rows()): 1 on even turns, and on odd ones 10^u, u in the
    decades of MASK_EXPONENTS in turn from one the seed fixes, so any six odd turns meet every decade (a golden-ratio
    walk over the whole range left a decade out of six turns when the array changed), and within its decade stepping by
    the golden ratio from a point the seed fixes."""
    if turn is None or turn % 2 == 0:
        return 1.0
    lo, hi = MASK_EXPONENTS
    decades, r = int(hi - lo), _rng(seed, "mask magnitude")
    first, within = r.randrange(decades), (r.random() + (turn // 2) * (math.sqrt(5) - 1) / 2) % 1.0
    return 10 ** (lo + (first + turn // 2) % decades + within)


def _dropout_p(row: dict, r) -> float:
    """The row's p, in its band (P_BANDS; the middle one where rows() gave none, and on the long paths in a dtype
    whose kept count is not exact: SMALL_P_DTYPES, judged by the row's dtype as run)."""
    band = row.get(P_BAND, "middle")
    if row["path"] in KEY_LAG_PATHS and row["dtype"] not in SMALL_P_DTYPES:
        band = "middle"
    lo, hi = P_BANDS[band]
    return float(f"{r.uniform(lo, hi) if band == 'middle' else 10 ** r.uniform(lo, hi):.3g}")


def problems(seed: int, dtype: str, dtypes: tuple[str, ...], features: frozenset, value_dim: bool = True,
             arrays: int = 1, kept: tuple[str, ...] | None = None):
    """The run's covering problems for the pass over ``dtype`` of the run's ``dtypes``: the rows of that dtype; float64's,
    where the run lacks it, dealt over the passes in turn (a fifth of a default run's CPU seconds: in the first pass
    alone they made it the run's longest part, 40 of 133 CPU-s, and the two processes' shares 50 and 65); and in the
    first pass those of any other dtype the run lacks (there in the first dtype); of ``arrays`` arrays (the thorough
    run's THOROUGH_ARRAYS: each pair then met at that many sizes and with that many other rows' values); then the
    pass's cells of the (Nq, Nk) plane (plane()) and its training steps (training())."""
    first = dtype == dtypes[0]
    named = None if kept is None else tuple(k for k in kept if k not in (PLANE, TRAINING))
    for array in range(arrays if named != () else 0):
        float64_rows = -1  # (the array's float64 rows so far)
        for index, row in enumerate(rows(seed, features, array, arrays > 1, named)):
            if row["dtype"] == "float64" and "float64" not in dtypes:
                float64_rows += 1
                if dtypes[float64_rows % len(dtypes)] == dtype:
                    yield problem(row, seed, index, value_dim, array)
            elif row["dtype"] == dtype:
                yield problem(row, seed, index, value_dim, array)
            elif first and row["dtype"] not in dtypes:
                yield problem({**row, "dtype": dtype}, seed, index, value_dim, array)
    if kept is None or PLANE in kept:
        yield from plane(seed, dtype, dtypes, features, thorough=arrays > 1)
    if kept is None or TRAINING in kept:
        yield from training(seed, dtype, dtypes, features, thorough=arrays > 1)


# The (Nq, Nk) plane by octaves: cell (a, b) holds Nq in (2^a, 2^a + 2^a/4] and Nk in (2^b, 2^b + 2^b/4], near the
# cell's least corner, where its cost is least. A dispatcher's path for "past X queries and past Y keys" (or for a band
# of queries past Y keys) holds every cell past its corner (a, b), so it holds the cell (a, L - a) of a line a + b = L
# whenever a + b ≤ L: the cells of the line meet every such path whose corner is on or below it, at the line's cost,
# not the plane's. The named paths cover the regions earlier kernels had; the line covers the rest (red team rt52: a
# chunked prefill of 257-1024 queries over more than 16 384 keys, aligned bottom-right or dropping the mask, escaped
# every named path). Each cell is judged twice, causal in one dtype of the run and with a boolean (Nq, Nk) mask in
# the next, forward on sampled query rows; one query or key head, D ≤ 8. The line's cells from 257 queries to 2¹⁷
# (PLANE_QUERY_OCTAVES): fewer queries over more keys are judged on every row (SDPA math: 0.5-1.4 CPU-s a cell,
# measured), and are the decoding and long-context paths' (to 2¹⁷ keys); more queries over fewer keys the query-chunk
# paths' (long-queries, huge-queries). Measured: 0.06-0.2 CPU-s a cell of SDPA math here. A thorough run's lines are
# PLANE_LINES[True], from 2 octaves of queries.
PLANE = "plane"
PLANE_LINES = {False: (22,), True: (18, 20, 22, 24)}
PLANE_QUERY_OCTAVES = {False: (8, 17), True: (2, 22)}
PLANE_LEAST = 2  # (octaves: four keys at least)
PLANE_HEAD_DIMS = (1, 3, 5, 8)


def plane(seed: int, dtype: str, dtypes: tuple[str, ...], features: frozenset, thorough: bool = False) -> list[Problem]:
    """The pass over ``dtype``'s problems of the (Nq, Nk) plane's cells (PLANE_LINES): each cell's causal one in the
    run's dtype of the cell's turn, its masked one in the next (both in a run of one dtype; a plain one where the impl
    takes neither)."""
    out = []
    least, most = PLANE_QUERY_OCTAVES[thorough]
    cells = [(a, line - a) for line in PLANE_LINES[thorough] for a in range(least, min(most, line - PLANE_LEAST) + 1)]
    for turn, (a, b) in enumerate(cells):
        r = _rng(seed, PLANE, a, b)
        n_q, n_k = (r.randint(2 ** e + 1, 2 ** e + max(1, 2 ** e // 4)) for e in (a, b))
        d = r.choice(PLANE_HEAD_DIMS)
        kinds = [k for k, f in (("causal", CAUSAL), ("mask", ATTN_MASK)) if f in features] or ["plain"]
        for j, kind in enumerate(kinds):
            if dtypes[(turn + j) % len(dtypes)] != dtype:
                continue
            masked = kind == "mask"
            out.append(Problem(1, 1, 1, n_q, n_k, d, d, kind == "causal", dtype, mask="(Nq, Nk)" if masked else None,
                               seed=zlib.crc32(repr((seed, dtype, PLANE, a, b, kind)).encode()), path=PLANE))
    return out


# A training step's shapes: a batch of two entries or more, 512-2048 queries over as many keys, GQA over two KV heads,
# heads of 64 and 128 channels, the backward of q, k and v with dO on sampled query rows (generate._sampled_gradients:
# the golden gradients of those rows' sub-problem, O(rows·Nk·D) in float64). Red team rt53: 7 of its 11 escapes were
# backward bugs at these shapes alone (dq of the batch's last entry for every entry, causal GQA recomputing P without
# causal past 512 queries, a key padding read from entry 0 in the backward), where the covering rows' gradients stop
# at 2¹⁶ scores (paths.SCORES) and the fixed cases at 257 queries for two entries and 385 keys for GQA. Each step
# (TRAINING_STEPS: heads, causal, mask form and kind, D) is judged once a run, in the run's dtypes in turn; lengths
# log-uniform in TRAINING_LENGTHS, halved towards 512 past TRAINING_SCORES scores (B·Hq·Nq·Nk). A thorough run
# judges each step in every dtype.
TRAINING = "training"
TRAINING_LENGTHS = (512, 2048)
TRAINING_SCORES = 2 ** 23
TRAINING_STEPS = (  # (heads of HEAD_LEVELS, causal, mask form, mask kind, D); GROUPED's G drawn from COSTLY_GROUPS
    (GROUPED, True, None, "bool", 64),
    ("2/2", False, "(B, 1, 1, Nk)", "bool", 128),
    ("4/2", False, "(Nq, Nk)", "additive", 64),
    ("2/1", True, None, "bool", 128),
    (GROUPED, False, "(B, 1, 1, Nk)", "bool", 128),
    ("2/2", True, None, "bool", 64),
)


def training(seed: int, dtype: str, dtypes: tuple[str, ...], features: frozenset, thorough: bool = False
             ) -> list[Problem]:
    """The pass over ``dtype``'s training steps (TRAINING_STEPS): step t in the run's dtype t (of a thorough run: in
    each), its features those the impl offers (none without a backward)."""
    if BACKWARD not in features:
        return []
    out = []
    for turn, (heads, causal, form, kind, d) in enumerate(TRAINING_STEPS):
        if not (thorough or dtypes[turn % len(dtypes)] == dtype):
            continue
        r = _rng(seed, TRAINING, turn)
        hq, hkv = HEAD_LEVELS[heads] if GQA in features else (2, 2)
        hq = hkv * COSTLY_GROUPS[r.randrange(len(COSTLY_GROUPS))] if heads == GROUPED and GQA in features else hq
        lo, hi = TRAINING_LENGTHS
        n_q, n_k = (int(lo * (hi / lo) ** r.random()) for _ in range(2))
        while 2 * hq * n_q * n_k > TRAINING_SCORES and max(n_q, n_k) > lo:
            n_q, n_k = max(lo, n_q // 2), max(lo, n_k // 2)
        form = form if ATTN_MASK in features else None
        out.append(Problem(2, hq, hkv, n_q, n_k, d, d, causal and CAUSAL in features, dtype, mask=form,
                           mask_kind=kind, mask_padding=form == "(B, 1, 1, Nk)", grads="qkv", relation=GRADIENTS,
                           seed=zlib.crc32(repr((seed, dtype, TRAINING, turn)).encode()), path=TRAINING))
    return out


def threaded(seed: int, dtype: str, dtypes: tuple[str, ...], features: frozenset, value_dim: bool = True,
             kept=None) -> list[Problem]:
    """generate.THREAD_COUNT's problems of the paths: in the first dtype's pass, each path's first plain forward row
    (its index and sizes the array's) and that row made causal, on PATH_THREAD_COUNTS threads of a machine of as many
    CPUs, and made by each caller of callers.CALLERS, both in turn over the rows, in the pass's dtype (once a run: a
    split of the work per thread is the path's whatever the dtype; measured, 3.3 CPU-s). A kernel's work split by the
    thread count is its path's own (red team rt49: a split-K decode merging its splits per thread wrong past four
    threads, a row-parallel causal path restarting causal positions per thread and a head-parallel GQA path taking the
    KV head thread-locally, at four threads or more; rt50: splits per thread or per CPU merged into 8 slots, wrong
    past 8), and the drawn problems at those counts meet the paths by chance. The callers: a path's own code may read
    the default dtype or keep state per thread (rt50: causal positions in the default dtype; a default scale cached
    per thread), and its rows are where such a path runs at its sizes (2048+ causal positions).
    In each half dtype's pass, the paths' plain forward rows dealt among the run's half dtypes, each called in float32
    under torch.autocast to its dtype (callers.AUTOCAST; rt50: a kernel keeping its running statistics in the autocast
    dtype, wrong past a few key blocks: the long paths).
    A training step meets the callers too (red team rt51: a backward reading a workspace its forward kept per thread,
    causal positions built in the default dtype in the backward, a training path under autocast): in the first dtype's
    pass each path's first plain gradient row made by callers.GRADIENT_CALLERS in turn (the forward and its backward,
    or the backward alone from the worker thread), and in each half dtype's pass those rows dealt among the half dtypes
    under autocast, as the forward rows are."""
    levels = factors(features, False, kept)
    halves = [d for d in dtypes if d in {str(x).removeprefix("torch.") for x in AUTOCAST_DTYPES}]
    firsts, trained = {}, {}  # path -> (index, row): its first plain forward row, and its first gradient one
    for index, row in enumerate(plain_rows(features, False, kept)):  # (the array's first rows: rows())
        if row["relation"] in ("forward", "gradients"):
            (firsts if row["relation"] == "forward" else trained).setdefault(row["path"], (index, row))
    out = []
    if dtype == dtypes[0]:
        variants = [{}] + ([{"causal": True}] if True in levels["causal"] else [])
        for index, row in firsts.values():
            row = {**row, "dtype": dtype}
            for v in (v for v in variants if allowed({**row, **v})):
                turn = len(out)  # (the causal row of a path takes the next caller and count: each meets both)
                out.append(replace(problem({**row, **v}, seed, index, value_dim),
                                   threads=PATH_THREAD_COUNTS[turn % len(PATH_THREAD_COUNTS)],
                                   caller=CALLERS[(turn + turn // len(CALLERS)) % len(CALLERS)]))
        # each path's first gradient row, every other one causal (positions a backward builds; the longest path's
        # always), made by the gradient callers in turn, forward and backward; and by each of them on the path of the
        # longest least lengths, where
        # causal positions pass the most integers a half dtype holds (bfloat16's 256 on the tiles; a thorough run's
        # long backward past float16's 2048); each on PATH_THREAD_COUNTS threads in turn, as the forward rows are (red
        # team rt53: a backward splitting the keys per thread, dq dropping the leftover keys past four threads, escaped
        # gradient rows on one thread)
        longest = max(trained, key=lambda path: min(ALL_PATHS[path][1][0], ALL_PATHS[path][2][0]), default=None)
        dealt = [(row, GRADIENT_CALLERS[turn % len(GRADIENT_CALLERS)]) for turn, row in enumerate(trained.values())]
        dealt += [(trained[longest], caller) for caller in GRADIENT_CALLERS
                  if longest is not None and (trained[longest], caller) not in dealt]
        for turn, ((index, row), caller) in enumerate(dealt):
            row = {**row, "dtype": dtype}
            # (causal every other row, the longest path's always: top-left causal over fewer queries than keys hides
            # the last keys from every row, where a backward's leftover keys sit)
            causal = ((turn % 2 == 0 or row["path"] == longest) and True in levels["causal"]
                      and allowed({**row, "causal": True}))
            row = {**row, "causal": True} if causal else row
            out.append(replace(problem(row, seed, index, value_dim), caller=caller,
                               threads=PATH_THREAD_COUNTS[turn % len(PATH_THREAD_COUNTS)]))
    if dtype in halves:
        for rows_of in (firsts, trained):
            for turn, (index, row) in enumerate(rows_of.values()):
                if halves[turn % len(halves)] == dtype and allowed(row := {**row, "dtype": dtype}):
                    out.append(replace(problem(row, seed, index, value_dim), caller=AUTOCAST))
    return out


def after_regimes(seed: int, dtypes, features: frozenset, value_dim: bool = True, arrays: int = 1, kept=None):
    """generate.generated_checks' ``covering``: the problems of a dtype's pass (by name) over the run's ``dtypes``."""
    names = tuple(str(d).removeprefix("torch.") for d in dtypes)
    return lambda name: problems(seed, name, names, features, value_dim, arrays, kept)
