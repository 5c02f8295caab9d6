"""Per-claim derive and check times, in CPU seconds: ``python -m proofs.timing``.

Derive: the theorem builds its certificate. Check: the checker replays it from scratch (its memos,
SymPy's cache and the engine's worker process cleared first, as in a fresh ``attention-proofs check``
process; a certificate cited by several claims is replayed once). The budget: the whole catalogue, derive and check, under 20 s on this
machine; no claim over 3 s. The times are CPU seconds of this process and of the engine's worker processes
(``identity.cpu_seconds``), which a loaded machine does not inflate as it does wall-clock time; the
wall-clock total and the load average are printed beside them.
"""
from __future__ import annotations

import os
import time

import sympy as sp

from proofs import CLAIMS, checker, identity, srepr

BUDGET_TOTAL_S, BUDGET_CLAIM_S = 20.0, 3.0


def fresh() -> None:
    """Forget everything the checker (and SymPy, and the engine's worker process) learnt while deriving."""
    checker._IDENTITIES.clear()
    checker._VERDICTS.clear()
    checker.clear_memos()  # every _memo of the checker (_canonical, _pattern, _fact, _signed, ...) and their keys
    srepr.clear_memos()  # read's cache, the subterms it built, _base_facts, _signature's and write's memos
    identity.clear_memos()  # _conditions_of's per expression, _index_dummy, _trusted, ..., the expressions' keys
    sp.core.cache.clear_cache()
    identity._WORKER.stop()  # the next identity forks a new one, from this process with SymPy's cache cleared


def measure() -> list[tuple[str, str, float, float, int, int]]:
    """(claim, verdict, derive s, check s, steps, computations) per claim."""
    derived = []
    for c in CLAIMS:
        t = identity.cpu_seconds()
        d = c.derive()
        derived.append((c.id, d, identity.cpu_seconds() - t))
    fresh()
    rows = []
    for cid, d, derive_s in derived:
        t = identity.cpu_seconds()
        verdict = checker.check(d.certificate_json)
        check_s = identity.cpu_seconds() - t
        rows.append((cid, "proved" if verdict.proved else "failed", derive_s, check_s, len(verdict.outcomes),
                     len(verdict.trust_base.get("computation", []))))
    return rows


def main() -> int:
    t0, wall0 = identity.cpu_seconds(), time.perf_counter()
    rows = measure()
    total, wall = identity.cpu_seconds() - t0, time.perf_counter() - wall0
    width = max(len(r[0]) for r in rows)
    print(f"{'claim':<{width}}  verdict  steps  computations  derive s  check s   (CPU seconds)")
    for cid, verdict, dt, ct, n, comps in rows:
        print(f"{cid:<{width}}  {verdict:<7}  {n:>5}  {comps:>12}  {dt:8.2f}  {ct:7.2f}")
    print(f"{'total':<{width}}  {'':7}  {sum(r[4] for r in rows):>5}  {sum(r[5] for r in rows):>12}  "
          f"{sum(r[2] for r in rows):8.2f}  {sum(r[3] for r in rows):7.2f}")
    slow = [r[0] for r in rows if r[2] + r[3] > BUDGET_CLAIM_S]
    print(f"over {BUDGET_CLAIM_S:.0f} s (derive + check): {len(slow)} {slow if slow else ''}; "
          f"whole catalogue {total:.2f} s of CPU, within {BUDGET_TOTAL_S:.0f} s: {'yes' if total < BUDGET_TOTAL_S else 'NO'} "
          f"({wall:.2f} s wall-clock at load {os.getloadavg()[0]:.1f})")
    return 0 if not slow and total < BUDGET_TOTAL_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
