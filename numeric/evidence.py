"""The evidence object, :class:`Confirmation`, and how many tests become one verdict.

Statistical claims carry an estimate,
a confidence interval, a p-value for "the derived value holds" and a verdict at ``alpha``;
sweeps hold one detail per parameter point and correct with Holm's step-down method, so the
chance that a true claim is rejected anywhere in the sweep is at most ``alpha``.
Floating-point claims (an identity evaluated in float64) carry no p-value: their verdict is the
worst error against a stated rounding bound (``tolerance``).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from numeric import arguments
from numeric.statistics import holm, variance_power

POWER_ERROR = 0.02  # the relative error of a variance claim whose rejection chance every variance test reports
# What the report calls "confirmed": a passing statistical confirmation whose tests would reject a claim
# off by STATED_EFFECT with chance >= CONFIRMING_POWER; a weaker one is only "consistent".
STATED_EFFECT = 0.05
CONFIRMING_POWER = 0.8


@dataclass
class Confirmation:
    claim_id: str
    description: str
    estimate: float
    ci: tuple[float, float]
    p_value: float | None  # None: a floating-point check, judged against ``tolerance``
    confirmed: bool
    n_samples: int
    seconds: float
    alpha: float
    claimed: float | None = None
    power: float | None = None  # chance to reject a variance claim off by ``power_error`` (worst over details)
    power_error: float | None = None  # the relative error ``power`` is computed against (POWER_ERROR)
    tolerance: float | None = None
    p_adjusted: float | None = None  # a sweep detail's p-value after Holm's correction
    details: list["Confirmation"] = field(default_factory=list)
    point: dict = field(default_factory=dict)  # a sweep detail's parameters, e.g. {"d_k": 64, "moment": "variance"}
    std_error: float | None = None  # a variance test's standard error (log scale), for its power at any effect
    power_alpha: float | None = None  # the level its power is computed at (Holm's strictest threshold)

    def __str__(self) -> str:
        verdict = "confirmed" if self.confirmed else "REJECTED"
        p = "" if self.p_value is None else f", p = {self.p_value:.3g}"
        return (f"{self.claim_id}: {verdict} (estimate {self.estimate:.6g}, CI [{self.ci[0]:.6g}, {self.ci[1]:.6g}]"
                f"{p}, n = {self.n_samples}, {self.seconds:.2f} s) — {self.description}")


# --------------------------------------------------------------------------- assembling verdicts


def from_test(claim_id, description, test, alpha, *, power_alpha=None, point=None) -> Confirmation:
    """One test's verdict. With ``power_alpha`` (the level the test is finally judged at, e.g. Holm's
    strictest threshold) it also reports its power against a claim off by POWER_ERROR."""
    power = None if power_alpha is None else variance_power(test.std_error, POWER_ERROR, power_alpha)
    return Confirmation(claim_id=claim_id, description=description, estimate=test.estimate, ci=test.ci,
                        p_value=test.p_value, confirmed=not test.rejects(alpha), n_samples=test.n, seconds=0.0,
                        alpha=alpha, claimed=test.claimed, power=power,
                        power_error=None if power is None else POWER_ERROR, point=dict(point or {}),
                        std_error=None if power_alpha is None else float(test.std_error), power_alpha=power_alpha)


def power_against(c: Confirmation, effect: float = STATED_EFFECT) -> float | None:
    """The worst chance, over ``c``'s variance tests, to reject a claim off by ``effect`` (relative);
    None when ``c`` has no test with a power (a floating-point check, or tests without one)."""
    arguments.alpha(effect, "effect")  # a relative error strictly between 0 and 1
    tests = [d for d in (c.details or [c]) if d.std_error is not None and d.power_alpha is not None]
    if not tests:
        return None
    return min(variance_power(d.std_error, effect, d.power_alpha) for d in tests)


def exact(claim_id, description, error: float, tolerance: float, n: int, alpha: float) -> Confirmation:
    arguments.alpha(alpha)
    ok = bool(np.isfinite(error) and error <= tolerance)
    return Confirmation(claim_id=claim_id, description=description, estimate=float(error),
                        ci=(float(error), float(error)), p_value=None, confirmed=ok, n_samples=n, seconds=0.0,
                        alpha=alpha, claimed=0.0, tolerance=float(tolerance))


def worst_case(claim_id: str, description: str, checks, alpha: float, started: float) -> Confirmation:
    """One Confirmation from per-case (error, bound) pairs of a floating-point check: judged on the
    case with the worst error/bound ratio; NaN anywhere counts as failure."""
    ratios = [(e / b if np.isfinite(e) else np.inf, e, b) for e, b in checks]
    _, error, bound = max(ratios, key=lambda r: r[0])
    out = exact(claim_id, description, error, bound, len(checks), alpha)
    out.seconds = time.perf_counter() - started
    return out


def sweep(claim_id, description, details: list[Confirmation], alpha, started, n_samples=None) -> Confirmation:
    """One verdict for many details: Holm over the statistical ones, all exact ones must pass.

    Details keep their raw p-values; their ``confirmed`` is re-decided by the Holm-adjusted p."""
    stat = [d for d in details if d.p_value is not None]
    exact = [d for d in details if d.p_value is None]
    ok = all(d.confirmed for d in exact)
    if stat:
        adjusted, rejected = holm([d.p_value for d in stat], alpha)
        for d, adj, rej in zip(stat, adjusted, rejected):
            d.confirmed, d.p_adjusted = not bool(rej), float(adj)
            d.description += f" (Holm-adjusted p = {adj:.3g} over {len(stat)} tests)"
        worst = stat[int(np.argmin(adjusted))]
        p_value, ok = float(adjusted.min()), ok and not rejected.any()
    else:
        worst, p_value = max(exact, key=lambda d: d.estimate / d.tolerance if d.tolerance else d.estimate), None
    powers = [d.power for d in details if d.power is not None]
    out = Confirmation(claim_id=claim_id, description=description, estimate=worst.estimate, ci=worst.ci,
                       p_value=p_value, confirmed=bool(ok),
                       n_samples=n_samples if n_samples is not None else max(d.n_samples for d in details),
                       seconds=time.perf_counter() - started, alpha=alpha, claimed=worst.claimed,
                       power=min(powers) if powers else None, power_error=POWER_ERROR if powers else None,
                       tolerance=worst.tolerance, details=details)
    return out


