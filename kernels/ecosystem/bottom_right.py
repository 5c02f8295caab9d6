"""Checks of the bottom-right causal claim, for libraries that document that alignment.

The harness judges causal masking by SDPA's top-left rule (claim causal-mask-top-left). A library
whose documented mask puts query i of Nq at position i + Nk - Nq (a KV cache holding the earlier
Nk - Nq tokens) is judged here instead, by claim causal-mask-bottom-right: query i sees keys
j <= i + Nk - Nq. Its premise is Nq <= Nk, so only such cases are run. Tolerances are the harness's
rule (``kernels.harness.tolerance``): twice the plain same-precision reference's error plus the floor.
"""
from __future__ import annotations

import math

import torch

from kernels.harness import reference as ref
from kernels.harness import tolerance as tol
from kernels.harness.cases import DEFAULT_CASES, Case, make_inputs
from kernels.harness.report import Check
from kernels.harness.verify import parse_dtype

CLAIM = "causal-mask-bottom-right"

# The default causal cases with Nq < Nk, where the two alignments differ (among them a decoding
# step: one query, which under bottom-right sees every key and under top-left key 0 only).
CASES: tuple[Case, ...] = tuple(c for c in DEFAULT_CASES if c.causal and c.n_q < c.n_k)


def visible(n_q: int, n_k: int) -> torch.Tensor:
    """(Nq, Nk) boolean, True = visible: key j for query i iff j <= i + Nk - Nq."""
    i = torch.arange(n_q)[:, None]
    j = torch.arange(n_k)[None, :]
    return j <= i + (n_k - n_q)


def attention(q, k, v, *, scale=None, enable_gqa=False) -> torch.Tensor:
    """Bottom-right causal attention in the inputs' dtype, written as the claim reads."""
    if enable_gqa:
        k, v = ref.repeat_kv(k, q.shape[1]), ref.repeat_kv(v, q.shape[1])
    scale = ref.default_scale(q.shape[-1]) if scale is None else scale
    scores = (q * scale) @ k.transpose(-2, -1)  # (B, Hq, Nq, Nk)
    scores = scores.masked_fill(~visible(q.shape[-2], k.shape[-2]).to(q.device), float("-inf"))
    return torch.softmax(scores, dim=-1) @ v  # (B, Hq, Nq, D)


def _reference(q, k, v, case):
    kw = dict(scale=case.scale, enable_gqa=case.gqa)
    gold = attention(q.double(), k.double(), v.double(), **kw)
    return gold, tol.max_abs_error(attention(q, k, v, **kw), gold)


def _check(invariant, case, dtype, fn) -> Check:
    common = dict(invariant=invariant, claim_id=CLAIM, case=case.describe(), case_name=case.name,
                  dtype=str(dtype).removeprefix("torch."), device="cpu")
    try:
        disc, bound, detail = fn()
    except Exception as exc:  # the library failing on a case fails that case
        text = str(exc).strip().splitlines()
        return Check(discrepancy=math.inf, bound=0.0, passed=False,
                     error=f"{type(exc).__name__}: {text[0] if text else ''}"[:300], **common)
    return Check(discrepancy=disc, bound=bound, passed=disc <= bound, detail=detail, **common)


def _call(impl, q, k, v, **kw):
    with torch.no_grad():
        return impl(q.clone(), k.clone(), v.clone(), **kw)


def agreement(impl, case: Case, dtype, q, k, v):
    """The causal output against float64 bottom-right attention."""
    gold, err = _reference(q, k, v, case)
    out = _call(impl, q, k, v, is_causal=True, scale=case.scale, enable_gqa=case.gqa)
    return tol.max_abs_error(out.double(), gold), tol.bound(dtype, err, gold), ""


def alignment(impl, case: Case, dtype, q, k, v):
    """Row i of the causal output equals full attention of query i over keys 0..i + Nk - Nq."""
    gold, err = _reference(q, k, v, case)
    out = _call(impl, q, k, v, is_causal=True, scale=case.scale, enable_gqa=case.gqa)
    kw = dict(scale=case.scale, enable_gqa=case.gqa)
    worst, details = (0.0, 1.0), []
    for i in sorted({0, case.n_q - 1}):
        seen = i + case.n_k - case.n_q + 1
        q1, k1, v1 = q[:, :, i:i + 1], k[:, :, :seen], v[:, :, :seen]
        prefix = _call(impl, q1, k1, v1, is_causal=False, **kw)
        gold1 = ref.attention64(q1, k1, v1, **kw)
        err1 = tol.max_abs_error(ref.attention(q1, k1, v1, **kw), gold1)
        diff = (out[:, :, i:i + 1].double() - prefix.double()) - (gold[:, :, i:i + 1] - gold1)
        disc = tol.max_abs_error(diff, torch.zeros_like(diff))
        bound = tol.MULT * (err + err1) + tol.floor(dtype, gold)
        details.append(f"row {i}: {disc:.3g}")
        if disc / bound >= worst[0] / worst[1]:
            worst = (disc, bound)
    return worst[0], worst[1], "; ".join(details)


CHECKS = (("bottom-right-agreement", agreement), ("bottom-right-alignment", alignment))


def bottom_right_checks(impl, dtypes, *, seed: int = 0, cases=CASES) -> list[Check]:
    """Every bottom-right check on every case (Nq <= Nk) in every dtype, as harness Check records."""
    checks = []
    for dtype in map(parse_dtype, dtypes):
        for case in cases:
            if case.n_q > case.n_k:
                raise ValueError(f"case {case.name}: the bottom-right claim assumes Nq <= Nk")
            q, k, v, _ = make_inputs(case, dtype, "cpu", seed)
            for name, fn in CHECKS:
                checks.append(_check(name, case, dtype, lambda fn=fn: fn(impl, case, dtype, q, k, v)))
    return checks
