"""Rounding bias on shapes built for it: the signed error of a half-precision output must average to about zero.

The statistic and its test are rounding_direction.py's, which every float16/bfloat16 output and gradient judged
against its golden value also takes (subject.against, subject.gradients_against). These invariants add the shapes
it would otherwise not see with MIN_ROWS rows: the fixed random cases' outputs, and decode (one query row per
(batch, head)).
"""
from __future__ import annotations

from kernels.harness.cases import RANDOM
from kernels.harness.invariants import Invariant, register
from kernels.harness import reference as ref
from kernels.harness.rounding_direction import BIASED_DTYPES, MIN_ROWS, bias_test
from kernels.harness.subject import Outcome, Subject, worst


def bias_outcome(out, gold, dtype, where=None) -> Outcome:
    """rounding_direction.bias_test as an outcome (discrepancy z, bound z_critical)."""
    return Outcome(*bias_test(out, gold, dtype, where))


def rounding_bias(s: Subject) -> Outcome:
    return bias_outcome(s.output(), s.base.value, s.dtype)


# The decode path (one query row per (batch, head)): no fixed case has MIN_ROWS rows of it (decode-4097 has 4), so the
# decode case builds its own: B = 2 and 32 query heads (the case's grouping kept), one query, over 257 keys at the
# case's head dim and over the case's keys (past 4096: a split-K path) at a head dim of 16. Red team rt44h: a decode
# kernel truncating its bfloat16 store escaped. Each shape's two statistics at rounding_direction.ALPHA.
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
        details.append(f"B={b} Hq={hq} Hkv={hkv} Nq=1 {label}: z {o.figures}, {o.detail}")
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
