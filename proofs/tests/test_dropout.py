import pytest
import sympy as sp

from proofs.engine import Proof
from proofs.tests.derived import derived
from proofs.theorems import dropout as d


@pytest.mark.parametrize("claim_id", ["dropout-kept-fraction", "dropout-unbiased", "dropout-variance"])
def test_each_dropout_claim_is_proved_by_rules_alone(claim_id):
    r = derived(claim_id)
    assert r.verified, r.reasons
    assert r.computations == []


def test_the_results_are_the_proved_laws_in_p():
    kept = derived("dropout-kept-fraction").result
    assert sp.simplify(kept.keep - (1 - d.p)) == 0 and sp.simplify(kept.rescale - 1 / (1 - d.p)) == 0
    var = derived("dropout-variance").result
    assert sp.simplify(var.variance_of_sum - d.p / (1 - d.p) * d.SUM_SQ) == 0


@pytest.mark.parametrize("wrong", [d.SUM_SQUARES / d.q, (1 - d.q) * d.SUM_SQUARES, d.q * (1 - d.q) * d.SUM_SQUARES])
def test_a_wrong_variance_is_refused_by_the_same_rules(wrong):
    # Forgetting the rescale's square, or the Bernoulli variance, or squaring the wrong way: refused.
    pf = Proof("dropout-variance-wrong", statement=sp.Eq(d.Var(d.OUTPUT), wrong, evaluate=False))
    support, law, square = d._mask_law(pf)
    x = sp.Symbol("X")
    def_var = pf.define(d.Var(x), d.E(x**2) - d.E(x) ** 2, forall=[x])
    by_mask = sp.Sum((d.P[d.j] * d.v[d.j] / d.q) ** 2 * d.Var(d.M[d.j]), (d.j, 1, d.n))
    bienayme = pf.cite_external(sp.Eq(d.Var(d.OUTPUT), by_mask), "Bienaymé formula")
    bernoulli = sp.Sum((d.P[d.j] * d.v[d.j] / d.q) ** 2 * (d.q - d.q**2), (d.j, 1, d.n))
    each = pf.rewrite(by_mask, bernoulli, [def_var, square, support, law])
    out = pf.linearity(bernoulli, wrong)
    pf.chain([bienayme, each, out], d.Var(d.OUTPUT), "=", wrong)
    assert not pf.finish().verified


def test_a_mask_kept_with_another_probability_does_not_give_the_stated_mean():
    pf = Proof("dropout-unbiased-wrong", statement=sp.Eq(d.E(d.OUTPUT), d.NO_DROPOUT, evaluate=False))
    support = pf.assume(sp.Eq(d.E(d.M[d.j]), d.Pr(sp.Eq(d.M[d.j], 1))), forall=[d.j])
    law = pf.assume(sp.Eq(d.Pr(sp.Eq(d.M[d.j], 1)), d.p), forall=[d.j])  # keeps with p, rescales by 1/q
    inside = sp.Sum(d.P[d.j] * d.v[d.j] * d.E(d.M[d.j]) / d.q, (d.j, 1, d.n))
    spread = pf.linearity(d.E(d.OUTPUT), inside, operator=d.E, random=[d.M])
    kept = pf.rewrite(inside, d.NO_DROPOUT, [support, law])
    pf.chain([spread, kept], d.E(d.OUTPUT), "=", d.NO_DROPOUT)
    assert not pf.finish().verified
