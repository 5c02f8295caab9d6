import math

import pytest
import sympy as sp

from proofs import notation_backward as nb
from proofs.theorems.backward import attention_backward, backward_identities, ds_entry, row_correction


def test_backward_is_proved_with_the_softmax_layer_by_rules():
    d = attention_backward()
    assert d.verified, d.reasons
    # What is left to named computations: the linear layers and D from dO, by index-sum reductions.
    assert sorted(c.split(" ")[0] for c in d.computations) == sorted(
        ["dv_by_index_sums", "dp_by_index_sums", "d_from_do_by_index_sums", "dq_by_index_sums", "dk_by_index_sums"])
    assert any(s.rule == "rewrite" and s.passed and s.description.startswith("dS_ab = Σ_k dP_ak ∂P_ak/∂S_ab")
               for s in d.checked_steps)
    assert d.result.rule == ds_entry(nb.P, nb.dP, nb.A_IDX, nb.B_IDX, nb.N_K)


def _first_three_keys_only(P, dP, a, b, n_k):
    """A row correction that sums a fixed tile of 3 keys: right for N_k ≤ 3, wrong beyond."""
    k = nb.K_IDX
    return P[a, b] * (dP[a, b] - sp.Sum(P[a, k] * dP[a, k], (k, 1, sp.Min(n_k, 3))))


@pytest.mark.parametrize("wrong", [
    lambda P, dP, a, b, n_k: P[a, b] * dP[a, b],  # forgets −D
    lambda P, dP, a, b, n_k: -ds_entry(P, dP, a, b, n_k),  # the Jacobian's sign flipped
    _first_three_keys_only,  # wrong only for N_k > 3, past the explicit 2×3 matrices the old proof built
])
def test_wrong_ds_rules_are_refused_for_any_number_of_keys(wrong):
    d = attention_backward(wrong)
    assert not d.verified
    assert {s.description for s in d.failed_steps} == {
        "dS_ab = Σ_k dP_ak ∂P_ak/∂S_ab is the rule under test, any N_k",
        "the rule under test is P_ab (dP_ab − D_a), any N_k"}


def test_the_three_key_tile_rule_is_right_up_to_three_keys():
    # The injected rule really is wrong only past N_k = 3: at N_k ≤ 3 it is the derived rule.
    P, dP, a, b = nb.P, nb.dP, nb.A_IDX, nb.B_IDX
    for n in (1, 2, 3):
        assert (_first_three_keys_only(P, dP, a, b, n) - ds_entry(P, dP, a, b, n)).doit() == 0
    assert (_first_three_keys_only(P, dP, a, b, 4) - ds_entry(P, dP, a, b, 4)).doit() != 0


def test_both_forms_of_D_agree_symbolically():
    r = backward_identities(1, 2, 1, 1)
    assert sp.simplify(r.D[0] - r.D_from_dP[0]) == 0


def test_lambdified_dq_matches_finite_differences():
    # The identities are executable: dQ from the formula against a central difference of L = Σ dO ∘ O.
    r = backward_identities(2, 3, 2, 2)
    inputs = list(r.Q) + list(r.K) + list(r.V) + list(r.dO) + [r.scale]
    loss = sum(r.dO.multiply_elementwise(r.O))
    f_loss = sp.lambdify(inputs, loss, "math")
    f_dq = sp.lambdify(inputs, list(r.dQ), "math")
    point = [0.3, -0.2, 0.5, 0.1, -0.4, 0.7, 0.2, 0.9, -0.6, 0.3, 0.8, -0.1,
             0.5, 1.1, -0.7, 0.4, 0.2, -0.3, 0.6, 0.9, 0.7]
    assert len(point) == len(inputs)
    h = 1e-6
    for idx, want in enumerate(f_dq(*point)):  # the first inputs are the entries of Q, in order
        up, down = list(point), list(point)
        up[idx] += h
        down[idx] -= h
        assert math.isclose((f_loss(*up) - f_loss(*down)) / (2 * h), want, rel_tol=1e-6, abs_tol=1e-8)


def test_row_correction_is_a_row_sum():
    P = sp.Matrix([[1, 2], [3, 4]])
    dP = sp.Matrix([[5, 6], [7, 8]])
    assert row_correction(P, dP) == sp.Matrix([17, 53])


@pytest.mark.parametrize("kw,name", [({"n_q": 0}, "n_q"), ({"n_k": 1.5}, "n_k"), ({"d": "2"}, "d")])
def test_bad_sizes_are_value_errors_naming_the_argument(kw, name):
    with pytest.raises(ValueError, match=rf"^{name} "):
        backward_identities(**kw)
