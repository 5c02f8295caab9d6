"""How a default conformance run's time splits: ``python -m kernels.harness.timing [NAME ...]``.

NAME is a design of kernels.harness.peers (default: sdpa-math, the plain PyTorch implementation the
issue's 60 s budget is stated for) or MOD:FN. One default ``verify_attention`` run each, with its
options as the survey uses them; printed: wall-clock and CPU seconds (the machine is shared: CPU
seconds move less with load, and the load average is printed beside them; a run shares its parts with a forked
process where it can, workers.py: the CPU seconds are both processes'), then CPU seconds by part:
the fixed cases per invariant, per case and per (invariant, case), the drawn problems per relation, with the regimes (each
dtype's first len(generate.REGIMES) problems) and the covering array's rows (paths.py) apart from the rest. Each check's CPU seconds are
``Check.seconds``; the first check of a case pays for the golden values its later checks share.
"""
from __future__ import annotations

import os
import sys
import time
from collections import Counter

from kernels.harness import generate as gen
from kernels.harness import workers
from kernels.harness.cli import load_target
from kernels.harness.verify import verify_attention

TOP = 12


def _target(name: str):
    from kernels.harness.peers import PEERS

    return PEERS[name] if name in PEERS else (load_target(name), {})


def split(report) -> dict[str, Counter]:
    """CPU seconds of the report's checks: 'invariant' and 'case' (fixed cases), 'generated' (per relation,
    regimes apart)."""
    parts = {"invariant": Counter(), "case": Counter(), "pair": Counter(), "generated": Counter()}
    drawn_so_far = Counter()
    for c in report.checks:
        if c.invariant in gen.RELATIONS and "(covering row:" in c.case:
            parts["generated"]["covering rows (paths.py)"] += c.seconds
        elif c.invariant in gen.RELATIONS and c.case_name.startswith("generated-"):
            drawn_so_far[c.dtype] += 1
            regime = drawn_so_far[c.dtype] <= len(gen.REGIMES)
            parts["generated"]["regimes (first draws)" if regime else c.invariant] += c.seconds
        else:
            parts["invariant"][c.invariant] += c.seconds
            parts["case"][c.case_name] += c.seconds
            parts["pair"][f"{c.invariant} on {c.case_name}"] += c.seconds
    return parts


def main(argv=None) -> int:
    names = (sys.argv[1:] if argv is None else argv) or ["sdpa-math"]
    for name in names:
        impl, options = _target(name)
        wall, cpu = time.perf_counter(), workers.cpu_seconds()
        report = verify_attention(impl, **options)
        wall, cpu = time.perf_counter() - wall, workers.cpu_seconds() - cpu
        parts = split(report)
        fixed, drawn = sum(parts["invariant"].values()), sum(parts["generated"].values())
        print(f"{name}: {'passed' if report.passed else 'FAILED'}, {len(report.judged)} checks; "
              f"{wall:.1f} s wall in {workers.default_workers('cpu')} process(es), {cpu:.1f} CPU-s in all "
              f"(load {os.getloadavg()[0]:.1f}); the checks' CPU-s, both processes: fixed cases {fixed:.1f}, "
              f"drawn problems {drawn:.1f}")
        for note in report.notes:
            print(f"  note: {note}")
        for part, title in (("invariant", "fixed cases, by invariant"), ("case", "fixed cases, by case"),
                            ("pair", "fixed cases, by invariant and case"), ("generated", "drawn problems")):
            print(f"  {title}:")
            for key, seconds in parts[part].most_common(TOP):
                print(f"    {seconds:7.2f}  {key}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
