"""The proof report: derive, confirm and check every claim, then write HTML, Markdown and JSON.

    from proofs.report import Options, gather, render_files, write_report
    report = gather(Options(mode="quick", seed=0))
    write_report("report", render_files(report, ("html", "md", "json")))

``gather`` runs the layers (numeric and kernels are imported inside it, never at import
time); the renderers take the finished ``Report`` and compute nothing.
"""
from __future__ import annotations

from proofs.report.gather import PLANS, Options, Plan, gather
from proofs.report.model import Report
from proofs.report.write import RefusedError, check_target, holds_report, write_report

FORMATS = ("html", "md", "json")
FILE_NAMES = {"html": "index.html", "md": "report.md", "json": "report.json"}


def render_files(report: Report, formats=FORMATS) -> dict[str, str]:
    """Every output file of the report (relative path → text), figures included where a format needs them."""
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        raise ValueError(f"format {unknown or formats!r} unknown; choose from {', '.join(FORMATS)}")
    files: dict[str, str] = {}
    svgs, problems = {}, {}
    if "html" in formats or "md" in formats:
        from proofs.report import plots

        svgs, problems = plots.draw_all(report.figures)
    if "html" in formats:
        from proofs.report import html

        files[FILE_NAMES["html"]] = html.render(report, svgs, problems)
    if "md" in formats:
        from proofs.report import markdown

        figure_files = {name: f"{markdown.FIGURE_DIR}/{name}.svg" for name in svgs}
        files[FILE_NAMES["md"]] = markdown.render(report, figure_files, problems)
        files.update({path: svgs[name] for name, path in figure_files.items()})
    if "json" in formats:
        from proofs.report import jsonout

        files[FILE_NAMES["json"]] = jsonout.render(report)
    return files


__all__ = ["FORMATS", "FILE_NAMES", "PLANS", "Options", "Plan", "RefusedError", "Report", "gather",
           "check_target", "holds_report", "render_files", "write_report"]
