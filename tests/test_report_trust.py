"""The report says per claim what its verdict takes on trust (a stated trust base)."""
from __future__ import annotations

from types import SimpleNamespace

from proofs.report import html, markdown
from proofs.report.gather import prove


def test_a_cited_theorem_shows_in_the_verdict_line_and_the_trust_list():
    evidence, _ = prove("softmax-jacobian-spectrum")
    line = evidence.verdict_line
    cited = [p["reference"] for p in evidence.certificate["premises"] if p["kind"] == "cited"]
    assert any(ref.startswith("Gershgorin circle theorem") for ref in cited), cited  # the eigenvalue bound needs it
    # The verdict line lists what the proof is given, a cited theorem as "<reference>: <statement used>".
    assert line.startswith("proved, given ")
    given = line.removeprefix("proved, given ")
    assert all(f"{ref}: " in given for ref in cited), (cited, line)
    assert any(line.startswith("cited") and "Gershgorin" in line for line in evidence.trusted), evidence.trusted
    claim = SimpleNamespace(proofs=evidence)
    # The report shows the line with its formulas typeset (the checker writes them as SymPy's text).
    md = "\n".join(markdown._proof(claim))
    assert f"Verdict: {markdown.prose(line, evidence.formulas)}" in md and "Trusted, not checked:" in md
    page = html._proof(claim)
    assert f"Verdict: {html.prose(line, evidence.formulas)}" in page and "Trusted, not checked:" in page
    for shown, prose in ((md, markdown.prose), (page, html.prose)):
        assert all(prose(ref) in shown for ref in cited), cited
        assert "Eq(" not in shown and "KroneckerDelta(" not in shown


def test_the_checkers_sympy_text_is_shown_as_the_formula_it_names():
    evidence, _ = prove("softmax-jacobian-spectrum")
    texts = [t for t in evidence.formulas if t in evidence.verdict_line]
    assert any(t.startswith("Eq(") for t in texts) and any("<=" in t for t in texts), texts
    page = html.prose(evidence.verdict_line, evidence.formulas)
    assert "Eq(" not in page and "<=" not in page and page.count("<math") >= 4
    # Without the formulas the same line shows SymPy's text: the mapping is what removes it.
    assert "Eq(" in html.prose(evidence.verdict_line)


def test_a_claim_with_no_premise_says_it_trusts_nothing():
    evidence, _ = prove("softmax-shift-invariance")
    assert evidence.verdict_line == "proved" and evidence.trusted == []
    assert "- nothing" in "\n".join(markdown._proof(SimpleNamespace(proofs=evidence)))


def test_a_formula_the_checker_escaped_is_still_typeset_in_markdown():
    # score-asymmetry's verdict names a Matrix, whose SymPy text holds a newline that the checker's line
    # writes as \u000a: the Markdown must show the formula typeset, not SymPy's text around a fragment of it.
    from test_report_formats import _outside_math_and_code

    evidence, _ = prove("score-asymmetry")
    assert "\\u000a" in evidence.verdict_line and "Eq(" in evidence.verdict_line
    text = _outside_math_and_code(markdown.prose(evidence.verdict_line, evidence.formulas))
    assert "Eq(" not in text and "\\u000a" not in text and "Matrix(" not in text, text[:300]
    assert "Eq(" in _outside_math_and_code(markdown.prose(evidence.verdict_line))  # the check can see it
