"""A backward's upstream gradient dO with one non-finite element (generated-gradients' ``dout_value`` axis).

The gradients are linear in dO: g = Jᵀ dO. One element dO[b, h, i, c] made NaN or ±inf makes non-finite exactly the
entries of g whose Jacobian column (b, h, i, c) is not zero: dq row i of (b, h); every row of dk of (b, h)'s KV head
(dS row i is P_i∘(dP_i - D_i), D_i a sum over the row's keys); column c of dv of that KV head (Σ_i P_ij dO_ic). Every
other entry is the clean problem's. The placement is not hard-coded here: it is float64 autograd's on the same inputs
(``reference.output_and_grads`` with the poisoned dO), and torch 2.13's SDPA math backend puts its non-finite
entries exactly there (measured, float32, float16, bfloat16, with and without GQA, NaN, +inf and -inf: the
counts dq D, dk Nk·D, dv Nk), so do the hand-written backwards of ``references`` (FullAttention, ManualBackward).

Which kind: a NaN in dO leaves NaN in every dependent entry, in any evaluation order (a NaN never cancels), so its
kind is judged (nan_placement's rule). An infinity is another matter: dS_ij = P_ij (dP_ij - D_i) is inf - inf = NaN
when D_i is summed from P∘dP (float64 autograd, SDPA math), ±inf or NaN entry by entry when D_i = rowsum(dO∘O)
(FlashAttention's form; measured on ManualBackwardAttention: dq and dk hold ±inf where float64 holds NaN). So
for an infinity only "non-finite" is judged, not which kind.

Where the element sits: a row that sees every key (no -inf score from the mask or from causal). For a key j a row
hides, dk_j and dv_jc depend on dO_i through P_ij = 0 only: SDPA math adds its -inf mask and so spreads NaN there
(0·NaN), a kernel skipping masked blocks does not, and both are defensible (as nan-propagation's rule says of a
hidden NaN key). A problem with no such row, or with a scale of 0 (dq and dk are then 0 exactly, 0·NaN for a kernel
that multiplies by the scale), or one key (dq, dk exactly 0 again), keeps its finite dO.
"""
from __future__ import annotations

import math

import torch

from kernels.harness import reference as ref
from kernels.harness.subject import Golden, Outcome, Subject, measured

# A drawn gradient problem's dO (None: finite random, as ever), cycled (generate._cycled): four problems in seven
# finite, each non-finite kind within seven gradient problems. Seven: prime to every other cycled axis' length (3, 4,
# 8, 9, 15), so no kind is tied to some values of another axis (six would tie each kind to one context and the finite
# dO to half the sequences).
DOUT_VALUES = (None, "NaN", None, "+inf", None, "-inf", None)


def full_rows(s: Subject, kwargs: dict) -> torch.Tensor:
    """(B, Hq, Nq) bool: the query rows of the problem ``kwargs`` poses on s.q, s.k whose every key score is finite
    in float64 (no key hidden by the mask or by causal)."""
    kw = dict(kwargs)
    if kw.get("attn_mask") is not None:
        kw["attn_mask"] = kw["attn_mask"].detach().cpu()
    scores = ref.scores(s.q.cpu().double(), s.k.cpu().double(), **{n: kw[n] for n in (
        "is_causal", "scale", "enable_gqa", "attn_mask") if n in kw})  # (B, Hq, Nq, Nk)
    return torch.isfinite(scores).all(-1)


def poisoned(s: Subject, kwargs: dict, value: str | None) -> tuple | None:
    """(dO with dO[b, h, i, c] = ``value``, (b, h, i, c)), the row i one that sees every key, drawn by s.rng; or
    None where the problem takes no such dO (module docstring)."""
    scale = kwargs.get("scale")
    if value is None or scale == 0 or s.k.shape[-2] < 2 or s.dout.numel() == 0:
        return None
    rows = full_rows(s, kwargs).nonzero()  # (n, 3)
    if rows.shape[0] == 0:
        return None
    gen = s.rng("dout value")
    b, h, i = (int(x) for x in rows[int(torch.randint(rows.shape[0], (), generator=gen))])
    c = int(torch.randint(s.dout.shape[-1], (), generator=gen))
    dout = s.dout.clone()
    dout[b, h, i, c] = float(value)
    return dout, (b, h, i, c)


def golden(s: Subject, dout: torch.Tensor, kwargs: dict) -> tuple:
    """float64 autograd's (dq, dk, dv) of the subject's q, k, v for ``dout`` (the non-finite placement)."""
    kw = {n: (x.detach().cpu() if torch.is_tensor(x) else x) for n, x in kwargs.items()}
    return ref.output_and_grads(ref.attention, s.q.cpu(), s.k.cpu(), s.v.cpu(), dout.cpu(), upcast=True, **kw)[1]


def placed(s: Subject, got: torch.Tensor, gold: torch.Tensor, error: float, size, sensitivity,
           infinite: bool) -> tuple[Outcome, str]:
    """A gradient for a dO with one non-finite element against float64's for that dO (``gold``): non-finite exactly
    where gold is, by edges.nan_placement's rule (of NaN's kind too; for an ``infinite`` element of dO either kind,
    module docstring); its finite entries, the clean problem's, within the clean problem's bound (``error``, the term
    ``size`` and the score ``sensitivity`` of the gradient for the finite dO)."""
    from kernels.harness.edges import nan_placement

    got = got.double()
    if infinite:  # which non-finite kind is the evaluation order's
        got, gold = (torch.where(torch.isfinite(x), x, math.nan) for x in (got, gold))
    placement, said = nan_placement(s, got, gold, Golden(gold, error, sensitivity))  # (a gradient: no lse term)
    finite = torch.isfinite(gold)
    o = measured(s, torch.where(finite, got, 0.0), torch.where(finite, gold, 0.0), error, size, sensitivity)
    return Outcome(math.inf if math.isinf(placement.discrepancy) else o.discrepancy, o.bound), said
