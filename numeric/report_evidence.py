"""The Monte Carlo layer's evidence for the report: one entry point, claim ids and a plan in, plain records out.

``evidence_for(claim_ids, plan)`` confirms each claim the layer covers (``numeric.confirm`` at the
claim's registered quick size, or its default) and gathers the data of the figures that illustrate
the chosen claims. The plan's sampling parameters are checked once, when the :class:`Plan` is made,
and travel as that one object. An error raised while confirming a claim or gathering a figure is
recorded in its record, never raised: the report shows it as that claim's failure (or that figure's gap).

The variance figure reads the dot-product-variance confirmation's own tests; the histogram, saturation
and online-softmax figures draw samples of their own with the plan's seed (``FIGURES`` says which,
and each caption says so).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import numeric
from numeric import arguments, derived
from numeric import training as experiment
from numeric.dot_product import SWEEP_D_KS
from numeric.evidence import CONFIRMING_POWER, STATED_EFFECT, Confirmation, power_against


@dataclass(frozen=True)
class Plan:
    """How much the layer samples for the report; every parameter checked here, once."""

    seed: int = 0
    quick: bool = True  # each claim's registered quick sample size, else the confirmation's default
    histogram_dk: int = 128
    histogram_samples: int = 20_000
    histogram_bins: int = 60
    saturation_dks: tuple[int, ...] | None = None  # None: the d_k sweep, less d_k = 1
    saturation_samples: int = 500
    trace_dk: int = 64  # one row of unscaled scores at this d_k for the online-softmax figure
    trace_length: int = 512
    trace_block: int = 64
    training: bool = False  # run the training experiment (quick: 1 seed, 10 steps; else 5 seeds, 300 steps)

    def __post_init__(self):
        arguments.seed(self.seed)
        for name in ("quick", "training"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
        for name in ("histogram_dk", "histogram_bins", "trace_dk", "trace_length", "trace_block"):
            arguments.positive_int(getattr(self, name), name)
        for name in ("histogram_samples", "saturation_samples"):
            arguments.n_samples(getattr(self, name), name)
        if self.saturation_dks is not None:
            arguments.dimensions(self.saturation_dks, "saturation_dks")


@dataclass
class ClaimAnswer:
    """One claim's confirmation (None when confirming raised: ``error`` says what), in words too."""

    confirmation: Confirmation | None = None
    error: str = ""
    word: str = ""  # "confirmed" only with power >= CONFIRMING_POWER against ``effect``; else "consistent (...)"
    effect: float = STATED_EFFECT
    effect_power: float | None = None  # None: no statistical power applies (a floating-point check)


@dataclass
class FigureAnswer:
    name: str
    claim_id: str  # the claim the figure illustrates
    resampled: bool  # True: samples drawn for the figure; False: the claim's confirmation, not sampled again
    caption: str = ""
    data: dict = field(default_factory=dict)
    error: str = ""  # why the data could not be gathered


@dataclass
class Answer:
    claims: dict[str, ClaimAnswer] = field(default_factory=dict)  # the chosen claims the layer confirms
    figures: list[FigureAnswer] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)  # claim id -> seconds its confirmation took
    # numeric.training.audit_evidence of the training experiment, for the seed audit (None: not run, or it
    # raised: ``training_error`` says which)
    training: dict | None = None
    training_error: str = ""


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".strip()


def verdict_word(ok: bool, statistical: bool, power: float | None, effect: float = STATED_EFFECT,
                 enough: float = CONFIRMING_POWER) -> str:
    """"confirmed" only for a pass with power >= ``enough`` against ``effect``, or for a floating-point check
    (no power: it holds within its rounding bound); a weaker or unmeasured pass is "consistent"."""
    if not ok:
        return "rejected"
    if not statistical or (power is not None and power >= enough):
        return "confirmed"
    if power is None:
        return f"consistent (power against a {effect:.0%} error not computed)"
    return f"consistent (power {power:.2f} against a {effect:.0%} error)"


def confirm(claim_id: str, plan: Plan) -> tuple[ClaimAnswer, float]:
    """One claim's confirmation and the seconds it took; an error is kept in the answer."""
    start = time.perf_counter()
    try:
        c = numeric.confirm(claim_id, quick=plan.quick, seed=plan.seed)
    except Exception as exc:  # the claim's confirmation broke: a failure of this claim, not of the report
        return ClaimAnswer(error=f"confirm raised {_why(exc)}"), time.perf_counter() - start
    power = power_against(c, STATED_EFFECT)
    return ClaimAnswer(confirmation=c, word=verdict_word(c.confirmed, c.p_value is not None, power),
                       effect_power=power), c.seconds


def evidence_for(claim_ids, plan: Plan) -> Answer:
    """The confirmations of the chosen claims that the layer covers, and the data of their figures."""
    answer = Answer()
    for cid in claim_ids:
        if cid in numeric.CONFIRMABLE:
            answer.claims[cid], answer.seconds[cid] = confirm(cid, plan)
    confirmations = {cid: a.confirmation for cid, a in answer.claims.items() if a.confirmation is not None}
    for name, claim_id, gather, resampled in FIGURES:
        if claim_id not in claim_ids:
            continue
        figure = FigureAnswer(name=name, claim_id=claim_id, resampled=resampled)
        try:
            caption, figure.data = gather(plan, confirmations)
            figure.caption = f"{caption} {figure_source(resampled, plan.seed)}"
        except Exception as exc:
            figure.error = f"could not gather the data: {_why(exc)}"
        answer.figures.append(figure)
    if plan.training:
        start = time.perf_counter()
        result = None
        try:
            result = experiment.quick_experiment() if plan.quick else experiment.experiment()
            answer.training = experiment.audit_evidence(result)
        except Exception as exc:  # the audit's record then says the experiment did not run, and why
            answer.training_error = f"the training experiment raised {_why(exc)}"
        answer.figures.append(training_figure(result, answer.training_error))
        answer.seconds["training"] = time.perf_counter() - start
    else:
        answer.training_error = "the plan did not ask for the training experiment"
    return answer


# --------------------------------------------------------------------------- the figures' data


def _derived_std() -> Callable:
    """Std(q·k) as a function of d_k, from the proved dot-product-variance derivation."""
    return derived.in_d_k("dot-product-variance", "std")


def figure_variance(plan: Plan, confirmations: dict) -> tuple[str, dict]:
    """The dot-product-variance confirmation's own per-d_k variance tests, over its derived values."""
    c = confirmations.get("dot-product-variance")
    if c is None:
        raise LookupError("the dot-product-variance confirmation did not run, so there is nothing to draw")
    rows = [{"d_k": p.point["d_k"], "estimate": float(p.estimate), "ci": [float(x) for x in p.ci],
             "derived": float(p.claimed), "confirmed": bool(p.confirmed)}
            for p in c.details if p.point.get("moment") == "variance"]
    return (f"Sample variance of q·k ({c.n_samples:,} samples per d_k) with its confidence interval, over the "
            "derived line Var(q·k) = d_k (log–log): the points the dot-product-variance confirmation tested.",
            {"rows": rows, "n_samples": c.n_samples})


def figure_histograms(plan: Plan, confirmations: dict) -> tuple[str, dict]:
    d_k = plan.histogram_dk
    s = np.asarray(numeric.dot_product_samples(d_k, plan.histogram_samples, seed=plan.seed), dtype=np.float64)
    panels = []
    for label, values in (("unscaled q·k", s), ("scaled q·k/√d_k", s / _derived_std()(d_k))):
        counts, edges = np.histogram(values, bins=plan.histogram_bins)
        panels.append({"label": label, "counts": counts.tolist(), "edges": edges.tolist(),
                       "std": float(values.std(ddof=1))})
    return (f"{plan.histogram_samples:,} scores q·k at d_k = {d_k}, before and after dividing by √d_k: "
            "the spread falls from about √d_k to about 1.",
            {"d_k": d_k, "n_samples": plan.histogram_samples, "panels": panels})


def figure_saturation(plan: Plan, confirmations: dict) -> tuple[str, dict]:
    d_ks = list(plan.saturation_dks or [d for d in SWEEP_D_KS if d > 1])
    curves = numeric.saturation_curves(d_ks, plan.saturation_samples, seed=plan.seed)
    return ("Mean maximum attention weight, mean entropy and mean Frobenius norm of the softmax Jacobian over "
            f"rows of d_k random scores ({plan.saturation_samples:,} rows per point): no scaling saturates, "
            "1/√d_k stays put, 1/d_k flattens towards uniform.",
            {"d_ks": d_ks, "n_samples": plan.saturation_samples,
             "curves": {name: {m: np.asarray(v).tolist() for m, v in c.items()} for name, c in curves.items()}})


def figure_trace(plan: Plan, confirmations: dict) -> tuple[str, dict]:
    # One row of scores as an unscaled model at d_k = trace_dk would see them (std √d_k, derived),
    # so the running max keeps climbing and the running sum is visibly rescaled.
    rng = np.random.default_rng(np.random.SeedSequence([plan.seed, 7]))
    scores = rng.standard_normal(plan.trace_length) * _derived_std()(plan.trace_dk)  # (trace_length,)
    trace = numeric.online_softmax_trace(scores, plan.trace_block)
    m = float(scores.max())
    return (f"One row of {plan.trace_length} scores streamed in key blocks of {plan.trace_block}: after each block "
            "the running max m and the running sum l = Σ exp(s − m), rescaled whenever m grows. Dashed: the "
            "direct max and sum over the whole row.",
            {"block_size": plan.trace_block, "running_max": np.asarray(trace["running_max"]).tolist(),
             "running_sum": np.asarray(trace["running_sum"]).tolist(), "direct_max": m,
             "direct_sum": float(np.exp(scores - m).sum())})


# The training figure illustrates the seed audit's record on unscaled training, not a claim: it is drawn from
# the runs the audit decides on, whenever the plan runs the experiment.
TRAINING_FIGURE = "training"


def training_figure(result: dict | None, error: str) -> FigureAnswer:
    """The training figure from the experiment's ``result`` (None when it raised: ``error`` says why)."""
    figure = FigureAnswer(name=TRAINING_FIGURE, claim_id="", resampled=False)
    if result is None:
        figure.error = f"could not gather the data: {error}"
        return figure
    try:
        figure.data = experiment.figure_data(result)
        figure.caption = (f"{experiment.figure_caption(figure.data)} The runs the seed audit decides its record on "
                          "unscaled training with, not run again.")
    except Exception as exc:
        figure.error, figure.data = f"could not gather the data: {_why(exc)}", {}
    return figure


# name, the claim it illustrates, the function that gathers its data, and whether that function draws fresh
# samples (True) or reads the claim's confirmation (False)
FIGURES = (
    ("variance", "dot-product-variance", figure_variance, False),
    ("histograms", "scaled-score-unit-variance", figure_histograms, True),
    ("saturation", "softmax-saturation", figure_saturation, True),
    ("online-softmax", "online-softmax-unnormalised", figure_trace, True),
)


def figure_source(resampled: bool, seed: int) -> str:
    """The caption's sentence on where a figure's numbers come from (from FIGURES' flag)."""
    if resampled:
        return f"Samples drawn for this figure (seed {seed}), apart from the confirmation's."
    return "The confirmation's own tests, not sampled again."
