import math

import pytest
import sympy as sp

from proofs import notation_backward as nb
from proofs.theorems.backward import attention_backward, backward_identities, ds_entry, row_correction


def test_backward_is_proved_with_the_softmax_layer_by_rules():
    d = attention_backward()
    assert d.verified, d.reasons
    # No named computation is left: the linear layers and D from dO and O (O := PV, row a in range) are rules.
    assert d.computations == []
    assert any(s.rule == "rewrite" and s.passed and s.description == "D_a = Σ_k P_ak dP_ak = Σ_c dO_ac O_ac, any sizes"
               for s in d.checked_steps)
    assert "Eq(N_q, a + r_a)" in d.trust_base["assumption"]
    assert any(x.startswith("Eq(O[x, y], Sum(P[x, j]*V[j, y], (j, 1, N_k)))") for x in d.trust_base["definition"])
    assert {s.description for s in d.checked_steps if s.rule == "rewrite" and s.passed} >= {
        "dV = Pᵀ dO, any sizes", "dP = dO Vᵀ, any sizes", "dQ = scale·dS K, any sizes", "dK = scale·dSᵀ Q, any sizes"}
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


def test_a_wrong_linear_layer_gradient_is_refused():
    # dV with P's indices swapped (P dO, not Pᵀ dO): the rules reach Σ_i P_{i a} dO_{i b}, and the last sift refuses it.
    from proofs.engine import Proof
    from proofs.theorems.backward import _d, _gradient, _loss
    (av, bv), i, k, c = nb.ENTRY["V"], nb.I_IDX, nb.K_IDX, nb.C_IDX
    P, dO = nb.P, nb.dO
    wrong = sp.Eq(nb.dV[av, bv], sp.Sum(P[av, i] * dO[i, bv], (i, 1, nb.N_Q)), evaluate=False)
    pf = Proof("t-backward-wrong-dv", statement=wrong)
    _gradient(pf, wrong, _loss, nb.V, (nb.N_Q, nb.N_K, nb.D_V),
              lambda g, h: sp.Sum(_d(bv, c) * sp.Sum(dO[i, c] * sp.Sum(_d(av, k) * P[i, k], (k, 1, av + g)),
                                                      (i, 1, nb.N_Q)), (c, 1, bv + h)),
              lambda g, h: [(sp.Sum(_d(av, k) * P[i, k], (k, 1, av + g)), P[i, av], [i]),
                            (sp.Sum(_d(bv, c) * sp.Sum(dO[i, c] * P[i, av], (i, 1, nb.N_Q)), (c, 1, bv + h)),
                             wrong.rhs, [])], "a transposed dV")
    d = pf.finish()
    assert not d.verified and any("refuted" in s.detail or "does not simplify" in s.detail for s in d.failed_steps)


def test_linearity_nests_a_sum_only_over_ranges_independent_of_each_other():
    from proofs.checker import _nest
    i, c, n, m = nb.I_IDX, nb.C_IDX, nb.N_Q, nb.N_K
    f, g = sp.Function("f"), sp.Function("g")
    assert _nest(sp.Sum(f(c) * g(i, c), (c, 1, n), (i, 1, m))) == sp.Sum(f(c) * sp.Sum(g(i, c), (i, 1, m)), (c, 1, n))
    assert _nest(sp.Sum(f(c) * g(i, c), (i, 1, c), (c, 1, n))) is None  # i's range depends on c: no swapping
    assert _nest(sp.Sum(g(i, c), (c, 1, n), (i, 1, m))) is None  # no factor depends on one index alone
