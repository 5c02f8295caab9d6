"""The rounding-bounds figure: drawn from the confirmation's records, never re-derived in the report."""
from __future__ import annotations

import kernels.rounding_confirmation as confirmation
from proofs.report.gather import figure_rounding
from proofs.report.model import NOT_CHECKED, PASSED
from proofs.report.plots import DRAW


def test_the_figure_has_every_dtype_and_no_error_above_its_proved_bound():
    fig = figure_rounding(0, samples=1)
    assert fig.status == PASSED, fig.reason
    records = fig.data["records"]
    assert {r["dtype"] for r in records} == {"float32", "float16", "bfloat16"}
    assert all(r["error"] <= r["deterministic"] for r in records)
    assert DRAW["rounding-bounds"](fig.data).lstrip().startswith("<svg")


def test_a_confirmation_that_breaks_leaves_the_figure_not_checked_with_the_reason(monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("no torch here")

    monkeypatch.setattr(confirmation, "error_curve", broken)
    fig = figure_rounding(0, samples=1)
    assert fig.status == NOT_CHECKED and "no torch here" in fig.reason
