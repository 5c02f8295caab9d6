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


# --- the Gershgorin radius R_g = Σ_{y≠g} |J_gy| = J_gg, derived by the rules (no computation step) ---------------

def _radius(total_value=1, weights="softmax"):
    """R_g = J_gg alone, under its own id: J and R defined as in softmax-jacobian-spectrum, Σ_i a_i = ``total_value``
    stated (cited), the weights defined as softmax(z) or as the given (a_x := weights(x)), or not at all (None)."""
    from proofs.engine import Proof
    from proofs.notation import A, JAC, N, Z
    from proofs.notation import I as i
    import proofs.theorems.softmax as softmax

    x, y, g, R = softmax._x, softmax._y, softmax._g, softmax._R
    pf = Proof("t-gershgorin-radius", statement=sp.Eq(R[g], JAC[g, g], evaluate=False), assumptions=["a = softmax(z)"])
    entries = pf.define(JAC[x, y], softmax.jacobian_index_form().xreplace({softmax._i: x, softmax._j: y}),
                        "J_xy = a_x δ_xy − a_x a_y", forall=[x, y])
    radii = pf.define(R[x], sp.Sum(sp.Abs(JAC[x, y]), (y, 1, N)) - sp.Abs(JAC[x, x]), "R_x = Σ_{y≠x} |J_xy|",
                      forall=[x])
    total = pf.cite_external(sp.Eq(sp.Sum(A[i], (i, 1, N)), total_value, evaluate=False), "the weights' total")
    if weights == "softmax":
        defined = None
    elif weights is None:  # no positivity at all: a_x only real
        defined = pf.cite_external(sp.Eq(N, N, evaluate=False), "nothing")
    else:
        defined = pf.define(A[x], weights(Z[x]), "other weights", forall=[x])
    softmax.gershgorin_radius(pf, entries, radii, total, "Gershgorin circle theorem", weights=defined)
    return pf.finish()


def test_gershgorin_radius_is_the_diagonal_by_the_rules():
    d = _radius()
    assert d.verified, d.reasons
    assert d.computations == [] and "computation" not in [o.rule for o in d.check.outcomes]
    assert [s["rule"] for s in d.certificate["steps"]].count("computation") == 0


@pytest.mark.parametrize("total_value", [2, sp.Rational(1, 2), 0])
def test_gershgorin_radius_with_a_wrong_normalisation_is_not_proved(total_value):
    # Σ a = c gives R_g = c a_g − a_g², which is J_gg only for c = 1: the last rewrite fails.
    d = _radius(total_value)
    assert not d.verified
    assert [s.description for s in d.failed_steps] == ["R_g = Σ_y (1 − δ_gy)|J_gy| = a_g Σ_y a_y − a_g² = a_g(1 − a_g) = J_gg"]


@pytest.mark.parametrize("weights", [None, lambda z: z, lambda z: -sp.exp(z)], ids=["real", "identity", "negative"])
def test_gershgorin_radius_without_positive_weights_is_not_proved(weights):
    # |a_x| = a_x needs a_x > 0: with the weights only real (no definition), z_x, or −e^{z_x}, that step fails, and
    # with it the off-diagonal |J_gy| = a_g a_y and the radius.
    d = _radius(weights=weights)
    assert not d.verified
    failed = [s.description for s in d.failed_steps]
    assert "a_x = e^{z_x} / Σ_k e^{z_k} > 0" in failed, failed
