"""One implementation on one case in one dtype (a :class:`Subject`), and how an invariant's
finding is measured against its bound (an :class:`Outcome`).

Bounds come from the low-precision rule in ``tolerance.py``; a relation between two outputs of
the implementation whose exact values agree (A ≈ B) allows each side its own error, so its bound
is MULT × (reference error of A's input + reference error of B's input) + the floor.
"""
from __future__ import annotations

import contextlib
import functools
import math
from dataclasses import dataclass
from typing import Callable, NamedTuple

import torch

from kernels.harness import reference as ref
from kernels.harness import rounding_direction as direction
from kernels.harness import tolerance as tol
from kernels.harness.cases import Case, generator, make_inputs, randn


@dataclass(frozen=True)
class Outcome:
    discrepancy: float
    bound: float
    detail: str = ""
    statistic: str = ""  # what discrepancy/bound are when not an error and its bound ("z": a test statistic)

    @property
    def figures(self) -> str:
        """'discrepancy/bound'; for a test statistic, with what was tested (its detail) before it."""
        shown = f"{self.discrepancy:.3g}/{self.bound:.3g}"
        return f"{self.detail}: {self.statistic} {shown}" if self.statistic else shown


class NotApplicable(Exception):
    """Raised by an invariant that cannot judge this impl (its message says why): reported as not applicable."""


class Golden(NamedTuple):
    """An output's float64 golden value, the plain same-precision reference's error against it, and
    the output's sensitivity to rounding the scores (``reference.golden_and_sensitivity``): the
    floor is set by the value's size and by that sensitivity; for an impl that declares a log-sum-exp
    merge, by ``lse_size`` too (``reference.lse_sizes``; 0 otherwise)."""
    value: torch.Tensor
    error: float
    sensitivity: torch.Tensor
    lse_size: torch.Tensor | float = 0.0
    terms: torch.Tensor | None = None  # Σ_j P_ij |V_jd| (half dtypes: rounding_direction.uncancelled)
    plain: torch.Tensor | None = None  # the plain same-precision output (half dtypes: its own rounding bias)

    def rows(self, index) -> "Golden":
        """The same, for the query rows ``index`` only (dim -2)."""
        at = lambda t: t[:, :, index] if isinstance(t, torch.Tensor) else t  # noqa: E731
        return Golden(at(self.value), self.error, at(self.sensitivity), at(self.lse_size), at(self.terms),
                      at(self.plain))


class GradientScales(NamedTuple):
    """What a gradient's floor is set by: (dq, dk, dv) with every factor absolute, and (dq, dk, dv)'s
    sensitivity to rounding the scores (zeros where not computed)."""
    sizes: tuple
    sensitivities: tuple = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class Gradients:
    """One backward call: the impl's (dq, dk, dv), the float64 golden ones, the plain same-precision
    ones (all on the CPU), and the names of the tensors (q, k, v, dout) the call wrote into."""
    got: tuple
    gold: tuple
    plain: tuple
    changed: tuple[str, ...]


class Subject:
    """One implementation on one case in one dtype: its inputs, its calls, the golden values."""

    def __init__(self, impl: Callable, case: Case, dtype: torch.dtype, device: str, seed: int):
        self.impl, self.case, self.dtype, self.device, self.seed = impl, case, dtype, device, seed
        self.q, self.k, self.v, self.dout = make_inputs(case, dtype, device, seed)
        self.value_unit = 1.0  # the scale v is drawn at (tolerance.floor's unit; generate's small-values regime)

    # ---------------------------------------------------------------- calls
    def kwargs(self, **overrides) -> dict:
        kw = dict(is_causal=self.case.causal, scale=self.case.scale, enable_gqa=self.case.gqa)
        kw.update(overrides)
        return kw

    def _call(self, q, k, v, **overrides):
        """impl on copies of q, k, v (strides kept): (what it returned, the copies after the call).
        An impl that writes into its inputs is named by inputs-untouched and must not corrupt the
        inputs of every later check."""
        q, k, v = ref.copy(q), ref.copy(k), ref.copy(v)
        with torch.no_grad():
            return self.impl(q, k, v, **self.kwargs(**overrides)), (q, k, v)

    def run_fresh(self, q, k, v, context: str = "no_grad", **overrides) -> torch.Tensor:
        """impl on q, k, v as given: the caller's own fresh tensors (their strides and storage
        offsets, which a copy would not keep, are what is being checked). The caller's tensors keep
        their storage, strides and offset (a view still aliases its base): an impl that makes them
        contiguous by assigning ``.data`` leaves the values equal but detaches a view of a packed QKV
        buffer from later writes into it. ``context``: one of CONTEXTS, the autograd mode of the call."""
        before = [_placement(t) for t in (q, k, v)]
        with calling_context(context):
            out = checked_output(self.impl(q, k, v, **self.kwargs(**overrides)), q, v)
        for name, t, was in zip("qkv", (q, k, v), before):
            if _placement(t) != was:
                raise BadOutput(f"the call moved the caller's {name}: (data_ptr, strides, storage offset) "
                                f"{was} became {_placement(t)}")
        return out

    def run(self, q=None, k=None, v=None, **overrides) -> torch.Tensor:
        q, k, v = (self.q if q is None else q), (self.k if k is None else k), (self.v if v is None else v)
        return checked_output(self._call(q, k, v, **overrides)[0], q, v)

    @functools.cached_property
    def first_call(self):
        """impl on the base inputs, once: (what it returned, names of the inputs it changed, names of
        the inputs whose memory the output shares)."""
        raw, after = self._call(self.q, self.k, self.v)
        changed = [name for name, x, y in zip("qkv", (self.q, self.k, self.v), after) if not torch.equal(x, y)]
        shared = [name for name, x in zip("qkv", after) if isinstance(raw, torch.Tensor)
                  and raw.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()]
        return raw, changed, shared

    def output(self) -> torch.Tensor:
        return checked_output(self.first_call[0], self.q, self.v)

    # ---------------------------------------------------------------- references
    def reference(self, q=None, k=None, v=None, **overrides) -> Golden:
        """The float64 golden output, the plain same-precision reference's error, the score sensitivity."""
        q, k, v = (self.q if q is None else q), (self.k if k is None else k), (self.v if v is None else v)
        kw = self.kwargs(**overrides)
        half = self.dtype in direction.BIASED_DTYPES  # (the rounding-bias test's terms and plain output)
        gold, sensitivity, *terms = ref.golden_and_sensitivity(q.cpu(), k.cpu(), v.cpu(), terms=half, **kw)
        lse_size = ref.lse_sizes(q.cpu(), k.cpu(), v.cpu(), **kw) if tol.merge_for(self.impl) == tol.LOG_SUM_EXP else 0.0
        plain = ref.attention(q, k, v, **kw).cpu()
        return Golden(gold, tol.max_abs_error(plain, gold), sensitivity, lse_size, *terms, plain if half else None)

    @functools.cached_property
    def base(self) -> Golden:
        return self.reference()

    def backward(self, q=None, k=None, dout=None, v=None, **overrides) -> Gradients:
        """impl's gradients for (q, k, v, dout), golden and plain ones beside them.

        Every tensor the impl sees is a fresh copy (``ref.leaves``), so an impl that writes into its
        inputs or into dO changes nothing the harness keeps; what it changed is recorded."""
        q, k = (self.q if q is None else q), (self.k if k is None else k)
        v = self.v if v is None else v
        dout = self.dout if dout is None else dout
        kw = self.kwargs(**overrides)
        qkv = ref.leaves((q, k, v))  # clone() keeps the strides of a non-contiguous input
        d_o = ref.copy(dout)  # strides kept: a non-contiguous dO stays non-contiguous
        out = self.impl(*qkv, **kw)
        checked_output(out, q, v)
        attached(out, qkv)
        got = torch.autograd.grad(out, qkv, d_o)
        for name, g, x in zip(("dq", "dk", "dv"), got, (q, k, v)):
            if not isinstance(g, torch.Tensor) or tuple(g.shape) != tuple(x.shape):
                raise BadOutput(f"{name} has shape {tuple(getattr(g, 'shape', ()))}, expected {tuple(x.shape)}")
        changed = tuple(name for name, x, y in zip(("q", "k", "v", "dO"), (q, k, v, dout), (*qkv, d_o))
                        if not torch.equal(x, y.detach()))
        _, gold = ref.output_and_grads(ref.attention, q.cpu(), k.cpu(), v.cpu(), dout.cpu(), upcast=True, **kw)
        _, plain = ref.output_and_grads(ref.attention, q, k, v, dout, **kw)
        return Gradients(tuple(g.detach().cpu() for g in got), gold, tuple(g.cpu() for g in plain), changed)

    @functools.cached_property
    def gradients(self):
        """(impl's (dq, dk, dv), golden float64 ones, plain same-precision ones) on the base inputs."""
        g = self.base_backward
        return g.got, g.gold, g.plain

    @functools.cached_property
    def base_backward(self) -> Gradients:
        return self.backward()

    def gradient_sizes_for(self, q=None, k=None, dout=None, **overrides) -> "GradientScales":
        """Float64 gradients with every factor made absolute (the scale rounding acts at), and the
        gradients' sensitivity to rounding the scores."""
        q, k = (self.q if q is None else q), (self.k if k is None else k)
        dout = self.dout if dout is None else dout
        args, kw = tuple(t.cpu() for t in (q, k, self.v, dout)), self.kwargs(**overrides)
        return GradientScales(ref.gradient_term_sizes(*args, **kw), ref.gradient_score_sensitivities(*args, **kw))

    @functools.cached_property
    def gradient_sizes(self):
        return self.gradient_sizes_for()

    def rng(self, label: str) -> torch.Generator:
        return generator(self.seed, self.case.name, str(self.dtype), label)

    def cast(self, x: torch.Tensor) -> torch.Tensor:
        return x.to(device=self.device, dtype=self.dtype)

    def randn(self, gen: torch.Generator | str, *shape) -> torch.Tensor:
        """Standard normal draws in the subject's dtype and device (cases.randn), from ``gen`` or rng(``gen``)."""
        return self.cast(randn(self.rng(gen) if isinstance(gen, str) else gen, *shape, dtype=self.dtype))


def _placement(t: torch.Tensor) -> tuple:
    return t.untyped_storage().data_ptr(), t.stride(), t.storage_offset()


class BadOutput(ValueError):
    """The impl answered, with something that is not the output (or gradients) asked for: a failure
    of the impl, never its refusal of a problem (generate.py passes refusals, not this)."""


def checked_output(out, q, v) -> torch.Tensor:
    if not isinstance(out, torch.Tensor):
        raise BadOutput(f"impl returned {type(out).__name__}, expected a torch.Tensor")
    expected = tuple(q.shape[:-1]) + (v.shape[-1],)
    if tuple(out.shape) != expected:
        raise BadOutput(f"output has shape {tuple(out.shape)}, expected {expected}")
    # An op called outside inference_mode returns a normal tensor, whatever its inputs (SDPA, measured: under
    # no_grad too). An inference tensor there breaks the caller's autograd later (red team rt42h: a "faster"
    # no-grad path run under inference_mode escaped); contract item "output".
    # SDPA's output has q's dtype whatever the mask's (measured: a float32 additive mask beside float16 q gives
    # float16); judged on every call, not on the fixed cases alone (red team rt43h: a float32 mask promoted a half
    # output only on drawn masked problems); contract item "output"
    if out.dtype != q.dtype:
        raise BadOutput(f"output dtype {out.dtype}, expected q's {q.dtype}")
    if out.is_inference() and not torch.is_inference_mode_enabled():
        raise BadOutput("the output is an inference tensor, but the call was not made under inference_mode "
                        "(the impl ran its own inference_mode: the tensor cannot be saved for a later backward)")
    return out.detach()


def attached(out: torch.Tensor, inputs) -> None:
    """Under grad mode the output of inputs requiring grad carries the graph (SDPA's does, measured): a detached one
    is a wrong answer, not a refusal. Red team rt45h: a decode path run under no_grad ("decode is inference") returned
    an output with no grad_fn; the harness's backward then raised inside autograd, which read as the impl refusing."""
    if torch.is_grad_enabled() and any(t.requires_grad for t in inputs) and not out.requires_grad:
        raise BadOutput("the output is detached from the graph: inputs require grad under grad mode, but it has no "
                        "grad_fn (gradients through it would be silently missing)")


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """a and b of one shape and bit for bit equal (NaN payloads compared too)."""
    bits = lambda x: x.detach().contiguous().view(-1).view(torch.uint8)  # noqa: E731
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(bits(a), bits(b))


def untouched(given, kept, names) -> None:
    """The tensors ``given`` to a call are bit for bit their copies ``kept`` from before it (contract item aliasing:
    inputs are never written into; red team rt46h: a long-prefill path pre-scaling the caller's q in place, which no
    fixed case's sizes reached)."""
    written = [n for n, x, c in zip(names, given, kept) if x is not None and not same_bits(x, c)]
    if written:
        raise BadOutput(f"the call wrote into the caller's {', '.join(written)}")


def unchanged(kept: tuple, what: str) -> None:
    """``kept`` = (a tensor the impl returned, its clone taken then): the tensor must be as it was, bit for bit, after
    the calls since (red team: outputs returned as views of a per-thread static buffer that the next call of the shape
    writes into; the later call's own answer is right, the caller's earlier one changes)."""
    held, copy = kept
    if not same_bits(held, copy):
        raise BadOutput(f"{what} changed under the caller when a later call ran (returned in memory the impl "
                        f"writes again)")


def against(s: Subject, observed, golden: Golden) -> Outcome:
    """observed vs its float64 golden value, by the low-precision rule, and a half-precision output for
    the bias of its rounding (rounding_biased: over the elements whose terms did not cancel, the plain
    reference's own bias allowed)."""
    magnitude = measured(s, observed, golden.value, golden.error, golden.value, golden.sensitivity, golden.lse_size)
    where = None if golden.terms is None else direction.uncancelled(golden.value, golden.terms)
    return rounding_biased(magnitude, observed, golden.value, where, golden.plain)


def measured(s: Subject, observed, value, reference_error: float, size, sensitivity=0.0, lse_size=0.0) -> Outcome:
    """observed vs the float64 ``value``: MULT × ``reference_error`` + the floor at ``size``, the
    score ``sensitivity`` and a declared log-sum-exp merge's ``lse_size``."""
    return Outcome(tol.max_abs_error(observed.cpu(), value),
                   tol.bound(s.dtype, reference_error, size, sensitivity, s.value_unit, lse_size))


def rounding_biased(magnitude: Outcome, observed, value, where=None, plain=None) -> Outcome:
    """``magnitude`` (observed against ``value``), or, where worse by ratio, the test of a float16/bfloat16
    result of MIN_ROWS rows for the bias of its rounding (rounding_direction.py; over ``where``; a ``plain``
    same-precision reference's own bias there allowed beside the margin)."""
    if not direction.judged(observed):
        return magnitude
    z, critical, seen = direction.bias_test(observed, value, observed.dtype, where, plain)
    bias = Outcome(z, critical, f"rounding bias ({seen})", statistic="z")
    return bias if ratio(bias) > ratio(magnitude) else magnitude


def relation(s: Subject, a, a_golden: Golden, b, b_golden: Golden) -> Outcome:
    """Two impl outputs whose golden values agree up to (a_gold - b_gold), known in float64.

    Discrepancy |(a - a_gold) - (b - b_gold)|: the law itself, with whatever the rounding of a
    transformed input changed in the exact answer taken out."""
    diff = (a.cpu().double() - b.cpu().double()) - (a_golden.value - b_golden.value)
    disc = tol.max_abs_error(diff, torch.zeros_like(diff))
    return Outcome(disc, tol.MULT * (a_golden.error + b_golden.error)
                   + tol.floor(s.dtype, a_golden.value, a_golden.sensitivity, s.value_unit, a_golden.lse_size))


def gradients_against(s: Subject, got, golden, plain, scales: GradientScales) -> Outcome:
    """Each of dq, dk, dv against its golden value by the low-precision rule; the worst of the three."""
    outcomes, details = [], []
    for name, g, g64, gp, size, sensitivity in zip(("dq", "dk", "dv"), got, golden, plain, *scales):
        o = measured(s, g, g64, tol.max_abs_error(gp, g64), size, sensitivity)
        o = rounding_biased(o, g, g64, direction.uncancelled(g64, size), gp)
        outcomes.append(o)
        details.append(f"{name} {o.figures}")
    return worst(outcomes, details)


# The mode a forward is called in: an impl may take another path under no_grad or inference_mode (a fast path
# that skips dropout or the mask), or under torch's deterministic mode (a fixed-order reduction path; red team rt41h:
# such a path dropping the last partial key block escaped), and SDPA's answer is the same in each (measured: dropout's
# keep mask too, for one seed). "deterministic" is no_grad with torch.use_deterministic_algorithms(True), restored after.
CONTEXTS = ("no_grad", "enable_grad", "inference_mode", "deterministic")


@contextlib.contextmanager
def _deterministic():
    was, warn_only = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        with torch.no_grad():
            yield
    finally:
        torch.use_deterministic_algorithms(was, warn_only=warn_only)


def calling_context(context: str):
    if context not in CONTEXTS:
        raise ValueError(f"context must be one of {', '.join(CONTEXTS)}; got {context!r}")
    return {"no_grad": torch.no_grad, "enable_grad": torch.enable_grad, "inference_mode": torch.inference_mode,
            "deterministic": _deterministic}[context]()


# How a backward is reached: right after its own forward; after a second forward of the same shape on
# other values (two layers of one model); or as the second of two backwards through one graph
# (retain_graph=True). Each must give the single call's gradients (state kept per shape or consumed in place
# by the first backward does not). "held": the gradients are kept while a second forward and backward of the same
# shape (other values) run, and judged after it (gradients returned in a per-shape workspace the next backward
# writes into change under the caller).
SEQUENCES = ("single", "two-layers", "retain-graph", "held")

# The mode a gradient problem's forward and backward run in, together (CONTEXTS are forward-only calls'):
# autograd on; torch's deterministic mode on as well (a kernel's fixed-order backward path, one a model trained
# reproducibly takes); anomaly detection on (a debugging run's path; without its NaN check, which would raise on a
# backward that rightly returns NaN for a non-finite dO). SDPA gives the same gradients in each (measured, math backend).
GRADIENT_CONTEXTS = ("enable_grad", "deterministic", "anomaly")


@contextlib.contextmanager
def gradient_context(context: str):
    if context not in GRADIENT_CONTEXTS:
        raise ValueError(f"context must be one of {', '.join(GRADIENT_CONTEXTS)}; got {context!r}")
    with contextlib.ExitStack() as stack:
        if context == "deterministic":
            stack.enter_context(_deterministic())  # (its no_grad undone just below)
        if context == "anomaly":
            stack.enter_context(torch.autograd.set_detect_anomaly(True, check_nan=False))
        stack.enter_context(torch.enable_grad())
        yield


def subset_gradients(s: Subject, tensors, kwargs: dict, golden, plain, scales: GradientScales,
                     sequence: str = "single", output: Golden | None = None, context: str = "enable_grad",
                     nonfinite: tuple | None = None, placed: Callable | None = None,
                     backward: Callable = lambda fn: fn()):
    """impl called on ``tensors`` (q, k, v as leaves, some requiring grad), differentiated for those
    alone with s.dout, in the call ``sequence`` (SEQUENCES) and the mode ``context`` (GRADIENT_CONTEXTS, forward
    and backward inside it): each gradient against its golden value by the low-precision rule, one asked for and
    missing (None) a failure. (outcomes, details) of the asked gradients, in q, k, v order. With ``output`` (its
    golden value) the output of this call, on the grad path, is judged too: q's dtype (as on the no-grad path) and
    its values. With ``nonfinite`` (the float64 gradients for s.dout, which then holds one non-finite element;
    golden, plain and scales are the clean dO's) each gradient is judged by ``placed`` (backward_values.placed, passed
    in: subject is below the modules that judge placement). ``backward`` runs each backward the caller makes
    (callers.backward_by: from another thread, under a default dtype)."""
    with gradient_context(context):
        out = s.impl(*tensors, **kwargs)
        checked_output(out, s.q, s.v)
        attached(out, [*tensors, *(x for x in kwargs.values() if torch.is_tensor(x))])
        if output is not None and out.dtype != s.q.dtype:
            raise BadOutput(f"with inputs requiring grad the output is {out.dtype}, not q's {s.q.dtype}")
        wanted = [t for t in tensors if t.requires_grad]
        kept = []  # (what the caller holds, its clone as returned, its name): bit for bit the same after the sequence
        if sequence == "two-layers":  # the same shape, other values (keys and queries reversed), before our backward
            kept.append((out, out.detach().clone(), "the first layer's output"))
            other = s.impl(*(t.detach().flip(-2).requires_grad_(t.requires_grad) for t in tensors), **kwargs)
        if sequence == "retain-graph":
            first = backward(lambda: torch.autograd.grad(out, wanted, ref.copy(s.dout), allow_unused=True,
                                                         retain_graph=True))
            kept += [(g, g.clone(), "the first backward's gradients") for g in first if torch.is_tensor(g)]
        grads = backward(lambda: torch.autograd.grad(out, wanted, ref.copy(s.dout), allow_unused=True))
        if sequence == "two-layers":
            del other  # kept alive until our backward ran, as a model's next layer is
        for held, copy, what in kept:
            unchanged((held, copy), what)
        if sequence == "held":  # our gradients held (as returned, no copy) through the next layer's forward and backward
            again = [t.detach().flip(-2).requires_grad_(t.requires_grad) for t in tensors]
            torch.autograd.grad(s.impl(*again, **kwargs), [t for t in again if t.requires_grad], ref.copy(s.dout),
                                allow_unused=True)
    got = iter(grads)
    outcomes, details = [], []
    if output is not None:
        outcomes.append(against(s, out.detach(), output))
        details.append(f"output {outcomes[-1].figures}")
    for i, (t, name) in enumerate(zip(tensors, ("dq", "dk", "dv"))):
        if not t.requires_grad:
            continue
        g = next(got)
        if g is None:
            outcomes.append(Outcome(math.inf, 0.0))
            details.append(f"{name} missing")
            continue
        error = tol.max_abs_error(plain[i], golden[i])
        if nonfinite is not None:
            o, said = placed(s, g.detach().cpu(), nonfinite[i], error, scales.sizes[i], scales.sensitivities[i],
                             bool(torch.isinf(s.dout).any()))
            outcomes.append(o)
            details.append(f"{name} {o.figures} ({said})")
            continue
        o = measured(s, g.detach().cpu(), golden[i], error, scales.sizes[i], scales.sensitivities[i])
        outcomes.append(o)
        details.append(f"{name} {o.figures}")
    return outcomes, details


def worst(outcomes: list[Outcome], details: list[str]) -> Outcome:
    """The outcome closest to (or furthest past) its bound, with every part's figures as detail."""
    w = max(outcomes, key=ratio)
    return Outcome(w.discrepancy, w.bound, "; ".join(details))


def ratio(o) -> float:
    """discrepancy / bound (1 = at the bound); works on an Outcome or a report Check."""
    if math.isnan(o.discrepancy):
        return math.inf
    return o.discrepancy / o.bound if o.bound > 0 else (math.inf if o.discrepancy > 0 else 0.0)


def packed(q, k, v) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Fresh copies of q, k, v as (B, H, N, D) views into one (B, N, n, H, D) buffer, the layout of a
    fused QKV projection: batch stride n·N·H·D, and every view but the first at a storage offset.
    Tensors of different shapes (GQA, Nq ≠ Nk, Dv ≠ D) share a buffer with those of their shape."""
    groups: dict[tuple, list[int]] = {}
    for i, t in enumerate((q, k, v)):
        groups.setdefault(tuple(t.shape), []).append(i)
    out = [None, None, None]
    for shape, members in groups.items():
        b, h, n, d = shape
        buf = torch.stack([(q, k, v)[i].transpose(1, 2) for i in members], dim=2).contiguous()  # (B, N, n, H, D)
        for j, i in enumerate(members):
            out[i] = buf[:, :, j].transpose(1, 2)  # (B, H, N, D) view
    return tuple(out)


def strided(x: torch.Tensor) -> torch.Tensor:
    """The same values as a non-contiguous view: (B, H, N, D) read out of (B, N, H, D) storage,
    the layout a projection followed by .view(B, N, H, D).transpose(1, 2) produces."""
    return x.transpose(1, 2).contiguous().transpose(1, 2)


def head_dim_strided(x: torch.Tensor) -> torch.Tensor:
    """The same values as a view with a head-dim stride of 2 (every other element of a wider buffer):
    a kernel that assumes the last stride is 1 reads the wrong elements."""
    return torch.stack([x, torch.zeros_like(x)], dim=-1)[..., 0]  # (B, H, N, D), strides (., ., ., 2)
