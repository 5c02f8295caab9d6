import math

import pytest
import sympy as sp

from proofs.theorems.dot_product import D_K
from proofs.theorems.scale_limits import DELTA, N_KEYS, scale_trap_limits


def test_scale_trap_limits_are_proved():
    d = scale_trap_limits()
    assert d.verified, [(s.description, s.detail) for s in d.failed_steps]
    assert sp.simplify(d.result.logit_variance_dk - 1 / D_K) == 0


@pytest.mark.parametrize("kw", [{"uniform_divisor": sp.sqrt(D_K)}, {"onehot_divisor": sp.sqrt(D_K)},
                                {"onehot_divisor": D_K}])
def test_wrong_scalings_do_not_reach_the_limits(kw):
    assert not scale_trap_limits(**kw).verified


def test_tail_bound_lambdifies():
    d = scale_trap_limits()
    f = sp.lambdify((D_K, N_KEYS, DELTA), d.result.uniform_tail_bound, "math")
    assert math.isclose(f(1000, 4, 0.5), 4 / (1000 * 0.25))


@pytest.mark.parametrize("bad", ["sqrt", -1, sp.Symbol("x"), 0])
def test_bad_divisor_is_a_value_error(bad):
    with pytest.raises(ValueError, match="uniform_divisor"):
        scale_trap_limits(uniform_divisor=bad)


# --- the two limits are rewrites from cited theorems (no computation step); wrong versions are refused -------------

def _replayed(d, premise=None, value=None, drop_from_last=None):
    """d's certificate checked afresh with the cited premise ``premise`` stating ``value`` instead, or with the
    premise ``drop_from_last`` taken out of the premises of the step that establishes the limit about it."""
    import json

    from proofs import checker

    cert = json.loads(d.certificate_json)
    if premise is not None:
        hits = [p for p in cert["premises"] if p["statement"] == checker.write(premise)]
        assert len(hits) == 1, premise
        hits[0]["statement"] = checker.write(sp.Eq(premise.lhs, value, evaluate=False))
    if drop_from_last is not None:
        head, dropped = drop_from_last
        step = next(s for s in cert["steps"] if s["rule"] == "rewrite" and checker.read(s["conclusion"]).lhs == head)
        ids = [p["id"] for p in cert["premises"] if checker.read(p["statement"]).lhs == dropped]
        step["premises"] = [i for i in step["premises"] if i not in ids]
    return checker.check(json.dumps(cert))


def test_the_limits_rest_on_rules_and_cited_theorems_only():
    d = scale_trap_limits()
    assert [s["rule"] for s in d.certificate["steps"]].count("computation") == 0
    assert d.computations == [] and d.verified, d.reasons
    cited = " ".join(d.trust_base["cited"])
    assert "continuous mapping theorem" in cited and "Chebyshev" in cited and "central limit theorem" in cited


def test_a_wrong_limit_of_the_logits_or_gaps_is_refused():
    from proofs.theorems.scale_limits import _X, NU, ZETA

    d = scale_trap_limits()
    assert _replayed(d).proved  # the certificate as written
    # ζ_x = x: a_j → e^j / Σ_k e^k, not 1/n (refuted); ν_x = 1: a_max → 1/(1 + Σ_{j=1}^{n−1} 1) = 1/n, not 1 (its
    # denominator 1 + Σ 1 is not shown non-zero, which refuses the step before any probe)
    for premise, value, why, conjunct in ((sp.Eq(ZETA[_X], 0), _X, "refuted", "a_j"),
                                          (sp.Eq(NU[_X], 0), 1, "not shown defined", "a_max")):
        v = _replayed(d, premise, value)
        assert not v.proved and [r for r in v.reasons if "failed" in r and why in r], v.reasons
        assert [r for r in v.reasons if "not established" in r and f"Limit({conjunct}," in r], v.reasons


def test_a_limit_no_premise_states_is_refused():
    import proofs.notation as nt

    d = scale_trap_limits()
    for head in (sp.Limit(nt.A_J, D_K, sp.oo), sp.Limit(nt.A_MAX, D_K, sp.oo)):
        v = _replayed(d, drop_from_last=(head, head))  # the continuous mapping theorem's instance left out
        assert not v.proved and any("stated by no premise" in r for r in v.reasons), v.reasons


@pytest.mark.parametrize("kw, failing", [
    ({"uniform_divisor": sp.sqrt(D_K)}, "Var(z_j) < ηδ²/n once η δ² d_k > n: Var(z_j) → 0"),
    ({"uniform_divisor": 1}, "Var(z_j) < ηδ²/n once η δ² d_k > n: Var(z_j) → 0"),
    ({"onehot_divisor": sp.sqrt(D_K)}, "Var(z_1 − z_2) > M once 2 d_k > M: the gap's spread → ∞"),
    ({"onehot_divisor": D_K}, "Var(z_1 − z_2) > M once 2 d_k > M: the gap's spread → ∞")])
def test_a_wrong_scaling_fails_the_step_that_shows_the_cited_theorems_hypothesis(kw, failing):
    d = scale_trap_limits(**kw)
    assert not d.verified and failing in [s.description for s in d.failed_steps]
