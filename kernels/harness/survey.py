"""False-alarm survey: run the default conformance check over many seeds and report how close each
invariant came to its bound (discrepancy / bound; 1 = at the bound) and the time per run.

    python -m kernels.harness.survey 20 torch.nn.functional:scaled_dot_product_attention \
        kernels.harness.reference:float64_reference
"""
from __future__ import annotations

import math
import sys
import time
from collections import defaultdict

from kernels.harness.cli import load_target
from kernels.harness.verify import verify_attention


def _ratio(check) -> float:
    if check.bound > 0:
        return check.discrepancy / check.bound
    return 0.0 if check.discrepancy == 0 else math.inf


def survey(impl, seeds: int) -> tuple[list, dict, float]:
    """(failed checks, worst ratio per (invariant, dtype), mean seconds per run) over seeds 0..seeds-1."""
    failures, worst = [], defaultdict(float)
    start = time.perf_counter()
    for seed in range(seeds):
        report = verify_attention(impl, seed=seed)
        failures += [(seed, f) for f in report.failures]
        for c in report.checks:
            worst[(c.invariant, c.dtype)] = max(worst[(c.invariant, c.dtype)], _ratio(c))
    return failures, dict(worst), (time.perf_counter() - start) / seeds


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or not argv[0].isdigit():
        print(__doc__, file=sys.stderr)
        return 2
    seeds, targets = int(argv[0]), argv[1:] or ["torch.nn.functional:scaled_dot_product_attention"]
    any_failed = False
    for target in targets:
        failures, worst, per_run = survey(load_target(target), seeds)
        any_failed |= bool(failures)
        checks_note = f"{len(failures)} false alarms over {seeds} seeds, {per_run:.2f} s per default run"
        print(f"{target}: {checks_note}")
        for seed, f in failures:
            print(f"  seed {seed}: {f.describe()}")
        for (invariant, dtype), r in sorted(worst.items(), key=lambda kv: -kv[1])[:5]:
            print(f"  closest to its bound: {invariant} ({dtype}) at {r:.2f} of it")
    return 1 if any_failed else 0


if __name__ == "__main__":
    sys.exit(main())
