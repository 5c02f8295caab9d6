import numpy as np

from numeric import confirm, rope


def test_the_derived_relative_form_matches_rotated_scores_in_float64():
    c = confirm("rope-relative-position", n_samples=50, seed=2)
    assert c.confirmed and c.p_value is None and 0 < c.estimate <= c.tolerance


def test_a_relative_form_in_m_minus_n_is_refused():
    def wrong(qa, qb, ka, kb, theta, offset):  # the sine term with the sign of m − n
        return (qa * ka + qb * kb) * np.cos(offset * theta) - (qb * ka - qa * kb) * np.sin(offset * theta)

    assert not rope.rope_relative_position(n_cases=50, pair=wrong).confirmed


def test_rotation_keeps_the_norm_and_position_zero_is_the_identity():
    rng = np.random.default_rng(0)
    x, theta = rng.normal(size=8), rope.frequencies(8)
    assert np.allclose(np.linalg.norm(rope.rotate(x, 1234, theta)), np.linalg.norm(x))
    assert np.array_equal(rope.rotate(x, 0, theta), x)
