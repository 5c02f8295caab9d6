"""Statements are tied to checked steps, and each claim is stated once, in the catalogue."""
import ast
from pathlib import Path

import pytest
import sympy as sp

from proofs import checker

from proofs import CLAIMS
from proofs.claims import claim
from proofs.engine import Proof
from proofs.tests.derived import derived
from proofs.tests.perturb import derive_perturbed, perturb_relation, perturbations

THEOREMS = Path(__file__).resolve().parents[1] / "theorems"


# The perturbation sweep (every claim: 54 CPU-s under xdist) is in the long tier; three claims stay in the default
# tier, one per kind of proof: a chain of moments, an identity of the merge, an induction.
_DEFAULT_PERTURBED = ("dot-product-variance", "online-softmax-merge", "rounding-gamma-lemma")


@pytest.mark.parametrize("c", [c if c.id in _DEFAULT_PERTURBED else
                               pytest.param(c, marks=pytest.mark.long("perturbation sweep")) for c in CLAIMS],
                         ids=lambda c: c.id)
def test_every_perturbed_statement_fails(c):
    # One perturbation per conjunct, generated from the formal statement: each must make the derivation fail.
    survivors = [str(p) for p in perturbations(c.statement) if derive_perturbed(c.id, p).verified]
    assert not survivors, f"perturbed statements still proved: {survivors}"


def test_perturbations_change_each_kind_of_relation():
    x, y = sp.symbols("x y", real=True)
    assert perturb_relation(sp.Eq(x, y + 2, evaluate=False)) == sp.Eq(x, y, evaluate=False) or \
        perturb_relation(sp.Eq(x, y + 2, evaluate=False)) == sp.Eq(x, 2, evaluate=False)  # a term dropped
    assert perturb_relation(sp.Eq(x, 3 * y, evaluate=False)) == sp.Eq(x, 6 * y, evaluate=False)  # a factor changed
    assert perturb_relation(sp.Eq(x, 0, evaluate=False)) == sp.Eq(x, 1, evaluate=False)
    assert perturb_relation(sp.Le(x, sp.Rational(1, 2))) == sp.Le(x, sp.Rational(1, 4))  # strengthened
    assert perturb_relation(sp.Le(0, x)) == sp.Le(1, x)


def test_derivations_take_their_statement_from_the_catalogue():
    for c in CLAIMS:
        d = derived(c.id)
        assert d.claim_id == c.id and checker._same_all(d.statement, c.statement), c.id
        assert d.title == c.title and d.assumptions == c.assumptions, c.id


def _proof_calls(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Proof":
            yield node


@pytest.mark.parametrize("path", sorted(THEOREMS.glob("*.py")), ids=lambda p: p.name)
def test_no_theorem_restates_title_statement_or_assumptions(path):
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    for call in _proof_calls(tree):
        assert len(call.args) == 1, f"{path.name}:{call.lineno}: Proof takes only the claim id positionally"
        keywords = {k.arg for k in call.keywords}
        assert "title" not in keywords, f"{path.name}:{call.lineno}: the title is the catalogue's"
        # An instance outside the catalogue (statement=) may name its own assumptions; a catalogued claim may not.
        assert "assumptions" not in keywords or "statement" in keywords, f"{path.name}:{call.lineno}"
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    for c in CLAIMS:
        restated = [s for s in (c.title, c.prose, *c.assumptions) if s in strings]
        assert not restated, f"{path.name} restates {c.id}: {restated}"


def test_proof_refuses_a_title_or_assumptions_for_a_catalogued_claim():
    with pytest.raises(ValueError, match="catalogued"):
        Proof("dot-product-variance", "Var(q·k) = d_k under the seeds' assumptions")
    with pytest.raises(ValueError, match="catalogued"):
        Proof("dot-product-variance", assumptions=["independent components"])


def test_an_id_outside_the_catalogue_needs_a_statement():
    with pytest.raises(ValueError, match="statement="):
        Proof("not-a-claim")
    with pytest.raises(ValueError, match="claim_id"):
        Proof(None, statement=sp.true)


def test_a_derivation_that_proves_something_else_fails():
    x = sp.Symbol("x", real=True)
    pf = Proof("demo", statement=sp.Eq(x**2 - 1, (x - 1) * (x + 1), evaluate=False))
    pf.equal("algebra", "a true step about another thing", (x + 1) ** 2, x**2 + 2 * x + 1)
    d = pf.finish(None)
    assert not d.failed_steps and not d.verified
    assert "not established" in d.verdict_line
    pf.equal("algebra", "the statement itself", x**2 - 1, (x - 1) * (x + 1))
    assert pf.finish(None).verified


def test_a_subject_is_connected_by_a_definition_the_checker_rewrites_not_by_a_label():
    x = sp.Symbol("x", real=True)
    V = sp.Function("Var")
    pf = Proof("demo", statement=sp.Eq(V(x), 2, evaluate=False))
    pf.equal("computation", "Var computed", sp.Integer(1) + 1, 2)  # establishes 2 = 2, not Var(x) = 2
    assert not pf.finish(None).verified
    pf.equal("computation", "Var computed", sp.Integer(1) + 1, 2, subject=V(x))  # a label: a named computation
    assert "given unchecked computation equal(subject)" in pf.finish(None).verdict_line
    pf = Proof("demo", statement=sp.Eq(V(x), 2, evaluate=False))
    d = pf.define(V(x), sp.Integer(1) + 1, "Var(x) := 1 + 1")
    pf.rewrite(V(x), 2, [d])
    assert pf.finish(None).verdict_line == "proved, given definition Eq(Var(x), 2)"


def test_a_failed_step_establishes_nothing():
    x = sp.Symbol("x", real=True)
    pf = Proof("demo", statement=sp.Eq(x, x + 1, evaluate=False))
    pf.equal("algebra", "false", x, x + 1)
    d = pf.finish(None)
    assert not d.verified and d.unmatched


def test_a_premise_establishes_nothing():
    x = sp.Symbol("x", real=True)
    pf = Proof("demo", statement=sp.Eq(x, 1, evaluate=False))
    pf.premise("given", "x is one", x, 1, kind="assumption")
    pf.equal("algebra", "unrelated", x, x)
    assert not pf.finish(None).verified


def test_each_conjunct_needs_its_own_step():
    x, y = sp.symbols("x y", real=True)
    pf = Proof("demo", statement=sp.And(sp.Eq(x + y, y + x, evaluate=False), sp.Le(0, x**2, evaluate=False)))
    pf.equal("commutativity", "x + y = y + x", x + y, y + x)
    d = pf.finish(None)
    assert d.unmatched == ("statement conjunct 0 <= x**2 not established",)
    pf.sign(0, "≤", x**2, "x² ≥ 0")
    assert pf.finish(None).verified


def test_catalogue_statements_are_sympy_relations():
    for c in CLAIMS:
        for part in sp.And.make_args(c.statement):
            assert isinstance(part, (sp.core.relational.Relational, sp.Equivalent)), (c.id, part)
    assert claim("dot-product-variance").statement == claim("dot-product-variance").statement


def test_cite_establishes_only_what_the_cited_derivation_proved():
    x, y = sp.symbols("x y", real=True)
    inner = Proof("inner", statement=sp.And(sp.Eq(x + y, y + x, evaluate=False), sp.Le(0, x**2, evaluate=False)))
    inner.equal("commutativity", "x + y = y + x", x + y, y + x)
    inner.sign(0, "≤", x**2, "x² ≥ 0")
    proved = inner.finish(None)
    outer = Proof("outer", statement=proved.statement)
    assert outer.cite(proved) and outer.finish(None).verified  # the whole conjunction, part by part
    other = Proof("other", statement=sp.Eq(x, 1, evaluate=False))
    assert not other.cite(proved, sp.Eq(x, 1, evaluate=False))  # not something it proved
    assert not other.finish(None).verified
    broken = Proof("broken", statement=sp.Eq(x, x + 1, evaluate=False))
    broken.equal("algebra", "false", x, x + 1)
    citing = Proof("citing", statement=sp.Eq(x, x + 1, evaluate=False))
    assert not citing.cite(broken.finish(None))  # a failed derivation establishes nothing
    assert not citing.finish(None).verified
