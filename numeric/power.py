"""Power and false-alarm figures of the variance confirmation, printed as tables.

    python -m numeric.power power [--distributions normal uniform rademacher student-t] [--nu 10]
                                  [--n-samples 1000000] [--d-ks 1 2 4 ... 4096]
    python -m numeric.power false-alarms [--trials 10000] [--n-samples 10000] [--alpha 0.001]

``power``: one nested draw per distribution, judged against the derived Var(q·k) = d_k and against
claims POWER_ERROR (2%) too high and too low (Holm over the sweep, α = 0.001). Columns: the sample
variance, the power the test's standard error gives against that error (at Holm's strictest threshold), and
the Holm-adjusted p-values of the two wrong claims.
``false-alarms``: the rejection rate of the true claim over many seeds, with the one-sided
binomial p-value of that many rejections were the rate exactly α (the variance test's error
rests on the null model's κ of q·k, see ``numeric.statistics``).
"""
from __future__ import annotations

import argparse
import time

from numeric import confirm, confirm_dot_product_variance
from numeric.dot_product import DEFAULT_SAMPLES, SWEEP_D_KS
from numeric.evidence import POWER_ERROR
from numeric.statistics import binomial_upper
from proofs.theorems.dot_product import D_K


def power_table(distribution: str, n_samples: int, d_ks, nu: float, alpha: float = 0.001) -> list[dict]:
    started = time.perf_counter()
    high, low = 1 + POWER_ERROR, 1 - POWER_ERROR
    runs = {f: confirm("dot-product-variance", distribution=distribution, n_samples=n_samples, d_ks=d_ks, nu=nu,
                       alpha=alpha, claimed=None if f == 1 else f * D_K) for f in (1, high, low)}
    rows = []
    var_details = {f: [d for d in c.details if d.point["moment"] == "variance"] for f, c in runs.items()}
    for i, d_k in enumerate(sorted(set(d_ks))):
        true = var_details[1][i]
        rows.append({"d_k": d_k, "estimate": true.estimate, "ci": true.ci, "confirmed": true.confirmed,
                     "power": true.power, "reject_high": not var_details[high][i].confirmed,
                     "reject_low": not var_details[low][i].confirmed,
                     "p_high": var_details[high][i].p_adjusted, "p_low": var_details[low][i].p_adjusted})
    label = distribution + (f" (ν = {nu:g})" if distribution == "student-t" else "")
    print(f"\n{label}, n = {n_samples:,}, α = {alpha} with Holm over {len(runs[1].details)} tests, "
          f"{time.perf_counter() - started:.1f} s; true claim {'confirmed' if runs[1].confirmed else 'REJECTED'}")
    pct = f"{POWER_ERROR:.0%}"
    print(f"{'d_k':>5} {'s²':>11} {'CI':>25} {'power vs ' + pct:>12} {f'×{high:g} p_adj':>12} {f'×{low:g} p_adj':>12}")
    for r in rows:
        ci = f"[{r['ci'][0]:.5g}, {r['ci'][1]:.5g}]"
        print(f"{r['d_k']:>5} {r['estimate']:>11.5g} {ci:>25} {r['power']:>12.4f} {r['p_high']:>12.3g} {r['p_low']:>12.3g}")
    missed = [r["d_k"] for r in rows if not (r["reject_high"] and r["reject_low"])]
    print(f"{pct} errors rejected at every d_k" if not missed else f"{pct} error NOT rejected at d_k = {missed}")
    return rows


def false_alarms(distribution: str, d_k: int, trials: int, n_samples: int, alpha: float, nu: float) -> tuple[int, float]:
    count = sum(not confirm_dot_product_variance(d_k, n_samples=n_samples, seed=s, distribution=distribution,
                                                 alpha=alpha, nu=nu, threads=1).confirmed for s in range(trials))
    p = binomial_upper(count, trials, alpha)
    print(f"{distribution:>10} d_k = {d_k:<4} rejections {count:>4}/{trials} = {count / trials:.4f} "
          f"(α = {alpha}; P(Bin ≥ count) = {p:.3g})")
    return count, p


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="what", required=True)
    pw = sub.add_parser("power")
    pw.add_argument("--distributions", nargs="+", default=["normal", "uniform", "rademacher"])
    pw.add_argument("--n-samples", type=int, default=DEFAULT_SAMPLES)
    pw.add_argument("--d-ks", type=int, nargs="+", default=list(SWEEP_D_KS))
    pw.add_argument("--nu", type=float, default=10.0)
    fa = sub.add_parser("false-alarms")
    fa.add_argument("--trials", type=int, default=10_000)
    fa.add_argument("--n-samples", type=int, default=10_000)
    fa.add_argument("--alpha", type=float, default=0.001)
    fa.add_argument("--nu", type=float, default=10.0)
    fa.add_argument("--cases", nargs="+", default=["normal:1", "normal:16", "uniform:1", "uniform:4", "rademacher:1",
                                                   "rademacher:2", "student-t:1", "student-t:4"])
    args = p.parse_args(argv)
    if args.what == "power":
        for dist in args.distributions:
            power_table(dist, args.n_samples, args.d_ks, args.nu)
    else:
        for case in args.cases:
            dist, d_k = case.split(":")
            false_alarms(dist, int(d_k), args.trials, args.n_samples, args.alpha, args.nu)


if __name__ == "__main__":
    main()
