from fractions import Fraction
from itertools import product

import pytest

from proofs import dice


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_the_distribution_matches_enumeration(n):
    counts = {}
    for faces in product(range(1, 7), repeat=n):
        counts[sum(faces)] = counts.get(sum(faces), 0) + 1
    for total in range(n - 1, 6 * n + 2):
        assert dice.pmf(n, total) == Fraction(counts.get(total, 0), 6**n), total


def test_the_swing_probability_matches_enumeration_and_a_wrong_one_is_told_apart():
    faces = list(product(range(1, 7), repeat=4))
    for swing in (1, 2, 3, 5):
        exact = Fraction(sum(abs(sum(f) - 14) >= swing for f in faces), len(faces))
        assert dice.p_swing_at_least(4, swing) == exact
        assert dice.p_swing_at_least(4, swing) != Fraction(sum(abs(sum(f) - 14) > swing for f in faces), len(faces))


def test_1024_dice():
    mean, var = dice.mean_and_variance(1024)
    assert (mean, var) == (3584, Fraction(35 * 1024, 12))
    p = dice.p_swing_at_least(1024, 100)
    assert abs(float(p) - 0.0686496) < 1e-6  # the normal approximation gives 2Φ(−99.5/54.65) ≈ 0.0687
    assert p == 2 * dice.cdf(1024, 3484)  # the distribution is symmetric about 3584
    assert sum(dice.pmf(1024, s) for s in range(3484, 3685)) == 1 - p + dice.pmf(1024, 3484) + dice.pmf(1024, 3684)


def test_bad_arguments():
    with pytest.raises(ValueError, match="n must"):
        dice.ways_at_most(0, 3)
    with pytest.raises(ValueError, match="swing must"):
        dice.p_swing_at_least(4, 0)
