"""The report from the real layers, as a user runs it: exit status, evidence, determinism."""
from __future__ import annotations

import json

import pytest

from conftest import FIGURE_CLAIMS, load_json, run_cli
from numeric.confirm import CONFIRMERS
from proofs.report import Options, gather
from proofs.report.jsonout import render, without_timings
from proofs.report.model import FAILED, NOT_CHECKED, PASSED


def test_the_quick_report_holds_and_exits_zero(real_report):
    out, done = real_report
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"{len(FIGURE_CLAIMS)} of {len(FIGURE_CLAIMS)} claims hold, 0 fail" in done.stdout
    assert "FAILED" not in done.stdout
    assert {p.name for p in out.iterdir()} >= {"index.html", "report.md", "report.json", "figures"}


def test_every_layer_speaks_for_the_claims_it_covers(real_report):
    doc = load_json(real_report[0])
    by_id = {c["id"]: c for c in doc["claims"]}
    assert all(c["proofs"]["status"] == PASSED for c in doc["claims"])
    variance = by_id["dot-product-variance"]["numeric"]
    quick_n = CONFIRMERS["dot-product-variance"].quick["n_samples"]  # --quick's size, chosen there for its power
    assert variance["status"] == PASSED and variance["n_samples"] == quick_n and variance["parts"]
    low, high = variance["parts"][0]["ci"]
    assert low <= variance["parts"][0]["estimate"] <= high
    # The kernel layer ties rows-sum-to-one to this claim; the derivation-only claim gets none.
    norm = by_id["softmax-normalisation"]["kernels"]
    assert norm["status"] == PASSED and norm["dtypes"] == ["float32"]
    assert norm["worst"]["discrepancy"] <= norm["worst"]["bound"]
    assert by_id["dot-product-variance"]["kernels"]["status"] == NOT_CHECKED
    kernels = doc["kernels"]
    assert kernels["implementation"] == "kernels.flash.api.flash_attention"
    assert kernels["mode"].startswith("interpreted") or kernels["mode"] == "compiled"
    assert {r["dtype"] for r in kernels["error_vs_length"]} == {"float32", "float16", "bfloat16"}
    assert all(f["status"] == PASSED for f in doc["figures"].values()), {
        k: f["reason"] for k, f in doc["figures"].items()}
    assert doc["audit"]["status"] == NOT_CHECKED and "--only" in doc["audit"]["reason"]


def test_same_seed_same_bytes_apart_from_the_timings(real_report, tmp_path):
    out, _ = real_report
    again = tmp_path / "again"
    done = run_cli("report", "--out", str(again), "--only", *FIGURE_CLAIMS)
    assert done.returncode == 0, done.stderr[-3000:]
    first, second = (out / "report.json").read_text(), (again / "report.json").read_text()
    assert without_timings(first) == without_timings(second)
    # "timings" sorts last, so everything before it is byte for byte the same.
    cut = first.index('\n "timings": ')
    assert first[:cut] == second[:second.index('\n "timings": ')]
    assert json.loads(first)["timings"] != {} and '"generated_at"' in first[cut:]


def test_another_seed_changes_the_monte_carlo_numbers():
    def estimate(seed):
        report = gather(Options(seed=seed, only=("dot-product-moments",), layers=("numeric",)))
        assert report.claims[0].numeric.status == PASSED
        return without_timings(render(report))["claims"][0]["numeric"]["estimate"]

    assert estimate(0) == estimate(0)
    assert estimate(0) != estimate(1)


def test_the_seed_audit_joins_the_report():
    from proofs.report.gather import gather_audit
    from proofs.seed_audit import VERDICTS as AUDIT_VERDICTS

    audit = gather_audit()
    assert audit.status == PASSED and len(audit.records) > 20
    verdicts = set(AUDIT_VERDICTS)
    assert {r.verdict for r in audit.records} <= verdicts
    assert all(r.id and r.seed and r.quote and r.value for r in audit.records)
    assert sum(audit.counts.values()) == len(audit.records)
    assert audit.status != FAILED


def test_the_training_experiment_decides_the_audit_record_on_unscaled_training():
    # The numeric layer runs the experiment when the report asks for the audit; its evidence, not the
    # derivation, then decides the record (and without it the record says the experiment did not run).
    from numeric.report_evidence import Plan, evidence_for
    from proofs.report.gather import gather_audit

    answer = evidence_for((), Plan(training=True))
    assert answer.training and answer.training["runs"] and not answer.training_error
    by_id = {r.id: r for r in gather_audit(answer.training).records}
    assert by_id["s2-fail-to-train"].checked.startswith("measured: numeric.training")
    without = {r.id: r for r in gather_audit().records}
    assert "did not run" in without["s2-fail-to-train"].checked
    with pytest.raises(ValueError, match="training"):
        Plan(training="yes")
