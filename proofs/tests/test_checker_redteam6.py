"""The sixth red team's families against the checker (rt21f: SymPy's wrong assumption handlers, IndexedBase facts,
noncommutative factors, SymPy's integrate, misleading names), each closed by a design rule. Its certificates are in
``redteam6/`` (replayed as written; each forgery was "proved" on the checker before the change)."""
import json
from pathlib import Path

import pytest
import sympy as sp

from proofs import checker
from proofs.checker import check
from proofs.identity import fact, identity
from proofs.srepr import CertificateError, read, text

HERE = Path(__file__).parent / "redteam6"


def _load(name):
    return json.loads((HERE / f"{name}.json").read_text(encoding="utf-8"))


def _refused(name, why):
    verdict = check(_load(name))
    assert not verdict.proved, verdict.line
    assert why in verdict.line, verdict.line


# Root cause 1: SymPy's handlers for atan, asin, binomial are wrong (atan(n) "positive" at n = 0, binomial(n, 3)
# "negative"); sign, bound, instance, truncation, the engine's index facts, δ-sifting and _nonzero trusted them.
@pytest.mark.parametrize("name, why", [
    ("a05_atan_sign", "not shown real"),                        # F3: 0 < atan(x), x ≥ 0 an integer
    ("a06_binomial_sign", "not shown real"),                    # F4: binomial(n, 3) < 0
    ("a80_index_facts_binomial", "does not imply"),             # F5: Σ |k| = Σ k over 1..−C(n, 3)
    ("a81_truncation_binomial", "does not imply"),              # F6: truncation at m = −C(n, 3)
    ("a83_delta_sift_binomial", "does not imply"),              # F7: δ-sift with j = −C(n, 3)
    ("a90_bound_binomial", "not shown ≥ 0"),                    # F8: C(n, 3)² ≤ (1 − C(n, 3))²
    ("a94_instance_binomial", "is not shown"),                  # F9: x := −C(n, 3) for a positive x
    ("a07_asin_denominator", "not shown non-zero"),             # F11: asin(n) as a denominator
    ("a07b_atan_denominator", "not shown non-zero"),
    ("a49_atan_nonzero_deriv", "not shown non-zero"),
])
def test_root1_facts_of_untrusted_functions_are_not_evidence(name, why):
    _refused(name, why)


def test_the_gate_answers_only_through_trusted_classes():
    n = sp.Symbol("n", integer=True, nonnegative=True)
    m = sp.Symbol("m", integer=True)
    x = sp.Symbol("x", real=True)
    # SymPy's own handlers call atan(n) positive and C(m, 3) negative; in a process that imports proofs SymPy never
    # learns either (identity._gated_ask), and the gate answers nothing
    assert sp.atan(n).is_positive is None and fact(sp.atan(n), "positive") is None
    assert sp.binomial(m, 3).is_negative is None and fact(sp.binomial(m, 3), "negative") is None
    assert fact(sp.asin(m), "zero") is None and fact(1 + sp.atan(n) ** 2, "positive") is None  # anywhere in the tree
    assert fact(sp.exp(x), "positive") is True and fact(sp.log(sp.exp(x) + 1), "positive") is True
    assert fact(sp.Abs(x) + 1, "positive") is True and fact(x - 1, "positive") is None
    k = sp.Symbol("k", integer=True, positive=True)
    assert fact(sp.Sum(sp.exp(k), (k, 1, n + 1)), "positive") is True
    assert fact(sp.floor(x), "integer") is True and fact(sp.sin(x), "real") is True and fact(sp.tan(x), "real") is None
    z = sp.Symbol("z")
    assert sp.Max(z, 1).is_positive is None and fact(sp.Max(z, 1), "positive") is None  # Max of a non-real z
    assert fact(sp.Max(x, 1), "positive") is True


def test_the_engine_does_not_sift_or_divide_on_an_untrusted_fact():
    n = sp.Symbol("n", integer=True)
    ok, why = identity((sp.atan(n) ** 2 + sp.atan(n)) / sp.atan(n), sp.atan(n) + 1)
    assert not ok and "not shown non-zero" in why
    ok, why = identity(sp.exp(n) / sp.exp(n) + sp.atan(n), 1 + sp.atan(n))  # a trusted denominator still divides
    assert ok, why


def test_index_facts_come_only_from_trusted_limits():
    from proofs.identity import _index_facts

    n, m = sp.Symbol("n", integer=True), sp.Symbol("m", integer=True, nonnegative=True)
    assert (1 - sp.binomial(n, 3)).is_nonnegative is None  # SymPy's wrong fact (n = 5: −9), not learnt here ...
    assert _index_facts(sp.Integer(1), -sp.binomial(n, 3)) == {}  # ... gives the index nothing
    assert _index_facts(sp.Integer(1), m) == {"integer": True, "positive": True}


def test_sign_still_signs_through_trusted_functions():
    x = sp.Symbol("x", real=True)
    assert checker._shown_sign(sp.exp(x) + sp.Abs(x), []) == ">"
    assert checker._shown_sign(sp.atan(sp.Symbol("n", integer=True, nonnegative=True)), []) is None


# The same wrong facts, used by SymPy as it builds an expression read from a certificate (two of our own, each
# "proved" before: |C(n, 3)| read as −C(n, 3); [C(n, 3) < 0] read as 1).
@pytest.mark.parametrize("name, why", [
    ("c01_abs_binomial_construction", "refuted"),
    # [C(n, 3) < 0] compares a value not shown real (n has no facts): the conclusion is not defined as written
    ("c02_piecewise_binomial_construction", "compared binomial(n, 3) is not shown real"),
])
def test_root1_the_reader_refuses_evaluation_on_an_untrusted_fact(name, why):
    _refused(name, why)  # read as written (SymPy learns no binomial fact to build on), then refused


def test_root1_the_reader_reads_a_written_tree_as_itself_and_refuses_one_sympy_rebuilds():
    x = sp.Symbol("x", real=True)
    for e in (x * sp.sin(x) ** 2, sp.Piecewise((sp.sin(x), x < 1), (0, True)), sp.exp(x), -x / 2):
        assert read(text(e)) == e and text(read(text(e))) == text(e)
    xs = "Symbol('x', real=True)"
    for written in (f"Mul({xs}, sin({xs}), sin({xs}))", f"Abs(exp({xs}))", "Abs(sin(Integer(1)))",
                    f"Add({xs}, Mul(Integer(-1), {xs}))", f"Piecewise(ExprCondPair(Integer(1), true))"):
        with pytest.raises(CertificateError, match="as SymPy built it"):
            read(written)  # each would be read as another tree than the one written (x·sin²x, eˣ, …)


# Root cause 2: an IndexedBase's own facts were not read (definition heads, the one-name rule).
def test_root2_an_indexed_head_declared_by_its_base_is_listed():
    verdict = check(_load("a02_indexedbase_label"))  # F1: a[i] := −1 with a positive base; then 0 < −1
    assert verdict.line.startswith("proved, given definition") and "declared positive" in verdict.line, verdict.line


def test_root2_definition_head_reads_the_base_facts():
    a, i = sp.IndexedBase(sp.Symbol("a"), positive=True), sp.Symbol("i", integer=True)
    name, unshown = checker._definition_head(sp.Eq(a[i], -1, evaluate=False), (), "P1")
    assert name == "a" and "positive" in unshown


def test_root2_two_indexed_bases_of_one_name_are_refused():
    _refused("a91_indexedbase_same_name", "stands for two different symbols")  # F12: printed a[1] < a[1]


# Root cause 3: linearity pulled noncommutative factors out of a Σ in front (BA = AB); the algebra is commutative.
@pytest.mark.parametrize("name", ["a04_noncomm_linearity_pow", "a88b_noncomm_expectation_commE",
                                  "a66b_instance_noncomm"])
def test_root3_noncommutative_names_are_refused(name):
    _refused(name, "noncommutative")


def test_root3_the_reader_refuses_each_noncommutative_kind():
    x = sp.Symbol("x")
    for e in (sp.Symbol("A", commutative=False), sp.Function("F", commutative=False)(x),
              sp.IndexedBase(sp.Symbol("B", commutative=False))[x]):
        with pytest.raises(CertificateError, match="noncommutative"):
            read(text(e))
    assert read(text(sp.MatrixSymbol("W", 2, 2) * sp.MatrixSymbol("V", 2, 2))).args[0].name == "W"  # ordered MatMul


# Root cause 4: SymPy's integrate is wrong for ∫₀^{2π} |sin ax| dx, and the probes and simplify went through it.
def test_root4_an_integral_is_not_reduced_through_integrate():
    _refused("a82_integral_doit", "failed: step S1 (identity) failed")
    x, k = sp.Symbol("x", real=True), sp.Symbol("k", integer=True)
    ok, why = identity(sp.Integral(x**2, (x, 0, 1)) + sp.Sum(k, (k, 1, 1)), sp.Rational(4, 3))
    assert not ok and "does not simplify" in why  # true, but only an antiderivative would show it: not shown


def test_root4_probes_evaluate_an_integral_by_quadrature():
    x, k = sp.Symbol("x", real=True), sp.Symbol("k", integer=True)
    ok, why = identity(sp.Integral(x**2, (x, 0, 1)) + sp.Sum(k, (k, 1, 1)), sp.Rational(3, 2))
    assert not ok and why.startswith("refuted") and "1.33333" in why


# Misleading verdicts.
def test_an_invisible_combining_mark_in_a_name_is_refused():
    _refused("a69_invisible_combining", "outside the names' alphabet")
    for c in ("\u034f", "\u115f", "\ufe0f", "\u2800", "\u0251", "\u2170"):  # and braille blank, Latin ɑ, Roman ⅰ
        with pytest.raises(CertificateError, match="outside the names' alphabet"):
            read(f"Symbol('a{c}')")
    assert read("Symbol('x\u0302')").name == "x\u0302"  # a visible combining accent stays allowed


def test_names_that_read_as_constants_are_refused_unless_integers():
    _refused("a84_symbol_named_e", "reads as")
    for name in ("e", "i"):
        with pytest.raises(CertificateError, match="unless it is declared an integer"):
            read(f"Symbol('{name}', real=True)")
        assert read(f"Symbol('{name}', integer=True, positive=True)").name == name  # an index, a count
    for name in ("E", "I", "pi", "oo"):
        with pytest.raises(CertificateError, match="reads as a number"):
            read(f"Symbol('{name}')")


def test_a_definition_note_lists_only_what_was_declared():
    verdict = check(_load("a56_function_head_positive"))  # f declared positive: not "declared negative"
    declared = verdict.line.split(" declared ")[1].split(":")[0].split(", ")
    assert "positive" in declared and "negative" not in declared and "extended_negative" not in declared, verdict.line


def test_a_computation_cannot_pose_as_the_checker():
    _refused("a10_computation_name", "not named as a rule")
    step = _load("a10_computation_name")
    step["steps"][0]["name"] = "my_count"
    assert "not named as a rule" in check(step).line  # still sourced in proofs/checker.py
    step["steps"][0]["source"] = "proofs/./identity.py:_identity"
    assert "not named as a rule" in check(step).line
    step["steps"][0]["source"] = "proofs/theorems/traffic.py:count"
    assert check(step).line.startswith("proved, given unchecked computation my_count")  # taken as recorded, and listed
