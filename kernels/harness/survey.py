"""False-alarm survey: run the default conformance check over many seeds and report, per
invariant, how close it came to its bound (discrepancy / bound; 1 = at the bound; for the
statistical invariants, |z| / z_crit) and the time per run.

    python -m kernels.harness.survey 20 peers            # every correct peer (kernels.harness.peers)
    python -m kernels.harness.survey 20 sdpa-math flex-eager
    python -m kernels.harness.survey 20 torch.nn.functional:scaled_dot_product_attention
    python -m kernels.harness.survey 5 sdpa-math --only rounding-bias --only dropout-variance
    python -m kernels.harness.survey 20 peers --cases contract --generate 1   # the contract's cases and
                                                  # 1 s of drawn problems a seed: a survey in minutes
    python -m kernels.harness.survey 10 sdpa-math --first 10   # seeds 10-19 (a survey split over sittings)

Ends with one line per design: alarms, seeds with an alarm, the false-alarm rate (seeds with an
alarm / seeds) and CPU seconds per seed.
"""
from __future__ import annotations

import math
import sys
import time
from collections import defaultdict

from kernels.harness.cli import load_target
from kernels.harness.subject import ratio
from kernels.harness.verify import verify_attention
from kernels.harness.workers import cpu_seconds


def survey(impl, seeds: int, progress=None, first: int = 0, **options) -> tuple[list, dict, float]:
    """(failed checks, worst ratio per (invariant, dtype), mean CPU seconds per run) over seeds first..first+seeds-1.

    ``progress(seed, failures, worst)`` is called after each seed (a long survey can be read as it goes).
    CPU seconds, not wall (the machine the survey runs on is shared), of both processes of a run (workers.py)."""
    failures, worst = [], defaultdict(float)
    start = cpu_seconds()
    for seed in range(first, first + seeds):
        report = verify_attention(impl, seed=seed, **options)
        failures += [(seed, f) for f in report.failures]
        for c in report.judged:
            worst[(c.invariant, c.dtype)] = max(worst[(c.invariant, c.dtype)], ratio(c))
        if progress is not None:
            progress(seed, failures, worst)
    return failures, dict(worst), (cpu_seconds() - start) / seeds


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


def _options(argv) -> tuple[list, dict]:
    """(the names, verify_attention options) from the arguments after the seed count."""
    valued = {"--only", "--cases", "--generate", "--first"}
    names = [a for i, a in enumerate(argv) if a not in valued and (i == 0 or argv[i - 1] not in valued)]
    given = defaultdict(list)
    for i, a in enumerate(argv[:-1]):
        if a in valued:
            given[a].append(argv[i + 1])
    options: dict = {}
    if given["--only"]:
        options["invariants"] = given["--only"]
    if given["--cases"]:
        from kernels.harness.cases import CONTRACT_CASES
        from kernels.harness.cli import cases_named

        chosen = [n for item in given["--cases"] for n in item.split(",")]
        options["cases"] = [c for n in chosen for c in (CONTRACT_CASES if n == "contract" else cases_named([n]))]
    if given["--generate"]:
        options["generate_seconds"] = float(given["--generate"][-1])
    if given["--first"]:
        if not given["--first"][-1].isdigit():
            raise SystemExit(f"--first must be a whole number >= 0 (the first seed); got {given['--first'][-1]!r}")
        options["first"] = int(given["--first"][-1])
    return names, options


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or not argv[0].isdigit():
        print(__doc__, file=sys.stderr)
        return 2
    seeds = int(argv[0])
    names, chosen = _options(argv[1:])
    first = chosen.get("first", 0)
    names = names or ["torch.nn.functional:scaled_dot_product_attention"]
    any_failed, rows = False, []
    for name, impl, options in _targets(names):
        failures, worst, per_run = survey(impl, seeds, progress=_progress, **options, **chosen)
        any_failed |= bool(failures)
        alarmed = len({seed for seed, _ in failures})
        rows.append((name, len(failures), alarmed, per_run))
        print(f"{name}: {len(failures)} alarms over {seeds} seeds ({first}-{first + seeds - 1}), {per_run:.2f} CPU-s "
              f"per run", flush=True)
        told = defaultdict(int)
        for seed, f in failures:
            key = (f.invariant, f.case_name, f.dtype)
            told[key] += 1
            if told[key] == 1:
                print(f"  seed {seed}: {f.describe()}")
        for invariant, (r, dtype) in sorted(closest_per_invariant(worst).items(), key=lambda kv: -kv[1][0]):
            shown = "inf" if math.isinf(r) else f"{r:.3f}"
            print(f"  closest: {invariant:32s} {shown:>7s} ({dtype})")
    print(f"\n{'design':28s} {'alarms':>6s} {'seeds alarmed':>13s} {'rate':>6s} {'CPU-s/seed':>10s}")
    for name, alarms, alarmed, per_run in rows:
        print(f"{name:28s} {alarms:6d} {f'{alarmed}/{seeds}':>13s} {alarmed / seeds:6.2f} {per_run:10.2f}")
    return 1 if any_failed else 0


if __name__ == "__main__":
    sys.exit(main())
