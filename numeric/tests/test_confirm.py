"""Every confirmable claim confirms at a small size, wrong claims and rules are refused, bad input
is named."""
import numpy as np
import pytest

import numeric
from numeric import (CONFIRMABLE, CONFIRMING_POWER, STATED_EFFECT, Confirmation, backward_checks, confirm,
                     confirm_dot_product_variance, merge_checks, power_against,
                     softmax_checks)
from numeric import softmax as sm
from numeric.registry import CONFIRMERS, confirms
from proofs.claims import CLAIMS
from proofs.theorems.dot_product import D_K


def test_confirmable_ids_are_catalogued():
    ids = {c.id for c in CLAIMS}
    assert set(CONFIRMABLE) <= ids
    assert len(set(CONFIRMABLE)) == len(CONFIRMABLE)


@pytest.mark.parametrize("claim_id", CONFIRMABLE)
def test_every_claim_confirms(claim_id):
    c = confirm(claim_id, seed=3, quick=True)  # the sizes the report's --quick run uses
    assert isinstance(c, Confirmation)
    assert c.confirmed, str(c)
    assert c.claim_id == claim_id and c.seconds > 0 and c.n_samples >= 2
    assert c.ci[0] <= c.estimate <= c.ci[1]
    if c.p_value is not None:
        assert 0 <= c.p_value <= 1 and c.p_value >= c.alpha
    if claim_id in HEADLINE:  # the report may call these "confirmed" only with this power
        assert power_against(c, STATED_EFFECT) >= CONFIRMING_POWER, (claim_id, power_against(c, STATED_EFFECT))


# The claims whose quick sizes are chosen for power (numeric/dot_product.py's registrations).
HEADLINE = ("dot-product-variance", "scaled-score-unit-variance")


def test_power_against_an_effect_grows_with_the_effect_and_refuses_a_bad_one():
    c = confirm("dot-product-distribution-free", seed=0, n_samples=2000)
    assert power_against(c, 0.01) < power_against(c, 0.05) < power_against(c, 0.5)
    assert power_against(confirm("softmax-normalisation", seed=0, quick=True)) is None  # floating-point: no power
    with pytest.raises(ValueError, match="effect"):
        power_against(c, 1.5)


def test_a_confirmation_registers_once_and_only_for_a_catalogued_claim():
    with pytest.raises(ValueError, match="claim_id 'no-such-claim'"):
        confirms("no-such-claim")
    with pytest.raises(ValueError, match="already has a confirmation"):
        confirms("dot-product-variance")(lambda **kw: None)
    assert CONFIRMERS["dot-product-variance"].run.__name__ == "dot_product_variance"


def test_quick_takes_the_registered_size_and_an_explicit_one_wins():
    quick = CONFIRMERS["dot-product-moments"].quick["n_samples"]
    assert confirm("dot-product-moments", quick=True, d_ks=(1,)).n_samples == quick
    assert confirm("dot-product-moments", quick=True, n_samples=3000, d_ks=(1,)).n_samples == 3000


def test_confirm_is_deterministic():
    a = confirm("dot-product-moments", n_samples=5000, seed=4)
    b = confirm("dot-product-moments", n_samples=5000, seed=4)
    assert (a.estimate, a.ci, a.p_value) == (b.estimate, b.ci, b.p_value)


@pytest.mark.parametrize("claim_id, wrong", [
    ("dot-product-variance", 1.1 * D_K),
    ("scaled-score-unit-variance", D_K / D_K * 1.1),
    ("dk-scaling-trap", 1 / D_K**0.5),  # the √d_k law in place of the 1/d_k trap
])
def test_wrong_claimed_expressions_are_rejected(claim_id, wrong):
    c = confirm(claim_id, claimed=wrong, seed=1, n_samples=20_000, d_ks=(1, 4, 64))
    assert not c.confirmed and c.p_value < c.alpha


def test_single_variance_defaults_to_the_derived_value_and_rejects_a_wrong_one():
    ok = confirm_dot_product_variance(8, n_samples=50_000, distribution="uniform", mean_q=1, mean_k=-0.5,
                                      var_q=2, var_k=0.5)
    # Var = 8(2·0.5 + 1·0.5 + 0.25·2) from the general derivation: the CI must cover it.
    assert ok.confirmed and ok.claim_id == "dot-product-moments"
    assert ok.ci[0] < ok.claimed < ok.ci[1]
    bad = confirm_dot_product_variance(8, n_samples=50_000, distribution="uniform", mean_q=1, mean_k=-0.5,
                                       var_q=2, var_k=0.5, claimed=ok.claimed * 1.1)
    assert not bad.confirmed


def test_a_wrong_jacobian_is_refused():
    c = softmax_checks.softmax_jacobian(n_cases=50, jacobian=lambda a: np.diag(a) - 2 * a[..., :, None] * a[..., None, :])
    assert not c.confirmed


def test_a_merge_without_rescaling_is_refused():
    def forgetful(s1, s2):  # drops the exp(m_i - m) factors
        (m1, l1, o1), (m2, l2, o2) = s1, s2
        l = l1 + l2
        return np.maximum(m1, m2), l, np.where(l > 0, (l1 * o1 + l2 * o2) / np.where(l > 0, l, 1), 0)

    assert not merge_checks.online_softmax_merge(n_cases=50, merge=forgetful).confirmed


def test_real_attention_variance_without_tr_m2_is_refused():
    # Forgetting tr(M²) (the same-token correlation) is caught, as is claiming E = 0 for tied weights.
    c = confirm("self-attention-score-moments", n_samples=20_000, sizes=((3, 2),),
                claimed_variance=lambda M: float(np.trace(M @ M.T)))
    assert not c.confirmed


def test_scale_trap_with_the_wrong_gap_law_is_refused():
    c = confirm("scale-trap-limits", n_samples=5_000, d_ks=(64,), gap_std=lambda d: np.sqrt(d))
    assert not c.confirmed


def test_backward_without_the_row_correction_is_refused():
    def no_correction(Q, K, V, dO, scale):  # dS = P ∘ dP, the −D term dropped
        P = sm.softmax(scale * Q @ K.T)
        dS = P * (dO @ V.T)
        return scale * dS @ K, scale * dS.T @ Q, P.T @ dO

    assert not backward_checks.attention_backward(n_cases=5, gradients=no_correction).confirmed


def test_floating_point_checks_report_bounds():
    c = confirm("online-softmax-merge", n_samples=50)
    assert c.p_value is None and c.tolerance > 0 and c.estimate <= c.tolerance


@pytest.mark.parametrize("call, name", [
    (lambda: confirm("no-such-claim"), "claim_id"),
    (lambda: confirm("dot-product-variance", n_samples=1), "n_samples"),
    (lambda: confirm("dot-product-variance", alpha=1.5, n_samples=100), "alpha"),
    (lambda: confirm("dot-product-variance", alpha=0, n_samples=100), "alpha"),
    (lambda: confirm("softmax-jacobian", alpha=-0.1), "alpha"),
    (lambda: confirm("online-softmax-merge", n_samples=0), "n_samples"),
    (lambda: confirm("dot-product-variance", distribution="laplace", n_samples=100), "distribution"),
    (lambda: confirm("dot-product-variance", distribution="student-t", nu=3, n_samples=100), "nu"),
    (lambda: confirm("dot-product-variance", d_ks=(0, 4), n_samples=100), "d_k"),
    (lambda: confirm("dot-product-variance", bogus=1), "bogus"),
    (lambda: confirm_dot_product_variance(0), "d_k"),
    (lambda: confirm_dot_product_variance(2.5), "d_k"),
    (lambda: confirm_dot_product_variance(4, n_samples=1), "n_samples"),
    (lambda: confirm_dot_product_variance(4, var_q=-1), "var_q"),
    (lambda: confirm_dot_product_variance(4, var_k=-0.5), "var_k"),
    (lambda: confirm_dot_product_variance(4, alpha=1.0), "alpha"),
    (lambda: confirm_dot_product_variance(4, distribution="poisson"), "distribution"),
    (lambda: confirm_dot_product_variance(4, distribution="student-t", nu=4), "nu"),
    (lambda: numeric.saturation_curves([0, 4], 10), "d_ks"),
    (lambda: numeric.online_softmax_trace(np.zeros(4), 0), "block_size"),
])
def test_bad_input_is_a_value_error_naming_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_saturation_curves_shape_and_direction():
    d_ks = [1, 16, 256]
    c = numeric.saturation_curves(d_ks, 600, seed=2)
    assert set(c) == {"sqrt_dk", "dk", "none"}
    for curves in c.values():
        assert set(curves) == {"max_weight", "entropy", "jacobian_fro"}
        assert all(a.shape == (3,) for a in curves.values())
    # Unscaled saturates, d_k flattens toward uniform (entropy → log 32), √d_k stays within its noise.
    assert c["none"]["max_weight"][-1] > 0.8 and c["none"]["jacobian_fro"][-1] < 0.15
    assert c["dk"]["entropy"][-1] > np.log(32) - 0.05
    assert abs(c["sqrt_dk"]["max_weight"][-1] - c["sqrt_dk"]["max_weight"][1]) < 0.03


def test_saturation_check_can_fail():
    # With the d_k sweep reversed every "grows with d_k" statement points the wrong way.
    assert not confirm("softmax-saturation", n_samples=500, d_ks=(256, 1)).confirmed


def test_online_softmax_trace():
    s = np.array([-np.inf, -np.inf, 3.0, 1.0, 1e4, -1e4, 0.5])
    t = numeric.online_softmax_trace(s, 2)
    assert t["running_max"].tolist() == [-np.inf, 3.0, 1e4, 1e4]
    assert t["running_sum"][0] == 0.0
    np.testing.assert_allclose(t["running_sum"][-1], np.exp(s - 1e4).sum())
    assert np.all(t["running_max"][2:] >= t["running_max"][1:-1])


def test_sweep_details_carry_holm_adjusted_p_values():
    c = confirm("dot-product-variance", n_samples=2000, d_ks=(1, 4, 16))
    assert len(c.details) == 6  # mean and variance at each d_k
    assert all(d.p_adjusted is not None and d.p_adjusted >= d.p_value for d in c.details)
    assert c.p_value == min(d.p_adjusted for d in c.details)
