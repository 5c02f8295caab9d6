"""The three formats: a self-contained HTML page, GitHub Markdown with figure files, JSON with stable keys."""
from __future__ import annotations

import json
import re

from conftest import FIGURE_CLAIMS, load_json
from proofs.report import plots
from proofs.report.mathml import to_mathml
from proofs.report.model import LAYERS, NOT_CHECKED, PASSED

FIGURES = ("variance", "histograms", "saturation", "online-softmax", "kernel-error", "rounding-bounds")


def test_html_is_one_self_contained_file_without_javascript(fake_report):
    html = (fake_report / "index.html").read_text(encoding="utf-8")
    assert not re.search(r"<script|\son[a-z]+\s*=|javascript:", html, re.I)
    assert not re.search(r"<(img|link|iframe|object|embed)\b", html, re.I)  # nothing loaded from elsewhere
    # The only absolute URLs are XML namespace names, which nothing fetches.
    urls = set(re.findall(r"https?://[^\s\"'<>)]+", html))
    assert urls <= {"http://www.w3.org/1998/Math/MathML", "http://www.w3.org/2000/svg",
                    "http://www.w3.org/1999/xlink"}, urls
    assert all(h.startswith("#") for h in re.findall(r'\shref="([^"]*)"', html))


def test_html_has_the_summary_every_figure_as_inline_svg_and_presentation_mathml(fake_report):
    html = (fake_report / "index.html").read_text(encoding="utf-8")
    assert '<table id="summary"' in html
    for cid in FIGURE_CLAIMS:
        assert f'<section class="claim passed" id="{cid}">' in html
    for name in FIGURES:
        assert re.search(rf'<figure id="figure-{name}"><svg ', html), name
    maths = re.findall(r"<math\b.*?</math>", html, re.S)
    assert len(maths) > 20
    assert not any(re.search(r"<(apply|ci|cn)\b", m) for m in maths)  # presentation, not content MathML
    assert all("<semantics>" in m and 'encoding="application/x-tex"' in m for m in maths)
    for section in ("Audit of the seeds", "Kernel conformance", "Environment"):
        assert section in html
    ids = re.findall(r'\sid="([^"]+)"', html)
    assert len(ids) == len(set(ids)), "ids must be unique across the inline SVGs"


def test_markdown_renders_on_github_with_math_and_figure_files(fake_report):
    md = (fake_report / "report.md").read_text(encoding="utf-8")
    assert md.startswith("# attention-proofs report")
    assert md.count("\n$$\n") % 2 == 0 and "\n$$\n" in md  # display math in balanced $$ blocks
    assert "$`" in md  # inline math, GitHub's form that Markdown emphasis cannot break
    for name in FIGURES:
        assert f"(figures/{name}.svg)" in md
        svg = (fake_report / "figures" / f"{name}.svg").read_text()
        assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    for line in md.splitlines():  # a table row's cells must not be split by a | inside math
        if line.startswith("| ") and "$`" in line:
            for math in re.findall(r"\$`(.*?)`\$", line):
                assert "|" not in math.replace("\\|", ""), line


def test_json_holds_every_verdict_and_number_under_stable_keys(fake_report):
    text = (fake_report / "report.json").read_text(encoding="utf-8")
    doc = json.loads(text)
    assert list(doc) == sorted(doc), "keys are written sorted"
    assert list(doc)[-1] == "timings"  # the run-dependent part, apart and last
    assert doc["format"] == "attention-proofs-report/1"
    from proofs import CLAIMS

    assert [c["id"] for c in doc["claims"]] == [c.id for c in CLAIMS if c.id in FIGURE_CLAIMS]  # catalogue order
    for c in doc["claims"]:
        for layer in LAYERS:
            assert c[layer]["status"] in (PASSED, "failed", NOT_CHECKED)
        assert c["verdict"] == PASSED
    variance = next(c for c in doc["claims"] if c["id"] == "dot-product-variance")
    assert set(variance["numeric"]) >= {"estimate", "ci", "p_value", "alpha", "n_samples", "status"}
    assert variance["proofs"]["steps"][0]["status"] == "premise"
    assert doc["summary"] == {**doc["summary"], "claims": len(FIGURE_CLAIMS), "failing": [], "verdict": PASSED}
    assert set(doc["figures"]) == set(FIGURES)
    assert doc["run"]["plan"]["mode"] == "quick"
    assert {"seconds", "generated_at"} <= set(doc["timings"])
    assert "NaN" not in text and "Infinity" not in text  # strict JSON


def test_mathml_converter_marks_what_it_cannot_read():
    good = to_mathml(r"\frac{a}{b}", display=True)
    assert good.startswith('<math xmlns="http://www.w3.org/1998/Math/MathML" display="block"><semantics>')
    assert "<mfrac>" in good
    bad = to_mathml(r"\frac{a}{")
    assert bad.startswith('<code class="tex"') and r"\frac{a}{" in bad


def test_plots_draw_from_finished_data_and_report_what_they_cannot(fake_report):
    from proofs.report.model import FigureData

    svgs, problems = plots.draw_all([FigureData("variance", "t", "c", PASSED, data={"rows": "garbage"}),
                                     FigureData("saturation", "t", "c", NOT_CHECKED, reason="layer absent")])
    assert svgs == {}
    assert problems["saturation"] == "layer absent"
    assert problems["variance"].startswith("could not draw the figure: TypeError")
    doc = load_json(fake_report)
    svg = plots.variance(doc["figures"]["variance"]["data"], prefix="x")
    assert svg.startswith("<svg") and 'id="x-' in svg and "Date" not in svg


def _outside_math_and_code(md: str) -> str:
    """The Markdown a reader sees as text: math ($`…`$, $$ blocks) and code (`…`) taken out, HTML tags too."""
    md = re.sub(r"\n\$\$\n.*?\n\$\$\n", "\n", md, flags=re.S)
    md = re.sub(r"\$`.*?`\$", "", md)
    md = re.sub(r"`[^`\n]*`", "", md)
    return re.sub(r"<[^>\n]+>", "", md).replace("\\|", "|")  # \| is a table cell's escaped |, not TeX


RAW = ("$", "\\", "Eq(", "Sum(", "_{", "^{")


def test_markdown_shows_no_raw_tex_or_sympy_text_and_its_contents_links_land(fake_report):
    md = (fake_report / "report.md").read_text(encoding="utf-8")
    text = _outside_math_and_code(md)
    found = {raw: text[max(0, text.find(raw) - 60):text.find(raw) + 60] for raw in RAW if raw in text}
    assert found == {}
    anchors = set(re.findall(r'<a id="([^"]+)"></a>', md))
    links = re.findall(r"\]\(#([^)]+)\)", md)
    assert "## Contents" in md and len(links) >= 6 + len(FIGURE_CLAIMS) + len(FIGURES)
    assert set(links) <= anchors, set(links) - anchors
    # The seeds' TeX is typeset as math, with the seed's title beside its file name.
    assert r"$`\sqrt{d_k}`$" in md and "Self-Attention by Hand" in md


def test_the_markdown_text_check_sees_raw_tex_and_sympy_text():
    text = _outside_math_and_code("Dividing by $\\sqrt{d_k}$, $`\\frac{1}{2}`$ and `Eq(x)` and Eq(S, Sum(k[i])) S_{N} e^{t}")
    assert [raw for raw in RAW if raw in text] == list(RAW)
    assert "frac" not in text and "Eq(x)" not in text  # typeset math and code are not text


def test_html_names_each_claims_theorem_source_the_commit_and_the_seeds_titles(fake_report):
    html = (fake_report / "index.html").read_text(encoding="utf-8")
    doc = load_json(fake_report)
    from proofs import CLAIMS

    for c in doc["claims"]:
        module, function = CLAIMS[c["id"]].theorem.split(":")
        assert c["theorem"] == f"{module.replace('.', '/')}.py:{function}"
        assert f"Theorem: <code>{c['theorem']}</code>" in html
        for seed in c["seeds"]:
            assert seed["title"] and seed["title"] != "untitled seed" and seed["title"] in html
    commit = doc["environment"]["commit"]
    assert re.fullmatch(r"[0-9a-f]{40}( with uncommitted changes)?", commit), commit
    assert f"git commit {commit}" in html
    assert 'id="contents"' in html
