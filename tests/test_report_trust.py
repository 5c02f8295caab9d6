"""The report says per claim what its verdict takes on trust (issue: a stated trust base)."""
from __future__ import annotations

from types import SimpleNamespace

from proofs.report import html, markdown
from proofs.report.gather import prove


def test_a_cited_theorem_shows_in_the_verdict_line_and_the_trust_list():
    evidence, _ = prove("softmax-jacobian-spectrum")
    assert evidence.verdict_line.startswith("proved, given Gershgorin")
    assert any(line.startswith("cited") and "Gershgorin" in line for line in evidence.trusted), evidence.trusted
    claim = SimpleNamespace(proofs=evidence)
    md = "\n".join(markdown._proof(claim))
    assert "Verdict: proved, given Gershgorin" in md and "Trusted, not checked:" in md
    page = html._proof(claim)
    assert "proved, given Gershgorin" in page and "Trusted, not checked:" in page


def test_a_claim_with_no_premise_says_it_trusts_nothing():
    evidence, _ = prove("softmax-shift-invariance")
    assert evidence.verdict_line == "proved" and evidence.trusted == []
    assert "- nothing" in "\n".join(markdown._proof(SimpleNamespace(proofs=evidence)))
