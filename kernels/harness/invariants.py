"""The laws a correct attention implementation obeys, one function per invariant.

Every invariant takes a :class:`Subject` (the implementation, one case, one dtype, its inputs) and
returns an :class:`Outcome`: the measured discrepancy and the bound it must stay within. Bounds
come from the low-precision rule in ``tolerance.py``; a relation between two outputs of the
implementation whose exact values agree (A ≈ B) allows each side its own error, so its bound is
MULT × (reference error of A's input + reference error of B's input) + the floor.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from kernels.harness import reference as ref
from kernels.harness import tolerance as tol
from kernels.harness.cases import EXTREME, MIXED, NEGATIVE, RANDOM, Case, generator, make_inputs

# Cases small enough for the symbolic softmax Jacobian (an n × n SymPy matrix per key count n).
JACOBIAN_MAX_KEYS = 8


@dataclass(frozen=True)
class Outcome:
    discrepancy: float
    bound: float
    detail: str = ""


class Subject:
    """One implementation on one case in one dtype: its inputs, its calls, the golden values."""

    def __init__(self, impl: Callable, case: Case, dtype: torch.dtype, device: str, seed: int):
        self.impl, self.case, self.dtype, self.device, self.seed = impl, case, dtype, device, seed
        self.q, self.k, self.v, self.dout = make_inputs(case, dtype, device, seed)

    # ---------------------------------------------------------------- calls
    def kwargs(self, **overrides) -> dict:
        kw = dict(is_causal=self.case.causal, scale=None, enable_gqa=self.case.gqa)
        kw.update(overrides)
        return kw

    def _call(self, q, k, v, **overrides):
        """impl on copies of q, k, v (strides kept): (what it returned, the copies after the call).
        An impl that writes into its inputs is named by inputs-untouched and must not corrupt the
        inputs of every later check."""
        q, k, v = q.clone(), k.clone(), v.clone()
        with torch.no_grad():
            return self.impl(q, k, v, **self.kwargs(**overrides)), (q, k, v)

    def run(self, q=None, k=None, v=None, **overrides) -> torch.Tensor:
        q, k, v = (self.q if q is None else q), (self.k if k is None else k), (self.v if v is None else v)
        return _checked_output(self._call(q, k, v, **overrides)[0], q, v)

    @functools.cached_property
    def first_call(self):
        """impl on the base inputs, once: (what it returned, names of the inputs it changed)."""
        raw, after = self._call(self.q, self.k, self.v)
        changed = [name for name, x, y in zip("qkv", (self.q, self.k, self.v), after) if not torch.equal(x, y)]
        return raw, changed

    def output(self) -> torch.Tensor:
        return _checked_output(self.first_call[0], self.q, self.v)

    # ---------------------------------------------------------------- references
    def reference(self, q=None, k=None, v=None, **overrides) -> tuple[torch.Tensor, float]:
        """(float64 golden output, error of the plain same-precision reference against it)."""
        q, k, v = (self.q if q is None else q), (self.k if k is None else k), (self.v if v is None else v)
        kw = self.kwargs(**overrides)
        gold = ref.attention64(q.cpu(), k.cpu(), v.cpu(), **kw)
        return gold, tol.max_abs_error(ref.attention(q, k, v, **kw).cpu(), gold)

    @functools.cached_property
    def base(self) -> tuple[torch.Tensor, float]:
        return self.reference()

    @functools.cached_property
    def gradients(self):
        """(impl's (dq, dk, dv), golden float64 ones, plain same-precision ones), all on the CPU."""
        kw = self.kwargs()
        _, got = ref.output_and_grads(self.impl, self.q, self.k, self.v, self.dout, **kw)
        for name, g, x in zip(("dq", "dk", "dv"), got, (self.q, self.k, self.v)):
            if tuple(g.shape) != tuple(x.shape):
                raise ValueError(f"{name} has shape {tuple(g.shape)}, expected {tuple(x.shape)}")
        _, gold = ref.output_and_grads(ref.attention, self.q.cpu(), self.k.cpu(), self.v.cpu(), self.dout.cpu(),
                                       upcast=True, **kw)
        _, plain = ref.output_and_grads(ref.attention, self.q, self.k, self.v, self.dout, **kw)
        return tuple(g.cpu() for g in got), gold, tuple(g.cpu() for g in plain)

    @functools.cached_property
    def gradient_sizes(self):
        """Float64 gradients with every factor made absolute: the scale rounding acts at."""
        return ref.gradient_term_sizes(*(t.cpu() for t in (self.q, self.k, self.v, self.dout)), **self.kwargs())

    def rng(self, label: str) -> torch.Generator:
        return generator(self.seed, self.case.name, str(self.dtype), label)

    def cast(self, x: torch.Tensor) -> torch.Tensor:
        return x.to(device=self.device, dtype=self.dtype)


def _checked_output(out, q, v) -> torch.Tensor:
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"impl returned {type(out).__name__}, expected a torch.Tensor")
    expected = tuple(q.shape[:-1]) + (v.shape[-1],)
    if tuple(out.shape) != expected:
        raise ValueError(f"output has shape {tuple(out.shape)}, expected {expected}")
    return out.detach()


def _against(s: Subject, observed, golden, reference_error: float, size=None) -> Outcome:
    """observed vs its float64 golden value, by the low-precision rule (floor at ``size``, default golden)."""
    return Outcome(tol.max_abs_error(observed.cpu(), golden),
                   tol.bound(s.dtype, reference_error, golden if size is None else size))


def _relation(s: Subject, a, a_gold, a_err, b, b_gold, b_err) -> Outcome:
    """Two impl outputs whose golden values agree up to (a_gold - b_gold), known in float64.

    Discrepancy |(a - a_gold) - (b - b_gold)|: the law itself, with whatever the rounding of a
    transformed input changed in the exact answer taken out."""
    diff = (a.cpu().double() - b.cpu().double()) - (a_gold - b_gold)
    disc = tol.max_abs_error(diff, torch.zeros_like(diff))
    return Outcome(disc, tol.MULT * (a_err + b_err) + tol.floor(s.dtype, a_gold))


# ===================================================================== forward invariants


def reference_agreement(s: Subject) -> Outcome:
    gold, err = s.base
    return _against(s, s.output(), gold, err)


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
    return Outcome(math.inf if problems else 0.0, 0.0, "; ".join(problems))


def inputs_untouched(s: Subject) -> Outcome:
    """impl may not write into q, k or v (an in-place pre-scale of q is the classic slip)."""
    changed = s.first_call[1]
    return Outcome(math.inf if changed else 0.0, 0.0, f"impl changed {', '.join(changed)}" if changed else "")


def _strided(x: torch.Tensor) -> torch.Tensor:
    """The same values as a non-contiguous view: (B, H, N, D) read out of (B, N, H, D) storage,
    the layout a projection followed by .view(B, N, H, D).transpose(1, 2) produces."""
    return x.transpose(1, 2).contiguous().transpose(1, 2)


def strided_inputs(s: Subject) -> Outcome:
    """Non-contiguous q, k, v (the usual (B, N, H, D) layout viewed as (B, H, N, D)) give the same output."""
    q2, k2, v2 = _strided(s.q), _strided(s.k), _strided(s.v)
    gold, err = s.base
    return _relation(s, s.run(q2, k2, v2), gold, err, s.output(), gold, err)


def rows_sum_to_one(s: Subject) -> Outcome:
    """softmax rows are probability vectors: with V = 1 the output is exactly 1."""
    ones = torch.ones_like(s.v)
    out = s.run(v=ones)
    return _against(s, out, torch.ones(out.shape, dtype=torch.float64), s.reference(v=ones)[1])


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
    gold, err = s.base
    return Outcome(float(outside.max()), tol.bound(s.dtype, err, gold))


def key_shift_invariance(s: Subject) -> Outcome:
    """Adding one vector u to every key shifts row i's scores by q_i·u: the output is unchanged."""
    u = torch.randn(s.k.shape[:2] + (1, s.k.shape[-1]), generator=s.rng("shift"), dtype=torch.float64)
    k2 = s.cast(s.k.double() + 2 * u.to(s.k.device))  # (B, Hkv, Nk, D)
    return _relation(s, s.run(k=k2), *s.reference(k=k2), s.output(), *s.base)


def _perm(s: Subject, n: int, label: str) -> torch.Tensor:
    return torch.randperm(n, generator=s.rng(label)).to(s.q.device)


def key_permutation_invariance(s: Subject) -> Outcome:
    """Without a mask, attention is a set function of the (key, value) pairs."""
    p = _perm(s, s.case.n_k, "keys")
    k2, v2 = s.k[:, :, p], s.v[:, :, p]
    return _relation(s, s.run(k=k2, v=v2), *s.reference(k=k2, v=v2), s.output(), *s.base)


def query_permutation_equivariance(s: Subject) -> Outcome:
    """Without a mask, permuting the queries permutes the output rows."""
    p = _perm(s, s.case.n_q, "queries")
    q2 = s.q[:, :, p]
    gold, err = s.base
    return _relation(s, s.run(q=q2), *s.reference(q=q2), s.output()[:, :, p], gold[:, :, p.cpu()], err)


def causality(s: Subject) -> Outcome:
    """Row i may not move when keys and values after position i change (top-left alignment)."""
    cut = min(s.case.n_q, s.case.n_k) // 2  # rows < cut see keys < cut only
    noise = torch.randn(s.k.shape[:2] + (s.case.n_k - cut, s.k.shape[-1]), generator=s.rng("future"),
                        dtype=torch.float64)
    k2, v2 = s.k.clone(), s.v.clone()
    k2[:, :, cut:] = s.cast(3 * noise)
    v2[:, :, cut:] = s.cast(-3 * noise.flip(-1))
    gold, err = s.base
    gold2, err2 = s.reference(k=k2, v=v2)
    rows = slice(0, cut)
    return _relation(s, s.run(k=k2, v=v2)[:, :, rows], gold2[:, :, rows], err2,
                     s.output()[:, :, rows], gold[:, :, rows], err)


def causal_alignment(s: Subject) -> Outcome:
    """Row i of causal attention equals full attention of query i over keys 0..i (top-left)."""
    n_q, n_k = s.case.n_q, s.case.n_k
    gold, err = s.base
    outcomes, details = [], []
    for i in sorted({0, min(n_q, n_k) - 1, n_q - 1}):
        seen = min(i + 1, n_k)
        q1, k1, v1 = s.q[:, :, i:i + 1], s.k[:, :, :seen], s.v[:, :, :seen]
        prefix = s.run(q1, k1, v1, is_causal=False)
        o = _relation(s, s.output()[:, :, i:i + 1], gold[:, :, i:i + 1], err,
                      prefix, *s.reference(q1, k1, v1, is_causal=False))
        outcomes.append(o)
        details.append(f"row {i}: {o.discrepancy:.3g}")
    return _worst(outcomes, details)


def _worst(outcomes: list[Outcome], details: list[str]) -> Outcome:
    """The outcome closest to (or furthest past) its bound, with every part's figures as detail."""
    worst = max(outcomes, key=_ratio)
    return Outcome(worst.discrepancy, worst.bound, "; ".join(details))


def _ratio(o: Outcome) -> float:
    if math.isnan(o.discrepancy):
        return math.inf
    return o.discrepancy / o.bound if o.bound > 0 else (math.inf if o.discrepancy > 0 else 0.0)


def _power_of_two_scale(head_dim: int) -> float:
    # A power of two makes s·q exact in binary floating point, and differs from 1/√D.
    return 0.5 if not math.isclose(ref.default_scale(head_dim), 0.5) else 0.25


def explicit_scale(s: Subject) -> Outcome:
    """impl(q, scale=c) equals impl(c·q, scale=1): the explicit scale is used (prescaled-query)."""
    c = _power_of_two_scale(s.case.head_dim)
    q2 = s.q * c
    return _relation(s, s.run(scale=c), *s.reference(scale=c), s.run(q=q2, scale=1.0), *s.reference(q=q2, scale=1.0))


def default_scale(s: Subject) -> Outcome:
    """scale=None means 1/√D, the factor that restores unit variance to the scores."""
    c = ref.default_scale(s.case.head_dim)
    return _relation(s, s.output(), *s.base, s.run(scale=c), *s.reference(scale=c))


def gqa_equals_repeated_mha(s: Subject) -> Outcome:
    """GQA equals MHA with each KV head repeat-interleaved over its group of query heads."""
    hq = s.q.shape[1]
    k2, v2 = ref.repeat_kv(s.k, hq), ref.repeat_kv(s.v, hq)
    mha = s.run(k=k2, v=v2, enable_gqa=False)
    return _relation(s, s.output(), *s.base, mha, *s.reference(k=k2, v=v2, enable_gqa=False))


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
    scores = (q64 * ref.default_scale(s.case.head_dim)) @ k64.transpose(-2, -1)  # (B, Hq, Nq, n)
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
        errs.append(s.reference(k=k_part, v=v_part)[1])
    merged = torch.from_numpy(_merge_function()(*states))  # (B, Hq, Nq, D)
    gold, err = s.base
    diff = s.output().cpu().double() - merged
    return Outcome(tol.max_abs_error(diff, torch.zeros_like(diff)),
                   tol.MULT * (err + sum(errs)) + tol.floor(s.dtype, gold))


# Robustness: agreement with float64 on inputs built to break unstable kernels. Non-finite output
# counts as an infinite discrepancy.
extreme_logits = reference_agreement
mixed_magnitude_rows = reference_agreement
hugely_negative_rows = reference_agreement


# ===================================================================== backward invariants


def backward_agreement(s: Subject) -> Outcome:
    """dq, dk, dv against float64 autograd (GQA: summed over each group), by the low-precision rule."""
    got, gold, plain = s.gradients
    return _gradients_against(s, got, gold, plain)


def _gradients_against(s: Subject, got, golden, plain) -> Outcome:
    outcomes, details = [], []
    for name, g, g64, gp, size in zip(("dq", "dk", "dv"), got, golden, plain, s.gradient_sizes):
        o = _against(s, g, g64, tol.max_abs_error(gp, g64), size)
        outcomes.append(o)
        details.append(f"{name} {o.discrepancy:.3g}/{o.bound:.3g}")
    return _worst(outcomes, details)


def backward_key_gradient_sum(s: Subject) -> Outcome:
    """Σ_j dk_j = 0 per head: dk_j = scale Σ_i dS_ij q_i with dS = P∘(dP - D), and every row of dS
    sums to zero because D_i = rowsum(dO∘O) = rowsum(P∘dP) (the attention-backward identity)."""
    _proved("attention-backward")
    got, gold, plain = s.gradients
    total = got[1].double().sum(dim=-2)  # (B, Hkv, D)
    total64, total_plain = gold[1].sum(dim=-2), plain[1].double().sum(dim=-2)
    scale_of_terms = s.gradient_sizes[1].sum(dim=-2)  # rounding of a sum acts at Σ|terms|
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
    p = ref.probabilities(q, k, is_causal=s.case.causal, enable_gqa=s.case.gqa)  # (B, Hq, Nq, Nk)
    jac = _jacobian_function(p.shape[-1])(*p.unbind(-1))  # nested (Nk, Nk) of (B, Hq, Nq) arrays
    jac = torch.as_tensor(np.array(jac, dtype=np.float64)).permute(2, 3, 4, 0, 1)  # (B, Hq, Nq, Nk, Nk)

    def through_jacobian(p, dp):  # dS = Jᵀ dP = J dP, J being symmetric
        return (jac @ dp.unsqueeze(-1)).squeeze(-1)  # (B, Hq, Nq, Nk)

    return ref.chain_rule_gradients(q, k, v, dout, p, through_jacobian, enable_gqa=s.case.gqa)


def softmax_jacobian(s: Subject) -> Outcome:
    """impl's gradients against gradients built from the proved Jacobian J = diag(a) - a aᵀ."""
    got, _, plain = s.gradients
    return _gradients_against(s, got, jacobian_gradients(s), plain)


# ===================================================================== the catalogue


@dataclass(frozen=True)
class Invariant:
    name: str
    claim_id: str | None
    check: Callable[[Subject], Outcome]
    applies: Callable[[Case], bool]
    backward: bool = False


def _random(c: Case) -> bool:
    return c.kind == RANDOM


INVARIANTS: tuple[Invariant, ...] = (
    Invariant("output-dtype-shape", None, output_dtype_shape, lambda c: True),
    Invariant("inputs-untouched", None, inputs_untouched, _random),
    Invariant("reference-agreement", None, reference_agreement, _random),
    Invariant("strided-inputs", None, strided_inputs, lambda c: _random(c) and max(c.q_heads, c.n_q, c.n_k) > 1),
    Invariant("rows-sum-to-one", "softmax-normalisation", rows_sum_to_one, _random),
    Invariant("convex-hull", "softmax-normalisation", convex_hull, _random),
    Invariant("key-shift-invariance", "softmax-shift-invariance", key_shift_invariance, _random),
    Invariant("key-permutation-invariance", None, key_permutation_invariance,
              lambda c: _random(c) and not c.causal and c.n_k > 1),
    Invariant("query-permutation-equivariance", None, query_permutation_equivariance,
              lambda c: _random(c) and not c.causal and c.n_q > 1),
    Invariant("causality", "causal-mask-top-left", causality,
              lambda c: _random(c) and c.causal and min(c.n_q, c.n_k) >= 2),
    Invariant("causal-alignment", "causal-mask-top-left", causal_alignment, lambda c: _random(c) and c.causal),
    Invariant("explicit-scale", "prescaled-query", explicit_scale, _random),
    Invariant("default-scale", "scaled-score-unit-variance", default_scale, _random),
    Invariant("gqa-equals-repeated-mha", "gqa-equals-repeated-mha", gqa_equals_repeated_mha,
              lambda c: _random(c) and c.gqa),
    Invariant("online-softmax-merge", "online-softmax-merge", online_softmax_merge,
              lambda c: _random(c) and not c.causal and c.n_k >= 2),
    Invariant("extreme-logits", "softmax-shift-invariance", extreme_logits, lambda c: c.kind == EXTREME),
    Invariant("mixed-magnitude-rows", "softmax-shift-invariance", mixed_magnitude_rows, lambda c: c.kind == MIXED),
    Invariant("hugely-negative-rows", "causal-mask-top-left", hugely_negative_rows, lambda c: c.kind == NEGATIVE),
    Invariant("backward-agreement", None, backward_agreement, _random, backward=True),
    Invariant("backward-key-gradient-sum", "attention-backward", backward_key_gradient_sum, _random, backward=True),
    Invariant("softmax-jacobian", "softmax-jacobian", softmax_jacobian,
              lambda c: _random(c) and c.n_k <= JACOBIAN_MAX_KEYS, backward=True),
)
