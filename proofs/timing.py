"""Per-theorem derivation times: ``python -m proofs.timing``."""
from __future__ import annotations

import time

from proofs import CLAIMS


def main() -> int:
    total, rows = time.perf_counter(), []
    for c in CLAIMS:
        t = time.perf_counter()
        d = c.derive()
        rows.append((c.id, d.verdict, time.perf_counter() - t, len(d.checked_steps)))
    total = time.perf_counter() - total
    width = max(len(r[0]) for r in rows)
    print(f"{'claim':<{width}}  verdict  checks  seconds")
    for cid, verdict, sec, n in rows:
        print(f"{cid:<{width}}  {verdict:<7}  {n:>6}  {sec:7.2f}")
    print(f"{'total':<{width}}  {'':7}  {sum(r[3] for r in rows):>6}  {total:7.2f}")
    slow = [r for r in rows if r[2] > 3.0]
    print(f"slowest: {max(rows, key=lambda r: r[2])[0]}; over 3 s: {len(slow)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
