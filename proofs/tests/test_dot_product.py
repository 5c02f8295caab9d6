import pytest
import sympy as sp
from sympy import stats

from proofs import dot_product_moments
from proofs.engine import Proof
from proofs.theorems.dot_product import D_K, general_moments


def test_defaults_give_the_seed_values_with_symbolic_dimension():
    d = dot_product_moments()
    assert d.verified
    assert d.result.mean == 0 and d.result["mean"] == 0
    assert sp.simplify(d.result.variance - D_K) == 0
    assert sp.simplify(d.result.std - sp.sqrt(D_K)) == 0


def test_general_moments_formula():
    d = general_moments()
    mq, mk = sp.symbols("mu_q mu_k", real=True)
    vq, vk = sp.symbols("sigma_q^2 sigma_k^2", positive=True)
    assert d.verified
    assert sp.expand(d.result.mean - D_K * mq * mk) == 0
    assert sp.expand(d.result.variance - D_K * (vq * vk + mq**2 * vk + mk**2 * vq)) == 0


def test_numeric_arguments_and_expressions_are_accepted():
    d = dot_product_moments(d=64, mean_q=1, mean_k=2, var_q=sp.Rational(1, 2), var_k=3)
    assert d.verified
    assert d.result.mean == 128
    assert d.result.variance == 64 * (sp.Rational(3, 2) + 3 + sp.Rational(4, 2))


def test_a_wrong_variance_step_is_rejected():
    # The classic slip: forgetting the cross terms of a non-zero mean.
    base = dot_product_moments(mean_q=1, mean_k=1)
    pf = Proof("wrong", statement=sp.Eq(sp.Function("Var")(sp.Symbol("S")), D_K, evaluate=False))
    pf.equal("Bienaymé", "Var(S) = d_k σ_q² σ_k² (forgets the means)", base.result.variance, D_K)
    assert not pf.finish(None).verified


def test_sympy_stats_trap_is_real_and_avoided():
    # sympy.stats treats Sum(X, (i, 1, d)) as d copies of ONE variable: Var = d², not d.
    i, d = sp.symbols("i d", integer=True, positive=True)
    X = stats.Normal("X", 0, 1)
    assert stats.variance(sp.Sum(X, (i, 1, d))) == d**2
    assert dot_product_moments(d=3).result.variance == 3


@pytest.mark.parametrize("kwargs, name", [
    ({"d": -3}, "d"), ({"d": 0}, "d"), ({"d": 2.5}, "d"), ({"d": True}, "d"), ({"d": "4"}, "d"),
    ({"var_q": -1}, "var_q"), ({"var_k": sp.Integer(-2)}, "var_k"), ({"mean_q": "x+"}, "mean_q"),
    ({"mean_k": sp.I}, "mean_k"),
])
def test_bad_input_is_a_value_error_naming_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=rf"^{name} "):
        dot_product_moments(**kwargs)


DOT_CLAIMS = ("dot-product-moments", "dot-product-variance", "dot-product-distribution-free",
              "scaled-score-unit-variance", "dk-scaling-trap", "prescaled-query")


@pytest.mark.parametrize("claim_id", DOT_CLAIMS)
def test_each_dot_product_claim_is_proved_by_rules_alone(claim_id):
    from proofs.tests.derived import derived

    d = derived(claim_id)
    assert d.verified, d.reasons
    assert d.computations == []


def test_the_general_proof_refuses_a_variance_without_the_mean_terms():
    # The same rule applications, concluding the classic slip Var(S) = d_k σ_q² σ_k²: refused.
    from proofs.notation import MU_K, MU_Q, VAR_K, VAR_Q, E, S, Var
    from proofs.theorems.dot_product import _moments

    wrong = sp.And(sp.Eq(E(S), D_K * MU_Q * MU_K, evaluate=False), sp.Eq(Var(S), D_K * VAR_Q * VAR_K, evaluate=False))
    pf = Proof("wrong-moments", statement=wrong)
    _, mean_fact, var_fact, _, _ = _moments(pf, MU_Q, MU_K, VAR_Q, VAR_K)
    pf.rewrite(E(S), D_K * MU_Q * MU_K, [mean_fact])
    pf.rewrite(Var(S), D_K * VAR_Q * VAR_K, [var_fact])
    d = pf.finish()
    assert not d.verified and any("Var" in r for r in d.reasons)


def test_the_limit_needs_d_k_past_one_over_epsilon():
    # Var(S/d_k) = 1/d_k < ε does not follow from ε d_k > 1/2.
    from proofs.notation import S, Var
    from proofs.theorems.dot_product import EPSILON, _scaled_variance

    pf, fact, _ = _scaled_variance("dk-scaling-trap-wrong", D_K, sp.Lt(Var(S / D_K), EPSILON, evaluate=False))
    half = pf.assume(sp.Gt(EPSILON * D_K, sp.Rational(1, 2)))
    pf.rewrite(Var(S / D_K), EPSILON, [fact, half], relation_="<")
    assert not pf.finish().verified
