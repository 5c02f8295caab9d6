"""Run the conformance harness on every installed peer, each in its own process.

One process per peer because Keras reads its backend once per process, and so that one library's
threads, warnings or crash cannot touch another's figures.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import resource
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict

from kernels.ecosystem.adapters import BOTTOM_RIGHT, PEERS, Peer, peer
from kernels.ecosystem.bottom_right import bottom_right_checks

# The XLA CPU client (JAX, Keras on JAX) would start a thread pool per core: the harness's
# tensors are small and the machine is shared, so one thread, as the harness sets for torch.
_ONE_THREAD = {"XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
               "OMP_NUM_THREADS": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
# A peer may use PEER_CPU_S seconds of CPU (a limit on a shared machine would otherwise be a
# limit on the neighbours' load) and PEER_WALL_S of wall time: guards against a hang, twice the most
# a peer measured. JAX compiles every new shape (XLA), so its cost grows with the harness's cases:
# 351 s of CPU on 2026-11-30, 902 s on 2026-12-02 (2342 s of wall time at a load average of 10 on
# 2 cores), when the 600 s guard of the day before stopped JAX and Keras-on-JAX in CI.
PEER_CPU_S, PEER_WALL_S = 1800, 3600


def harness_cases(p: Peer):
    """The harness's default cases; for a bottom-right library, without the causal cases whose
    Nq != Nk (the harness judges those by the top-left rule; bottom_right.py judges them instead)."""
    from kernels.harness.cases import DEFAULT_CASES

    if p.causal != BOTTOM_RIGHT:
        return list(DEFAULT_CASES)
    return [c for c in DEFAULT_CASES if not (c.causal and c.n_q != c.n_k)]


def run_peer(p: Peer, seed: int = 0) -> dict:
    """verify_attention on the peer (and the bottom-right checks where it documents that alignment)."""
    from kernels.harness.verify import verify_attention

    start = time.perf_counter()
    impl = p.build()
    report = verify_attention(impl, dtypes=list(p.dtypes), causal=p.causal is not None, backward=p.backward,
                              value_dim=p.value_dim, seed=seed, cases=harness_cases(p))
    checks = list(report.checks)
    if p.causal == BOTTOM_RIGHT:
        checks += bottom_right_checks(impl, p.dtypes, seed=seed)
    # cpu_seconds: this process's CPU time, imports included: the wall time on an idle machine.
    return dict(describe(p), status="ran", seconds=round(time.perf_counter() - start, 2),
                cpu_seconds=round(time.process_time(), 1), checks=[asdict(c) for c in checks])


def describe(p: Peer) -> dict:
    return dict(name=p.name, library=p.library, version=p.version(), layout=p.layout, causal=p.causal,
                backward=p.backward, value_dim=p.value_dim, dtypes=list(p.dtypes), scale=p.scale, mask=p.mask, source=p.source,
                limits=p.limits)


def _limit_cpu():
    resource.setrlimit(resource.RLIMIT_CPU, (PEER_CPU_S, PEER_CPU_S + 10))


def run_in_process(p: Peer, seed: int) -> dict:
    """run_peer in a fresh interpreter with the peer's environment; a crash is recorded, not raised."""
    if not p.installed():
        return dict(describe(p), status="not installed", seconds=0.0, checks=[],
                    error=f"needs {', '.join(p.needs)}: pip install -e '.[peers]'")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "peer.json")
        env = dict(os.environ, **_ONE_THREAD, **p.env)
        cmd = [sys.executable, "-m", "kernels.ecosystem", "--one", p.name, "--seed", str(seed), "--json-to", out]
        start = time.perf_counter()
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=PEER_WALL_S,
                                  preexec_fn=_limit_cpu)
        except subprocess.TimeoutExpired:
            return dict(describe(p), status="timed out", seconds=PEER_WALL_S, checks=[],
                        error=f"no result within {PEER_WALL_S} s")
        if proc.returncode == -signal.SIGXCPU or proc.returncode == -signal.SIGKILL:
            return dict(describe(p), status="timed out", seconds=round(time.perf_counter() - start, 2), checks=[],
                        error=f"no result within {PEER_CPU_S} s of CPU")
        if proc.returncode != 0 or not os.path.exists(out):
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            return dict(describe(p), status="crashed", seconds=round(time.perf_counter() - start, 2), checks=[],
                        error=f"exit {proc.returncode}: {' | '.join(tail)}"[:500])
        with open(out) as f:
            result = json.load(f)
        result["process_seconds"] = round(time.perf_counter() - start, 2)
        return result


def survey(names=None, seed: int = 0, progress=print, workers: int | None = None) -> dict:
    """Every peer named (default: all), each in its own process, ``workers`` at a time (default: one
    per CPU, each process single-threaded): the survey's JSON document, peers in catalogue order."""
    chosen = [peer(n) for n in names] if names else list(PEERS)
    start = time.perf_counter()

    def one(p):
        r = run_in_process(p, seed)
        progress(f"{p.name}: {r['status']}, {len(r['checks'])} checks in {r.get('process_seconds', r['seconds'])} s "
                 f"({r.get('cpu_seconds', 0)} s CPU)" + (f": {r['error']}" if r.get("error") else ""))
        return r

    longest_first = sorted(chosen, key=lambda p: -p.cpu_s)
    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        done = dict(zip((p.name for p in longest_first), pool.map(one, longest_first)))
    results = [done[p.name] for p in chosen]  # the document keeps the catalogue's order
    import torch

    return dict(date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), seed=seed,
                python=platform.python_version(), machine=f"{platform.machine()}, {os.cpu_count()} CPUs",
                torch=torch.__version__, seconds=round(time.perf_counter() - start, 1),
                cpu_seconds=round(sum(r.get("cpu_seconds", 0) for r in results), 1), peers=results)
