"""The rounding-bounds figure: drawn from the confirmation's records, never re-derived in the report."""
from __future__ import annotations

import kernels.rounding_confirmation as confirmation
from kernels.evidence import KernelEvidence, Plan, rounding_data
from proofs.report.gather import Asked, Options, kernel_figures
from proofs.report.model import NOT_CHECKED, PASSED, KernelSummary
from proofs.report.plots import DRAW


def _figure():
    data, error = rounding_data(Plan(mode="quick", rounding_samples=1))
    asked = Asked(answer=KernelEvidence(rounding=data, rounding_error=error, swept=True))
    [_, fig] = kernel_figures(asked, KernelSummary(status=PASSED), Options())
    assert fig.name == "rounding-bounds"
    return fig


def test_the_figure_has_every_dtype_and_no_error_above_its_proved_bound():
    fig = _figure()
    assert fig.status == PASSED, fig.reason
    records = fig.data["records"]
    assert {r["dtype"] for r in records} == {"float32", "float16", "bfloat16"}
    assert all(r["error"] <= r["deterministic"] for r in records)
    assert DRAW["rounding-bounds"](fig.data).lstrip().startswith("<svg")


def test_a_confirmation_that_breaks_leaves_the_figure_not_checked_with_the_reason(monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("no torch here")

    monkeypatch.setattr(confirmation, "error_curve", broken)
    fig = _figure()
    assert fig.status == NOT_CHECKED and "no torch here" in fig.reason
