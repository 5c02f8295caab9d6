"""The ninth red team's families against the checker (rt32), each closed by a design rule:

- R1: SymPy's handlers call atan(n), asin(n) non-zero for an integer n ≥ 0 (and acos(n) for n ≥ 1), and SymPy uses
  such facts as it builds: sign(atan(k)) was built as 1 once the checker or the engine renamed k to an index carrying
  its range's facts, or put a value for a variable (induction, instance, peel, a rewrite's pattern). In this process
  SymPy now learns no fact of a node outside the whitelist at all (identity._gated_ask), so nothing is built on one.
- R2: a Σ or Π whose limits are not integers was "defined" and took SymPy's closed form (Σ_{k=1}^{5/2} 1 = 5/2, where
  the terms are k = 1, 2). A sum's or product's limits must be shown integers.
Its certificates are in ``redteam9/``, replayed as written; each was "proved" before the change."""
import json
from pathlib import Path

import pytest
import sympy as sp

from proofs.checker import check, write
from proofs.engine import Proof
from proofs.tests.certs import cert, eq, prem, step

HERE = Path(__file__).parent / "redteam9"
k, x = sp.Symbol("k"), sp.Symbol("x", real=True)
n = sp.Symbol("n", integer=True, nonnegative=True)


@pytest.mark.parametrize("name, why", [
    ("a23", "not shown an integer"),        # Σ_{k=1}^{5/2} 1 = 5/2
    ("a25", "refuted"),                     # Σ_{k=0}^{2} sign(atan k) = 3 (it is 2)
    ("a30", "not established"),             # a step of Σ 1 = 3 taken for Σ sign(atan k) = 3
    ("a43", "refuted at k=1"),              # n·sign(atan(n − 1)) = n for every n ≥ 0, by induction (0 at n = 1)
])
def test_the_red_teams_certificates_are_refused(name, why):
    verdict = check(json.loads((HERE / f"{name}.json").read_text(encoding="utf-8")))
    assert not verdict.proved and why in verdict.line, verdict.line


def _identity(lhs, rhs):
    pf = Proof("t-rt9", statement=eq(lhs, rhs))
    pf.identity(lhs, rhs)
    return pf.finish()


@pytest.mark.parametrize("lhs, rhs", [
    (sp.Sum(sp.sign(sp.atan(k)), (k, 0, 2)), 3),                       # 2
    (sp.Sum(sp.KroneckerDelta(sp.atan(k), 0), (k, 0, 2)), 0),          # 1
    (sp.Sum(sp.sign(sp.atan(k)), (k, 0, n)), n + 1),                   # n
    (sp.Product(1 + sp.sign(sp.atan(k)), (k, 0, 1)), 4),               # 2
    (sp.Sum(sp.KroneckerDelta(sp.acos(k), 0), (k, 1, 1)), 0),          # 1
    (sp.Sum(sp.KroneckerDelta(sp.asin(k), 0), (k, 0, 0)), 0),          # 1
    (sp.Sum(1, (k, 1, sp.Rational(5, 2))), sp.Rational(5, 2)),         # 2
    (sp.Sum(k, (k, 0, sp.Rational(1, 2))), sp.Rational(3, 8)),         # 0
    (sp.Sum(1, (k, 1, x)), x),                                         # no value at x = 1/2
    (sp.Sum(sp.sign(sp.atan(k)), (k, 0, n)), sp.Sum(sp.sign(sp.atan(k)), (k, 0, n - 1)) + 1),  # false at n = 0
])
def test_false_identities_of_both_families_are_refused(lhs, rhs):
    d = _identity(lhs, rhs)
    assert not d.verified, (lhs, rhs)


def test_a_value_put_for_a_variable_builds_nothing_on_an_untrusted_fact():
    g = sp.Function("g")
    st = eq(g(n), 1)  # g(x) := sign(atan x): g(0) = 0
    v = check(cert(st, premises=[prem("D", "definition", eq(g(x), sp.sign(sp.atan(x))), forall=[x])],
                   steps=[step("S1", "rewrite", st, ["D"])]))
    assert not v.proved, v.line
    st = eq(sp.Sum(sp.sign(sp.atan(k)), (k, 0, n)), sp.Sum(sp.sign(sp.atan(k)), (k, 0, n - 1)) + 1)
    v = check(cert(st, steps=[step("S1", "truncation", st, [], peel=write(n))]))
    assert not v.proved, v.line


def test_sympy_learns_no_fact_of_a_node_outside_the_whitelist():
    assert sp.atan(n).is_positive is None and sp.sign(sp.atan(n)).func is sp.sign  # SymPy alone: True, and 1
    assert sp.exp(x).is_positive is True and sp.Abs(x).is_nonnegative is True  # the whitelist keeps its facts
    assert sp.re(sp.Symbol("z")).is_extended_real is True  # a fact a class declares outright is kept


def test_true_statements_about_integer_ranges_still_hold():
    m = sp.Symbol("m", integer=True, positive=True)
    assert _identity(sp.Sum(2 * k - 1, (k, 1, m)), m**2).verified
    assert _identity(sp.Sum(sp.sign(sp.atan(k)), (k, 1, 2)), sp.sign(sp.atan(1)) + sp.sign(sp.atan(2))).verified



def test_a_certificate_holds_no_nan_or_zoo():
    # Red team 10's 1 = 2: an instance at t = 0 built 0/0 as nan, and SymPy calls nan equal to nan, so a chain linked
    # nan = 1 and nan = 2. A value with no value is never written: the reader refuses nan and zoo.
    from proofs.srepr import CertificateError, read
    for text in ("nan", "zoo", "Equality(nan, Integer(1))"):
        with pytest.raises(CertificateError, match="not a SymPy constructor"):
            read(text)
    verdict = check(json.loads((HERE / "rt10_a56_one_equals_two.json").read_text(encoding="utf-8")))
    assert not verdict.proved, verdict.line


def test_a_report_whose_certificates_are_not_a_list_is_unreadable_not_a_traceback():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "proofs", "check", str(HERE / "rt10_certificates_not_a_list.json"),
                          str(HERE / "a23.json")], capture_output=True, text=True, timeout=300)
    assert "must be a list or an object" in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert out.returncode == 2 and "FAIL" in out.stdout, out.stdout  # the next file is still checked
