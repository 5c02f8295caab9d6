"""How the report joins the layers: verdicts, "not checked by this layer", failures and the exit status."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sympy as sp

import _fake_layers
from proofs import cli
from proofs.engine import Proof
from proofs.report import PLANS, Options, gather, render_files
from proofs.report.model import FAILED, NOT_CHECKED, NOT_CHECKED_TEXT, PASSED

REPO = Path(__file__).resolve().parents[1]

TWO = ("dot-product-variance", "softmax-normalisation")


def _wrong_derivation(claim_id: str):
    """The catalogued claim (its title and statement from proofs/claims.py) with one false step."""
    x = sp.Symbol("x", real=True)
    pf = Proof(claim_id)
    pf.identity(x + x, 3 * x, "x + x = 3x, which a check must refuse")
    return pf.finish({"value": 3})


def _fail_derivation_of(monkeypatch, bad_id: str):
    import proofs

    real = proofs.derive
    monkeypatch.setattr(proofs, "derive", lambda cid: _wrong_derivation(cid) if cid == bad_id else real(cid))


def test_absent_layers_say_not_checked_and_never_pass(monkeypatch):
    report = gather(Options(only=TWO, layers=("proofs",)))
    for c in report.claims:
        assert c.proofs.status == PASSED
        assert c.numeric.status == NOT_CHECKED and "not run" in c.numeric.reason
        assert c.kernels.status == NOT_CHECKED
        assert c.verdict == PASSED  # a pass of one layer, no pretence for the others
    files = render_files(report)
    assert files["index.html"].count(NOT_CHECKED_TEXT) >= 4
    assert f"_{NOT_CHECKED_TEXT}: layer numeric not run (--layers)_" in files["report.md"]
    assert all(f.status == NOT_CHECKED for f in report.figures)


def test_a_layer_that_does_not_cover_a_claim_says_so(monkeypatch):
    _fake_layers.install(monkeypatch, _fake_layers.numeric_module(confirmable=("dot-product-variance",)),
                         _fake_layers.kernel_modules())
    report = gather(Options(only=TWO))
    by_id = {c.id: c for c in report.claims}
    assert by_id["dot-product-variance"].numeric.status == PASSED
    assert by_id["softmax-normalisation"].numeric.status == NOT_CHECKED
    assert "does not confirm" in by_id["softmax-normalisation"].numeric.reason
    assert by_id["softmax-normalisation"].kernels.status == PASSED  # the fake ties rows-sum-to-one to it
    assert by_id["dot-product-variance"].kernels.status == NOT_CHECKED
    assert by_id["dot-product-variance"].kernels.reason == "no kernel invariant tests this claim"


def test_numeric_timings_stay_out_of_the_evidence(monkeypatch):
    _fake_layers.install(monkeypatch, _fake_layers.numeric_module())
    report = gather(Options(only=("dot-product-variance",), layers=("numeric",)))
    ev = report.claims[0].numeric
    assert ev.parts[1] == {"description": "fake point d_k = 64", "estimate": 64.64, "claimed": 64.0,
                           "ci": [57.6, 70.4], "p_value": 0.5, "alpha": 0.001, "n_samples": 20_000, "power": None,
                           "power_error": None, "tolerance": None, "confirmed": True}  # no "seconds": kept apart
    assert report.timings["claims"]["dot-product-variance"]["numeric"] == 0.123


@pytest.mark.parametrize("how", ["rejects", "raises"])
def test_a_rejected_or_crashing_confirmation_fails_its_claim(monkeypatch, tmp_path, capsys, how):
    _fake_layers.install(monkeypatch, _fake_layers.numeric_module(**{how: ("softmax-normalisation",)},
                                                                  confirmable=TWO))
    status = cli.main(["report", "--out", str(tmp_path / "r"), "--only", *TWO, "--layers", "proofs,numeric"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert status == 1
    assert lines[-1] == "FAILED: softmax-normalisation"
    doc = json.loads((tmp_path / "r" / "report.json").read_text())
    assert doc["summary"]["failing"] == ["softmax-normalisation"]
    bad = next(c for c in doc["claims"] if c["id"] == "softmax-normalisation")
    assert bad["numeric"]["status"] == FAILED and bad["verdict"] == FAILED
    if how == "raises":
        assert "RuntimeError: fake failure" in bad["numeric"]["reason"]


def test_a_failing_derivation_gives_exit_status_1_and_is_listed_last(monkeypatch, tmp_path, capsys):
    _fail_derivation_of(monkeypatch, "dot-product-variance")
    status = cli.main(["report", "--out", str(tmp_path / "r"), "--only", *TWO, "--layers", "proofs"])
    out = capsys.readouterr().out
    assert status == 1
    assert out.strip().splitlines()[-1] == "FAILED: dot-product-variance"
    assert "1 of 2 claims hold, 1 fail" in out
    html = (tmp_path / "r" / "index.html").read_text()
    assert "1 of 2 claims fail: dot-product-variance." in html
    assert html.rstrip().endswith("</ul>\n</body></html>") and "id='failing-end'" in html
    md = (tmp_path / "r" / "report.md").read_text()
    assert md.rstrip().endswith("- **dot-product-variance**")
    assert "✗ **FAILED**" in md and "refuted" in md


def test_a_crashing_theorem_fails_its_claim_without_crashing_the_report(monkeypatch):
    import proofs

    def boom(cid):
        raise ZeroDivisionError("theorem bug")

    monkeypatch.setattr(proofs, "derive", boom)
    report = gather(Options(only=TWO, layers=("proofs",)))
    assert report.failing == list(TWO)
    assert "ZeroDivisionError: theorem bug" in report.claims[0].proofs.reason


def test_a_failing_kernel_invariant_fails_its_claim(monkeypatch, tmp_path, capsys):
    _fake_layers.install(monkeypatch, kernels=_fake_layers.kernel_modules(failing_invariant="rows-sum-to-one"))
    status = cli.main(["report", "--out", str(tmp_path / "r"), "--only", *TWO, "--layers", "proofs,kernels",
                       "--format", "json"])
    assert status == 1
    assert capsys.readouterr().out.strip().splitlines()[-1] == "FAILED: softmax-normalisation"
    doc = json.loads((tmp_path / "r" / "report.json").read_text())
    bad = next(c for c in doc["claims"] if c["id"] == "softmax-normalisation")
    assert bad["kernels"]["status"] == FAILED
    assert bad["kernels"]["worst"]["discrepancy"] == 5e-3 and bad["kernels"]["worst"]["bound"] == 1e-6
    assert doc["kernels"]["status"] == FAILED


def test_a_failing_kernel_invariant_without_a_claim_still_fails_the_run(monkeypatch):
    _fake_layers.install(monkeypatch, kernels=_fake_layers.kernel_modules(failing_invariant="output-dtype-shape"))
    report = gather(Options(only=TWO, layers=("kernels",)))
    assert report.failing == ["kernels:output-dtype-shape"]
    assert not report.passed


def test_kernel_evidence_names_implementation_device_mode_and_bound(monkeypatch):
    _fake_layers.install(monkeypatch, kernels=_fake_layers.kernel_modules())
    report = gather(Options(only=("softmax-normalisation",), layers=("kernels",)))
    k = report.kernels
    assert k.implementation.endswith("flash_attention") and k.device == "cpu"
    assert k.mode.startswith(("interpreted", "compiled"))
    assert k.settings["cases"] == ["square", "gqa-causal", "extreme", "negative-rows"]
    from kernels.harness.invariants import INVARIANTS

    assert k.error_vs_length == []  # --only: its work only, its own invariants only
    assert k.settings["invariants"] == [i.name for i in INVARIANTS if i.claim_id == "softmax-normalisation"
                                        and not i.backward]
    figure = next(f for f in report.figures if f.name == "kernel-error")
    assert figure.status == NOT_CHECKED and "rounding-attention-forward" in figure.reason
    swept = gather(Options(only=("softmax-normalisation", "rounding-attention-forward"), layers=("kernels",)))
    assert {r["dtype"] for r in swept.kernels.error_vs_length} == {"float32", "float16", "bfloat16"}
    ev = report.claims[0].kernels
    assert ev.status == PASSED and ev.dtypes == ["float32"] and ev.worst.bound == 1e-6


def test_quick_leaves_the_backward_out_and_says_so_instead_of_calling_it_not_applicable(monkeypatch):
    modules = _fake_layers.kernel_modules()
    _fake_layers.install(monkeypatch, kernels=modules)
    report = gather(Options(only=("attention-backward", "softmax-normalisation"), layers=("kernels",)))
    asked = modules["kernels.harness"].verify_attention.asked
    assert asked["backward"] is True, "the kernel has a backward: the harness must not be told it lacks one"
    from kernels.harness.invariants import INVARIANTS

    chosen = ("attention-backward", "softmax-normalisation")
    assert asked["invariants"] == [i.name for i in INVARIANTS if i.claim_id in chosen and not i.backward]
    assert any(i.claim_id == "attention-backward" and i.backward for i in INVARIANTS)  # left out, not "lacking"
    by_id = {c.id: c.kernels for c in report.claims}
    backward = by_id["attention-backward"]
    assert backward.status == NOT_CHECKED
    assert backward.reason.startswith("not run in --quick") and "not applicable" not in backward.reason
    from proofs.report import fmt

    assert fmt.evidence_word("kernels", backward) == "not run in --quick"  # the summary's badge says it
    assert by_id["softmax-normalisation"].status == PASSED


def test_a_claim_whose_checks_were_all_not_applicable_does_not_conform(monkeypatch):
    _fake_layers.install(monkeypatch, kernels=_fake_layers.kernel_modules(lacking="rows-sum-to-one"))
    report = gather(Options(only=("softmax-normalisation",), layers=("kernels",)))
    ev = report.claims[0].kernels
    assert ev.status == NOT_CHECKED and ev.reason == "not applicable: impl lacks attn_mask"
    from proofs.report import fmt

    assert fmt.evidence_word("kernels", ev) == "not applicable"
    row = next(r for r in report.kernels.per_invariant if r["invariant"] == "rows-sum-to-one")
    assert (row["checks"], row["not_applicable"]) == (0, 1)


def test_bad_options_are_value_errors_naming_the_argument():
    with pytest.raises(ValueError, match="mode"):
        Options(mode="fast")
    with pytest.raises(ValueError, match="seed"):
        Options(seed=-1)
    with pytest.raises(ValueError, match="layers"):
        Options(layers=("proofs", "gpu"))
    with pytest.raises(ValueError, match="claim_id 'nope'"):
        Options(only=("nope",))


def test_a_layer_that_breaks_as_a_whole_fails_the_run_but_an_absent_one_does_not(monkeypatch):
    broken = _fake_layers.kernel_modules()

    def crash(*args, **kwargs):
        raise RuntimeError("harness bug")

    broken["kernels.harness"].verify_attention = crash
    _fake_layers.install(monkeypatch, kernels=broken)
    report = gather(Options(only=TWO, layers=("kernels",)))
    assert report.failing == ["kernels: verify_attention raised RuntimeError: harness bug"]
    assert all(c.kernels.status == NOT_CHECKED for c in report.claims)

    with monkeypatch.context() as absent:  # not installed: the import fails, the layer is absent
        absent.setitem(sys.modules, "kernels", None)
        absent.setitem(sys.modules, "kernels.evidence", None)
        report = gather(Options(only=TWO, layers=("kernels",)))
    assert report.passed and report.kernels.status == NOT_CHECKED
    assert "not available" in report.kernels.reason

    import kernels.evidence

    def missing(claim_ids, plan):  # installed, but its entry point breaks as a whole: that is a failure
        raise AttributeError("module 'kernels' has no attribute 'flash_attention'")

    monkeypatch.setattr(kernels.evidence, "evidence_for", missing)
    report = gather(Options(only=TWO, layers=("kernels",)))
    assert report.kernels.status == FAILED and "AttributeError" in report.kernels.reason
    assert report.failing == [f"kernels: {report.kernels.reason}"]


def test_the_worst_check_is_the_first_failure_else_the_closest_to_its_bound():
    from kernels.harness.report import Check, worst

    def check(discrepancy, bound, passed=True):
        return Check(invariant="inv", claim_id=None, case="case", case_name="case", dtype="float32", device="cpu",
                     discrepancy=discrepancy, bound=bound, passed=passed)

    near, far, nan = check(0.9, 1.0), check(0.1, 1.0), check(float("nan"), 1.0)
    assert worst([far, nan, near]) is near and near.ratio == 0.9
    failed = check(2.0, 1.0, passed=False)
    assert worst([near, failed, check(5.0, 1.0, passed=False)]) is failed
    assert worst([nan]) is None and worst([]) is None
    assert check(0.0, 0.0).ratio == 0.0 and check(1e-9, 0.0).ratio == float("inf")


def test_the_reports_probe_seeding_sentence_is_what_the_engine_does(monkeypatch):
    import hashlib
    import random

    import sympy as sp

    from proofs import identity as engine
    from proofs.report.gather import PROBE_SEEDING

    seeds = []

    class Recording(random.Random):
        def __init__(self, seed=None):
            seeds.append(seed)
            super().__init__(seed)

    monkeypatch.setattr(engine.random, "Random", Recording)
    # identity() decides in a forked worker, whose draws this process cannot record: run the same
    # decision (engine._guarded, what the worker runs) in this process instead.
    monkeypatch.setattr(engine, "_isolated", engine._guarded)
    x, y = sp.symbols("x y")
    # false identities: the engine probes only what does not reduce exactly, and probes refute these
    for _ in range(2):
        engine.identity((x + y) ** 2, x**2 + y**2)
    engine.identity((x - y) ** 2, x**2 + y**2)
    assert seeds, "the engine drew no probe points"
    assert all(isinstance(s, bytes) and len(s) == hashlib.sha256().digest_size for s in seeds), "SHA-256 digests"
    assert seeds[0] == seeds[1] != seeds[-1], "the same identity, the same seed; another identity, another seed"
    drawn = len(seeds)
    engine.identity((x + y) ** 2, x**2 + 2 * x * y + y**2)  # reduces exactly: no probe drawn
    assert len(seeds) == drawn and "run only where" in PROBE_SEEDING
    assert "SHA-256" in PROBE_SEEDING and "expression" in PROBE_SEEDING and "random.Random(0)" not in PROBE_SEEDING


def test_each_figures_resample_flag_is_what_its_function_does(monkeypatch):
    import numeric
    from numeric.report_evidence import FIGURES, Plan, figure_source

    fake = _fake_layers.numeric_module()
    _fake_layers.install(monkeypatch, numeric=fake)
    drawn = []
    for name in ("dot_product_samples", "saturation_curves", "online_softmax_trace"):
        original = getattr(numeric, name)
        monkeypatch.setattr(numeric, name, lambda *a, _f=original, _n=name, **k: drawn.append(_n) or _f(*a, **k))
    confirmations = {"dot-product-variance": fake.confirm("dot-product-variance", quick=True, seed=0)}
    for name, _claim, fn, resamples in FIGURES:
        drawn.clear()
        fn(Plan(**PLANS["quick"].numeric), confirmations)
        assert bool(drawn) == resamples, name
    assert "seed 3" in figure_source(True, 3) and "not sampled again" in figure_source(False, 3)


def test_the_reports_figure_table_agrees_with_the_numeric_layers():
    from numeric.report_evidence import FIGURES
    from numeric.report_evidence import TRAINING_FIGURE
    from proofs.report.gather import FIGURE_TITLES, KERNEL_ERROR_CLAIM, KERNEL_FIGURES

    numeric_figures = {name: claim_id for name, claim_id, _fn, _resampled in FIGURES}
    assert numeric_figures == {name: claim for name, (_title, claim) in FIGURE_TITLES.items()
                               if name not in (*KERNEL_FIGURES, TRAINING_FIGURE)}
    assert TRAINING_FIGURE in FIGURE_TITLES
    from kernels.evidence import ERROR_CLAIM, TRAFFIC_CLAIM

    assert ERROR_CLAIM == KERNEL_ERROR_CLAIM
    assert all(FIGURE_TITLES[name][1] == TRAFFIC_CLAIM for name in ("traffic", "memory"))


def test_each_layers_plan_refuses_bad_sampling_parameters_naming_them():
    from kernels.evidence import Plan as KernelPlan
    from numeric.report_evidence import Plan as NumericPlan

    NumericPlan(**PLANS["quick"].numeric), KernelPlan(**PLANS["quick"].kernels)  # the plans are valid
    for bad, name in (({"histogram_samples": 1}, "histogram_samples"), ({"saturation_dks": (4, 0)}, "saturation_dks"),
                      ({"trace_block": 0}, "trace_block"), ({"seed": -1}, "seed"), ({"quick": "yes"}, "quick")):
        with pytest.raises(ValueError, match=name):
            NumericPlan(**{**PLANS["quick"].numeric, **bad})
    for bad, name in (({"dtypes": ("float8",)}, "dtypes"), ({"lengths": (0,)}, "lengths"),
                      ({"rounding_samples": 0}, "rounding_samples")):
        with pytest.raises(ValueError, match=name):
            KernelPlan(**{**PLANS["quick"].kernels, **bad})
    # the case names need the harness (torch): checked by evidence_for before the harness runs
    from kernels.evidence import evidence_for

    KernelPlan(**PLANS["quick"].kernels).check_cases()
    with pytest.raises(ValueError, match="cases"):
        evidence_for(("softmax-normalisation",), KernelPlan(**{**PLANS["quick"].kernels, "cases": ("square", "nope")}))


def test_the_kernel_layers_list_of_tested_claims_is_the_registrys():
    import kernels.harness  # noqa: F401  (its families register their invariants on import)
    from kernels.evidence import TESTED_CLAIMS
    from kernels.harness.invariants import INVARIANTS

    assert TESTED_CLAIMS == {i.claim_id for i in INVARIANTS if i.claim_id}


def test_a_report_of_a_claim_no_kernel_invariant_tests_imports_neither_torch_nor_the_harness():
    # In a fresh process: this one has torch already. The light answer is the one gather turns into
    # "no kernel invariant tests the claims chosen with --only".
    code = ("import sys; from kernels.evidence import Plan, evidence_for, NO_INVARIANT; "
            "from proofs.report.gather import PLANS; "
            "a = evidence_for(('dot-product-variance',), Plan(**PLANS['quick'].kernels, seed=0)); "
            "assert not a.checks and not a.swept and a.claims['dot-product-variance'].why_none_ran == NO_INVARIANT; "
            "heavy = sorted(m for m in ('torch', 'triton', 'kernels.harness') if m in sys.modules); "
            "assert not heavy, heavy")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_pass_without_power_against_the_stated_effect_is_consistent_not_confirmed(monkeypatch):
    numeric = _fake_layers.numeric_module(std_errors={"dot-product-variance": 0.05, "scaled-score-unit-variance": 0.005})
    _fake_layers.install(monkeypatch, numeric=numeric)
    report = gather(Options(only=("dot-product-variance", "scaled-score-unit-variance", "softmax-jacobian"),
                            layers=("numeric",)))
    by_id = {c.id: c.numeric for c in report.claims}
    weak, strong, unknown = by_id["dot-product-variance"], by_id["scaled-score-unit-variance"], by_id["softmax-jacobian"]
    assert weak.status == PASSED and weak.effect == 0.05 and weak.effect_power < 0.8
    assert weak.word == f"consistent (power {weak.effect_power:.2f} against a 5% error)"
    assert strong.effect_power > 0.99 and strong.word == "confirmed"
    assert unknown.p_value is not None and unknown.word == "consistent (power against a 5% error not computed)"
