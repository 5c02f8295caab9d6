"""The checker decides "proved", and nothing a theorem does can talk past it.

Each forgery below was tried against the previous design through the public Proof API and came out
plain "proved" there. Here each one is either refused or proved only "given" the premise or
computation it smuggled in, named in the verdict line.
"""
import ast
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
import sympy as sp

from proofs import checker
from proofs.engine import CITED, Derivation, Proof

x, y = sp.symbols("x y", real=True)
n = sp.Symbol("n", integer=True, positive=True)
i = sp.Symbol("i", integer=True, positive=True)
S = sp.Symbol("S")
Var = sp.Function("Var")
FALSE = sp.Eq(x, x + 1, evaluate=False)


def _proof(statement):
    return Proof("demo", statement=statement)


# ------------------------------------------------------------------ forgeries through the Proof API

def test_a_custom_callable_is_a_named_computation_never_plain_proved():
    pf = _proof(FALSE)
    pf.holds("trust me", "x = x + 1", x, x + 1, lambda: True)
    line = pf.finish().verdict_line
    assert line.startswith("proved, given unchecked computation <lambda>") and "test_checker.py" in line


def test_a_check_returning_a_truthy_tuple_is_not_a_pass():
    pf = _proof(FALSE)
    pf.holds("tuple", "x = x + 1", x, x + 1, lambda: (False, "no"))
    assert not pf.finish().verified
    pf = _proof(FALSE)
    pf.holds("tuple", "x = x + 1", x, x + 1, lambda: ("yes", "a string is not a verdict"))
    assert not pf.finish().verified


def test_establishes_and_subject_and_where_are_labels_named_in_the_verdict():
    for kw in ({"establishes": FALSE}, {"subject": x}, {"where": lambda e: sp.Integer(1)}):
        pf = _proof(FALSE)
        pf.equal("label", "1 = 1", sp.Integer(1), 1 if "where" in kw else x + 1, **kw) if "subject" in kw else \
            pf.equal("label", "1 = 1", sp.Integer(1), sp.Integer(1) if "where" not in kw else x + 1, **kw)
        d = pf.finish()
        assert not (d.verified and d.verdict_line == "proved"), kw
        assert not d.verified or "computation equal(" in d.verdict_line, (kw, d.verdict_line)


def test_a_definition_of_the_statements_own_subject_is_named_in_the_verdict():
    pf = _proof(sp.Eq(Var(S), 5, evaluate=False))
    d = pf.define(Var(S), 5, "Var(S) := 5")
    pf.rewrite(Var(S), 5, [d])
    assert pf.finish().verdict_line == "proved, given definition Eq(Var(S), 5)"


def test_a_definition_that_constrains_a_name_already_used_is_not_conservative():
    t = sp.Symbol("t", real=True)
    pf = _proof(sp.Eq(x, x, evaluate=False))
    pf.assume(sp.Gt(t, 7, evaluate=False), "t > 7")
    pf.define(t, 5, "t := 5")
    pf.identity(x, x)
    d = pf.finish()
    # unused premises are not in the verdict, but the definition is recorded as non-conservative
    assert d.verdict_line == "proved"
    pf = _proof(sp.Gt(5, 7, evaluate=False))
    a = pf.assume(sp.Gt(t, 7, evaluate=False), "t > 7")
    dd = pf.define(t, 5, "t := 5")
    pf.rewrite(t, 7, [dd, a], relation_=">")  # rewriting t to 5 inside t > 7 ... cannot make 5 > 7
    assert not pf.finish().verified


def test_a_catalogued_id_cannot_carry_another_statement_and_statements_are_read_only():
    with pytest.raises(ValueError, match="another statement"):
        Proof("dot-product-variance", statement=FALSE)
    pf = Proof("dot-product-variance")
    with pytest.raises(AttributeError):
        pf.statement = FALSE
    with pytest.raises(AttributeError):
        pf.steps.append("a step")  # a replay's tuple, not the proof's record


def test_a_derivation_is_frozen_and_its_verdict_is_recomputed_from_the_certificate():
    pf = _proof(sp.Eq((x + 1) ** 2, x**2 + 2 * x + 1, evaluate=False))
    pf.identity((x + 1) ** 2, x**2 + 2 * x + 1)
    d = pf.finish()
    assert d.verified
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.certificate_json = "{}"
    with pytest.raises(AttributeError):
        d.verified = True
    cert = d.certificate
    cert["statement"] = checker.write(FALSE)  # editing the returned dict changes nothing
    assert d.verified and not checker.check(cert).proved


def test_a_cited_derivation_is_replayed_inside_the_citing_certificate():
    inner = _proof(FALSE)
    inner.identity(x, x + 1)
    outer = _proof(FALSE)
    outer.cite(inner.finish())
    assert not outer.finish().verified
    cert = outer.finish().certificate
    good = _proof(sp.Eq(x, x, evaluate=False))
    good.identity(x, x)
    cert["steps"][0]["certificate"] = dict(good.finish().certificate, statement=checker.write(FALSE))
    assert not checker.check(cert).proved  # an edited statement in the cited certificate does not replay


def test_a_hand_built_derivation_or_certificate_proves_only_what_replays():
    pf = _proof(FALSE)
    pf.identity(x, x)
    cert = pf.finish().certificate
    cert["steps"][0]["conclusion"] = checker.write(FALSE)  # claim the step concluded the statement
    forged = Derivation("demo", "demo", (), json.dumps(cert))
    assert not forged.verified and "step S1 (identity) failed" in forged.verdict_line
    cert["steps"] = []
    assert not checker.check(cert).proved  # deleting the failed steps leaves nothing established


def test_a_conjunct_resting_on_an_undischarged_hypothesis_is_not_established():
    pf = _proof(FALSE)
    h = pf.hypothesis(FALSE)
    pf.rewrite(x, x + 1, [h])
    d = pf.finish()
    assert not d.verified and "not established" in d.verdict_line


def test_an_assumed_conjunct_is_not_proved():
    pf = _proof(FALSE)
    a = pf.assume(FALSE)
    pf.rewrite(x, x + 1, [a])
    assert "assumed, not proved" in pf.finish().verdict_line


def test_induction_is_built_by_the_checker_from_the_statement():
    P = sp.Eq(sp.Sum(i, (i, 1, n)), n * (n + 1) / 2, evaluate=False)

    def build(base_value, rhs_at_base, wrong_step=False):
        pf = _proof(P)
        base = pf.identity(sp.Sum(i, (i, 1, base_value)), rhs_at_base)
        h = pf.hypothesis(checker.substitute(P, {n: n - 1}))
        split = pf.identity(sp.Sum(i, (i, 1, n)), sp.Sum(i, (i, 1, n - 1)) + n)
        rhs = n * (n + 1) / 2 if not wrong_step else n * (n + 1) / 2 + 0 * n
        step = pf.rewrite(sp.Sum(i, (i, 1, n)), rhs, [split, h])
        pf.induction(P, n, base_value, base, step, h)
        return pf.finish()

    assert build(1, sp.Integer(1)).verified
    assert not build(2, sp.Integer(3)).verified  # a base case at 2 does not cover n = 1
    Q = sp.Eq(sp.Sum(i, (i, 1, n)), n**2, evaluate=False)  # false; the step cannot be shown
    pf = _proof(Q)
    base = pf.identity(sp.Sum(i, (i, 1, 1)), sp.Integer(1))
    h = pf.hypothesis(checker.substitute(Q, {n: n - 1}))
    split = pf.identity(sp.Sum(i, (i, 1, n)), sp.Sum(i, (i, 1, n - 1)) + n)
    step = pf.rewrite(sp.Sum(i, (i, 1, n)), n**2, [split, h])
    pf.induction(Q, n, 1, base, step, h)
    assert not pf.finish().verified


def test_an_enumeration_proves_only_its_instances():
    m = sp.Symbol("m", integer=True, positive=True)
    P = sp.Eq(sp.Mod(m**2, 2), sp.Mod(m, 2), evaluate=False)
    pf = _proof(P)  # the general statement
    pf.enumeration(P, [(m, 1, 8)])
    d = pf.finish()
    assert not d.verified and "not established" in d.verdict_line
    bounded = sp.And(*[checker.substitute(P, {m: v}) for v in range(1, 9)], evaluate=False)
    pf = _proof(bounded)
    pf.enumeration(P, [(m, 1, 8)])
    assert pf.finish().verified


def test_sign_and_chain_refuse_a_false_inequality():
    u = sp.Symbol("u", positive=True)
    pf = _proof(sp.Le(x**2 + 1, x**2, evaluate=False))
    pf.sign(x**2 + 1, "≤", x**2)
    assert not pf.finish().verified
    pf = _proof(sp.Le(n * u / (1 - n * u), (n + 1) * u / (1 - (n + 1) * u), evaluate=False))
    pos = pf.assume(sp.Gt(1 - (n + 1) * u, 0, evaluate=False))
    pf.sign(n * u / (1 - n * u), "≤", (n + 1) * u / (1 - (n + 1) * u), using=[pos])
    assert pf.finish().verdict_line.startswith("proved, given assumption")
    pf = _proof(sp.Le(n * u / (1 - n * u), (n + 1) * u / (1 - (n + 1) * u), evaluate=False))
    pf.sign(n * u / (1 - n * u), "≤", (n + 1) * u / (1 - (n + 1) * u))  # without 1 − (n+1)u > 0 it is false
    assert not pf.finish().verified
    pf = _proof(sp.Lt(x**2, x**2 + 1, evaluate=False))
    a = pf.sign(x**2, "≤", x**2 + y**2)
    b = pf.sign(x**2 + y**2, "≤", x**2 + y**2 + 1)
    pf.chain([a, b], x**2, "<", x**2 + 1)  # the links end at x² + y² + 1, not x² + 1
    assert not pf.finish().verified


def test_linearity_pulls_out_only_constants():
    E, q = sp.Function("E"), sp.IndexedBase("q", real=True)
    pf = _proof(sp.Eq(E(q[1] * q[2]), q[1] * E(q[2]), evaluate=False))
    pf.linearity(E(q[1] * q[2]), q[1] * E(q[2]), operator=E, random=[q])
    assert not pf.finish().verified
    pf = _proof(sp.Eq(E(2 * q[1] + 3 * q[2]), 2 * E(q[1]) + 3 * E(q[2]), evaluate=False))
    pf.linearity(E(2 * q[1] + 3 * q[2]), 2 * E(q[1]) + 3 * E(q[2]), operator=E, random=[q])
    assert pf.finish().verified


# ------------------------------------------------------------------ malformed certificates

def _cert(**over):
    pf = _proof(sp.Eq(x, x, evaluate=False))
    pf.identity(x, x)
    return {**pf.finish().certificate, **over}


@pytest.mark.parametrize("change, why", [
    ({"version": 99}, "version"),
    ({"statement": "__import__('os').system('echo pwned')"}, "not a SymPy constructor"),
    ({"statement": "Symbol('x').__class__"}, "not a SymPy constructor"),
    ({"premises": [{"id": "P1", "kind": "cited", "statement": "Symbol('x')"}]}, "reference"),
    ({"premises": [{"id": "P1", "kind": "folklore", "statement": "Symbol('x')"}]}, "kind"),
    ({"steps": [{"id": "S1", "rule": "trust-me", "conclusion": "Symbol('x')", "premises": []}]}, "unknown rule"),
    ({"steps": [{"id": "S1", "rule": "rewrite", "conclusion": "Symbol('x')", "premises": ["S9"]}]}, "not an earlier"),
])
def test_malformed_certificates_fail_with_a_reason(change, why):
    verdict = checker.check(_cert(**change))
    assert not verdict.proved and why in verdict.line


def test_definition_heads_must_be_names_and_not_recursive():
    bad = [sp.Eq(x + 1, 2, evaluate=False), sp.Eq(x, x + 1, evaluate=False)]
    for rel in bad:
        cert = _cert(premises=[{"id": "P1", "kind": "definition", "statement": checker.write(rel)}])
        assert "malformed" in checker.check(cert).line


# ------------------------------------------------------------------ independence of the checker

def _imports(module):
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    imported = {a.name.split(".")[0] if isinstance(node, ast.Import) else (node.module or "")
                for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                for a in getattr(node, "names", [])}
    return {m for m in imported if m and not m.startswith("sympy")}


def test_the_checker_imports_only_sympy_the_identity_engine_and_the_expression_reader():
    from proofs import srepr

    stdlib = {"__future__", "ast", "graphlib", "hashlib", "json", "math", "dataclasses", "functools", "typing",
              "itertools", "re", "sys", "time", "unicodedata", "signal", "threading"}
    assert _imports(checker) <= stdlib | {"proofs.identity", "proofs.srepr"}, _imports(checker)
    # The reader refuses a binder declared against its range by the engine's own rule (one rule, not two).
    assert _imports(srepr) <= stdlib | {"proofs.identity"}, _imports(srepr)


def test_the_identity_engine_imports_no_project_module():
    from proofs import identity

    tree = ast.parse(Path(identity.__file__).read_text(encoding="utf-8"))
    project = [node.module if isinstance(node, ast.ImportFrom) else a.name for node in ast.walk(tree)
               if isinstance(node, (ast.Import, ast.ImportFrom))
               for a in getattr(node, "names", []) if (getattr(node, "module", None) or a.name).split(".")[0]
               in ("proofs", "numeric", "kernels")]
    assert not project, project


def test_check_command_replays_certificates_in_a_fresh_process(tmp_path):
    good = _proof(sp.Eq((x + 1) ** 2, x**2 + 2 * x + 1, evaluate=False))
    good.identity((x + 1) ** 2, x**2 + 2 * x + 1)
    bad = _proof(FALSE)
    bad.holds("x", "x", x, x + 1, lambda: (False, "no"))
    (tmp_path / "good.json").write_text(good.finish().certificate_json)
    (tmp_path / "report.json").write_text(json.dumps({"certificates": {"demo": bad.finish().certificate}}))
    run = [sys.executable, "-m", "proofs.check_cli"]
    ok = subprocess.run(run + [str(tmp_path / "good.json")], capture_output=True, text=True)
    assert ok.returncode == 0 and "1 of 1 certificates proved" in ok.stdout, ok.stdout + ok.stderr
    no = subprocess.run(run + [str(tmp_path / "good.json"), str(tmp_path / "report.json")], capture_output=True,
                        text=True)
    assert no.returncode == 1 and "1 of 2" in no.stdout
    (tmp_path / "junk.json").write_text("not json")
    assert subprocess.run(run + [str(tmp_path / "junk.json")], capture_output=True, text=True).returncode == 2


def test_check_command_refuses_a_catalogued_id_with_another_statement():
    from proofs.check_cli import judge

    pf = _proof(sp.Eq(x, x, evaluate=False))
    pf.identity(x, x)
    cert = dict(pf.finish().certificate, claim="dot-product-variance")
    ok, line = judge(cert)
    assert not ok and "other than the catalogue" in line


def test_check_command_refuses_a_cited_certificate_under_a_catalogued_id_with_another_statement():
    """A citation reads as the catalogued claim its id names: a true x = x cited as dot-product-variance is refused
    (the checker, which knows no catalogue, replays it as proved), and a catalogued certificate cited as itself is
    not."""
    from proofs import CLAIMS
    from proofs.check_cli import judge

    inner = _proof(sp.Eq(x, x, evaluate=False))
    inner.identity(x, x)
    outer = _proof(sp.Eq(x, x, evaluate=False))
    outer.cite(inner.finish())
    cert = outer.finish().certificate
    assert judge(cert)[0]
    cert["steps"][0]["certificate"] = dict(cert["steps"][0]["certificate"], claim="dot-product-variance")
    assert checker.check(cert).proved
    ok, line = judge(cert)
    assert not ok and "cites a certificate under the catalogued id dot-product-variance" in line
    real = CLAIMS["rounding-gamma-lemma"].derive()
    citing = Proof("demo", statement=real.statement)
    citing.cite(real)
    assert judge(citing.finish().certificate)[0]


def test_cited_premises_need_a_reference():
    pf = _proof(FALSE)
    with pytest.raises(ValueError, match="reference"):
        pf.cite_external(FALSE, "", "no reference")
    with pytest.raises(ValueError, match="reference"):
        pf.premise("Chebyshev", "a tail bound", x, x, kind=CITED)


# ------------------------------------------------------------------ proofs an earlier checker accepted, by family
# Each was proved (or proved given something innocent-looking) by an earlier version of the checker.

def test_a_string_argument_is_never_parsed_as_code():
    for text in ['sin("__import__(\'os\').system(\'true\')")', "Symbol('x', real='1')", "Integer('12')"]:
        with pytest.raises(checker.CertificateError, match="string"):
            checker.read(text)


def test_a_functions_assumptions_travel_with_each_use():
    f, fp = sp.Function("f"), sp.Function("f", positive=True)  # the statement's f, and a decoy of the same name
    pf = _proof(sp.Ge(f(x), 0, evaluate=False))
    pf.identity(fp(x), fp(x))
    pf.sign(0, "≤", f(x))
    assert not pf.finish().verified
    assert checker.read(checker.write(fp(x))).is_positive and checker.read(checker.write(f(x))).is_positive is None


def test_a_definition_that_is_not_a_definition_is_refused():
    pf = _proof(sp.Eq(x, x, evaluate=False))
    pf.define(sp.Function("g")(x + y), x, forall=[x, y])  # not a function of its argument
    pf.identity(x, x)
    assert "malformed" in pf.finish().verdict_line


@pytest.mark.parametrize("head, body, forall", [
    (sp.Symbol("a", positive=True), sp.Integer(-1), []),  # contradicts its declaration
    (sp.Function("g", positive=True)(x), -1 - x**2, [x]),
])
def test_a_definition_its_body_does_not_satisfy_is_listed_with_the_declaration(head, body, forall):
    pf = _proof(sp.Lt(0, -1, evaluate=False))
    d = pf.define(head, body, forall=forall)
    pos = pf.sign(0, "<", head)  # from the declaration alone
    pf.rewrite(0, -1, [d, pos], relation_="<")
    line = pf.finish().verdict_line
    assert line == "failed" or line.startswith("failed") or "not shown of its body" in line


def test_definitions_may_not_be_circular():
    c, d = sp.symbols("c d")
    pf = _proof(sp.Eq(d, d + 1, evaluate=False))
    first = pf.define(c, d + 1)  # names d, defined only below
    second = pf.define(d, c)
    pf.rewrite(d, d + 1, [second, first])
    assert "circular" in pf.finish().verdict_line


def test_substitution_never_captures_a_bound_variable():
    j, m = sp.Symbol("j", integer=True), sp.Symbol("m", integer=True)
    f = sp.Function("f")
    pf = _proof(sp.Eq(f(j), 3, evaluate=False))
    pf.rewrite(f(j), 3, [pf.define(f(m), sp.Sum(m, (j, 1, 2)), forall=[m])])  # f(j) = 2j, not Σ_j j = 3
    assert not pf.finish().verified
    k = sp.Symbol("k", integer=True, nonnegative=True)
    P = sp.Eq(sp.Sum(n, (k, 1, 1)), n, evaluate=False)  # k bound in P: P(k) would capture
    pf = _proof(P)
    base = pf.identity(sp.Sum(1, (k, 1, 1)), 1)
    h = pf.hypothesis(checker.substitute(P, {n: k - 1}))
    step = pf.identity(sp.Sum(k, (k, 1, 1)), k)
    pf.induction(P, n, 1, base, step, h, step_var=k)
    assert "capture" in pf.finish().verdict_line


def test_induction_starts_at_an_integer():
    P = sp.Eq(sp.Mod(n, 2) + sp.Mod(n + 1, 2), 2, evaluate=False)
    pf = _proof(P)
    half = sp.Rational(1, 2)
    base = pf.identity(sp.Mod(half, 2) + sp.Mod(half + 1, 2), 2)
    h = pf.hypothesis(checker.substitute(P, {n: n - 1}))
    step = pf.rewrite(P.lhs, 2, [h])
    pf.induction(P, n, half, base, step, h)
    assert not pf.finish().verified


def test_bound_counts_its_nonnegativity_facts_as_premises():
    pf = _proof(sp.Le(6, 1, evaluate=False))
    low = pf.assume(sp.Le(2, 1, evaluate=False))
    a = pf.sign(3, "≤", 3)
    pf.bound([low, a], "mul", 6, "≤", 3, nonnegative=[])
    cert = pf.finish().certificate
    cert["steps"][-1]["nonnegative"] = ["P9"]  # a fact the step does not cite
    assert not checker.check(cert).proved


def test_sign_needs_real_factors_and_reads_ranges_not_declarations():
    z = sp.Symbol("z")  # complex
    for small, big in ((0, z**2), (0, sp.log(x) ** 2)):
        pf = _proof(sp.Le(small, big, evaluate=False))
        pf.sign(small, "≤", big)
        assert not pf.finish().verified, big
    # An index declared positive over a negative range is not even written: a bound index carries only what its
    # range implies (SymPy would call Σ_{i=-5}^{-1} i positive).
    for big in (sp.Sum(i, (i, -5, -1)), sp.Product(i, (i, -3, -1))):
        pf = _proof(sp.Le(0, big, evaluate=False))
        with pytest.raises(checker.CertificateError, match="does not imply"):
            pf.sign(0, "≤", big)


def test_trust_is_inherited_through_every_level_of_citation():
    zero_is_one = sp.Eq(0, 1, evaluate=False)
    c = _proof(zero_is_one)
    c.computation(zero_is_one, lambda: True, name="trust_me")
    level = c.finish()
    for _ in range(3):
        up = _proof(zero_is_one)
        up.cite(level)
        level = up.finish()
    assert "computation trust_me" in level.verdict_line


def test_a_pattern_checks_every_assumption_its_symbol_was_declared_with():
    odd = sp.Symbol("o", odd=True)
    m = sp.Symbol("m", integer=True)
    st = sp.Eq(sp.floor(m / 2), (m - 1) / 2, evaluate=False)
    pf = _proof(st)
    lemma = pf.cite_external(sp.Eq(sp.floor(odd / 2), (odd - 1) / 2, evaluate=False), "parity lemma", forall=[odd])
    pf.rewrite(st.lhs, st.rhs, [lemma])
    assert not pf.finish().verified


def test_cited_theorems_are_listed_with_what_they_state():
    pf = _proof(sp.Le(0, -1, evaluate=False))
    c = pf.cite_external(sp.Le(0, -2, evaluate=False), "Cauchy-Schwarz inequality")
    pf.sign(0, "≤", -1, using=[c])
    line = pf.finish().verdict_line
    assert "Cauchy-Schwarz inequality: 0 <= -2" in line or not pf.finish().verified


def test_linearity_names_its_expectation_and_never_splits_an_infinite_sum():
    E = sp.Function("E")
    pf = _proof(sp.Eq(E(x**2), E(x) ** 2, evaluate=False))
    pf.linearity(E(x**2), E(x) ** 2, operator=E, random=[])
    assert "E is an expectation (linear; random: nothing)" in pf.finish().verdict_line
    lhs = sp.Sum(1 / i - 1 / (i + 1), (i, 1, sp.oo))
    pf = _proof(sp.Eq(lhs, sp.Sum(1 / i, (i, 1, sp.oo)) - sp.Sum(1 / (i + 1), (i, 1, sp.oo)), evaluate=False))
    pf.linearity(lhs, sp.Sum(1 / i, (i, 1, sp.oo)) - sp.Sum(1 / (i + 1), (i, 1, sp.oo)))
    assert not pf.finish().verified


def test_the_engine_assumes_no_regularity_of_an_undefined_function():
    from proofs.identity import identity

    f, t = sp.Function("f"), sp.Symbol("t", real=True)
    ok, why = identity(sp.Derivative(f(x, t), x, t), sp.Derivative(f(x, t), t, x))
    assert not ok and "commute" in why
    ok, why = identity(sp.Integral(f(x) + f(x) ** 2, (x, 0, 1)), sp.Integral(f(x), (x, 0, 1)) +
                       sp.Integral(f(x) ** 2, (x, 0, 1)))
    assert not ok and "integrable" in why


def test_check_command_replays_in_parallel_with_the_same_verdicts_in_order():
    from proofs.check_cli import _judge_all, _judge_one

    good = _proof(sp.Eq((x + 1) ** 2, x**2 + 2 * x + 1, evaluate=False))
    good.identity((x + 1) ** 2, x**2 + 2 * x + 1)
    bad = _proof(FALSE)
    bad.holds("x", "x", x, x + 1, lambda: (False, "no"))
    jobs = [("a", good.finish().certificate), ("b", bad.finish().certificate), ("c", "not a certificate"),
            ("d", good.finish().certificate)]
    parallel = list(_judge_all(jobs))
    assert parallel == [_judge_one(j) for j in jobs]
    assert [ok for ok, _ in parallel] == [True, False, False, True]


def test_the_reader_builds_a_repeated_subterm_once_and_the_same_as_anew():
    """srepr reuses what a constructor call's text built before: the same objects as a fresh reading, a Dummy
    without an index still a new one at each occurrence, and a refused subterm refused again."""
    from proofs import srepr

    x = sp.Symbol("x", positive=True)
    text = sp.srepr(sp.exp(x) + x**2)
    srepr._BUILT.clear()
    first = checker.read(text)
    assert srepr._BUILT, "the reader remembered nothing"
    again = srepr.read.__wrapped__(text)  # not lru_cache's answer: read anew, through the subterm memo
    assert again == first and again.atoms(sp.Symbol) == {x}
    with pytest.raises(checker.CertificateError, match="free Dummy"):  # two Dummies, the body's one free
        srepr.read.__wrapped__("Sum(Dummy('k'), (Dummy('k'), Integer(1), Integer(3)))")
    bad = "Add(Symbol('x'), sin(Str('1')))"
    for _ in range(2):
        with pytest.raises(checker.CertificateError):
            srepr.read.__wrapped__(bad)
