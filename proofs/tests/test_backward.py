import math

import pytest
import sympy as sp

from proofs.theorems.backward import attention_backward, backward_identities, ds_rule, row_correction


def test_backward_is_proved_and_carries_every_identity():
    d = attention_backward()
    assert d.verified, [(s.description, s.detail) for s in d.failed_steps]
    for name in ("dV", "dP", "dS", "dQ", "dK", "D", "P", "O"):
        assert name in d.result


def test_wrong_ds_without_the_row_correction_is_refused():
    d = attention_backward(lambda P, dP: P.multiply_elementwise(dP))  # forgets −D
    assert not d.verified
    assert any("refuted" in s.detail for s in d.failed_steps)


def test_wrong_ds_with_the_transposed_jacobian_sign_is_refused():
    d = attention_backward(lambda P, dP: ds_rule(P, -dP))
    assert not d.verified


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
        attention_backward(**kw)
