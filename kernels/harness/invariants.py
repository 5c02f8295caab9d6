"""The laws a correct attention implementation obeys, one function per invariant, and the
registry (``INVARIANTS``) that ``verify_attention`` runs.

Every invariant takes a :class:`Subject` (the implementation, one case, one dtype, its inputs) and
returns an :class:`Outcome`: the measured discrepancy and the bound it must stay within (see
``subject.py``). The training path, attn_mask, dropout and the statistical rounding check live in
their own modules (``training``, ``masks``, ``dropout``, ``bias``); this one holds the forward
laws, the backward's agreement and identities, and the registry.
"""
from __future__ import annotations

import functools
import math
import sys
from dataclasses import dataclass
from collections.abc import Sequence
from typing import Callable

import numpy as np
import torch

from kernels.harness import reference as ref
from kernels.harness import tolerance as tol
from kernels.harness.cases import (EXTREME, MIXED, NEGATIVE, POSITION_EXACT, POSITIONS, RANDOM, SWEEP, SWEEP_LENGTHS,
                                   SYNTHETIC, Case)
from kernels.harness.subject import (Gradients, Outcome, Subject, against, checked_output, gradients_against,
                                     head_dim_strided, packed, ratio, relation, strided, worst)

__all__ = ["INVARIANTS", "Invariant", "Outcome", "Subject", "Gradients", "checked_output", "invariant_named"]

# Cases small enough for the symbolic softmax Jacobian (an n × n SymPy matrix per key count n).
JACOBIAN_MAX_KEYS = 8


# ===================================================================== forward invariants


def reference_agreement(s: Subject) -> Outcome:
    return against(s, s.output(), s.base)


def output_dtype_shape(s: Subject) -> Outcome:
    out = s.first_call[0]
    expected = tuple(s.q.shape[:-1]) + (s.v.shape[-1],)
    problems = []
    if not isinstance(out, torch.Tensor):
        problems.append(f"returned {type(out).__name__}, not a tensor")
    else:
        if out.dtype != s.dtype:
            problems.append(f"dtype {out.dtype} instead of q's {s.dtype}")
        if tuple(out.shape) != expected:
            problems.append(f"shape {tuple(out.shape)} instead of {expected}")
        if out.device != s.q.device:
            problems.append(f"device {out.device} instead of q's {s.q.device}")
        if out.is_inference():  # (first_call runs under no_grad, never inference_mode)
            problems.append("an inference tensor, returned by a call not made under inference_mode")
    for name in s.first_call[2]:  # a fast path returning a view: writing into the output changes the caller's input
        problems.append(f"the output shares memory with {name}")
    return Outcome(math.inf if problems else 0.0, 0.0, "; ".join(problems))


def inputs_untouched(s: Subject) -> Outcome:
    """impl may not write into q, k or v (an in-place pre-scale of q is the classic slip)."""
    changed = s.first_call[1]
    return Outcome(math.inf if changed else 0.0, 0.0, f"impl changed {', '.join(changed)}" if changed else "")


def strided_inputs(s: Subject) -> Outcome:
    """Non-contiguous q, k, v give the same output: the (B, N, H, D) layout viewed as (B, H, N, D),
    and views into one packed (B, N, 3, H, D) buffer (a fused QKV projection), whose batch stride is
    not H·N·D and whose k and v start at an offset into the storage. A head-dim stride of 2 must
    give the same output too, or be refused: many kernels require a unit last stride (FlashAttention
    and torch's CPU flash backend raise), and refusing is honest where reading it wrong is not."""
    views = {"transposed": tuple(strided(x) for x in (s.q, s.k, s.v)), "packed": packed(s.q, s.k, s.v),
             "head-dim stride 2": tuple(head_dim_strided(x) for x in (s.q, s.k, s.v))}
    # the plain reference's error on the same views (BLAS accumulates in another order for another
    # layout: tolerance.py), taken before the impl runs on them
    golden = {name: s.reference(*qkv) for name, qkv in views.items()}
    layouts = {name: s.run_fresh(*views[name]) for name in ("transposed", "packed")}
    try:
        layouts["head-dim stride 2"] = s.run_fresh(*views["head-dim stride 2"])
        refused = ""
    except Exception as exc:  # a clear refusal of a non-unit last stride
        refused = f"; head-dim stride 2 refused: {type(exc).__name__}"
    outcomes = [relation(s, out, golden[name], s.output(), s.base) for name, out in layouts.items()]
    o = worst(outcomes, [f"{name}: {o.discrepancy:.3g}" for name, o in zip(layouts, outcomes)])
    return Outcome(o.discrepancy, o.bound, o.detail + refused)


def mismatched_heads_refused(s: Subject) -> Outcome:
    """Without enable_gqa, SDPA broadcasts the head axis as matmul does: 1 KV head serves every query
    head, but Hkv heads with 1 < Hkv < Hq do not broadcast, and torch 2.13 raises (measured: "The
    size of tensor a (4) must match the size of tensor b (2) at non-singleton dimension 1"). An impl
    must raise too, not group the heads as if enable_gqa were set."""
    try:
        s._call(s.q, s.k, s.v, enable_gqa=False)  # whatever it returns, returning is the failure
    except Exception as exc:  # any exception: SDPA's is a RuntimeError, a kernel may say ValueError
        return Outcome(0.0, 0.0, f"refused: {type(exc).__name__}")
    return Outcome(math.inf, 0.0, f"returned an output for {s.q.shape[1]} query heads and {s.k.shape[1]} KV "
                                  "heads with enable_gqa=False")


def rows_sum_to_one(s: Subject) -> Outcome:
    """softmax rows are probability vectors: with V = 1 the output is exactly 1."""
    ones = torch.ones_like(s.v)
    out = s.run(v=ones)
    exact = torch.ones(out.shape, dtype=torch.float64)
    return against(s, out, s.reference(v=ones)._replace(value=exact))


def convex_hull(s: Subject) -> Outcome:
    """Each output entry lies between the smallest and largest value it may see in its column."""
    out = s.output().cpu().double()  # (B, Hq, Nq, D)
    v = s.v.cpu().double()
    if s.case.gqa:
        v = ref.repeat_kv(v, s.q.shape[1])  # (B, Hq, Nk, D)
    n_q, n_k = out.shape[-2], v.shape[-2]
    if s.case.causal:
        # Top-left: row i sees keys 0..min(i, Nk - 1), a prefix, so running extrema suffice.
        last = torch.arange(n_q).clamp(max=n_k - 1)
        lo = v.cummin(dim=-2).values[..., last, :]  # (B, Hq, Nq, D)
        hi = v.cummax(dim=-2).values[..., last, :]
    else:
        lo, hi = v.amin(dim=-2, keepdim=True), v.amax(dim=-2, keepdim=True)  # (B, Hq, 1, D)
    outside = torch.maximum(lo - out, out - hi).clamp(min=0)
    outside = torch.nan_to_num(outside, nan=math.inf)
    return Outcome(float(outside.max()), tol.bound(s.dtype, s.base.error, s.base.value, s.base.sensitivity, lse_size=s.base.lse_size))


def key_shift_invariance(s: Subject) -> Outcome:
    """Adding one vector u to every key shifts row i's scores by q_i·u: the output is unchanged."""
    u = torch.randn(s.k.shape[:2] + (1, s.k.shape[-1]), generator=s.rng("shift"), dtype=torch.float64)
    k2 = s.cast(s.k.double() + 2 * u.to(s.k.device))  # (B, Hkv, Nk, D)
    return relation(s, s.run(k=k2), s.reference(k=k2), s.output(), s.base)


def _perm(s: Subject, n: int, label: str) -> torch.Tensor:
    return torch.randperm(n, generator=s.rng(label)).to(s.q.device)


def key_permutation_invariance(s: Subject) -> Outcome:
    """Without a mask, attention is a set function of the (key, value) pairs."""
    p = _perm(s, s.case.n_k, "keys")
    k2, v2 = s.k[:, :, p], s.v[:, :, p]
    return relation(s, s.run(k=k2, v=v2), s.reference(k=k2, v=v2), s.output(), s.base)


def query_permutation_equivariance(s: Subject) -> Outcome:
    """Without a mask, permuting the queries permutes the output rows."""
    p = _perm(s, s.case.n_q, "queries")
    q2 = s.q[:, :, p]
    return relation(s, s.run(q=q2), s.reference(q=q2), s.output()[:, :, p], s.base.rows(p.cpu()))


def causality(s: Subject) -> Outcome:
    """Row i may not move when keys and values after position i change (top-left alignment)."""
    cut = min(s.case.n_q, s.case.n_k) // 2  # rows < cut see keys < cut only
    gen = s.rng("future")
    k2, v2 = s.k.clone(), s.v.clone()
    for x in (k2, v2):  # the future replaced by large, different values
        x[:, :, cut:] = 3 * s.randn(gen, *x[:, :, cut:].shape)
    rows = slice(0, cut)
    return relation(s, s.run(k=k2, v=v2)[:, :, rows], s.reference(k=k2, v=v2).rows(rows),
                    s.output()[:, :, rows], s.base.rows(rows))


def long_causal_positions(s: Subject) -> Outcome:
    """Causal attention with queries and keys past POSITION_EXACT (float16's last exact odd integer is
    2047): against float64 by the low-precision rule, on inputs where one key wrongly seen or hidden
    by a last row moves it by a large fraction of its size (cases.POSITIONS)."""
    return against(s, s.output(), s.base)


def causal_alignment(s: Subject) -> Outcome:
    """Row i of causal attention equals full attention of query i over keys 0..i (top-left)."""
    n_q, n_k = s.case.n_q, s.case.n_k
    outcomes, details = [], []
    for i in sorted({0, min(n_q, n_k) - 1, n_q - 1}):
        seen = min(i + 1, n_k)
        q1, k1, v1 = s.q[:, :, i:i + 1], s.k[:, :, :seen], s.v[:, :, :seen]
        prefix = s.run(q1, k1, v1, is_causal=False)
        o = relation(s, s.output()[:, :, i:i + 1], s.base.rows(slice(i, i + 1)),
                     prefix, s.reference(q1, k1, v1, is_causal=False))
        outcomes.append(o)
        details.append(f"row {i}: {o.discrepancy:.3g}")
    return worst(outcomes, details)


def _power_of_two_scale(head_dim: int) -> float:
    # A power of two makes s·q exact in binary floating point, and differs from 1/√D.
    return 0.5 if not math.isclose(ref.default_scale(head_dim), 0.5) else 0.25


def explicit_scale(s: Subject) -> Outcome:
    """impl(q, scale=c) equals impl(c·q, scale=1): the explicit scale is used (prescaled-query).
    c is negative (SDPA takes any real scale): a kernel that splits the scale as √|c| over q and k,
    or takes its log, loses the sign. Positive explicit scales are the default-scale check's."""
    c = -_power_of_two_scale(s.case.head_dim)
    q2 = s.q * c
    out = s.run(scale=c)
    o = relation(s, out, s.reference(scale=c), s.run(q=q2, scale=1.0), s.reference(q=q2, scale=1.0))
    bad = int((~torch.isfinite(out)).sum())
    return Outcome(o.discrepancy, o.bound, f"{bad} non-finite outputs at scale {c}" if bad else "")


def default_scale(s: Subject) -> Outcome:
    """scale=None means 1/√D, the factor that restores unit variance to the scores."""
    c = ref.default_scale(s.case.head_dim)
    base = (s.output(), s.base) if s.case.scale is None else (s.run(scale=None), s.reference(scale=None))
    return relation(s, *base, s.run(scale=c), s.reference(scale=c))


def zero_scale(s: Subject) -> Outcome:
    """scale=0.0 makes every visible score 0: the output is the mean of the visible values (a
    running prefix mean under the causal mask). Catches ``scale or 1/√D``, which reads 0 as None."""
    out = s.run(scale=0.0)
    o = against(s, out, s.reference(scale=0.0))
    bad = int((~torch.isfinite(out)).sum())
    return Outcome(o.discrepancy, o.bound, f"{bad} non-finite outputs" if bad else "")


def _bit_identical(a: torch.Tensor, b: torch.Tensor) -> int:
    """How many elements differ in their bits (NaNs with equal bits count as equal)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return max(a.numel(), b.numel(), 1)
    return int((a.cpu().contiguous().view(torch.uint8) != b.cpu().contiguous().view(torch.uint8)).sum())


def determinism(s: Subject) -> Outcome:
    """The same call twice gives bit-identical outputs (and, where the backward is judged, gradients):
    a kernel whose reduction order depends on scheduling or on a random draw breaks reproducibility."""
    differing = _bit_identical(s.output(), s.run())
    detail = f"forward: {differing} bytes differ"
    return Outcome(float(differing), 0.0, detail)


def backward_determinism(s: Subject) -> Outcome:
    first, second = s.base_backward, s.backward()
    per = [_bit_identical(a, b) for a, b in zip(first.got, second.got)]
    return Outcome(float(sum(per)), 0.0, "bytes differing in dq, dk, dv: " + ", ".join(map(str, per)))


def error_growth(s: Subject) -> Outcome:
    """Forward error at key lengths SWEEP_LENGTHS, each by the low-precision rule, on values with
    mean 1 (v + 1: activations carry a common offset, and an output of size ~1 puts the rule's
    floor, one rounding at |o| + 0.3, at the output's own scale rather than far above it).

    The plain reference's error stays flat with length (it sums in float32 inside a matmul); a
    kernel keeping its running sum or accumulator in the input's half precision rounds every
    block's contribution at the running total's scale, so its relative error grows like
    √(blocks) · eps: past the rule at 8193 keys with 16-wide blocks in both half types."""
    outcomes, details = [], []
    for n in SWEEP_LENGTHS:
        sub = Subject(s.impl, Case(f"{s.case.name}-{n}", s.case.batch, s.case.q_heads, s.case.kv_heads,
                                   s.case.n_q, n, s.case.head_dim, s.case.causal), s.dtype, s.device, s.seed)
        v1 = sub.cast(sub.v.double() + 1)
        o = against(sub, sub.run(v=v1), sub.reference(v=v1))
        outcomes.append(o)
        details.append(f"Nk={n}: {o.figures}")
    return worst(outcomes, details)


def gqa_equals_repeated_mha(s: Subject) -> Outcome:
    """GQA equals MHA with each KV head repeat-interleaved over its group of query heads."""
    hq = s.q.shape[1]
    k2, v2 = ref.repeat_kv(s.k, hq), ref.repeat_kv(s.v, hq)
    mha = s.run(k=k2, v=v2, enable_gqa=False)
    return relation(s, s.output(), s.base, mha, s.reference(k=k2, v=v2, enable_gqa=False))


@functools.lru_cache(maxsize=None)
def _proved(claim_id: str):
    """The claim's derivation, which must verify before a check builds on it (once per process)."""
    from proofs.claims import proved

    return proved(claim_id)


@functools.lru_cache(maxsize=1)
def _merge_function():
    """The online-softmax merge for the output, as proved, lambdified over (m1, l1, o1, m2, l2, o2)."""
    import sympy as sp

    d = _proved("online-softmax-merge")
    return sp.lambdify(d.result["symbols"], d.result["o"], modules="numpy")


def _block_state(s: Subject, k, v):
    """(m, l) of a key block in float64 (m the row max of the scaled scores, l = Σ exp(s - m))."""
    q64, k64 = s.q.cpu().double(), k.cpu().double()
    if s.case.gqa:
        k64 = ref.repeat_kv(k64, q64.shape[1])
    scale = ref.default_scale(s.case.head_dim) if s.case.scale is None else s.case.scale
    scores = (q64 * scale) @ k64.transpose(-2, -1)  # (B, Hq, Nq, n)
    m = scores.amax(dim=-1, keepdim=True)  # (B, Hq, Nq, 1)
    return m, (scores - m).exp().sum(dim=-1, keepdim=True)


def online_softmax_merge(s: Subject) -> Outcome:
    """impl over all keys equals the proved merge of impl over two key blocks (split off-block)."""
    split = max(1, (2 * s.case.n_k) // 5)
    parts = [(s.k[:, :, :split], s.v[:, :, :split]), (s.k[:, :, split:], s.v[:, :, split:])]
    states, errs = [], []
    for k_part, v_part in parts:
        m, l = _block_state(s, k_part, v_part)
        o = s.run(k=k_part, v=v_part).cpu().double()
        states += [m.numpy(), l.numpy(), o.numpy()]
        errs.append(s.reference(k=k_part, v=v_part).error)
    merged = torch.from_numpy(_merge_function()(*states))  # (B, Hq, Nq, D)
    diff = s.output().cpu().double() - merged
    return Outcome(tol.max_abs_error(diff, torch.zeros_like(diff)),
                   tol.MULT * (s.base.error + sum(errs)) + tol.floor(s.dtype, s.base.value, s.base.sensitivity, lse_size=s.base.lse_size))


# Robustness: agreement with float64 on inputs built to break unstable kernels. Non-finite output
# counts as an infinite discrepancy.
extreme_logits = reference_agreement
mixed_magnitude_rows = reference_agreement
hugely_negative_rows = reference_agreement


# ===================================================================== backward invariants


def backward_agreement(s: Subject) -> Outcome:
    """dq, dk, dv against float64 autograd (GQA: summed over each group), by the low-precision rule."""
    got, gold, plain = s.gradients
    return gradients_against(s, got, gold, plain, s.gradient_sizes)


def backward_key_gradient_sum(s: Subject) -> Outcome:
    """Σ_j dk_j = 0 per head: dk_j = scale Σ_i dS_ij q_i with dS = P∘(dP - D), and every row of dS
    sums to zero because D_i = rowsum(dO∘O) = rowsum(P∘dP) (the attention-backward identity)."""
    _proved("attention-backward")
    got, gold, plain = s.gradients
    total = got[1].double().sum(dim=-2)  # (B, Hkv, D)
    total64, total_plain = gold[1].sum(dim=-2), plain[1].double().sum(dim=-2)
    scale_of_terms = s.gradient_sizes.sizes[1].sum(dim=-2)  # rounding of a sum acts at Σ|terms|
    return Outcome(tol.max_abs_error(total, total64),
                   tol.bound(s.dtype, tol.max_abs_error(total_plain, total64), scale_of_terms))


@functools.lru_cache(maxsize=None)
def _jacobian_function(n: int):
    """J(a) = diag(a) - a aᵀ as derived by proofs (softmax_jacobian(n).result), lambdified."""
    import sympy as sp

    from proofs.claims import require_proved
    from proofs.theorems.softmax import probabilities, softmax_jacobian

    d = require_proved(softmax_jacobian(n), f"softmax-jacobian for n = {n}")
    return sp.lambdify(list(probabilities(n)), d.result, modules="numpy")


def jacobian_gradients(s: Subject):
    """(dq, dk, dv) in float64 by the chain rule through the proved softmax Jacobian, no autograd."""
    q, k, v, dout = (t.cpu().double() for t in (s.q, s.k, s.v, s.dout))
    p = ref.probabilities(q, k, **s.kwargs())  # (B, Hq, Nq, Nk)
    jac = _jacobian_function(p.shape[-1])(*p.unbind(-1))  # nested (Nk, Nk) of (B, Hq, Nq) arrays
    jac = torch.as_tensor(np.array(jac, dtype=np.float64)).permute(2, 3, 4, 0, 1)  # (B, Hq, Nq, Nk, Nk)

    def through_jacobian(p, dp):  # dS = Jᵀ dP = J dP, J being symmetric
        return (jac @ dp.unsqueeze(-1)).squeeze(-1)  # (B, Hq, Nq, Nk)

    return ref.chain_rule_gradients(q, k, v, dout, p, through_jacobian, scale=s.case.scale, enable_gqa=s.case.gqa)


def softmax_jacobian(s: Subject) -> Outcome:
    """impl's gradients against gradients built from the proved Jacobian J = diag(a) - a aᵀ."""
    got, _, plain = s.gradients
    return gradients_against(s, got, jacobian_gradients(s), plain, s.gradient_sizes)


# ===================================================================== the registry

# The features an invariant needs from an implementation; one it lacks makes the invariant
# "not applicable" (reported, never failed). See ``features.py``.
CAUSAL, GQA, BACKWARD, ATTN_MASK, DROPOUT = "causal", "gqa", "backward", "attn_mask", "dropout_p"


@dataclass(frozen=True)
class Invariant:
    name: str
    claim_id: str | None  # the proved claim it checks first (shown in reports)
    check: Callable[[Subject], Outcome]
    applies: Callable[[Case], bool]
    needs: frozenset = frozenset()
    bug_classes: str = ""  # what it is there to catch (the README's table is built from this)
    dtypes: frozenset | None = None  # the dtypes it judges (None: every one)
    also_claims: tuple[str, ...] = ()  # further proved claims it serves

    @property
    def claims(self) -> tuple[str, ...]:
        """Every proved claim the invariant serves (an invariant may serve several)."""
        return ((self.claim_id,) if self.claim_id else ()) + tuple(self.also_claims)

    @property
    def backward(self) -> bool:
        return BACKWARD in self.needs

    def runs_on(self, case: Case) -> bool:
        """It applies to the case, and the case is not forward-only while it needs more than the forward."""
        return self.applies(case) and not (case.forward_only and self.needs & {BACKWARD, ATTN_MASK, DROPOUT})


def _random(c: Case) -> bool:
    return c.kind == RANDOM


def _needs(*features: str) -> frozenset:
    return frozenset(features)


_CORE: tuple[Invariant, ...] = (
    Invariant("output-dtype-shape", None, output_dtype_shape, lambda c: c.kind not in SYNTHETIC,
              bug_classes="wrong output dtype, shape or device; output a view of an input (a one-key "
                          "fast path returning v: writing into it corrupts the caller's KV cache); an inference "
                          "tensor returned outside inference_mode (a no-grad path run under inference_mode)"),
    Invariant("inputs-untouched", None, inputs_untouched, _random,
              bug_classes="writes into q, k or v (in-place pre-scale)"),
    Invariant("reference-agreement", None, reference_agreement, _random,
              bug_classes="any forward error beyond the low-precision rule (wrong internal precision, "
                          "multi-block and tail-block bugs at 64/128-wide tiles, lost batch/head strides)"),
    Invariant("strided-inputs", None, strided_inputs, lambda c: _random(c) and max(c.q_heads, c.n_q, c.n_k) > 1,
              bug_classes="ignores the inputs' strides (a head-dim stride of 2 read as 1); batch stride taken "
                          "from the shape; storage offset ignored (packed QKV)"),
    Invariant("rows-sum-to-one", "softmax-normalisation", rows_sum_to_one, _random,
              bug_classes="mask after softmax, wrong softmax axis, denominator not rescaled"),
    Invariant("convex-hull", "softmax-normalisation", convex_hull, _random,
              bug_classes="weights that go negative (exp missing)"),
    Invariant("key-shift-invariance", "softmax-shift-invariance", key_shift_invariance, _random,
              bug_classes="stabilising max over the wrong axis"),
    Invariant("key-permutation-invariance", None, key_permutation_invariance,
              lambda c: _random(c) and not c.causal and c.n_k > 1, bug_classes="dropped tail key block"),
    Invariant("query-permutation-equivariance", None, query_permutation_equivariance,
              lambda c: _random(c) and not c.causal and c.n_q > 1, bug_classes="unwritten tail query block"),
    Invariant("causality", "causal-mask-top-left", causality,
              lambda c: _random(c) and c.causal and min(c.n_q, c.n_k) >= 2, _needs(CAUSAL),
              bug_classes="causal mask leaks future keys"),
    Invariant("causal-alignment", "causal-mask-top-left", causal_alignment, lambda c: _random(c) and c.causal,
              _needs(CAUSAL), bug_classes="causal off by one, bottom-right alignment, lost query-block offset, "
                                          "unguarded fully masked block, decode path ignoring is_causal (Nq = 1)"),
    Invariant("explicit-scale", "prescaled-query", explicit_scale, _random,
              bug_classes="explicit scale ignored; negative scale made positive (√|scale| on q and k)"),
    Invariant("mismatched-heads-refused", None, mismatched_heads_refused,
              lambda c: _random(c) and c.gqa and 1 < c.kv_heads < c.q_heads, _needs(GQA),
              bug_classes="Hq ≠ Hkv silently broadcast without enable_gqa"),
    Invariant("default-scale", "scaled-score-unit-variance", default_scale, _random,
              bug_classes="wrong default scale (1/D)"),
    Invariant("zero-scale", None, zero_scale, _random, bug_classes="scale=0.0 read as None (`scale or 1/√D`)"),
    Invariant("gqa-equals-repeated-mha", "gqa-equals-repeated-mha", gqa_equals_repeated_mha,
              lambda c: _random(c) and c.gqa, _needs(GQA), bug_classes="wrong GQA/MQA head mapping"),
    Invariant("online-softmax-merge", "online-softmax-merge", online_softmax_merge,
              lambda c: _random(c) and not c.causal and c.n_k >= 2, bug_classes="accumulator not rescaled"),
    Invariant("determinism", None, determinism, _random,
              bug_classes="run-to-run nondeterminism (scheduling- or RNG-dependent reduction order)"),
    Invariant("error-growth", None, error_growth, lambda c: c.kind == SWEEP,
              bug_classes="low-precision running max/sum/accumulator (error grows with length)"),
    Invariant("extreme-logits", "softmax-shift-invariance", extreme_logits, lambda c: c.kind == EXTREME,
              bug_classes="no max subtraction (overflow)"),
    Invariant("mixed-magnitude-rows", "softmax-shift-invariance", mixed_magnitude_rows, lambda c: c.kind == MIXED,
              bug_classes="global instead of per-row max"),
    Invariant("hugely-negative-rows", "causal-mask-top-left", hugely_negative_rows, lambda c: c.kind == NEGATIVE,
              bug_classes="finite mask sentinel (-1e4)"),
    Invariant("long-causal-positions", None, long_causal_positions, lambda c: c.kind == POSITIONS,
              _needs(CAUSAL), bug_classes=f"positions or indices computed in low precision (a causal mask from "
                                          f"float16 positions, wrong past {POSITION_EXACT}; bfloat16 past 256)"),
    Invariant("backward-agreement", None, backward_agreement, _random, _needs(BACKWARD),
              bug_classes="any gradient error beyond the low-precision rule (GQA gradients not summed)"),
    Invariant("backward-key-gradient-sum", "attention-backward", backward_key_gradient_sum, _random,
              _needs(BACKWARD), bug_classes="softmax backward without the D term"),
    Invariant("softmax-jacobian", "softmax-jacobian", softmax_jacobian,
              lambda c: _random(c) and c.n_k <= JACOBIAN_MAX_KEYS, _needs(BACKWARD),
              bug_classes="backward dq missing the scale"),
    Invariant("backward-determinism", None, backward_determinism, lambda c: _random(c) and c.n_k > 1,
              _needs(BACKWARD), bug_classes="nondeterministic backward (atomic-order accumulation)"),
)



# The modules whose invariants make up the registry, in the order the registry lists them. The
# registry imports them itself on first use, so what it holds and in which order does not depend
# on which module a caller happened to import first.
FAMILIES = ("kernels.harness.invariants", "kernels.harness.training", "kernels.harness.masks",
            "kernels.harness.dropout", "kernels.harness.bias", "kernels.harness.rounding_bound",
            "kernels.harness.edges", "kernels.harness.processes", "kernels.harness.float64", "kernels.harness.crosscall", "kernels.harness.dropout_lags",
            "kernels.harness.generate")


class Registry(Sequence):
    """Every invariant, each once by name, ordered by family (FAMILIES) and within a family by its
    registration order: the same list whatever was imported first."""

    def __init__(self):
        self._by_family: dict[str, list[Invariant]] = {}
        self._loading = False

    def add(self, invariant: Invariant, family: str) -> Invariant:
        if not isinstance(invariant, Invariant):
            raise TypeError(f"invariant must be an Invariant, got {type(invariant).__name__}")
        if family not in FAMILIES:
            raise ValueError(f"invariants register from one of the modules in FAMILIES, not {family!r}")
        known = {i.name: f for f, invs in self._by_family.items() for i in invs}
        if invariant.name in known:
            raise ValueError(f"an invariant named {invariant.name!r} is already registered (by {known[invariant.name]})")
        self._by_family.setdefault(family, []).append(invariant)
        return invariant

    def _all(self) -> list[Invariant]:
        if not self._loading and len(self._by_family) < len(FAMILIES):
            import importlib

            self._loading = True  # a family module importing another must not recurse
            try:
                for family in FAMILIES:
                    importlib.import_module(family)
            finally:
                self._loading = False
        return [i for f in FAMILIES for i in self._by_family.get(f, ())]

    def __getitem__(self, index):
        return self._all()[index]

    def __len__(self) -> int:
        return len(self._all())

    def __iter__(self):
        return iter(self._all())

    def __repr__(self) -> str:
        return f"Registry({[i.name for i in self._all()]})"


INVARIANTS = Registry()
for _inv in _CORE:
    INVARIANTS.add(_inv, __name__)


def register(invariant: Invariant) -> Invariant:
    """Add an invariant to the registry from one of the FAMILIES modules (the caller's module)."""
    family = sys._getframe(1).f_globals.get("__name__", "")
    return INVARIANTS.add(invariant, family)


def invariant_named(name: str) -> Invariant:
    for i in INVARIANTS:
        if i.name == name:
            return i
    raise ValueError(f"no invariant named {name!r}; known: {', '.join(i.name for i in INVARIANTS)}")
