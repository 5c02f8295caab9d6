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


@pytest.mark.parametrize("claim", ["softmax-normalisation", "softmax-shift-invariance", "softmax-jacobian",
                                   "softmax-saturation"])
def test_softmax_claims_rest_on_rules_alone(claim):
    from proofs.claims import catalogued

    d = catalogued(claim).derive()
    assert d.verified, d.reasons
    assert d.computations == []


def test_the_jacobian_instance_for_given_n_rests_on_rules_alone():
    d = softmax_jacobian(3)
    assert d.verified and d.computations == []
    # It cites the general theorem (whose weights' definition the verdict names) and instantiates its formula.
    assert [s.rule for s in d.checked_steps] == ["theorem softmax-jacobian", "identity"]
    assert d.trust_base["definition"] == ["Eq(a[x], exp(z[x])/Sum(exp(z[k]), (k, 1, n))) (for all x)"]


def test_the_general_jacobian_assumes_j_in_range():
    # Outside 1..n, ∂a_i/∂z_j = 0 ≠ −a_i a_j: the range is an assumption the verdict lists.
    d = softmax_jacobian()
    assert d.trust_base["assumption"] == ["Eq(n, j + r)"]
