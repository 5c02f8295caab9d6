import pytest
import sympy as sp

from proofs.claims import claim
from proofs.theorems import rounding as r

ROUNDING_CLAIMS = ("rounding-gamma-lemma", "rounding-dot-product", "rounding-softmax-shifted",
                   "rounding-online-rescale", "rounding-attention-forward", "rounding-attention-probabilistic")


def _cited(d) -> list[str]:
    """The references of a derivation's cited premises (engine API kind=, or today's tagged text)."""
    out = []
    for s in d.steps:
        if getattr(s, "kind", None) == "cited":
            out.append(s.reference)
        elif s.is_premise and s.description.startswith("[cited: "):
            out.append(s.description[len("[cited: "):].split("]")[0])
    return out


@pytest.mark.parametrize("claim_id", ROUNDING_CLAIMS)
def test_rounding_claims_are_proved(claim_id):
    d = claim(claim_id).derive()
    assert d.verified, d.to_text()
    assert d.claim_id == claim_id


@pytest.mark.parametrize("claim_id", ROUNDING_CLAIMS[1:])
def test_trust_base_names_the_cited_results(claim_id):
    cited = _cited(claim(claim_id).derive())
    assert cited, "every bound past the γ lemma rests on a cited model"
    assert any("Higham" in c for c in cited)


def test_gamma_lemma_is_two_inductions_citing_only_the_triangle_inequality():
    d = r.gamma_lemma()
    assert d.verified, d.reasons
    assert d.computations == []
    assert _cited(d) == ["triangle inequality"]
    assert sum(s.rule == "induction" and s.passed for s in d.steps) == 2
    assert d.trust_base["assumption"] == ["Abs(delta[j, k]) <= u (for all j, k)", "n*u < 1"]


def test_dot_product_cites_the_gamma_lemma_and_is_an_induction_on_the_terms():
    d = r.dot_product_bound()
    assert d.verified, d.reasons
    assert d.computations == []
    assert any(s.rule == "theorem rounding-gamma-lemma" and s.passed for s in d.steps)
    assert sum(s.rule == "induction" and s.passed for s in d.steps) == 1


def test_gamma_without_its_denominator_is_refused():
    d = r.gamma_lemma(gamma_of=lambda n, u=r.U: n * u)
    assert not d.verified
    assert any(s.rule == "γ bound" for s in d.failed_steps)


def test_a_rescale_count_that_forgets_a_rounding_is_refused():
    good = r.online_rescale()
    assert good.verified, good.reasons
    assert good.computations == []
    assert sum(s.rule == "induction" and s.passed for s in good.steps) == 1
    d = r.online_rescale(per_block=1)
    assert not d.verified
    assert any(s.rule == "count (step)" for s in d.failed_steps)


def test_a_forward_bound_that_forgets_the_scale_roundings_is_refused():
    d = r.attention_forward_bound(score_roundings=0)
    assert not d.verified
    assert any(s.rule == "γ arithmetic" for s in d.failed_steps)


def test_bound_shrinks_with_accumulator_precision():
    ex = r.attention_forward_bound().result
    base = {r.HEAD_DIM: 64, r.BLOCK_N: 64, r.BLOCKS: 4, r.KEYS: 256, r.QK_ABS: 3, r.GAP: 2, r.DELTA_MAX: 0}
    def bound(rec):
        vals = {**base, **rec.values}
        return float(ex["R"].subs(vals))
    assert bound(r.recipe("flash-attention-2", "float16")) < bound(r.recipe("loosest", "float16"))


def test_recipe_arguments_are_validated():
    with pytest.raises(ValueError, match="dtype"):
        r.recipe("loosest", "float64")
    with pytest.raises(ValueError, match="recipe name"):
        r.recipe("fast", "float16")
    with pytest.raises(ValueError, match="block_n"):
        r.recipe("loosest", "float16", block_n=(0,))
    with pytest.raises(ValueError, match="accumulator"):
        r.recipe("loosest", "float16", accumulator="int8")


def test_probabilistic_lambda_gives_the_stated_failure_probability():
    res = r.attention_probabilistic_bound().result
    lam = res["lam_of_q"].subs({res["chains"]: 10**6, res["q_fail"]: sp.Rational(1, 100), r.U_A: sp.Rational(1, 2**24)})
    fail = res["chains"] * res["per_chain"]
    value = fail.subs({res["chains"]: 10**6, r.LAM: lam, r.U_A: sp.Rational(1, 2**24)})
    assert abs(float(value) - 0.01) < 1e-12
