"""False-alarm survey: run the default conformance check over many seeds and report, per
invariant, how close it came to its bound (discrepancy / bound; 1 = at the bound; for the
statistical invariants, |z| / z_crit) and the time per run.

    python -m kernels.harness.survey 20 peers            # every correct peer (kernels.harness.peers)
    python -m kernels.harness.survey 20 sdpa-math flex-eager
    python -m kernels.harness.survey 20 torch.nn.functional:scaled_dot_product_attention
    python -m kernels.harness.survey 5 sdpa-math --only rounding-bias --only dropout-variance
"""
from __future__ import annotations

import math
import sys
import time
from collections import defaultdict

from kernels.harness.cli import load_target
from kernels.harness.subject import ratio
from kernels.harness.verify import verify_attention


def survey(impl, seeds: int, progress=None, **options) -> tuple[list, dict, float]:
    """(failed checks, worst ratio per (invariant, dtype), mean seconds per run) over seeds 0..seeds-1.

    ``progress(seed, failures, worst)`` is called after each seed (a long survey can be read as it goes)."""
    failures, worst = [], defaultdict(float)
    start = time.perf_counter()
    for seed in range(seeds):
        report = verify_attention(impl, seed=seed, **options)
        failures += [(seed, f) for f in report.failures]
        for c in report.judged:
            worst[(c.invariant, c.dtype)] = max(worst[(c.invariant, c.dtype)], ratio(c))
        if progress is not None:
            progress(seed, failures, worst)
    return failures, dict(worst), (time.perf_counter() - start) / seeds


def _progress(seed, failures, worst):
    top = sorted(closest_per_invariant(worst).items(), key=lambda kv: -kv[1][0])[:3]
    print(f"  after seed {seed}: {len(failures)} alarms; closest " +
          ", ".join(f"{inv} {r:.3f} ({dt})" for inv, (r, dt) in top), flush=True)


def closest_per_invariant(worst: dict) -> dict[str, tuple[float, str]]:
    """The closest ratio of each invariant over dtypes: {invariant: (ratio, dtype)}."""
    out: dict[str, tuple[float, str]] = {}
    for (invariant, dtype), r in worst.items():
        if invariant not in out or r > out[invariant][0]:
            out[invariant] = (r, dtype)
    return out


def _targets(names):
    from kernels.harness.peers import PEERS

    if names == ["peers"]:
        names = list(PEERS)
    for name in names:
        yield (name, *PEERS[name]) if name in PEERS else (name, load_target(name), {})


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or not argv[0].isdigit():
        print(__doc__, file=sys.stderr)
        return 2
    only = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--only"]
    names = [a for i, a in enumerate(argv[1:], 1) if a != "--only" and argv[i - 1] != "--only"]
    seeds, names = int(argv[0]), names or ["torch.nn.functional:scaled_dot_product_attention"]
    any_failed = False
    for name, impl, options in _targets(names):
        failures, worst, per_run = survey(impl, seeds, progress=_progress, **options,
                                          **({"invariants": only} if only else {}))
        any_failed |= bool(failures)
        print(f"{name}: {len(failures)} alarms over {seeds} seeds, {per_run:.2f} s per default run", flush=True)
        told = defaultdict(int)
        for seed, f in failures:
            key = (f.invariant, f.case_name, f.dtype)
            told[key] += 1
            if told[key] == 1:
                print(f"  seed {seed}: {f.describe()}")
        for invariant, (r, dtype) in sorted(closest_per_invariant(worst).items(), key=lambda kv: -kv[1][0]):
            shown = "inf" if math.isinf(r) else f"{r:.3f}"
            print(f"  closest: {invariant:32s} {shown:>7s} ({dtype})")
    return 1 if any_failed else 0


if __name__ == "__main__":
    sys.exit(main())
