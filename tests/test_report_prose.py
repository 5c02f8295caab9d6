"""Every sentence of the report, for every claim and every seed-audit record, is typeset: no SymPy program text
or raw TeX reaches a reader. The browser test (test_report_browser.py) looks at the figures' claims only; this
looks at the text of the whole catalogue's proofs and the audit, as the HTML page shows it."""
from __future__ import annotations

import html
import re

import pytest

from test_report_browser import RAW, SYMPY_TEXT

_UNSHOWN = re.compile(r"<math\b.*?</math>|<style\b.*?</style>|<script\b.*?</script>", re.S)
_RAW = re.compile("|".join([*map(re.escape, RAW), SYMPY_TEXT]))


def untypeset(page: str) -> list[str]:
    """The lines of the page's visible text (its <math> typeset, so left out) that hold TeX source or SymPy text."""
    text = html.unescape(re.sub(r"<[^>]+>", "\n", _UNSHOWN.sub("", page)))
    return [line.strip() for line in text.splitlines() if _RAW.search(line)]


def test_the_scan_finds_sympy_text_and_tex_but_not_typeset_math():
    page = ("<p>nonnegative: (w*y + z)*e</p><p>moves 4*N**2 elements</p><p>by $\\sqrt{d_k}$</p>"
            "<math><mi>x</mi><annotation>w*y \\frac{1}{2}</annotation></math><p>exp(c) leaves the sum</p>")
    assert untypeset(page) == ["nonnegative: (w*y + z)*e", "moves 4*N**2 elements", "by $\\sqrt{d_k}$"]


@pytest.mark.long("whole-catalogue report")
def test_no_sentence_of_the_proofs_or_the_audit_shows_sympy_text_or_tex():
    from proofs.report import render_files
    from proofs.report.gather import Options, gather

    report = gather(Options(layers=("proofs",)))
    assert report.audit.records, "the audit ran"
    assert untypeset(render_files(report, formats=("html",))["index.html"]) == []
