"""The rounding bounds as rule applications: no computation step, and a broken step is refused.

A broken step is made by editing the certificate (as a forger would, past every Proof-API check) or by
building the theorem with a wrong ingredient; either way the checker must refuse the step itself."""
import json

import pytest
import sympy as sp

from proofs import checker
from proofs.checker import read_in, write
from proofs.theorems import rounding as r


@pytest.fixture(scope="module")
def softmax():
    return r.softmax_shifted()


def _tampered(d, pick, change):
    """The certificate of ``d`` with the conclusion of the first step ``pick(step, relation)`` accepts replaced by
    ``change(relation)``; returns (verdict, id of the edited step)."""
    cert = d.certificate
    for s in cert["steps"]:
        rel = read_in(cert, s["conclusion"])
        if pick(s, rel):
            s["conclusion"] = write(change(rel))
            return checker.check(json.dumps(cert)), s["id"]
    raise AssertionError("no step to tamper with")


def _failed(verdict, sid):
    return any(o.id == sid and not o.passed for o in verdict.outcomes)


def _proved_by_rules_alone(d):
    assert d.verified, d.reasons
    assert d.computations == [] and "computation" not in d.verdict_line
    assert "computation" not in {s["rule"] for s in d.certificate["steps"]}


def test_softmax_bound_is_rule_applications_only(softmax):
    _proved_by_rules_alone(softmax)
    rules = {s["rule"] for s in softmax.certificate["steps"]}
    assert "computation" not in rules and {"sign", "bound", "chain", "induction", "rewrite"} <= rules
    assert "computation" not in softmax.verdict_line
    last = softmax.certificate["steps"][-1]
    assert last["rule"] == "chain" and checker._same(read_in(softmax.certificate, last["conclusion"]),
                                                    softmax.statement)


def test_softmax_sign_step_turned_around_is_refused(softmax):
    """S/D̂ ≤ 1/(1 − Σ p B) (the denominator) stated the other way round."""
    wanted = sp.Le(r._SW / r._DH, 1 / (1 - r.SOFTMAX_PB), evaluate=False)
    verdict, sid = _tampered(softmax, lambda s, rel: s["rule"] == "sign" and checker._same(rel, wanted),
                             lambda rel: sp.Le(rel.rhs, rel.lhs, evaluate=False))
    assert not verdict.proved and _failed(verdict, sid)


def test_softmax_bound_without_its_last_rounding_is_refused(softmax):
    """The chain's closing link made to end at the bound without the final division's + u."""
    target = r.softmax_relative_bound()
    verdict, sid = _tampered(softmax, lambda s, rel: s["rule"] == "rewrite" and getattr(rel, "rhs", None) == target,
                             lambda rel: sp.Le(rel.lhs, target - r.U, evaluate=False))
    assert not verdict.proved and _failed(verdict, sid)


def test_softmax_with_a_sum_rounding_too_few_is_refused():
    """Term i of the sum given n − 2 roundings: B_i's (1 + u)^{n−1} no longer follows."""
    d = r.softmax_shifted(sum_roundings=r.N - 2)
    assert not d.verified
    assert any(s.rule == "weight factor" for s in d.failed_steps)


@pytest.fixture(scope="module")
def probabilistic():
    return r.attention_probabilistic_bound()


def test_probabilistic_bound_is_rule_applications_only(probabilistic):
    d = probabilistic
    _proved_by_rules_alone(d)
    assert sum(s.rule == "induction" and s.passed for s in d.steps) == 2  # the union bound over both event families
    cited = " ".join(d.trust_base["cited"])
    assert "Higham" in cited and "Hoeffding" in cited and "Boole" in cited


def test_probabilistic_exponent_comparison_turned_around_is_refused(probabilistic):
    """−λ²/2 ≤ −λ²(1 − u)²/2 (Hoeffding's events fit the chains' probability) stated the other way round."""
    wanted = sp.Le(-r.LAM**2 / 2, -r.LAM**2 * (1 - r.U_A)**2 / 2, evaluate=False)
    verdict, sid = _tampered(probabilistic, lambda s, rel: s["rule"] == "sign" and checker._same(rel, wanted),
                             lambda rel: sp.Le(rel.rhs, rel.lhs, evaluate=False))
    assert not verdict.proved and _failed(verdict, sid)


def test_probabilistic_union_bound_that_drops_the_sums_is_refused(probabilistic):
    """The count rewrite made to end at C₁·q (the P·V sums' events forgotten)."""
    per_chain = probabilistic.result["per_chain"]
    verdict, sid = _tampered(probabilistic, lambda s, rel: s["rule"] == "rewrite" and
                             getattr(rel, "rhs", None) == r.CHAINS * per_chain,
                             lambda rel: sp.Le(rel.lhs, r._C1 * per_chain, evaluate=False))
    assert not verdict.proved and _failed(verdict, sid)


@pytest.fixture(scope="module")
def forward():
    return r.attention_forward_bound()


def test_forward_bound_is_rule_applications_only(forward):
    d = forward
    _proved_by_rules_alone(d)
    cert = d.certificate
    cited = [s for s in cert["steps"] if s["rule"] == "citation"]
    assert {s["certificate"]["claim"] for s in cited} == {"rounding-online-rescale"}  # the rounding counts
    last = cert["steps"][-1]
    assert last["rule"] == "chain" and checker._same(read_in(cert, last["conclusion"]), d.statement)
    # |fl(o) − o| and the row quantities are names defined from the model, not labels
    defined = {str(read_in(cert, p["statement"]).lhs) for p in cert["premises"] if p["kind"] == "definition"}
    assert {str(x) for x in (r.ERR, r.PRV, r.PB, r.T_P, r.O_ABS, r.V_L1, r.ZETA)} <= defined


def test_forward_denominator_sign_step_turned_around_is_refused(forward):
    """1/l ≤ 1/(e^{m − m̂}S(1 − (P∘B)1 − N_k ζ)) stated the other way round."""
    low = r._C0 * r._SF * (1 - r.PB - r.KEYS * r.ZETA)
    wanted = sp.Le(1 / r._L, 1 / low, evaluate=False)
    verdict, sid = _tampered(forward, lambda s, rel: s["rule"] == "sign" and checker._same(rel, wanted),
                             lambda rel: sp.Le(rel.rhs, rel.lhs, evaluate=False))
    assert not verdict.proved and _failed(verdict, sid)


def test_forward_with_a_rounding_count_too_small_is_refused(forward):
    """acc's chain given B_N + 2T − 2 roundings (l's count) where the online claim counts B_N + 2T − 1."""
    n_l, n_a = r.rescale_counts()
    chain = lambda n: (1 + r.MU)**r.BLOCKS * (1 + r.U_A)**n * (1 + r.U_P) - 1  # noqa: E731  (with P's rounding)
    verdict, sid = _tampered(forward, lambda s, rel: s.get("label") == "rounding counts" and s["rule"] == "rewrite"
                             and getattr(rel, "rhs", None) == chain(n_a),
                             lambda rel: sp.Eq(rel.lhs, chain(n_l), evaluate=False))
    assert not verdict.proved and _failed(verdict, sid)
