"""The traffic, memory and training figures: drawn from the data the layers measure, in every format, and a
count that disagrees with its derivation shown as a disagreement, never as agreement."""
from __future__ import annotations

import json
import re

import pytest

import kernels.memory as memory
import kernels.traffic as traffic
import numeric.training as training
import proofs.traffic as derived
from kernels.evidence import Plan as KernelPlan
from kernels.evidence import evidence_for as kernel_evidence_for
from numeric.report_evidence import Plan as NumericPlan
from numeric.report_evidence import evidence_for as numeric_evidence_for
from proofs.report import Options, gather, plots, render_files
from proofs.report.gather import Asked, measured_figures, numeric_figures
from proofs.report.model import NOT_CHECKED, PASSED, FigureData

# One N per kernel (the interpreter's cost grows with the tile pairs); 40 is no multiple of the blocks (tails).
TINY_SERIES = {"forward": (dict(d=16, block_m=32, block_n=32), (40,), (40,)),
               "backward": (dict(d=16, block_m=32, block_n=32), (40,), (40,)),
               "decode": (dict(n_q=2, d=16, splits=2), (70,), (70,))}


def _kernel_figures(monkeypatch) -> list[FigureData]:
    monkeypatch.setattr(traffic, "FIGURE_SERIES", TINY_SERIES)
    monkeypatch.setattr(memory, "QUICK_NS", (16, 32))
    answer = kernel_evidence_for(("memory-traffic",), KernelPlan(mode="quick", figure_grid="quick"))
    return measured_figures(Asked(answer=answer), Options(only=("memory-traffic",)))


def _training_figure(monkeypatch) -> FigureData:
    small = training.Schedule(steps=4, eval_every=2, eval_size=16)
    monkeypatch.setattr(training, "quick_experiment", lambda: training.experiment(
        seeds=range(2), d_ks=(16,), scalings=("sqrt", "none"), schedule=small))
    answer = numeric_evidence_for((), NumericPlan(training=True))
    [figure] = numeric_figures(Asked(answer=answer), set())
    return figure


def test_the_three_figures_are_inline_svg_in_html_files_in_markdown_and_data_in_json(monkeypatch):
    figures = _kernel_figures(monkeypatch) + [_training_figure(monkeypatch)]
    assert [(f.name, f.status) for f in figures] == [("traffic", PASSED), ("memory", PASSED), ("training", PASSED)], \
        [f.reason for f in figures]
    report = gather(Options(only=("prescaled-query",), layers=("proofs",)))
    report.figures = figures
    files = render_files(report)
    doc = json.loads(files["report.json"])
    for f in figures:
        assert re.search(rf'<figure id="figure-{f.name}"><svg ', files["index.html"]), f.name
        assert f"(figures/{f.name}.svg)" in files["report.md"] and files[f"figures/{f.name}.svg"].startswith("<svg")
        assert doc["figures"][f.name]["caption"] == f.caption and doc["figures"][f.name]["data"]
    # The captions come from the data: sizes, seeds and steps as run.
    traffic_caption, memory_caption, training_caption = (f.caption for f in figures)
    assert "All 6 counts agree" in traffic_caption and "d = 16, block_m = 32, block_n = 32" in traffic_caption
    slope = figures[1].data["math_slope"]
    assert "N = 16, 32" in memory_caption and f"math backend {slope:.3f}" in memory_caption
    assert "for 4 steps, evaluated every 2, over seeds 0, 1" in training_caption


def test_a_wrong_derivation_shows_as_a_disagreement_in_the_figure_and_its_caption(monkeypatch):
    monkeypatch.setattr(traffic, "FIGURE_SERIES", TINY_SERIES)
    real = derived.keys_loaded_forward
    # One key row too many per query block in the causal count: the kernel's measurement must expose it.
    monkeypatch.setattr(derived, "keys_loaded_forward", lambda *a, **k: real(*a, **k) + 1)
    data = traffic.figure_data(quick=True)
    bad = {(s["kernel"], s["causal"]) for s in data["series"] for p in s["points"] if not p["agrees"]}
    assert bad == {("forward", True), ("backward", True)}
    caption = traffic.figure_caption(data)
    assert "2 of 6 counts DISAGREE" in caption and "forward causal N = 40: read K derived" in caption
    svg = plots.traffic(data)
    assert "forward — 1 DISAGREE" in svg and "measured ≠ derived" in svg


def _traffic_data(agrees: bool, measured: int) -> dict:
    point = {"n": 64, "derived": 100, "measured": measured, "measured_bytes": 4 * measured, "agrees": agrees,
             "differences": {} if agrees else {"read K": [60, measured - 40]}}
    return {"grid": "quick", "series": [{"kernel": "forward", "causal": False, "fixed": {}, "points": [point]}]}


def test_the_traffic_plot_refuses_a_disagreement_labelled_as_agreement():
    with pytest.raises(ValueError, match="marked as agreeing, but measured 101 != derived 100"):
        plots.traffic(_traffic_data(agrees=True, measured=101))
    svgs, problems = plots.draw_all([FigureData("traffic", "t", "c", PASSED, data=_traffic_data(True, 101))])
    assert svgs == {} and problems["traffic"].startswith("could not draw the figure: ValueError")
    assert "DISAGREE" not in plots.traffic(_traffic_data(agrees=True, measured=100))


def test_the_memory_and_training_plots_refuse_data_they_cannot_show_truthfully(monkeypatch):
    curves = {"n": [64, 128], "d": 16, "flash_bytes": [10, 0], "math_bytes": [5, 20], "flash_slope": 1.0,
              "math_slope": 2.0, "derived_flash_bytes": [4, 8], "derived_math_bytes": [4, 16]}
    with pytest.raises(ValueError, match="flash_bytes must hold one positive byte count per N"):
        plots.memory(curves)  # zero bytes has no place on a log axis
    with pytest.raises(ValueError, match="math_bytes"):
        plots.memory(dict(curves, flash_bytes=[10, 20], math_bytes=[5]))
    data = _training_figure(monkeypatch).data
    assert plots.training(data).startswith("<svg")
    data["settings"][0]["solved_steps"][0] = 3  # the schedule evaluates at 0, 2, 4 only
    with pytest.raises(ValueError, match="solved at step 3, which was not evaluated"):
        plots.training(data)


def test_the_training_figure_data_is_each_seeds_curve_and_their_mean():
    small = training.Schedule(steps=4, eval_every=2, eval_size=16)
    result = training.experiment(seeds=range(2), d_ks=(16,), scalings=("none",), schedule=small)
    [setting] = training.figure_data(result)["settings"]
    runs = result["runs"]
    assert setting["loss"] == [[c[1] for c in r["curve"]] for r in runs]
    assert setting["mean_loss"] == pytest.approx([(a[1] + b[1]) / 2 for a, b in zip(*(r["curve"] for r in runs))])
    assert setting["solved_steps"] == [r["solved_step"] for r in runs]
    runs[1]["curve"] = runs[1]["curve"][:-1]
    with pytest.raises(ValueError, match="evaluated at different steps"):
        training.figure_data(result)


def test_the_kernel_plan_checks_the_figure_arguments():
    with pytest.raises(ValueError, match="figure_grid must be None or one of"):
        KernelPlan(mode="quick", figure_grid="medium")
    assert kernel_evidence_for(("memory-traffic",), KernelPlan(mode="quick")).figures == []  # not asked for


def test_without_the_kernel_layer_the_measured_figures_say_why():
    figures = measured_figures(Asked(absent="layer kernels not run (--layers)"), Options())
    assert [(f.name, f.status, f.reason) for f in figures] == [
        ("traffic", NOT_CHECKED, "layer kernels not run (--layers)"),
        ("memory", NOT_CHECKED, "layer kernels not run (--layers)")]
    assert measured_figures(Asked(absent="x"), Options(only=("prescaled-query",))) == []
