"""What a conformance run found: one Check per (invariant, case, dtype), and a readable table.

A check has one of three statuses: passed, failed, or not applicable (the implementation lacks a
feature the invariant needs: attn_mask, dropout_p, causal, GQA, backward). Not applicable is never
a failure, and the report says how many there were and why.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass, field

PASSED, FAILED, NOT_APPLICABLE = "passed", "failed", "not applicable"


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
    status: str = ""  # PASSED, FAILED or NOT_APPLICABLE; set from ``passed`` when left empty

    def __post_init__(self):
        if not self.status:
            object.__setattr__(self, "status", PASSED if self.passed else FAILED)

    @property
    def applicable(self) -> bool:
        return self.status != NOT_APPLICABLE

    def describe(self) -> str:
        claim = f" [{self.claim_id}]" if self.claim_id else ""
        head = f"{self.invariant}{claim} on {self.case} ({self.dtype}, {self.device})"
        if not self.applicable:
            return f"{head}: not applicable ({self.detail})"
        if self.error is not None:
            return f"{head}: raised {self.error}"
        verdict = "<=" if self.passed else ">"
        extra = f"; {self.detail}" if self.detail else ""
        return f"{head}: discrepancy {_num(self.discrepancy)} {verdict} bound {_num(self.bound)}{extra}"


Failure = Check  # a failure is a check that did not pass; same record


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
        return bool(self.judged) and all(c.passed for c in self.checks)

    @property
    def judged(self) -> list[Check]:
        return [c for c in self.checks if c.applicable]

    @property
    def not_applicable(self) -> list[Check]:
        return [c for c in self.checks if not c.applicable]

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    @property
    def failed_invariants(self) -> set[str]:
        return {c.invariant for c in self.failures}

    def as_dicts(self) -> list[dict]:
        return [asdict(c) for c in self.checks]

    def table(self) -> str:
        """Invariants × cases: '✓' every dtype passed, '✗' some failed, 'n/a' not applicable (the impl
        lacks a feature the invariant needs), '·' the invariant does not apply to that case."""
        cases = list(dict.fromkeys(c.case_name for c in self.checks))
        invariants = list(dict.fromkeys(c.invariant for c in self.checks))
        claims = {c.invariant: c.claim_id or "" for c in self.checks}
        cell: dict[tuple[str, str], bool | None] = {}
        for c in self.checks:
            key = (c.invariant, c.case_name)
            if not c.applicable:
                cell.setdefault(key, None)
            else:
                cell[key] = (cell.get(key) is not False) and c.passed
        labels = [f"c{i + 1}" for i in range(len(cases))]
        w_inv = max(len(i) for i in invariants)
        w_claim = max([len(v) for v in claims.values()] + [5])
        lines = [f"{'invariant':<{w_inv}}  {'claim':<{w_claim}}  " + " ".join(f"{lab:>3}" for lab in labels)]
        for inv in invariants:
            marks = []
            for name in cases:
                key = (inv, name)
                ok = cell.get(key)
                marks.append("·" if key not in cell else ("n/a" if ok is None else ("✓" if ok else "✗")))
            lines.append(f"{inv:<{w_inv}}  {claims[inv]:<{w_claim}}  " + " ".join(f"{m:>3}" for m in marks))
        described = {c.case_name: c.case for c in self.checks}
        lines.append("")
        lines += [f"  {lab} = {described[name]}" for lab, name in zip(labels, cases)]
        return "\n".join(lines)

    def failure_lines(self) -> list[str]:
        """One line per failure, except that an exception raised by many checks (a wrong signature,
        say) is stated once with its count and the invariants it stopped."""
        raised = Counter(f.error for f in self.failures if f.error is not None)
        lines, told = [], set()
        for f in self.failures:
            if f.error is not None and raised[f.error] > 1:
                if f.error not in told:
                    told.add(f.error)
                    stopped = sorted({g.invariant for g in self.failures if g.error == f.error})
                    lines.append(f"raised {f.error} in {raised[f.error]} checks "
                                 f"({len(stopped)} invariants: {', '.join(stopped)})")
                continue
            lines.append(f.describe())
        return lines

    def __str__(self) -> str:
        verdict = "PASSED" if self.passed else "FAILED"
        judged = self.judged
        head = (f"Conformance of {self.impl} on {self.device} ({', '.join(self.dtypes)}): {verdict} — "
                f"{len(judged) - len(self.failures)} of {len(judged)} checks passed in {self.seconds:.1f} s")
        parts = [head]
        lacking = Counter(c.detail for c in self.not_applicable)
        if lacking:
            parts.append("Not applicable: " + "; ".join(f"{n} checks ({why})" for why, n in lacking.items()))
        parts += ["", self.table()]
        if self.failures:
            parts += ["", "Failures:"] + [f"  {line}" for line in self.failure_lines()]
        return "\n".join(parts)
