import sympy as sp

from proofs.engine import Proof, identity

x, y = sp.symbols("x y", real=True)
n = sp.Symbol("n", integer=True, positive=True)


def test_identity_proves_a_true_identity():
    ok, detail = identity((x + y) ** 2, x**2 + 2 * x * y + y**2)
    assert ok, detail


def test_identity_refutes_a_false_identity_at_a_probe_point():
    ok, detail = identity((x + y) ** 2, x**2 + y**2)
    assert not ok
    assert "refuted" in detail


def test_identity_handles_exponential_rational_functions():
    a = sp.exp(x) / (sp.exp(x) + sp.exp(y))
    ok, _ = identity(a * (1 - a), sp.exp(x + y) / (sp.exp(x) + sp.exp(y)) ** 2)
    assert ok
    ok, _ = identity(a * (1 - a), sp.exp(x) / (sp.exp(x) + sp.exp(y)) ** 2)
    assert not ok


def test_identity_compares_matrices_entrywise_and_checks_shape():
    assert identity(sp.Matrix([[x, y]]), sp.Matrix([[x, y]]))[0]
    assert not identity(sp.Matrix([[x, y]]), sp.Matrix([[x, x]]))[0]
    ok, detail = identity(sp.Matrix([[x, y]]), sp.Matrix([[x], [y]]))
    assert not ok and "shape" in detail


def test_identity_respects_integer_assumptions_when_probing():
    # (-1)^(2n) = 1 holds only for integer n; probing must not use fractions there.
    assert identity((-1) ** (2 * n), 1)[0]


def test_one_wrong_step_fails_the_verdict():
    pf = Proof("demo", "demo", sp.Eq(x, x))
    pf.equal("algebra", "right", (x + 1) ** 2, x**2 + 2 * x + 1)
    assert pf.finish(None).verified
    pf.equal("algebra", "wrong", (x + 1) ** 2, x**2 + 1)
    d = pf.finish(None)
    assert not d.verified and d.verdict == "failed"
    assert [s.description for s in d.failed_steps] == ["wrong"]


def test_premises_are_marked_and_prove_nothing_alone():
    pf = Proof("demo", "demo", sp.Eq(x, 1))
    pf.premise("assumption", "x is one", x, 1, kind="assumption")
    d = pf.finish(None)
    assert d.steps[0].is_premise
    assert not d.verified  # nothing was checked


def test_a_check_that_raises_is_a_failed_step_not_a_crash():
    pf = Proof("demo", "demo", sp.Eq(x, 1))
    pf.equal("algebra", "fine", x, x)
    pf.holds("limit", "broken check", x, 0, lambda: 1 / 0)
    d = pf.finish(None)
    assert not d.verified
    assert "ZeroDivisionError" in d.failed_steps[0].detail


def test_rendering_shows_verdict_and_the_failed_step():
    pf = Proof("demo-claim", "Demo", sp.Eq(x, 1))
    pf.premise("assumption", "x is one", x, 1, kind="assumption")
    pf.equal("algebra", "a wrong step", x + 1, x)
    d = pf.finish(None)
    text, md, tex = d.to_text(), d.to_markdown(), d.to_latex()
    assert "FAILED" in text and "a wrong step" in text
    assert "demo-claim" in md and "premise" in md and "✗" in md
    assert r"\item" in tex and "FAILED" in tex
