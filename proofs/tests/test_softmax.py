import pytest
import sympy as sp

from proofs import softmax_jacobian
from proofs.engine import identity
from proofs.theorems.softmax import differentiated_jacobian, jacobian_in_weights, probabilities


def test_jacobian_for_given_n_is_a_matrix_in_the_weights():
    d = softmax_jacobian(3)
    assert d.verified
    a = probabilities(3)
    assert isinstance(d.result, sp.MatrixBase)
    assert d.result == sp.diag(*a) - a * a.T


def test_general_jacobian_is_index_form():
    d = softmax_jacobian()
    assert d.verified
    assert d.result.has(sp.KroneckerDelta)


@pytest.mark.parametrize("wrong", [
    lambda a: sp.diag(*a) + a * a.T,          # sign of the outer product
    lambda a: sp.diag(*a) - sp.diag(*a) ** 2,  # diagonal only: drops the off-diagonal coupling
    lambda a: sp.eye(a.rows) - a * a.T,        # δ_ij instead of a_i δ_ij
])
def test_wrong_jacobians_are_refuted(wrong):
    _, a, J = differentiated_jacobian(3)
    ok, detail = identity(J, wrong(a))
    assert not ok and "refuted" in detail


@pytest.mark.parametrize("n", [0, -1, 1.5, "3"])
def test_bad_n_is_a_value_error_naming_n(n):
    with pytest.raises(ValueError, match=r"^n "):
        softmax_jacobian(n)


def test_jacobian_spectrum_bound_is_attained_at_two_equal_weights():
    J = jacobian_in_weights(sp.Matrix([sp.Rational(1, 2), sp.Rational(1, 2)]))
    assert max(J.eigenvals()) == sp.Rational(1, 2)
