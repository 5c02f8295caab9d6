"""The kernel layer's evidence for the report: one entry point, claim ids and a plan in, plain records out.

``evidence_for(claim_ids, plan)`` runs the conformance harness on the project's kernel (only the
invariants tied to ``claim_ids``, when given), the error-against-length sweep and the rounding
figure's data, and answers with :class:`KernelEvidence`: the harness's own ``Check`` records, each
claim's checks and, where none of them ran, why (the plan left them out, the implementation lacks
what they need, or no invariant tests the claim). An error raised while the harness runs is recorded
in the answer, never raised: the report shows it as a failure of the layer.

Where the kernel runs (compiled on a GPU, else Triton's interpreter) is ``kernels.interpreter``'s
choice, made before triton is imported.

Importing this module is light (no torch, no triton, no harness): a report narrowed to claims the kernel
does not test (``TESTED_CLAIMS``) gets its answer without them, and the harness, torch and triton are
imported only when something is to run.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernels.harness.report import Check

DTYPES = ("float32", "float16", "bfloat16")
# The claim the error-against-length sweep and the rounding figure illustrate (the forward's rounding error):
# a run narrowed to some claims runs them only when it includes this one.
ERROR_CLAIM = "rounding-attention-forward"
# The claim the traffic and memory figures illustrate (measured on the kernel, beside its derived counts).
TRAFFIC_CLAIM = "memory-traffic"
FIGURE_GRIDS = ("quick", "full")  # kernels.traffic.FIGURE_SERIES' and kernels.memory's two sets of N
# The claims an invariant of the harness is tied to (``Invariant.claim_id``), written out so that a report about
# other claims need not import the harness (torch and triton: most of a one-claim report's time).
# tests/test_report_gather.py checks it against the registry, so a new invariant's claim cannot be missed.
TESTED_CLAIMS = frozenset({
    "attention-backward", "causal-mask-top-left", "dropout-kept-fraction", "dropout-unbiased", "dropout-variance",
    "gqa-equals-repeated-mha", "online-softmax-merge", "prescaled-query", "round-to-nearest-unbiased",
    "rounding-attention-forward", "scaled-score-unit-variance", "softmax-jacobian", "softmax-normalisation",
    "softmax-shift-invariance",
})
NO_INVARIANT = "no kernel invariant tests this claim"


@dataclass(frozen=True)
class Plan:
    """What the report asks of the kernel layer; checked once, here, before anything runs."""

    mode: str  # the report's name for the plan ("quick", "full"): the "not run in --quick" reasons say it
    seed: int = 0
    dtypes: tuple[str, ...] | None = None  # None: every dtype the device supports
    causal: bool = True
    gqa: bool = True
    backward: bool = True  # run the backward invariants (the kernel has a backward either way)
    thorough: bool = False
    cases: tuple[str, ...] | None = None  # names of the harness's cases; None: the harness's own choice
    lengths: tuple[int, ...] = (1, 37, 64, 127, 256)
    length_dtypes: tuple[str, ...] = DTYPES
    rounding_samples: int = 8  # random inputs per (dtype, N) of the rounding figure
    figure_grid: str | None = None  # the traffic and memory figures' "quick" or "full" N; None: neither figure

    def __post_init__(self):
        """Every field but the case names, which need the harness's cases (torch): ``check_cases``, called by
        ``evidence_for`` before the harness runs."""
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {self.seed!r}")
        for name in ("dtypes", "length_dtypes"):
            bad = [d for d in (getattr(self, name) or ()) if d not in DTYPES]
            if bad:
                raise ValueError(f"{name} {bad} unknown; choose from {', '.join(DTYPES)}")
        if not self.lengths or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in self.lengths):
            raise ValueError(f"lengths must be positive integers, got {self.lengths!r}")
        if isinstance(self.rounding_samples, bool) or not isinstance(self.rounding_samples, int) \
                or self.rounding_samples < 1:
            raise ValueError(f"rounding_samples must be a positive integer, got {self.rounding_samples!r}")
        if self.figure_grid is not None and self.figure_grid not in FIGURE_GRIDS:
            raise ValueError(f"figure_grid must be None or one of {FIGURE_GRIDS}, got {self.figure_grid!r}")

    def check_cases(self) -> None:
        from kernels.harness.cases import DEFAULT_CASES

        if self.cases is not None:
            missing = sorted(set(self.cases) - {c.name for c in DEFAULT_CASES})
            if missing:
                raise ValueError(f"cases {missing}: the harness has no cases of these names")


@dataclass
class ClaimChecks:
    """The checks tied to one claim, and why none of them ran when none did ("" when some ran)."""

    checks: list[Check] = field(default_factory=list)
    why_none_ran: str = ""

    @property
    def ran(self) -> list[Check]:
        return [c for c in self.checks if c.applicable]

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.ran if not c.passed]

    @property
    def worst(self) -> Check | None:
        from kernels.harness.report import worst

        return worst(self.ran)


@dataclass
class FigureRecord:
    """One figure's data measured on the kernel, with its caption (from the code that measured it), or why not."""

    name: str
    caption: str = ""
    data: dict = field(default_factory=dict)
    error: str = ""


@dataclass
class KernelEvidence:
    """What the kernel layer ran and found, as plain records."""

    implementation: str = ""
    device: str = ""
    mode: str = ""
    settings: dict = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    passed: bool = True  # the harness's own verdict on the run
    error: str = ""  # the harness raised: nothing about the kernel is known
    error_vs_length: list[dict] = field(default_factory=list)  # {dtype, n, error, bound, passed}
    failures: list[Check] = field(default_factory=list)  # failed checks, the sweep's over-bound lengths among them
    claims: dict[str, ClaimChecks] = field(default_factory=dict)
    per_dtype: list[dict] = field(default_factory=list)  # {dtype, checks, not_applicable, failed, worst, worst_ratio}
    per_invariant: list[dict] = field(default_factory=list)  # the same per invariant, with its claim_ids
    rounding: dict | None = None  # kernels.rounding_confirmation.error_curve's data, when asked for
    rounding_error: str = ""
    swept: bool = False  # whether the error-against-length sweep was asked for
    figures: list[FigureRecord] = field(default_factory=list)  # the traffic and memory figures, when asked for


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".strip()


def evidence_for(claim_ids: tuple[str, ...] | None, plan: Plan) -> KernelEvidence:
    """Run what ``plan`` asks for the claims ``claim_ids`` (None: every claim) and answer with the records."""
    figures = plan.figure_grid is not None and (claim_ids is None or TRAFFIC_CLAIM in claim_ids)
    if claim_ids is not None and not TESTED_CLAIMS & set(claim_ids) and ERROR_CLAIM not in claim_ids \
            and not figures:
        # nothing to run: no harness, no torch (the implementation, device and mode stay unsaid)
        return KernelEvidence(settings={"invariants": []}, claims={cid: ClaimChecks([], NO_INVARIANT)
                                                                     for cid in claim_ids})
    plan.check_cases()
    import torch

    import kernels
    from kernels import harness
    from kernels.flash import runtime
    from kernels.harness.cases import DEFAULT_CASES
    from kernels.harness.invariants import INVARIANTS

    impl = kernels.flash_attention
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtypes = list(plan.dtypes) if plan.dtypes else None
    answer = KernelEvidence(
        implementation=f"{impl.__module__}.{impl.__qualname__}",
        device=device if device == "cpu" else f"cuda ({torch.cuda.get_device_name(0)})",
        mode="interpreted by Triton's interpreter on the CPU" if runtime.interpreting() else "compiled",
        settings={"causal": plan.causal, "gqa": plan.gqa, "backward invariants": plan.backward,
                  "thorough": plan.thorough, "seed": plan.seed, "dtypes": dtypes or "all the device supports"},
        swept=claim_ids is None or ERROR_CLAIM in claim_ids)
    cases = None if plan.cases is None else [c for c in DEFAULT_CASES if c.name in plan.cases]
    if cases is not None:
        answer.settings["cases"] = [c.name for c in cases]
    # The kernel has a backward: a plan without it leaves the backward invariants out (they are "not run in
    # --quick"), never tells the harness the impl lacks one (that would make them "not applicable").
    invariants = [i.name for i in INVARIANTS if (plan.backward or not i.backward)
                  and (claim_ids is None or i.claim_id in claim_ids)]
    if claim_ids is not None:
        answer.settings["invariants"] = invariants
    if invariants:
        try:
            rep = harness.verify_attention(impl, device=device, dtypes=dtypes, causal=plan.causal, gqa=plan.gqa,
                                           seed=plan.seed, thorough=plan.thorough, cases=cases,
                                           invariants=None if claim_ids is None and plan.backward else invariants)
            answer.checks, answer.passed = list(rep.checks), bool(rep.passed)
        except Exception as exc:  # the harness itself broke: nothing about the kernel is known
            answer.error, answer.passed = f"verify_attention raised {_why(exc)}", False
            return answer
    answer.failures = [c for c in answer.checks if not c.passed]
    answer.per_dtype = _grouped(answer.checks, "dtype")
    answer.per_invariant = _grouped(answer.checks, "invariant")
    for cid in claim_ids if claim_ids is not None else sorted({i.claim_id for i in INVARIANTS if i.claim_id}):
        mine = [c for c in answer.checks if c.claim_id == cid]
        answer.claims[cid] = ClaimChecks(mine, _why_none_ran(cid, mine, plan))
    if answer.swept:
        _sweep(answer, impl, device, plan)
    if figures:
        answer.figures = traffic_figures(plan.figure_grid == "quick")
    return answer


def traffic_figures(quick: bool) -> list[FigureRecord]:
    """The traffic figure (counted under Triton's interpreter) and the memory figure, on their quick or full N."""
    from kernels import memory, traffic

    out = []
    for name, measure, caption in (
            ("traffic", lambda: traffic.figure_data(quick), traffic.figure_caption),
            ("memory", lambda: memory.memory_curves(memory.QUICK_NS if quick else memory.NS), memory.figure_caption)):
        try:
            data = measure()
            out.append(FigureRecord(name, caption(data), data))
        except Exception as exc:  # e.g. compiled on a GPU, where the loads cannot be counted lane by lane
            out.append(FigureRecord(name, error=f"could not gather the data: {_why(exc)}"))
    return out


def _sweep(answer: KernelEvidence, impl, device: str, plan: Plan) -> None:
    """The error against sequence length (an over-bound length is a failed check) and the rounding figure."""
    from kernels import harness
    from kernels.harness.report import Check

    nan = float("nan")
    try:
        records = harness.error_vs_length(impl, list(plan.lengths), list(plan.length_dtypes), device=device,
                                          seed=plan.seed)
        answer.error_vs_length = [{key: r[key] for key in ("dtype", "n", "error", "bound", "passed")}
                                  for r in records]
    except Exception as exc:
        answer.failures.append(Check(invariant="error within bound", claim_id=None, case="error_vs_length",
                                     case_name="error_vs_length", dtype="", device=device, discrepancy=nan,
                                     bound=nan, passed=False, error=_why(exc)))
    answer.failures += [Check(invariant="error within bound", claim_id=None, case=f"N = {r['n']}",
                              case_name=f"length-{r['n']}", dtype=r["dtype"], device=device,
                              discrepancy=float(r["error"]), bound=float(r["bound"]), passed=False)
                        for r in answer.error_vs_length if not r["passed"]]
    answer.rounding, answer.rounding_error = rounding_data(plan)


def rounding_data(plan: Plan) -> tuple[dict | None, str]:
    """The rounding figure's data (torch's CPU SDPA against the proved bounds), or None and why not."""
    import torch

    from kernels import rounding_confirmation

    threads = torch.get_num_threads()
    try:
        return rounding_confirmation.error_curve(samples=plan.rounding_samples, seed=plan.seed), ""
    except Exception as exc:
        return None, _why(exc)
    finally:
        torch.set_num_threads(threads)  # the confirmation runs single-threaded; the caller may not


def _grouped(checks: list[Check], key: str) -> list[dict]:
    """One row per dtype (or invariant): how many checks ran, how many were not applicable, how many failed,
    and the worst of them."""
    from kernels.harness.report import worst

    rows = []
    for value in sorted({getattr(c, key) for c in checks}):
        group = [c for c in checks if getattr(c, key) == value]
        ran = [c for c in group if c.applicable]
        w = worst(ran)
        ratio = None if w is None else (w.ratio if math.isfinite(w.ratio) else str(w.ratio))
        row = {key: value, "checks": len(ran), "not_applicable": len(group) - len(ran),
               "failed": sum(not c.passed for c in ran), "worst": w, "worst_ratio": ratio}
        if key == "invariant":
            row["claim_ids"] = sorted({c.claim_id or "" for c in group})
        rows.append(row)
    return rows


def _why_none_ran(claim_id: str, mine: list[Check], plan: Plan) -> str:
    """Why no check of ``claim_id`` ran ("" when one did): from the harness's own invariants and statuses."""
    if any(c.applicable for c in mine):
        return ""
    if mine:  # every check tied to the claim was judged not applicable by the harness
        return f"not applicable: {'; '.join(sorted({c.detail for c in mine}))}"
    from kernels.harness.invariants import INVARIANTS

    tied = [i for i in INVARIANTS if i.claim_id == claim_id]
    if not tied:
        return NO_INVARIANT
    names = ", ".join(i.name for i in tied)
    if not plan.backward and all(i.backward for i in tied):
        return f"not run in --{plan.mode}: its invariants ({names}) check the backward, which --full runs"
    if plan.cases is not None:
        return (f"not run in --{plan.mode}: its invariants ({names}) apply to none of the cases it runs "
                f"({', '.join(plan.cases)}); --full runs the harness's thorough cases")
    return f"its invariants ({names}) applied to none of the harness's cases in this run"
