"""SDPA's contract at its edges (the items of ``contract.py`` the core laws do not reach): empty
dimensions, inputs SDPA refuses, NaN propagation, gradients when only some inputs require grad,
double backward, the output modified in place before backward, a dO of stride 0, broadcast masks in
the backward, the caller's attn_mask left alone, state kept between calls, and the process's global
state. All run on the CONTRACT case (one small GQA shape, Dv ≠ D).

Where SDPA's math backend accepts an input and a kernel cannot serve it (an empty dimension, double
backward, an output written into before backward) refusing with an exception is honest and passes;
answering wrongly fails. Measured on torch 2.13's CPU math backend (see contract.py for each item).
"""
from __future__ import annotations

import contextlib
import faulthandler
import functools
import gc
import inspect
import logging
import math
import os
import pickle
import random
import re
import signal
import sys
import threading
import warnings
from dataclasses import replace

import numpy as np

import torch

from kernels.harness import reference as ref
from kernels.harness import tolerance as tol
from kernels.harness.cases import CONTRACT, Case
from kernels.harness.invariants import ATTN_MASK, BACKWARD, CAUSAL, DROPOUT, GQA, Invariant, register
from kernels.harness.subject import (BadOutput, Golden, GradientScales, Outcome, Subject, against, checked_output,
                                     gradients_against, measured, ratio, subset_gradients, worst)


def _contract(c: Case) -> bool:
    return c.kind == CONTRACT


def _refused(exc: BaseException) -> str:
    return f"refused: {type(exc).__name__}"


# ===================================================================== empty dimensions

def _empty_shapes(s: Subject) -> dict[str, tuple]:
    """(q, k, v) shapes with one dimension 0: B, the heads, Nq, Nk, D (q and k), Dv."""
    b, hq, hkv, nq, nk, d, dv = (s.case.batch, s.case.q_heads, s.case.kv_heads, s.case.n_q, s.case.n_k,
                                 s.case.head_dim, s.case.dv)
    shapes = {"B=0": (0, hq, hkv, nq, nk, d, dv), "H=0": (b, 0, 0, nq, nk, d, dv), "Nq=0": (b, hq, hkv, 0, nk, d, dv),
              "Nk=0": (b, hq, hkv, nq, 0, d, dv), "D=0": (b, hq, hkv, nq, nk, 0, dv), "Dv=0": (b, hq, hkv, nq, nk, d, 0)}
    if hq != hkv:  # every shape in MHA too: a refusal of the GQA one must not hide a wrong MHA answer
        shapes.update({f"{name} MHA": (b_, hq_, hq_, *rest) for name, (b_, hq_, _, *rest) in list(shapes.items())
                       if name != "H=0"})
    return {name: ((b, hq, nq, d), (b, hkv, nk, d), (b, hkv, nk, dv)) for name, (b, hq, hkv, nq, nk, d, dv) in shapes.items()}


def empty_dims(s: Subject) -> Outcome:
    """One dimension 0 at a time. SDPA (math backend, measured) returns shape (B, Hq, Nq, Dv): zeros
    for Nk = 0, the mean of the visible values for D = 0 (every score is an empty sum, 0), and
    gradients of the inputs' shapes (zero where Nk = 0). Right, or refused; never NaN or garbage."""
    details, worst_err = [], 0.0
    for name, shapes in _empty_shapes(s).items():
        q, k, v = (s.randn(f"empty {name} {i}", *shape) for i, shape in enumerate(shapes))
        d_o = s.randn(f"empty {name} dO", *shapes[0][:-1], shapes[2][-1])
        kw = s.kwargs(enable_gqa=s.case.gqa and shapes[0][1] != shapes[1][1])
        leaves = ref.leaves((q, k, v))
        try:
            out = s.impl(*leaves, **kw)
            checked_output(out, q, v)
            grads = torch.autograd.grad(out, leaves, d_o, allow_unused=True) if out.requires_grad else (None,) * 3
        except Exception as exc:  # an honest refusal of a shape the kernel cannot serve
            details.append(f"{name} {_refused(exc)}")
            continue
        # every score is an empty sum when D = 0, whatever the scale: the golden value with scale 1
        gold_kw = dict(kw, scale=1.0) if shapes[0][-1] == 0 and kw["scale"] is None else kw
        _, gold = ref.output_and_grads(ref.attention, q.cpu(), k.cpu(), v.cpu(), d_o.cpu(), upcast=True, **gold_kw)
        gold_out = ref.attention64(q.cpu(), k.cpu(), v.cpu(), **gold_kw)
        errs = [tol.max_abs_error(out.detach().cpu(), gold_out)]
        for g, g64, x in zip(grads, gold, (q, k, v)):
            if x.numel() and g is None:
                errs.append(math.inf)  # a gradient silently missing
            elif g is not None:
                errs.append(math.inf if tuple(g.shape) != tuple(x.shape) else tol.max_abs_error(g.cpu(), g64))
        err = max(errs)
        allowed = tol.floor(s.dtype, gold_out) * 4  # a few roundings at the values' scale (only D = 0 has any)
        worst_err = max(worst_err, err / allowed if allowed else (math.inf if err else 0.0))
        details.append(f"{name}: {err:.3g}")
    return Outcome(worst_err, 1.0, "; ".join(details))


# ===================================================================== refused inputs

def refused_inputs(s: Subject) -> Outcome:
    """Inputs SDPA raises on (torch 2.13, measured): q, k, v of different dtypes ("Expected query,
    key, and value to have the same dtype"); enable_gqa with Hkv not dividing Hq ("Number of heads
    in key and value must divide the number of heads in query"); a k whose head dim is not q's.
    Returning anything is the failure."""
    other = torch.float16 if s.dtype != torch.float16 else torch.bfloat16
    b, hq, nq, d = s.q.shape
    nk, dv = s.case.n_k, s.case.dv
    odd_kv = next(h for h in range(2, hq + 2) if hq % h)  # heads not dividing Hq
    attempts = {
        "k in another dtype": ((s.q, s.k.to(other), s.v), {}),
        "v in another dtype": ((s.q, s.k, s.v.to(other)), {}),
        f"Hkv = {odd_kv} with Hq = {hq}": ((s.q, s.randn("odd kv k", b, odd_kv, nk, d),
                                             s.randn("odd kv v", b, odd_kv, nk, dv)), {"enable_gqa": True}),
        "k's head dim differs from q's": ((s.q, s.randn("wide k", b, s.k.shape[1], nk, d + 1), s.v), {}),
    }  # (k and v of different lengths: kv-lengths-refused)
    accepted = []
    for name, (args, kw) in attempts.items():
        try:
            s._call(*args, **kw)
        except Exception:  # refusing is the contract
            continue
        accepted.append(name)
    return Outcome(math.inf if accepted else 0.0, 0.0,
                   f"accepted: {', '.join(accepted)}" if accepted else f"all {len(attempts)} refused")


def kv_lengths_refused(s: Subject) -> Outcome:
    """k and v of different lengths (Nv = Nk + 1 and Nk - 1, Dv = D: the path most kernels take).
    SDPA's documented shapes give key and value one length S; the math backend raises ("Expected
    size for first two dimensions of batch2 tensor to be: [B·H, Nk] but got: [B·H, Nv]", measured).
    There is no right answer to give: returning anything is the failure (torch 2.13's default CPU
    dispatch, its flash backend, answers with attention over the first min(Nk, Nv) keys:
    kernels/ecosystem/FINDINGS.md)."""
    b, hkv, nk, d = s.k.shape
    accepted = []
    for nv in (nk + 1, nk - 1):
        v = s.randn(f"v of length {nv}", b, hkv, nv, d)
        try:
            s._call(s.q, s.k, v)
        except Exception:  # refusing is the contract
            continue
        accepted.append(f"Nv = {nv} with Nk = {nk}")
    return Outcome(math.inf if accepted else 0.0, 0.0, f"accepted: {', '.join(accepted)}" if accepted else "refused")


def mask_shape_refused(s: Subject) -> Outcome:
    """attn_masks that do not broadcast to (B, Hq, Nq, Nk): one key column too many (a mask built
    for a KV cache's full length), one query row too many, a batch or head size of one more. The
    math backend raises on each (measured: "The size of tensor a (Nk) must match the size of tensor
    b (Nk + 3) at non-singleton dimension 3", likewise dimensions 2, 0, 1). Slicing the mask to fit
    is a guess at what the caller meant; returning anything is the failure."""
    b, hq, nq, nk = s.q.shape[0], s.q.shape[1], s.case.n_q, s.case.n_k
    shapes = {"Nk + 1 key columns": (b, hq, nq, nk + 1), "Nq + 1 query rows": (b, hq, nq + 1, nk),
              "2-D, Nk + 1 key columns": (nq, nk + 1), "batch B + 1": (b + 1, hq, nq, nk),
              "heads Hq + 1": (b, hq + 1, nq, nk)}
    accepted = []
    for name, shape in shapes.items():
        for kind, mask in (("bool", torch.ones(shape, dtype=torch.bool, device=s.device)),
                           ("additive", s.cast(torch.zeros(shape, dtype=torch.float64)))):
            try:
                s._call(s.q, s.k, s.v, attn_mask=mask, is_causal=False)
            except Exception:  # refusing is the contract
                continue
            accepted.append(f"{kind} {name} {shape}")
    return Outcome(math.inf if accepted else 0.0, 0.0,
                   f"accepted: {', '.join(accepted)}" if accepted else f"all {2 * len(shapes)} refused")


# ===================================================================== shapes over a generated space

SHAPE_TENSORS = "qkv"
SHAPE_DIMS = ("batch", "heads", "length", "head dim")
# Each of q, k, v alone, and k and v together (a KV cache's pair: its batch, heads and length move as one; their
# head dims are D and Dv, not one size): (name, indices into (q, k, v)).
SHAPE_PERTURBED = (("q", (0,)), ("k", (1,)), ("v", (2,)), ("k and v", (1, 2)))


def _shape_values(n: int, dim: int, hq: int) -> dict[str, int]:
    """What one dim of size ``n`` becomes: one more, twice, a broadcastable 1, and for the heads a count not
    dividing Hq (the perturbations a caller's off-by-one, doubled or squeezed dim makes)."""
    values = {"+1": n + 1, "×2": 2 * n, "1": 1}
    if dim == 1:
        values["non-divisor"] = next(h for h in range(2, hq + 2) if hq % h)
    return values


def shape_space(s: Subject) -> list[tuple[str, tuple, bool]]:
    """(name, (q, k, v) shapes, enable_gqa) for each perturbation, each distinct shape set once: the case's GQA
    shapes with enable_gqa (and without it: Hkv ≠ Hq then needs the flag), its MHA shapes (k, v with Hq heads)
    without enable_gqa, and from each base every (tensor, dim, value) of _shape_values, k and v also together
    (SHAPE_PERTURBED)."""
    q, k, v = (tuple(t.shape) for t in (s.q, s.k, s.v))
    hq = q[1]
    bases = [("MHA", (q, (*k[:1], hq, *k[2:]), (*v[:1], hq, *v[2:])), False)]
    if k[1] != hq:
        bases[:0] = [("GQA enable_gqa", (q, k, v), True)]
    space, seen = [], set()
    if k[1] != hq:
        space.append((f"Hkv = {k[1]} with Hq = {hq} without enable_gqa", (q, k, v), False))
        seen.add(((q, k, v), False))
    for base, shapes, gqa in bases:
        for tensors, which in SHAPE_PERTURBED:
            i = which[0]
            for dim, dim_name in enumerate(SHAPE_DIMS[:3] if len(which) > 1 else SHAPE_DIMS):
                for how, n in _shape_values(shapes[i][dim], dim, hq).items():
                    new = list(shapes)
                    for j in which:
                        new[j] = (*shapes[j][:dim], n, *shapes[j][dim + 1:])
                    key = (tuple(new), gqa)
                    if n == shapes[i][dim] or key in seen:
                        continue
                    seen.add(key)
                    space.append((f"{base}: {tensors} {dim_name} {how} ({shapes[i][dim]} → {n})", tuple(new), gqa))
    return space


def _sdpa_accepts(q, k, v, gqa: bool):
    """SDPA's math backend on the shapes (float64 on the CPU): its output's shape, or None where it raises."""
    from kernels.harness.peers import sdpa_math

    try:
        return tuple(sdpa_math(q.cpu().double(), k.cpu().double(), v.cpu().double(), enable_gqa=gqa).shape)
    except RuntimeError:  # SDPA's refusals are RuntimeErrors (measured for every refusal in shape_space)
        return None


def shape_contract(s: Subject) -> Outcome:
    """Shapes judged over a generated space (shape_space: each of q, k, v and the pair k, v, each dim, +1, ×2, 1
    and a non-divisor head count, from the case's GQA and MHA shapes; 96 perturbations on the contract case, one
    forward each), SDPA's math backend asked at run time which it accepts (59 refused, 37 answered on the contract
    case; measured, torch 2.13: a batch or head count of 1 broadcasts,
    also q's; v's heads map through v's own count; k/v batches larger than q's, lengths of k and v that differ,
    head counts not dividing Hq raise). Where SDPA raises the impl must refuse: returning anything is the failure
    (red team: k/v batches larger than q's accepted). Where it answers, the impl may refuse (honest) or answer
    SDPA's output shape, agreeing with the float64 golden value by the low-precision rule (red team: v's heads
    read through k's GQA map)."""
    accepted, judged, outcomes, refused_ok, honest = [], [], [], 0, 0
    for name, shapes, gqa in shape_space(s):
        q, k, v = (s.randn(f"shape {name} {t}", *shape) for t, shape in zip(SHAPE_TENSORS, shapes))
        expected = _sdpa_accepts(q, k, v, gqa)
        try:
            out = s._call(q, k, v, enable_gqa=gqa)[0]
        except Exception:  # a refusal: the contract where SDPA refuses, honest where it answers
            refused_ok += expected is None
            honest += expected is not None
            continue
        if expected is None:
            accepted.append(name)
            continue
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != expected or out.dtype != s.dtype:
            got = f"{tuple(out.shape)} {out.dtype}" if isinstance(out, torch.Tensor) else type(out).__name__
            outcomes.append(Outcome(math.inf, 0.0))
            judged.append(f"{name}: returned {got}, SDPA {expected} {s.dtype}")
            continue
        o = against(s, out.detach(), s.reference(q, k, v, enable_gqa=gqa))
        outcomes.append(o)
        judged.append(f"{name}: {o.figures}")
    summary = (f"{refused_ok + len(accepted)} SDPA refuses ({refused_ok} refused), {len(outcomes) + honest} it "
               f"answers ({honest} refused, {len(outcomes)} judged)")
    failing = [j for o, j in zip(outcomes, judged) if not ratio(o) <= 1]
    said = ([f"accepted where SDPA raises: {'; '.join(accepted)}"] if accepted else []) + \
        ([f"past the bound: {'; '.join(failing)}"] if failing else [])
    if not outcomes:
        return Outcome(math.inf if accepted else 0.0, 0.0, ". ".join(said + [summary]))
    w = max(zip(outcomes, judged), key=lambda x: ratio(x[0]))
    if accepted:
        return Outcome(math.inf, 0.0, ". ".join(said + [summary]))
    return Outcome(w[0].discrepancy, w[0].bound, ". ".join(said + [summary] + ([] if failing else [f"worst {w[1]}"])))


# ===================================================================== arguments released

def _released_call(s: Subject, mask: str | None, grad: bool, refs: dict) -> None:
    """One call (forward, and backward when ``grad``) on fresh tensors; only weak references to them and to the
    output leave, in ``refs`` (filled before the call, so a refusal leaves them too)."""
    import weakref

    from kernels.harness.masks import additive_mask, bool_mask

    q, k, v = (s.randn(f"released {t}", *x.shape) for t, x in zip("qkv", (s.q, s.k, s.v)))
    kw = s.kwargs()
    args = {"q": q, "k": k, "v": v}
    if mask is not None:
        shape = (s.q.shape[0], 1, s.case.n_q, s.case.n_k)  # (B, 1, Nq, Nk)
        args["attn_mask"] = (bool_mask if mask == "bool" else additive_mask)(s, shape, f"released {mask}")
        kw.update(attn_mask=args["attn_mask"], is_causal=False)
    for t in (q, k, v):
        t.requires_grad_(grad)
    refs.update({name: weakref.ref(t) for name, t in args.items()})
    with torch.enable_grad() if grad else torch.no_grad():
        out = s.impl(q, k, v, **kw)
    if isinstance(out, torch.Tensor):
        refs["output"] = weakref.ref(out)
    checked_output(out, q, v)
    if grad and out.requires_grad:  # a forward-only impl's output does not: its forward alone is judged
        torch.autograd.grad(out, (q, k, v), s.randn("released dO", *out.shape))


def arguments_released(s: Subject) -> Outcome:
    return _arguments_released(s, (False,))


def arguments_released_backward(s: Subject) -> Outcome:
    """arguments-released's calls with q, k, v requiring grad, forward and backward (an impl offering a backward)."""
    return _arguments_released(s, (True,))


def _arguments_released(s: Subject, grads: tuple) -> Outcome:
    """A call keeps nothing of what it was given or returned: fresh q, k, v (and a boolean and an additive
    attn_mask where the signature offers one), dropout off, under no_grad and with requires_grad (forward and
    backward); every argument and the output held only by weakref.ref once the caller drops them, and after one
    gc.collect() (only where reference counting left one alive) each reference must be dead. Exact, no statistics:
    one reference kept is the finding (red team: an output memo returning the cached tensor by reference, keyed by
    the inputs' data_ptr and version; an unbounded functools.lru_cache of converted masks keyed by the mask, which
    keeps every caller's mask alive).
    What an impl builds itself (a causal mask of a shape, a workspace) may be kept: only the caller's tensors and
    the result are watched."""
    from kernels.harness.features import offered

    masks = ("bool", "additive") if ATTN_MASK in offered(s.impl) else (None,)
    legs, notes = {}, []
    for grad in grads:
        for mask in masks:
            leg = f"{'requires_grad, forward + backward' if grad else 'no_grad'}{f', {mask} mask' if mask else ''}"
            legs[leg] = {}
            try:
                _released_call(s, mask, grad, legs[leg])
            except BadOutput as exc:  # it answered, wrongly
                return Outcome(math.inf, 0.0, f"{leg}: {exc}")
            except Exception as exc:  # a refusal is honest; what it kept is still judged
                notes.append(f"{leg} {_refused(exc)}")
    def survivors():
        return [f"{leg}: {', '.join(alive)}" for leg, refs in legs.items()
                if (alive := [name for name, r in refs.items() if r() is not None])]

    # What reference counting freed needs no collection (a full one costs ~0.2 s in a whole run's heap, measured);
    # a reference cycle holding a tensor (autograd's graph, a closure) is freed by the one gc.collect() before any
    # survivor is named.
    kept = survivors()
    if kept:
        gc.collect()
        kept = survivors()
    detail = "; ".join(([f"kept alive after the call: {'; '.join(kept)}"] if kept else [f"{len(legs)} calls released "
                        "every argument and the output"]) + notes)
    return Outcome(math.inf if kept else 0.0, 0.0, detail)


MASK_DTYPES = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16,
               torch.float32, torch.float64)


def mask_dtype_refused(s: Subject) -> Outcome:
    """An attn_mask of a dtype other than bool, float32 and q's is refused (reference.require_sdpa_mask: SDPA
    math raises "Expected attn_mask dtype to be bool or float or to match query dtype", measured for each
    dtype here). An integer 0/1 mask taken as bool or as an additive one, or a float64 mask cast down, is a
    guess at what the caller meant; answering anything is the failure."""
    accepted = []
    for dtype in MASK_DTYPES:
        if dtype in (torch.float32, s.q.dtype):
            continue
        mask = torch.ones(s.case.n_q, s.case.n_k, device=s.device).to(dtype)  # (Nq, Nk), every key 1
        try:
            s._call(s.q, s.k, s.v, attn_mask=mask, is_causal=False)
        except Exception:  # refusing is the contract
            continue
        accepted.append(str(dtype).removeprefix("torch."))
    return Outcome(math.inf if accepted else 0.0, 0.0,
                   f"accepted: {', '.join(accepted)}" if accepted else "every other dtype refused")


def argument_types(s: Subject) -> Outcome:
    """scale given as an int or a NumPy float is that number (SDPA math and default dispatch, measured: the float's
    output); is_causal given as numpy.bool_, int or a 0-d tensor, true or false, is refused (SDPA: "argument 'is_causal' must be
    bool") or applied as its truth value (red team rt41h: `scale` used only when a Python float, and `is_causal is
    True`, escaped). Judged against the float64 golden value of the plain float and bool."""
    outcomes, said = [], []
    for given, value in ((2, 2.0), (np.float64(0.5), 0.5)):
        o = against(s, s.run(scale=given), s.reference(scale=value))
        outcomes.append(o)
        said.append(f"scale {_type_name(given)} {given}: {o.figures}")
    # each form with both truth values (red team rt44h: `is_causal is not False` turned numpy.bool_(False), 0 and
    # tensor(False) into causal attention, and the truthy forms alone could not show it)
    golden = {True: s.reference(is_causal=True), False: s.reference()}
    for given in (np.bool_(True), 1, torch.tensor(True), np.bool_(False), 0, torch.tensor(False)):
        try:
            out = s.run(is_causal=given)
        except Exception as exc:  # refusing is SDPA's own answer
            said.append(f"is_causal {_type_name(given)} {bool(given)} {_refused(exc)}")
            continue
        o = against(s, out, golden[bool(given)])
        outcomes.append(o)
        said.append(f"is_causal {_type_name(given)} {bool(given)}: {o.figures}")
    return worst(outcomes, said)


# Every way q, k, v can share tensors, as groups of the one leaf each group is: all three (self-attention), and each pair
# with the third apart (red team rt47: q is k with v apart, and k is v with q apart, escaped a check of all three only)
ALIASINGS = (("qkv",), ("qk", "v"), ("qv", "k"), ("kv", "q"))


def aliased_inputs(s: Subject) -> Outcome:
    """For each way of ALIASINGS, the tensors of a group one leaf (`attn(x, x, x)`, `attn(x, x, v)`, `attn(q, m, m)`,
    ...): the output is that of copies, and a shared leaf's gradient is the sum of its group's (dq + dk for q is k),
    against float64 autograd through the same leaves by the low-precision rule, the plain reference also given them
    (autograd sums in the leaf's dtype for both); each leaf's floor at its group's gradient term sizes summed (red team
    rt41h: dq taken as 2·dS·Q when q is k, dS not symmetric; rt47: the same with v apart, and dk + dv returned in both
    slots when k is v). Every tensor takes k's shape (B, Hkv, Nk, D), so any two can be one."""
    kw = s.kwargs(enable_gqa=False)
    shape = s.k.shape  # (B, Hkv, Nk, D)
    dout = s.randn("aliased dO", *shape)  # (B, Hkv, Nk, D)
    drawn = {name: s.randn(f"aliased {name}", *shape)
             for name in "qkv"}
    outcomes, said = [], []
    for groups in ALIASINGS:
        values = {g: drawn[g[0]] for g in groups}  # (B, Hkv, Nk, D) each

        def through_leaves(fn, dtype=None):
            leaves = {g: ref.copy(values[g], dtype).requires_grad_() for g in groups}
            by_name = {name: leaves[g] for g in groups for name in g}
            out = fn(by_name["q"], by_name["k"], by_name["v"], **kw)
            grads = torch.autograd.grad(out, list(leaves.values()), dout.to(out.dtype))
            return out, dict(zip(groups, grads))

        out, got = through_leaves(s.impl)
        inputs = [values[g] for name in "qkv" for g in groups if name in g]  # q, k, v as called
        checked_output(out, inputs[0], inputs[2])
        gold = through_leaves(ref.attention, torch.float64)[1]
        plain = through_leaves(ref.attention)[1]
        args = tuple(t.cpu() for t in (*inputs, dout))
        sizes = dict(zip("qkv", ref.gradient_term_sizes(*args, **kw)))
        sensitivities = dict(zip("qkv", ref.gradient_score_sensitivities(*args, **kw)))
        shared = next(g for g in groups if len(g) > 1)
        name = "attn(" + ", ".join("x" if n in shared else n for n in "qkv") + ")"
        forward = against(s, out.detach(), s.reference(*inputs, enable_gqa=False))
        outcomes.append(forward)
        said.append(f"{name}: output {forward.figures}")
        for g in groups:
            o = measured(s, got[g].cpu(), gold[g], tol.max_abs_error(plain[g].cpu(), gold[g]),
                         sum(sizes[n] for n in g), sum(sensitivities[n] for n in g))
            outcomes.append(o)
            said.append(f"{name}: d{'x' if len(g) > 1 else g} = {' + '.join('d' + n for n in g)} {o.figures}")
    return worst(outcomes, said)


def _type_name(x) -> str:
    return type(x).__name__ if type(x).__module__ == "builtins" else f"{type(x).__module__}.{type(x).__name__}"


def dropout_p_range(s: Subject) -> Outcome:
    """dropout_p = 1 drops every weight: output exactly 0 (measured: math and default dispatch);
    dropout_p = 1.5 is refused ("dropout probability has to be between 0 and 1"); dropout_p = -0.1 (and NaN) is
    refused (the default dispatch) or no dropout at all (the math backend applies dropout only "if greater than
    0.0", measured: the p = 0 output), by the low-precision rule against the no-dropout golden value (red team
    rt40h: -0.1 accepted and rescaled by 1/(1 - p) escaped)."""
    problems, notes = [], []
    try:
        out = s.run(dropout_p=1.0)
        bad = int((out != 0).sum())  # NaN counts: NaN != 0
        if bad:
            problems.append(f"p = 1: {bad} outputs not 0 (max |o| {float(out.abs().nan_to_num(math.inf).max()):.3g})")
    except Exception as exc:  # p = 1 refused: honest, though SDPA answers 0
        notes.append(f"p = 1 {_refused(exc)}")
    try:
        s._call(s.q, s.k, s.v, dropout_p=1.5)
        problems.append("p = 1.5 accepted")
    except Exception:  # refusing is the contract
        pass
    worst_below = Outcome(0.0, 0.0)
    for p in (-0.1, math.nan):
        try:
            o = against(s, s.run(dropout_p=p), s.base)
        except Exception as exc:  # refusing is the contract too
            notes.append(f"p = {p:g} {_refused(exc)}")
            continue
        if not o.discrepancy <= o.bound:
            problems.append(f"p = {p:g} accepted and not the no-dropout output: {o.figures}")
        worst_below = max(worst_below, o, key=ratio)
    return Outcome(math.inf if problems else worst_below.discrepancy, worst_below.bound if not problems else 0.0,
                   "; ".join(problems + notes))


# ===================================================================== NaN

def nan_propagation(s: Subject) -> Outcome:
    """A NaN, +inf or -inf in one element of q, k or v makes non-finite exactly the outputs that float64
    attention makes non-finite, and of its kind (nan_placement): NaN in q[b, h, i, :] one row; in k[b, g, j, :] every row
    of the group; in v[b, g, j, c] column c of every row of the group; an infinity as its scores and products
    make it (+inf in q: ±inf scores, a NaN row; +inf in v: an infinite column). A kernel that hides it (fmax,
    nan_to_num, clamped scores, a max that skips NaN) or spreads it (a shared max) fails."""
    outcomes, details = [], []
    gen = s.rng("nan positions")
    for name, x in (("q", s.q), ("k", s.k), ("v", s.v)):
        pos = tuple(int(torch.randint(n, (1,), generator=gen)) for n in x.shape)
        for kind in ref.NONFINITE:
            bad = x.clone()
            bad[pos] = float(kind)
            args = {"q": s.q, "k": s.k, "v": s.v, name: bad}
            gold = ref.attention64(*(args[n].cpu() for n in "qkv"), **s.kwargs())
            try:
                out = s._call(args["q"], args["k"], args["v"])[0]
                out = checked_output(out, s.q, s.v).cpu().double()
            except Exception as exc:  # non-finite inputs are valid inputs: refusing them is a failure
                outcomes.append(Outcome(math.inf, 0.0))
                details.append(f"{kind} in {name}: raised {type(exc).__name__}")
                continue
            o, said = nan_placement(s, out, gold, s.base)
            outcomes.append(o)
            details.append(f"{kind} in {name}{list(pos)}: {said}")
    return worst(outcomes, details)


def nan_placement(s: Subject, out: torch.Tensor, gold: torch.Tensor, clean: Golden) -> tuple[Outcome, str]:
    """out (float64) non-finite exactly where gold is: NaN where gold is NaN; where gold is ±inf that infinity or
    NaN (a weight a low precision rounds to 0 times an infinite v is NaN: rounding, not a defect). Elsewhere by
    the low-precision rule (``clean``: the same problem's golden without the non-finite entry)."""
    wrong = int(((torch.isfinite(out) != torch.isfinite(gold)) | torch.isnan(gold) & ~torch.isnan(out)
                 | torch.isinf(out) & (out != gold)).sum())
    finite = torch.isfinite(gold)
    o = measured(s, torch.where(finite, out, 0.0), torch.where(finite, gold, 0.0), clean.error,
                 torch.where(finite, gold, 0.0), clean.sensitivity, clean.lse_size)
    return (Outcome(math.inf if wrong else o.discrepancy, o.bound),
            f"{int((~finite).sum())} non-finite expected, {int((~torch.isfinite(out)).sum())} given, {wrong} misplaced "
            f"or of another kind")


# ===================================================================== gradients

SUBSETS = {"q only": (True, False, False), "k and v only": (False, True, True), "v only": (False, False, True),
           "q and k only": (True, True, False)}


def gradient_subsets(s: Subject) -> Outcome:
    """Only some of q, k, v require grad (frozen K/V: only dq; a frozen query: dk, dv): each asked
    gradient as float64 autograd's, by the low-precision rule."""
    _, gold, plain = s.gradients
    outcomes, details = [], []
    for name, wants in SUBSETS.items():
        tensors = [ref.copy(t).requires_grad_(w) for t, w in zip((s.q, s.k, s.v), wants)]
        got, said = subset_gradients(s, tensors, s.kwargs(), gold, plain, s.gradient_sizes)
        outcomes += got
        details += [f"{name}: {d}" for d in said]
    return worst(outcomes, details)


def gradient_sequences(s: Subject) -> Outcome:
    """The gradients item's call sequences, judged on every run (generated-gradients draws them too, but
    a drawn sequence meets a default run's few gradient problems by chance): a second forward of the
    same shape (other values) between the forward and its backward; the second backward through one
    graph (retain_graph=True on the first); an explicit scale of 0 (every weight equal) in the backward."""
    outcomes, details = [], []
    # the case's own heads (grouped, Dv ≠ D) and its plain twin (one KV head a query head, Dv = D): a kernel's own
    # training path is often taken only in the plain form (red team rt50: a half-precision MHA path keeping the
    # backward's row statistics in a workspace per shape escaped, the contract case being GQA)
    plain_twin = Subject(s.impl, replace(s.case, name=f"{s.case.name} (MHA, Dv = D)", kv_heads=s.case.q_heads,
                                         value_dim=None), s.dtype, s.device, s.seed)
    for t, twin in ((s, ""), (plain_twin, "MHA twin, ")):
        _, gold, plain = t.gradients
        for sequence in ("two-layers", "retain-graph"):
            got, said = subset_gradients(t, ref.leaves((t.q, t.k, t.v)), t.kwargs(), gold, plain, t.gradient_sizes,
                                         sequence)
            outcomes += got
            details += [f"{twin}{sequence}: {d}" for d in said]
    zero = s.backward(scale=0.0)
    o = gradients_against(s, zero.got, zero.gold, zero.plain, s.gradient_sizes_for(scale=0.0))
    return worst(outcomes + [o], details + [f"scale 0: {o.figures}"])


def _second_order(fn, q, k, v, dout, weights, kw):
    """Σ_x <d(<out, dO>)/dx, w_x> differentiated again: (d²q, d²k, d²v) by autograd (create_graph)."""
    qkv = ref.leaves((q, k, v))
    out = fn(*qkv, **kw)
    first = torch.autograd.grad(out, qkv, dout.to(out.dtype), create_graph=True)
    total = sum((g * w.to(g.dtype)).sum() for g, w in zip(first, weights))
    return tuple(g.detach() for g in torch.autograd.grad(total, qkv, allow_unused=True))


def double_backward(s: Subject) -> Outcome:
    """Gradients of gradients (a gradient penalty): SDPA's math backend gives them; a kernel must
    give them right or refuse (raise). Judged by the low-precision rule against float64 autograd
    twice through plain attention, with the floor at the golden second derivatives' size."""
    weights = [s.randn(f"second-order weight {n}", *x.shape) for n, x in zip("qkv", (s.q, s.k, s.v))]
    kw = s.kwargs()
    try:
        got = _second_order(s.impl, s.q, s.k, s.v, s.dout, weights, kw)
    except Exception as exc:  # refused: autograd says it cannot differentiate the backward
        return Outcome(0.0, 0.0, _refused(exc))
    cpu = [t.cpu() for t in (s.q, s.k, s.v, s.dout)]
    gold = _second_order(ref.attention, *(t.double() for t in cpu), [w.cpu().double() for w in weights], kw)
    plain = _second_order(ref.attention, s.q, s.k, s.v, s.dout, weights, kw)
    outcomes, details = [], []
    for name, g, g64, gp in zip(("d²q", "d²k", "d²v"), got, gold, plain):
        if g is None and g64 is not None and bool((g64 != 0).any()):
            outcomes.append(Outcome(math.inf, 0.0))
            details.append(f"{name} missing")
            continue
        g = torch.zeros_like(g64) if g is None else g.cpu()
        gp = torch.zeros_like(g64) if gp is None else gp.cpu()
        o = measured(s, g, g64, tol.max_abs_error(gp, g64), g64)
        outcomes.append(o)
        details.append(f"{name} {o.figures}")
    return worst(outcomes, details)


OUTPUT_FACTOR = 3.0


def output_modified_before_backward(s: Subject) -> Outcome:
    """out.mul_(3) before backward: autograd's version counter must either raise (a backward that
    saved the output: torch's default CPU dispatch does, measured) or the gradients must be those
    of 3·attention (the math backend, which saves no output). A backward reading the modified
    output through a reference autograd does not track gives neither."""
    qkv = ref.leaves((s.q, s.k, s.v))
    out = s.impl(*qkv, **s.kwargs())
    checked_output(out, s.q, s.v)
    try:
        out.mul_(OUTPUT_FACTOR)
        got = torch.autograd.grad(out, qkv, ref.copy(s.dout))
    except RuntimeError as exc:  # "modified by an inplace operation": the version counter did its job
        return Outcome(0.0, 0.0, _refused(exc))
    _, gold, plain = s.gradients
    sizes = s.gradient_sizes
    outcomes, details = [], []
    for name, g, g64, gp, size, sens in zip(("dq", "dk", "dv"), got, gold, plain, sizes.sizes, sizes.sensitivities):
        o = measured(s, g.detach().cpu(), OUTPUT_FACTOR * g64, OUTPUT_FACTOR * tol.max_abs_error(gp, g64),
                     OUTPUT_FACTOR * size, OUTPUT_FACTOR * sens if isinstance(sens, torch.Tensor) else sens)
        outcomes.append(o)
        details.append(f"{name} {o.figures}")
    return worst(outcomes, details)


INPUT_FACTOR = 2.0


def input_modified_before_backward(s: Subject) -> Outcome:
    """q, k, v written into (mul_(2)) between the forward and the backward, for every subset of them requiring grad
    and each one written alone, the frozen ones too (a KV cache of requires_grad False updated in place before the
    step's backward), and all three at once: autograd's version counter must raise (torch's default CPU dispatch does,
    measured: "modified by an inplace operation") or the asked gradients must be those of the graph recorded, the
    inputs as they were at the forward (the math backend, which saves scaled copies, measured: it gives them for every
    subset and written input in float32, float16 and bfloat16, raising only for v written while saved in float32). A
    backward that keeps an input outside save_for_backward (red team: frozen k, v kept on ctx by reference) reads
    the new values untracked and gives neither. Inputs requiring grad reach the impl as leaf·1 (not a leaf)."""
    _, gold, plain = s.gradients
    sizes = s.gradient_sizes
    outcomes, details = [], []
    legs = [(wants, (n,)) for wants in _GRAD_SUBSETS for n in "qkv"] + [((True, True, True), tuple("qkv"))]
    for wants, written in legs:
        leaves = [ref.copy(x).requires_grad_(w) for x, w in zip((s.q, s.k, s.v), wants)]
        called = [x * 1 if w else x for x, w in zip(leaves, wants)]
        name = f"grad {''.join(n for n, w in zip('qkv', wants) if w)}, {''.join(written)} written"
        out = s.impl(*called, **s.kwargs())
        checked_output(out, s.q, s.v)
        try:
            with torch.no_grad():
                for n in written:
                    called["qkv".index(n)].mul_(INPUT_FACTOR)
            got = torch.autograd.grad(out, [x for x in leaves if x.requires_grad], ref.copy(s.dout))
        except RuntimeError as exc:  # "modified by an inplace operation": the version counter did its job
            details.append(f"{name}: {_refused(exc)}")
            continue
        got = iter(got)
        for i, w in enumerate(wants):
            if w:
                o = measured(s, next(got).detach().cpu(), gold[i], tol.max_abs_error(plain[i], gold[i]),
                             sizes.sizes[i], sizes.sensitivities[i])
                outcomes.append(o)
                details.append(f"{name}: d{'qkv'[i]} {o.figures}")
    return worst(outcomes, details) if outcomes else Outcome(0.0, 0.0, "; ".join(details))


def _written_masks(s: Subject) -> dict:
    """name: (a frozen mask of the case, the write a caller reusing its buffer makes)."""
    from kernels.harness.masks import additive_mask, bool_mask

    shape = (s.case.batch, 1, s.case.n_q, s.case.n_k)  # (B, 1, Nq, Nk): a per-entry padding or document mask
    return {"bool (B, 1, Nq, Nk) set all True": (bool_mask(s, shape, "mask written"), lambda m: m.fill_(True)),
            "additive (B, 1, Nq, Nk) doubled": (additive_mask(s, shape, "additive mask written"), lambda m: m.mul_(2))}


def mask_modified_before_backward(s: Subject) -> Outcome:
    """A frozen attn_mask written into between the forward and the backward (a mask buffer the caller reuses for the
    next step: a bool one set all True, an additive one doubled), q, k, v requiring grad: autograd's version counter
    must raise, or the gradients must be those of the mask at the forward (measured: torch 2.13's math backend and its
    default CPU dispatch give them after either write, float32, float16 and bfloat16). A backward keeping the mask on ctx
    by reference, outside save_for_backward (red team rt45h), reads the written one untracked and gives neither."""
    outcomes, details = [], []
    for name, (m, write) in _written_masks(s).items():
        kept = ref.copy(m)  # (the golden values' mask, as at the forward)
        leaves = ref.leaves((s.q, s.k, s.v))
        out = s.impl(*leaves, **s.kwargs(attn_mask=m, is_causal=False))
        checked_output(out, s.q, s.v)
        try:
            with torch.no_grad():
                write(m)
            got = torch.autograd.grad(out, leaves, ref.copy(s.dout))
        except RuntimeError as exc:  # "modified by an inplace operation": the version counter did its job
            details.append(f"{name}: {_refused(exc)}")
            continue
        kw = s.kwargs(attn_mask=kept.cpu(), is_causal=False)
        _, gold = ref.output_and_grads(ref.attention, *(t.cpu() for t in (s.q, s.k, s.v, s.dout)), upcast=True, **kw)
        _, plain = ref.output_and_grads(ref.attention, s.q, s.k, s.v, s.dout, **s.kwargs(attn_mask=kept, is_causal=False))
        o = gradients_against(s, tuple(g.detach().cpu() for g in got), gold, tuple(g.cpu() for g in plain),
                              s.gradient_sizes_for(attn_mask=kept, is_causal=False))
        outcomes.append(o)
        details.append(f"{name}: {o.detail}")
    return worst(outcomes, details) if outcomes else Outcome(0.0, 0.0, "; ".join(details))


# every non-empty subset of (q, k, v) requiring grad
_GRAD_SUBSETS = tuple(w for w in ((a, b, c) for a in (True, False) for b in (True, False) for c in (True, False))
                      if any(w))


def stride_zero_dout(s: Subject) -> Outcome:
    """out.sum().backward(): dO is ones expanded, every stride 0. Gradients as for a dense dO of ones."""
    qkv = ref.leaves((s.q, s.k, s.v))
    out = s.impl(*qkv, **s.kwargs())
    checked_output(out, s.q, s.v)
    got = torch.autograd.grad(out.sum(), qkv)  # the dO autograd passes on has strides 0
    ones = torch.ones(*s.q.shape[:-1], s.case.dv, dtype=s.dtype, device=s.device)
    _, gold = ref.output_and_grads(ref.attention, *(t.cpu() for t in (s.q, s.k, s.v, ones)), upcast=True, **s.kwargs())
    _, plain = ref.output_and_grads(ref.attention, s.q, s.k, s.v, ones, **s.kwargs())
    return gradients_against(s, tuple(g.detach().cpu() for g in got), gold, tuple(g.cpu() for g in plain),
                             s.gradient_sizes_for(dout=ones))


def mask_forms_backward(s: Subject) -> Outcome:
    """Gradients under a boolean mask of every broadcast form SDPA accepts ((Nq, Nk), (Hq, Nq, Nk),
    (B, 1, Nq, Nk), (1, Hq, Nq, Nk), (B, Hq, Nq, Nk), the key-padding (B, 1, 1, Nk), (1, 1, 1, Nk)),
    and under an additive (1, 1, 1, Nk) one: a backward that re-reads a broadcast mask with the
    strides of a full one fails here while the forward is right."""
    from kernels.harness.masks import _shapes, additive_mask, bool_mask

    masks = {f"bool {form}": bool_mask(s, shape, f"backward mask {form}") for form, shape in _shapes(s).items()}
    masks["additive (1, 1, 1, Nk)"] = additive_mask(s, (1, 1, 1, s.case.n_k), "backward additive key padding")
    outcomes, details = [], []
    for name, m in masks.items():
        try:
            g = s.backward(attn_mask=m, is_causal=False)
        except Exception as exc:  # a form the kernel cannot serve, refused (attn-mask judges the forward's)
            details.append(f"{name}: {_refused(exc)}")
            continue
        o = gradients_against(s, g.got, g.gold, g.plain, s.gradient_sizes_for(attn_mask=m, is_causal=False))
        outcomes.append(o)
        details.append(f"{name}: {o.figures}")
    return worst(outcomes, details) if outcomes else Outcome(0.0, 0.0, "; ".join(details))


def attn_mask_untouched(s: Subject) -> Outcome:
    """The caller's attn_mask (boolean and additive) is left bit for bit as it was by the forward and
    the backward: a kernel that converts it in place (-inf to a finite sentinel, bool to additive)
    corrupts the caller's next step."""
    from kernels.harness.masks import additive_mask, bool_mask

    shape = (s.q.shape[0], 1, s.case.n_q, s.case.n_k)
    changed = []
    for kind, m in (("bool", bool_mask(s, shape, "untouched bool")), ("additive", additive_mask(s, shape, "untouched add"))):
        given = m.clone()
        qkv = ref.leaves((s.q, s.k, s.v))
        out = s.impl(*qkv, attn_mask=given, **s.kwargs(is_causal=False))
        checked_output(out, s.q, s.v)
        torch.autograd.grad(out, qkv, ref.copy(s.dout))
        if not torch.equal(given, m):
            changed.append(f"{kind} mask changed in {int((given != m).sum())} entries")
    return Outcome(math.inf if changed else 0.0, 0.0, "; ".join(changed))


# ===================================================================== state

def buffers_mutated_between_calls(s: Subject) -> Outcome:
    """The same q, k, v tensors written in place between two calls (a KV cache updated in place, an
    optimizer step on a parameter): the second call must see the new values. A kernel caching
    anything by data_ptr (a pre-transposed K, packed V, the previous output) answers with the old.
    Then k, v as two sibling views of one buffer in consecutive calls (the same base, shape, strides and
    version; another storage offset): a cache keyed without the offset answers with the first's (red team rt41h)."""
    q, k, v = ref.copy(s.q), ref.copy(s.k), ref.copy(s.v)
    with torch.no_grad():
        s.impl(q, k, v, **s.kwargs())
        q2, k2, v2 = (s.randn(f"new {n}", *x.shape) for n, x in zip("qkv", (q, k, v)))
        q.copy_(q2), k.copy_(k2), v.copy_(v2)
        out = checked_output(s.impl(q, k, v, **s.kwargs()), q, v)
        in_place = measured(s, out.cpu(), *_golden(s, q2, k2, v2))
        kk = torch.stack([k2, s.randn("sibling k", *k.shape)])  # (2, B, Hkv, Nk, D): one buffer, two views
        vv = torch.stack([v2, s.randn("sibling v", *v.shape)])  # (2, B, Hkv, Nk, Dv)
        s.impl(q, kk[0], vv[0], **s.kwargs())
        out = checked_output(s.impl(q, kk[1], vv[1], **s.kwargs()), q, vv[1])
    sibling = measured(s, out.cpu(), *_golden(s, q2, kk[1], vv[1]))
    untracked, said = _written_untracked(s)
    return worst([in_place, sibling, untracked],
                 [f"written in place: {in_place.figures}",
                  f"sibling views: {sibling.figures}",
                  f"written through .data ({said}): {untracked.figures}"])


# A shape's calls counted past what any other check repeats one shape (red team rt49: an autotuner switching to a
# tuned configuration that drops the tail key block after 256 calls of a shape; a drawn problem is called a few times,
# the dropout checks' 1200 and 2¹⁴ calls are judged on their keep masks alone). 2¹⁰ calls of the contract case, each
# judged where the count is a power of two and at the last: measured, 0.05 s for SDPA math in float32.
MANY_CALLS = 2 ** 10


def many_calls_of_a_shape(s: Subject) -> Outcome:
    """The same call MANY_CALLS times in a row, its output judged against float64 at calls 1, 2, 4, ..., MANY_CALLS:
    state a kernel changes with the count of calls of one shape (an autotuner, a warm-up path, a cache filling up)
    must leave the answer right."""
    golden = s.base
    outcomes, details = [], []
    with torch.no_grad():
        for call in range(1, MANY_CALLS + 1):
            out = s.impl(s.q, s.k, s.v, **s.kwargs())
            if call & (call - 1) == 0:
                o = against(s, checked_output(out, s.q, s.v), golden)
                outcomes.append(o)
                details.append(f"call {call}: {o.figures}")
    return worst(outcomes, details)


def _written_untracked(s: Subject) -> tuple[Outcome, str]:
    """The same q, k, v written between two calls through ``.data`` (as an optimizer or a cache update written
    outside autograd does; NumPy views and untyped_storage() writes are the same): no version counter moves
    (measured, torch 2.13), so a cache keyed by (data_ptr, shape, strides, dtype, _version) answers with the old
    values (red team: an upcast K/V cache escaped the copy_ above, which bumps the version). SDPA reads the new ones."""
    q, k, v = ref.copy(s.q), ref.copy(s.k), ref.copy(s.v)
    new = [s.randn(f"untracked {n}", *x.shape) for n, x in zip("qkv", (q, k, v))]
    with torch.no_grad():
        checked_output(s.impl(q, k, v, **s.kwargs()), q, v)
        versions = [x._version for x in (q, k, v)]
        for x, y in zip((q, k, v), new):
            x.data.copy_(y)
        moved = [n for n, x, was in zip("qkv", (q, k, v), versions) if x._version != was]
        out = checked_output(s.impl(q, k, v, **s.kwargs()), q, v)
    said = "versions unchanged" if not moved else f"the version of {', '.join(moved)} moved"
    return measured(s, out.cpu(), *_golden(s, *new)), said


def mask_mutated_between_calls(s: Subject) -> Outcome:
    """The same additive attn_mask written in place between two calls (a padding mask buffer reused across
    steps): the second call must see the new mask (red team rt41h: a mask conversion cached per mask object,
    ignoring its version, escaped)."""
    from kernels.harness.masks import additive_mask

    shape = (s.q.shape[0], 1, s.case.n_q, s.case.n_k)
    m, new = additive_mask(s, shape, "mask before"), additive_mask(s, shape, "mask after")
    with torch.no_grad():
        s.impl(s.q, s.k, s.v, attn_mask=m, **s.kwargs(is_causal=False))
        m.copy_(new)
        out = checked_output(s.impl(s.q, s.k, s.v, attn_mask=m, **s.kwargs(is_causal=False)), s.q, s.v)
    g = s.reference(attn_mask=new, is_causal=False)
    return measured(s, out.cpu(), g.value, g.error, g.value, g.sensitivity, g.lse_size)


CONCURRENT_THREADS = 4
CONCURRENT_ROUNDS = 32
# (B, Hq, Nq, Nk), B·Hq kept with the case's own heads: about a millisecond of matmul and softmax a call, the GIL
# released. Measured on this 2-core machine on the contract case (B = 4, Hq = 4), 4 runs each: a shared score
# buffer gave 109-120 of 128 outputs wrong (red team rt42h's own 94-101), SDPA math 0 of 128, 0.4 s a run; a
# quarter of this size and 12 rounds missed it in some runs.
CONCURRENT_SHAPE = (2, 8, 128, 256)


def concurrent_calls(s: Subject) -> Outcome:
    """CONCURRENT_THREADS threads call the impl at once (a threading.Barrier before each of CONCURRENT_ROUNDS
    rounds), each on inputs of its own of one shape, under no_grad (an inference server's worker threads): each
    output against its own float64 golden value by the low-precision rule. A workspace shared by every caller (a
    module-level score buffer keyed by shape, a cached output) hands one thread's scores to another (red team
    rt42h: such a scratch buffer escaped, no check calling from two threads). torch's ops are reentrant: SDPA
    math gives each thread its sequential answer (measured, contract item "concurrency"). A race needs the calls
    to overlap, which the barrier and the released GIL make likely, not certain: a pass is evidence, not proof."""
    b_h, n_q, n_k = CONCURRENT_SHAPE[0] * CONCURRENT_SHAPE[1], *CONCURRENT_SHAPE[2:]
    hq, hkv, d, dv = s.q.shape[1], s.k.shape[1], s.q.shape[-1], s.v.shape[-1]  # the case's heads (GQA or not)
    b = max(1, b_h // hq)  # (B·Hq as CONCURRENT_SHAPE's)
    inputs = [tuple(s.randn(f"thread {i} {n}", *shape) for n, shape in
                    (("q", (b, hq, n_q, d)), ("k", (b, hkv, n_k, d)), ("v", (b, hkv, n_k, dv))))
              for i in range(CONCURRENT_THREADS)]
    goldens = [_golden(s, *x) for x in inputs]

    def call(i):
        def one():
            q, k, v = inputs[i]
            with torch.no_grad():
                return checked_output(s.impl(q, k, v, **s.kwargs()), q, v).cpu()
        return one

    # (red team rt43h: a leak made by concurrent callers was reported later by global-state-unchanged as "left
    # changed by an earlier call"; _threaded names it here, and puts it back)
    results, failed = _threaded([call(i) for i in range(CONCURRENT_THREADS)], CONCURRENT_ROUNDS)
    if failed:
        return failed
    outcomes, wrong = [], 0
    for i, outs in enumerate(results):
        for out in outs:
            o = measured(s, out, *goldens[i])
            wrong += not o.discrepancy <= o.bound
            outcomes.append(o)
    w = max(outcomes, key=ratio)
    return Outcome(w.discrepancy, w.bound, f"{wrong} of {len(outcomes)} outputs of {CONCURRENT_THREADS} threads × "
                                           f"{CONCURRENT_ROUNDS} rounds past the bound; worst {w.figures}")


def _threaded(calls: list, rounds: int):
    """calls[i]() in thread i, every thread at once (a threading.Barrier before each of ``rounds`` rounds), inside
    process_watched: (each thread's answers, an Outcome naming a leak or a deadlock or None); a call's exception is
    raised here."""
    results: list[list] = [[] for _ in calls]
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(calls))

    def worker(i: int) -> None:
        try:
            for _ in range(rounds):
                barrier.wait(timeout=60)
                results[i].append(calls[i]())
        except BaseException as exc:  # noqa: BLE001  (reported below; a broken barrier frees the others)
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(len(calls))]
    with process_watched() as changed:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
    if changed:
        return results, Outcome(math.inf, 0.0, f"concurrent calls left the process changed: {', '.join(changed)}")
    real = [e for e in errors if not isinstance(e, threading.BrokenBarrierError)]
    if real:
        raise real[0]
    stuck = [i for i, t in enumerate(threads) if t.is_alive()]
    if stuck:  # (daemon threads: a deadlocked impl does not keep the process from ending)
        return results, Outcome(math.inf, 0.0, f"threads {stuck} still inside the impl after 300 s (a deadlock "
                                               f"between concurrent callers)")
    return results, None


# Each thread's own arguments (red team rt44h: launch arguments kept in a module-level dict and read back after the
# QK^T matmul escaped concurrent-calls, whose threads all pass the same ones): (Nq, Nk, is_causal, scale as a
# multiple of 1/√D or None, mask). Three share a shape, so a workspace keyed by shape is shared by callers whose
# arguments differ; the fourth has its own shape (a cache keyed by shape alone hands it another's answer).
# B·Hq as CONCURRENT_SHAPE's; Nq, Nk half of it for the training threads (a backward costs two forwards).
MIXED_ARGUMENTS = ((128, 256, False, None, None), (128, 256, True, 0.5, None), (128, 256, False, 1.3, "additive"),
                   (96, 200, False, 0.8, "bool"))
MIXED_ROUNDS = 16
TRAINING_ROUNDS = 6


def _mixed_inputs(s: Subject, i: int, scale_down: int = 1):
    """Thread i's q, k, v and keyword arguments (MIXED_ARGUMENTS[i]); a mask only where the impl takes attn_mask
    (its scale and causal flag still its own)."""
    from kernels.harness.features import offered
    from kernels.harness.masks import additive_mask, bool_mask

    n_q, n_k, causal, factor, mask = MIXED_ARGUMENTS[i]
    n_q, n_k = n_q // scale_down, n_k // scale_down
    hq, hkv, d, dv = s.q.shape[1], s.k.shape[1], s.q.shape[-1], s.v.shape[-1]
    b = max(1, CONCURRENT_SHAPE[0] * CONCURRENT_SHAPE[1] // hq)
    q, k, v = (s.randn(f"mixed thread {i} {n}", *shape) for n, shape in
               (("q", (b, hq, n_q, d)), ("k", (b, hkv, n_k, d)), ("v", (b, hkv, n_k, dv))))
    kw = s.kwargs(is_causal=causal, scale=None if factor is None else factor / math.sqrt(d))
    if mask is not None and ATTN_MASK in offered(s.impl):
        kw["attn_mask"] = (additive_mask(s, (b, 1, n_q, n_k), f"mixed thread {i} mask") if mask == "additive"
                           else bool_mask(s, (n_q, n_k), f"mixed thread {i} mask"))
    return q, k, v, kw


def _summary(outcomes: list, wrong: int, what: str, rounds: int) -> Outcome:
    w = max(outcomes, key=ratio)
    return Outcome(w.discrepancy, w.bound, f"{wrong} of {len(outcomes)} {what} of {len(MIXED_ARGUMENTS)} threads × "
                                           f"{rounds} rounds past the bound; worst {w.figures}")


def concurrent_calls_mixed(s: Subject) -> Outcome:
    """As concurrent-calls, but each thread with arguments of its own (MIXED_ARGUMENTS: is_causal, scale, an
    additive or boolean attn_mask, the shape), each output against its own float64 golden value: state shared by
    every caller (launch arguments in a module-level dict, a workspace keyed by shape) hands one caller's scale or
    mask to another's call. A pass is evidence, not proof (concurrent_calls)."""
    inputs = [_mixed_inputs(s, i) for i in range(len(MIXED_ARGUMENTS))]
    goldens = [s.reference(q=q, k=k, v=v, **kw) for q, k, v, kw in inputs]

    def call(i):
        def one():
            q, k, v, kw = inputs[i]
            with torch.no_grad():
                return checked_output(s.impl(q, k, v, **kw), q, v).cpu()
        return one

    results, failed = _threaded([call(i) for i in range(len(inputs))], MIXED_ROUNDS)
    if failed:
        return failed
    outcomes = [against(s, out, goldens[i]) for i, outs in enumerate(results) for out in outs]
    return _summary(outcomes, sum(not o.discrepancy <= o.bound for o in outcomes), "outputs", MIXED_ROUNDS)


def concurrent_training(s: Subject) -> Outcome:
    """Training threads: each runs forward and backward at once with the others (a barrier before each of
    TRAINING_ROUNDS rounds), on inputs requiring grad with arguments of its own (MIXED_ARGUMENTS at half the length),
    and its dq, dk, dv are judged against float64 autograd's by the low-precision rule (gradients_against, the
    gradient checks' judge). A backward keeping its row max and sum in a module-level workspace keyed by shape (red
    team rt44h) gives one thread's statistics to another's gradients; sequential calls never show it."""
    inputs = [_mixed_inputs(s, i, scale_down=2) for i in range(len(MIXED_ARGUMENTS))]
    douts = [s.randn(f"mixed thread {i} dout", *q.shape[:-1], v.shape[-1]) for i, (q, k, v, _) in enumerate(inputs)]
    judged = []
    for (q, k, v, kw), dout in zip(inputs, douts):
        args = tuple(t.cpu() for t in (q, k, v, dout))
        _, gold = ref.output_and_grads(ref.attention, *args, upcast=True, **kw)
        _, plain = ref.output_and_grads(ref.attention, q, k, v, dout, **kw)
        scales = GradientScales(ref.gradient_term_sizes(*args, **kw), ref.gradient_score_sensitivities(*args, **kw))
        judged.append((gold, tuple(g.cpu() for g in plain), scales))

    def call(i):
        def one():
            (q, k, v, kw), dout = inputs[i], douts[i]
            qkv = ref.leaves((q, k, v))
            with torch.enable_grad():
                out = s.impl(*qkv, **kw)
                checked_output(out, q, v)
                return tuple(g.detach().cpu() for g in torch.autograd.grad(out, qkv, ref.copy(dout)))
        return one

    results, failed = _threaded([call(i) for i in range(len(inputs))], TRAINING_ROUNDS)
    if failed:
        return failed
    outcomes = [gradients_against(s, got, *judged[i]) for i, rounds in enumerate(results) for got in rounds]
    return _summary(outcomes, sum(not o.discrepancy <= o.bound for o in outcomes), "backwards", TRAINING_ROUNDS)


def _golden(s: Subject, q, k, v):
    g = s.reference(q=q, k=k, v=v)
    return g.value, g.error, g.value, g.sensitivity, g.lse_size


def _global_state() -> dict:
    """What a call may not change in the process: floating-point modes, defaults, RNG, grad mode, and
    Python's own process state (warnings filters, logging levels, the environment, sys.path)."""
    denormal = torch.tensor([1e-39], dtype=torch.float32)  # subnormal in float32: 0 under flush-to-zero
    return {"flush-to-zero": float(denormal * torch.ones(1)) == 0.0,
            "default dtype": torch.get_default_dtype(),
            "intra-op threads": torch.get_num_threads(),
            "grad mode": torch.is_grad_enabled(),
            "deterministic algorithms": torch.are_deterministic_algorithms_enabled(),
            "anomaly mode": torch.is_anomaly_enabled(),
            "matmul precision": torch.get_float32_matmul_precision(),
            "CPU RNG state": torch.get_rng_state(),
            # (red team rt39h: an autotuner drawing from NumPy's global generator on every call)
            "NumPy global RNG state": pickle.dumps(np.random.get_state()),
            "Python random state": random.getstate(),
            **{name: read() for name, (read, _) in _BACKEND_SWITCHES.items()},
            "warnings filters": list(warnings.filters),
            "logging levels": _logging_levels(),
            "environment": dict(os.environ),
            "sys.path": list(sys.path),
            # (red team rt41h: np.seterr(all="ignore") never restored; gc left disabled by a call that raised)
            "NumPy floating-point error handling": np.geterr(),
            "garbage collector enabled": gc.isenabled(),
            "recursion limit": sys.getrecursionlimit(),
            "working directory": os.getcwd(),
            # (red team rt47: logging.disable(WARNING) and torch.set_printoptions(precision=2) set by a first call)
            "logging disabled at or below": logging.root.manager.disable,
            "torch print options": tuple(sorted(vars(torch._tensor_str.PRINT_OPTS).items())),
            "NumPy print options": np.get_printoptions(),
            "thread switch interval": sys.getswitchinterval(),
            # (red team rt42h: saved-tensor hooks pushed by hand and left on the stack by a call that raised)
            "saved-tensor hooks": torch._C._autograd._top_saved_tensors_default_hooks(False),
            "saved-tensor hooks enabled": torch._C._autograd._saved_tensors_hooks_is_enabled(),
            "torch function modes": torch._C._len_torch_function_stack(),
            "torch dispatch modes": torch._C._len_torch_dispatch_stack(),
            **{f"autocast on {d}": (torch.is_autocast_enabled(d), torch.get_autocast_dtype(d)) for d in _AUTOCAST},
            **_PYTHON_HOOKS_READ(),
            # Every switch torch exposes, found rather than listed (red team rt42h: torch.backends.mha's fast
            # path was missing from the list): a flag a later torch adds is watched without an edit here.
            **{f"torch.{name}()": getattr(torch, name)() for name in _torch_getters()},
            **_backend_flags(),
            # (red team rt44h: TorchScript's fuser switches, torch._dynamo.config, and torch.nn.functional's SDPA
            # replaced by the impl itself, each set by a first call and never put back)
            "torch._C": _c_readings(),
            "torch config modules": _config_values(),
            "torch's public functions": _public_functions()}


_AUTOCAST = ("cpu", "cuda")


def _PYTHON_HOOKS_READ() -> dict:  # noqa: N802  (the interpreter's hooks a library may install and forget)
    return {"trace function": sys.gettrace(), "profile function": sys.getprofile(),
            "thread switch interval": sys.getswitchinterval(), "sys.excepthook": sys.excepthook,
            "threading.excepthook": threading.excepthook, "faulthandler enabled": faulthandler.is_enabled(),
            **{f"handler of {sig.name}": signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}}


_PLAIN = (bool, int, float, str, torch.dtype, torch.device, type(None))


def _zero_argument(f) -> bool:
    try:
        return not any(p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                       for p in inspect.signature(f).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature: tried, and dropped if it raises
        return True


def _quiet_call(f):
    """(f(),) when f takes no argument and answers without raising or warning (deprecated aliases warn); else None."""
    if not callable(f) or isinstance(f, type) or not _zero_argument(f):
        return None
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        try:
            value = f()
        except Exception:  # noqa: BLE001  (not a reading on this build: CUDA-only, MPS-only; or needs an argument)
            return None
    return None if said else (value,)


def _plain_reading(f):
    """(f(),) when f is a quiet zero-argument call returning a plain value; else None."""
    got = _quiet_call(f)
    return got if got is not None and isinstance(got[0], _PLAIN) else None


@functools.lru_cache(maxsize=1)
def _torch_getters() -> tuple[str, ...]:
    """torch's zero-argument get_*/is_*/are_* readings of plain values (grad mode, default dtype and device,
    threads, autocast, deterministic and anomaly modes, warn-always, ...), found once a process."""
    return tuple(name for name in sorted(dir(torch)) if name.startswith(("get_", "is_", "are_"))
                 and _plain_reading(getattr(torch, name)) is not None)


_LISTED = {id(read) for read, _ in ()}  # filled below, after _BACKEND_SWITCHES: its getters are reported by name


def _backend_flags() -> dict:
    """Every torch.backends module loaded now: its properties (cudnn.enabled, fp32_precision, ...) and its
    zero-argument get_*/is_*/…_enabled/…_allowed readings. A module the call imports adds readings, which
    are then compared from the next call on (only names present before and after are compared)."""
    flags = {}
    for name in _backend_modules(_modules_loaded()):
        module = sys.modules.get(name)
        if module is None:
            continue
        for attr, prop in vars(type(module)).items():
            if not attr.startswith("_") and type(prop).__name__ in ("ContextProp", "property"):
                try:
                    flags[f"{name}.{attr}"] = getattr(module, attr)
                except Exception:  # noqa: BLE001
                    pass
        for attr, f in list(vars(module).items()):
            if (attr.startswith("_") or id(f) in _LISTED
                    or not (attr.startswith(("get_", "is_")) or attr.endswith(("_enabled", "_allowed")))):
                continue
            reading = _plain_reading(f)
            if reading is not None:
                flags[f"{name}.{attr}()"] = reading[0]
    return flags


def _modules_loaded() -> tuple:
    """What sys.modules holds, told cheaply: its size and its newest name (a module loaded is added last, so one
    removed and another loaded changes the newest). The searches of sys.modules below are kept until it changes:
    a run loads 1800 modules, and each search ran twice a problem."""
    return len(sys.modules), next(reversed(sys.modules), None)


@functools.lru_cache(maxsize=4)
def _backend_modules(loaded: tuple) -> tuple[str, ...]:
    """The public torch.backends modules loaded (``loaded``: _modules_loaded(), the cache's key), sorted."""
    return tuple(sorted(n for n in list(sys.modules) if (n == "torch.backends" or n.startswith("torch.backends."))
                        and not any(part.startswith("_") for part in n.split(".")) and ".xeon" not in n))


# ===================================================================== process state a sweep finds (red team rt44h)

class _Keyed(dict):
    """Readings of one namespace compared key by key; a key only one side has is no change (a module loaded in
    between, a lazy import's config module or function: only values present before and after are compared)."""

    def changed(self, other: dict) -> list[str]:
        return [key for key, value in self.items() if key in other and not self._same(value, other[key])]

    @staticmethod
    def _same(a, b) -> bool:
        try:
            return bool(a == b)
        except Exception:  # noqa: BLE001  (a config value whose == raises: compared by identity)
            return a is b

    def __eq__(self, other) -> bool:
        return isinstance(other, dict) and not self.changed(other)

    __hash__ = None


_TORCH_SOURCE = os.path.dirname(torch.__file__) + os.sep


class _Identities(_Keyed):
    """Public functions by identity, "namespace.name": a replacement is a change whatever it computes (== on some is
    elementwise). One written in torch's own source that wraps the function it replaces is torch's own doing:
    importing torch._dynamo (the harness's lazy imports do) wraps torch.manual_seed in torch._disable_dynamo.

    Held as each namespace's whole dict, copied (a C-level copy, twice a problem: building "namespace.name" keys for
    its 5000 entries took a quarter of the process-state reading), and narrowed to the public callables only where
    an entry differs."""

    def changed(self, other: dict) -> list[str]:
        names = []
        for prefix, entries in self.items():
            now = other.get(prefix, {})
            names += [f"{prefix}.{attr}" for attr, f in entries.items()
                      if attr in now and now[attr] is not f and attr[:1] != "_" and callable(f)
                      and not self._same(f, now[attr])]
        return names

    def function(self, key: str):
        prefix, attr = key.rsplit(".", 1)
        return self[prefix][attr]

    @staticmethod
    def _same(a, b) -> bool:
        return a is b or (getattr(b, "__wrapped__", None) is a
                          and getattr(getattr(b, "__code__", None), "co_filename", "").startswith(_TORCH_SOURCE))


# torch._C's zero-argument readings, selected by name: get_/is_/are_ (jit_ and debug_ ones too), ..._enabled,
# ..._allowed, jit_can_fuse_on_*. A name with one of _C_MUTATOR's words is a setter or an action, never called.
_C_READING = re.compile(r"^_(?:jit_|debug_)?(?:get|is|are)_|^_\w+_(?:enabled|allowed)$|^_jit_can_fuse_on_")
_C_MUTATOR = {"set", "clear", "reset", "override", "push", "pop", "register", "enable", "disable", "display",
              "nvfuser"}  # (nvfuser: deprecated no-ops that print a C++ warning on every call)
# Verified (calling each twice, torch 2.13 CPU) but not modes a call could leave behind: records and registries
# torch itself fills as it runs, and readings of tens of milliseconds.
_C_NOT_MODES = {
    "_get_caught_jit_exception_class_name", "_get_caught_jit_exception_original_msg",  # the last one TorchScript caught
    "_get_DTensor_sharding_propagator_cache_stats",  # a cache's hit counts
    "_get_upgraders_map_size", "_get_upgraders_entry_map", "_get_operator_version_map",  # filled as torch.jit loads
    "_jit_get_all_schemas", "_jit_get_custom_class_schemas",  # 8 ms and 1.5 ms, and registries
}
# The same switch as a reading taken above under its public name (each found by flipping the public setter and
# seeing this reading follow, torch 2.13): named once, by the public name.
_C_MIRRORS = frozenset({
    "_get_flash_sdp_enabled", "_get_mem_efficient_sdp_enabled", "_get_math_sdp_enabled", "_get_cudnn_sdp_enabled",
    "_get_math_sdp_allow_fp16_bf16_reduction", "_get_cublas_allow_tf32", "_get_float32_matmul_precision",
    "_get_cublas_allow_fp16_reduced_precision_reduction", "_get_cublas_allow_bf16_reduced_precision_reduction",
    "_get_cudnn_enabled", "_get_cudnn_benchmark", "_get_cudnn_deterministic", "_get_cudnn_allow_tf32",
    "_get_miopen_immediate", "_get_mkldnn_enabled", "_get_mkldnn_deterministic", "_get_warnAlways",
    "_get_deterministic_algorithms", "_get_deterministic_algorithms_warn_only",
    "_is_torch_function_mode_enabled",  # (the torch function mode stack's length)
})
# Readable only through their setter, which returns the old value (Megatron's _set_jit_fusion_options sets both)
_C_SWAPPED = ("_jit_set_profiling_executor", "_jit_set_profiling_mode")


def _c_reading(f):
    """(f(),) when f takes no argument, warns nothing and answers a plain value (a pybind enum, a tuple of plain
    values too); else None."""
    got = _quiet_call(f)
    if got is None:
        return None
    value = got[0]
    plain = (isinstance(value, _PLAIN) or hasattr(type(value), "__members__")
             or isinstance(value, tuple) and all(isinstance(x, _PLAIN) for x in value))
    return got if plain else None


@functools.lru_cache(maxsize=1)
def _c_getters() -> tuple[str, ...]:
    """The torch._C readings watched, found once a process: those _C_READING names that take no argument, answer
    a plain value, warn nothing and answer the same when called again."""
    found = []
    for name in sorted(vars(torch._C)):
        if (not _C_READING.search(name) or name in _C_NOT_MODES or name in _C_MIRRORS
                or _C_MUTATOR & set(name.strip("_").split("_"))):
            continue
        first = _c_reading(getattr(torch._C, name))
        if first is not None and _c_reading(getattr(torch._C, name)) == first:
            found.append(name)
    return tuple(found)


def _c_readings() -> _Keyed:
    readings = _Keyed((f"torch._C.{name}()", getattr(torch._C, name)()) for name in _c_getters())
    for name in _C_SWAPPED:
        swap = getattr(torch._C, name, None)
        if swap is not None:
            old = swap(True)
            swap(old)
            readings[f"torch._C.{name}"] = old
    return readings


def _c_setter(getter: str):
    """The setter of a torch._C reading, by torch's naming (_get_x -> _set_x, _jit_x_enabled -> _jit_set_x_enabled,
    _jit_can_fuse_on_cpu -> _jit_override_can_fuse_on_cpu, _jit_texpr_fallback_allowed ->
    _jit_texpr_set_fallback_allowed, _is_x_enabled -> _set_x_enabled); None when there is none."""
    if getter in _C_SWAPPED:
        return getattr(torch._C, getter)
    stem = getter.removeprefix("_")
    candidates = [stem.replace("get_", "set_", 1), "set_" + stem.removeprefix("is_"),
                  "set_" + stem.removeprefix("jit_"), "jit_set_" + stem.removeprefix("jit_"),
                  "jit_override_" + stem.removeprefix("jit_"), stem.replace("texpr_", "texpr_set_", 1)]
    for candidate in candidates:
        f = getattr(torch._C, "_" + candidate, None)
        if candidate != stem and callable(f):
            return f
    return None


def _config_modules() -> list:
    """torch's config modules (torch.utils._config_module.ConfigModule) loaded now: never imported here."""
    return list(_config_modules_in(_modules_loaded()))


@functools.lru_cache(maxsize=4)
def _config_modules_in(loaded: tuple) -> tuple:
    """_config_modules for ``loaded`` (_modules_loaded(), the cache's key)."""
    config_module = sys.modules.get("torch.utils._config_module")
    if config_module is None:
        return ()
    return tuple(m for m in list(sys.modules.values()) if isinstance(m, config_module.ConfigModule))


class _ConfigValues(_Keyed):
    """Config values by "module.key". A config module loaded between two readings (torch._dynamo imported by the
    call, or by the harness's lazy imports) adds keys: those are compared with their declared defaults, so a value
    a call set right after importing the module is a change, and the import alone is none (measured: importing
    torch._dynamo, torch._inductor and torch._functorch and compiling a function leave every value at its default)."""

    defaults: dict

    def changed(self, other: dict) -> list[str]:
        defaults = getattr(other, "defaults", {})
        return super().changed(other) + [key for key, value in other.items() if key not in self and key in defaults
                                          and not self._same(value, defaults[key])]


@functools.lru_cache(maxsize=None)
def _config_defaults(module) -> dict:
    """A config module's declared defaults by "module.key", but the values the environment sets (not a call's)."""
    unset = sys.modules["torch.utils._config_module"]._UNSET_SENTINEL
    return {f"{module.__name__}.{key}": entry.default for key, entry in module._config.items()
            if entry.alias is None and entry.env_value_force is unset and entry.env_value_default is unset}


def _config_values() -> _ConfigValues:
    """Every loaded config module's values by "module.key" (torch._dynamo.config.cache_size_limit, ...), read as
    save_config reads them (_get_dict: its cache is refreshed on every setattr; a list mutated in place without
    one is not seen)."""
    values = _ConfigValues()
    values.defaults = {}
    for m in _config_modules():
        values.update((f"{m.__name__}.{key}", value) for key, value in m._get_dict(readonly_values=True).items())
        values.defaults.update(_config_defaults(m))
    return values


_PUBLIC_NAMESPACES = ("torch", "torch.nn.functional", "torch.nn.attention")


def _public_functions() -> _Identities:
    """Every public callable of torch, torch.nn.functional, torch.nn.attention (those loaded) and torch.Tensor, by
    identity: a function replaced (SDPA patched with the impl, a Tensor method wrapped) is a change."""
    found = _Identities((name, dict(vars(sys.modules[name]))) for name in _PUBLIC_NAMESPACES if name in sys.modules)
    # torch.Tensor's methods are mostly its C base's: read through both, the subclass's own last (as lookup finds)
    found["torch.Tensor"] = {**vars(torch._C.TensorBase), **vars(torch.Tensor)}
    return found


def _restore_swept(before: dict) -> None:
    """Put back the torch._C readings (those with a setter), config values and public functions a call changed."""
    now = _c_readings()
    for key in before["torch._C"].changed(now):
        setter = _c_setter(key.removeprefix("torch._C.").removesuffix("()"))
        if setter is not None:
            try:
                setter(before["torch._C"][key])
            except Exception:  # noqa: BLE001  (stays reported, not restored)
                pass
    modules, was, now = {m.__name__: m for m in _config_modules()}, before["torch config modules"], _config_values()
    for key in was.changed(now):
        module, attr = key.rsplit(".", 1)
        while module not in modules and "." in module:  # (a dotted key: torch._inductor.config's triton.cudagraphs)
            module, rest = module.rsplit(".", 1)
            attr = f"{rest}.{attr}"
        if module in modules:
            setattr(modules[module], attr, was[key] if key in was else now.defaults[key])
    for key in before["torch's public functions"].changed(_public_functions()):
        prefix, attr = key.rsplit(".", 1)
        was = before["torch's public functions"].function(key)
        if prefix == "torch.Tensor" and vars(torch._C.TensorBase).get(attr) is was:
            delattr(torch.Tensor, attr)  # (the C base's method, shadowed by the one set on torch.Tensor)
        else:
            setattr(torch.Tensor if prefix == "torch.Tensor" else sys.modules[prefix], attr, was)


def _changes(before: dict, after: dict, skipped=()) -> list[str]:
    """The names of the readings that differ, a namespace's (_Keyed) by the keys that changed."""
    names = []
    for name, value in before.items():
        if name in skipped or name not in after:
            continue
        if isinstance(value, _Keyed):
            names += value.changed(after[name])
        elif not _same(value, after[name]):
            names.append(name)
    return names


def _logging_levels() -> dict:
    """The root logger's level and those of the loggers that exist now, by name. A logger created
    later (a lazy import) is not a change; an existing one's level set or cleared is."""
    loggers = {name: lg for name, lg in logging.Logger.manager.loggerDict.items() if isinstance(lg, logging.Logger)}
    return {"": logging.getLogger().level, **{name: lg.level for name, lg in loggers.items()}}


def _same_logging(a: dict, b: dict) -> bool:
    return all(b.get(name, level) == level for name, level in a.items())


# torch.backends switches a call could flip for the whole process (SDPA's backend choice: on CPU the
# flash switch decides whether the default dispatch takes the flash or the math path): (getter, setter).
_BACKEND_SWITCHES = {
    "SDPA flash backend": (torch.backends.cuda.flash_sdp_enabled, torch.backends.cuda.enable_flash_sdp),
    "SDPA memory-efficient backend": (torch.backends.cuda.mem_efficient_sdp_enabled,
                                      torch.backends.cuda.enable_mem_efficient_sdp),
    "SDPA math backend": (torch.backends.cuda.math_sdp_enabled, torch.backends.cuda.enable_math_sdp),
    "SDPA cuDNN backend": (torch.backends.cuda.cudnn_sdp_enabled, torch.backends.cuda.enable_cudnn_sdp),
    "SDPA math half reduction": (torch.backends.cuda.fp16_bf16_reduction_math_sdp_allowed,
                                 torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp),
    # nn.MultiheadAttention's and TransformerEncoderLayer's fast path (red team rt42h: switched off by a first call)
    "MHA fast path": (torch.backends.mha.get_fastpath_enabled, torch.backends.mha.set_fastpath_enabled),
    **{f"torch.backends.{mod}.{flag}": (lambda m=mod, f=flag: getattr(_module(m), f),
                                        lambda x, m=mod, f=flag: setattr(_module(m), f, x))
       for mod, flag in (("cuda.matmul", "allow_tf32"), ("cuda.matmul", "allow_fp16_reduced_precision_reduction"),
                         ("cuda.matmul", "allow_bf16_reduced_precision_reduction"), ("cudnn", "enabled"),
                         ("cudnn", "benchmark"), ("cudnn", "deterministic"), ("cudnn", "allow_tf32"),
                         ("mkldnn", "enabled"))},
}


_LISTED.update(id(read) for read, _ in _BACKEND_SWITCHES.values())


def _module(dotted: str):
    m = torch.backends
    for part in dotted.split("."):
        m = getattr(m, part)
    return m


def _restore(before: dict) -> None:
    torch.set_flush_denormal(before["flush-to-zero"])
    torch.set_default_dtype(before["default dtype"])
    torch.set_num_threads(before["intra-op threads"])
    torch.set_grad_enabled(before["grad mode"])
    torch.use_deterministic_algorithms(before["deterministic algorithms"])
    torch.set_anomaly_enabled(before["anomaly mode"])
    torch.set_float32_matmul_precision(before["matmul precision"])
    torch.set_rng_state(before["CPU RNG state"])
    np.random.set_state(pickle.loads(before["NumPy global RNG state"]))
    random.setstate(before["Python random state"])
    for name, (_, write) in _BACKEND_SWITCHES.items():
        write(before[name])
    np.seterr(**before["NumPy floating-point error handling"])
    (gc.enable if before["garbage collector enabled"] else gc.disable)()
    sys.setrecursionlimit(before["recursion limit"])
    os.chdir(before["working directory"])
    logging.disable(before["logging disabled at or below"])
    torch.set_printoptions(**dict(before["torch print options"]))
    np.set_printoptions(**before["NumPy print options"])
    sys.setswitchinterval(before["thread switch interval"])
    _restore_python(before)
    _restore_found(before)


def _restore_found(before: dict) -> None:
    """Put back what the sweeps found (best effort: a reading with no setter stays reported, not restored)."""
    for _ in range(64):  # saved-tensor hooks a call pushed and never popped
        top = torch._C._autograd._top_saved_tensors_default_hooks(False)
        if top == before["saved-tensor hooks"] or top is None:
            break
        torch._C._autograd._pop_saved_tensors_default_hooks()
    (torch._C._autograd._saved_tensors_hooks_enable if before["saved-tensor hooks enabled"]
     else lambda: torch._C._autograd._saved_tensors_hooks_disable(""))()
    for _ in range(torch._C._len_torch_function_stack() - before["torch function modes"]):
        torch._C._pop_torch_function_stack()
    for _ in range(torch._C._len_torch_dispatch_stack() - before["torch dispatch modes"]):
        torch._C._pop_torch_dispatch_stack()
    for d in _AUTOCAST:
        enabled, dtype = before[f"autocast on {d}"]
        torch.set_autocast_enabled(d, enabled)
        torch.set_autocast_dtype(d, dtype)
    sys.settrace(before["trace function"])
    sys.setprofile(before["profile function"])
    sys.setswitchinterval(before["thread switch interval"])
    sys.excepthook, threading.excepthook = before["sys.excepthook"], before["threading.excepthook"]
    if faulthandler.is_enabled() != before["faulthandler enabled"]:  # (enable() needs sys.stderr's file number)
        (faulthandler.enable if before["faulthandler enabled"] else faulthandler.disable)()
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(sig) != before[f"handler of {sig.name}"] and before[f"handler of {sig.name}"] is not None:
                signal.signal(sig, before[f"handler of {sig.name}"])
    now = _backend_flags()
    for key, value in before.items():
        if key.startswith("torch.backends") and not key.endswith("()") and key in now and now[key] != value:
            module, attr = key.rsplit(".", 1)
            try:
                setattr(sys.modules[module], attr, value)
            except Exception:  # noqa: BLE001
                pass
        elif key.startswith("torch.") and key.endswith("()") and key[6:].startswith(("get_", "is_", "are_")):
            # get_x -> set_x; is_x_enabled -> set_x_enabled or set_x (is_warn_always_enabled -> set_warn_always)
            stem = key[6:-2].split("_", 1)[1]
            setters = [getattr(torch, name, None) for name in ("set_" + stem, "set_" + stem.removesuffix("_enabled"))]
            setter = next((f for f in setters if f is not None), None)
            if setter is not None and getattr(torch, key[6:-2])() != value:
                try:
                    setter(value)
                except Exception:  # noqa: BLE001
                    pass
    if "torch._C" in before:
        _restore_swept(before)


def _restore_python(before: dict) -> None:
    warnings.resetwarnings()  # (clears the filters and invalidates the registries' cached verdicts)
    warnings.filters.extend(before["warnings filters"])
    for name, level in before["logging levels"].items():
        logging.getLogger(name or None).setLevel(level)
    if dict(os.environ) != before["environment"]:
        os.environ.clear()
        os.environ.update(before["environment"])
    sys.path[:] = before["sys.path"]


# Python's own state is not compared with the run's start: the harness's lazy imports (sympy, scipy)
# change it in between (warnings filters, KMP_DUPLICATE_LIB_OK). It is put back to the run's start
# before the judged call instead, so that a change an earlier call made (and this one repeats, which
# leaves a warnings filter already in front unchanged) shows.
_PYTHON_STATE = ("warnings filters", "logging levels", "environment", "sys.path")
# Generators the run's own checks draw from legitimately (dropout, the harness's sampling): judged on the call's
# own before and after only, never against the run's start
_RNG_STATES = ("CPU RNG state", "NumPy global RNG state", "Python random state")
_BASELINE: dict = {}  # the process state when the current run began (verify_attention calls remember_baseline)
_PYTHON_BASELINE: dict = {}


def remember_baseline() -> None:
    """Snapshot the process state before a run's first call, so a change an earlier check's call left
    behind is still seen: each check's own before/after pair would both carry it."""
    _BASELINE.clear()
    state = _global_state()
    _BASELINE.update({k: v for k, v in state.items() if k not in _RNG_STATES and k not in _PYTHON_STATE})
    _PYTHON_BASELINE.clear()
    _PYTHON_BASELINE.update({k: state[k] for k in _PYTHON_STATE})


def global_state_unchanged(s: Subject) -> Outcome:
    """A forward and a backward (no dropout) leave the process as they found it: flush-to-zero
    (torch.set_flush_denormal; torch 2.13 has no getter, so a subnormal product is measured),
    default dtype, thread count, grad mode, deterministic and anomaly modes, float32 matmul
    precision, torch.backends' switches (SDPA's backend choice, TF32, cuDNN, oneDNN), Python's
    warnings filters, logging levels, os.environ and sys.path, NumPy's floating-point error handling, whether
    the garbage collector is enabled, the recursion limit and the working directory (after a refused call too:
    k of another dtype), and the CPU
    RNG state (a call without dropout draws nothing: SDPA, measured), NumPy's global generator and Python's
    random module's (SDPA touches neither, measured). Beside these, every zero-argument torch.get_*/is_*/are_*
    reading and every torch.backends property and getter is found by a sweep (a flag a later torch adds is watched
    too), with autocast per device, the saved-tensor hooks' stack top, the torch function and dispatch mode stacks,
    and the interpreter's trace, profile, exception and signal hooks. What
    changed is put back, so one bad impl does not poison the checks after it."""
    before = _global_state()
    try:
        if _PYTHON_BASELINE:
            _restore_python(_PYTHON_BASELINE)
        start = _global_state()
        qkv = ref.leaves((s.q, s.k, s.v))
        out = s.impl(*qkv, **s.kwargs())
        checked_output(out, s.q, s.v)
        torch.autograd.grad(out, qkv, ref.copy(s.dout))
        try:  # a call that must be refused (k of another dtype, as SDPA refuses) leaves the process as well
            s.impl(s.q, s.k.to(torch.float64 if s.q.dtype != torch.float64 else torch.float32), s.v, **s.kwargs())
        except Exception:  # noqa: BLE001  (refused: the contract; kv-dtype checks judge whether it is)
            pass
        after = _global_state()
    finally:
        _restore(before)
    changed = _changes(start, after)
    # The RNGs are not in the baseline (_RNG_STATES): the run's dropout checks draw from them legitimately.
    leaked = [name for name in _changes(_BASELINE, before) if name not in changed]
    if leaked:
        _restore({**before, **_BASELINE})
    changed += [f"{name} (left changed by an earlier call of this run)" for name in leaked]
    changed += [f"{name} (set by importing {module})" for impl, module, names in _IMPORTED if impl is s.impl
                for name in names]
    return Outcome(math.inf if changed else 0.0, 0.0, f"changed: {', '.join(changed)}" if changed else "")


# Python's own state is left out around a drawn problem: the harness's lazy imports during its golden values (scipy,
# sympy) change warnings filters and the environment; global-state-unchanged judges it, put back to the run's start.
_PER_CALL_SKIPPED = _PYTHON_STATE


@contextlib.contextmanager
def process_watched():
    """Yields a list that is filled, on leaving, with the names of the process state (_global_state but Python's own:
    _PER_CALL_SKIPPED) the block changed, and puts that state back. The harness wraps each drawn problem in it
    (generate.check_problem) and concurrent_calls' threads, so a change made only on one path (a long decode setting
    flush-to-zero, an autotuner drawing from the global RNG past some size, autocast left off by a refused call:
    red team rt43h) is named by the problem or check that made it, whatever its size (the RNGs included: the
    harness's own dropout calls draw under torch.random.fork_rng)."""
    changed: list[str] = []
    before = _global_state()
    try:
        yield changed
    finally:
        after = _global_state()
        changed += _changes(before, after, _PER_CALL_SKIPPED)
        if changed:
            _restore({**after, **{k: v for k, v in before.items() if k not in _PER_CALL_SKIPPED}})


# (impl, module, what importing the module changed) for each target loaded by name (cli.load_target)
_IMPORTED: list[tuple] = []


def imported(impl, module: str, changed: list[str]) -> None:
    """Record what importing ``module`` (the module ``impl`` was loaded from) changed in the process, judged by
    global-state-unchanged (red team rt44h: a module whose import set TF32 and the float32 matmul precision passed,
    the run's baseline being taken after the import). Only a target loaded by name is judged so: an impl handed to
    verify_attention was imported by the caller, whose process holds its own settings (a conftest's, other
    libraries'), none of which a later reading can tell from the import's."""
    _IMPORTED[:] = [entry for entry in _IMPORTED if entry[0] is not impl]
    if changed:
        _IMPORTED.append((impl, module, list(changed)))


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return torch.equal(a, b)
    if isinstance(a, dict) and a and "" in a and isinstance(b, dict):  # logging levels
        return _same_logging(a, b)
    return a == b


_BWD = frozenset({BACKWARD})
for _inv in (
    Invariant("empty-dims", None, empty_dims, _contract, _BWD,
              bug_classes="an empty dimension (B, H, Nq, Nk, D or Dv = 0) answered with NaN, garbage or a "
                          "wrong shape instead of SDPA's result or a refusal"),
    Invariant("refused-inputs", None, refused_inputs, _contract, frozenset({GQA}),
              bug_classes="mixed q/k/v dtypes, Hkv not dividing Hq under enable_gqa, mismatched head dims "
                          "accepted where SDPA raises"),
    Invariant("kv-lengths-refused", None, kv_lengths_refused, _contract,
              bug_classes="k and v of different lengths accepted (v read over k's length: silently truncated, "
                          "or read past its end)"),
    Invariant("aliased-inputs", None, aliased_inputs, _contract, _BWD,
              bug_classes="q, k, v sharing tensors (attn(x, x, x), attn(x, x, v), attn(q, m, m), attn(x, k, x)): a fast "
                          "path for q is k taking dS as symmetric, or gradients of aliased inputs overwriting instead "
                          "of summing, or one slot's gradient returned in both"),
    Invariant("argument-types", None, argument_types, _contract, frozenset({CAUSAL}),
              bug_classes="scale honoured only as a Python float (an int or NumPy scale taken for None); is_causal "
                          "tested by identity (numpy.bool_(True), 1 or a tensor accepted and read as False; numpy.bool_(False), 0 "
                          "or tensor(False) read as True by `is not False`)"),
    Invariant("dropout-p-range", "dropout-kept-fraction", dropout_p_range, _contract, frozenset({DROPOUT}),
              bug_classes="dropout_p = 1 dividing by 1 - p = 0 (NaN/inf) or keeping weights; p > 1 accepted; "
                          "p < 0 or NaN accepted and applied (rescaled by 1/(1 - p))"),
    Invariant("nan-propagation", None, nan_propagation, _contract,
              bug_classes="NaN or an infinity in an input hidden (fmax, nan_to_num, clamped scores, "
                          "NaN-skipping max) or spread to outputs that do not depend on it"),
    Invariant("gradient-subsets", "attention-backward", gradient_subsets, _contract, _BWD,
              bug_classes="only some of q, k, v requiring grad: dq missing or wrong with frozen K/V, dk/dv "
                          "wrong with a frozen query"),
    Invariant("gradient-sequences", "attention-backward", gradient_sequences, _contract, _BWD,
              bug_classes="backward state that a second forward of the same shape overwrites (a per-shape "
                          "workspace; also on the contract case's plain MHA twin: red team rt50's half MHA path), a "
                          "backward that changes or frees what it saved (the second backward of retain_graph wrong), "
                          "the backward reading scale 0 as unset"),
    Invariant("double-backward", None, double_backward, _contract, _BWD,
              bug_classes="double backward silently wrong (a backward that detaches, or differentiates "
                          "something else) instead of right or refused"),
    Invariant("output-inplace-before-backward", None, output_modified_before_backward, _contract, _BWD,
              bug_classes="output modified in place before backward and the backward reading it untracked "
                          "(the autograd version counter bypassed)"),
    Invariant("input-inplace-before-backward", None, input_modified_before_backward, _contract, _BWD,
              bug_classes="q, k or v modified in place between forward and backward and the backward reading "
                          "the new values untracked (inputs kept outside save_for_backward; red team rt44h: frozen "
                          "k, v of a KV cache kept on ctx by reference)"),
    Invariant("mask-inplace-before-backward", None, mask_modified_before_backward, _contract,
              frozenset({ATTN_MASK, BACKWARD}),
              bug_classes="a frozen attn_mask written into between forward and backward (a reused mask buffer) and "
                          "the backward reading the new mask untracked (a mask kept on ctx by reference; red team "
                          "rt45h)"),
    Invariant("attn-mask-dtype-refused", None, mask_dtype_refused, _contract, frozenset({ATTN_MASK}),
              bug_classes="an integer 0/1 attn_mask (or float64, or the other half type) accepted where SDPA "
                          "raises: taken as bool, as additive 0/1 scores, or cast down silently"),
    Invariant("attn-mask-shape-refused", None, mask_shape_refused, _contract, frozenset({ATTN_MASK}),
              bug_classes="an attn_mask that does not broadcast to (B, Hq, Nq, Nk) (more key columns or query "
                          "rows, another batch or head size) sliced or read past instead of refused"),
    Invariant("stride-zero-dout", None, stride_zero_dout, _contract, _BWD,
              bug_classes="a dO with stride 0 (out.sum().backward()) read as dense (stride 0 taken as unset)"),
    Invariant("mask-forms-backward", "causal-mask-top-left", mask_forms_backward, _contract,
              frozenset({BACKWARD, ATTN_MASK}),
              bug_classes="a broadcast attn_mask ((Nq, Nk), (Hq, Nq, Nk), key padding) read wrongly in the "
                          "backward only"),
    Invariant("attn-mask-untouched", None, attn_mask_untouched, _contract, frozenset({BACKWARD, ATTN_MASK}),
              bug_classes="the caller's attn_mask written into (converted in place)"),
    Invariant("many-calls-of-a-shape", None, many_calls_of_a_shape, _contract,
              bug_classes="state that changes with the count of calls of one shape (red team rt49: an autotuner's "
                          "tuned configuration, after 256 calls, dropping the tail key block; a warm-up path)"),
    Invariant("buffers-mutated-between-calls", None, buffers_mutated_between_calls, _contract,
              bug_classes="state kept between calls: results cached by data_ptr go stale when the same "
                          "buffers are written in place, or keyed without the storage offset (sibling views), or "
                          "keyed by the version counter that a write through .data never moves (red team rt44h: "
                          "an upcast K/V cache)"),
    # every dtype (red team rt50: half inputs upcast into float32 staging buffers shared by callers, a path of the
    # half dtypes alone, escaped float32's); the mixed and training ones float32 only (their cost)
    Invariant("concurrent-calls", None, concurrent_calls, _contract,
              bug_classes="a workspace shared by every caller (a module-level score or output buffer keyed by "
                          "shape, a cache filled without a lock, half inputs upcast into shared float32 staging "
                          "buffers): threads calling at once get each other's answers"),
    Invariant("concurrent-calls-mixed", None, concurrent_calls_mixed, _contract, frozenset({CAUSAL}),
              dtypes=frozenset({torch.float32}),
              bug_classes="state shared by concurrent callers with different arguments: launch arguments (scale, "
                          "is_causal, the mask) in a module-level dict read back after the matmul, a workspace keyed "
                          "by shape alone: one thread's scale, causal flag or mask used for another's call"),
    Invariant("concurrent-training", None, concurrent_training, _contract, frozenset({BACKWARD, CAUSAL}),
              dtypes=frozenset({torch.float32}),
              bug_classes="backward state shared by concurrent training threads (row max and sum in a module-level "
                          "workspace keyed by shape): one thread's statistics in another's gradients"),
    Invariant("mask-mutated-between-calls", None, mask_mutated_between_calls, _contract, frozenset({ATTN_MASK}),
              bug_classes="a converted attn_mask cached per mask object (or data_ptr) goes stale when the caller "
                          "writes the mask in place between calls"),
    Invariant("global-state-unchanged", None, global_state_unchanged, _contract, _BWD,
              bug_classes="a call changing the process: flush-to-zero, default dtype, threads, grad mode, "
                          "deterministic mode, matmul precision, SDPA backend switches (flash/math/...) or other "
                          "torch.backends flags, RNG drawn without dropout, NumPy's or Python's global RNG drawn "
                          "(an autotuner's random pick); Python's warnings filters "
                          "(simplefilter('ignore') to silence a library), logging levels, os.environ, sys.path, "
                          "NumPy's error handling (np.seterr), the garbage collector disabled, the recursion limit, "
                          "the working directory; saved-tensor hooks, autocast, torch function/dispatch modes left "
                          "pushed; any torch.get_*/is_* reading or torch.backends flag (found, not listed); trace, "
                          "profile, exception and signal hooks; also after a refused call; torch._C's readings "
                          "(TorchScript fuser flags), torch's config modules (torch._dynamo.config), a public torch "
                          "function replaced (SDPA patched); the target module's own import changing any of these"),
    Invariant("shape-contract", None, shape_contract, _contract,
              bug_classes="q, k, v shapes SDPA refuses accepted (k/v batches larger than q's, a head count not "
                          "dividing Hq, k and v lengths or head dims that differ) or shapes it accepts answered "
                          "wrongly (a broadcast batch or head of 1, v's heads read through k's GQA map)"),
    Invariant("arguments-released", None, arguments_released, _contract,
              bug_classes="state held across calls by reference: an output memo returning the cached tensor (keyed "
                          "by data_ptr and version), an unbounded cache of converted masks keyed by the mask tensor, "
                          "any argument or result kept alive after the call (memory grows with every call)"),
    Invariant("arguments-released-backward", None, arguments_released_backward, _contract, _BWD,
              bug_classes="a training call's inputs kept past the call and its backward (tensors stashed in a "
                          "module-level recompute cache outside ctx.save_for_backward: memory grows every step)"),
):
    register(_inv)
