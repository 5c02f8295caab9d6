import pytest
import sympy as sp

from proofs.theorems.real_scores import (StandardGaussian, distinct_score_moments, distinct_token_score_moments,
                                         distinct_variance_sum, score_moments, self_attention_score_moments,
                                         self_attention_variance_sums)


def test_self_attention_moments_are_proved_with_trace_formulas():
    d = self_attention_score_moments()
    assert d.verified, d.reasons
    assert d.computations == []
    M = d.result.M  # the proved statement read at n = 3
    assert sp.expand(d.result.mean - M.trace()) == 0
    assert sp.expand(d.result.variance - (M * M.T).trace() - (M * M).trace()) == 0


def test_variance_forgetting_tr_m_squared_is_refused():
    d = self_attention_score_moments(lambda Me, n: distinct_variance_sum(Me, n))  # tr(MMᵀ) only
    assert not d.verified
    assert any("refuted" in s.detail for s in d.failed_steps)
    twice = self_attention_score_moments(lambda Me, n: 2 * self_attention_variance_sums(Me, n))
    assert not twice.verified


def test_distinct_tokens_have_zero_mean_and_no_tr_m_squared():
    d = distinct_token_score_moments()
    assert d.verified, d.reasons
    assert d.computations == []
    assert d.result.mean == 0
    M = d.result.M
    assert sp.expand(d.result.variance - (M * M.T).trace()) == 0  # read off the statement at n = 3

    def with_tr_m_squared(Me, n):  # the same-token formula: tr(MMᵀ) + tr(M²)
        a, b = sp.symbols("a b", integer=True, positive=True)
        return distinct_variance_sum(Me, n) + sp.Sum(sp.Sum(Me[a, b] * Me[b, a], (b, 1, n)), (a, 1, n))

    assert not distinct_token_score_moments(with_tr_m_squared).verified
    assert not distinct_token_score_moments(lambda Me, n: 2 * distinct_variance_sum(Me, n)).verified


def test_score_moments_for_any_n_lambdify():
    r = score_moments(4)
    f = sp.lambdify(list(r.M), [r.mean, r.variance])
    mean, var = f(*range(16))  # M = [[0, 1, 2, 3], ...]
    M = sp.Matrix(4, 4, list(range(16)))
    assert mean == M.trace() and var == (M * M.T).trace() + (M * M).trace()


def test_identity_coupling_gives_chi_square_moments():
    # M = I: xᵀx ~ χ²_n, mean n and variance 2n; for distinct tokens x·y has variance n.
    n = 3
    r, s = score_moments(n), distinct_score_moments(n)
    eye = dict(zip(r.M, sp.eye(n)))
    assert r.mean.subs(eye) == n and r.variance.subs(eye) == 2 * n
    assert s.variance.subs(eye) == n


def test_gaussian_moments_refuse_a_wrong_fourth_moment():
    x = sp.Symbol("x")
    assert StandardGaussian([x]).E(x**4) == 3
    assert StandardGaussian([x]).E(x**3) == 0


@pytest.mark.parametrize("n", [0, -2, 2.0, None])
def test_bad_n_is_a_value_error_naming_n(n):
    with pytest.raises(ValueError, match=r"^n "):
        score_moments(n)
