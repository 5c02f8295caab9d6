"""Ask each layer for its evidence and turn the answers into the report's plain evidence objects.

This is the top floor: the one place (with ``proofs.cli``) that looks at all three layers. The proofs
layer is asked claim by claim (``prove``). Each layer above it answers through one entry point,
``evidence_for(claim_ids, plan)`` (``ENTRY_POINTS``: ``numeric.report_evidence``, ``kernels.evidence``),
imported only when the layer is asked, so importing ``proofs`` stays light; the layer checks its plan,
runs, and answers with plain records (``numeric.Confirmation``, ``kernels.harness.Check``), each claim's
own errors inside them. A layer that is not installed, not run, or that does not cover a claim yields
evidence marked "not checked by this layer" with the reason; a layer that raises as a whole fails the run.

The variance figure draws the dot-product-variance confirmation's own tests; the histogram, saturation and
online-softmax figures draw fresh samples with the run's seed (``numeric.report_evidence.FIGURES`` says
which, and each figure's caption says so); the kernel figures come from the kernel layer's own runs.

Triton's interpreter is the kernel layer's choice (``kernels.interpreter``), made before triton is imported
(``proofs.cli`` makes it for the command line; the test session's conftest for the tests).
"""
from __future__ import annotations

import importlib
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

from proofs.latex import latex
from proofs.report.model import (
    FAILED, LAYERS, NOT_A_CHECKOUT, NOT_CHECKED, PASSED, AuditEvidence, ClaimEvidence, FigureData, KernelEvidence,
    KernelSummary, NumericEvidence, ProofEvidence, Report, StepEvidence, plain,
)


@dataclass(frozen=True)
class Plan:
    """How much each layer runs: the arguments of each layer's own plan (``numeric.report_evidence.Plan``,
    ``kernels.evidence.Plan``), which checks them; the run's seed is added when the layer is asked."""

    mode: str
    numeric: dict
    kernels: dict


PLANS = {
    # Sized for about 100 s on a 2-core CPU with the kernel interpreted (96.7 s wall, 129 CPU-s on 2026-12-02): each confirmation at its registered
    # quick size (the report prints n and the power), and a float32, forward-only conformance check of the
    # kernel on four of the harness's cases (full, causal GQA, extreme logits, hugely negative rows), plus the
    # error sweep over short lengths.
    "quick": Plan(
        mode="quick",
        numeric=dict(quick=True, histogram_dk=128, histogram_samples=20_000, histogram_bins=60,
                     saturation_dks=(4, 16, 64, 256, 1024), saturation_samples=500,
                     trace_dk=64, trace_length=512, trace_block=64),
        kernels=dict(mode="quick", dtypes=("float32",), causal=True, gqa=True, backward=False, thorough=False,
                     cases=("square", "gqa-causal", "extreme", "negative-rows"),
                     lengths=(1, 37, 64, 127, 256), length_dtypes=("float32", "float16", "bfloat16"),
                     rounding_samples=2, figure_grid="quick"),
    ),
    # The layers' own default (large) sample sizes and the thorough kernel checks.
    "full": Plan(
        mode="full",
        numeric=dict(quick=False, histogram_dk=128, histogram_samples=1_000_000, histogram_bins=80,
                     saturation_dks=None, saturation_samples=20_000, trace_dk=64, trace_length=1024, trace_block=64),
        kernels=dict(mode="full", dtypes=None, causal=True, gqa=True, backward=True, thorough=True, cases=None,
                     lengths=(1, 37, 64, 127, 256, 513, 1024, 2048),
                     length_dtypes=("float32", "float16", "bfloat16"), rounding_samples=8,
                     figure_grid="full"),
    ),
}


def describe(plan: Plan, layers: tuple[str, ...] = LAYERS, kernel_ran: bool = True) -> str:
    """What a run does, in words, from the plan's own fields and the layers it runs (the report's "run" sentence);
    ``kernel_ran`` False: the kernel layer answered without running anything (no chosen claim concerns it)."""
    n, k = plan.numeric, plan.kernels
    out = ["Every claim derived symbolically and its proof replayed by the checker." if "proofs" in layers
           else "The symbolic derivations not run (--layers)."]
    if "numeric" in layers:
        sizes = "each claim's registered quick sample size" if n["quick"] else "the numeric layer's default sample sizes"
        out.append(f"Monte Carlo confirmations at {sizes}; a passing one reads \"confirmed\" only where its power "
                   f"against the stated effect is at least the numeric layer's threshold ({_power_rule()}), else "
                   "\"consistent\".")
    else:
        out.append("The Monte Carlo layer not run (--layers).")
    if "kernels" in layers and not kernel_ran:
        out.append("The Triton kernel not run: no kernel invariant, sweep or figure concerns the claims chosen.")
    elif "kernels" in layers:
        dtypes = ", ".join(k["dtypes"]) if k["dtypes"] else "every dtype the device supports"
        direction = "forward and backward" if k["backward"] else "forward only (the backward invariants are left out)"
        cases = (f"the harness's cases {', '.join(k['cases'])}" if k["cases"] is not None
                 else f"the harness's {'thorough' if k['thorough'] else 'default'} cases")
        out.append(f"The Triton kernel checked in {dtypes}, {direction}, on {cases}; its error measured against "
                   f"N = {', '.join(map(str, k['lengths']))} in {', '.join(k['length_dtypes'])}.")
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
        return ProofEvidence(status=FAILED, reason=f"derivation raised {_why(exc)}"), time.perf_counter() - start
    steps = [StepEvidence(number=n, rule=s.rule, description=s.description, latex=_safe(step_latex, s),
                          status="premise" if s.is_premise else (PASSED if s.passed else FAILED), detail=s.detail or "")
             for n, s in enumerate(d.steps, 1)]
    result = d.result.items() if isinstance(d.result, dict) else [("result", d.result)]
    # [name, LaTeX] for a value, [name, "", text] for a result that is words (a reference, a note)
    results = [[str(name), "", value] if isinstance(value, str) else [str(name), _safe(latex, value)]
               for name, value in result]
    reason, trusted = "; ".join(d.reasons), trust_lines(d)
    certificate = getattr(d, "certificate", None)
    lines = [reason, d.verdict_line, *trusted, *(s.detail for s in steps), *(s.description for s in steps)]
    return ProofEvidence(status=PASSED if d.verified else FAILED, reason=reason,
                         statement_latex=_safe(latex, d.statement),
                         # in SymPy's order for an And (its args are a set, whose order changes between runs)
                         conjuncts_latex=[_safe(latex, c) for c in (
                             sorted(sp.And.make_args(d.statement), key=sp.default_sort_key)
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

    from proofs.checker import _printable, read_in

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
            texts = {whole: expr, **{whole[:n]: expr for n in _TEXT_CUTS}}
            if isinstance(expr, sp.Eq):  # a theorem's description may write a relation as "lhs = rhs"
                texts[f"{sp.sstr(expr.lhs)} = {sp.sstr(expr.rhs)}"] = expr
            # a part alone (a side, an instance the checker names), where its text is more than a name: a name
            # would match any prose
            for part in sp.preorder_traversal(expr):
                if isinstance(part, sp.Basic) and not part.is_Atom:
                    part_text = sp.sstr(part)
                    if any(ch in part_text for ch in "([*") and part_text in text:
                        texts.setdefault(part_text, part)
            # the checker's lines escape what does not print (a Matrix's newline as \u000a) after cutting
            texts.update({_printable(t): v for t, v in list(texts.items())})
            for cut, value in texts.items():
                if len(cut) > 2 and cut in text and cut not in found:
                    found[cut] = _safe(latex, value)
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


def gather_audit(training: dict | None = None) -> AuditEvidence:
    """The seed audit; ``training`` (the numeric layer's training-experiment evidence) decides its record on
    unscaled training, which otherwise says the experiment did not run."""
    from proofs.seed_audit import seed_audit

    try:
        records = seed_audit(training=training)
    except Exception as exc:
        return AuditEvidence(status=FAILED, reason=f"seed_audit() raised {_why(exc)}")
    return AuditEvidence(status=PASSED, records=records)


# --------------------------------------------------------------------------- asking the layers

# Each layer above proofs answers through one entry point, ``evidence_for(claim_ids, plan)``, in one module,
# with that module's ``Plan``: (layer, entry point module, what the layer is called in a reason).
ENTRY_POINTS = (("numeric", "numeric.report_evidence", "the Monte Carlo layer"),
                ("kernels", "kernels.evidence", "the kernel layer"))

# The claim the kernel's error-against-length and rounding figures illustrate: a run narrowed with --only
# runs that sweep only when it includes this claim (kernels.evidence.ERROR_CLAIM says the same to the layer).
KERNEL_ERROR_CLAIM = "rounding-attention-forward"

# Every figure a whole report can draw, with its title and the claim it illustrates: the numeric layer's
# (numeric.report_evidence.FIGURES gathers their data; tests/test_report_gather.py checks the two agree, and its
# training figure), then the kernel layer's four (KERNEL_FIGURES).
FIGURE_TITLES = {
    "variance": ("Var(q·k) against d_k", "dot-product-variance"),
    "histograms": ("Scores at d_k = 128, unscaled and scaled", "scaled-score-unit-variance"),
    "saturation": ("Softmax saturation against d_k for three scalings", "softmax-saturation"),
    "online-softmax": ("Online softmax: one row's running max and running sum", "online-softmax-unnormalised"),
    "kernel-error": ("Kernel error against sequence length", KERNEL_ERROR_CLAIM),
    "rounding-bounds": ("Rounding error against N, with the proved bounds", KERNEL_ERROR_CLAIM),
    "traffic": ("HBM traffic of the kernels against N, measured and derived", "memory-traffic"),
    "memory": ("Peak extra memory against N, this kernel and SDPA's math backend", "memory-traffic"),
    # the seed audit's training record, not a claim: drawn whenever the audit runs the experiment
    "training": ("Training loss of one attention layer per d_k and scaling", ""),
}
FIGURES = tuple(FIGURE_TITLES)
KERNEL_FIGURES = ("kernel-error", "rounding-bounds", "traffic", "memory")  # the kernel layer's; the rest numeric's


@dataclass
class Asked:
    """One layer's answer, or why there is none: ``absent`` (not installed, or not run) is "not checked";
    ``broken`` (it raised as a whole) fails the run."""

    answer: object = None
    absent: str = ""
    broken: str = ""

    @property
    def reason(self) -> str:
        return self.absent or self.broken


def ask(layer: str, module: str, what: str, claim_ids: tuple[str, ...], plan_args: dict) -> Asked:
    """Import the layer's entry point, make its plan (the layer checks it) and ask it about ``claim_ids``."""
    try:
        entry = importlib.import_module(module)
    except ModuleNotFoundError as exc:  # the layer, or a package it needs, is not installed
        return Asked(absent=f"{what} is not available: {_why(exc)}")
    except Exception as exc:
        return Asked(broken=f"importing {what} raised {_why(exc)}")
    try:
        return Asked(answer=entry.evidence_for(claim_ids, entry.Plan(**plan_args)))
    except Exception as exc:  # the layer broke as a whole (one claim's failure is in its answer)
        return Asked(broken=f"{what} raised {_why(exc)}")


_CONFIRMATION_FIELDS = ("description", "estimate", "claimed", "ci", "p_value", "alpha", "n_samples", "power",
                        "power_error", "tolerance")


def _confirmation_fields(c) -> dict:
    """The numbers of a numeric Confirmation, JSON-ready; its timing is left to the timings."""
    out = {name: plain(getattr(c, name)) for name in _CONFIRMATION_FIELDS}
    out["confirmed"] = bool(c.confirmed)
    return out


def numeric_evidence(claim_id: str, asked: Asked) -> NumericEvidence:
    """One claim's Monte Carlo column from the numeric layer's answer."""
    if asked.answer is None:
        return NumericEvidence(status=NOT_CHECKED, reason=asked.reason)
    a = asked.answer.claims.get(claim_id)
    if a is None:
        return NumericEvidence(status=NOT_CHECKED, reason="numeric does not confirm this claim (no empirical side)")
    if a.confirmation is None:
        return NumericEvidence(status=FAILED, reason=a.error)
    c = a.confirmation
    fields = _confirmation_fields(c)
    ok = fields.pop("confirmed")
    return NumericEvidence(status=PASSED if ok else FAILED,
                           reason="" if ok else "the samples reject the derived value at the stated α",
                           parts=[_confirmation_fields(p) for p in c.details], effect=a.effect,
                           effect_power=plain(a.effect_power), word=a.word, **fields)


def numeric_figures(asked: Asked, selected: set[str]) -> list[FigureData]:
    """The numeric layer's figures for the chosen claims: its data, or why there is none."""
    if asked.answer is None:
        return [FigureData(name=name, title=title, caption="", status=NOT_CHECKED, reason=asked.reason)
                for name, (title, claim_id) in FIGURE_TITLES.items()
                if claim_id in selected and name not in KERNEL_FIGURES]
    return [FigureData(name=f.name, title=FIGURE_TITLES[f.name][0], caption=f.caption,
                       status=NOT_CHECKED if f.error else PASSED, reason=f.error,
                       data={} if f.error else dict(f.data, resampled=f.resampled))
            for f in asked.answer.figures]


def kernel_summary(asked: Asked, options: Options) -> KernelSummary:
    """What the kernel layer ran, once for the whole report."""
    if asked.answer is None:
        return KernelSummary(status=FAILED if asked.broken else NOT_CHECKED, reason=asked.reason)
    a = asked.answer
    if a.error:
        return KernelSummary(status=FAILED, reason=a.error, implementation=a.implementation, device=a.device,
                             mode=a.mode, settings=a.settings)
    if options.only is not None and not a.checks and not a.swept:
        return KernelSummary(status=NOT_CHECKED, reason="no kernel invariant tests the claims chosen with --only",
                             implementation=a.implementation, device=a.device, mode=a.mode, settings=a.settings)
    problems = []
    failed = [c for c in a.checks if not c.passed]
    if failed:
        problems.append(f"{len(failed)} of {len(a.checks)} conformance checks failed")
    elif not a.passed:
        problems.append("the conformance report says it did not pass")
    problems += [f"error_vs_length raised {c.error}" for c in a.failures if c.case == "error_vs_length"]
    # With --only, the failures of other claims' invariants are not this run's business.
    failures = [f for f in a.failures if f.claim_id is None or options.only is None or f.claim_id in options.only]
    return KernelSummary(status=FAILED if failures or not a.passed else PASSED, reason="; ".join(problems),
                         implementation=a.implementation, device=a.device, mode=a.mode,
                         dtypes=sorted({c.dtype for c in a.checks if c.dtype}), settings=a.settings,
                         checks_run=len(a.checks), failures=failures, per_dtype=a.per_dtype,
                         per_invariant=a.per_invariant,
                         error_vs_length=[{k: plain(v) for k, v in r.items()} for r in a.error_vs_length])


def kernel_evidence(claim_id: str, asked: Asked, summary: KernelSummary) -> KernelEvidence:
    """The kernel column of one claim: "conforms" only where a check tied to the claim ran and passed;
    otherwise why nothing ran, in the kernel layer's words."""
    if asked.answer is None or asked.answer.error:
        return KernelEvidence(status=NOT_CHECKED, reason=summary.reason if asked.answer is None
                              else f"the kernel checks did not run: {summary.reason}")
    mine = asked.answer.claims.get(claim_id)
    if mine is None or not mine.checks:
        return KernelEvidence(status=NOT_CHECKED, reason=mine.why_none_ran if mine else
                              "no kernel invariant tests this claim")
    if not mine.ran:
        return KernelEvidence(status=NOT_CHECKED, reason=mine.why_none_ran, checks=mine.checks,
                              invariants=sorted({c.invariant for c in mine.checks}),
                              dtypes=sorted({c.dtype for c in mine.checks}))
    failed = mine.failed
    return KernelEvidence(status=FAILED if failed else PASSED,
                          reason=f"{len(failed)} of {len(mine.ran)} checks failed" if failed else "",
                          checks=mine.checks, invariants=sorted({c.invariant for c in mine.ran}),
                          dtypes=sorted({c.dtype for c in mine.ran}), worst=mine.worst)


def kernel_figures(asked: Asked, summary: KernelSummary, options: Options) -> list[FigureData]:
    """The error-against-length figure (always listed) and the rounding figure (with its claim)."""
    a = asked.answer
    records = summary.error_vs_length
    left_out = options.only is not None and KERNEL_ERROR_CLAIM not in options.only
    error = FigureData(
        name="kernel-error", title=FIGURE_TITLES["kernel-error"][0],
        caption=(f"Maximum absolute error of {summary.implementation or 'the kernel'}, {summary.mode or 'not run'}, "
                 "against a float64 reference for Nq = Nk = N, per dtype, with the bound from the "
                 "same-precision-reference rule (dashed)."),
        status=PASSED if records else NOT_CHECKED,
        reason="" if records else (f"the error-against-length sweep runs with claim {KERNEL_ERROR_CLAIM}, which --only "
                                   "left out" if left_out else summary.reason or "no error-against-length data"),
        data={"records": records})
    measured = measured_figures(asked, options)
    if left_out or "kernels" not in options.layers:
        return [error, *measured]
    title = FIGURE_TITLES["rounding-bounds"][0]
    if a is None or a.rounding is None:
        why = (a.rounding_error if a is not None and a.rounding_error else summary.reason) or "not run"
        return [error, FigureData(name="rounding-bounds", title=title, caption="", status=NOT_CHECKED,
                                  reason=f"could not gather the data: {why}"), *measured]
    data = a.rounding
    return [error, FigureData(
        name="rounding-bounds", title=title, status=PASSED, data=data,
        caption=(f"torch CPU SDPA against float64: per N, of {data['samples']} random inputs the error nearest its "
                 "proved bound, with the deterministic bound (claim rounding-attention-forward), the probabilistic "
                 f"bound failing with probability ≤ {data['failure']:g} (rounding-attention-probabilistic) and the "
                 "empirical same-precision rule at that input.")), *measured]


def measured_figures(asked: Asked, options: Options) -> list[FigureData]:
    """The traffic and memory figures as the kernel layer measured and captioned them (kernels.evidence's
    FigureRecord), with their claim; not checked, with the reason, when the layer did not answer."""
    if options.only is not None and FIGURE_TITLES["traffic"][1] not in options.only:
        return []
    a = asked.answer
    if a is None or a.error:
        why = asked.reason if a is None else a.error
        return [FigureData(name=name, title=FIGURE_TITLES[name][0], caption="", status=NOT_CHECKED, reason=why)
                for name in ("traffic", "memory")]
    return [FigureData(name=f.name, title=FIGURE_TITLES[f.name][0], caption=f.caption,
                       status=NOT_CHECKED if f.error else PASSED, reason=f.error, data=f.data)
            for f in getattr(a, "figures", [])]


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
PROBE_SEEDING = ("identity probes (run only where the two sides do not reduce to each other exactly) draw their "
                 "points from random.Random seeded with the SHA-256 of the identity's own expression "
                 "(deterministic, independent of --seed)")

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
    return AuditEvidence(status=NOT_CHECKED, reason="the audit of the seeds runs with the whole catalogue, not with --only")


def _start_proofs(claim_ids: list[str], jobs: int):
    """Derive in worker processes while this one runs the other layers (SymPy is single-threaded).

    Forked, so the workers start at once and share this process's state; None where forking is
    not available or one process was asked for. The audit joins the pool once the numeric layer has answered."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    if jobs < 1 or "fork" not in multiprocessing.get_all_start_methods():
        return None
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork"))
    return pool, {cid: pool.submit(prove, cid) for cid in claim_ids}


def _collect_proofs(pending, per_claim, audit_future) -> tuple[dict, AuditEvidence]:
    pool, futures = pending
    proof_ev = {}
    try:
        for cid, future in futures.items():
            try:
                proof_ev[cid], per_claim.setdefault(cid, {})["proofs"] = future.result()
            except Exception as exc:  # a worker that died (e.g. out of memory) proves nothing
                proof_ev[cid] = ProofEvidence(status=FAILED, reason=f"the derivation's worker failed: {_why(exc)}")
        audit = _audit_skipped()
        if audit_future is not None:
            try:
                audit = audit_future.result()
            except Exception as exc:
                audit = AuditEvidence(status=FAILED, reason=f"the audit's worker failed: {_why(exc)}")
    finally:
        pool.shutdown(cancel_futures=True)
    return proof_ev, audit


def _prove_inline(claim_ids: list[str], per_claim, progress: Progress) -> dict:
    proof_ev = {}
    for cid in claim_ids:
        progress(f"proofs: {cid}")
        proof_ev[cid], per_claim.setdefault(cid, {})["proofs"] = prove(cid)
    return proof_ev


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
    pending = _start_proofs(ids, _jobs(options)) if proofs_on else None
    if proofs_on and pending is None:  # one core: derive first, inline
        proof_ev = _prove_inline(ids, per_claim, progress)
        seconds["proofs"] = time.perf_counter() - started

    # The layers above proofs, each asked once through its entry point, in turn.
    asked: dict[str, Asked] = {}
    for layer, module, what in ENTRY_POINTS:
        t = time.perf_counter()
        if layer not in options.layers:
            asked[layer] = Asked(absent=_skipped(layer))
        else:
            progress(f"{layer}: {len(ids)} claims")
            args = dict(getattr(plan, layer), seed=seed)
            if layer == "numeric":  # the training experiment feeds the seed audit only
                args["training"] = proofs_on and _audit_wanted(options)
            asked[layer] = ask(layer, module, what, tuple(ids), args)
        seconds[layer] = time.perf_counter() - t
    for cid, took in getattr(asked["numeric"].answer, "seconds", {}).items():
        per_claim.setdefault(cid, {})["numeric"] = took
    problems = [f"{layer}: {a.broken}" for layer, a in asked.items() if a.broken]
    numeric_ev = {c.id: numeric_evidence(c.id, asked["numeric"]) for c in claims}
    kernels = kernel_summary(asked["kernels"], options)
    if getattr(asked["kernels"].answer, "error", ""):  # the harness broke before any check could speak
        problems.append(f"kernels: {kernels.reason}")
    kernel_ev = {c.id: kernel_evidence(c.id, asked["kernels"], kernels) for c in claims}
    figures = numeric_figures(asked["numeric"], selected) + kernel_figures(asked["kernels"], kernels, options)

    # The audit asks for the training experiment's evidence, so it starts once the numeric layer has answered.
    training = getattr(asked["numeric"].answer, "training", None)
    if not proofs_on:
        proof_ev = {c.id: ProofEvidence(status=NOT_CHECKED, reason=_skipped("proofs")) for c in claims}
        audit = AuditEvidence(status=NOT_CHECKED, reason=_skipped("proofs"))
    elif pending is not None:  # the derivations ran beside the other layers; collect them
        audit_future = pending[0].submit(gather_audit, training) if _audit_wanted(options) else None
        progress("proofs: collecting the derivations")
        proof_ev, audit = _collect_proofs(pending, per_claim, audit_future)
    elif _audit_wanted(options):
        progress("proofs: audit of the seeds")
        audit = gather_audit(training)
    else:
        audit = _audit_skipped()
    # Wall time from the start until the derivations were in: with workers, it overlaps the others.
    seconds["proofs"] = time.perf_counter() - started if pending is not None else seconds.get("proofs", 0.0)

    evidence = [ClaimEvidence(id=c.id, title=c.title, statement=c.prose, assumptions=list(c.assumptions),
                              seeds=[seed_passage(s) for s in c.seeds], topic=c.topic, proofs=proof_ev[c.id],
                              numeric=numeric_ev[c.id], kernels=kernel_ev[c.id], references=list(c.references),
                              theorem=theorem_source(c.theorem)) for c in claims]
    seconds["total"] = time.perf_counter() - started
    answer = asked["kernels"].answer
    kernel_ran = answer is None or bool(answer.checks or answer.swept or answer.figures)
    run = {"mode": plan.mode, "summary": describe(plan, options.layers, kernel_ran), "seed": seed,
           "only": list(options.only) if options.only else None, "layers": list(options.layers), "plan": plain(plan)}
    timings = {"generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "proofs_in_parallel": pending is not None,
               "seconds": {k: round(v, 3) for k, v in seconds.items()},
               "claims": {cid: {k: round(v, 3) for k, v in d.items()} for cid, d in per_claim.items()}}
    if audit.status == FAILED:
        problems.append(f"proofs: {audit.reason}")
    return Report(run=run, claims=evidence, kernels=kernels, audit=audit, figures=figures,
                  environment=environment(options, kernels), timings=timings, problems=problems, survey=survey)


def gather_survey(out_dir: str | None) -> dict:
    """The survey's table as kernels.ecosystem renders it (a written file: nothing is re-run)."""
    if out_dir is None:
        return {}
    from kernels.ecosystem.table import report_data

    return report_data(out_dir)
