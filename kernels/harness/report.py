"""What a conformance run found: one Check per (invariant, case, dtype), and a readable table."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class Check:
    invariant: str
    claim_id: str | None
    case: str  # the case's full description
    case_name: str
    dtype: str
    device: str
    discrepancy: float
    bound: float
    passed: bool
    error: str | None = None  # the exception text when impl (or the check on its output) raised
    detail: str = ""

    @property
    def ratio(self) -> float:
        """How far the check went towards its bound (1 = at the bound; NaN for a NaN discrepancy)."""
        if self.bound > 0:
            return self.discrepancy / self.bound
        return 0.0 if self.discrepancy == 0 else math.inf

    def describe(self) -> str:
        claim = f" [{self.claim_id}]" if self.claim_id else ""
        head = f"{self.invariant}{claim} on {self.case} ({self.dtype}, {self.device})"
        if self.error is not None:
            return f"{head}: raised {self.error}"
        verdict = "<=" if self.passed else ">"
        extra = f"; {self.detail}" if self.detail else ""
        return f"{head}: discrepancy {_num(self.discrepancy)} {verdict} bound {_num(self.bound)}{extra}"


Failure = Check  # a failure is a check that did not pass; same record


def worst(checks: list[Check]) -> Check | None:
    """The first failed check, else the one closest to its bound (None when none has a ratio)."""
    failed = [c for c in checks if not c.passed]
    if failed:
        return failed[0]
    measured = [c for c in checks if not math.isnan(c.ratio)]
    return max(measured, key=lambda c: c.ratio) if measured else None


def _num(x: float) -> str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf"
    return f"{x:.3g}"


@dataclass
class ConformanceReport:
    impl: str
    device: str
    dtypes: tuple[str, ...]
    checks: list[Check] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    @property
    def failed_invariants(self) -> set[str]:
        return {c.invariant for c in self.failures}

    def as_dicts(self) -> list[dict]:
        return [asdict(c) for c in self.checks]

    def table(self) -> str:
        """Invariants × cases: '✓' every dtype passed, '✗' some failed, '·' not applicable."""
        cases = list(dict.fromkeys(c.case_name for c in self.checks))
        invariants = list(dict.fromkeys(c.invariant for c in self.checks))
        claims = {c.invariant: c.claim_id or "" for c in self.checks}
        cell: dict[tuple[str, str], bool] = {}
        for c in self.checks:
            key = (c.invariant, c.case_name)
            cell[key] = cell.get(key, True) and c.passed
        labels = [f"c{i + 1}" for i in range(len(cases))]
        w_inv = max(len(i) for i in invariants)
        w_claim = max([len(v) for v in claims.values()] + [5])
        lines = [f"{'invariant':<{w_inv}}  {'claim':<{w_claim}}  " + " ".join(f"{lab:>3}" for lab in labels)]
        for inv in invariants:
            marks = []
            for name in cases:
                ok = cell.get((inv, name))
                marks.append("·" if ok is None else ("✓" if ok else "✗"))
            lines.append(f"{inv:<{w_inv}}  {claims[inv]:<{w_claim}}  " + " ".join(f"{m:>3}" for m in marks))
        described = {c.case_name: c.case for c in self.checks}
        lines.append("")
        lines += [f"  {lab} = {described[name]}" for lab, name in zip(labels, cases)]
        return "\n".join(lines)

    def __str__(self) -> str:
        verdict = "PASSED" if self.passed else "FAILED"
        head = (f"Conformance of {self.impl} on {self.device} ({', '.join(self.dtypes)}): {verdict} — "
                f"{len(self.checks) - len(self.failures)} of {len(self.checks)} checks passed in {self.seconds:.1f} s")
        parts = [head, "", self.table()]
        if self.failures:
            parts += ["", "Failures:"] + [f"  {f.describe()}" for f in self.failures]
        return "\n".join(parts)
