import sympy as sp

from proofs.theorems import null_kurtosis as nk
from proofs.theorems.dot_product import D_K


def test_the_kurtosis_of_q_dot_k_is_proved_by_induction_on_d_k():
    d = nk.dot_product_kurtosis()
    assert d.verified, d.reasons
    assert d.computations == []
    assert [o.passed for o in d.check.outcomes if o.rule == "induction"] == [True, True]  # E[C²] and K4(C)
    normal = d.result.kurtosis.subs({nk.MU_Q: 0, nk.MU_K: 0, nk.BETA_Q: 3, nk.BETA_K: 3})
    assert sp.simplify(normal - (3 + 6 / D_K)) == 0
    assert D_K in d.result.kurtosis.free_symbols  # proofs' own d_k (integer, positive), not a copy


def test_a_sum_rule_without_the_cross_terms_is_refused():
    # μ₄ of a sum taken as d μ₄ + d(d − 1)μ₂² (cross terms counted once, not three times): the inductions
    # still pass, the step that reads μ₄(S) off them does not.
    d = nk.dot_product_kurtosis(fourth_moment_of_sum=lambda n: n * nk.M4 + n * (n - 1) * nk.M2**2)
    assert not d.verified
    failed = [s.description for s in d.failed_steps]
    assert failed and failed[0].startswith("μ₄(S) = E[C_d⁴]"), failed
