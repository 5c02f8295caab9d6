"""A conformance run's parts shared between this process and one forked copy of it.

The harness runs with one intra-op thread (kernels.threads.one_thread: its tensors are small), so a run uses one
core; on a machine with two, a second process takes half of the parts. The split is fixed by the parts' weights
alone (never by which process finishes first), so a run's checks, each made in the same process with the same calls
before it, are the same in every run; the results are put back in the parts' order, as a run in one process gives them.

Forking is used only where it is safe and pays: Linux, the CPU device with CUDA not initialised (a forked CUDA context
is unusable), two usable cores, and not inside a pytest-xdist worker (its cores are the other workers'). The child
runs with one intra-op thread: OpenMP's pool does not survive a fork, and a child entering a parallel region of
several threads waits on the parent's threads for ever (measured here: torch 2.13, GNU OpenMP).
"""
from __future__ import annotations

import os
import pickle
import select
import sys
import traceback
from typing import Callable, Iterable, Sequence

import torch

WORKERS_VARIABLE = "ATTENTION_PROOFS_WORKERS"  # 1: one process; unset: two where forking is safe (docstring)


def default_workers(device: str) -> int:
    """Two where forking is safe and a second core is free, else one; ``ATTENTION_PROOFS_WORKERS`` overrides."""
    given = os.environ.get(WORKERS_VARIABLE)
    if given is not None:
        if given not in ("1", "2"):
            raise ValueError(f"{WORKERS_VARIABLE} must be 1 or 2, got {given!r}")
        return int(given) if can_fork(device) else 1
    if not can_fork(device) or os.environ.get("PYTEST_XDIST_WORKER"):
        return 1
    return 2 if len(os.sched_getaffinity(0)) >= 2 else 1


def cpu_seconds() -> float:
    """CPU seconds of this process and of its children that have ended (a run's forked worker among them)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def can_fork(device: str) -> bool:
    return (sys.platform.startswith("linux") and hasattr(os, "fork") and str(device).startswith("cpu")
            and not torch.cuda.is_initialized())


def split(weights: Sequence[float], bins: int = 2, here: Iterable[int] = ()) -> list[list[int]]:
    """The parts' indices in ``bins`` groups of near-equal weight: those ``here`` in the first, then the heaviest
    first, each to the lightest group (ties to the first), each group in the parts' order."""
    groups: list[list[int]] = [[] for _ in range(bins)]
    load = [0.0] * bins
    here = set(here)
    for i in here:
        groups[0].append(i)
        load[0] += weights[i]
    for i in sorted(set(range(len(weights))) - here, key=lambda i: (-weights[i], i)):
        lightest = min(range(bins), key=lambda b: (load[b], b))
        groups[lightest].append(i)
        load[lightest] += weights[i]
    return [sorted(g) for g in groups]


def run_parts(parts: Sequence, run: Callable[[object, list], Iterable], weights: Sequence[float], workers: int,
              seen: Callable[[object], None] = lambda result: None,
              here: Iterable[int] = ()) -> tuple[list[list], list[str]]:
    """(each part's results, in the parts' order; the notes) of ``run(part, notes)`` for every part, in ``workers``
    processes (1 or 2), the parts ``here`` (indices) in this one. ``seen(result)`` is called in this process for every
    result as it arrives (progress).

    A child that ends without finishing its parts (a crash in the impl, killed) leaves them to this process, which
    runs them after its own and says so in the notes: a crash then shows as it would in one process."""
    if workers not in (1, 2):
        raise ValueError(f"workers must be 1 or 2, got {workers!r}")
    results: list[list | None] = [None] * len(parts)
    notes: list[list[str]] = [[] for _ in parts]
    mine, theirs = (split(weights, here=here) if workers == 2 and len(parts) > 1
                   else [list(range(len(parts))), []])
    child = _fork(parts, run, theirs) if theirs else None
    for i in mine:
        results[i] = []
        for result in run(parts[i], notes[i]):
            results[i].append(result)
            seen(result)
            if child is not None:
                child.drain(results, notes, seen)
    extra: list[str] = []
    if child is not None:
        child.finish(results, notes, seen)
        left = [i for i in theirs if results[i] is None]
        if left:
            extra.append(f"the second worker process ended early ({child.ending}); its parts "
                         f"({', '.join(str(parts[i]) for i in left)}) were run in this process")
        for i in left:
            results[i], notes[i] = [], []
            for result in run(parts[i], notes[i]):
                results[i].append(result)
                seen(result)
    return [r for r in results], [n for part_notes in notes for n in part_notes] + extra


class _Child:
    """The forked process's end of the pipe: its results arrive as pickled (kind, part, payload) messages."""

    def __init__(self, pid: int, fd: int):
        self.pid, self.fd, self.ending = pid, fd, ""
        self.reader = os.fdopen(fd, "rb")
        self.partial: dict[int, list] = {}

    def _take(self, message, results, notes, seen) -> None:
        kind, i, payload = message
        if kind == "result":
            self.partial.setdefault(i, []).append(payload)
            seen(payload)
        elif kind == "done":  # a part whole: its results count only now
            results[i], notes[i] = self.partial.pop(i, []), payload
        elif kind == "error":
            self.ending = payload

    def drain(self, results, notes, seen) -> None:
        """What the child has sent so far, without waiting."""
        while select.select([self.fd], [], [], 0)[0]:
            try:
                self._take(pickle.load(self.reader), results, notes, seen)
            except EOFError:
                return

    def finish(self, results, notes, seen) -> None:
        while True:
            try:
                self._take(pickle.load(self.reader), results, notes, seen)
            except EOFError:
                break
        self.reader.close()
        _, status = os.waitpid(self.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if code != 0 and not self.ending:
            self.ending = f"exit code {code}" if code > 0 else f"signal {-code}"


def _fork(parts, run, indices: list[int]) -> _Child:
    r, w = os.pipe()
    sys.stdout.flush(), sys.stderr.flush()  # (else what is buffered is written twice, once by each process)
    pid = os.fork()
    if pid:
        os.close(w)
        return _Child(pid, r)
    os.close(r)  # the child: run its parts, send each result, leave without the parent's exit handlers
    code, i = 0, indices[0]
    try:
        torch.set_num_threads(1)
        with os.fdopen(w, "wb") as out:
            try:
                for i in indices:
                    part_notes: list[str] = []
                    for result in run(parts[i], part_notes):
                        _send(out, ("result", i, result))
                    _send(out, ("done", i, part_notes))
            except BaseException as exc:  # noqa: BLE001 - told to the parent, which runs the part again
                _send(out, ("error", -1, f"{type(exc).__name__} in part {parts[i]}: "
                                         f"{traceback.format_exc(limit=3).strip().splitlines()[-1]}"))
                code = 1
    finally:
        sys.stdout.flush(), sys.stderr.flush()
        os._exit(code)


def _send(out, message) -> None:
    pickle.dump(message, out, protocol=pickle.HIGHEST_PROTOCOL)
    out.flush()
