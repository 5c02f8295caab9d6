"""float64 inputs judged, not refused: SDPA accepts them, and a kernel that computes them with its
float32 accumulators and casts back answers at float32's precision (errors near 1e-7 where SDPA's
math backend errs near 1e-16).

The golden value is attention computed in numpy's longdouble: on x86-64 the 80-bit extended type,
a 64-bit significand (np.finfo(np.longdouble).eps = 2^-63, measured), 2^11 times finer than
float64's u = 2^-53. The rule is the one every dtype is judged by (tolerance.py) at u = 2^-53: MULT
times the plain float64 reference's error against that golden value, plus the floor of float64
roundings at the output's scale and of the scores (as for float32, float64 has no wider type
inside a kernel, so it gets float32's FLOOR_ROUNDINGS). Where longdouble is no wider than float64
(other platforms) nothing finer is at hand, and the check says so instead of judging.

It runs on the contract case, once per run (in the float32 pass: the float64 problems do not depend on
the dtype judged), on small problems: numpy's longdouble matmul is an unvectorised loop.
"""
from __future__ import annotations

import inspect
import math

import numpy as np
import torch

from kernels.harness import reference as ref
from kernels.harness import tolerance as tol
from kernels.harness.cases import CONTRACT, Case
from kernels.harness.invariants import BACKWARD, CAUSAL, Invariant, register
from kernels.harness.subject import Outcome, Subject, checked_output, worst

WIDER = np.finfo(np.longdouble).eps < np.finfo(np.float64).eps


def _longdouble(*tensors) -> list[np.ndarray]:
    return [x.detach().cpu().numpy().astype(np.longdouble) for x in tensors]


def golden(q, k, v, *, is_causal=False, scale=None, enable_gqa=False, attn_mask=None) -> np.ndarray:
    """softmax(scale · Q Kᵀ + mask) V in longdouble (B, Hq, Nq, Dv); rows with no visible key 0."""
    p, _, v, _ = _weights(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa, attn_mask=attn_mask)
    return np.matmul(p, v)


def golden_gradients(q, k, v, dout, *, is_causal=False, scale=None, enable_gqa=False, attn_mask=None) -> list:
    """(dq, dk, dv) in longdouble by the backward the catalogue derives (claim attention-backward):
    dV = Pᵀ dO, dP = dO Vᵀ, dS = P∘(dP − D) with D = rowsum(P∘dP), dQ = scale·dS K, dK = scale·dSᵀ Q;
    with GQA, dK and dV summed over each KV head's group of query heads."""
    p, k_rep, v_rep, scale = _weights(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa,
                                      attn_mask=attn_mask)
    q_, k_, do = _longdouble(q, k, dout)
    dv = np.matmul(np.swapaxes(p, -1, -2), do)  # (B, Hq, Nk, Dv)
    dp = np.matmul(do, np.swapaxes(v_rep, -1, -2))  # (B, Hq, Nq, Nk)
    ds = p * (dp - (p * dp).sum(axis=-1, keepdims=True))  # (B, Hq, Nq, Nk)
    dq = scale * np.matmul(ds, k_rep)  # (B, Hq, Nq, D)
    dk = scale * np.matmul(np.swapaxes(ds, -1, -2), q_)  # (B, Hq, Nk, D)
    hkv = k_.shape[-3]
    if dk.shape[-3] != hkv:  # (B, Hq, N, ·) summed over each group: (B, Hkv, N, ·)
        dk, dv = (g.reshape(*g.shape[:-3], hkv, g.shape[-3] // hkv, *g.shape[-2:]).sum(axis=-3) for g in (dk, dv))
    return [dq, dk, dv]


def _weights(q, k, v, *, is_causal=False, scale=None, enable_gqa=False, attn_mask=None):
    """(P, k and v with one head per query head, the scale), in longdouble."""
    q, k, v = _longdouble(q, k, v)
    if enable_gqa:
        group = q.shape[-3] // k.shape[-3]
        k, v = np.repeat(k, group, axis=-3), np.repeat(v, group, axis=-3)
    scale = np.longdouble(ref.default_scale(q.shape[-1]) if scale is None else scale)
    s = np.matmul(q * scale, np.swapaxes(k, -1, -2))  # (B, Hq, Nq, Nk)
    if attn_mask is not None:
        m = attn_mask.detach().cpu()
        s = (np.where(m.numpy(), s, -np.inf) if m.dtype == torch.bool
             else s + m.double().numpy().astype(np.longdouble))
    if is_causal:
        s = np.where(ref.causal_mask(s.shape[-2], s.shape[-1]).numpy(), s, -np.inf)
    top = s.max(axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0))
    total = e.sum(axis=-1, keepdims=True)
    p = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    return p, k, v, scale


def _problems(s: Subject, causal: bool = False) -> dict[str, tuple]:
    """(q, k, v, kwargs) in float64 with all 53 bits drawn: the contract case's shape (GQA, Dv ≠ D, as
    the impl's features narrowed it), an additive mask (when the impl takes attn_mask), scores of size 10
    (scale 4), one over 400 keys, and (``causal``) one with is_causal."""
    c = s.case
    kv_long = 1 if c.gqa else 2
    shapes = ((c.batch, c.q_heads, c.n_q, c.head_dim), (c.batch, c.kv_heads, c.n_k, c.head_dim),
              (c.batch, c.kv_heads, c.n_k, c.dv))
    long = ((1, 2, 5, 32), (1, kv_long, 400, 32), (1, kv_long, 400, 16))

    def draw(label, shape_set):
        return [torch.randn(*shape, generator=s.rng(f"float64 {label} {i}"), dtype=torch.float64)
                for i, shape in enumerate(shape_set)]

    gqa = dict(enable_gqa=c.gqa)
    problems = {"plain": (*draw("plain", shapes), gqa), "scale 4": (*draw("scale", shapes), dict(gqa, scale=4.0)),
                "400 keys": (*draw("long", long), gqa)}
    try:
        takes_mask = "attn_mask" in inspect.signature(s.impl).parameters
    except (TypeError, ValueError):  # no signature to read: offer it
        takes_mask = True
    if takes_mask:
        bias = torch.randn(c.n_q, c.n_k, generator=s.rng("float64 mask"), dtype=torch.float64)
        problems["additive mask"] = (*draw("mask", shapes), dict(gqa, attn_mask=bias))
    if causal:  # (a kernel may keep a path of its own for causal, in float32)
        problems["causal"] = (*draw("causal", shapes), dict(gqa, is_causal=True))
    return problems


def _judged() -> Outcome | None:
    if not WIDER:
        return Outcome(0.0, 0.0, f"not judged: numpy's longdouble here is no wider than float64 "
                                 f"(eps {np.finfo(np.longdouble).eps:.3g})")
    return None


def _on(s: Subject, kw: dict) -> dict:
    return {key: (x.to(s.device) if isinstance(x, torch.Tensor) else x) for key, x in kw.items()}


def float64_agreement(s: Subject, causal: bool = False) -> Outcome:
    """Each float64 problem's output against the longdouble golden value, by the low-precision rule at
    float64's u (``causal``: the causal problem alone). Refusing float64 (raising) is honest and passes: a kernel
    may not serve it."""
    if _judged() is not None:
        return _judged()
    outcomes, details = [], []
    problems = _problems(s, causal)
    for name, (q, k, v, kw) in ({"causal": problems["causal"]} if causal else problems).items():
        try:
            with torch.no_grad():
                out = s.impl(q.to(s.device), k.to(s.device), v.to(s.device), **_on(s, kw))
        except Exception as exc:
            details.append(f"{name}: refused ({type(exc).__name__})")
            continue
        out = checked_output(out, q, v)  # what came back not a float64 tensor of the shape: a failure
        gold = golden(q, k, v, **kw)
        err = float(np.abs(out.cpu().numpy().astype(np.longdouble) - gold).max()) if gold.size else 0.0
        plain = float(np.abs(ref.attention(q, k, v, **kw).numpy().astype(np.longdouble) - gold).max())
        _, sensitivity = ref.golden_and_sensitivity(q, k, v, **kw)
        gold64 = torch.from_numpy(gold.astype(np.float64))
        o = Outcome(err if math.isfinite(err) else math.inf,
                    tol.bound(torch.float64, plain, gold64, sensitivity))
        outcomes.append(o)
        details.append(f"{name}: {o.figures}")
    return worst(outcomes, details) if outcomes else Outcome(0.0, 0.0, "; ".join(details))


def float64_gradients(s: Subject) -> Outcome:
    """Each float64 problem's (dq, dk, dv) for a drawn dO against the longdouble gradients of the derived
    backward, by the same rule at float64's u: MULT × the plain float64 reference's error (by autograd) plus
    the floor at the gradients' term sizes and score sensitivities (reference.py). A forward right in
    float64 whose backward computes in float32 is refused here, not by float64-agreement."""
    if _judged() is not None:
        return _judged()
    outcomes, details = [], []
    for name, (q, k, v, kw) in _problems(s).items():
        dout = torch.randn(*q.shape[:-1], v.shape[-1], generator=s.rng(f"float64 dO {name}"), dtype=torch.float64)
        try:
            _, got = ref.output_and_grads(s.impl, q.to(s.device), k.to(s.device), v.to(s.device), dout.to(s.device),
                                          **_on(s, kw))
        except Exception as exc:
            details.append(f"{name}: refused ({type(exc).__name__})")
            continue
        gold = golden_gradients(q, k, v, dout, **kw)
        _, plain = ref.output_and_grads(ref.attention, q, k, v, dout, **kw)
        sizes = ref.gradient_term_sizes(q, k, v, dout, **kw)
        sensitivities = ref.gradient_score_sensitivities(q, k, v, dout, **kw)
        for part, g, g_gold, g_plain, size, sensitivity in zip(("dq", "dk", "dv"), got, gold, plain, sizes,
                                                                sensitivities):
            if tuple(g.shape) != g_gold.shape:
                outcomes.append(Outcome(math.inf, 0.0))
                details.append(f"{name} {part}: shape {tuple(g.shape)}, expected {g_gold.shape}")
                continue
            err = float(np.abs(g.cpu().numpy().astype(np.longdouble) - g_gold).max()) if g_gold.size else 0.0
            plain_err = float(np.abs(g_plain.numpy().astype(np.longdouble) - g_gold).max()) if g_gold.size else 0.0
            o = Outcome(err if math.isfinite(err) else math.inf,
                        tol.bound(torch.float64, plain_err, size, sensitivity))
            outcomes.append(o)
            details.append(f"{name} {part}: {o.figures}")
    return worst(outcomes, details) if outcomes else Outcome(0.0, 0.0, "; ".join(details))


register(Invariant("float64-agreement", None, float64_agreement, lambda c: c.kind == CONTRACT,
                   dtypes=frozenset({torch.float32}),
                   bug_classes="float64 inputs computed with float32 accumulators and cast back (a kernel's fixed "
                               "compute dtype): errors of float32's size where float64's are due"))
register(Invariant("float64-causal", None, lambda s: float64_agreement(s, causal=True),
                   lambda c: c.kind == CONTRACT, frozenset({CAUSAL}), dtypes=frozenset({torch.float32}),
                   bug_classes="float64 with is_causal computed on a float32 path (a causal kernel of its own)"))
register(Invariant("float64-gradients", "attention-backward", float64_gradients, lambda c: c.kind == CONTRACT,
                   frozenset({BACKWARD}), dtypes=frozenset({torch.float32}),
                   bug_classes="float64 gradients computed with float32 accumulators (a backward of a fixed compute "
                               "dtype beside a float64 forward)"))
