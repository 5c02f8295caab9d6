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

# A scale that is neither 1/√D nor a power of two, for the backward's explicit-scale check.
BACKWARD_SCALE = 0.3


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
    """Gradients with an explicit scale (0.3) and non-contiguous q, k, v and dO ((B, N, H, D)
    storage viewed as (B, H, N, D), the layout a projection followed by .view().transpose(1, 2)
    gives): one backward call, so the check costs no more than one of them alone."""
    q, k, v, d_o = (strided(x) for x in (s.q, s.k, s.v, s.dout))
    g = s.backward(q=q, k=k, v=v, dout=d_o, scale=BACKWARD_SCALE)
    return gradients_against(s, g.got, g.gold, g.plain, s.gradient_sizes_for(dout=d_o, scale=BACKWARD_SCALE))


def _random(c) -> bool:
    return c.kind == RANDOM


register(Invariant("inputs-untouched-backward", None, inputs_untouched_backward, _random, frozenset({BACKWARD}),
                   bug_classes="forward-with-grad or backward writes into q, k, v or dO"))
# Half types only: the bug is statistics kept below float32. In float32 the scores' own rounding,
# amplified by exp at |s| ≈ 40, dominates both the kernel's and the plain reference's error, and
# the 2× rule between two such random errors is a coin toss (measured: torch's SDPA, seed 0,
# causal-short-q, dv 3.05e-5 against a bound of 2.26e-5).
register(Invariant("backward-high-variance", "attention-backward", backward_high_variance,
                   lambda c: _random(c) and c.n_k > 1, frozenset({BACKWARD}),
                   bug_classes="log-sum-exp (or max and sum) saved in half precision",
                   dtypes=frozenset({torch.float16, torch.bfloat16})))
register(Invariant("backward-scale-strided", "prescaled-query", backward_scale_strided,
                   lambda c: _random(c) and max(c.q_heads, c.n_q) > 1, frozenset({BACKWARD}),
                   bug_classes="backward ignores the explicit scale; addresses q, k, v or dO as if contiguous"))
