"""The training path: what the backward may not do beyond getting the gradients right.

An impl's backward must leave q, k, v and dO alone, keep its saved softmax statistics precise
enough for scores far from unit variance, and honour an explicit scale and non-contiguous q, k, v
and dO.
"""
from __future__ import annotations

import math

import torch

from kernels.harness.cases import RANDOM
from kernels.harness.invariants import BACKWARD, Invariant, register
from kernels.harness.subject import Outcome, Subject, gradients_against, strided

# Score standard deviation of the high-variance backward: q and k scaled by √8 each, so
# q·k/√D has std 8. The row's log-sum-exp then reaches ~30, where a float16 lse is good to
# 2^-6 and a bfloat16 one to 2^-3: exp(s - lse) recomputed from it is off by 1.6% and 13%.
SCORE_STD = 8.0

# The backward's explicit scale: BACKWARD_SCALE_FACTOR/√D, neither 1/√D nor (for any integer D) a
# power of two, with scores of std 1.2 whatever D. A fixed 0.3 gives scores of std 0.3·√D, 4.8 at
# D = 256: there a float32 backward's error is set by its scores' own rounding amplified by exp,
# and the 2× rule between two such random errors is a coin toss (measured: a float64-internal
# impl with a float32 backward, D = 256, seed 0: dv 2.01e-5 against a bound of 1.86e-5).
BACKWARD_SCALE_FACTOR = 1.2


def backward_scale(head_dim: int) -> float:
    return BACKWARD_SCALE_FACTOR / math.sqrt(head_dim)


def inputs_untouched_backward(s: Subject) -> Outcome:
    """The forward with grad enabled and the backward may not write into q, k, v or dO."""
    changed = s.base_backward.changed
    return Outcome(math.inf if changed else 0.0, 0.0, f"impl changed {', '.join(changed)}" if changed else "")


def backward_high_variance(s: Subject) -> Outcome:
    """Gradients on scores of std 8 (q, k scaled by √8): an lse saved in half precision fails here."""
    root = math.sqrt(SCORE_STD)
    q2, k2 = s.cast(s.q.double() * root), s.cast(s.k.double() * root)
    g = s.backward(q=q2, k=k2)
    return gradients_against(s, g.got, g.gold, g.plain, s.gradient_sizes_for(q=q2, k=k2))


def backward_scale_strided(s: Subject) -> Outcome:
    """Gradients with an explicit scale (1.2/√D) and non-contiguous q, k, v and dO ((B, N, H, D)
    storage viewed as (B, H, N, D), the layout a projection followed by .view().transpose(1, 2)
    gives): one backward call, so the check costs no more than one of them alone."""
    q, k, v, d_o = (strided(x) for x in (s.q, s.k, s.v, s.dout))
    c = backward_scale(s.case.head_dim)
    g = s.backward(q=q, k=k, v=v, dout=d_o, scale=c)
    return gradients_against(s, g.got, g.gold, g.plain, s.gradient_sizes_for(dout=d_o, scale=c))


def _random(c) -> bool:
    return c.kind == RANDOM


register(Invariant("inputs-untouched-backward", None, inputs_untouched_backward, _random, frozenset({BACKWARD}),
                   bug_classes="forward-with-grad or backward writes into q, k, v or dO"))
# Half types only: the bug is statistics kept below float32. In float32 the scores' own rounding,
# amplified by exp at |s| ≈ 40, dominates both the kernel's and the plain reference's error, and
# the 2× rule between two such random errors is a coin toss (measured: torch's SDPA, seed 0,
# causal-short-q when it was 37×127, dv 3.05e-5 against a bound of 2.26e-5).
register(Invariant("backward-high-variance", "attention-backward", backward_high_variance,
                   lambda c: _random(c) and c.n_k > 1, frozenset({BACKWARD}),
                   bug_classes="log-sum-exp (or max and sum) saved in half precision",
                   dtypes=frozenset({torch.float16, torch.bfloat16})))
register(Invariant("backward-scale-strided", "prescaled-query", backward_scale_strided,
                   lambda c: _random(c) and max(c.q_heads, c.n_q) > 1, frozenset({BACKWARD}),
                   bug_classes="backward ignores the explicit scale; addresses q, k, v or dO as if contiguous"))
