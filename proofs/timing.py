"""Per-theorem derivation times: ``python -m proofs.timing``.

The budget: the whole catalogue under 15 s on this machine, no claim over 3 s.
"""
from __future__ import annotations

import time

from proofs import CLAIMS
from proofs.engine import CITED

BUDGET_TOTAL_S, BUDGET_CLAIM_S = 15.0, 3.0


def main() -> int:
    total, rows = time.perf_counter(), []
    for c in CLAIMS:
        t = time.perf_counter()
        d = c.derive()
        rows.append((c.id, d.verdict, time.perf_counter() - t, len(d.checked_steps), len(d.trusted),
                     len(d.trust_base.get(CITED, []))))
    total = time.perf_counter() - total
    width = max(len(r[0]) for r in rows)
    print(f"{'claim':<{width}}  verdict  checks  premises  cited  seconds")
    for cid, verdict, sec, n, trusted, cited in rows:
        print(f"{cid:<{width}}  {verdict:<7}  {n:>6}  {trusted:>8}  {cited:>5}  {sec:7.2f}")
    print(f"{'total':<{width}}  {'':7}  {sum(r[3] for r in rows):>6}  {'':8}  {'':5}  {total:7.2f}")
    slow = [r for r in rows if r[2] > BUDGET_CLAIM_S]
    print(f"slowest: {max(rows, key=lambda r: r[2])[0]}; over {BUDGET_CLAIM_S:.0f} s: {len(slow)}; "
          f"total within {BUDGET_TOTAL_S:.0f} s: {'yes' if total < BUDGET_TOTAL_S else 'NO'}")
    return 0 if not slow and total < BUDGET_TOTAL_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
