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


def test_trust_base_and_verdict_line():
    x = sp.Symbol("x", real=True)
    pf = Proof("demo", statement=sp.Le(0, x**2, evaluate=False))
    pf.premise("definition", "x is real", x, x, kind="definition")
    pf.premise("Chebyshev", "a cited bound", x, 1, "≤", kind=CITED, reference="Chebyshev's inequality")
    pf.holds("square", "x² ≥ 0", 0, x**2, lambda: (x**2).is_nonnegative, "≤")
    d = pf.finish(None)
    assert d.trust_base == {"definition": ["x is real"], "cited": ["Chebyshev's inequality"]}
    assert [s.kind for s in d.trusted] == ["definition", "cited"]
    assert d.verdict_line == "proved, given Chebyshev's inequality"
    assert "trusted, not checked" in d.to_text() and "Chebyshev's inequality" in d.to_markdown()


@pytest.mark.parametrize("c", CLAIMS, ids=lambda c: c.id)
def test_every_premise_has_a_kind_and_cited_ones_a_reference(c):
    d = derived(c.id)
    for s in d.trusted:
        assert s.kind in PREMISE_KINDS, (c.id, s.description)
        assert s.kind != CITED or s.reference, (c.id, s.description)
    cited = d.trust_base.get(CITED, [])
    assert d.verdict_line == "proved" + (", given " + ", ".join(cited) if cited else "")


def test_cited_theorems_where_the_mathematics_needs_them():
    lines = {c.id: derived(c.id).verdict_line for c in CLAIMS}
    assert "Chebyshev" in lines["scale-trap-limits"] and "central limit theorem" in lines["scale-trap-limits"]
    assert "Gershgorin" in lines["softmax-jacobian-spectrum"]
    assert "Isserlis" in lines["self-attention-score-moments"]
    # Bienaymé is proved by induction: the one citation is the recursion that defines a finite sum.
    assert "Bienaymé" not in lines["dot-product-variance"]
    assert derived("dot-product-variance").trust_base["cited"] == [
        "the recursion that defines a finite sum: Σ_{i=1}^{m} a_i = Σ_{i=1}^{m−1} a_i + a_m"]


def test_derive_command_prints_the_trust_base_and_verdict_line():
    out = subprocess.run([sys.executable, "-m", "proofs", "derive", "--only", "scale-trap-limits"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "trusted, not checked" in out.stdout and "cited theorems: Chebyshev's inequality" in out.stdout
    assert "verdict: proved, given Chebyshev's inequality" in out.stdout
