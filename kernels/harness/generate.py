"""Generative differential testing: problems drawn from SDPA's whole input space under a seed and a
problem count (a wall-clock cap only as a safety valve), judged against float64 by the low-precision rule and by metamorphic relations; a
failure is shrunk to a small problem and printed as a runnable reproduction.

What a problem draws (``draw``): B in 1..3; (Hq, Hkv) MHA, GQA or MQA (MQA half the time with enable_gqa=False: SDPA broadcasts one KV head); Nq, Nk and D, Dv from
values that hit kernels' edges (1, odd, tile ± 1 at 16, 32, 64, 128, past 256, and with small
probability 0 or lengths past 2048 where float16 positions stop being exact); the run's dtypes; q,
k, v as contiguous tensors, (B, N, H, D) storage viewed transposed, a random permutation of the
storage order, or views at a storage offset; no mask or a boolean or additive mask of every
broadcast pattern (each of B, Hq, Nq, Nk full or 1 at ranks 4 to 1), additive values random or structured (ALiBi,
ALiBi with -inf padding, 0/-inf, the dtype's most negative number), its storage contiguous, a transposed view, a
stride-0 expand over the query rows or a
slice at a storage offset, an additive one in q's dtype or (half q) float32 (what SDPA accepts beside
bool), now and then with one NaN entry; now and then one NaN, +inf or -inf in q, k or v (every key visible); dropout p in (0, 1), fixed
values, uniform and log-uniform down to 1e-4 (now and then over one to three keys), each dropout problem with a
requires_grad subset of q, k, V and a learned mask's gradient judged against the same keep mask; rank-3 inputs
with Hq ≠ Hkv, k and v of batch 1 broadcast; every subset of q, k, v requiring grad (and an additive mask), after
another forward of the same shape or as a second backward (retain_graph); scales None, zero, negative,
tiny (1e-6), large. Every run first draws one problem of each of REGIMES per dtype, whatever its
budget (long decoding, both lengths past 2048, masks whose leading dim equals B, q near float16's
top, an additive mask as a transposed float32 (half q) view, an additive mask with a NaN entry, and the cheap
long problems: causal past 65535 keys, a decode past 2¹⁸, a backward past 16384, dropout past 2048, NaN on a long
decode; and appended: B = 2 and causal past 16384 queries (long-queries), dropout with p in 1e-4..1e-3 over enough
weights that "nothing dropped" is rejected (tiny-dropout), rank-5 inputs with is_causal (rank-causal), the
gradients past 16384 queries (long-queries-backward), rank-5 inputs with a rank-5 mask of batch B ≥ 2
(rank-mask), an additive mask expanded along the keys (mask-expanded); in
float32 and bfloat16 the magnitude regime scales v so the output passes float16's 65504), then draws them at
random among the rest. After each dtype's regimes come its rows of the covering array (paths.py: every pair of a
path's size class and a feature, or of two features, and every triple of a path and two structural features, in
every run). A run judges a count of problems (the regimes,
the covering rows and DEFAULT_DRAWN more per dtype), not a time. Each problem is judged by one of four relations,
in turn:

* generated-agreement: the forward against float64 (tolerance.py's rule, the plain same-precision
  reference's error setting the bound; a declared rounding recipe adds the derived bound);
* generated-gradients: the gradients of the inputs that require grad;
* generated-dropout: with V = I the output is W = P∘M/(1-p): kept entries P/(1-p), kept fraction 1-p; forward-only
  with V = [I, I], whose two copies must keep the same weights; and the same seeded call again under another grad
  mode from the harness's worker thread (callers.on_worker), whose keep mask must be the first's;
* generated-metamorphic: batch composition (one batch entry alone = its slice of the batch), key
  permutation (keys and mask columns permuted together, not causal), masks ≡ -∞ (a boolean mask and
  the additive 0/-inf mask it means give the same output).

An impl that raises on a problem refuses it: honest, reported in the detail, not a failure (the
fixed cases judge what it must accept); except where only the mask's storage or non-finite
entry is unusual (or the one KV head is broadcast without enable_gqa) and the impl accepts the same problem with a
plain contiguous mask of the same dtype (and enable_gqa=True):
that is "refused an input SDPA accepts" (torch 2.13's math SDPA accepts every such mask, measured),
a failure. A float mask of another dtype than q's (float32 beside a half or float64 q) may be refused wherever it is
given: torch's documentation asks for "a float mask of the same type as query, key, value" though its math backend
accepts float32 beside any q, and its own default CPU dispatch computes one beside float64 q wrongly
(kernels/ecosystem/FINDINGS.md, 17). Accepted, it is judged like any other mask.

Why not hypothesis: its search is driven by a test runner's example budget and database, not a
seconds budget inside a library call, and its reports are a test's; here the run is reproducible
from (seed, dtype, index) alone and the shrinker works on the problem's own fields, which is what a
reproduction needs. The shrinker is greedy: it tries each smaller value of each field, keeps a
change while the same relation still fails, and stops at a fixed point or its time budget.
"""
from __future__ import annotations

import contextlib
import functools
import math
import os
import random
import sys
import time
import traceback
import zlib
from dataclasses import asdict, dataclass, fields, replace

import numpy as np
import torch

from kernels.harness import reference as ref
from kernels.harness.callers import (AUTOCAST, BACKWARD_ON_WORKER, MAIN, WORKER, backward_by, called_by, machine_of,
                                     on_worker)
from kernels.harness.cases import Case, randn
from kernels.harness.masks import BROADCAST_FORMS, EXACT, STRUCTURED_VALUES
from kernels.harness.invariants import ATTN_MASK, BACKWARD, CAUSAL, DROPOUT, GQA, Invariant, Outcome, register
from kernels.harness import backward_values as bv
from kernels.harness.subject import (CONTEXTS, GRADIENT_CONTEXTS, SEQUENCES, BadOutput, Subject, against, attached,
                                     calling_context, checked_output, gradients_against, relation, strided,
                                     subset_gradients, unchanged, untouched, worst)
from kernels.harness import tolerance as tol

AGREEMENT, GRADIENTS, DROPOUT_LAW, METAMORPHIC = ("generated-agreement", "generated-gradients",
                                                 "generated-dropout", "generated-metamorphic")
RELATIONS = (AGREEMENT, GRADIENTS, DROPOUT_LAW, METAMORPHIC)
# Drawn problems judged again with several intra-op threads (verify.py runs them in its own process: workers.py). The
# harness runs its checks with one thread (kernels.threads.one_thread), so a kernel splitting its work by
# torch.get_num_threads() (slices, query rows or key splits per thread) took only its one-thread path (red team rt47)
THREAD_COUNT = "thread-count"
# (3: no whole share of 2 or 4 slices; 7: past this machine's cores, which torch allows, past the four or five threads
# where red team rt49's row-, head- and split-parallel paths broke, and no power of two, where rt57's merge by halves
# of per-thread splits lost one; the paths' plain rows too: paths.threaded)
THREAD_COUNTS = (2, 3, 7)
THREAD_PROBLEMS = 8  # each dtype's first drawn problems past the default ones, at THREAD_COUNTS in turn

# A run's coverage is a problem count, not a time: the same problems whatever the machine's speed or load.
# Per dtype: the regimes (drawn first) and then DRAWN_PROBLEMS more, rotating through the relations.
DEFAULT_DRAWN = 64  # 16 per relation (the 6 s budget this replaced drew 62 on an idle machine)
THOROUGH_DRAWN = 1600
# A safety cap (per run, all dtypes together) in CPU seconds, or three times as many wall seconds, reported when hit
# (the report's notes): a slow impl still ends. The default run's drawn problems take about 31 CPU-s on SDPA math,
# the regimes and covering rows (judged whatever the cap, but counted in it) 20 of them; a correct impl several times
# slower (red team rt44h's pure-PyTorch split-K designs, at load 6) hit a cap of 60 after 64 of 110 float16 problems.
DEFAULT_SECONDS = 120.0
THOROUGH_SECONDS = 600.0
SHRINK_SECONDS = 10.0  # per run, all failures together: an impl failing everything still ends in seconds
MAX_SCORES = 2 ** 18  # B·Hq·Nq·Nk of a drawn problem (the float64 golden values cost O(that · D))
# The long regimes (REGIMES) pay for their length with everything else small: one batch entry, at
# most two heads, head dims up to LONG_HEAD_DIM. Decoding is O(Nk·D) whatever Nk, so it reaches the
# lengths where split-K kernels pass 16 splits of 1024 (2¹⁴ - 2¹⁷ keys); both lengths past
# 2048 cost Nq·Nk scores (up to LONG_SCORES, ≈ 0.3 CPU-s of float64 golden values).
DECODE_EXPONENTS = (15, 16, 17)
LONG_HEAD_DIM = 64
LONG_SCORES = 2100 * 4097

LENGTHS = (1, 2, 3, 5, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 255, 256, 257, 383)
LONG_LENGTHS = (2047, 2049, 2100, 4097)  # float16 holds integers exactly only up to 2048
HEAD_DIMS = (1, 2, 3, 7, 8, 15, 16, 17, 24, 31, 32, 33, 40, 63, 64, 65, 72, 80, 96, 100, 127, 128, 129,
             160, 192, 255, 256, 257, 320)
# FlashAttention-2 dispatches head dims to templates of 32, 64, …, 256 channels: past the regimes' first draws, each
# relation's problems step through the templates (_cycled: every one within 8 problems), D at one of the template's
# edges (its first channel, its last two) two times in three, else anywhere in it (red team rt41h: a 224-channel
# template reading 192 escaped, HEAD_DIMS holding none of 193..224). Coins of their own: every other field as before.
HEAD_DIM_TEMPLATES = tuple(range(32, 257, 32))
HEADS = ((1, 1), (2, 2), (3, 3), (2, 1), (4, 2), (4, 1), (6, 2), (6, 3), (8, 2))
# "slice": a slice of a larger buffer along every dim (q), and k, v slices of a KV cache longer than Nk (one cache of
# both, interleaved, where their shapes are equal: _views)
# (and with more batch rows than B): no stride is the product of the later sizes, as a kernel
# re-deriving one from the shape assumes
LAYOUTS = ("contiguous", "transposed", "permuted", "offset", "slice")
# inputs of stride 0 along the sequence, their values equal along it (q's rows: a prompt shared by a beam; k, v's keys):
# the covering array's layouts (paths.py). Red team rt45h: a fast path for stride-0 q computing one row and broadcasting
# it (causal, a row's mask and dropout lost), one for stride-0 k, v returning v (empty rows and dropout lost), escaped
# Along the heads or the batch (red team rt48: k, v of one head expanded over Hkv, MQA served as MHA, or of one prompt
# expanded over a beam's entries, taken by a fast path folding the query heads or entries into rows, causal applied to
# the folded rows): their values equal across that dim; and k or v alone expanded, the other its own (red team rt56: k
# expanded over the batch taken as a shared prompt, k[:1] and v[:1] read for every entry, escaped rows expanding both).
# layout: (the inputs, the dim of stride 0)
STRIDE_ZERO = {"q stride 0": ("q", 2), "k, v stride 0": ("kv", 2),
               **{f"{which} expanded over {axis}": (inputs, dim) for axis, dim in (("heads", 1), ("batch", 0))
                  for which, inputs in (("k, v", "kv"), ("k", "k"), ("v", "v"))}}
# every broadcast pattern (masks.BROADCAST_FORMS: 16 at rank 4, 8 at rank 3, 4 at rank 2, (Nk,)), not a hand list;
# those with a key dim of 1 are query masks, broadcast over the keys (masks.QUERY_MASKS)
MASK_FORMS = BROADCAST_FORMS
ONE_DIM_MASK = "(Nk,)"
# the forms whose query and key dims are both full (the regimes' plain masks)
FULL_MASKS = ("(Nq, Nk)", "(Hq, Nq, Nk)", "(B, 1, Nq, Nk)", "(1, Hq, Nq, Nk)", "(B, Hq, Nq, Nk)")
PER_ENTRY_MASKS = ("(B, 1, Nq, Nk)", "(B, Hq, Nq, Nk)", "(B, 1, 1, Nk)")  # a mask of its own per batch entry
NO_MASK = (None,) * 10  # beside MASK_FORMS in the cycle of drawn problems' masks: about a quarter without
# forms broadcast over the queries with a row of their own per head (a per-head key bias: ALiBi at decode)
HEAD_KEY_BIASES = tuple(f for f in MASK_FORMS if len(f.split(", ")) == 4 and f.split(", ")[1:3] == ["Hq", "1"])
# An additive mask's values (masks.STRUCTURED_VALUES beside random ones), cycled with the mask's kind (_cycled): each
# entry meets each relation within 8 of its problems, boolean masks three in eight
MASK_KINDS = ("bool", "random", "alibi", "bool", "alibi-padded", "zero-inf", "bool", "far-finite")
# q, k, v of rank 3 ((B·H, N, D): dim -3 is the heads, grouped under enable_gqa, measured: q (4, 16, 8)
# with k, v (2, 16, 8) gives head h kv head h // 2) or 5 ((B, 1, H, N, D)): SDPA takes (..., L, E) of rank >= 3
RANKS = (3, 5)
GRADIENT_RANKS = (4, 3, 5)  # drawn gradient problems' ranks, cycled (_cycled)
# 4-D mask forms a rank-3 or rank-5 problem gives at the inputs' rank (_ranked_mask): (B·Hq, Nq, Nk) expanded,
# or (B, 1, H, Nq, Nk) with the inserted dim: the rank-mask regime's first draw (a rank-5 mask of batch B ≥ 2: one read
# as mask[0], red team rt37h, fails it) and half the rank regimes' later masked draws
RANK_MASKS = ("(B, 1, Nq, Nk)", "(B, Hq, Nq, Nk)", "(1, Hq, Nq, Nk)", "(B, 1, 1, Nk)")
# an attn_mask's storage (masks are views too): contiguous, (.., Nk, Nq) storage viewed transposed,
# one entry along one dim (keys, queries, heads or batch) expanded with stride 0, a slice of a larger buffer at a
# storage offset
MASK_STORAGES = ("contiguous", "transposed", "expanded", "offset")
MASK_SHIFT = 300.0  # added to a float32 additive mask beside half q (masks.additive_mask's shift)
# an additive mask entry whose rows are NaN, as in float64 and torch 2.13's SDPA (math and flash, measured).
# Not +inf: math makes its rows NaN, but the flash backend (CPU, float16, Nq = 1, Nk = 8) answers finite
# rows, so SDPA itself keeps no one rule for it.
NONFINITE = ("nan",)
NONFINITE_CHANCE = 0.1
# 0.0 too: every weight equal (SDPA uses an explicit 0 as given), in the backward as in the forward
REGIME_SCALES = (None, None, None, 0.3, 2.0, 1e-6, -0.25, -1.5, 0.0)
SCALES = REGIME_SCALES + (12.0,)  # (12: scores past 80, red team rt47's clamp; drawn problems only)
OVERFLOWING_SCALES = (2.0, 3.0, 4.0, -2.0)  # |scale| ≥ 2 takes q at half the range past it
# Mask forms whose leading dims a kernel can mistake for others: a 2-D (Nq, Nk) mask read as a
# (B, Nk) key-padding mask when B == Nq, a 3-D (Hq, Nq, Nk) one read as (B, Nq, Nk) when B == Hq.
# Generated: every rank-2 form led by Nq and rank-3 form led by Hq.
AMBIGUOUS_MASKS = {f: "n_q" if f.startswith("(Nq,") else "q_heads" for f in MASK_FORMS
                   if (len(f.split(", ")), f.split(",")[0]) in ((2, "(Nq"), (3, "(Hq"))}
# The regimes every run draws first, once each per dtype whatever its budget (then at random, with
# REGIME_SHARE of the later problems between them): what random shapes reach too rarely to be judged in a default run.
#   long-decode: Nq ≤ 8 (mostly 1) over 2¹⁴-2¹⁷ keys (split-K decoding past 16 splits of 1024);
#   long-both: both lengths past 2048, Nq ≠ Nk, causal or masked (positions a half type no longer holds);
#   mask-collision (one per ambiguous form): B equal to the dim the form's leading dim could be taken for;
#   magnitude: q near the top of a float16 range and k scaled down by the same power of two, so the
#     scores are of size 1 but q·scale overflows the input dtype (kernels scale in float32).
#   long-decode is drawn twice: without mask or causal (the split-K fast path) and with a mask.
#   wide-head: D (and Dv) in 513..575, past every head-dim limit to 512 and not a multiple of 64 (chunked loops).
#   many-heads: GQA groups of 16 to 65 (MANY_HEADS_GROUPS) with Hkv > 1, and B·Hq past 256 (grid chunks of 256), tiny N, D.
#   cache-slice: the "slice" layout (LAYOUTS).
#   empty: one of B, Nq, Nk, D, Dv zero, in any head layout.
#   far-masked-rows: an additive mask setting whole rows to one finite value at or below -1e20: SDPA
#     gives those rows the softmax of the masked scores (uniform weights), not 0; a running max
#     started at a finite "-infinity" above that value gives 0.
#   rank: q, k, v of rank 3 or 5 (RANKS; the first draw rank 3 with Hq ≠ Hkv under enable_gqa and Nq = Nk),
#     with a 1-D (Nk,) mask when the impl takes masks.
#   kv-broadcast: k and v with batch (rank 5: leading dim) 1 against q's B ≥ 2 and Hq ≥ 2, no mask (the
#     math backend broadcasts them as matmul does, measured: the output is that of k, v expanded; the first
#     draw rank 4). Forward only (generated-agreement).
# Long problems that cost O(Nq·Nk), judged on every run (the lengths where integer and tile-count limits sit):
#   long-decode's first draw: Nq = 1 over 2¹⁸ + 2¹⁶..2¹⁹ keys (LONGEST_DECODE), D ≤ 8 (past 256 splits of 1024).
#   long-causal: causal, Nq ≤ 8 over 65537..69632 keys (positions past uint16's 65535 and int16's 32767).
#   long-backward: a gradient problem, Nq ≤ 4 over 20481..24576 keys (past 128 key tiles of 128, and 64), D ≤ 16.
#   long-dropout: a dropout problem (V = I) of 8 queries over 2049..2200 keys (a long-KV path's dropout).
#   long-decode-nan: long-decode with one NaN in q, k or v (nan-propagation's rule on the split-K path).
#   huge-grid-backward: huge-grid's shape as a gradient problem (a backward launched on its own grid).
#   huge-grid: B·H past 65535 (a CUDA grid's y and z limit) with N, D of 1-4: a problem of about 2 MB.
#   wide-value: Dv in 257..320 (value dims past a 256-wide output chunk) beside a small D.
#   learned-mask: a gradient problem (the one regime not judged by generated-agreement) with an additive
#     mask shared by two or more heads (HEAD_SHARED_MASKS) requiring grad: its gradient sums over the heads
#     (the first draw a key bias, (B, 1, 1, Nk) or (1, 1, 1, Nk), over two queries or more: and over them).
#   long-queries: B = 2, Hq = Hkv = 1, Nq in 16385..16448 over 129..256 keys, D, Dv ≤ 8, no mask, contiguous, causal when the
#     impl takes it (a kernel chunking queries by any power of two up to 16384: a later chunk's batch stride or
#     query positions).
#   tiny-dropout: a dropout problem (V = I) with p log-uniform on (1e-4, 1e-3) and Nq·Nk weights enough for
#     TINY_DROPOUT_DROPS expected drops over 2049..2200 keys ("negligible p treated as 0" is then rejected).
#   long-queries-backward: long-queries' Nq (16385..16448) as a gradient problem, B = 1, one head, 17..64 keys,
#     causal half the time, q requiring grad (red team rt37h: dq rows past 4096 left 0 escaped every forward check).
#   rank-mask: rank-5 inputs (later draws rank 3 or 5) with a mask of their rank whose leading dim is B ≥ 2
#     (RANK_MASKS; a rank-5 mask read as its first batch entry). The rank and rank-causal regimes' later masked
#     draws take such a mask half the time.
#   kv-broadcast-backward: kv-broadcast's k, v of batch 1 as a gradient problem (later draws: kv-broadcast's
#     gradient problems too): dk, dv summed over q's batch (red team rt39h: batch entry 0's alone escaped).
#   many-heads-backward: many-heads' shape as a gradient problem, GQA groups past 32 first (red team rt39h: a
#     backward summing dk, dv over at most 8 heads of a group escaped the forward's many-heads).
#   mask-expanded: an additive mask stored expanded (stride 0) along the keys (later draws: along any of its dims;
#     red team rt39h: key stride taken as 1 escaped stride 0 along the queries alone).
#   long-decode-batched: one query over 2¹⁴..2¹⁷ keys (the first draw past 2¹⁴ + 1) for B of 2 to 4 entries, no mask,
#     D ≤ 16 (red team rt42h: a split-K decode whose partials' workspace had no batch dim, so every entry merged
#     the last one's, escaped decodes of one entry).
#   long-decode-padded: long-decode-batched with a key-padding mask (B, 1, 1, Nk), each entry seeing a prefix of
#     the keys of its own length and one entry none (its output 0, as SDPA's): red team rt42h's split-K decode
#     reading entry 0's mask for every entry, and its merge giving NaN for a row with no key, escaped.
#   rank-head-mask: rank-3 inputs (B·Hq, N, D) with a per-head 3-D mask (B·Hq, Nq, Nk) (red team rt42h: such a
#     mask taken as unbatched, head 0's rows for every head, escaped the rank regimes' 1-D and rank-5 masks).
#   rank-causal: rank-5 inputs with is_causal, no mask, Nq ≠ Nk possible (a rank ≥ 5 path dropping is_causal);
#     later rank draws (rank and rank-causal) are causal half the time, then without a mask.
#   mask-head-bias: an additive per-head key bias broadcast over two queries or more (HEAD_KEY_BIASES), Hq ≥ 2; the
#     first draw (1, Hq, 1, Nk) of ALiBi values with -inf left padding (masks.structured_mask), later draws any of
#     STRUCTURED_VALUES (red team rt44h: such a mask read as key padding from head 0, and sent to a boolean path as
#     mask == 0, escaped).
#   after-other-dtype: a causal problem (square, no mask) after a call of the same shapes in another dtype (PRIOR_DTYPES;
#     later draws any problem of the regime, any other dtype).
#   rank-backward: a gradient problem at rank 3 with GQA (dk or dv asked; later draws any gradient rank).
#   large-values: v scaled up by a power of two to the largest |output| near the dtype's top (_large_outputs: float16's
#     a quarter to a half of its range; float32's and bfloat16's past float16's), scores as drawn (red team rt57: a
#     block's P·V rounded to float16 before the float32 accumulator escaped: the magnitude regime's peaked weights
#     sum to about 1 in a block, and a block overflows only where several keys weigh near 1).
#   small-values: v scaled down by 2^-k, k in SMALL_VALUE_EXPONENTS: float16 outputs of 1e-5 to 1e-7, below its least
#     normal 6.1e-5 (red team rt51: a float16 store flushing subnormal outputs to 0 escaped, every output having been
#     near 1, where the floor of one rounding at |x| + 0.3 is 2.9e-4). Judged relative to v's scale (Subject.value_unit:
#     the floor's offset scales with v, tolerance.floor). Forward only.
# magnitude in float32 and bfloat16 (q's range is float32's there) scales v instead: the largest output
#   in (2^19, 2^20], past float16's range (a bfloat16 kernel storing its output through a float16 buffer).
REGIMES = ("long-decode", "long-both", "mask-collision (Nq, Nk)", "mask-collision (Hq, Nq, Nk)", "magnitude",
           "mask-storage", "mask-nonfinite", "long-decode-masked", "wide-head", "many-heads", "cache-slice",
           "empty", "far-masked-rows", "rank", "huge-grid", "wide-value", "learned-mask",
           "kv-broadcast", "long-causal", "long-backward", "long-dropout", "long-decode-nan",
           "huge-grid-backward",
           # (appended: earlier regimes keep their indices, so their first draws are unchanged)
           "long-queries", "tiny-dropout", "rank-causal", "long-queries-backward", "rank-mask",
           "mask-expanded", "kv-broadcast-backward", "many-heads-backward",
           "dropout-rank", "dropout-kv-broadcast", "float64-dropout", "after-other-calls", "decode-dropout",
           "long-decode-batched", "long-decode-padded", "rank-head-mask", "many-batch-masks", "float64-long",
           "nan-one-key", "nan-underflowed-keys", "mask-head-bias", "after-other-dtype", "rank-backward",
           "small-values", "large-values")
# the regimes whose dropout problems keep them (the others' are plain): the two long ones and the call forms a
# dispatch wrapper may route around the dropout path (red team rt40h: rank 3/5 and float64 wrappers dropping
# dropout_p, one mask shared by a broadcast k's batch entries); their first draws are dropout problems
DROPOUT_REGIMES = ("long-dropout", "tiny-dropout", "dropout-rank", "dropout-kv-broadcast", "float64-dropout",
                   "decode-dropout")
BATCHED_DECODE = ("long-decode-batched", "long-decode-padded")
LONG_DECODE = ("long-decode", "long-decode-masked", "long-decode-nan") + BATCHED_DECODE
LONG = LONG_DECODE + ("long-both", "long-causal", "long-backward", "long-dropout", "decode-dropout")
LONGEST_DECODE = (2 ** 18 + 2 ** 16, 2 ** 19)  # a fifth of the keys or more past 2¹⁸
# every size axis past each power of two up to where the contract's cheap problems reach: causal keys past uint16's
# 65535 (and so int16's 32767), backward keys past 16384 (and so 8192), a fifth of the keys or more past it
LONG_CAUSAL_KEYS = (2 ** 16 + 1, 2 ** 16 + 2 ** 12)
LONG_BACKWARD_KEYS = (20481, 24576)
LONG_DROPOUT_KEYS = (2049, 2200)
# long-queries: B = 2, one head, Nq past 16384 (a kernel chunking queries by any power of two up to 16384 reaches
# its second chunk: red team rt37h's chunks of 8192 escaped the first version's 4097..4160) over 129..256 keys
# (causal then hides keys from each later chunk's first rows), D ≤ 8; its own cap (the MAX_SCORES / LONG_SCORES
# loop would halve Nq). Not Nq = Nk: the float64 golden values and sensitivities of 2·4100² scores cost ~4 s a
# dtype (measured, SDPA math in float32).
LONG_QUERIES_LENGTHS = (16385, 16448)
LONG_QUERIES_KEYS = (129, 256)
WIDE_HEAD_DIMS = (513, 575)
LONG_QUERIES_HEAD_DIM = 8
LONG_QUERIES_SCORES = 2 * LONG_QUERIES_LENGTHS[1] * LONG_QUERIES_KEYS[1]
# long-queries-backward: the same query lengths as a gradient problem (a backward chunking its queries or
# capping dq's rows at a power of two up to 16384), one batch entry and few keys: the float64 gradients of
# 16448 × 64 scores
LONG_QUERIES_BACKWARD_KEYS = (17, 64)
# tiny-dropout: p log-uniform on (1e-4, 1e-3) over enough weights that TINY_DROPOUT_DROPS are expected dropped:
# "nothing dropped" then has z = sqrt(n·p/(1-p)) ≥ 6 > dropout._z(ALPHA) ≈ 4.9 (20 expected drops give 4.5,
# which the kept-fraction test at alpha 1e-6 would accept)
TINY_DROPOUT_EXPONENTS = (-4.0, -3.0)
TINY_DROPOUT_DROPS = 36
# magnitude (float32 and bfloat16, whose range is float32's): v scaled by a power of two so that the
# largest |output| (float64, as the problem is posed) is in (2^19, 2^20], past float16's 65504
LARGE_OUTPUT = 2.0 ** 20
# and float16's (the large-values regime's forwards without dropout): every v in [2^14, 2^15], up to half its range
LARGE_FLOAT16_OUTPUT = 2.0 ** 15
# small-values: v times 2^-k (exact), k drawn from these, inclusive: |v| of 2^-15 to 2^-22 times a normal draw's, in
# and below float16's subnormal range (least normal 2^-14); the other dtypes hold them as normal numbers
SMALL_VALUE_EXPONENTS = (15, 22)
GRID_LIMIT = 65535  # CUDA's largest grid y and z
# many-heads' GQA group sizes: at and past each power of two from 16 to 64 (red team rt39h: a kv head of h // 32 for
# groups past 32 escaped groups of at most 32)
MANY_HEADS_GROUPS = (16, 17, 32, 33, 65)
HEAD_SHARED_MASKS = ("(B, 1, Nq, Nk)", "(B, 1, 1, Nk)", "(1, 1, 1, Nk)", "(B, 1, Nq, 1)")
FAR_MASK_VALUES = (-1e20, -1e21, -1e25, -1e30, -1e38)  # float32 holds each; float16 none (a float32 mask then)
# the share of drawn problems past the first draws that take a regime, whatever their number: a share growing
# with each regime appended (0.03 each: 0.93 at 31) left plain draws, and the axes regimes override, all but gone
REGIME_SHARE = 0.5
DROPOUT_SEQUENCES = ("single", "two-layers", "retain-graph")
# A call on fresh inputs of the same shapes with other arguments, made just before a forward problem's judged call
# (its output kept alive until the judged call returns): state a kernel keeps between calls (a cached causal bias,
# mask or output buffer keyed by shape) shows in the judged output. "causal and mask" SDPA refuses; an impl may take it.
# How the arguments past q, k, v reach the impl, each a form SDPA accepts (measured, torch 2.13): by keyword with
# Python numbers; attn_mask, dropout_p, is_causal by position (nn.MultiheadAttention's call); dropout_p as a
# numpy.float32 (not a float subclass) and scale as a numpy.float64; both as 0-d float64 tensors. Red team rt42h:
# dropout honoured only for a Python float, and a wrapper in flash_attn_func's order (scale before is_causal),
# escaped keyword calls with Python floats. Drawn problems cycle through them (_cycled), a coin of their own.
ARGUMENT_FORMS = ("keywords", "positional", "numpy scalars", "tensor scalars")
# Beside calls of other arguments, the judged call's own arguments in three sequences (red team rt43h: state kept by
# reference escaped calls on fresh inputs): "same call, output written" (the same call first, its output then written
# into: a memo returning its cached output by reference answers with what was written); "other strides" (q, k, v and
# the mask each read through other strides of the same storage, the same shape and data_ptr: a converted mask or a
# packed K cached by (data_ptr, shape) without strides is stale); "under inference_mode" (the same call under inference_mode, then the
# judged one saving for backward: a causal mask or workspace cached as an inference tensor cannot be saved).
PRIOR_CALLS = ("causal and mask", "mask", "causal", "dropout", "scale", "same call, output written",
               "other strides", "under inference_mode", "other dtype", "same buffers, written")
# "same buffers, written": the same call on the very tensors the judged call takes (q, k, v and the mask: one data_ptr,
# shape, dtype and strides) holding other values, which the caller then writes in place before the judged call (a
# KV cache or a mask buffer reused across steps): a converted mask or upcast K/V cached by pointer answers with the
# earlier values (red team rt46h: an even-tiles path caching its converted mask by (data_ptr, shape, dtype)). The
# covering array's "earlier call" factor puts it on every path (paths.py).
# "other dtype": the judged call's shapes and arguments on fresh inputs of another dtype (PRIOR_DTYPES), the mask cast to
# it (red team: a workspace or causal bias cached per shape in the first call's dtype accumulated a float64 call in
# float32, and made a float32 call after a bfloat16 one raise). The after-other-dtype regime's first draw takes the
# first entry (each dtype after another, both directions: float64 after float32, float32 after bfloat16, bfloat16 after
# float16, float16 after float64), later draws any of them by a coin of their own.
PRIOR_DTYPES = {"float64": ("float32", "bfloat16", "float16"), "float32": ("bfloat16", "float16", "float64"),
                "bfloat16": ("float16", "float32", "float64"), "float16": ("float64", "bfloat16", "float32")}
# a drawn forward problem past the regimes cycles through PRIOR_CALLS (_cycled: each kind meets the agreement
# relation within len(PRIOR_CALLS) of its problems); a regime's first draw has one by a coin of this chance (most of
# the regimes' calls are a process's first of their kind)
PRIOR_CHANCE = 0.25
# the autograd mode of the first draws of the dropout regimes (subject.CONTEXTS; the rest drawn)
FIRST_CONTEXTS = {"long-dropout": "inference_mode", "tiny-dropout": "no_grad"}
# dropout problems (V = I) over one or two keys, two of every five (None: Nk as drawn, 8 at least): the kept
# fraction is then counted over Nq rows of each head (8 at least), and each weight must still be 0 or P/(1-p)
TINY_KEYS = (None, 1, None, 2, None)
GRAD_SUBSETS = ("qkv", "q", "kv", "v", "qk", "k")
# A dropout problem's p, cycled (_cycled): fixed values, uniform on (0.01, 0.99), log-uniform on (0.001, 0.99)
# and on (1e-4, 1e-2) (a "negligible p" shortcut sits there; two such problems in a default run)
# "near one": 1 - 10^U(-3, -2), past 0.99 (red team rt47: p > 0.99 taken for 1), over enough weights that a mask
# keeping none is rare (NEAR_ONE_KEPT expected kept weights at least)
REGIME_DROPOUT_PS = (0.1, 0.25, 0.5, 0.7, 0.9, "uniform", "log", "tiny")  # (a regime's: its power is its own)
DROPOUT_PS = REGIME_DROPOUT_PS + ("near one",)
NEAR_ONE_KEPT = 24
# A dropout problem's backward (impls with one), cycled: the inputs requiring grad ("": none) and whether an
# additive mask requires grad (a learned bias), each pair within a default run's 16 dropout problems
DROPOUT_GRADIENTS = tuple((g, m) for g in GRAD_SUBSETS + ("",) for m in (False, True))


@dataclass(frozen=True)
class Problem:
    """One drawn problem: everything a call needs, as plain values (its repr is runnable Python)."""
    batch: int
    q_heads: int
    kv_heads: int
    n_q: int
    n_k: int
    head_dim: int
    value_dim: int
    causal: bool
    dtype: str
    layout: str = "contiguous"
    mask: str | None = None  # a form of MASK_FORMS
    mask_values: str = "random"  # an additive mask's values: random, or one of masks.STRUCTURED_VALUES
    mask_kind: str = "bool"  # or "additive"
    dropout_p: float = 0.0
    grads: str = "qkv"  # which of q, k, v require grad
    scale: float | None = None
    relation: str = AGREEMENT
    seed: int = 0
    magnitude: bool = False  # q scaled up towards the dtype's largest value, k down (see REGIMES)
    small_values: int = 0  # v scaled by 2^-small_values (the small-values regime; 0: as drawn)
    large_values: bool = False  # v scaled up to outputs near the dtype's top (the large-values regime: _large_outputs)
    late_values: bool = False  # v zero before the last keys below 2048, large after (see _late_values)
    mask_storage: str = "contiguous"  # one of MASK_STORAGES, or "expanded keys" (the mask-expanded regime's first)
    mask_dtype: str | None = None  # an additive mask's dtype when not q's ("float32")
    mask_nonfinite: str | None = None  # one of NONFINITE: one additive mask entry
    mask_far: float | None = None  # whole mask rows set to this finite value (far-masked-rows)
    rank: int = 4  # of q, k, v as the impl gets them (RANKS; generated-agreement only)
    mask_grad: bool = False  # an additive mask requiring grad, its .grad judged too (generated-gradients)
    sequence: str = "single"  # the calls around the judged backward (subject.SEQUENCES; generated-gradients)
    enable_gqa: bool = True  # False: one KV head (Hkv = 1 < Hq) broadcast as matmul does (contract item "gqa")
    kv_broadcast: bool = False  # k, v given with batch (rank 5: leading dim) 1, broadcast over q's (kv-broadcast)
    input_nan: str | None = None  # "q", "k" or "v": one element non-finite (generated-agreement; nan-propagation's rule)
    input_value: str = "NaN"  # that element's value, one of reference.NONFINITE
    context: str = "no_grad"  # the autograd mode of a forward-only call (subject.CONTEXTS; agreement, dropout)
    prior: str | None = None  # a call of PRIOR_CALLS made before the judged one (generated-agreement)
    prior_dtype: str | None = None  # the earlier call's dtype when prior is "other dtype" (PRIOR_DTYPES)
    arguments: str = "keywords"  # one of ARGUMENT_FORMS: how dropout_p, is_causal and scale reach the impl
    mask_padding: bool = False  # a (B, 1, 1, Nk) mask as key padding: entry b sees a prefix of its own length, one none
    underflow: bool = False  # the first half of the keys' scores far below the rest (see _underflowing_keys)
    grad_context: str = "enable_grad"  # the mode forward and backward run in (subject.GRADIENT_CONTEXTS; gradients)
    dout_value: str | None = None  # one element of dO made this (reference.NONFINITE; backward_values; gradients)
    leaves: str = "tensors"  # one of LEAVES: q, k, v as plain tensors or as torch.nn.Parameter (gradients)
    path: str | None = None  # the size class of a covering-array problem (paths.PATHS)
    mask_near: str | None = None  # a boolean mask of this structure, exact or one row off (masks.NEAR_STRUCTURES)
    threads: int = 1  # torch's intra-op threads during the calls, on a machine of as many CPUs (THREAD_COUNT)
    caller: str = MAIN  # who makes the impl's calls (callers.CALLERS: another thread, under a default dtype)
    zero_tails: bool = False  # the last quarter of the keys (k, v) and of the queries exactly 0 (_zero_tails)
    mask_magnitude: float = 1.0  # an additive random mask's values times this (paths.mask_magnitude)

    def describe(self) -> str:
        parts = [f"B={self.batch} Hq={self.q_heads} Hkv={self.kv_heads} Nq={self.n_q} Nk={self.n_k} "
                 f"D={self.head_dim} Dv={self.value_dim}", "causal" if self.causal else "full", self.layout]
        if self.mask:
            values = (f" {self.mask_values}" if self.mask_kind == "additive" and self.mask_values != "random"
                      else "" if not self.mask_near else f" ({self.mask_near})" if self.mask_near.endswith(EXACT)
                      else f" ({self.mask_near}, one row off)")
            parts.append(f"{self.mask_kind}{values} mask {self.mask}")
            if self.mask_storage != "contiguous" or self.mask_dtype or self.mask_nonfinite:
                parts.append(f"({', '.join(x for x in (self.mask_storage, self.mask_dtype, self.mask_nonfinite) if x)})")
            if self.mask_far is not None:
                parts.append(f"rows at {self.mask_far:g}")
        if self.threads != 1:
            parts.append(f"on {self.threads} intra-op threads of a {self.threads}-CPU machine")
        if self.caller != MAIN:
            parts.append(f"called from the {self.caller}" if self.caller == WORKER
                         else f"called in float32 under torch.autocast({self.dtype})" if self.caller == AUTOCAST
                         else f"called from the main thread, its {self.caller}" if self.caller == BACKWARD_ON_WORKER
                         else f"called under {self.caller}" + (", its backward too" if self.relation == GRADIENTS
                                                               else ""))
        if self.dropout_p:
            parts.append(f"dropout {self.dropout_p:g}")
        if self.relation == GRADIENTS or self.relation == DROPOUT_LAW and (self.grads or self.mask_grad):
            parts.append(f"grad {self.grads or 'none'}" + (" and mask" if self.mask_grad else "")
                         + ("" if self.sequence == "single" else f" ({self.sequence})"))
        if self.scale is not None:
            parts.append(f"scale={self.scale:g}")
        if self.magnitude:
            parts.append("q near the range's top" if self.dtype == "float16" else "v scaled past float16's range")
        if self.late_values:
            parts.append("v only past 2016")
        if self.small_values:
            parts.append(f"v times 2^-{self.small_values}")
        if self.large_values:
            parts.append("v scaled towards the dtype's top")
        if self.rank != 4:
            parts.append(f"rank-{self.rank} inputs" + (" (batch dims B/2, 2)" if _split_batch(self) else ""))
        if not self.enable_gqa:
            parts.append("enable_gqa=False")
        if self.kv_broadcast:
            parts.append("k, v broadcast along batch dim 1" if _split_batch(self) else "k, v of batch 1 broadcast")
        if self.input_nan:
            parts.append(f"{self.input_value} in {self.input_nan}")
        if self.context != "no_grad":
            parts.append(f"under {self.context}")
        if self.prior:
            parts.append(f"after the same shapes in {self.prior_dtype}" if self.prior_dtype else f"after a {self.prior} call")
        if self.mask_padding:
            parts.append("key padding, one entry without keys")
        if self.underflow:
            parts.append("the first half of the keys' weights underflowing")
        if self.zero_tails:
            parts.append("the last quarter of the keys' k, v and of the queries exactly 0")
        if self.mask_magnitude != 1.0:
            parts.append(f"mask values times {self.mask_magnitude:.3g}")
        if self.relation == GRADIENTS and self.grad_context != "enable_grad":
            parts.append(f"forward and backward under {self.grad_context}")
        if self.dout_value:
            parts.append(f"{self.dout_value} in dO")
        if self.leaves != "tensors":
            parts.append(f"q, k, v given as {self.leaves}")
        if self.arguments != "keywords":
            parts.append(f"arguments as {self.arguments}")
        if self.path:
            parts.append(f"(covering row: {self.path} path, {self.dtype})")
        return f"generated: {' '.join(parts)} seed={self.seed}"

    @property
    def empty(self) -> bool:
        return 0 in (self.batch, self.q_heads, self.n_q, self.n_k, self.head_dim, self.value_dim)

    def case(self) -> Case:
        return Case(f"generated-{self.seed}", self.batch, self.q_heads, self.kv_heads, self.n_q, self.n_k,
                    self.head_dim, self.causal, value_dim=self.value_dim, scale=self.scale)


def _rng(seed: int, *labels) -> random.Random:
    return random.Random(zlib.crc32(repr((seed,) + labels).encode()))


# How a gradient problem's q, k, v reach the impl: plain tensors, or torch.nn.Parameter (a learned query, as attention
# pooling has; red team rt59: a kernel unwrapping any Tensor subclass with .data for a plain-tensor fast path lost
# their gradients, and the harness passed only plain tensors)
PARAMETERS = "parameters"
LEAVES = ("tensors", PARAMETERS)


def _cycled(values, seed: int, dtype: str, index: int, axis: str, drawn):
    """The value of a small axis for drawn problem ``index`` (past the regimes): each relation's
    consecutive problems step through ``values`` from a point fixed by (seed, dtype, axis, relation), so every
    value meets every relation within its first len(values) problems (a random choice leaves a pair
    out of a default run's few dozen problems one time in several); ``drawn`` in the regimes."""
    if index < 0:
        return drawn
    start = _rng(seed, dtype, axis, index % len(RELATIONS)).randrange(len(values))
    return values[(index // len(RELATIONS) + start) % len(values)]


# The mask form's cycle (MASK_FORMS and NO_MASK, 39 entries) is longer than a default run's 16 problems of a relation
# in a dtype: each (relation, dtype) starts DEFAULT_DRAWN // len(RELATIONS) entries past the one before, so a default
# run's four relations in one dtype, and one relation's three dtypes, each cover the whole cycle.
DTYPE_TURNS = {"float32": 0, "float16": 1, "bfloat16": 2}


def _spread(values, seed: int, dtype: str, index: int, axis: str, drawn):
    """Like _cycled, for an axis of more values than a relation's problems in one dtype: the (relation, dtype) pairs
    start at consecutive windows of the cycle, from a point fixed by (seed, axis)."""
    if index < 0:
        return drawn
    turn = index % len(RELATIONS) + len(RELATIONS) * DTYPE_TURNS.get(dtype, 0)
    start = _rng(seed, axis).randrange(len(values)) + turn * (DEFAULT_DRAWN // len(RELATIONS))
    return values[(index // len(RELATIONS) + start) % len(values)]


def _drawn_regime(seed: int, dtype: str, k: int, regimes: tuple[str, ...]):
    """The regime of drawn problem k, or None: one with probability REGIME_SHARE, the one whose
    weight, a function of (seed, dtype, k, its name) alone, is highest."""
    if not regimes or _rng(seed, dtype, "drawn regime", k).random() >= REGIME_SHARE:
        return None
    return max(regimes, key=lambda name: _rng(seed, dtype, "drawn regime", k, name).random())


def _prior(seed: int, dtype: str, key: tuple, regime, relation: str, features: frozenset, first: bool, index: int):
    """A forward problem's PRIOR_CALLS entry or None (``index``: past the regimes), by coins of its own (the other
    fields are drawn as before)."""
    if relation != AGREEMENT:
        return None
    if regime == "after-other-calls" and first:
        return "causal and mask" if ATTN_MASK in features and CAUSAL in features else "scale"
    if regime == "after-other-dtype":
        return "other dtype"
    coins = _rng(seed, dtype, *key, "prior")
    offered = [c for c in PRIOR_CALLS if (ATTN_MASK in features or not c.endswith("mask"))
               and (CAUSAL in features or "causal" not in c) and (DROPOUT in features or c != "dropout")
               and (BACKWARD in features or c != "under inference_mode")]  # (its judged call takes q requiring grad)
    coin = coins.choice(offered) if coins.random() < PRIOR_CHANCE or regime == "after-other-calls" else None
    return _cycled(tuple(offered), seed, dtype, index, "prior", coin)


def chosen_regimes(names=None) -> tuple[str, ...]:
    """The regimes a run draws (all of REGIMES by default), in REGIMES' order; an unknown name is refused."""
    if names is None:
        return REGIMES
    names = list(names)
    unknown = [n for n in names if n not in REGIMES]
    if unknown:
        raise ValueError(f"regimes must be among {', '.join(REGIMES)}; got {', '.join(map(repr, unknown))}")
    return tuple(n for n in REGIMES if n in names)


def draw(seed: int, index: int, dtype: str, features: frozenset, *, value_dim: bool = True,
         regimes: tuple[str, ...] = REGIMES) -> Problem:
    """Problem ``index`` of the run with ``seed``: a function of (seed, dtype, index, regimes) alone.
    The first len(regimes) indices draw one problem of each regime (forward against float64; learned-mask's
    and long-backward's gradients, long-dropout's dropout law), the rest
    rotate through the relations. A drawn problem is keyed by its place past the regimes, and its regime chosen by
    highest random weight, so appending a regime leaves every regime problem and most drawn ones as they were
    (only those the new regime wins, and those its larger share turns from none to one)."""
    from kernels.harness.masks import NEAR_STRUCTURES  # (masks imports this module's neighbours)

    key = (index,) if index < len(regimes) else ("drawn", index - len(regimes))
    r = _rng(seed, dtype, *key)
    if index < len(regimes):
        relation, regime = AGREEMENT, regimes[index]
        if (regime == "learned-mask" and ATTN_MASK in features
                or regime in ("long-backward", "huge-grid-backward", "long-queries-backward", "kv-broadcast-backward",
                              "many-heads-backward", "rank-backward")):
            relation = GRADIENTS  # (a forward problem where the impl has no backward: below)
        if regime in DROPOUT_REGIMES and DROPOUT in features:
            relation = DROPOUT_LAW
    else:
        relation = RELATIONS[(index - len(regimes)) % len(RELATIONS)]
        regime = _drawn_regime(seed, dtype, index - len(regimes), regimes)
    if relation == GRADIENTS and BACKWARD not in features or relation == DROPOUT_LAW and DROPOUT not in features:
        relation = AGREEMENT
    if (relation == DROPOUT_LAW and regime not in DROPOUT_REGIMES
            or relation != DROPOUT_LAW and regime == "float64-dropout"  # (float64 agreement: float64-agreement's)
            or relation == GRADIENTS and regime in LONG_DECODE + ("long-both", "magnitude", "long-dropout")
            or relation != AGREEMENT and regime in ("long-queries", "small-values", "large-values")  # (long-queries' backward:
            # long-queries-backward; small values' gradients dq, dk scale with v, dv does not)
            or relation != GRADIENTS and regime == "long-queries-backward"
            or relation != DROPOUT_LAW and regime == "tiny-dropout"):  # (without dropout: a plain problem)
        # V = I: Dv = Nk, no long regime; a backward over 2¹⁷ keys costs float64 autograd seconds, and
        # dk = scale·dSᵀ Q of a q near float16's top overflows in every implementation
        regime = None
    hq, hkv = r.choice(HEADS if GQA in features else [h for h in HEADS if h[0] == h[1]])
    n_q, n_k = r.choice(LENGTHS), r.choice(LENGTHS)
    batch = r.choice((1, 1, 2, 3))
    if r.random() < 0.08:  # position precision: one long side, small everything else
        n_q, n_k, batch, hq, hkv = r.choice((1, r.choice(LENGTHS), r.choice(LONG_LENGTHS))), r.choice(LONG_LENGTHS), 1, 1, 1
    d = r.choice(HEAD_DIMS)
    dv = r.choice(HEAD_DIMS) if value_dim and r.random() < 0.3 else d
    if index >= len(regimes):
        top = _cycled(HEAD_DIM_TEMPLATES, seed, dtype, index - len(regimes), "head dim template", None)
        pick = _rng(seed, dtype, *key, "head dim")
        in_template = pick.choice((top - 31, top - 1, top)) if pick.random() < 2 / 3 else pick.randint(top - 31, top)
        d, dv = in_template, in_template if dv == d else dv
    if r.random() < 0.03 and regime is None or regime == "empty":  # (empty-dims checks each one on a fixed case)
        which = r.choice(("batch", "n_q", "n_k", "head_dim") + (("value_dim",) if regime == "empty" and value_dim else ()))
        batch, n_q, n_k, d, dv = [0 if which == w else x for w, x in zip(("batch", "n_q", "n_k", "head_dim", "value_dim"),
                                                                          (batch, n_q, n_k, d, dv))]
        dv = d if not value_dim else dv
    causal = CAUSAL in features and r.random() < 0.4
    mask = None
    # a mask with is_causal in the backward (the forward's pairing is attn-mask-with-causal's); each form
    # meets each relation (_cycled)
    if ATTN_MASK in features and (not causal or relation == GRADIENTS) and n_k > 0:
        drawn = r.choice(MASK_FORMS) if r.random() < 0.5 else None
        mask = _spread(MASK_FORMS + NO_MASK, seed, dtype, index - len(regimes), "mask form", drawn)
    if regime == "empty":
        mask = None  # the harness's mask maker has no mask for Nk = 0; the fixed mask cases judge the rest
    if regime in LONG:
        batch, (hq, hkv) = 1, r.choice(((1, 1), (2, 1), (2, 2)) if GQA in features else ((1, 1), (2, 2)))
        # groups of two over two KV heads (h // 2 and h % 2 then differ): long-decode-nan's and long-backward's first
        # draws, a third of the later ones (a coin of its own; red team rt40h: split-K decoding grouping heads as
        # h % Hkv, forward and backward, escaped one KV head)
        if GQA in features and (regime in ("long-decode-nan", "long-backward") if index < len(regimes)
                                else _rng(seed, dtype, *key, "long gqa").random() < 1 / 3):
            hq, hkv = 4, 2
        d, dv = min(d, LONG_HEAD_DIM), min(dv, LONG_HEAD_DIM)
        if regime in LONG_DECODE:
            e = r.choice(DECODE_EXPONENTS)
            n_q = 1 if r.random() < 0.8 else r.choice((2, 3, 4, 5, 8))
            n_k = r.choice((2 ** e - 1, 2 ** e, 2 ** e + 1, r.randint(2 ** (e - 1) + 2, 2 ** e - 2)))
            causal = causal and n_q > 1
            if regime == "long-decode" and index < len(regimes):  # every run: past 2¹⁸ keys, O(Nk·D) with D ≤ 8
                n_q, n_k, d, dv = 1, r.randint(*LONGEST_DECODE), min(d, 8), min(dv, 8)
            if regime in ("long-decode", "long-decode-nan"):  # the mask-free, non-causal path a split-K decoder takes
                causal, mask = False, None
            elif regime in BATCHED_DECODE:  # (B ≥ 2 after the cap below, whose long one B·Nk never reaches)
                batch, n_q, causal, d, dv = r.choice((2, 3, 4)), 1, False, min(d, 16), min(dv, 16)
                mask = "(B, 1, 1, Nk)" if regime == "long-decode-padded" and ATTN_MASK in features else None
                if index < len(regimes):
                    n_k = 2 ** 14 + 1 + r.randrange(2 ** 15)
            elif ATTN_MASK in features:
                causal, mask = False, r.choice(MASK_FORMS)
            if regime == "long-decode-nan" and index < len(regimes):  # (its first draw 2¹⁷ ± 1 keys: D ≤ 16 keeps
                d, dv = min(d, 16), min(dv, 16)  # it at 0.4 CPU-s, not 1.5; paths.py meets D past 128 per path)
        elif regime == "long-causal":
            n_q, n_k, d, dv = r.randint(1, 8), r.randint(*LONG_CAUSAL_KEYS), min(d, 16), min(dv, 16)
            causal, mask = CAUSAL in features, None
        elif regime == "long-backward":  # no causal mask: with Nq ≤ 4 it would hide every key past the fourth
            n_q, n_k, d, dv = r.randint(1, 4), r.randint(*LONG_BACKWARD_KEYS), min(d, 16), min(dv, 16)
            n_q = 1 if index < len(regimes) else n_q  # the first draw a decode step's backward
            causal, mask = False, None
        elif regime == "long-dropout":
            n_q, n_k, hq, hkv, causal, mask = 8, r.randint(*LONG_DROPOUT_KEYS), 1, 1, False, None
        elif regime == "decode-dropout":  # one query past a split of 1024 keys, no mask: a split-K decode path's dropout
            n_q, n_k, causal, mask = 1, r.randint(*LONG_DROPOUT_KEYS), False, None
        else:
            # rectangular: the fixed long-causal-positions case is square
            n_q = r.choice(LONG_LENGTHS[1:-1])
            n_k = r.choice([n for n in LONG_LENGTHS[1:] if n != n_q])
            hq, hkv = 1, 1
            causal = CAUSAL in features and (mask is None or r.random() < 0.5)
        mask = mask if not causal else None
    elif regime is not None and regime.startswith("mask-collision"):
        form = regime.removeprefix("mask-collision ")
        if ATTN_MASK in features:
            causal, mask = False, form
            batch = r.choice((2, 3))
            if AMBIGUOUS_MASKS[form] == "n_q":
                n_q = batch
            else:
                hq, hkv = batch, r.choice((1, batch) if GQA in features else (batch,))
    elif regime == "wide-head":
        # past 512 and not a multiple of 64: a head dim truncated at any of 128, 256, 384, 512, and chunked
        # loops with a tail (red team rt37h: D > 384 truncated escaped the first version's 129..255)
        d = r.randint(WIDE_HEAD_DIMS[0], WIDE_HEAD_DIMS[1])
        dv = r.choice((d, r.randint(*WIDE_HEAD_DIMS))) if value_dim else d
    elif regime in ("many-heads", "many-heads-backward"):
        if GQA in features:
            hkv = r.choice((2, 3))
            # the first draw past 32 (and so past 16): a group tiled by any power of two up to 32 shows
            hq = hkv * r.choice(MANY_HEADS_GROUPS[3:] if index < len(regimes) else MANY_HEADS_GROUPS)
        else:
            hq = hkv = r.randint(257, 300)
        batch = r.randint(-(-257 // hq), -(-320 // hq))
        batch = batch if batch * hq > 256 else batch + 1
        n_q, n_k, d = r.choice((1, 2, 3, 5)), r.choice((1, 2, 3, 5)), r.choice((1, 2, 3, 8, 16))
        dv = r.choice((d, 1, 5)) if value_dim else d
        if regime == "many-heads-backward":  # two keys at least: over one, dq and dk are exactly 0
            n_k = max(n_k, 2)
    elif regime in ("huge-grid", "huge-grid-backward"):
        batch = r.choice((1, 2))
        hq = hkv = -(-(GRID_LIMIT + r.randint(1, 64)) // batch)
        n_q, n_k, d = r.choice((1, 2)), r.choice((1, 2, 3)), r.choice((1, 2, 4))
        dv = r.choice((d, 3)) if value_dim else d
        if regime == "huge-grid-backward":  # (mask with is_causal: SDPA math refuses the pair)
            causal, mask = False, None
    elif regime == "wide-value":
        dv = r.randint(257, 320)
        d = r.choice((8, 16, 32)) if value_dim else dv
    elif regime == "learned-mask" and relation == GRADIENTS:
        hq, hkv = r.choice([h for h in HEADS if h[0] > 1 and (GQA in features or h[0] == h[1])])
        mask, n_q, n_k, d = r.choice(HEAD_SHARED_MASKS), max(n_q, 1), max(n_k, 2), max(d, 1)
        if index < len(regimes):  # the first draw a learned key bias: its gradient sums over B, H and the queries
            mask, n_q = r.choice(("(B, 1, 1, Nk)", "(1, 1, 1, Nk)")), max(n_q, 2)
        batch, dv = max(batch, 1), max(dv, 1)
    elif regime == "rank" and index < len(regimes):
        if (hq == hkv or hkv == 1) and GQA in features:
            # the first draw groups heads, two KV heads at least (with one, tiling them is grouping them)
            hq, hkv = r.choice([h for h in HEADS if h[0] != h[1] and h[1] > 1])
        causal = False  # (no draw pairs a mask with is_causal)
        mask = ONE_DIM_MASK if ATTN_MASK in features and n_k > 0 else None
        # square: a 1-D (Nk,) mask could then be read along the queries too
        n_q = n_k = min(max(n_k, 2), 64)  # (64: under MAX_SCORES, which would halve Nq alone)
    elif regime == "rank-causal" and index < len(regimes):
        # two queries and two keys at least (causal then hides a key from the first row), Nq ≠ Nk as drawn
        causal, mask = CAUSAL in features, None
        n_q, n_k = min(max(n_q, 2), 64), min(max(n_k, 2), 64)
        if not causal:  # (an impl without is_causal: the rank regime's masked problem, at rank 5)
            mask = ONE_DIM_MASK if ATTN_MASK in features else None
    elif regime == "rank-head-mask" and ATTN_MASK in features:
        # rank 3 (below), the mask one of its own per (b, h): (B·Hq, Nq, Nk) at rank 3
        causal, mask = False, "(B, Hq, Nq, Nk)"
        hq, hkv = (hq, hkv) if hq > 1 else (2, 2 if hkv > 1 or GQA not in features else 1)
        n_q, n_k = min(max(n_q, 2), 64), min(max(n_k, 2), 64)
    elif regime == "rank-mask" and ATTN_MASK in features:
        # a mask of the inputs' rank whose leading dim is B ≥ 2 (the first draw; later ones any RANK_MASKS form)
        causal, batch = False, max(batch, 2)
        mask = r.choice(RANK_MASKS[:2] if index < len(regimes) else RANK_MASKS)
        n_q, n_k = min(max(n_q, 2), 64), min(max(n_k, 2), 64)
    elif regime in ("rank", "rank-causal", "dropout-rank"):
        # causal half the time (then no mask; a coin of its own, so the other fields are drawn as before)
        coins = _rng(seed, dtype, *key, "rank causal")
        causal = CAUSAL in features and coins.random() < 0.5
        mask = ONE_DIM_MASK if ATTN_MASK in features and n_k > 0 and not causal else None
        if mask is not None and coins.random() < 0.5:  # a mask of the inputs' rank
            mask = coins.choice(RANK_MASKS)
    elif regime == "long-queries":
        batch, (hq, hkv), mask = 2, (1, 1), None
        n_q, n_k = r.randint(*LONG_QUERIES_LENGTHS), r.randint(*LONG_QUERIES_KEYS)
        d, dv = min(d, LONG_QUERIES_HEAD_DIM), min(dv, LONG_QUERIES_HEAD_DIM)
        causal = CAUSAL in features
    elif regime == "long-queries-backward":
        batch, (hq, hkv), mask = 1, (1, 1), None
        n_q, n_k = r.randint(*LONG_QUERIES_LENGTHS), r.randint(*LONG_QUERIES_BACKWARD_KEYS)
        d, dv = min(d, LONG_QUERIES_HEAD_DIM), min(dv, LONG_QUERIES_HEAD_DIM)
        causal = CAUSAL in features and r.random() < 0.5
        if ATTN_MASK in features and (index < len(regimes) or not causal):
            # a mask of its own rows, not is_causal, on the first draw (red team rt40h: query chunks of 4096 reading
            # mask rows 0..4095 in every chunk escaped masks over Nq ≤ 4096)
            causal, mask = False, "(Nq, Nk)"
    elif regime in ("kv-broadcast", "kv-broadcast-backward", "dropout-kv-broadcast"):
        # the drawn mask kept (a key-padding mask beside a shared prefix's k, v); the first draws without one
        batch, causal = max(batch, 2), False
        mask = None if index < len(regimes) else mask
        if hq < 2:
            hq, hkv = 2, r.choice((1, 2) if GQA in features else (2,))
        if index < len(regimes):  # the first draw without GQA: the batch alone is broadcast
            hkv = hq
        if regime == "kv-broadcast-backward":  # two keys at least: over one, dq and dk are exactly 0
            n_k = max(n_k, 2)
    elif regime == "after-other-dtype" and index < len(regimes):
        # causal where the impl takes it, no mask (a causal bias cached per (Nq, Nk) in the first call's dtype); square
        causal, mask, n_q = CAUSAL in features, None, min(max(n_k, 8), 64)
        n_k = n_q
    elif regime == "rank-backward":
        # GQA where the impl groups heads (a backward summing groups through the rank-4 layout breaks at rank 3)
        if GQA in features and (hq == hkv or hkv == 1):
            hq, hkv = r.choice([h for h in HEADS if h[0] != h[1] and h[1] > 1])
        n_q, n_k = min(max(n_q, 1), 64), min(max(n_k, 2), 64)
        if mask is not None and mask.startswith("(Hq,") and mask.count(",") == 2:  # (a 3-D mask of Hq heads
            mask = "(1, Hq, Nq, Nk)"  # broadcasts over rank 3's B·Hq heads as another mask: a 4-D one instead)
    elif regime == "after-other-calls" and index < len(regimes):
        # the first draw causal, after a call with is_causal and an (Nq, Nk) mask (red team rt40h: a causal bias cached
        # by shape and added to in place by that call's mask); square, so a cached bias fits either way
        causal, mask, n_q = CAUSAL in features, None, min(max(n_k, 8), 64)  # (64: under MAX_SCORES, kept square)
        n_k = n_q
    elif regime == "many-batch-masks":
        # more than 16 batch entries (the first draw past 32), each with a mask of its own where the impl takes one:
        # a batch loop in chunks that slices the mask from entry 0 in every chunk (red team rt43h) escaped B ≤ 4
        batch = r.randint(33, 40) if index < len(regimes) else r.randint(17, 40)
        hq, hkv = r.choice(((1, 1), (2, 1), (2, 2)) if GQA in features else ((1, 1), (2, 2)))
        n_q, n_k, d, dv, causal = min(max(n_q, 1), 16), min(max(n_k, 2), 64), min(max(d, 1), 32), min(max(dv, 1), 32), False
        mask = r.choice(PER_ENTRY_MASKS) if ATTN_MASK in features else None
    elif regime == "float64-long":
        # float64 past 1024 keys (the first draw past 4096), one head: a wrapper routing float64 through a float32 kernel
        # past some length (red team rt43h) is judged by float64's bound (the small fixed float64 cases never reach it)
        n_q, n_k = r.randint(1, 16), r.randint(4097, 8200) if index < len(regimes) else r.randint(1025, 8200)
        batch, (hq, hkv), d, dv = 1, (1, 1), min(max(d, 1), 64), min(max(dv, 1), 64)
        causal = False  # (top-left causal with Nq ≤ 16 would hide every key past the 16th)
    elif regime in ("nan-one-key", "nan-underflowed-keys"):
        # a non-finite input element on a fast path (red team rt43h): over one key (a path returning v as it is, or
        # weights of 1 without the score's NaN), or in a leading half of the keys whose weights underflow to 0 (a
        # kernel skipping a block whose scores all fall far below the running max hides its NaN in v; float64
        # attention, whose weights there are 0 or subnormal, gives NaN: 0 · NaN); every key visible, no mask
        causal, mask, batch = False, None, 1  # (one batch entry: under MAX_SCORES, whose cap would halve Nk)
        n_q, d, dv = min(max(n_q, 1), 32), min(max(d, 1), 64), min(max(dv, 1), 64)
        n_k = 1 if regime == "nan-one-key" else r.randint(130, 400)
    elif regime == "far-masked-rows" and ATTN_MASK in features:
        causal, mask, n_q, n_k = False, r.choice(FULL_MASKS), max(n_q, 2), max(n_k, 2)
    elif regime in ("mask-storage", "mask-nonfinite", "mask-expanded") and ATTN_MASK in features:
        # two rows and two keys at least: a (1, Nk) mask's strides say nothing
        causal, mask, n_q, n_k = False, r.choice(FULL_MASKS), max(n_q, 2), max(n_k, 2)
    elif regime == "mask-head-bias" and ATTN_MASK in features:
        # a per-head key bias broadcast over two queries or more (the first draw (1, Hq, 1, Nk), ALiBi with -inf left
        # padding): red team rt44h's kernel took a mask broadcast over the queries as key padding with head 0's row
        hq, hkv = r.choice([h for h in HEADS if h[0] > 1 and (GQA in features or h[0] == h[1])])
        causal, n_q, n_k = False, min(max(n_q, 2), 64), min(max(n_k, 2), 128)
        # (additive: a key dim of 1 would add one constant to a row, which shifts nothing)
        mask = "(1, Hq, 1, Nk)" if index < len(regimes) else r.choice([f for f in HEAD_KEY_BIASES if f.endswith("Nk)")])
    elif mask in AMBIGUOUS_MASKS and r.random() < 0.5:  # the same collisions, now and then
        if AMBIGUOUS_MASKS[mask] == "n_q":
            batch = n_q = r.choice((2, 3))
        else:
            batch = max(batch, 2)
            hq, hkv = batch, (batch if GQA not in features else r.choice((1, batch)))
    dropout_p, least, near_one = 0.0, 1, False
    if relation == DROPOUT_LAW:
        # (a regime draws as it did before "near one": its sizes, and a test of its power, are its own)
        kind = _cycled(DROPOUT_PS, seed, dtype, index - len(regimes), "dropout p", r.choice(REGIME_DROPOUT_PS))
        log_range = {"log": (-3.0, math.log10(0.99)), "tiny": (-4.0, -2.0)}
        dropout_p = (r.uniform(0.01, 0.99) if kind == "uniform" else 10 ** r.uniform(*log_range[kind])
                     if kind in log_range else float(f"{1 - 10 ** r.uniform(-3.0, -2.0):.4g}") if kind == "near one"
                     else kind)
        least = 8  # V = I: Dv = Nk, and enough weights for the kept fraction
        n_q, n_k = max(n_q, least), max(n_k, least)
        if kind == "near one":  # (its queries, after the keys are set below)
            near_one = True
        # every few dropout problems one or two keys: the weights a one-key fast path returns as 1
        if regime == "tiny-dropout":
            # one head, no mask, D ≤ 64 and a default scale: every weight near 1/Nk, counted (> dropout.P_FLOOR)
            dropout_p = float(f"{10 ** r.uniform(*TINY_DROPOUT_EXPONENTS):.3g}")
            batch, hq, hkv, causal, mask, d = 1, 1, 1, False, None, min(d, LONG_HEAD_DIM)
            n_k = r.randint(*LONG_DROPOUT_KEYS)
            n_q = math.ceil(TINY_DROPOUT_DROPS / (dropout_p * n_k))
        elif regime == "decode-dropout":
            n_q = 1  # (its kept fraction counted over B·H·Nk > 1024 weights)
        elif regime != "long-dropout":
            n_k = _cycled(TINY_KEYS, seed, dtype, index - len(regimes), "tiny keys", None) or n_k
        if near_one and regime is None and n_k * batch * hq > 0:  # (a regime's sizes are its own; an empty problem)
            n_q = max(n_q, math.ceil(NEAR_ONE_KEPT / ((1 - dropout_p) * n_k * batch * hq)))
    if relation == METAMORPHIC and r.random() < 0.5 and regime is None:
        batch = max(batch, 2)
    if regime == "cache-slice":  # two batch entries at least (before the cap): a batch stride is read only past the first
        batch = max(batch, 2)
    cap = (LONG_SCORES if regime in LONG else LONG_QUERIES_SCORES if regime in ("long-queries", "long-queries-backward")
           else MAX_SCORES)
    # (long-dropout's V = I over 2200 keys: Nq·Nk² = 8·2200², above the cap of dropout problems; tiny-dropout's
    # Nq is set by its p)
    while (batch * hq * n_q * n_k * (n_k if relation == DROPOUT_LAW else 1) > cap * (8 if relation == DROPOUT_LAW else 1)
           and regime not in ("long-dropout", "tiny-dropout", "decode-dropout")):
        if (n_q >= n_k or n_k <= least) and n_q > least:
            n_q = max(least, n_q // 2)
        elif n_k > least:
            n_k = max(least, n_k // 2)
        else:
            batch, hq, hkv = 1, 1, 1
    if relation == DROPOUT_LAW:
        dv = n_k
    scale = _cycled(SCALES, seed, dtype, index - len(regimes), "scale", r.choice(REGIME_SCALES))
    magnitude = regime == "magnitude"
    late_values = regime == "long-both"
    if magnitude:
        scale = r.choice(OVERFLOWING_SCALES)
    if late_values:  # scores of size 1 or less: the weight of one key past 2048 is ~1/N, not exp(-100)
        scale = r.choice((None, 1e-6, -1e-6))
    if regime == "nan-underflowed-keys":  # (the default scale: another sign or size would not underflow those keys)
        scale = None
    if regime == "wide-head" and not scale:  # scale 0 makes every score 0: no head dim would show
        scale = None
    if regime in ("kv-broadcast-backward", "many-heads-backward") and scale is not None and abs(scale) < 0.1:
        scale = None  # dq, dk scale with it: at 1e-6 they sink under the floor
    if regime == "tiny-dropout" and relation == DROPOUT_LAW and scale != 0.0:
        scale = None  # scores of size 1 (or 0): no weight below dropout.P_FLOOR, every one counted
    layout = r.choice(LAYOUTS) if relation != DROPOUT_LAW else "contiguous"
    mask_kind, grads = r.choice(("bool", "additive")), r.choice(GRAD_SUBSETS)
    # (a cycle of its own past the regimes; the regimes' first draws keep their coin, random values)
    kind = _cycled(MASK_KINDS, seed, dtype, index - len(regimes), "mask kind",
                   "bool" if mask_kind == "bool" else "random")
    mask_kind, mask_values = ("bool", "random") if kind == "bool" else ("additive", kind)
    if regime in ("long-queries", "long-queries-backward"):
        layout = "contiguous"  # (a chunked kernel's batch stride and positions, not a layout)
    if regime in ("kv-broadcast-backward", "many-heads-backward", "rank-backward") and grads == "q":  # dk or dv judged
        grads = "qkv"
    if regime == "long-backward" and grads == "q":  # dk, dv of the far keys: each wholly theirs, not a sum's part
        grads = "qkv"
    if regime == "long-queries-backward":  # dq of the rows past each power of two: q requires grad
        grads = r.choice(("qkv", "q", "qk"))
    dropout_grads, dropout_mask_grad = _cycled(DROPOUT_GRADIENTS, seed, dtype, index - len(regimes), "dropout grads",
                                               r.choice(DROPOUT_GRADIENTS))
    if relation == DROPOUT_LAW and regime == "float64-dropout" and index < len(regimes):
        # the first draw: a boolean mask beside dropout (red team rt40h: a float64 fallback adding a boolean mask as 0/1)
        mask, mask_kind, causal, dropout_mask_grad = (r.choice(FULL_MASKS) if ATTN_MASK in features else None,
                                                      "bool", False, False)
    if relation == DROPOUT_LAW:
        grads = dropout_grads if BACKWARD in features else ""
        dropout_mask_grad = dropout_mask_grad and BACKWARD in features and ATTN_MASK in features and n_k > 0
        if regime == "tiny-dropout":  # the law alone: a float64 backward over Nq·Nk² costs seconds
            grads, dropout_mask_grad = "", False
        if regime == "decode-dropout":  # mask-free (a split-K path's problem); the first draw an inference step
            dropout_mask_grad, mask = False, None
            if index < len(regimes):
                grads, dropout_p = "", float(f"{r.uniform(0.2, 0.8):.3g}")
        if dropout_mask_grad:  # a learned bias beside dropout: a mask of its own when none was drawn
            mask, mask_kind = mask or r.choice(MASK_FORMS), "additive"
            causal = False
    if relation == GRADIENTS and r.random() < 0.5:  # three in four additive: a learned mask's gradient judged
        mask_kind = "additive"
    # (drawn after every other field, so adding them moved no earlier problem)
    storage, wide, nonfinite = r.choice(MASK_STORAGES), r.random() < 0.5, r.choice(NONFINITE)
    if mask is None or regime is not None and regime.startswith("mask-collision"):
        storage = "contiguous"
    half = dtype in ("float16", "bfloat16")
    if regime == "mask-storage":  # a stride-ignoring, dtype-casting or contiguity-demanding reader fails
        mask_kind, storage, wide = "additive", "transposed", True
    if regime in ("mask-nonfinite", "learned-mask", "mask-expanded"):
        mask_kind = "additive"
    if regime == "mask-head-bias" and mask is not None:
        mask_kind = "additive"
        mask_values = ("alibi-padded" if index < len(regimes)
                       else _rng(seed, dtype, *key, "head bias values").choice(STRUCTURED_VALUES))
        storage = "contiguous" if index < len(regimes) else storage
    if regime == "mask-expanded" and mask is not None:
        storage = "expanded keys" if index < len(regimes) else "expanded"
    if relation == GRADIENTS and mask_kind == "additive" and storage.startswith("expanded"):
        storage = "transposed"  # a learned mask is a parameter, never a stride-0 view (torch refuses its gradient)
    if relation == DROPOUT_LAW and (grads or dropout_mask_grad) and storage.startswith("expanded"):
        # SDPA math raises on a stride-0 mask beside dropout and inputs requiring grad (measured: "more than one
        # element of the written-to tensor refers to a single memory location")
        storage = "transposed"
    far = None
    if regime == "far-masked-rows" and mask is not None:
        # float16 holds no FAR_MASK_VALUES: a float32 mask; bfloat16 holds them all: its first draw a bfloat16 mask
        # (red team rt40h: a bfloat16 mask rounded through float16, its far rows -inf, escaped float32 masks)
        mask_kind, far = "additive", r.choice(FAR_MASK_VALUES)
        wide = dtype == "float16" or wide and index >= len(regimes)
    if regime == "cache-slice":
        layout = "slice"
    if relation == DROPOUT_LAW or mask_kind != "additive":
        wide = False
    poisoned = (regime == "mask-nonfinite" or r.random() < NONFINITE_CHANCE) and relation == AGREEMENT and far is None
    rank = (3 if regime == "rank-head-mask" and relation == AGREEMENT
            else r.choice(RANKS) if regime in ("rank", "rank-causal", "rank-mask") and relation == AGREEMENT
            or regime == "dropout-rank" and relation == DROPOUT_LAW else 4)
    broadcast = (regime in ("kv-broadcast", "kv-broadcast-backward", "dropout-kv-broadcast")
                 and relation in (AGREEMENT, GRADIENTS, DROPOUT_LAW) and batch >= 2)
    if index < len(regimes) and relation == AGREEMENT and regime in ("rank", "rank-causal", "rank-mask", "kv-broadcast"):
        # the first draw: the forms a kernel most likely maps wrongly
        rank = {"rank": 3, "rank-causal": 5, "rank-mask": 5}.get(regime, 4)
    elif index < len(regimes) and relation == DROPOUT_LAW and regime == "dropout-rank":
        rank = 3
    elif broadcast and relation in (AGREEMENT, DROPOUT_LAW) and index >= len(regimes):
        rank = r.choice((4, 5))
    if relation == GRADIENTS and not broadcast:
        # the gradients at every rank SDPA takes (red team: a backward summing GQA groups as (q.shape[0], Hkv, g, ...)
        # raised at rank 3, and no gradient was judged at rank 3 or 5): rank 3 on the rank-backward regime's first
        # draw, later draws cycling through 4, 3, 5 (a coin of their own); a 3-D (Hq, Nq, Nk) mask would broadcast
        # over rank 3's B·Hq heads as another mask, so that pair takes rank 5
        rank = (3 if regime == "rank-backward" else 4) if index < len(regimes) else _cycled(
            GRADIENT_RANKS, seed, dtype, index - len(regimes), "gradient rank", 4)
        if rank == 3 and mask is not None and mask.startswith("(Hq,") and mask.count(",") == 2:  # (every 3-D form
            rank = 5  # of Hq heads: (Hq, Nq, Nk), (Hq, 1, Nk), (Hq, Nq, 1), (Hq, 1, 1))
        if causal and mask is not None:
            rank = 4  # SDPA refuses attn_mask with is_causal at rank 3 and accepts it at rank 4 (measured, torch 2.13)
    if relation == DROPOUT_LAW and (rank != 4 or broadcast):  # (the law alone; their gradients: generated-gradients')
        grads, dropout_mask_grad = "", False
    gqa_flag = r.random() < 0.5
    nan_in = r.choice("qkv")
    if regime == "nan-underflowed-keys" and index < len(regimes):
        nan_in = "v"  # (the first draw: a value read only through weights that underflow)
    # (every key visible: a NaN key that causal or a mask hides is NaN in SDPA math's output, as it adds the
    # mask to the NaN score, and not in the masked-out float64 golden value; either is defensible)
    input_nan = (nan_in if (regime in ("long-decode-nan", "nan-one-key", "nan-underflowed-keys")
                            or r.random() < NONFINITE_CHANCE / 2) and relation == AGREEMENT
                 and mask is None and not causal and not broadcast and 0 not in (batch, hq, n_q, n_k, d, dv)
                 and regime != "long-queries" else None)
    arguments = _cycled(ARGUMENT_FORMS, seed, dtype, index - len(regimes), "arguments", "keywords")
    dropout_p = float(f"{dropout_p:.3g}")
    if arguments == "numpy scalars":  # the impl gets numpy.float32(p): the golden values use that very number (red
        dropout_p = float(np.float32(dropout_p))  # team rt43h: 1/(1 - p) off by 2.4e-7 at p = 0.9 failed float64)
    problem_dtype = "float64" if regime in ("float64-dropout", "float64-long") else dtype
    prior = _prior(seed, dtype, key, regime, relation, features, index < len(regimes), index - len(regimes))
    prior_dtype = None
    if prior == "other dtype":
        others = PRIOR_DTYPES[problem_dtype]
        prior_dtype = others[0] if index < len(regimes) else _rng(seed, dtype, *key, "prior dtype").choice(others)
    return Problem(batch, hq, hkv, n_q, n_k, d, dv, causal, problem_dtype,
                   layout=layout,
                   mask=mask, mask_kind=mask_kind, dropout_p=dropout_p,
                   mask_values=mask_values if mask is not None and mask_kind == "additive" else "random",
                   grads=grads, scale=scale, relation=relation,
                   seed=zlib.crc32(repr((seed, dtype) + key).encode()), magnitude=magnitude,
                   small_values=_rng(seed, dtype, *key, "small values").randint(*SMALL_VALUE_EXPONENTS)
                   if regime == "small-values" else 0, large_values=regime == "large-values",
                   late_values=late_values, mask_storage=storage,
                   mask_dtype="float32" if wide and half and mask is not None else None,
                   mask_nonfinite=nonfinite if poisoned and mask is not None and mask_kind == "additive" else None,
                   mask_far=far, rank=rank, kv_broadcast=broadcast, input_nan=input_nan,
                   # (a coin of its own: the other fields are drawn as before infinities were)
                   input_value=_rng(seed, dtype, *key, "input value").choice(ref.NONFINITE) if input_nan else "NaN",
                   # (red team rt39h: dropout skipped under inference_mode escaped calls under no_grad alone)
                   # every run's two dropout regimes in the two modes without a graph; drawn problems cycle
                   context=(FIRST_CONTEXTS.get(regime) if index < len(regimes) else None)
                   or _cycled(CONTEXTS, seed, dtype, index - len(regimes), "context",
                              _rng(seed, dtype, *key, "context").choice(CONTEXTS))
                   if relation in (AGREEMENT, DROPOUT_LAW) else "no_grad",
                   prior=prior, prior_dtype=prior_dtype,
                   arguments=arguments,
                   mask_padding=regime == "long-decode-padded" and mask == "(B, 1, 1, Nk)" and batch >= 2,
                   # (a coin of its own, so the other fields are drawn as before: two in three boolean (Nq, Nk) masks
                   # of two rows or more, and half the others with a query dim, are of a structure a kernel may
                   # recognise, exact or one row off; exact structures only of an (Nq, Nk) mask: one repeated over
                   # heads or entries hides a kernel reading the mask of one slice for all)
                   mask_near=_rng(seed, dtype, *key, "near structure").choice(
                       tuple(x for x in NEAR_STRUCTURES if mask == "(Nq, Nk)" or not x.endswith(EXACT)) * 2
                       + (None,) * len(NEAR_STRUCTURES))
                   if mask is not None and mask_kind == "bool" and "Nq, Nk" in mask  # (a query dim of Nq)
                   and n_q >= 3 and n_k >= 2 else None,
                   underflow=regime == "nan-underflowed-keys" and relation == AGREEMENT,
                   # (rank 3 with Hkv < Hq only under enable_gqa: without it B·Hkv heads do not broadcast)
                   enable_gqa=not (hkv == 1 < hq and gqa_flag and rank != 3),
                   # (a learned mask is a parameter, never a stride-0 view: torch refuses the gradient of one)
                   mask_grad=(relation == GRADIENTS or relation == DROPOUT_LAW and dropout_mask_grad and BACKWARD in features)
                   and mask is not None and mask_kind == "additive"
                   and not storage.startswith("expanded") and 0 not in (batch, hq, n_q, n_k, d, dv),
                   # (five steps: four sequences would meet each of the four argument forms in one pairing only)
                   sequence=_cycled(SEQUENCES + ("single",), seed, dtype, index - len(regimes), "sequence", "single")
                   if relation == GRADIENTS
                   # a dropout backward after another dropout forward (red team rt39h: a backward redrawing its
                   # mask from the last forward's seed escaped single calls); a coin of its own
                   else _rng(seed, dtype, *key, "dropout sequence").choice(DROPOUT_SEQUENCES)
                   if relation == DROPOUT_LAW and (grads or dropout_mask_grad) else "single",
                   grad_context=_cycled(GRADIENT_CONTEXTS, seed, dtype, index - len(regimes), "grad context",
                                        "enable_grad") if relation == GRADIENTS else "enable_grad",
                   dout_value=_cycled(bv.DOUT_VALUES, seed, dtype, index - len(regimes), "dout value", None)
                   if relation == GRADIENTS else None,
                   # (at rank 4: other ranks reach the impl as views of the harness's leaves, no Parameter)
                   leaves=_cycled(LEAVES, seed, dtype, index - len(regimes), "leaves", "tensors")
                   if relation == GRADIENTS and rank == 4 and not broadcast else "tensors")


def _late_values(s: Subject) -> None:
    """The fixed long-causal-positions case's values (cases.POSITION_*): v zero before key
    POSITION_EXACT - POSITION_ZEROED_BEFORE and POSITION_VALUE_SCALE times larger after, so one key
    seen or hidden wrongly by a row past 2048 moves it far beyond a half type's rounding (with
    random values it moves the row by ~1/N of a value, inside float16's bound)."""
    from kernels.harness.cases import POSITION_EXACT, POSITION_VALUE_SCALE, POSITION_ZEROED_BEFORE

    v = s.v.clone()
    v[:, :, :POSITION_EXACT - POSITION_ZEROED_BEFORE] = 0.0
    s.v = v * POSITION_VALUE_SCALE


def _zero_tails(s: Subject) -> None:
    """The last quarter of the keys (their k and v rows) and of the queries exactly 0 in every entry and head (one of
    each past a single row): padding a caller left in place. SDPA attends to a zero key as to any other (its score 0,
    its weight exp(-m)) and answers a zero query with the mean of the values it sees; a kernel inferring padding from
    zeros drops them or answers 0."""
    for name in ("q", "k", "v"):
        x = getattr(s, name).clone()  # (B, H, N, D)
        n = x.shape[-2]
        tail = max(1, n // 4) if n > 1 else 0  # (a single row stays: zeroing it pads nothing)
        x[..., n - tail:, :] = 0
        setattr(s, name, x)


UNDERFLOW_SCORE = -1000.0  # the least |score| of an underflowing key, times √D: exp(-1000) is 0 in float64 too


def _underflowing_keys(s: Subject) -> None:
    """q's entries made positive and the first half of the keys' k entries negative, of a size that puts every
    score of those keys at UNDERFLOW_SCORE or below (whatever the scale's sign: it is applied to q as drawn, so the
    scale is taken as 1/√D), while the other keys' scores stay of size 1: their weights are exactly 0 in float64."""
    n_k = s.k.shape[-2]
    if n_k < 2 or s.q.numel() == 0:
        return
    q = s.q.abs() + 0.5  # (B, Hq, Nq, D), every entry ≥ 0.5
    k = s.k.clone()
    d = s.q.shape[-1]
    # |score| ≥ 0.5·Σ|k_i|/√D ≥ 0.5·D·c/√D for |k_i| ≥ c: c = 2·|UNDERFLOW_SCORE|/√D
    c = 2 * abs(UNDERFLOW_SCORE) / math.sqrt(d)
    k[..., : n_k // 2, :] = -(k[..., : n_k // 2, :].abs() + c)
    s.q, s.k = s.cast(q.double()), s.cast(k.double())


def _near_the_top(s: Subject) -> None:
    """q times 2^e with max|q| in (max/2, max] of a range narrower than float32's (kernels scale in
    float32, where q·scale fits), k times 2^-e: every product q_i·k_i, so every score, is the one of the unscaled inputs
    (exact powers of two; a k entry pushed below the smallest normal loses bits, which the golden
    values, computed from the inputs as given, take in)."""
    top = torch.finfo(s.dtype).max
    # bfloat16's range is float32's: there q·scale overflows float32 as well, as it would in SDPA
    if top * max(abs(x) for x in OVERFLOWING_SCALES) >= torch.finfo(torch.float32).max or s.q.numel() == 0:
        return
    largest = float(s.q.abs().max())
    if not 0 < largest < math.inf:
        return
    e = math.floor(math.log2(top / largest))
    s.q, s.k = s.q * 2.0 ** e, s.k * 2.0 ** -e


def _large_outputs(s: Subject, p: Problem, m) -> None:
    """v times a power of two (exact: the scaled problem's golden values are the unscaled ones times it), towards the
    top of the dtype's range.
    - float32 and bfloat16 (where _near_the_top leaves q as it is): the largest finite |output| in float64, as the
      problem is posed (mask, causal, scale), in (LARGE_OUTPUT/2, LARGE_OUTPUT], past float16's 65504, so a kernel
      storing its output through a float16 buffer gives inf.
    - float16, the large-values regime's forwards without dropout: every entry of v in [LARGE_FLOAT16_OUTPUT/2,
      LARGE_FLOAT16_OUTPUT] (top/2 · (1 + |v|/max|v|): not a power of two, so the golden values are v's as cast).
      Every output, a weighted mean of v, fits; a block's P·V summed in float16 before normalising (weights up to 1)
      overflows where its weights sum past 4 (a v of |N(0, 1)| draws scaled to that top overflowed only for flat
      weights: red team rt57's bug passed the first draw at scale -0.25).
      Not with dropout (its 1/(1-p) takes a correct output past the range) nor in a backward (dP = dO·Vᵀ of such a
      v overflows in the plain reference)."""
    if s.v.numel() == 0 or s.q.numel() == 0:
        return
    if s.dtype == torch.float16 and p.large_values and p.relation == AGREEMENT and not p.dropout_p:
        v = s.v.double().abs()  # (B, Hkv, Nk, Dv)
        largest = float(v.max())
        if 0 < largest < math.inf:
            s.v = s.cast(LARGE_FLOAT16_OUTPUT / 2 * (1 + v / largest))  # every entry in [top/2, top]
        return
    if s.dtype not in (torch.float32, torch.bfloat16):
        return
    out = ref.attention64(s.q.cpu(), s.k.cpu(), s.v.cpu(), **s.kwargs(attn_mask=None if m is None else m.cpu()))
    finite = out[torch.isfinite(out)].abs()
    largest = float(finite.max()) if finite.numel() else 0.0
    if not 0 < largest < math.inf:
        return
    s.v = s.v * 2.0 ** math.floor(math.log2(LARGE_OUTPUT / largest))


# ===================================================================== judging one problem

def _view(x: torch.Tensor, layout: str, r: random.Random, name: str = "q") -> torch.Tensor:
    """The same values in another memory layout (``name``: q, k or v; k's and v's "slice" is a KV cache's)."""
    cache = name != "q"
    if layout in STRIDE_ZERO:
        inputs, dim = STRIDE_ZERO[layout]
        return x.narrow(dim, 0, 1).clone().expand(x.shape) if name in inputs else x.clone()  # (B, H, N, D)
    if layout == "slice":
        # (B, N, H, D) storage larger along B and N (a KV cache), and for q along every dim; taken at an offset
        b, h, n, d = x.shape
        pad = [r.randint(0, 2), r.randint(1, 5), 0 if cache else r.randint(1, 3), 0 if cache else r.randint(1, 3)]
        start = [r.randint(0, extra) for extra in pad]
        buf = torch.empty(b + pad[0], n + pad[1], h + pad[2], d + pad[3], dtype=x.dtype, device=x.device)
        view = buf[start[0]:start[0] + b, start[1]:start[1] + n, start[2]:start[2] + h, start[3]:start[3] + d]
        return view.transpose(1, 2).copy_(x)  # (B, H, N, D)
    if layout == "transposed":
        return strided(x)
    if layout == "permuted":
        order = list(range(x.dim()))
        r.shuffle(order)
        inverse = [order.index(i) for i in range(x.dim())]
        return x.permute(order).contiguous().permute(inverse)
    if layout == "offset":
        offset = r.randint(1, 17)
        buf = torch.empty(x.numel() + offset + r.randint(0, 5), dtype=x.dtype, device=x.device)
        return buf[offset:offset + x.numel()].view(x.shape).copy_(x)
    return x.clone()  # (a copy: an impl writing into its inputs must not change the subject's)


def _views(layout: str, qkv: tuple, r: random.Random) -> tuple:
    """q, k, v in ``layout`` (_view; k and v as a KV cache's). In the "slice" layout, k and v of one shape are views of
    one interleaved cache (B, Ncap, 2, Hkv, D), Ncap > Nk, as a serving engine packs them (red team rt49: a packed-KV
    fast path re-deriving the strides as if the cache were exactly Nk long escaped where k and v were apart)."""
    q, k, v = qkv
    if layout != "slice" or k.shape != v.shape:
        return tuple(_view(x, layout, r, name) for x, name in zip(qkv, "qkv"))
    b, h, n, d = k.shape
    pad = r.randint(1, 5)
    start = r.randint(0, pad)
    cache = torch.empty(b, n + pad, 2, h, d, dtype=k.dtype, device=k.device)[:, start:start + n]  # (B, Nk, 2, Hkv, D)
    cache[:, :, 0] = k.transpose(1, 2)
    cache[:, :, 1] = v.transpose(1, 2)
    return _view(q, layout, r), cache[:, :, 0].transpose(1, 2), cache[:, :, 1].transpose(1, 2)  # (B, Hkv, Nk, D)


def _mask(s: Subject, p: Problem, poisoned: bool = True):
    """The problem's attn_mask, in its storage and dtype (with its non-finite entry unless not poisoned)."""
    if p.mask is None:
        return None
    from kernels.harness.masks import (QUERY_MASKS, additive_mask, bool_mask, form_shape, near_structured_mask,
                                       structured_mask)

    # a 1-D mask: the (1, Nk) one's row (the mask makers keep a visible key in every row)
    if p.mask in QUERY_MASKS:
        shape = QUERY_MASKS[p.mask](p.batch, p.q_heads, p.n_q, p.n_k)
    else:
        shape = (1, p.n_k) if p.mask == ONE_DIM_MASK else form_shape(p.mask, p.batch, p.q_heads, p.n_q, p.n_k)
    label = f"generated {p.mask}"
    if p.mask_padding:  # key padding: entry b sees keys below its length, entry 0 or another none (its output 0)
        gen = s.rng(label)
        lengths = torch.randint(1, p.n_k + 1, (p.batch,), generator=gen)
        lengths[int(torch.randint(p.batch, (), generator=gen))] = 0
        visible = torch.arange(p.n_k) < lengths.view(-1, 1, 1, 1)  # (B, 1, 1, Nk)
        m = (visible if p.mask_kind == "bool" else
             s.cast(torch.zeros(shape, dtype=torch.float64).masked_fill(~visible, float("-inf")))).to(s.device)
    elif p.mask_kind == "bool" and p.mask_near:
        m = near_structured_mask(shape, p.mask_near, s.rng(label)).to(s.device)
    elif p.mask_kind == "bool" and p.mask in QUERY_MASKS:  # some rows hidden whole: their output 0
        m = (torch.rand(shape, generator=s.rng(label)) < 0.6).to(s.device)
    elif p.mask_kind == "bool":
        m = bool_mask(s, shape, label)
    elif p.mask_values != "random":  # (a float32 one beside half q unshifted: the structure is the point)
        m = structured_mask(s, shape, p.mask_values, label, dtype=None if p.mask_dtype is None
                            else getattr(torch, p.mask_dtype))
    elif p.mask_dtype is None:
        m = additive_mask(s, shape, label, magnitude=p.mask_magnitude)
    else:
        m = additive_mask(s, shape, label, dtype=getattr(torch, p.mask_dtype), shift=MASK_SHIFT,
                          magnitude=p.mask_magnitude)
    r = _rng(p.seed, "mask storage")
    if p.mask == ONE_DIM_MASK:
        m = m.reshape(p.n_k)
    # "expanded": stride 0 along one dim of more than one entry, any of them, the keys' too (red team rt39h: a
    # mask read with stride 1 along the keys escaped stride 0 along the queries alone); a coin of its own
    expanded = (m.dim() - 1 if p.mask_storage == "expanded keys"
                else _rng(p.seed, "mask expanded dim").choice([i for i, n in enumerate(m.shape) if n > 1] or [m.dim() - 1]))
    if p.mask_nonfinite and poisoned and m.numel():
        pos = [r.randrange(n) for n in m.shape]
        if p.mask_storage.startswith("expanded"):
            pos[expanded] = 0  # the entry every one along that dim reads
        m[tuple(pos)] = float(p.mask_nonfinite)
    if p.mask_far is not None and m.dim() >= 2 and m.shape[-2] > 1:
        rows = r.sample(range(m.shape[-2]), r.randint(1, m.shape[-2] - 1))  # some rows, not every one
        m[..., rows, :] = p.mask_far
    if p.mask_storage == "transposed" and m.dim() >= 2:
        return m.transpose(-2, -1).contiguous().transpose(-2, -1)
    if p.mask_storage.startswith("expanded") and m.numel():
        return m.narrow(expanded, 0, 1).expand(m.shape)
    if p.mask_storage == "offset":
        return _view(m, "offset", r)
    return m


def _split_batch(p: Problem) -> bool:
    """Rank 5 and more with two batch dims of the batch, (B/2, 2), where B ≥ 4 is even (both past 1); (B, 1)
    otherwise."""
    return p.rank >= 5 and p.batch >= 4 and p.batch % 2 == 0


def _ranked_mask(m: torch.Tensor, p: Problem) -> torch.Tensor:
    """A 4-D mask at the inputs' rank, the same entries for each (b, h): its last two dims at rank 2, (B·Hq, Nq, Nk) at
    rank 3, at rank 5 the
    inputs' two batch dims (_split_batch; a mask of batch 1 gets (1, 1)), past rank 5 leading 1s besides. A mask of
    fewer dims broadcasts as it is."""
    if p.rank == 2 and m.dim() > 2:  # (B = Hq = 1: a mask's leading dims are all 1, and SDPA refuses them at rank 2)
        return m.reshape(m.shape[-2:])  # (Nq or 1, Nk or 1)
    if p.rank == 4 or m.dim() < 4:
        return m
    if p.rank >= 5:
        m = m.unflatten(0, (p.batch // 2, 2)) if _split_batch(p) and m.shape[0] == p.batch else m.unsqueeze(1)
        return m.reshape((1,) * (p.rank - 5) + m.shape)
    return m.expand(p.batch, p.q_heads, p.n_q, p.n_k).flatten(0, 1)  # (B·Hq, Nq, Nk)


def _call_form(p: Problem, q, k, v, m) -> tuple:
    """(q, k, v, {attn_mask}) as the impl gets them: k, v of one batch entry when broadcast (the subject's are
    that entry repeated, so the golden values are the same), at the problem's rank, the mask at that rank too. Rank 2
    is (N, D), of a problem of one entry and one head (paths.allowed). At
    rank 5 an even batch of 4 or more is two batch dims (B/2, 2) (else (B, 1)), and a broadcast k, v broadcasts along
    the second, (B/2, 1) (along the leading dims, (1, 1), the other rows meet it; red team rt49: k, v broadcast along
    a middle batch dim read by the leading one's stride); past rank 5, leading 1s besides (rt49: a generic N-D wrapper
    dropping is_causal past rank 5)."""
    if _split_batch(p):
        q, k, v = (x.unflatten(0, (p.batch // 2, 2)) for x in (q, k, v))  # (B/2, 2, H, N, D)
        if p.kv_broadcast:
            k, v = k[:, :1], v[:, :1]  # (B/2, 1, H, N, D)
    else:
        if p.kv_broadcast:
            k, v = k[:1], v[:1]
        if p.rank == 2:  # (N, D): one entry of one head (B = Hq = Hkv = 1)
            q, k, v = (x[0, 0] for x in (q, k, v))
        elif p.rank != 4:
            q, k, v = (x.flatten(0, 1) if p.rank == 3 else x.unsqueeze(1) for x in (q, k, v))
    if p.rank > 5:
        q, k, v = (x.reshape((1,) * (p.rank - 5) + x.shape) for x in (q, k, v))
    return q, k, v, ({} if m is None else {"attn_mask": _ranked_mask(m, p)})


def _other_strides(m: torch.Tensor) -> torch.Tensor | None:
    """m's storage read through other strides, the same shape, offset and data_ptr (the dims' order reversed, or
    row-major where m is that already); None where m's storage does not hold that many elements (an expanded mask)."""
    if m.dim() < 2 or m.numel() < 2:
        return None
    def dense(order):  # the strides of m's shape laid out with the dims of ``order`` fastest first
        strides, step = [0] * m.dim(), 1
        for i in order:
            strides[i], step = step, step * m.shape[i]
        return strides

    strides = dense(range(m.dim()))  # dim 0 fastest
    if tuple(strides) == m.stride():
        strides = dense(reversed(range(m.dim())))  # (row-major)
    if m.untyped_storage().nbytes() < (m.storage_offset() + m.numel()) * m.element_size():
        return None
    return m.as_strided(m.shape, strides, m.storage_offset())


def _prior_call(s: Subject, p: Problem, called: tuple, mk: dict):
    """The problem's prior call (PRIOR_CALLS) on fresh inputs of the subject's shapes, or on the judged call's own
    (``called``, ``mk``) for the kinds that repeat it: (its output, a copy of it taken as it was returned), or None
    where the impl refused it (SDPA refuses is_causal with a mask; a refusal is no verdict here) or returned no tensor
    (a single call's verdict)."""
    out = _prior_output(s, p, called, mk)
    if not torch.is_tensor(out):
        return None
    return out, out.clone()  # (bit for bit: clone copies NaN payloads and signed zeros as they are)


def _writable(x) -> bool:
    return torch.is_tensor(x) and x.numel() > 0 and all(st != 0 or n <= 1 for n, st in zip(x.shape, x.stride()))


def _on_written_buffers(s: Subject, called: tuple, mk: dict):
    """The call on ``called`` and ``mk``'s mask holding other values (q, k, v negated and rolled along the sequence,
    the mask rolled along the keys), then each buffer written back in place to the judged values. None where it was
    refused. Buffers of stride 0 (expanded) are left as they are: no caller writes into them."""
    kw = {**s.kwargs(), **mk}
    buffers = [x for x in (*called, mk.get("attn_mask")) if _writable(x) and not x.requires_grad]
    kept = [x.clone() for x in buffers]
    with torch.no_grad():
        for x in buffers:
            other = x.roll(1, -1) if x is mk.get("attn_mask") else -x.roll(1, -2)
            x.copy_(other)
        try:
            out = s.impl(*called, **kw)
        except Exception:  # noqa: BLE001  (refused: nothing was kept)
            out = None
        finally:
            for x, was in zip(buffers, kept):
                x.copy_(was)  # (the caller's in-place write: the same storage, new values and version)
    return out


def _prior_output(s: Subject, p: Problem, called: tuple, mk: dict):
    if p.prior is None:
        return None
    if p.prior == "other dtype":
        dtype = getattr(torch, p.prior_dtype or PRIOR_DTYPES[p.dtype][0])
        gen = s.rng("prior dtype call")
        q, k, v = (randn(gen, *x.shape, dtype=dtype).to(device=x.device, dtype=dtype) for x in called)
        m = mk.get("attn_mask")
        kw = {**s.kwargs(), **({} if m is None else {"attn_mask": m if m.dtype == torch.bool else m.to(dtype)})}
        try:
            with torch.no_grad():
                return s.impl(q, k, v, **kw)
        except Exception:  # noqa: BLE001  (refused: a dtype the impl does not serve; nothing was kept)
            return None
    if p.prior == "same buffers, written":
        return _on_written_buffers(s, called, mk)
    if p.prior in ("same call, output written", "other strides", "under inference_mode"):
        kw = {**s.kwargs(), **mk}
        if p.prior == "other strides":
            others = [(x, _other_strides(x)) for x in called]
            called = tuple(x if other is None else other for x, other in others)
            other = _other_strides(mk["attn_mask"]) if "attn_mask" in mk else None
            if other is not None:
                kw["attn_mask"] = other
        try:
            with torch.inference_mode() if p.prior == "under inference_mode" else torch.no_grad():
                out = s.impl(*called, **kw)
        except Exception:  # noqa: BLE001  (refused: nothing was kept)
            return None
        # written into unless it shares memory with what the caller passed (that is aliased-inputs' verdict)
        mine = {x.untyped_storage().data_ptr() for x in (*called, *mk.values()) if torch.is_tensor(x)}
        if (p.prior == "same call, output written" and torch.is_tensor(out) and out.is_floating_point()
                and not out.is_inference() and out.untyped_storage().data_ptr() not in mine):
            with torch.no_grad():
                out.fill_(float("nan"))
        return out
    gen = s.rng("prior call")
    q, k, v = (s.randn(gen, *x.shape) for x in (s.q, s.k, s.v))
    bias = s.randn(gen, p.n_q, p.n_k)  # (Nq, Nk)
    extra = {"causal and mask": {"is_causal": True, "attn_mask": bias}, "mask": {"attn_mask": bias, "is_causal": False},
             "causal": {"is_causal": not p.causal}, "dropout": {"dropout_p": 0.5}, "scale": {"scale": 0.5}}[p.prior]
    devices = [] if torch.device(s.device).type == "cpu" else [torch.device(s.device)]
    try:  # (torch's RNG as it was: the prior dropout call draws from it)
        with torch.no_grad(), torch.random.fork_rng(devices=devices):
            return s.impl(q, k, v, **{**s.kwargs(), **extra})
    except Exception:  # noqa: BLE001  (refused: nothing was kept)
        return None


def _kwargs(s: Subject, p: Problem, m) -> dict:
    kw = s.kwargs()
    return kw if m is None else {**kw, "attn_mask": m}


def _agreement(s: Subject, p: Problem, m, r) -> Outcome:
    clean = None
    if p.input_nan:  # the clean problem's golden values set the bound; one element of the input made NaN
        clean = s.reference(attn_mask=m)
        clean_input = getattr(s, p.input_nan)
        x = clean_input.clone()
        where = _rng(p.seed, "input nan")
        at = [where.randrange(n) for n in x.shape]
        if p.underflow and p.input_nan in ("k", "v"):
            at[-2] = where.randrange(max(1, p.n_k // 2))  # a key whose weights underflow
        x[tuple(at)] = float(p.input_value)
        setattr(s, p.input_nan, x)
    q, k, v = views = _views(p.layout, (s.q, s.k, s.v), r)
    # the plain reference's error on these very views: BLAS takes another accumulation order for
    # another layout (measured: float32, D = 320, scale 2, transposed storage: 5.2e-05 on the
    # views against 1.0e-05 on contiguous copies of the same values, SDPA math equal to the former);
    # taken on copies of them made before the impl runs (it may write into them; copies keep the strides)
    kept = tuple(ref.copy(x) for x in views)
    *called, mk = _call_form(p, q, k, v, m)
    earlier = _prior_call(s, p, tuple(called), mk)  # (alive until the judged call returned)
    context = p.context
    if p.prior == "under inference_mode":  # a training call after an inference one: q requires grad, autograd on
        called[0], context = called[0].detach().requires_grad_(), "enable_grad"
    kept_mask = None if m is None else ref.copy(m)
    out = s.run_fresh(*called, context, **mk)
    untouched((*views, m), (*kept, kept_mask), ("q", "k", "v", "attn_mask"))
    if earlier is not None:
        unchanged(earlier, "the earlier call's output")
    out = out.reshape(p.batch, p.q_heads, p.n_q, p.value_dim)  # (B, Hq, Nq, Dv) whatever the rank
    if clean is not None:  # NaN exactly in the outputs that depend on it (nan-propagation's rule)
        from kernels.harness.edges import nan_placement

        gold = ref.attention64(s.q.cpu(), s.k.cpu(), s.v.cpu(), **_kwargs(s, p, None if m is None else m.cpu()))
        o, said = nan_placement(s, out.cpu().double(), gold, clean)
        if failed(o):
            # Two kinds of row where either answer is defensible, each judged by the one the impl gave:
            # - every score -inf, one at least made so by the infinite input (one key, -inf in q; or the keys causal
            #   leaves it): SDPA math gives 0 there without causal (its safe softmax, measured) and NaN with it, a
            #   plain softmax 0/0 = NaN, which shows the bad input rather than hiding it;
            # - no visible key in the clean problem (a mask or causal hides every one), the input's element in it:
            #   the row's answer does not depend on q, k or v, and SDPA math's added mask makes NaN of a NaN score
            #   where a kernel selecting by the mask gives the clean row's answer
            kw = _kwargs(s, p, None if m is None else ref._float64_mask(m.cpu()))

            def empty_rows(q, k):  # (B, Hq, Nq, 1)
                return torch.isneginf(ref.scores(q.cpu().double(), k.cpu().double(), **kw)).all(-1, keepdim=True)

            unpoisoned = {"q": s.q, "k": s.k, p.input_nan: clean_input}
            hidden_before = empty_rows(unpoisoned["q"], unpoisoned["k"])
            made_empty = empty_rows(s.q, s.k) & ~hidden_before
            got = out.cpu().double()
            either = gold
            for rows, other in ((made_empty, gold.masked_fill(made_empty, math.nan)), (hidden_before, clean.value)):
                # (per row: the other answer where the impl's non-finite pattern is the other's)
                same_kind = (torch.isfinite(got) == torch.isfinite(other)).all(-1, keepdim=True)
                either = torch.where(rows & same_kind, other, either)
            if bool((made_empty | hidden_before).any()):
                o2, said2 = nan_placement(s, got, either, clean)
                if not failed(o2):
                    o, said = o2, (f"{said2} (a row of -inf scores only, or of no visible key: NaN, or the row's "
                                   f"answer without the non-finite input)")
        return Outcome(o.discrepancy, o.bound, f"{p.input_value} in {p.input_nan}: {said}")
    if p.mask_nonfinite and m is not None:  # NaN exactly in the rows the entry reaches, as in float64 (nan-propagation's rule)
        from kernels.harness.edges import nan_placement

        clean = s.reference(attn_mask=_mask(s, p, poisoned=False))
        gold = ref.attention64(s.q.cpu(), s.k.cpu(), s.v.cpu(), **s.kwargs(attn_mask=m.cpu()))
        o, said = nan_placement(s, out.cpu().double(), gold, clean)
        return Outcome(o.discrepancy, o.bound, f"{p.mask_nonfinite} in the mask: {said}")
    rows = sampled_rows(p)
    if rows is not None:  # each output row is its own query's: the sampled rows' golden values judge them exactly
        golden = s.reference(kept[0].index_select(-2, rows.to(kept[0].device)), *kept[1:],
                             attn_mask=_rows_mask(p, m, rows), is_causal=False)
        o = against(s, out.index_select(-2, rows.to(out.device)), golden)
        o = Outcome(o.discrepancy, o.bound, f"{len(rows)} sampled query rows of {p.n_q}")
        return _summation_bounded(s, p, o, *kept) if s.dtype == torch.float64 else o
    golden = s.reference(*kept, attn_mask=m)
    if p.mask_far is not None and m is not None:
        # a far row's scores all round to its mask value, in float32 as in float64: its answer is the
        # plain mean of v whatever the rounding, so the rounding of its 1e20-sized logits bounds nothing
        far = (m.cpu() == torch.tensor(p.mask_far, dtype=m.dtype)).all(-1, keepdim=True)  # broadcasts over (B, Hq, Nq, Dv)
        golden = golden._replace(sensitivity=torch.where(far, 0.0, golden.sensitivity))
    o = against(s, out, golden)
    if STRIDE_ZERO.get(p.layout) == ("kv", 2) or s.dtype == torch.float64:
        o = _summation_bounded(s, p, o, *kept)
    if m is None and p.layout == "contiguous" and not p.empty:
        from kernels.harness.rounding_bound import ATTRIBUTE, check

        # a declared recipe: its derived bound too, in the dtypes a recipe is of (float64 has none: its problems took
        # the recipe's ValueError for the impl's refusal, and passed unjudged, until errors outside the impl's calls
        # were told apart)
        if getattr(s.impl, ATTRIBUTE, None) is not None and s.dtype != torch.float64:
            d = check(s)
            return worst([o, d], [f"low-precision rule {o.figures}", d.detail])
    return o


def _rows_mask(p: Problem, m, rows: torch.Tensor):
    """The mask of the query rows ``rows`` alone, for golden values of those rows' sub-problem: causal's as an explicit
    (R, Nk) mask (top-left, by the rows' own positions), a mask with a query dim its rows, a mask without one as it is."""
    if p.causal:
        return torch.arange(p.n_k) <= rows[:, None]  # (R, Nk)
    if m is not None and m.dim() >= 2 and m.shape[-2] == p.n_q:
        return m.index_select(-2, rows.to(m.device))
    return m


def _summation_bounded(s: Subject, p: Problem, o: Outcome, q, k, v) -> Outcome:
    """``o`` with its bound raised to recursive summation's worst case (Higham, Accuracy and Stability, §4.2) over
    the problem's Nk keys in the accumulator's unit roundoff u (float32's for the half types): 2·Nk·u·max|v| bounds
    the error of both sums (weights and weighted values) in any order and any blocking; a row with no visible key is
    still 0 exactly. Where the rule's scale (the plain reference's own error) is no bound of a correct kernel:
    - one key repeated (k, v of stride 0 along the keys): the plain reference's weights are equal and its sums
      nearly exact (red team rt46h's blocked online softmax: 4.5e-13 in float64 over 31 843 keys, 56× the rule);
    - float64, which has no wider accumulator: a blocked loop's sequential block sums over 2¹⁷ keys or more err
      1.5-1.9× the rule (red team rt48's correct FlashAttention-2 loop and split-K decode: 2.13e-14 against 1.13e-14 at
      Nk = 131 073). The bound is still below float32's unit roundoff past 2²⁹ keys, so float64 computed in
      float32 anywhere fails it by orders of magnitude.
    In float64 the scores' own sums over D channels are bounded the same way: |δs| ≤ D·u·|scale|·max‖q_i‖·max‖k_j‖
    (Cauchy-Schwarz on Σ|q_i,d·k_j,d|), which moves the output by at most 2·max|δs|·max|v| (softmax's weights move
    by p∘(δ − p·δ)); the golden value, float64 too, errs as much. The floor's four roundings of each score stand for
    D of a few: past D ≈ 400, SDPA math itself erred 1.07-1.3× the rule against the float64 golden value (seed 1's
    covering rows: D = 426 and 953, measured), its scores' sums rounding past four roundings' worth. (Not where one
    key repeats: its scores are equal, its weights exact whatever they round to.)"""
    if p.n_k <= 1:
        return o
    u = 2.0 ** -53 if s.dtype == torch.float64 else 2.0 ** -24
    def largest(x):  # (of the finite entries: the others read as 0, without a copy of the finite ones)
        return float(x.detach().abs().nan_to_num(0.0, 0.0, 0.0).amax()) if x.numel() else 0.0
    summed = 2 * p.n_k * u * largest(v)
    said = "2·Nk·u·max|v|"
    if s.dtype == torch.float64 and q.numel() and k.numel():
        norm = lambda x: largest(torch.linalg.vector_norm(x.detach().nan_to_num(0, 0, 0), dim=-1))  # noqa: E731
        scale = s.kwargs()["scale"]
        scale = abs(ref.default_scale(q.shape[-1]) if scale is None else scale)
        summed += 2 * 2 * q.shape[-1] * u * scale * norm(q) * norm(k) * largest(v)
        said += " + 4·D·u·|scale|·max‖q‖·max‖k‖·max|v|"
    if o.bound >= summed:
        return o
    return Outcome(o.discrepancy, summed, f"{o.detail} (bound {said} = {summed:.3g}, recursive summation's)")


# B·Hq·Nq·Nk of a forward problem past which only sampled query rows get golden values (O(rows·Nk·D) in float64, not
# O(Nq·Nk·D)): the size classes of long prefills (paths.py; 4096 queries over 4096 keys, 1.5 CPU-s judged whole)
SAMPLE_ABOVE = 2 ** 22
SAMPLED_ROWS = 48
# the covering paths whose dropout rows are judged at the path's own sizes through V's columns, q = k = 0, no mask
# and no causal (dropout_lags.path_key_lags), where V = I would be O(Nk²) a slice
KEY_LAG_PATHS = ("decode", "spec-decode", "prefill", "longest-decode", "tiles", "batched-decode", "long-context")


def sampled_rows(p: Problem) -> torch.Tensor | None:
    """The query rows judged of a problem past SAMPLE_ABOVE scores (None: every row): the first and the last, the
    rows on each side of a few 64-row tile edges, and random ones."""
    # a covering row's score of broad heads counts as (D + Dv) / 32 narrow ones: its path's least sizes are past the
    # cost the halving aims at (paths.SCORES), and broad heads were left off the long paths until red team rt48's
    # escapes (a tiles path's second 128-channel chunk, a prefill workspace's 64 value channels)
    width = 1 if p.path is None else max(1, (p.head_dim + p.value_dim) // 32)
    if p.batch * p.q_heads * p.n_q * p.n_k * width <= SAMPLE_ABOVE or p.n_q <= SAMPLED_ROWS:
        return None
    r = _rng(p.seed, "sampled rows")
    edges = r.sample(range(64, p.n_q, 64), min(SAMPLED_ROWS // 4, (p.n_q - 1) // 64))
    picked = {0, p.n_q - 1} | {e - 1 for e in edges} | set(edges)
    picked |= set(r.sample(range(p.n_q), SAMPLED_ROWS - len(picked)))
    return torch.tensor(sorted(picked))


def _at_rank(impl, p: Problem):
    """impl called on (B, H, N, D) leaves at the problem's rank (_call_form: the mask at that rank too), its output
    given back as (B, Hq, Nq, Dv): the impl's backward runs on the rank-3 or rank-5 tensors it was given, and the
    reshapes between carry its gradients to the leaves exactly."""
    def called(q, k, v, attn_mask=None, **kwargs):
        *at_rank, mk = _call_form(p, q, k, v, attn_mask)
        out = impl(*at_rank, **kwargs, **mk)
        checked_output(out, at_rank[0], at_rank[2])  # (its shape at the rank it was called at)
        return out.reshape(*q.shape[:-1], v.shape[-1])
    return called


# the paths whose gradient rows are judged on sampled rows of dO (_sampled_gradients): a training step's backward past
# 4096 queries and keys, where float64 autograd over every score costs tens of CPU-s a row, and the training steps'
# 512-2048 queries of two entries (paths.training)
SAMPLED_BACKWARD_PATHS = ("long-backward", "training")


def _sampled_gradients(s: Subject, p: Problem, m, tensors, rows) -> Outcome:
    """One backward of q, k and v (paths.problem draws them all, and no mask's gradient, on these paths), dO zero but
    on the query rows ``rows``. Then dP and D = rowsum(dO∘O) are 0 on the
    other rows, so is dS = P∘(dP − D), and dq there is 0 exactly, while dk and dv sum over ``rows`` alone: the golden
    gradients are the sub-problem's of q's rows (causal's as an explicit mask of those rows), O(rows·Nk·D) in float64
    where the whole backward's are O(Nq·Nk·D). (Red team rt48: a recompute backward taken past 4096 queries and keys,
    dk without the scale, dv overwritten by each 2048-query chunk, where the longest drawn backward was 2176².)"""
    dout = torch.zeros_like(s.dout)
    dout[..., rows, :] = s.dout[..., rows, :]
    out = s.impl(*tensors, **_kwargs(s, p, m))
    checked_output(out, tensors[0], tensors[2])
    attached(out, tensors)
    got = [g.detach().cpu() for g in backward_by(p.caller)(lambda: torch.autograd.grad(out, tensors, dout.to(out.dtype)))]
    sub = {"is_causal": False, "attn_mask": _rows_mask(p, m, rows)}
    q_rows, d_rows = s.q.index_select(-2, rows.to(s.q.device)), s.dout.index_select(-2, rows.to(s.dout.device))
    on = lambda device: {n: x.to(device) if torch.is_tensor(x) else x for n, x in sub.items()}  # noqa: E731
    _, gold = ref.output_and_grads(ref.attention, q_rows.cpu(), s.k.cpu(), s.v.cpu(), d_rows.cpu(), upcast=True,
                                   **s.kwargs(**on("cpu")))
    _, plain = ref.output_and_grads(ref.attention, q_rows, s.k, s.v, d_rows, **s.kwargs(**on(s.q.device)))
    scales = s.gradient_sizes_for(q=q_rows, dout=d_rows, **on("cpu"))
    at_rows = (got[0].index_select(-2, rows), *got[1:])
    o = gradients_against(s, at_rows, gold, tuple(g.cpu() for g in plain), scales)
    others = torch.ones(p.n_q, dtype=torch.bool)
    others[rows] = False
    stray = tol.max_abs_error(got[0][..., others, :], torch.zeros(()))
    floor = tol.floor(s.dtype, 0.0)
    return worst([o, Outcome(stray, floor)],
                 [f"dO zero but on {len(rows)} sampled query rows of {p.n_q}: {o.detail}",
                  f"dq off those rows (0 exactly) {stray:.3g}/{floor:.3g}"])


def _gradients(s: Subject, p: Problem, m, r) -> Outcome:
    tensors = [ref.copy(_view(x, p.layout, r, n)[:1 if p.kv_broadcast and n != "q" else None])
               .requires_grad_(n in p.grads) for x, n in zip((s.q, s.k, s.v), "qkv")]  # (k, v broadcast: batch 1)
    if p.leaves == PARAMETERS:  # (the same storage, strides and offset, as a Parameter)
        tensors = [torch.nn.Parameter(t.detach(), requires_grad=t.requires_grad) for t in tensors]
    if p.rank != 4 and not p.kv_broadcast:
        s.impl = _at_rank(s.impl, p)
    if (p.path in SAMPLED_BACKWARD_PATHS and p.grads == "qkv" and not p.mask_grad and not p.kv_broadcast
            and (rows := sampled_rows(p)) is not None):
        return _sampled_gradients(s, p, m, tensors, rows)
    g = s.backward(attn_mask=m) if m is not None else s.base_backward
    gold, plain, out_golden = g.gold, g.plain, (s.reference(attn_mask=m) if m is not None else s.base)
    scales = s.gradient_sizes_for(attn_mask=m)
    if p.layout != "contiguous" or p.kv_broadcast:  # the plain reference on these very views, as _agreement's
        plain = tuple(x.cpu() for x in ref.output_and_grads(ref.attention, *tensors, s.dout, **_kwargs(s, p, m))[1])
        out_golden = s.reference(*(x.detach() for x in tensors), attn_mask=m)
    summed = lambda xs: xs if not p.kv_broadcast else tuple(  # noqa: E731  (k, v one entry repeated over the batch:
        x if i == 0 or not torch.is_tensor(x) else x.sum(0, keepdim=True) for i, x in enumerate(xs))  # theirs summed)
    gold, scales = summed(gold), type(scales)(summed(scales.sizes), summed(scales.sensitivities))
    # dO with one non-finite element (backward_values): the clean dO's values above set the bound of the finite entries
    clean_dout, said = s.dout, [] if p.grad_context == "enable_grad" else [f"under {p.grad_context}"]
    dout = bv.poisoned(s, _kwargs(s, p, m), p.dout_value)
    nonfinite = None
    if dout is not None:
        s.dout, nonfinite = dout[0], summed(bv.golden(s, dout[0], _kwargs(s, p, m)))
        said.append(f"dO{list(dout[1])} = {p.dout_value}")
    elif p.dout_value is not None:
        said.append(f"dO finite (no row sees every key, scale 0 or one key: {p.dout_value} not placed)")
    try:
        outcomes, details = subset_gradients(s, tensors, _kwargs(s, p, m), gold, plain, scales, p.sequence, out_golden,
                                             p.grad_context, nonfinite, bv.placed, backward_by(p.caller))
    finally:
        s.dout = clean_dout  # (the learned mask's gradient below: the clean dO's)
    details = said + details
    if p.mask_grad and m is not None:
        from kernels.harness.masks import broadcast_gradient_relation, mask_gradient_outcome

        leaf = m.detach().requires_grad_()  # the mask's own storage form, a leaf
        try:
            out = s.impl(*tensors, **_kwargs(s, p, leaf))
        except Exception as exc:  # a mask requiring grad may be refused (contract item mask-gradient)
            details.append(f"mask gradient refused ({type(exc).__name__})")
        else:
            checked_output(out, s.q, s.v)
            got = backward_by(p.caller)(lambda: torch.autograd.grad(out, leaf, ref.copy(s.dout), allow_unused=True)[0]
                                        ) if out.requires_grad else None
            o = (Outcome(math.inf, 0.0) if got is None
                 else mask_gradient_outcome(s, got, leaf, s.kwargs()))
            outcomes.append(o)
            details.append("dmask missing" if got is None else f"dmask {o.figures}")
            summed = None if got is None else broadcast_gradient_relation(
                s, lambda mask: s.impl(*tensors, **_kwargs(s, p, mask)), got, leaf)
            if summed is not None:
                outcomes.append(summed)
                details.append(f"{summed.detail} {summed.figures}")
    return worst(outcomes, details)


def _dropout(s: Subject, p: Problem, m, r) -> Outcome:
    """One seeded call with V = I, q, k, V requiring grad as drawn (and the mask when it is learned): the
    output W = P∘M/(1-p) by the mask law, and the asked gradients against float64 with the same M; where the
    gradients needed autograd on and the problem drew another mode (no_grad, inference_mode), the same seeded
    call again in that mode, its W by the law too."""
    from kernels.harness import dropout as drop
    from kernels.harness.dropout_lags import axis_periods, path_key_lags

    if p.path in KEY_LAG_PATHS:  # V = I over the path's keys is O(Nk²) a slice: the masks read through V's columns
        def seeded_call(q, k, v):  # (B, Hq, Nq, Dv)
            *called, mk = _call_form(p, q, k, v, None)
            with drop.seeded(s, 0), calling_context(p.context):
                out = s.impl(*called, **{**s.kwargs(), **mk}, dropout_p=p.dropout_p)
            return checked_output(out, called[0], called[2]).reshape(p.batch, p.q_heads, p.n_q, v.shape[-1])

        return path_key_lags(s, p.batch, p.q_heads, p.kv_heads, p.n_q, p.n_k, p.dropout_p, seeded_call)
    v1 = drop.one_hot_values(s)
    leaf = m.detach().requires_grad_() if p.mask_grad and m is not None else None
    # forward-only: V = [I, I], each key one-hot in two channels Nk apart (in two channel blocks of any split from 1 to
    # Nk), whose keep masks must be the same: dropout drops a weight, for every output channel at once
    twice = not p.grads and leaf is None
    v1 = torch.cat([v1, v1], dim=-1) if twice else v1  # (B, Hkv, Nk, Nk or 2·Nk)
    tensors = [ref.copy(x).requires_grad_(n in p.grads) for x, n in zip((s.q, s.k, v1), "qkv")]
    d_o = s.randn("dropout dO", *s.q.shape[:-1], p.n_k)
    details = []
    mode = p.context if leaf is None and not p.grads else "enable_grad"  # (gradients need a graph)

    def call(mask, *given):  # W (B, Hq, Nq, Nk) of one call in the problem's form (rank, broadcast k, v: no grads)
        *called, mk = _call_form(p, *(given or tensors), mask)
        w = s.impl(*called, **{**s.kwargs(), **mk}, dropout_p=p.dropout_p)
        return checked_output(w, called[0], called[2]) if p.rank != 4 or p.kv_broadcast else w

    with drop.seeded(s, 0), calling_context(mode):
        try:
            w = call(m if leaf is None else leaf)
        except Exception as exc:  # a mask requiring grad may be refused (contract item mask-gradient)
            if leaf is None:
                raise
            details.append(f"mask gradient refused ({type(exc).__name__})")
            leaf = None
            w = call(m)
        if p.grads or leaf is not None:
            attached(w, [*tensors, *([leaf] if leaf is not None else [])])
        w = w.reshape(p.batch, p.q_heads, p.n_q, v1.shape[-1])  # (B, Hq, Nq, Nk or 2·Nk) whatever the rank
        checked_output(w, s.q, v1)
        counted = drop._probabilities(s, attn_mask=m) > drop.P_FLOOR
        channels = (drop.same_keep_mask(w[..., p.n_k:], w[..., :p.n_k], counted, "the second copy of V's channels")
                    if twice else None)
        w = w[..., :p.n_k]  # (B, Hq, Nq, Nk)
        w64 = w.detach().cpu().double()
        law = drop._mask_law(s, w64, attn_mask=m, p=p.dropout_p, with_bias=False)
        # (red team rt40h: one mask shared by a broadcast k's batch entries, or by a mask's broadcast heads)
        shared = drop.slices_independent(w64, counted, p.dropout_p)
        law = law if shared is None else worst([law, shared], [law.detail, f"slices: {shared.detail}"])
        periods = axis_periods(w64, counted, p.dropout_p)
        law = law if periods is None else worst([law, periods], [law.detail, f"periods: {periods.detail}"])
        if w.requires_grad:
            other = None
            if p.sequence == "two-layers":  # a dropout call of the same shape (other values) before our backward
                other = s.impl(*(t.detach().flip(-2).requires_grad_(t.requires_grad) for t in tensors),
                               **_kwargs(s, p, m), dropout_p=p.dropout_p)
            if p.sequence == "retain-graph":  # the judged backward is the second through this graph (red team
                # rt42h: a keep mask freed by the first backward, redrawn by the second, escaped single backwards)
                asked = [t for t in tensors if t.requires_grad] + ([leaf] if leaf is not None else [])
                torch.autograd.grad(w, asked, d_o.to(w.dtype), retain_graph=True, allow_unused=True)
            outcomes, said = drop.dropped_gradients(s, w, tensors, leaf, _kwargs(s, p, leaf if leaf is not None else m),
                                                    p.dropout_p, d_o)
            del other  # (kept alive until our backward ran, as a model's next layer is)
        elif any(t.requires_grad for t in tensors) or leaf is not None:
            outcomes, said = [Outcome(math.inf, 0.0)], ["the output has no grad_fn"]
        else:
            outcomes, said = [], []
    if channels is not None:
        outcomes, said = outcomes + [channels], said + [channels.detail]
    # The same seeded call again, in another grad mode (the drawn one, where the gradients needed autograd on) and from
    # the harness's other thread: torch.manual_seed fixes the keep mask whatever the mode and the calling thread, which
    # activation checkpointing relies on (its forward runs under no_grad, its recompute with grad under the restored
    # RNG state) and a pool of serving threads too (red team rt50: uniforms drawn in another order without grad; a
    # generator of each thread's own, seeded once). Its weights are judged by the law as well.
    other = p.context if mode != p.context else "no_grad" if mode == "enable_grad" else "enable_grad"
    with drop.seeded(s, 0), calling_context(other):
        again = on_worker(lambda: call(m, *(t.detach() for t in tensors)))
        again = checked_output(again.reshape(w.shape[:-1] + (v1.shape[-1],)), s.q, v1)[..., :p.n_k]  # (B, Hq, Nq, Nk)
    o = drop._mask_law(s, again.detach().cpu().double(), attn_mask=m, p=p.dropout_p, with_bias=False)
    same = drop.same_keep_mask(again, w, counted, f"the same seed under {other} on another thread")
    outcomes, said = outcomes + [o, same], said + [f"under {other} on another thread: {o.detail}", same.detail]
    return worst([law] + outcomes, [law.detail] + said + details)


def _metamorphic(s: Subject, p: Problem, m, r) -> Outcome:
    kw = {} if m is None else {"attn_mask": m}
    base = s.run(**kw), s.reference(**kw)
    if p.batch >= 2 and (m is None or m.shape[0] == 1 or m.dim() < 4):
        i = r.randrange(p.batch)
        one = [x[i:i + 1] for x in (s.q, s.k, s.v)]
        alone = s.run(*one, **kw), s.reference(*one, **kw)
        gold_i = base[1].rows(slice(None))
        sliced = gold_i._replace(value=gold_i.value[i:i + 1], sensitivity=gold_i.sensitivity[i:i + 1])
        # (lse_size, a tensor only for a declared log-sum-exp merge, taken whole: its largest bounds the entry's)
        o = relation(s, base[0][i:i + 1], sliced, *alone)
        return Outcome(o.discrepancy, o.bound, f"batch entry {i} alone: {o.figures}")
    if not p.causal and p.n_k > 1:
        perm = torch.randperm(p.n_k, generator=torch.Generator().manual_seed(p.seed))
        k, v = s.k[:, :, perm], s.v[:, :, perm]
        # (a query mask, key dim 1, broadcasts over the permuted keys as it is)
        mk = {} if m is None else {"attn_mask": m if m.shape[-1] == 1 else m[..., perm.to(m.device)]}
        o = relation(s, s.run(k=k, v=v, **mk), s.reference(k=k, v=v, **mk), *base)
        return Outcome(o.discrepancy, o.bound, f"keys permuted: {o.figures}")
    if m is not None and m.dtype == torch.bool:
        additive = s.cast(torch.zeros(m.shape, dtype=torch.float64).masked_fill(~m.cpu(), float("-inf")))
        o = relation(s, s.run(attn_mask=additive), s.reference(attn_mask=additive), *base)
        return Outcome(o.discrepancy, o.bound, f"bool mask ≡ additive 0/-inf: {o.figures}")
    return against(s, base[0], base[1])


_JUDGES = {AGREEMENT: _agreement, GRADIENTS: _gradients, DROPOUT_LAW: _dropout, METAMORPHIC: _metamorphic}


def _in_form(impl, form: str):
    """impl called with its arguments past q, k, v in ``form`` (ARGUMENT_FORMS); the harness calls the result as it
    calls SDPA, by keyword. An impl that cannot take six positional arguments is called by keyword (a positional
    caller gets a TypeError from it: loud, not wrong)."""
    from kernels.harness.features import takes_positional

    if form == "keywords" or form == "positional" and not takes_positional(impl):
        return impl
    if form == "positional":
        def called(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, **kwargs):
            # the keyword-only ones left out at their defaults, as nn.MultiheadAttention's call leaves them
            kwargs = {name: x for name, x in kwargs.items() if not (name, x) in (("scale", None), ("enable_gqa", False))}
            return impl(q, k, v, attn_mask, dropout_p, is_causal, **kwargs)
        return called
    as_p, as_scale = ((np.float32, np.float64) if form == "numpy scalars"
                      else (lambda x: torch.tensor(x, dtype=torch.float64),) * 2)

    def called(q, k, v, **kwargs):  # (only the arguments the harness passes: an impl may lack attn_mask, dropout_p)
        if "dropout_p" in kwargs:
            kwargs["dropout_p"] = as_p(kwargs["dropout_p"])
        if kwargs.get("scale") is not None:
            kwargs["scale"] = as_scale(kwargs["scale"])
        return impl(q, k, v, **kwargs)
    return called


def check_problem(impl, problem: Problem, device: str = "cpu") -> tuple[Outcome, str | None]:
    """(outcome, None) or, when impl raised, (a passing outcome, the refusal's text). A problem whose calls left
    the process changed (edges.process_watched), refused or not, fails whatever its values: global state is judged
    around every drawn problem's calls, not around one case's (contract item "global-state")."""
    from kernels.harness.edges import process_watched

    with process_watched() as changed:
        threads = torch.get_num_threads()
        torch.set_num_threads(problem.threads)
        try:
            with machine_of(problem.threads) if problem.threads > 1 else contextlib.nullcontext():
                outcome, refused = _judged(impl, problem, device)
        finally:
            during = torch.get_num_threads()
            torch.set_num_threads(threads)  # (process_watched compares around this: a change the call made is below)
        if during != problem.threads:
            changed.append(f"intra-op threads (set to {during} by the call, from {problem.threads})")
    if changed:
        return Outcome(math.inf, 0.0, f"the calls left the process changed: {', '.join(changed)}"
                                      + (f" (the impl refused: {refused})" if refused else "")), None
    return outcome, refused


_RAISED = "_raised_by_the_impl"


def _marking(impl):
    """impl, each exception it raises marked as its own: only those are its refusals (_judged). Without the mark a
    defect of the harness raised while judging (a division by zero on an empty problem, an FFT of length 0) read as
    the impl refusing the problem, and the problem passed unjudged."""
    @functools.wraps(impl)
    def marked(*args, **kwargs):
        try:
            return impl(*args, **kwargs)
        except Exception as exc:
            setattr(exc, _RAISED, True)
            raise
    from kernels.harness.rounding_bound import WRAPPED

    setattr(marked, WRAPPED, getattr(impl, WRAPPED, impl))  # (so recipe_for finds the impl's declared recipe)
    return marked


def _raised_by_the_impl(exc: BaseException) -> bool:
    """Raised in an impl call, or by autograd running the impl's graph (its backward: a custom Function's, a version
    counter it left, an output it detached)."""
    if getattr(exc, _RAISED, False):
        return True
    autograd = os.path.join("torch", "autograd", "")
    return any(autograd in frame.f_code.co_filename for frame, _ in traceback.walk_tb(exc.__traceback__))


def _judged(impl, problem: Problem, device: str) -> tuple[Outcome, str | None]:
    called = _in_form(_marking(called_by(impl, problem.caller)), problem.arguments)
    if not problem.enable_gqa:  # the impl is told enable_gqa=False; the golden values are GQA's, the same sums
        formed = called

        def called(*args, **kwargs):
            return formed(*args, **{**kwargs, "enable_gqa": False})
    s = Subject(called, problem.case(), getattr(torch, problem.dtype), device, problem.seed)
    if problem.magnitude:
        _near_the_top(s)
    if problem.late_values:
        _late_values(s)
    if problem.small_values:
        s.v, s.value_unit = s.v * 2.0 ** -problem.small_values, 2.0 ** -problem.small_values
    if problem.underflow:
        _underflowing_keys(s)
    if problem.zero_tails:
        _zero_tails(s)
    if problem.kv_broadcast and _split_batch(problem):  # (B/2 entries, each repeated over its pair: _call_form)
        s.k, s.v = (x.unflatten(0, (problem.batch // 2, 2))[:, :1].expand(problem.batch // 2, 2, *x.shape[1:])
                    .flatten(0, 1).contiguous() for x in (s.k, s.v))  # (B, Hkv, Nk, D)
    elif problem.kv_broadcast:
        s.k, s.v = (x[:1].expand(x.shape).contiguous() for x in (s.k, s.v))  # (B, Hkv, Nk, D): one entry, repeated
    for name in ("q", "k", "v") if problem.layout in STRIDE_ZERO else ():
        inputs, dim = STRIDE_ZERO[problem.layout]
        if name in inputs:  # one row (q) or one key (k, v) repeated along the sequence, or one head or entry of k, v
            x = getattr(s, name)
            setattr(s, name, x.narrow(dim, 0, 1).expand(x.shape).contiguous())  # (B, H, N, D)
    r = _rng(problem.seed, "layout")
    try:
        m = _mask(s, problem)
    except Exception as exc:  # the harness's own mask maker on a degenerate shape (Nk = 0)
        return Outcome(0.0, 0.0, f"no mask for this shape: {exc}"), "skipped"
    if problem.magnitude or problem.large_values:
        _large_outputs(s, problem, m)
    try:
        return _JUDGES[problem.relation](s, problem, m, r), None
    except BadOutput as exc:  # it answered, wrongly: a failure, not a refusal
        return Outcome(math.inf, 0.0, str(exc)), None
    except Exception as exc:  # a refusal: honest, not a failure, unless of a mask's form alone (docstring)
        text = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"[:200]
        if not _raised_by_the_impl(exc):
            where = traceback.extract_tb(exc.__traceback__)[-1]
            return Outcome(math.inf, 0.0, f"the harness could not judge this problem ({text}, raised at "
                                          f"{os.path.basename(where.filename)}:{where.lineno}, outside the impl's "
                                          f"calls): a harness defect or an output it could not read"), None
        if "Inference tensors" in str(exc) and problem.context != "inference_mode":
            # torch's own error for an inference tensor saved for backward: the caller passed none and called outside
            # inference_mode, so the impl kept one from an earlier call (a cached causal mask built under
            # inference_mode: red team rt43h) or made one itself. Never an honest refusal; no call without the
            # earlier one can show it in this process (the impl's cache stays)
            return Outcome(math.inf, 0.0, f"refused with an inference tensor of its own ({text})"), None
        twin = replace(problem, mask="(1, 1, 1, Nk)")
        if problem.mask == ONE_DIM_MASK and check_problem(impl, twin, device)[1] is None:
            # a (Nk,) mask refused, its (1, 1, 1, Nk) twin accepted: SDPA's own default CPU dispatch refuses it
            # (torch 2.13, measured: IndexError 'Dimension out of range' unless dropout or the math backend runs), so
            # either answer keeps the contract; accepted, it must be read as (1, 1, 1, Nk) (the judges' golden values)
            return Outcome(0.0, 0.0, f"refused a (Nk,) mask, as SDPA's default CPU dispatch does ({text})"), text
        # the same problem with 4-D inputs and a 2-D-or-more mask of plain storage: accepted, it shows
        # this refusal is of a form alone (SDPA takes each)
        # (the mask's dtype kept: refusing a float mask of another dtype than q's is honest, module docstring)
        plain = replace(problem, mask_storage="contiguous", mask_nonfinite=None, mask_far=None, rank=4,
                        kv_broadcast=False, input_nan=None,
                        # (no earlier call: refusing a call accepted alone, after another, is a failure too; and
                        # made by the main thread on one thread: a refusal of one caller alone is one too)
                        prior=None, enable_gqa=True, arguments="keywords", caller=MAIN, threads=1,
                        mask="(1, 1, 1, Nk)" if problem.mask == ONE_DIM_MASK else problem.mask, prior_dtype=None)
        if problem.prior == "other dtype":
            # at twice the lengths: this process already made calls of these shapes, and state the impl keeps per
            # shape (a causal bias cached in the earlier call's dtype) would refuse the call alone too; doubled
            # lengths keep every divisibility a kernel may require of them
            plain = replace(plain, n_q=2 * problem.n_q, n_k=2 * problem.n_k)
        if plain != problem and check_problem(impl, plain, device)[1] is None:
            return Outcome(math.inf, 0.0, f"refused an input SDPA accepts ({text}): "
                                          f"{plain.describe()} is accepted, {problem.describe()} not"), None
        return Outcome(0.0, 0.0, f"refused ({text})"), text


def failed(o: Outcome) -> bool:
    return not o.discrepancy <= o.bound


# ===================================================================== shrinking

def _smaller(p: Problem):
    """Candidate problems one step simpler than p, simplest first."""
    for field, values in (("mask", (None,)), ("mask_grad", (False,)), ("sequence", ("single",)), ("dout_value", (None,)), ("grad_context", ("enable_grad",)), ("leaves", ("tensors",)), ("mask_nonfinite", (None,)), ("mask_far", (None,)), ("rank", (4,)), ("kv_broadcast", (False,)), ("input_nan", (None,)), ("input_value", ("NaN",)), ("context", ("no_grad",)), ("prior", (None,)), ("arguments", ("keywords",)), ("mask_padding", (False,)), ("underflow", (False,)), ("zero_tails", (False,)), ("mask_magnitude", (1.0,)), ("mask_storage", ("contiguous",)),
                          ("mask_dtype", (None,)), ("layout", ("contiguous",)), ("magnitude", (False,)), ("late_values", (False,)), ("small_values", (0,)),
                          ("large_values", (False,)),
                          ("scale", (None,)),
                          ("causal", (False,)),
                          ("grads", ("qkv",)), ("batch", (1, p.batch // 2)),
                          ("n_q", (1, p.n_q // 2, p.n_q - 1)), ("n_k", (1, p.n_k // 2, p.n_k - 1)),
                          ("head_dim", (16, p.head_dim // 2, p.head_dim - 1)),
                          ("value_dim", (p.head_dim, 16, p.value_dim // 2))):
        for value in values:
            current = getattr(p, field)
            # strictly simpler only: a field that may grow cycles (head_dim 8 -> 16 -> 8) until the deadline
            if value == current or isinstance(value, int) and not isinstance(value, bool) and not 1 <= value < current:
                continue
            if p.relation == DROPOUT_LAW and field in ("n_k", "value_dim"):
                continue
            plain_mask = ({"mask_storage": "contiguous", "mask_dtype": None, "mask_nonfinite": None, "mask_far": None,
                           "mask_grad": False, "mask_padding": False}
                          if field == "mask" else {"prior_dtype": None} if field == "prior" else {})
            yield replace(p, **{field: value, **plain_mask})
    if p.q_heads != p.kv_heads:
        yield replace(p, q_heads=p.kv_heads)
    if p.q_heads > 1:
        yield replace(p, q_heads=1, kv_heads=1)
    if p.relation == DROPOUT_LAW and p.n_k > 8:
        # (V = I: Dv = Nk; a long path's V is of its own columns, and its drawn Dv is left as it is: Dv = Nk/2 there
        # made a V of 79 621² elements, 50 GB, shrinking a 159 243-key decode)
        yield replace(p, n_k=max(8, p.n_k // 2), value_dim=p.value_dim if p.path in KEY_LAG_PATHS else max(8, p.n_k // 2))


def shrink(impl, problem: Problem, device: str = "cpu", seconds: float = SHRINK_SECONDS) -> tuple[Problem, Outcome]:
    """The smallest problem greedy shrinking reaches that still fails the same relation."""
    best, outcome = problem, check_problem(impl, problem, device)[0]
    deadline = time.perf_counter() + seconds
    improved = True
    while improved and time.perf_counter() < deadline:
        improved = False
        for candidate in _smaller(best):
            if time.perf_counter() >= deadline:
                break
            o, refused = check_problem(impl, candidate, device)
            if refused is None and failed(o):
                best, outcome, improved = candidate, o, True
                break
    return best, outcome


def reproduction(impl, problem: Problem) -> str:
    """Runnable Python that re-judges the problem (prints the discrepancy and its bound)."""
    module = getattr(impl, "__module__", None) or "your_module"
    # the module-level name that holds impl: a function a factory built is named by its qualname "_wrap.<locals>.fn",
    # whose first part is the factory (red team rt42h: reproductions that imported the factory)
    held = [n for n, value in vars(sys.modules[module]).items() if value is impl] if module in sys.modules else []
    name = held[0] if held else (getattr(impl, "__qualname__", None) or getattr(impl, "__name__", "impl")).split(".")[0]
    args = ", ".join(f"{k}={v!r}" for k, v in asdict(problem).items())
    return (f"from kernels.harness.generate import Problem, check_problem\n"
            f"from {module} import {name} as impl\n"
            f"print(check_problem(impl, Problem({args}))[0])")


# ===================================================================== the run

def generated_checks(impl, dtypes, device, seed: int, seconds: float, features: frozenset, *,
                     value_dim: bool = True, only=None, problems: int | None = None,
                     shrink_seconds: float = SHRINK_SECONDS, regimes: tuple[str, ...] = REGIMES,
                     notes: list | None = None, drawn: int | None = None, covering=None, covering_only: bool = False):
    """Yield (problem as drawn, outcome, refusal, repro or None) for ``problems`` problems of the chosen
    relations per dtype (the regimes among them, drawn first), or for those of the chosen relations
    among the first ``drawn`` problems per dtype (what a run of every relation judges), stopping early
    only at the safety cap of ``seconds`` (spread over the dtypes; 0: none), which is then told in
    ``notes`` and never stops the regimes (each dtype's first len(regimes) draws). Without either, problems are drawn until ``seconds`` pass, and the regimes and one problem of each
    relation per dtype are judged however slow the machine. A failure carries its reproduction;
    it is shrunk first while the run's ``shrink_seconds`` (all failures together) last, and says so
    when they are spent. ``covering`` (paths.after_regimes: dtype name -> problems): each dtype's pass judges its
    covering rows after its regimes, whatever the cap, not counted among ``problems``; with ``covering_only``, those
    alone (a run's covering rows in parts of their own: verify.COVERING_SLICES)."""
    relations = [rel for rel in RELATIONS if only is None or rel in only]
    if not relations or (seconds <= 0 and not problems and not drawn and not covering_only):
        return
    shrink_left = shrink_seconds

    def judged_one(problem):
        nonlocal shrink_left
        outcome, refused = check_problem(impl, problem, device)
        repro = None
        if refused is None and failed(outcome):
            if shrink_left > 0:
                started = time.perf_counter()
                small, small_outcome = shrink(impl, problem, device, shrink_left)
                shrink_left -= time.perf_counter() - started
                # (the check stays the drawn problem: the report's "only with ..." conditions compare drawn
                # failures with drawn passes; a shrunk one beside them named its shrinking's artefacts, red team
                # rt43h: "only with D ≤ 1, one query" for a bug of p's type)
                repro = (f"shrunk from {problem.describe()} to {small.describe()} "
                         f"({small_outcome.figures}); reproduce with:\n"
                         + reproduction(impl, small))
            else:
                repro = (f"not shrunk (the run's {shrink_seconds:g} s for shrinking are spent); "
                         f"reproduce with:\n" + reproduction(impl, problem))
        return problem, outcome, refused, repro

    names = tuple(str(d).removeprefix("torch.") for d in dtypes)
    floor = len(regimes) + len(RELATIONS)
    for dtype, name in zip(dtypes, names):
        if covering_only:
            yield from (judged_one(problem) for problem in covering(name) if problem.relation in relations)
            continue
        budget = seconds / len(dtypes) if seconds > 0 else math.inf
        wall, cpu = time.perf_counter(), time.process_time()

        def within() -> bool:
            # CPU seconds, which another process's load hardly moves (red team rt44h: the wall-clock cap cut 19 of
            # 107 float16 problems in every run at load 3.5), or three times the budget in wall seconds (a device's
            # time is no CPU time of ours)
            return time.process_time() - cpu < budget and time.perf_counter() - wall < 3 * budget

        index = judged = 0
        # the regimes (the first len(regimes) draws) are judged whatever the cap: what a run covers for certain must
        # not depend on the machine's load (red team rt39h: 21-33 of 92 problems judged at load, fewer than the regimes)
        covered = covering is None
        while True:
            if index == len(regimes) and not covered:  # after the regimes, the covering rows, whatever the cap
                covered = True
                for problem in covering(name):
                    if problem.relation in relations:
                        yield judged_one(problem)
            if not (((judged < problems if problems else index < drawn) and (within() or index < len(regimes)))
                    if problems or drawn else (within() or index < floor)):
                break
            problem = draw(seed, index, name, features, value_dim=value_dim, regimes=regimes)
            index += 1
            if problem.relation not in relations:
                continue
            judged += 1
            yield judged_one(problem)
        if (judged < problems if problems else drawn and index < drawn) and notes is not None:
            done, planned = (judged, problems) if problems else (index, drawn)
            notes.append(f"generated problems ({name}): the safety cap of {seconds / len(dtypes):.3g} CPU-s was hit "
                         f"after {done} of {planned} problems; the rest were not judged")


def thread_problems(seed: int, dtype, features: frozenset, *, value_dim: bool = True,
                    regimes: tuple[str, ...] = REGIMES):
    """The THREAD_COUNT problems of a dtype's pass: the THREAD_PROBLEMS drawn past the default run's, their relation
    kept, on THREAD_COUNTS threads in turn (only in a process whose OpenMP pool works: not a forked child)."""
    name = str(dtype).removeprefix("torch.")
    first = len(regimes) + DEFAULT_DRAWN
    return [replace(draw(seed, first + i, name, features, value_dim=value_dim, regimes=regimes),
                    threads=THREAD_COUNTS[i % len(THREAD_COUNTS)]) for i in range(THREAD_PROBLEMS)]


def _never(case) -> bool:  # run by the generator, never on the fixed cases
    return False


for _name, _needs, _bugs in (
    (AGREEMENT, frozenset(), "whatever the fixed cases miss in the forward: a size, view, mask form or scale "
                             "nobody listed (head dims past support truncated, fast paths dropping the mask, "
                             "positions in float16 past 2048 on both sides, split-K decoding past 16 splits, "
                             "2-D/3-D masks read by the wrong leading dim when it equals B, q·scale "
                             "overflowing float16, a mask's strides ignored, a float32 mask cast to half q's dtype, "
                             "a NaN mask entry sanitised, a non-contiguous mask refused, is_causal dropped at rank 5 "
                             "or rank 2 (red team rt51: (N, D) inputs refused or their is_causal dropped), float16 "
                             "outputs below its least normal flushed to 0 (rt51; the small-values regime), "
                             "query chunks past 4096 restarting causal positions or reading batch 0's K/V, "
                             "a bfloat16 output stored through float16; red team rt43h: process state changed on one "
                             "path only (flush-to-zero on a long decode), a float32 mask promoting a half output, "
                             "state kept by reference (an output memo, a cache keyed without strides, a cached "
                             "inference tensor), batch chunks of 16 reading the mask from entry 0, float64 through "
                             "float32 past 1024 keys, NaN hidden by a one-key or underflowed-block fast path; red "
                             "team rt44h, through the covering array's rows: a feature wrong on one path only, "
                             "split-KV prefill splits reading the mask from column 0, float64 in float32 on the "
                             "split-K decode path, a broadcast k, v folding q's batch into causal positions; a "
                             "workspace or causal bias cached per shape in the first call's dtype, outputs returned "
                             "as views of a static buffer the next call overwrites, a mask broadcast over the queries "
                             "read as key padding from head 0, an ALiBi mask with -inf padding sent to a boolean path "
                             "as mask == 0; red team rt48: k, v expanded over the heads or the batch folded into "
                             "causal rows, a wide-head template's second channel chunk on the tiles path, a prefill "
                             "workspace of 64 value channels, a 256-channel decode template; red team rt49: a "
                             "bottom-right causal or sliding-window boolean mask routed to a kernel of its own, a "
                             "decode path between the drawn sizes, a prefill reading entry 0's mask, an interleaved KV "
                             "cache's strides re-derived, k, v broadcast along a middle batch dim, rank 6 dropping "
                             "is_causal, 257-512 channels over one chunk, GQA groups of 8 unpacked head-major; red "
                             "team rt52: KV heads tiled for groups of 5-7, an explicit scale near 1 snapped to 1, q "
                             "and k truncated past 1024 channels, trailing zero keys or queries taken for padding, a "
                             "frozen mask below 1e-3 read as 0/-inf, a chunked prefill of 257-1024 queries over 2^14+ "
                             "keys aligned bottom-right or dropping the mask)"),
    (GRADIENTS, frozenset({BACKWARD}), "gradients wrong for a drawn requires_grad subset, view, mask form or size; "
                                       "a backward wrong under a drawn mode (deterministic, anomaly), a non-finite "
                                       "dO clamped or sanitised, gradients returned in buffers the next backward of "
                                       "the shape overwrites; red team rt44h: a GQA backward wrong or raising at "
                                       "rank 3 or 5; rt48: a training path's backward ignoring an explicit scale; "
                                       "rt52: dk, dv summed over four heads of groups of 5-7, an explicit scale of "
                                       "1.0 read as unset in the backward"),
    (DROPOUT_LAW, frozenset({DROPOUT}), "dropout wrong at a drawn p (biased threshold, rescale, p < 1e-3 taken "
                                        "for 0) or shape; a keep mask repeating along the keys or the queries on one "
                                        "path (a speculative decode restarting its offset per split of 1024 keys); "
                                        "red team rt48, at the long paths' own sizes: a prefill restarting per "
                                        "2048-key split, a tiles path per 128-key tile, a serving batch's one mask "
                                        "for all entries, a decode ignoring dropout_p; rt49: a long decode's "
                                        "uniforms of few bits (small p dropped several times too often), a backward "
                                        "regenerating the keep mask per key chunk; rt50: a keep mask per block of "
                                        "V's channels (V = [I, I], and a long path's columns repeated, must agree), "
                                        "uniforms drawn in another order without grad or a generator of a worker "
                                        "thread's own (the same seed's call again under another grad mode on "
                                        "another thread must keep the same weights)"),
    (METAMORPHIC, frozenset(), "batch entries interfering, key order mattering, boolean and additive masks "
                               "disagreeing"),
    (THREAD_COUNT, frozenset(), "work split by torch.get_num_threads() wrong past one thread: the slices, query rows "
                                "or key splits left over by the share per thread never computed, causal positions "
                                "restarting in each thread's rows, key splits merged by their key count (red team "
                                "rt47); a path's own split per thread (rt49: a split-K decode merging its per-thread "
                                "splits wrong past four threads, row-parallel causal and head-parallel GQA paths at "
                                "four threads or more: each path's plain row, causal and grouped, on 8, 16 or 32 "
                                "threads of a machine of as many CPUs); rt50: splits per thread or per CPU merged into "
                                "8 slots, and the caller (those rows made from a worker thread, or under a default "
                                "dtype of float16, bfloat16 or float64: causal positions built in the default dtype, "
                                "a default scale cached per thread), and the half dtypes' rows called in float32 under "
                                "torch.autocast (rt50: running statistics kept in the autocast dtype); rt51: a training "
                                "step's callers (each path's gradient row made from a worker thread, under a default "
                                "dtype or autocast, or its backward run from the worker thread: a backward reading a "
                                "workspace of its thread's own, causal positions built in the default dtype in the "
                                "backward, a training path in float16 under bfloat16 autocast)"),
):
    register(Invariant(_name, None, lambda s: Outcome(0.0, 0.0), _never, _needs, bug_classes=_bugs))
