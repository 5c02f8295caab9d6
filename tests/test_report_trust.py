"""The report says per claim what its verdict takes on trust (issue: a stated trust base)."""
from __future__ import annotations

from html import escape
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
    md = "\n".join(markdown._proof(claim))
    assert f"Verdict: {line}" in md and "Gershgorin circle theorem" in md and "Trusted, not checked:" in md
    page = html._proof(claim)
    assert f"Verdict: {escape(line)}" in page and "Trusted, not checked:" in page


def test_a_claim_with_no_premise_says_it_trusts_nothing():
    evidence, _ = prove("softmax-shift-invariance")
    assert evidence.verdict_line == "proved" and evidence.trusted == []
    assert "- nothing" in "\n".join(markdown._proof(SimpleNamespace(proofs=evidence)))
