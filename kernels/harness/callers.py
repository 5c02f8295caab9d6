"""Who calls the impl, and on what machine: the caller contexts a drawn problem's calls come from (Problem.caller) and
the machine facts its thread-count problems present (machine_of).

SDPA's answer does not depend on the caller (contract item "caller"): on the main thread or another one (torch's
default generator and its intra-op pool are the process's, grad mode the calling thread's), under any default dtype a
model loader sets (torch.set_default_dtype(float16) or bfloat16 before building a half model, float64 in a numerical
study), and on a machine of any CPU count. Measured, SDPA math on this machine: the same bits for causal 3000 × 3000
float32 under each default dtype, and from a worker thread. A kernel may read any of these (red team rt50: causal
positions built in the default dtype, wrong past 2048 rows under float16; a thread-local default scale cached at a
thread's first call; a thread-local dropout generator; a split-K decode with a split per os.cpu_count() merged into 8
slots), and the harness's own calls came from the main thread of a 2-CPU process under float32 alone.
"""
from __future__ import annotations

import contextlib
import functools
import multiprocessing
import os
import queue
import threading

import torch

from kernels.harness.rounding_direction import ulp

MAIN = "main thread"
WORKER = "worker thread"
DEFAULT_DTYPES = {"default float16": torch.float16, "default bfloat16": torch.bfloat16,
                  "default float64": torch.float64}
CALLERS = (MAIN, WORKER, *DEFAULT_DTYPES)
# the forward called from the main thread, the backward through its graph run from the worker thread: on CUDA autograd
# runs every backward on a device thread of its own, so a kernel's backward keeping a workspace per thread (filled by
# the forward, read by the backward) reads another thread's (red team rt51's thread-local workspace escaped, every
# backward having run on its forward's thread)
BACKWARD_ON_WORKER = "backward on the worker thread"
# who makes a gradient problem's forward and backward (paths.threaded's gradient rows): the callers but the main
# thread, each making both calls as it makes the forward (a model loaded under a half default dtype trains under it:
# red team rt51's causal positions built in the default dtype in the backward alone escaped forward-only rows)
GRADIENT_CALLERS = (WORKER, BACKWARD_ON_WORKER, *DEFAULT_DTYPES)
# q, k, v (and a floating mask) of a half problem given as float32 inside torch.autocast to that dtype: a mixed-precision
# training step's call (paths.threaded's half rows; not one of CALLERS, which take the first pass's float32 rows too)
AUTOCAST = "autocast"
AUTOCAST_DTYPES = (torch.float16, torch.bfloat16)


class _Worker:
    """One long-lived thread that runs what it is handed, in order: the process's other caller. Long-lived, so state an
    impl keeps per thread (a default scale cached at its first call, a generator seeded once) meets the calls of
    several problems, as a serving pool's thread does."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.tasks: queue.Queue = queue.Queue()
        threading.Thread(target=self._serve, name="attention-proofs caller", daemon=True).start()

    def _serve(self) -> None:
        while True:
            fn, answer = self.tasks.get()
            try:
                answer.put((True, fn()))
            except BaseException as exc:  # noqa: BLE001  (raised again in the calling thread: on_worker)
                answer.put((False, exc))


_worker: _Worker | None = None
_lock = threading.Lock()


def on_worker(fn):
    """fn() run on the process's worker thread (one a process: a forked child makes its own), in the caller's grad
    and inference mode (thread-local in torch, so carried over); its result, or its exception raised here."""
    global _worker
    with _lock:
        if _worker is None or _worker.pid != os.getpid():
            _worker = _Worker()
    grad, inference = torch.is_grad_enabled(), torch.is_inference_mode_enabled()

    def in_mode():
        with torch.inference_mode(inference), torch.set_grad_enabled(grad):
            return fn()

    answer: queue.Queue = queue.Queue()
    _worker.tasks.put((in_mode, answer))
    ok, value = answer.get()
    if not ok:
        raise value
    return value


def called_by(impl, caller: str):
    """impl, its calls made by ``caller`` (one of CALLERS): on the worker thread, or under a default dtype set for the
    call alone (the harness's own tensors are made outside it)."""
    if caller not in CALLERS + (AUTOCAST, BACKWARD_ON_WORKER):
        raise ValueError(f"caller must be one of {', '.join(CALLERS + (AUTOCAST, BACKWARD_ON_WORKER))}; got {caller!r}")
    if caller in (MAIN, BACKWARD_ON_WORKER):
        return impl
    if caller == AUTOCAST:
        return _under_autocast(impl)
    if caller == WORKER:
        @functools.wraps(impl)
        def from_worker(*args, **kwargs):
            return on_worker(lambda: impl(*args, **kwargs))
        return from_worker
    @functools.wraps(impl)
    def under_default(*args, **kwargs):
        with _default_dtype(DEFAULT_DTYPES[caller]):
            return impl(*args, **kwargs)
    return under_default


def backward_by(caller: str):
    """How ``caller`` runs a backward ``fn`` (a call of torch.autograd.grad through the impl's graph): from the
    worker thread (BACKWARD_ON_WORKER), under the caller's default dtype, or as it is (the main thread; the worker
    thread's forward then meets a backward on another thread; autocast, which torch.amp leaves out of the backward)."""
    if caller == BACKWARD_ON_WORKER:
        return on_worker
    if caller in DEFAULT_DTYPES:
        def under_default(fn):
            with _default_dtype(DEFAULT_DTYPES[caller]):
                return fn()
        return under_default
    return lambda fn: fn()


@contextlib.contextmanager
def _default_dtype(dtype: torch.dtype):
    was = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(was)


def _under_autocast(impl):
    """impl called as a mixed-precision training step calls it: the half problem's tensors (q's dtype) upcast to
    float32, exactly, inside torch.autocast(device, that dtype). SDPA is on autocast's lower-precision list: its answer
    is the half call's, bit for bit, in the half dtype (measured, SDPA on CPU, float16 and bfloat16, with and without a
    float mask). So the half problem's judge judges it, with one allowance: an output of float32 (an op autocast does
    not know runs in float32 as called, at least as precisely) is rounded to the half dtype first. A kernel keeping its
    running max, sum or accumulator in the autocast dtype, or a pure-PyTorch one whose float32 matmuls autocast puts
    back into it block by block, errs past the half rule over many key blocks (red team rt50).
    Not given in the other half dtype: autocast casts half inputs too (SDPA answers bfloat16 for float16 inputs under
    bfloat16 autocast, measured), but an op autocast does not know answers in its inputs' dtype, float16 there, which
    this allowance would round to bfloat16 as it rounds float32: such a row judges nothing the float32 one does not
    (red team rt56's kernel casting float32 inputs alone answers as an op autocast does not know).
    q, k and v carry bits below the half type (below_half), which autocast's cast drops by rounding to nearest."""
    @functools.wraps(impl)
    def under_autocast(*args, **kwargs):
        q = next(a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor))
        half = q.dtype
        if half not in AUTOCAST_DTYPES:
            raise ValueError(f"the autocast caller takes a float16 or bfloat16 problem; q is {half}")
        device = q.device.type

        def up(a):
            return a.float() if isinstance(a, torch.Tensor) and a.dtype == half else a
        qkv = [below_half(up(a), half) for a in args[:3]]  # (the mask as it was: autocast may not cast it)
        with torch.autocast(device, dtype=half):
            out = impl(*qkv, *map(up, args[3:]), **{name: up(a) for name, a in kwargs.items()})
        if isinstance(out, torch.Tensor) and out.dtype == torch.float32:
            # an op autocast does not know, run on the float32 inputs as given: its answer is for the moved inputs,
            # not the half problem's, so it answers again for the exact ones (rounded here, to nearest)
            with torch.autocast(device, dtype=half):
                out = impl(*map(up, args), **{name: up(a) for name, a in kwargs.items()})
            return out.to(half) if isinstance(out, torch.Tensor) and out.dtype == torch.float32 else out
        return out
    return under_autocast


# The float32 q, k, v of an autocast row carry bits below the half type: each finite nonzero element moved by
# 0.05 to 0.45 of its half-type ulp, either way, so autocast's round-to-nearest cast gives the half problem's
# values back exactly (the judge stays the half problem's) while a cast that truncates (drops the low bits, red
# team rt59's hand-written bfloat16 conversion) or rounds another way gives other values, about half the time.
# An impl answering in float32 (an op autocast does not know) ran on the moved values as given, which is right for
# it: it is called again on the exact ones. (Measured: float64_reference answered the moved values, and every row
# of an 8701-query problem over 23 keys shares one v moved, a bias of +0.31 ulp judged against the half problem's.)
JITTER = (0.05, 0.45)


def below_half(x, half: torch.dtype):
    """``x`` (float32 holding ``half`` values) with bits below ``half`` added, rounding back to the same values."""
    if not isinstance(x, torch.Tensor) or x.dtype != torch.float32:
        return x
    gen = torch.Generator().manual_seed(x.numel())  # (reproducible: a function of the shape alone)
    u = torch.rand(x.shape, generator=gen, dtype=torch.float64) * 2 - 1  # (...)
    step = (JITTER[0] + (JITTER[1] - JITTER[0]) * u.abs()) * torch.sign(u)  # in ulps, 0.05..0.45 either way
    exact = x.detach().double()
    spacing = torch.minimum(ulp(exact, half), ulp(exact * (1 - 2.0 ** -20), half))  # (a power of two: the one below)
    moved = (exact + step * spacing).float().to(x.device)
    keep = ~torch.isfinite(x) | (x == 0)
    return x + torch.where(keep, torch.zeros_like(x), moved - x.detach())


@contextlib.contextmanager
def machine_of(cpus: int):
    """The process sees a machine of ``cpus`` CPUs: os.cpu_count, os.sched_getaffinity and multiprocessing.cpu_count
    answer so while it lasts (a kernel sizing its splits or workspaces by the machine, not by torch's thread count,
    meets a 16- or 32-CPU server only here; this machine has 2). A name bound at the impl's import (``from os import
    cpu_count``) is not reached."""
    saved = os.cpu_count, getattr(os, "sched_getaffinity", None), multiprocessing.cpu_count
    os.cpu_count = multiprocessing.cpu_count = lambda: cpus
    if saved[1] is not None:
        os.sched_getaffinity = lambda pid=0: set(range(cpus))
    try:
        yield
    finally:
        os.cpu_count, multiprocessing.cpu_count = saved[0], saved[2]
        if saved[1] is not None:
            os.sched_getaffinity = saved[1]
