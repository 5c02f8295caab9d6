"""The fifth red team's families against the checker (rt21e: capture under ∫, Dummy definition heads, predictable
fresh Dummies, the sign rule on sides not shown defined), each closed by a design rule. Its certificates are in
``redteam5/`` (replayed as written; each was "proved" on the checker before the change)."""
import json
from pathlib import Path

import pytest
import sympy as sp

from proofs import checker
from proofs.checker import check

HERE = Path(__file__).parent / "redteam5"


def _load(name):
    return json.loads((HERE / f"{name}.json").read_text(encoding="utf-8"))


# F1: a premise put under an ∫ whose variable is free in it (d = t into ∫ d dt) was captured.
@pytest.mark.parametrize("name", ["a23", "a24", "a25", "a51", "a79"])
def test_f1_capture_by_an_integral_variable_is_refused(name):
    verdict = check(_load(name))
    assert not verdict.proved, verdict.line
    assert "free and bound" in verdict.line


def test_f1_capture_through_a_forall_definition_is_refused():
    x, t, y = sp.symbols("x t y", real=True)
    g = sp.Function("g")
    equations = [(sp.Eq(g(x), t), (x,))]
    with pytest.raises(checker._Refused, match="free and bound"):
        checker._rewrite(sp.Integral(g(y), (t, 0, 1)), equations)


def test_f1_a_rewrite_under_an_integral_without_a_clash_still_applies():
    s, t, y = sp.symbols("s t y", real=True)
    assert checker._rewrite(sp.Integral(y, (t, 0, 1)), [(sp.Eq(y, s), ())]) == sp.Integral(s, (t, 0, 1))


# F2: a Dummy head was named "x" by the definition check and "_x" by the heads it is compared with; F3: a certificate
# could name a free Dummy with the index the checker's next fresh Dummy takes. A certificate holds no free Dummy.
@pytest.mark.parametrize("name", ["a17", "a21", "a22"])
def test_f2_f3_a_free_dummy_in_a_certificate_is_refused(name):
    verdict = check(_load(name))
    assert not verdict.proved, verdict.line
    assert "free Dummy" in verdict.line


def test_f2_a_definition_head_is_named_as_its_body_names_it():
    d = sp.Dummy("x")
    with pytest.raises(checker.CertificateError, match="its own definition"):
        checker._definition_head(sp.Eq(d, d + 1, evaluate=False), (), "P1")


def test_f3_the_checkers_fresh_dummies_are_reserved():
    k = sp.Symbol("k", integer=True)
    renamed = checker._fresh(sp.Sum(k, (k, 1, 3)))
    assert renamed.limits[0][0].dummy_index in checker.RESERVED


def test_f3_substitute_renames_only_the_bound_occurrences():
    t = sp.Symbol("t", real=True)
    k = sp.Symbol("k", integer=True)
    assert substitute_free(sp.Eq(sp.Integral(t, (t, 0, t)), t**2 / 2), {t: sp.Integer(2)}) == set()
    assert substitute_free(sp.Eq(sp.Sum(k, (k, 1, k)), k), {k: sp.Integer(3)}) == set()
    inst = checker.substitute(sp.Eq(sp.Integral(t, (t, 0, t)), t**2 / 2), {t: sp.Integer(2)})
    assert inst.lhs.doit() == inst.rhs == 2


def substitute_free(statement, mapping):
    return checker.substitute(statement, mapping).free_symbols


# F4: the sign rule took SymPy's word that polygamma(1, r) is positive for every real r (its poles included).
def test_f4_sign_refuses_a_side_not_shown_defined():
    verdict = check(_load("a43c"))
    assert not verdict.proved, verdict.line
    assert "not shown defined" in verdict.line


def test_f4_sign_still_decides_a_defined_side():
    r = sp.Symbol("r", positive=True)
    assert "b − a" in checker._decide_order("<", sp.Integer(0), sp.log(r + 1), [])
    # polygamma's own sign handler is the one that is wrong at its poles: its facts are not evidence (redteam6)
    with pytest.raises(checker._Refused, match="not shown real"):
        checker._decide_order("<", sp.Integer(0), sp.polygamma(1, r), [])


def test_f1_capture_by_a_derivative_variable_is_refused():
    d, t = sp.symbols("d t", real=True)
    with pytest.raises(checker._Refused, match="free and bound"):
        checker._rewrite(sp.Derivative(d * t, t), [(sp.Eq(d, t), ())])


# Misleading verdicts: what the verdict prints is what the certificate trusts.
def _computation_certificate(statement, **step):
    return {"format": "attention-proofs/certificate", "version": 1, "claim": "rt.comp",
            "statement": checker.write(statement), "premises": [],
            "steps": [{"id": "S1", "rule": "computation", "conclusion": checker.write(statement), "premises": [],
                       "name": "check_it", "source": "x.py:f", "outcome": True, "detail": "holds", **step}]}


def test_a_computations_recorded_outcome_must_be_json_true():
    false = sp.Eq(sp.Integer(1), 2, evaluate=False)
    assert check(_computation_certificate(false)).proved  # trusted as recorded, and listed
    for outcome in ("False", "true", 1, None):
        verdict = check(_computation_certificate(false, outcome=outcome, detail="does not hold"))
        assert not verdict.proved and "does not hold" in verdict.line, outcome


@pytest.mark.parametrize("name, source", [("identity", "checked by the identity engine"), ("\u200b", "\u200b"),
                                          ("check it", "x.py:f"), ("check_it", "x.py")])
def test_a_computation_is_named_as_a_function_and_where_it_is(name, source):
    verdict = check(_computation_certificate(sp.Eq(sp.Integer(4), 5, evaluate=False), name=name, source=source))
    assert not verdict.proved and "a computation needs a name" in verdict.line


def test_the_verdict_prints_a_premise_whole():
    from proofs.engine import Proof

    xs, y, z = sp.symbols("x0:25"), sp.Symbol("y"), sp.Symbol("z")
    total = sp.Add(*xs)
    pf = Proof("rt.trunc", statement=sp.Eq(z * (total + y), z * (total + 1), evaluate=False))
    pf.rewrite(z * (total + y), z * (total + 1), [pf.assume(sp.Eq(total + y, total + 1, evaluate=False))])
    verdict = pf.finish().check
    assert verdict.proved and sp.sstr(sp.Eq(total + y, total + 1, evaluate=False)) in verdict.line
