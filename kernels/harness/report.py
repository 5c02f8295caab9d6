"""What a conformance run found: one Check per (invariant, case, dtype), and a readable table.

A check has one of three statuses: passed, failed, or not applicable (the implementation lacks a
feature the invariant needs: attn_mask, dropout_p, causal, GQA, backward). Not applicable is never
a failure, and the report says how many there were and why.
"""
from __future__ import annotations

import contextlib
import contextvars
import math
import re
import shutil
import sys
import time
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
    # CPU seconds of this process (the first check of a case pays for its shared golden values); not compared,
    # and left out of the proof report's document (which is the same bytes for the same seed)
    seconds: float = field(default=0.0, compare=False, metadata={"run_dependent": True})  # proofs.report.model.RUN_DEPENDENT

    def __post_init__(self):
        if not self.status:
            object.__setattr__(self, "status", PASSED if self.passed else FAILED)

    @property
    def applicable(self) -> bool:
        return self.status != NOT_APPLICABLE

    @property
    def ratio(self) -> float:
        """How far the check went towards its bound (1 = at the bound; NaN for a NaN discrepancy)."""
        if self.bound > 0:
            return self.discrepancy / self.bound
        return 0.0 if self.discrepancy == 0 else math.inf

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
    checks: list[Check] = field(default_factory=lambda: _recorded())
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)  # what limited the run (a safety cap hit)

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
        parts = [head] + [f"Note: {n}" for n in self.notes]
        lacking = Counter(c.detail for c in self.not_applicable)
        if lacking:
            parts.append("Not applicable: " + "; ".join(f"{n} checks ({why})" for why, n in lacking.items()))
        if self.failures:
            parts += ["", "Summary:"] + [f"  {line}" for line in self.summary_lines()]
        parts += ["", self.table()]
        if self.failures:
            parts += ["", "Failures:"] + [f"  {line}" for line in self.failure_lines()]
        return "\n".join(parts)

    # ------------------------------------------------------------------ the summary by root cause

    def root_causes(self) -> list["RootCause"]:
        """The failing invariants grouped by the checks they fail on (invariants failing on the same
        cases and dtypes most likely share a cause), largest group first, each with the conditions
        its failures need (read from which of its invariants' checks passed)."""
        failed_on: dict[str, set] = {}
        for f in self.failures:
            failed_on.setdefault(f.invariant, set()).add((f.case_name, f.dtype))
        groups: dict[frozenset, list[str]] = {}
        for inv, where in failed_on.items():
            groups.setdefault(frozenset(where), []).append(inv)
        causes = []
        for invariants in groups.values():
            checks = [c for c in self.judged if c.invariant in invariants]
            failed = [c for c in checks if not c.passed]
            passed = [c for c in checks if c.passed]
            causes.append(RootCause(invariants, failed, len(checks), conditions(failed, passed)))
        return sorted(causes, key=lambda r: -len(r.failed))

    def smallest_failure(self) -> Check | None:
        """The failed check on the smallest case (B·Hq·Nq·Nk·(D + Dv)), the first among equals."""
        sized = [(case_size(f), i, f) for i, f in enumerate(self.failures)]
        return min(sized)[2] if sized else None

    def summary_lines(self) -> list[str]:
        """What failed, grouped by root cause, before the full list: for each group its invariants,
        how many of their checks failed and what the failures need ("only in float16", "only with
        Nk >= 65"); the failures across all invariants (only in checks that use attn_mask, say); the
        smallest failing case and the command that runs it alone."""
        lines = []
        for cause in self.root_causes():
            lines.append(cause.describe())
        across = conditions(self.failures, [c for c in self.judged if c.passed], across_invariants=True)
        if across and len(self.failed_invariants) > 1:
            lines.append(f"every failure: {'; '.join(across)}")
        small = self.smallest_failure()
        if small is not None:
            lines.append(f"smallest failing case: {small.describe()}")
            lines.append(f"  rerun it alone: attention-proofs verify {self.impl} --invariant {small.invariant} "
                         f"--case {small.case_name} --dtype {small.dtype}")
        return lines


@dataclass(frozen=True)
class RootCause:
    invariants: list[str]
    failed: list[Check]
    judged: int  # checks of these invariants that ran (passed or failed)
    needs: list[str]  # the conditions every failure meets and some passing check does not

    def describe(self) -> str:
        errors = Counter(f.error for f in self.failed if f.error is not None)
        how = f"raised {errors.most_common(1)[0][0]}" if errors and sum(errors.values()) == len(self.failed) else \
            f"worst {_num(max(f.ratio for f in self.failed))}× its bound"
        pattern = "; ".join(self.needs) if self.needs else (
            "in every case and dtype it ran on" if len(self.failed) == self.judged else "no single feature or size "
            "separates the failures from the passes")
        names = ", ".join(self.invariants)
        return f"{names}: {len(self.failed)} of {self.judged} checks failed ({how}) — {pattern}"


# ---------------------------------------------------------------------- what the failures need

# Case.describe(): "name: B=2 Hq=4 Hkv=2 Nq=65 Nk=97 D=64[ Dv=24] causal|full [gqa|mqa] [kind 1e+04] [scale=0.3] ..."
_SHAPE = re.compile(r"B=(\d+) Hq=(\d+) Hkv=(\d+) Nq=(\d+) Nk=(\d+) D=(\d+)(?: Dv=(\d+))? (causal|full)\b(.*)$")
_KINDS = ("extreme-logits", "mixed-magnitude-rows", "hugely-negative-rows")
SIZES = ("B", "Hq", "Nq", "Nk", "D", "Dv")


def case_shape(description: str) -> dict | None:
    """The sizes and flags a case description names (None when it is not in Case.describe()'s form)."""
    m = _SHAPE.search(description)
    if m is None:
        return None
    b, hq, hkv, nq, nk, d, dv = (int(x) if x else None for x in m.groups()[:7])
    rest = m.group(9)
    return dict(B=b, Hq=hq, Hkv=hkv, Nq=nq, Nk=nk, D=d, Dv=d if dv is None else dv, causal=m.group(8) == "causal",
                scaled="scale=" in rest, nonpositive=re.search(r"scale=(-|0(?:\s|$))", rest) is not None,
                kind=next((k for k in _KINDS if k in rest), "random"),
                features=frozenset(phrase.format(x).replace("a additive", "an additive")
                                   for phrase, pattern in _FEATURES for x in pattern.findall(rest)))


# The features a drawn problem's description names beside its sizes (generate.Problem.describe), each a condition the
# root causes may name (red team rt44h: six failures of one (Nk,) mask form were blamed on "D > 128" and "a partial
# last key block", the mask never named)
_FEATURES = (("a {}", re.compile(r"((?:bool|additive) mask \([^)]*\))")),
             ("a {} mask", re.compile(r"(?:bool|additive) mask (\([^)]*\))")),
             ("the {}", re.compile(r"\(covering row: (\S+ path)")),
             ("{}", re.compile(r"\b(rank-\d inputs)")),
             ("{} inputs", re.compile(r"^\s*(transposed|permuted|offset|slice)\b")),  # (the layout: the first word)
             ("{}", re.compile(r"(k, v of batch 1 broadcast)")),
             ("{}", re.compile(r"((?:NaN|[+-]inf) in [qkv])")),
             ("a {} call first", re.compile(r"after a (.*?) call")),
             ("arguments as {}", re.compile(r"arguments as (numpy scalars|tensor scalars|positional)")),
             ("{}", re.compile(r"\b(dropout) \d")))


def case_size(check: Check) -> float:
    shape = case_shape(check.case)
    if shape is None:
        return math.inf
    return shape["B"] * shape["Hq"] * shape["Nq"] * shape["Nk"] * (shape["D"] + shape["Dv"])


def _needs_of(invariant: str) -> frozenset:
    from kernels.harness.invariants import INVARIANTS  # imported late: invariants imports this module's users

    return next((i.needs for i in INVARIANTS if i.name == invariant), frozenset())


BLOCKS = (16, 32, 64, 128)  # the tile widths kernels use: a bug in the tail or multi-block path shows past them


def _predicates(checks: list[Check], across_invariants: bool):
    """(phrase, test, kind) for every condition a check may meet: kind 0 its dtype, its case's flags
    and its lengths against the usual tile widths; kind 1 each size at or beyond each value it takes;
    across invariants, only the features the invariant uses and the dtype."""
    shapes = {c.case: case_shape(c.case) for c in checks}
    known = [sh for sh in shapes.values() if sh is not None]
    dtypes = {c.dtype for c in checks}
    preds = [(f"only in {d}", lambda c, d=d: c.dtype == d, 0) for d in sorted(dtypes)]
    if {"float16", "bfloat16"} <= dtypes:
        preds.append(("only in float16 or bfloat16", lambda c: c.dtype in ("float16", "bfloat16"), 0))
    if across_invariants:
        for feature in ("attn_mask", "dropout_p", "backward"):
            preds.append((f"only in checks that use {feature}", lambda c, f=feature: f in _needs_of(c.invariant), 0))
        preds.append(("only in checks of the forward alone", lambda c: not _needs_of(c.invariant), 0))
        return preds

    def flag(phrase, test, kind=0):
        preds.append((phrase, lambda c: shapes[c.case] is not None and test(shapes[c.case]), kind))

    for feature in sorted(set().union(*(sh["features"] for sh in known))):
        flag(f"only with {feature}", lambda sh, f=feature: f in sh["features"])
    flag("only with is_causal", lambda sh: sh["causal"])
    flag("only without is_causal", lambda sh: not sh["causal"])
    flag("only with GQA or MQA (Hq ≠ Hkv)", lambda sh: sh["Hq"] != sh["Hkv"])
    flag("only with MQA (Hkv = 1 < Hq)", lambda sh: sh["Hkv"] == 1 < sh["Hq"])
    flag("only without GQA (Hq = Hkv)", lambda sh: sh["Hq"] == sh["Hkv"])
    flag("only with Dv ≠ D", lambda sh: sh["Dv"] != sh["D"])
    flag("only with an explicit scale", lambda sh: sh["scaled"])
    # (torch 2.13's CPU flash SDPA gives NaN under is_causal at every scale ≤ 0: an impl built on it fails there alone)
    flag("only with a scale ≤ 0", lambda sh: sh["nonpositive"])
    flag("only with Nq < Nk", lambda sh: sh["Nq"] < sh["Nk"])
    flag("only with Nq > Nk", lambda sh: sh["Nq"] > sh["Nk"])
    flag("only with Nq = Nk", lambda sh: sh["Nq"] == sh["Nk"])
    flag("only with Nq ≠ Nk", lambda sh: sh["Nq"] != sh["Nk"])
    flag("only with one query (Nq = 1)", lambda sh: sh["Nq"] == 1)
    flag("only with one key (Nk = 1)", lambda sh: sh["Nk"] == 1)
    for kind in _KINDS:
        flag(f"only on {kind} inputs", lambda sh, kind=kind: sh["kind"] == kind)
    for b in BLOCKS:
        flag(f"only past one key block of {b} (Nk > {b})", lambda sh, b=b: sh["Nk"] > b)
        flag(f"only past one query block of {b} (Nq > {b})", lambda sh, b=b: sh["Nq"] > b)
        flag(f"only with a partial last key block of {b} (Nk % {b} ≠ 0)", lambda sh, b=b: sh["Nk"] % b != 0)
        flag(f"only with a partial last query block of {b} (Nq % {b} ≠ 0)", lambda sh, b=b: sh["Nq"] % b != 0)
        flag(f"only with D > {b}", lambda sh, b=b: sh["D"] > b)
    for size in SIZES:
        for value in sorted({sh[size] for sh in known}):
            flag(f"only with {size} ≥ {value}", lambda sh, size=size, value=value: sh[size] >= value, 1)
            flag(f"only with {size} ≤ {value}", lambda sh, size=size, value=value: sh[size] <= value, 1)
    return preds


def conditions(failed: list[Check], passed: list[Check], *, across_invariants: bool = False,
               most: int = 3) -> list[str]:
    """The conditions every failed check meets and some passed check does not: what the failure
    needs ("only in float16", "only past one key block of 64 (Nk > 64)"). When conditions are met
    by exactly the failed checks, those are given (flags and tile widths before raw sizes), else a
    pair of flags met by exactly them ("only with is_causal and Nq ≠ Nk"), else the two that rule
    out the most passing checks. Of a family (one size's thresholds, one kind of tile) only the
    tightest is kept. Empty when nothing passed (it fails everywhere) or nothing separates them."""
    if not failed or not passed:
        return []
    best: dict[str, tuple] = {}
    necessary = []  # (phrase, test) of the flags every failure meets
    for order, (phrase, test, kind) in enumerate(_predicates(failed + passed, across_invariants)):
        if not all(test(c) for c in failed):
            continue
        excluded = [not test(c) for c in passed]
        if not any(excluded):
            continue
        if kind == 0:
            necessary.append((phrase, excluded))
        family = re.sub(r"\d+", "#", phrase) if ("block of" in phrase or kind == 1) else phrase
        if kind == 1:
            family += phrase.split()[3]  # ≥ and ≤ are two families
        rank = (not all(excluded), -sum(excluded), kind, order)
        if family not in best or rank < best[family][0]:
            best[family] = (rank, phrase)
    ranked = sorted(best.values())
    exact = [phrase for rank, phrase in ranked if not rank[0]]
    if any(rank[2] == 0 for rank, _ in ranked if not rank[0]):  # a flag or tile width says it: no raw size
        exact = [phrase for rank, phrase in ranked if not rank[0] and rank[2] == 0]
    if not exact:
        exact = [f"{a} and {_tail(b)}" for i, (a, ea) in enumerate(necessary)
                 for b, eb in necessary[i + 1:] if all(x or y for x, y in zip(ea, eb))][:1]
    chosen = exact[:most] if exact else [phrase for _, phrase in ranked[:2]]
    return [_with_passes(phrase, passed) for phrase in chosen]


def _tail(phrase: str) -> str:
    """"only with X" -> "with X": the second half of "only in A and with X"."""
    return phrase.removeprefix("only ")


def _with_passes(phrase: str, passed: list[Check]) -> str:
    """A size threshold with the nearest size that passed: "only with Nk ≥ 65 (passes at Nk = 53)"."""
    m = re.match(r"only with (\w+) ([≥≤]) (\d+)$", phrase)
    if not m:
        return phrase
    size, op, value = m.group(1), m.group(2), int(m.group(3))
    sizes = [sh[size] for sh in (case_shape(c.case) for c in passed) if sh is not None]
    near = [x for x in sizes if (x < value if op == "≥" else x > value)]
    if not near:
        return phrase
    return f"{phrase} (passes at {size} = {max(near) if op == '≥' else min(near)})"


# ---------------------------------------------------------------------- progress on a terminal

_PROGRESS: contextvars.ContextVar = contextvars.ContextVar("attention_progress", default=None)


class _Recorded(list):
    """A report's checks while progress is shown: verify_attention appends each check as it ends,
    whichever loop made it, so this is the one place that sees them all."""

    def __init__(self, progress):
        super().__init__()
        self._progress = progress

    def append(self, check):
        super().append(check)
        self._progress.update(check)


def _recorded() -> list:
    progress = _PROGRESS.get()
    return [] if progress is None else _Recorded(progress)


class Progress:
    """One line on the terminal, rewritten at most ten times a second: checks done, failures, seconds,
    the check just run."""

    def __init__(self, stream):
        self.stream, self.done, self.failed = stream, 0, 0
        self.start = self.last = time.monotonic()

    def update(self, check: Check) -> None:
        self.done += 1
        self.failed += check.applicable and not check.passed
        now = time.monotonic()
        if now - self.last < 0.1:
            return
        self.last = now
        line = (f"{self.done} checks, {self.failed} failed, {now - self.start:.0f} s: "
                f"{check.invariant} on {check.case_name} ({check.dtype})")
        self.stream.write("\r\033[K" + line[:shutil.get_terminal_size((80, 24)).columns - 1])
        self.stream.flush()

    def close(self) -> None:
        self.stream.write("\r\033[K")
        self.stream.flush()


@contextlib.contextmanager
def progress_shown(stream=None):
    """Within it, each conformance run shows its progress on ``stream`` (stderr by default) when that
    is a terminal; into a pipe or a CI log nothing is written."""
    stream = sys.stderr if stream is None else stream
    if not (hasattr(stream, "isatty") and stream.isatty()):
        yield None
        return
    progress = Progress(stream)
    token = _PROGRESS.set(progress)
    try:
        yield progress
    finally:
        _PROGRESS.reset(token)
        progress.close()
