"""Speed benchmark: confirming Var(q·k) at d_k = 4096 with 10⁶ samples, against the time NumPy
takes merely to draw the same 2·n·d_k float64 normals with ``default_rng`` on one core.

    python -m numeric.bench [--n-samples N] [--d-k D] [--threads T]

Both run in the same process, one after the other. On a shared machine wall time depends on
what else runs, so the CPU time each side used is reported too: confirm CPU time / threads
against the baseline's CPU time is the ratio the two cores would give if nothing else ran. The baseline draws into a reused 8 MB buffer
(``standard_normal(out=...)``), so it pays for generation only, not for page faults. Peak memory
is measured twice: the peak of NumPy/Python allocations during the confirmation (tracemalloc,
run separately so its bookkeeping does not slow the timed run), and the process's peak resident
set (getrusage), which includes the interpreter, SymPy and the derivation.
"""
from __future__ import annotations

import argparse
import resource
import time
import tracemalloc

import numpy as np

from numeric import confirm_dot_product_variance, sampling

BUFFER = 1 << 20  # float64 normals per baseline call: 8 MB


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def baseline_seconds(n_normals: int, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    buf = np.empty(BUFFER)
    start = time.perf_counter()
    full, rest = divmod(n_normals, BUFFER)
    for _ in range(full):
        rng.standard_normal(out=buf)
    if rest:
        rng.standard_normal(out=buf[:rest])
    return time.perf_counter() - start


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-samples", type=int, default=1_000_000)
    p.add_argument("--d-k", type=int, default=4096)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--memory-samples", type=int, default=50_000,
                   help="samples for the separate tracemalloc run (memory does not grow with n)")
    args = p.parse_args(argv)
    threads = args.threads or sampling.cpu_count()

    confirm_dot_product_variance(args.d_k, n_samples=2, threads=threads)  # derive and lambdify once, untimed
    start, cpu0 = time.perf_counter(), cpu_seconds()
    c = confirm_dot_product_variance(args.d_k, n_samples=args.n_samples, threads=threads)
    confirm_s, confirm_cpu = time.perf_counter() - start, cpu_seconds() - cpu0
    cpu0 = cpu_seconds()
    base_s = baseline_seconds(2 * args.n_samples * args.d_k)
    base_cpu = cpu_seconds() - cpu0

    tracemalloc.start()
    confirm_dot_product_variance(args.d_k, n_samples=args.memory_samples, seed=1, threads=threads)
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB

    out = {"d_k": args.d_k, "n_samples": args.n_samples, "threads": threads, "confirm_s": confirm_s,
           "baseline_s": base_s, "ratio": confirm_s / base_s,
           "confirm_cpu_s": confirm_cpu, "baseline_cpu_s": base_cpu, "cpu_ratio": confirm_cpu / threads / base_cpu, "traced_peak_mb": traced_peak / 2**20,
           "rss_peak_mb": rss_peak / 2**20, "confirmed": c.confirmed, "estimate": c.estimate, "ci": c.ci,
           "p_value": c.p_value}
    print(f"confirm Var(q·k), d_k = {args.d_k}, n = {args.n_samples:,}, {threads} thread(s): {confirm_s:.2f} s "
          f"-> {'confirmed' if c.confirmed else 'REJECTED'} (estimate {c.estimate:.2f}, "
          f"CI [{c.ci[0]:.2f}, {c.ci[1]:.2f}], p = {c.p_value:.3g})")
    print(f"baseline: default_rng().standard_normal, {2 * args.n_samples * args.d_k:,} float64 normals, "
          f"one core: {base_s:.2f} s")
    print(f"ratio confirm / baseline: {out['ratio']:.3f} wall (target <= 0.5); "
          f"CPU time {confirm_cpu:.1f} s / {threads} threads against {base_cpu:.1f} s: {out['cpu_ratio']:.3f}")
    print(f"peak memory: {out['traced_peak_mb']:.1f} MB of NumPy/Python allocations during a confirmation "
          f"(tracemalloc); {out['rss_peak_mb']:.0f} MB peak resident set of the whole process")
    return out


if __name__ == "__main__":
    main()
