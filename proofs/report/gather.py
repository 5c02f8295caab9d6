"""Run each layer and turn what it says into the report's plain evidence objects.

This is the top floor: the one place (with ``proofs.cli``) that looks at all three layers.
``numeric`` and ``kernels`` (and through them NumPy, torch and Triton) are imported only
inside the functions that gather their evidence, so importing ``proofs`` stays light. A
layer that is not installed, or that does not cover a claim, yields evidence marked
"not checked by this layer" with the reason; an error raised while a layer checks a claim
it does cover is a failure of that claim, never a crash of the report.

The report reads the layers' own record types (``numeric.Confirmation``,
``kernels.harness.Check``, ``proofs.seed_audit.AuditRecord``). The variance figure draws the
dot-product-variance confirmation's own tests; the histogram, saturation and online-softmax figures
draw fresh samples from the numeric layer with the run's seed (``NUMERIC_FIGURES`` says which, and
each figure's caption says so); the kernel figures come from the kernel layer's own runs.

Triton's interpreter is the kernel layer's choice (``kernels.interpreter``), made before triton is imported
(``proofs.cli`` makes it for the command line; the test session's conftest for the tests).
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
import subprocess
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from proofs.report.model import (
    FAILED, LAYERS, NOT_A_CHECKOUT, NOT_CHECKED, PASSED, AuditEvidence, ClaimEvidence, FigureData, KernelEvidence, KernelSummary,
    NumericEvidence, ProofEvidence, Report, StepEvidence, plain,
)


@dataclass(frozen=True)
class Plan:
    """How much each layer runs. The confirmations' sample sizes are the numeric layer's own (registered
    quick sizes, or defaults); ``None`` elsewhere means the layer's own choice."""

    mode: str
    quick_confirmations: bool  # numeric.confirm at each claim's registered quick size, else its default
    histogram_dk: int
    histogram_samples: int
    histogram_bins: int
    saturation_dks: tuple[int, ...] | None  # None: the numeric layer's d_k sweep, less d_k = 1
    saturation_samples: int
    trace_dk: int  # one row of unscaled scores at this d_k for the online-softmax figure
    trace_length: int
    trace_block: int
    kernel_dtypes: tuple[str, ...] | None  # None: every dtype the device supports
    kernel_causal: bool
    kernel_gqa: bool
    kernel_backward: bool  # run the backward invariants (the kernel has a backward either way)
    kernel_thorough: bool
    kernel_cases: tuple[str, ...] | None  # names of the harness's cases to run; None: its own choice
    kernel_lengths: tuple[int, ...]
    kernel_length_dtypes: tuple[str, ...]


PLANS = {
    # Sized to finish within 60 s on a 2-core CPU with the kernel interpreted: small Monte
    # Carlo samples (the CIs are wider, and the report prints n) and a float32, forward-only
    # conformance check of the kernel on four of the harness's cases (full, causal GQA,
    # extreme logits, hugely negative rows), plus the error sweep over short lengths.
    "quick": Plan(
        mode="quick",
        quick_confirmations=True,
        histogram_dk=128, histogram_samples=20_000, histogram_bins=60,
        saturation_dks=(4, 16, 64, 256, 1024), saturation_samples=500,
        trace_dk=64, trace_length=512, trace_block=64,
        kernel_dtypes=("float32",), kernel_causal=True, kernel_gqa=True, kernel_backward=False,
        kernel_thorough=False, kernel_cases=("square", "gqa-causal", "extreme", "negative-rows"),
        kernel_lengths=(1, 37, 64, 127, 256), kernel_length_dtypes=("float32", "float16", "bfloat16"),
    ),
    # The layers' own default (large) sample sizes and the thorough kernel checks.
    "full": Plan(
        mode="full",
        quick_confirmations=False,
        histogram_dk=128, histogram_samples=1_000_000, histogram_bins=80,
        saturation_dks=None, saturation_samples=20_000,
        trace_dk=64, trace_length=1024, trace_block=64,
        kernel_dtypes=None, kernel_causal=True, kernel_gqa=True, kernel_backward=True,
        kernel_thorough=True, kernel_cases=None,
        kernel_lengths=(1, 37, 64, 127, 256, 513, 1024, 2048), kernel_length_dtypes=("float32", "float16", "bfloat16"),
    ),
}


def describe(plan: Plan, layers: tuple[str, ...] = LAYERS) -> str:
    """What a run does, in words, from the plan's own fields and the layers it runs (the report's "run" sentence)."""
    out = ["Every claim derived symbolically and its proof replayed by the checker." if "proofs" in layers
           else "The symbolic derivations not run (--layers)."]
    if "numeric" in layers:
        sizes = ("each claim's registered quick sample size" if plan.quick_confirmations
                 else "the numeric layer's default sample sizes")
        out.append(f"Monte Carlo confirmations at {sizes}; a passing one reads \"confirmed\" only where its power "
                   f"against the stated effect is at least the numeric layer's threshold ({_power_rule()}), else "
                   "\"consistent\".")
    else:
        out.append("The Monte Carlo layer not run (--layers).")
    if "kernels" in layers:
        dtypes = ", ".join(plan.kernel_dtypes) if plan.kernel_dtypes else "every dtype the device supports"
        direction = ("forward and backward" if plan.kernel_backward
                     else "forward only (the backward invariants are left out)")
        cases = (f"the harness's cases {', '.join(plan.kernel_cases)}" if plan.kernel_cases is not None
                 else f"the harness's {'thorough' if plan.kernel_thorough else 'default'} cases")
        out.append(f"The Triton kernel checked in {dtypes}, {direction}, on {cases}; its error measured against "
                   f"N = {', '.join(map(str, plan.kernel_lengths))} in {', '.join(plan.kernel_length_dtypes)}.")
    else:
        out.append("The kernel layer not run (--layers).")
    return " ".join(out)


def _power_rule() -> str:
    """numeric's rule for "confirmed", in numbers (read from the layer, which may be missing)."""
    try:
        from numeric import CONFIRMING_POWER, STATED_EFFECT
    except ImportError:
        return "the numeric layer is not installed"
    return f"power ≥ {CONFIRMING_POWER:g} against a {STATED_EFFECT:.0%} error"


@dataclass(frozen=True)
class Options:
    mode: str = "quick"
    seed: int = 0
    only: tuple[str, ...] | None = None
    layers: tuple[str, ...] = LAYERS
    jobs: int | None = None  # worker processes deriving the proofs; 0: inline; None: one per core but one
    survey: str | None = None  # a directory holding the ecosystem survey's survey.json, shown as a section

    def __post_init__(self):
        if self.mode not in PLANS:
            raise ValueError(f"mode {self.mode!r} is not one of {sorted(PLANS)}")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {self.seed!r}")
        if self.jobs is not None and (not isinstance(self.jobs, int) or isinstance(self.jobs, bool) or self.jobs < 0):
            raise ValueError(f"jobs must be a non-negative integer or None, got {self.jobs!r}")
        unknown = [x for x in self.layers if x not in LAYERS]
        if unknown:
            raise ValueError(f"layers {unknown} unknown; choose from {', '.join(LAYERS)}")
        if self.only is not None:
            from proofs import claim

            for cid in self.only:
                claim(cid)  # a clear ValueError naming the unknown id

    @property
    def plan(self) -> Plan:
        return PLANS[self.mode]


Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".strip()


def _absent(exc: BaseException) -> bool:
    """A layer that is not installed (its package, or one it needs), as opposed to one that breaks."""
    return isinstance(exc, ModuleNotFoundError)


def _skipped(layer: str) -> str:
    return f"layer {layer} not run (--layers)"


# --------------------------------------------------------------------------- proofs


def prove(claim_id: str) -> tuple[ProofEvidence, float]:
    """Derive one claim and keep what the report shows: steps as LaTeX, checks, verdict."""
    import sympy as sp

    from proofs import derive
    from proofs.render import step_latex, trust_lines

    start = time.perf_counter()
    try:
        d = derive(claim_id)
    except Exception as exc:  # a theorem that crashes has not proved its claim
        return ProofEvidence(FAILED, reason=f"derivation raised {_why(exc)}"), time.perf_counter() - start
    steps = [StepEvidence(number=n, rule=s.rule, description=s.description, latex=_safe(step_latex, s),
                          status="premise" if s.is_premise else (PASSED if s.passed else FAILED), detail=s.detail or "")
             for n, s in enumerate(d.steps, 1)]
    result = d.result.items() if isinstance(d.result, dict) else [("result", d.result)]
    results = [[str(name), _safe(sp.latex, value)] for name, value in result]
    reason, trusted = "; ".join(d.reasons), trust_lines(d)
    certificate = getattr(d, "certificate", None)
    lines = [reason, d.verdict_line, *trusted, *(s.detail for s in steps), *(s.description for s in steps)]
    return ProofEvidence(status=PASSED if d.verified else FAILED, reason=reason,
                         statement_latex=_safe(sp.latex, d.statement),
                         conjuncts_latex=[_safe(sp.latex, c) for c in (sp.And.make_args(d.statement)
                                                                        if isinstance(d.statement, sp.Basic) else [])],
                         steps=steps, results=results,
                         checked_steps=len(d.checked_steps), premises=len(d.steps) - len(d.checked_steps),
                         verdict_line=d.verdict_line, trusted=trusted, certificate=certificate,
                         formulas=formulas_in(lines, certificate)), time.perf_counter() - start


# How much of a formula's SymPy text the checker (trust lines) and the engine (a citation's description) keep.
_TEXT_CUTS = (160, 200)


def formulas_in(lines: list[str], certificate: dict | None) -> dict[str, str]:
    """Every expression of ``certificate`` (its statement, premises and step conclusions, and those of the
    certificates its citations carry) whose SymPy text, whole or cut as the checker cuts it, occurs in
    ``lines``: that text -> the expression's LaTeX."""
    import sympy as sp

    from proofs.checker import read_in

    found: dict[str, str] = {}
    text = "\n".join(x for x in lines if x)

    def visit(cert: dict) -> None:
        exprs = [cert.get("statement")] + [p.get("statement") for p in cert.get("premises", [])]
        exprs += [s.get("conclusion") for s in cert.get("steps", [])]
        for e in filter(None, exprs):
            try:
                expr = read_in(cert, e)
                whole = sp.sstr(expr)
            except Exception:  # an expression the reader refuses is shown as the checker wrote it
                continue
            for cut in {whole, *(whole[:n] for n in _TEXT_CUTS)}:
                if len(cut) > 2 and cut in text and cut not in found:
                    found[cut] = _safe(sp.latex, expr)
        for s in cert.get("steps", []):
            if isinstance(s.get("certificate"), dict):
                visit(s["certificate"])

    if certificate:
        visit(certificate)
    return found


def _safe(to_latex, x) -> str:
    try:
        return to_latex(x)
    except Exception:
        return str(x)


def gather_audit() -> AuditEvidence:
    from proofs.seed_audit import seed_audit

    try:
        records = seed_audit()
    except Exception as exc:
        return AuditEvidence(FAILED, f"seed_audit() raised {_why(exc)}")
    return AuditEvidence(PASSED, records=records)


# --------------------------------------------------------------------------- numeric


def _numeric():
    import numeric

    return numeric


_CONFIRMATION_FIELDS = ("description", "estimate", "claimed", "ci", "p_value", "alpha", "n_samples", "power",
                        "power_error", "tolerance")


def _confirmation_fields(c) -> dict:
    """The numbers of a numeric Confirmation, JSON-ready; its timing is left to the timings."""
    out = {name: plain(getattr(c, name)) for name in _CONFIRMATION_FIELDS}
    out["confirmed"] = bool(c.confirmed)
    return out


def confirm(numeric, claim_id: str, plan: Plan, seed: int):
    """(evidence, the Confirmation itself or None where confirming raised, seconds)."""
    start = time.perf_counter()
    try:
        c = numeric.confirm(claim_id, quick=plan.quick_confirmations, seed=seed)
        fields = _confirmation_fields(c)
        parts = [_confirmation_fields(p) for p in c.details]
    except Exception as exc:
        return NumericEvidence(FAILED, reason=f"confirm raised {_why(exc)}"), None, time.perf_counter() - start
    ok = fields.pop("confirmed")
    power = numeric.power_against(c, numeric.STATED_EFFECT)
    ev = NumericEvidence(PASSED if ok else FAILED,
                         reason="" if ok else "the samples reject the derived value at the stated α", parts=parts,
                         effect=numeric.STATED_EFFECT, effect_power=plain(power),
                         word=_numeric_word(ok, fields["p_value"] is not None, power, numeric.STATED_EFFECT,
                                            numeric.CONFIRMING_POWER), **fields)
    return ev, c, c.seconds


def _numeric_word(ok: bool, statistical: bool, power: float | None, effect: float, enough: float) -> str:
    """"confirmed" only for a pass with power >= ``enough`` against ``effect``, or for a floating-point
    check (no power: it holds within its rounding bound); a weaker or unmeasured pass is "consistent"."""
    if not ok:
        return "rejected"
    if not statistical or (power is not None and power >= enough):
        return "confirmed"
    if power is None:
        return f"consistent (power against a {effect:.0%} error not computed)"
    return f"consistent (power {power:.2f} against a {effect:.0%} error)"


def _derived_std():
    """Std(q·k) as a function of d_k, from the proved dot-product-variance derivation."""
    from numeric import derived

    return derived.in_d_k("dot-product-variance", "std")


def figure_variance(numeric, plan: Plan, seed: int, confirmations: dict) -> tuple[str, dict]:
    """The dot-product-variance confirmation's own per-d_k variance tests, over its derived values."""
    c = confirmations.get("dot-product-variance")
    if c is None:
        raise LookupError("the dot-product-variance confirmation did not run, so there is nothing to draw")
    rows = [{"d_k": p.point["d_k"], "estimate": plain(p.estimate), "ci": plain(list(p.ci)),
             "derived": plain(p.claimed), "confirmed": bool(p.confirmed)}
            for p in c.details if p.point.get("moment") == "variance"]
    return (f"Sample variance of q·k ({c.n_samples:,} samples per d_k) with its confidence interval, over the "
            "derived line Var(q·k) = d_k (log–log): the points the dot-product-variance confirmation tested.",
            {"rows": rows, "n_samples": c.n_samples})


def figure_histograms(numeric, plan: Plan, seed: int, confirmations: dict) -> tuple[str, dict]:
    import numpy as np

    d_k = plan.histogram_dk
    s = np.asarray(numeric.dot_product_samples(d_k, plan.histogram_samples, seed=seed), dtype=np.float64)
    panels = []
    for label, values in (("unscaled q·k", s), ("scaled q·k/√d_k", s / _derived_std()(d_k))):
        counts, edges = np.histogram(values, bins=plan.histogram_bins)
        panels.append({"label": label, "counts": plain(counts), "edges": plain(edges),
                       "std": float(values.std(ddof=1))})
    return (f"{plan.histogram_samples:,} scores q·k at d_k = {d_k}, before and after dividing by √d_k: "
            "the spread falls from about √d_k to about 1.",
            {"d_k": d_k, "n_samples": plan.histogram_samples, "panels": panels})


def figure_saturation(numeric, plan: Plan, seed: int, confirmations: dict) -> tuple[str, dict]:
    from numeric.dot_product import SWEEP_D_KS

    d_ks = list(plan.saturation_dks or [d for d in SWEEP_D_KS if d > 1])
    curves = numeric.saturation_curves(d_ks, plan.saturation_samples, seed=seed)
    return ("Mean maximum attention weight, mean entropy and mean Frobenius norm of the softmax Jacobian over "
            f"rows of d_k random scores ({plan.saturation_samples:,} rows per point): no scaling saturates, "
            "1/√d_k stays put, 1/d_k flattens towards uniform.",
            {"d_ks": d_ks, "n_samples": plan.saturation_samples, "curves": plain(curves)})


def figure_trace(numeric, plan: Plan, seed: int, confirmations: dict) -> tuple[str, dict]:
    import numpy as np

    # One row of scores as an unscaled model at d_k = trace_dk would see them (std √d_k, derived),
    # so the running max keeps climbing and the running sum is visibly rescaled.
    rng = np.random.default_rng(np.random.SeedSequence([seed, 7]))
    scores = rng.standard_normal(plan.trace_length) * _derived_std()(plan.trace_dk)
    trace = numeric.online_softmax_trace(scores, plan.trace_block)
    m = float(scores.max())
    return (f"One row of {plan.trace_length} scores streamed in key blocks of {plan.trace_block}: after each block "
            "the running max m and the running sum l = Σ exp(s − m), rescaled whenever m grows. Dashed: the "
            "direct max and sum over the whole row.",
            {"block_size": plan.trace_block, "running_max": plain(trace["running_max"]),
             "running_sum": plain(trace["running_sum"]), "direct_max": m,
             "direct_sum": float(np.exp(scores - m).sum())})


# name, title, the claim it illustrates, the function that gathers its data from numeric, and whether
# that function draws fresh samples (True) or reads the claim's confirmation (False)
NUMERIC_FIGURES = (
    ("variance", "Var(q·k) against d_k", "dot-product-variance", figure_variance, False),
    ("histograms", "Scores at d_k = 128, unscaled and scaled", "scaled-score-unit-variance", figure_histograms, True),
    ("saturation", "Softmax saturation against d_k for three scalings", "softmax-saturation", figure_saturation, True),
    ("online-softmax", "Online softmax: one row's running max and running sum", "online-softmax-unnormalised",
     figure_trace, True),
)


def figure_source(resamples: bool, seed: int) -> str:
    """The caption's sentence on where a figure's numbers come from (from NUMERIC_FIGURES' flag)."""
    if resamples:
        return f"Samples drawn for this figure (seed {seed}), apart from the confirmation's."
    return "The confirmation's own tests, not sampled again."


# The claim the kernel's error-against-length figure illustrates (the forward's rounding error against N):
# a run narrowed with --only runs that sweep only when it includes this claim.
KERNEL_ERROR_CLAIM = "rounding-attention-forward"

# Every figure a whole report draws, in order: the numeric ones, then the kernel layer's two.
FIGURES = tuple(name for name, *_ in NUMERIC_FIGURES) + ("kernel-error", "rounding-bounds")


# --------------------------------------------------------------------------- kernels


def figure_rounding(seed: int, samples: int = 8) -> FigureData:
    """Error of torch's CPU SDPA against N per dtype, beside the proved bounds and the empirical rule."""
    title = "Rounding error against N, with the proved bounds"
    try:
        import torch

        from kernels.rounding_confirmation import error_curve

        threads = torch.get_num_threads()
        try:
            data = error_curve(samples=samples, seed=seed)
        finally:
            torch.set_num_threads(threads)  # the confirmation runs single-threaded; the report does not
    except Exception as exc:
        return FigureData("rounding-bounds", title, "", NOT_CHECKED, f"could not gather the data: {_why(exc)}")
    return FigureData("rounding-bounds", title,
                      f"torch CPU SDPA against float64: per N, of {samples} random inputs the error nearest its proved "
                      "bound, with the deterministic bound (claim rounding-attention-forward), the probabilistic "
                      f"bound failing with probability ≤ {data['failure']:g} (rounding-attention-probabilistic) and "
                      "the empirical same-precision rule at that input.", PASSED, data=data)


def gather_kernels(plan: Plan, seed: int, progress: Progress = _quiet,
                   claim_ids: tuple[str, ...] | None = None) -> tuple[KernelSummary, list]:
    """Run the conformance harness on the project's kernel, then its error-against-length sweep.

    ``claim_ids`` (from --only): run only the invariants tied to these claims, and the
    error-against-length sweep only with the claim its figure illustrates (KERNEL_ERROR_CLAIM)."""
    try:
        import kernels
        from kernels import harness
        from kernels.flash.runtime import interpreting
        from kernels.harness.invariants import INVARIANTS
        from kernels.harness.report import Check, worst

        impl, verify = kernels.flash_attention, harness.verify_attention
    except Exception as exc:
        if _absent(exc):
            return KernelSummary(NOT_CHECKED, f"the kernel layer is not available: {_why(exc)}"), []
        return KernelSummary(FAILED, f"importing the kernel layer raised {_why(exc)}"), []
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    interpreted = interpreting()
    dtypes = list(plan.kernel_dtypes) if plan.kernel_dtypes else None
    summary = KernelSummary(
        PASSED, implementation=f"{impl.__module__}.{impl.__qualname__}",
        device=device if device == "cpu" else f"cuda ({torch.cuda.get_device_name(0)})",
        mode="interpreted by Triton's interpreter on the CPU" if interpreted else "compiled",
        settings={"causal": plan.kernel_causal, "gqa": plan.kernel_gqa, "backward invariants": plan.kernel_backward,
                  "thorough": plan.kernel_thorough, "seed": seed, "dtypes": dtypes or "all the device supports"})
    progress("kernels: conformance checks")
    try:
        cases = _cases(plan)
        if cases is not None:
            summary.settings["cases"] = [c.name for c in cases]
        # The kernel has a backward: a plan without it leaves the backward invariants out (they are "not run
        # in --quick"), never tells the harness the impl lacks one (that would make them "not applicable").
        invariants = None if plan.kernel_backward else [i.name for i in INVARIANTS if not i.backward]
        if claim_ids is not None:
            invariants = [i.name for i in INVARIANTS if i.claim_id in claim_ids
                          and (invariants is None or i.name in invariants)]
            if not invariants:
                summary.status, summary.reason = NOT_CHECKED, "no kernel invariant tests the claims chosen with --only"
                return summary, []
            summary.settings["invariants"] = invariants
        rep = verify(impl, device=device, dtypes=dtypes, causal=plan.kernel_causal, gqa=plan.kernel_gqa,
                     seed=seed, thorough=plan.kernel_thorough, cases=cases, invariants=invariants)
        checks = list(rep.checks)
    except Exception as exc:  # the harness itself broke: nothing about the kernel is known
        summary.status, summary.reason = FAILED, f"verify_attention raised {_why(exc)}"
        return summary, []
    summary.checks_run = len(checks)
    summary.failures = [c for c in checks if not c.passed]
    summary.dtypes = sorted({c.dtype for c in checks if c.dtype})
    summary.per_dtype = _grouped(checks, "dtype", worst)
    summary.per_invariant = _grouped(checks, "invariant", worst)
    problems = []
    if summary.failures:
        problems.append(f"{len(summary.failures)} of {len(checks)} conformance checks failed")
    elif not rep.passed:
        problems.append("the conformance report says it did not pass")

    if claim_ids is not None and KERNEL_ERROR_CLAIM not in claim_ids:  # --only: the sweep is not asked for
        summary.status = FAILED if summary.failures or not rep.passed else PASSED
        summary.reason = "; ".join(problems)
        return summary, checks
    progress("kernels: error against sequence length")
    nan = float("nan")
    try:
        records = harness.error_vs_length(impl, list(plan.kernel_lengths), list(plan.kernel_length_dtypes),
                                          device=device, seed=seed)
        summary.error_vs_length = [{key: plain(r[key]) for key in ("dtype", "n", "error", "bound", "passed")}
                                   for r in records]
    except Exception as exc:
        problems.append(f"error_vs_length raised {_why(exc)}")
        summary.failures.append(Check(invariant="error within bound", claim_id=None, case="error_vs_length",
                                      case_name="error_vs_length", dtype="", device=device, discrepancy=nan,
                                      bound=nan, passed=False, error=_why(exc)))
    for r in summary.error_vs_length:
        if not r["passed"]:
            summary.failures.append(Check(invariant="error within bound", claim_id=None, case=f"N = {r['n']}",
                                          case_name=f"length-{r['n']}", dtype=r["dtype"], device=device,
                                          discrepancy=r["error"], bound=r["bound"], passed=False))
    if summary.failures or not rep.passed:
        summary.status = FAILED
    summary.reason = "; ".join(problems)
    return summary, checks


def _cases(plan: Plan):
    """The harness's own cases named by the plan (None: let the harness choose)."""
    if plan.kernel_cases is None:
        return None
    from kernels.harness.cases import DEFAULT_CASES

    chosen = [c for c in DEFAULT_CASES if c.name in plan.kernel_cases]
    missing = set(plan.kernel_cases) - {c.name for c in chosen}
    if missing:
        raise ValueError(f"the harness has no cases named {sorted(missing)}")
    return chosen


def _grouped(checks: list, key: str, worst) -> list[dict]:
    """One row per dtype (or invariant): how many checks, how many failed, and the worst of them."""
    rows = []
    for value in sorted({getattr(c, key) for c in checks}):
        group = [c for c in checks if getattr(c, key) == value]
        ran = [c for c in group if c.applicable]
        w = worst(ran)
        row = {key: value, "checks": len(ran), "not_applicable": len(group) - len(ran),
               "failed": sum(not c.passed for c in ran), "worst": w, "worst_ratio": plain(w.ratio) if w else None}
        if key == "invariant":
            row["claim_ids"] = sorted({c.claim_id or "" for c in group})
        rows.append(row)
    return rows


def kernel_evidence(claim_id: str, summary: KernelSummary, checks: list, plan: Plan) -> KernelEvidence:
    """The kernel column of one claim: "conforms" only where a check tied to the claim ran and passed.

    Otherwise it says why nothing ran: the plan left the claim's invariants out (--quick), the
    implementation lacks the feature they need ("not applicable"), or no invariant tests the claim."""
    if summary.status == NOT_CHECKED:
        return KernelEvidence(NOT_CHECKED, summary.reason)
    mine = [c for c in checks if c.claim_id == claim_id]
    ran = [c for c in mine if c.applicable]
    if not ran:
        if mine:  # every check tied to the claim was judged not applicable by the harness
            lacks = sorted({c.detail for c in mine})
            return KernelEvidence(NOT_CHECKED, f"not applicable: {'; '.join(lacks)}", mine,
                                  sorted({c.invariant for c in mine}), sorted({c.dtype for c in mine}))
        if not checks:
            return KernelEvidence(NOT_CHECKED, f"the kernel checks did not run: {summary.reason}")
        return KernelEvidence(NOT_CHECKED, _why_not_run(claim_id, plan))
    from kernels.harness.report import worst

    failed = [c for c in ran if not c.passed]
    return KernelEvidence(FAILED if failed else PASSED,
                          f"{len(failed)} of {len(ran)} checks failed" if failed else "",
                          mine, sorted({c.invariant for c in ran}), sorted({c.dtype for c in ran}), worst(ran))


def _why_not_run(claim_id: str, plan: Plan) -> str:
    """Why no check of ``claim_id`` ran although the kernel layer did: from the harness's own invariants."""
    from kernels.harness.invariants import INVARIANTS

    tied = [i for i in INVARIANTS if i.claim_id == claim_id]
    if not tied:
        return "no kernel invariant tests this claim"
    names = ", ".join(i.name for i in tied)
    if not plan.kernel_backward and all(i.backward for i in tied):
        return f"not run in --{plan.mode}: its invariants ({names}) check the backward, which --full runs"
    if plan.kernel_cases is not None:
        return (f"not run in --{plan.mode}: its invariants ({names}) apply to none of the cases it runs "
                f"({', '.join(plan.kernel_cases)}); --full runs the harness's thorough cases")
    return f"its invariants ({names}) applied to none of the harness's cases in this run"


# --------------------------------------------------------------------------- sources


REPO = Path(__file__).resolve().parents[2]  # the checkout (or installed tree) the proofs package sits in


def seed_passage(s) -> dict:
    """A seed quote with its file and the seed's own title (the file names are hashes)."""
    from proofs.report.fmt import seed_title

    return {"file": s.file, "title": seed_title(s.file), "quote": s.quote}


def theorem_source(theorem: str) -> str:
    """A claim's theorem ("module:function") as the file that holds it and the function: "path.py:function",
    the path relative to the checkout (found without importing the theorem's module)."""
    module, function = theorem.split(":")
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin:
        return f"{module} (not found):{function}"
    path = Path(spec.origin).resolve()
    return f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path}:{function}"


def source_commit(root: Path = REPO) -> str:
    """The git commit the report's code was run from ("<sha>", "<sha> with uncommitted changes"), or
    NOT_A_CHECKOUT when ``root`` is not the top of a git work tree (an installed package, a tarball)."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30)
        if done.returncode:
            raise OSError(done.stderr.strip())
        return done.stdout.strip()

    try:
        if Path(git("rev-parse", "--show-toplevel")).resolve() != root.resolve():
            return NOT_A_CHECKOUT  # inside some other repository (e.g. a virtualenv in a project)
        commit = git("rev-parse", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):  # no git, or no repository here
        return NOT_A_CHECKOUT
    return commit + (" with uncommitted changes" if changed else "")


# --------------------------------------------------------------------------- environment


# How proofs.identity seeds its probes; tests/test_report_gather.py checks the engine does this.
PROBE_SEEDING = ("identity probes draw their points from random.Random seeded with the SHA-256 of the identity's "
                 "own expression (deterministic, independent of --seed)")

_PACKAGES = ("attention-proofs", "sympy", "numpy", "scipy", "torch", "triton", "matplotlib", "latex2mathml", "rich")


def environment(options: Options, kernels: KernelSummary) -> dict:
    versions = {}
    for name in _PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return {
        "commit": source_commit(),
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
        "cpus": os.cpu_count(),
        "packages": versions,
        "kernel_device": kernels.device or "not run",
        "kernel_mode": kernels.mode or "not run",
        "seeds": {
            "seed": options.seed,
            "numeric": f"numeric.confirm(..., seed={options.seed}) and the figures' samplers",
            "kernels": f"verify_attention(..., seed={options.seed})",
            "proofs": PROBE_SEEDING,
        },
    }


# --------------------------------------------------------------------------- the whole report


def _jobs(options: Options) -> int:
    return options.jobs if options.jobs is not None else (os.cpu_count() or 1) - 1


def _audit_wanted(options: Options) -> bool:
    # The audit is about the seed documents, not about a selection of claims, and it takes seconds:
    # a run narrowed with --only leaves it out (and says so).
    return options.only is None


def _audit_skipped() -> AuditEvidence:
    return AuditEvidence(NOT_CHECKED, "the audit of the seeds runs with the whole catalogue, not with --only")


def _start_proofs(claim_ids: list[str], jobs: int, audit: bool):
    """Derive in worker processes while this one runs the other layers (SymPy is single-threaded).

    Forked, so the workers start at once and share this process's state; None where forking is
    not available or one process was asked for."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    if jobs < 1 or "fork" not in multiprocessing.get_all_start_methods():
        return None
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork"))
    audit = pool.submit(gather_audit if audit else _audit_skipped)  # the longest task first
    return pool, audit, {cid: pool.submit(prove, cid) for cid in claim_ids}


def _collect_proofs(pending, per_claim) -> tuple[dict, AuditEvidence]:
    pool, audit_future, futures = pending
    proof_ev = {}
    try:
        for cid, future in futures.items():
            try:
                proof_ev[cid], per_claim.setdefault(cid, {})["proofs"] = future.result()
            except Exception as exc:  # a worker that died (e.g. out of memory) proves nothing
                proof_ev[cid] = ProofEvidence(FAILED, reason=f"the derivation's worker failed: {_why(exc)}")
        try:
            audit = audit_future.result()
        except Exception as exc:
            audit = AuditEvidence(FAILED, f"the audit's worker failed: {_why(exc)}")
    finally:
        pool.shutdown(cancel_futures=True)
    return proof_ev, audit


def _prove_inline(claim_ids: list[str], per_claim, progress: Progress, audit: bool) -> tuple[dict, AuditEvidence]:
    proof_ev = {}
    for cid in claim_ids:
        progress(f"proofs: {cid}")
        proof_ev[cid], per_claim.setdefault(cid, {})["proofs"] = prove(cid)
    if not audit:
        return proof_ev, _audit_skipped()
    progress("proofs: audit of the seeds")
    return proof_ev, gather_audit()


def gather(options: Options, progress: Progress = _quiet) -> Report:
    from proofs import CLAIMS

    plan, seed = options.plan, options.seed
    started = time.perf_counter()
    survey = gather_survey(options.survey)  # first: a missing survey file is refused before the long run
    seconds: dict[str, float] = {}
    per_claim: dict[str, dict[str, float]] = {}
    claims = [c for c in CLAIMS if options.only is None or c.id in options.only]
    selected = {c.id for c in claims}

    proofs_on = "proofs" in options.layers
    ids = [c.id for c in claims]
    pending = _start_proofs(ids, _jobs(options), _audit_wanted(options)) if proofs_on else None
    if proofs_on and pending is None:  # one core: derive first, inline
        proof_ev, audit = _prove_inline(ids, per_claim, progress, _audit_wanted(options))
        seconds["proofs"] = time.perf_counter() - started

    t = time.perf_counter()
    numeric_ev, confirmations, figures = {}, {}, []
    missing = _skipped("numeric") if "numeric" not in options.layers else ""
    numeric, confirmable, problems = None, set(), []
    if not missing:
        try:
            numeric = _numeric()
            confirmable = set(numeric.CONFIRMABLE)
        except Exception as exc:
            missing = f"the Monte Carlo layer is not available: {_why(exc)}"
            if not _absent(exc):
                missing = f"importing the Monte Carlo layer raised {_why(exc)}"
                problems.append(f"numeric: {missing}")
    for c in claims:
        if missing:
            numeric_ev[c.id] = NumericEvidence(NOT_CHECKED, missing)
        elif c.id not in confirmable:
            numeric_ev[c.id] = NumericEvidence(NOT_CHECKED, "numeric does not confirm this claim (no empirical side)")
        else:
            progress(f"numeric: {c.id}")
            evidence, confirmation, per_claim.setdefault(c.id, {})["numeric"] = confirm(numeric, c.id, plan, seed)
            numeric_ev[c.id] = evidence
            if confirmation is not None:
                confirmations[c.id] = confirmation
    for name, title, claim_id, fn, resamples in NUMERIC_FIGURES:
        if claim_id not in selected:
            continue
        if missing:
            figures.append(FigureData(name, title, "", NOT_CHECKED, missing))
            continue
        progress(f"figures: {name}")
        try:
            caption, data = fn(numeric, plan, seed, confirmations)
            figures.append(FigureData(name, title, f"{caption} {figure_source(resamples, seed)}", PASSED,
                                      data=dict(data, resampled=resamples)))
        except Exception as exc:
            figures.append(FigureData(name, title, "", NOT_CHECKED, f"could not gather the data: {_why(exc)}"))
    seconds["numeric"] = time.perf_counter() - t

    t = time.perf_counter()
    if "kernels" in options.layers:
        kernels, checks = gather_kernels(plan, seed, progress, options.only)
    else:
        kernels, checks = KernelSummary(NOT_CHECKED, _skipped("kernels")), []
    records = kernels.error_vs_length
    figures.append(FigureData(
        "kernel-error", "Kernel error against sequence length",
        f"Maximum absolute error of {kernels.implementation or 'the kernel'}, {kernels.mode or 'not run'}, against "
        "a float64 reference for Nq = Nk = N, per dtype, with the bound from the same-precision-reference rule "
        "(dashed).",
        PASSED if records else NOT_CHECKED,
        "" if records else (f"the error-against-length sweep runs with claim {KERNEL_ERROR_CLAIM}, which --only left out"
                            if options.only is not None and KERNEL_ERROR_CLAIM not in options.only
                            else kernels.reason or "no error-against-length data"),
        {"records": records}))
    if "kernels" in options.layers and "rounding-attention-forward" in selected:
        progress("figures: rounding-bounds")
        figures.append(figure_rounding(seed, samples=2 if plan.quick_confirmations else 8))
    kernel_ev = {c.id: kernel_evidence(c.id, kernels, checks, plan) for c in claims}
    if kernels.status == FAILED and not checks:  # the layer broke before any check could speak
        problems.append(f"kernels: {kernels.reason}")
    seconds["kernels"] = time.perf_counter() - t

    if not proofs_on:
        proof_ev = {c.id: ProofEvidence(NOT_CHECKED, _skipped("proofs")) for c in claims}
        audit = AuditEvidence(NOT_CHECKED, _skipped("proofs"))
    elif pending is not None:  # the derivations ran beside the other layers; collect them
        progress("proofs: collecting the derivations")
        proof_ev, audit = _collect_proofs(pending, per_claim)
    # Wall time from the start until the derivations were in: with workers, it overlaps the others.
    seconds["proofs"] = time.perf_counter() - started if pending is not None else seconds.get("proofs", 0.0)
    # With --only, the failures of other claims' invariants are not this run's business.
    kernels.failures = [f for f in kernels.failures if f.claim_id is None or f.claim_id in selected]

    evidence = [ClaimEvidence(id=c.id, title=c.title, statement=c.prose, assumptions=list(c.assumptions),
                              seeds=[seed_passage(s) for s in c.seeds], topic=c.topic, proofs=proof_ev[c.id],
                              numeric=numeric_ev[c.id], kernels=kernel_ev[c.id], references=list(c.references),
                              theorem=theorem_source(c.theorem)) for c in claims]
    seconds["total"] = time.perf_counter() - started
    run = {"mode": plan.mode, "summary": describe(plan, options.layers), "seed": seed, "only": list(options.only) if options.only else None,
           "layers": list(options.layers), "plan": plain(plan)}
    timings = {"generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "proofs_in_parallel": pending is not None,
               "seconds": {k: round(v, 3) for k, v in seconds.items()},
               "claims": {cid: {k: round(v, 3) for k, v in d.items()} for cid, d in per_claim.items()}}
    if audit.status == FAILED:
        problems.append(f"proofs: {audit.reason}")
    return Report(run, evidence, kernels, audit, figures, environment(options, kernels), timings, problems,
                  survey)


def gather_survey(out_dir: str | None) -> dict:
    """The survey's table as kernels.ecosystem renders it (a written file: nothing is re-run)."""
    if out_dir is None:
        return {}
    from kernels.ecosystem.table import report_data

    return report_data(out_dir)
