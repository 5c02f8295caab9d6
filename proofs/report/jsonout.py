"""The report as JSON: every verdict and number under stable keys.

Keys are sorted and the run-dependent part (timestamp, seconds) sits under its own key,
``timings``, so two runs with the same seed and package versions write the same bytes
everywhere else. Computes nothing.
"""
from __future__ import annotations

import json

from proofs.report.model import Report, plain

FORMAT = "attention-proofs-report/1"


def document(report: Report) -> dict:
    return {
        "format": FORMAT,
        "run": plain(report.run),
        "summary": plain(report.summary()),
        "claims": [_claim(c) for c in report.claims],
        # Each derivation's certificate, for `attention-proofs check` to re-check without this package's prover.
        "certificates": {c.id: plain(c.proofs.certificate) for c in report.claims},
        "kernels": plain(report.kernels),
        "audit": plain(report.audit),
        "figures": {f.name: plain(f) for f in report.figures},
        "environment": plain(report.environment),
        "problems": list(report.problems),
        "timings": plain(report.timings),
    } | ({"survey": {k: report.survey[k] for k in ("source", "date", "seed", "header", "rows", "versions")}}
         if report.survey else {})


def _claim(c) -> dict:
    out = dict(plain(c), verdict=c.verdict)
    out["proofs"].pop("certificate", None)  # kept once, under "certificates"
    return out


def render(report: Report) -> str:
    return json.dumps(document(report), sort_keys=True, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def without_timings(text: str) -> dict:
    """The parsed document less its run-dependent part (what determinism is judged on)."""
    doc = json.loads(text)
    doc.pop("timings", None)
    return doc
