"""The report's evidence objects: plain data, gathered once, rendered many ways.

Every field is a str, int, float, bool, None, list or dict of those, one of these dataclasses,
or a layer's own frozen record (``kernels.harness.Check``, ``proofs.seed_audit.AuditRecord``,
imported, never copied), so the JSON writer, the HTML and the Markdown renderers read the same facts
and none of them computes anything. Timings live apart from the evidence (``Report.timings``)
because they are the only part of a report that changes between two runs with one seed.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the layers' own record types; the model only holds them
    from kernels.harness.report import Check
    from proofs.seed_audit import AuditRecord

PASSED = "passed"
FAILED = "failed"
NOT_CHECKED = "not checked"
NOT_CHECKED_TEXT = "not checked by this layer"
NOT_A_CHECKOUT = "not a git checkout"  # the environment's "commit" when the code was not run from one

LAYERS = ("proofs", "numeric", "kernels")
LAYER_TITLES = {"proofs": "Symbolic derivation", "numeric": "Monte Carlo", "kernels": "Kernel"}
# What a pass or a failure is called in each layer's own words.
VERDICT_WORDS = {
    "proofs": {PASSED: "proved", FAILED: "failed"},
    "numeric": {PASSED: "confirmed", FAILED: "rejected"},
    "kernels": {PASSED: "conforms", FAILED: "violated"},
}


@dataclass
class StepEvidence:
    number: int
    rule: str
    description: str
    latex: str
    status: str  # "premise", PASSED or FAILED
    detail: str


@dataclass
class ProofEvidence:
    status: str
    reason: str = ""  # why it was not checked, or why it failed
    statement_latex: str = ""
    conjuncts_latex: list[str] = field(default_factory=list)  # the statement's conjuncts, one formula each
    steps: list[StepEvidence] = field(default_factory=list)
    results: list[list[str]] = field(default_factory=list)  # [name, latex], or [name, "", text] for words
    checked_steps: int = 0
    premises: int = 0
    verdict_line: str = ""  # "proved", "proved, given Chebyshev's inequality", "failed: ..."
    trusted: list[str] = field(default_factory=list)  # what the verdict takes on trust, one line per kind
    certificate: dict | None = None  # the derivation's own certificate (JSON-able), where it offers one
    # The checker writes the formulas in its lines (verdict, trust, step checks) as SymPy's text, e.g.
    # "Eq(a[x], exp(z[x])/Sum(...))": each such text that occurs above, mapped to the LaTeX SymPy prints for the
    # same expression, so a renderer shows the formula instead of SymPy's text.
    formulas: dict[str, str] = field(default_factory=dict)


@dataclass
class NumericEvidence:
    status: str
    reason: str = ""
    description: str = ""
    estimate: Any = None
    claimed: Any = None  # the derived value the sample is tested against
    ci: list | None = None  # [low, high]
    p_value: float | None = None  # None for a floating-point check judged against ``tolerance``
    alpha: float | None = None
    n_samples: int | None = None
    power: float | None = None
    power_error: float | None = None  # the relative error ``power`` is the chance to reject
    tolerance: float | None = None
    parts: list[dict] = field(default_factory=list)  # one per parameter point of a sweep, same keys
    effect: float | None = None  # the relative error ``effect_power`` is the chance to reject (numeric.STATED_EFFECT)
    effect_power: float | None = None  # None: no statistical power applies (a floating-point check)
    word: str = ""  # the verdict in words: "confirmed" only with power >= numeric.CONFIRMING_POWER at ``effect``


@dataclass
class KernelEvidence:
    """The kernel checks tied to one claim (empty when the kernel layer has none for it)."""

    status: str
    reason: str = ""
    checks: list[Check] = field(default_factory=list)
    invariants: list[str] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)
    worst: Check | None = None  # the check closest to (or furthest past) its bound


@dataclass
class KernelSummary:
    """What the kernel layer ran, once for the whole report."""

    status: str
    reason: str = ""
    implementation: str = ""
    device: str = ""
    mode: str = ""  # "interpreted (Triton interpreter on CPU)" or "compiled"
    dtypes: list[str] = field(default_factory=list)
    settings: dict = field(default_factory=dict)
    checks_run: int = 0
    failures: list[Check] = field(default_factory=list)
    per_dtype: list[dict] = field(default_factory=list)  # {dtype, checks, failed, worst (a Check), worst_ratio}
    per_invariant: list[dict] = field(default_factory=list)  # {invariant, claim_id, checks, failed, worst ...}
    error_vs_length: list[dict] = field(default_factory=list)  # {dtype, n, error, bound, passed}


@dataclass
class ClaimEvidence:
    id: str
    title: str
    statement: str
    assumptions: list[str]
    seeds: list[dict]  # {file, title, quote}
    topic: str
    proofs: ProofEvidence
    numeric: NumericEvidence
    kernels: KernelEvidence
    references: list[str] = field(default_factory=list)  # cited where no seed states the claim
    theorem: str = ""  # the theorem's source, "path/to/module.py:function"

    def layer(self, name: str):
        return getattr(self, name)

    @property
    def verdict(self) -> str:
        statuses = [self.layer(name).status for name in LAYERS]
        if FAILED in statuses:
            return FAILED
        return PASSED if PASSED in statuses else NOT_CHECKED


@dataclass
class AuditEvidence:
    status: str  # PASSED when the audit ran (its verdicts are about the seeds, not the suite)
    reason: str = ""
    records: list[AuditRecord] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        """How many records have each verdict, in the order the verdicts first appear."""
        verdicts = [r.verdict for r in self.records]
        return {v: verdicts.count(v) for v in dict.fromkeys(verdicts)}


@dataclass
class FigureData:
    name: str
    title: str
    caption: str
    status: str  # PASSED when the data is there to draw, NOT_CHECKED otherwise
    reason: str = ""
    data: dict = field(default_factory=dict)


@dataclass
class Report:
    run: dict  # mode, seed, only, layers, plan: what this run did
    claims: list[ClaimEvidence]
    kernels: KernelSummary
    audit: AuditEvidence
    figures: list[FigureData]
    environment: dict
    timings: dict = field(default_factory=dict)  # generated_at and seconds: the only run-dependent part
    problems: list[str] = field(default_factory=list)  # a layer that broke as a whole (not one claim)
    # The ecosystem survey's table (kernels.ecosystem.table.report_data), rendered there; empty when not run
    survey: dict = field(default_factory=dict)

    @property
    def failing(self) -> list[str]:
        failing = [c.id for c in self.claims if c.verdict == FAILED]
        # Kernel invariants that no claim owns, and layers that broke, still fail the run: after the claims.
        failing += sorted({f"kernels:{c.invariant}" for c in self.kernels.failures if c.claim_id is None})
        return failing + self.problems

    @property
    def passed(self) -> bool:
        return not self.failing

    def summary(self) -> dict:
        layers = {}
        for name in LAYERS:
            counts = {PASSED: 0, FAILED: 0, NOT_CHECKED: 0}
            for c in self.claims:
                counts[c.layer(name).status] += 1
            layers[name] = counts
        verdicts = [c.verdict for c in self.claims]
        return {
            "claims": len(self.claims),
            "passed": verdicts.count(PASSED),
            "failed": verdicts.count(FAILED),
            "not_checked": verdicts.count(NOT_CHECKED),
            "layers": layers,
            "failing": self.failing,
            "verdict": PASSED if self.passed else FAILED,
        }

    def figure(self, name: str) -> FigureData | None:
        return next((f for f in self.figures if f.name == name), None)


RUN_DEPENDENT = "run_dependent"  # dataclass field metadata: a value that differs from run to run


def plain(value: Any) -> Any:
    """JSON-ready copy: dataclasses to dicts, NumPy scalars/arrays to Python, non-finite floats to strings.

    Strict JSON has no NaN or infinity; writing them as "nan"/"inf" keeps the number's meaning.
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # a field marked run-dependent (a check's CPU seconds) is left out: the document is the same bytes
        # for the same seed; the run's times are in "timings"
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)
                if not f.metadata.get(RUN_DEPENDENT)}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    if hasattr(value, "tolist"):  # NumPy arrays and scalars, torch tensors
        return plain(value.tolist())
    if isinstance(value, float) or hasattr(value, "__float__"):
        try:
            f = float(value)
        except (TypeError, ValueError):
            return str(value)
        if math.isfinite(f):
            return f
        return "nan" if math.isnan(f) else ("inf" if f > 0 else "-inf")
    return str(value)
