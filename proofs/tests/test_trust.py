"""Every premise says what trust it asks for; derivations and their renderings list it."""
import subprocess
import sys

import pytest
import sympy as sp

from proofs import CLAIMS
from proofs.engine import CITED, PREMISE_KINDS, Proof
from proofs.tests.derived import derived


def test_premise_kind_is_required_and_checked():
    x = sp.Symbol("x")
    pf = Proof("demo", statement=sp.Eq(x, x, evaluate=False))
    with pytest.raises(TypeError):
        pf.premise("given", "x", x, x)  # no kind
    with pytest.raises(ValueError, match="kind"):
        pf.premise("given", "x", x, x, kind="folklore")
    with pytest.raises(ValueError, match="reference"):
        pf.premise("Chebyshev", "a tail bound", x, x, kind=CITED)


def test_trust_base_and_verdict_line_name_what_the_proof_rests_on():
    x, t = sp.Symbol("x", real=True), sp.Symbol("t", real=True)
    pf = Proof("demo", statement=sp.Le(0, x**2 + 1, evaluate=False))
    fresh = pf.define(t, x**2, "t := x² (a new name: conservative, not listed)")
    cheb = pf.cite_external(sp.Le(0, t, evaluate=False), "Chebyshev's inequality", "stands in for a cited bound")
    bound = pf.sign(0, "≤", t, using=[cheb])
    one = pf.sign(t, "≤", t + 1)
    chained = pf.chain([bound, one], 0, "≤", t + 1)
    pf.rewrite(0, x**2 + 1, [fresh], relation_="≤")
    d = pf.finish(None)
    assert d.verified, d.verdict_line
    # the last step alone proves it; its definition names t, which a cited premise also mentions, so it
    # is not a new name (not conservative) and is listed
    assert d.verdict_line == "proved, given definition Eq(t, x**2)"
    pf2 = Proof("demo", statement=sp.Le(0, t + 1, evaluate=False))
    c2 = pf2.cite_external(sp.Le(0, t, evaluate=False), "Chebyshev's inequality", "a cited bound")
    b2 = pf2.sign(0, "≤", t, using=[c2])
    o2 = pf2.sign(t, "≤", t + 1)
    pf2.chain([b2, o2], 0, "≤", t + 1)
    d2 = pf2.finish(None)
    assert d2.verdict_line == "proved, given cited Chebyshev's inequality: 0 <= t"  # a citation shows what it states
    assert d2.trust_base == {"cited": ["Chebyshev's inequality: 0 <= t"]}
    assert "trusted, not checked" in d2.to_text() and "Chebyshev's inequality" in d2.to_markdown()
    del chained


@pytest.mark.parametrize("c", CLAIMS, ids=lambda c: c.id)
def test_every_premise_has_a_kind_and_cited_ones_a_reference(c):
    d = derived(c.id)
    for s in d.trusted:
        assert s.kind in PREMISE_KINDS, (c.id, s.description)
        assert s.kind != CITED or s.reference, (c.id, s.description)
    for ref in d.trust_base.get(CITED, []):
        assert ref in d.verdict_line, (c.id, ref)
    for comp in d.trust_base.get("computation", []):
        assert f"computation {comp}" in d.verdict_line, (c.id, comp)


def test_cited_theorems_where_the_mathematics_needs_them():
    lines = {c.id: derived(c.id).verdict_line for c in CLAIMS}
    assert "Chebyshev" in lines["scale-trap-limits"] and "central limit theorem" in lines["scale-trap-limits"]
    assert "Gershgorin" in lines["softmax-jacobian-spectrum"]
    # the normal fourth moment is an assumption of the claim (it was Isserlis, cited, before the port)
    assert "assumption Eq(E(x[p]**4), 3) (for all p)" in lines["self-attention-score-moments"]
    # Bienaymé is proved by induction: the one citation is the recursion that defines a finite sum.
    assert "Bienaymé" not in lines["dot-product-variance"]
    assert [c.rsplit(": ", 1)[0] for c in derived("dot-product-variance").trust_base["cited"]] == [
        "the recursion that defines a finite sum: Σ_{i=1}^{m} a_i = Σ_{i=1}^{m−1} a_i + a_m"]


def test_derive_command_prints_the_trust_base_and_verdict_line():
    out = subprocess.run([sys.executable, "-m", "proofs", "derive", "--only", "scale-trap-limits"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "trusted, not checked" in out.stdout and "cited theorems: Chebyshev's inequality" in out.stdout
    verdict = next(line for line in out.stdout.splitlines() if line.strip().startswith("verdict:"))
    assert verdict.strip().startswith("verdict: proved, given") and "Chebyshev's inequality" in verdict
