"""The dropout laws and the rounding-bias claim, confirmed from the lambdified derivations; the same
tests reject the wrong laws (no rescale, the keep/drop probabilities swapped, truncation)."""
from __future__ import annotations

import numpy as np
import pytest

from numeric import dropout as nd
from numeric.statistics import Moments, mean_test, variance_test


@pytest.mark.parametrize("confirm", [nd.dropout_kept_fraction, nd.dropout_unbiased, nd.dropout_variance,
                                     nd.round_to_nearest_unbiased])
@pytest.mark.parametrize("seed", [0, 1])
def test_the_derived_laws_are_confirmed(confirm, seed):
    c = confirm(seed=seed, n_samples=50_000)
    assert c.confirmed, str(c)
    assert c.p_value is not None and c.n_samples == 50_000


def _row_outputs(rescale, keep_probability, n=50_000, seed=3):
    rng = np.random.default_rng(seed)
    P, v = nd._problem(rng, 8)
    masks = rng.random((n, 8)) < keep_probability
    return P, v, (masks * (P * v)).sum(axis=1) * rescale


def test_the_tests_reject_dropout_without_rescale_and_with_p_as_keep_probability():
    _, rescale, mean, variance = nd._laws()
    p = 0.25
    P, v, o = _row_outputs(1.0, 1 - p)  # no rescale: E[o] shrinks by 1 - p
    assert mean_test(Moments.of(o), mean(nd._one_based(P), nd._one_based(v), 8), 0.001).rejects(0.001)
    P, v, o = _row_outputs(1 / p, p)  # p read as the keep probability: unbiased, wrong variance
    assert not mean_test(Moments.of(o), mean(nd._one_based(P), nd._one_based(v), 8), 0.001).rejects(0.001)
    assert variance_test(Moments.of(o), variance(p, nd._one_based(P), nd._one_based(v), 8), 0.001).rejects(0.001)


def test_truncation_is_biased_and_round_to_nearest_is_not():
    x = np.random.default_rng(0).uniform(1, 2, 20_000) * np.array([1.0, -1.0] * 10_000)
    rn, trunc = nd.rounding_errors(x)
    assert not mean_test(Moments.of(rn), 0.0, 0.001).rejects(0.001)
    assert mean_test(Moments.of(trunc * np.sign(x)), 0.0, 0.001).rejects(0.001)
    assert np.all(np.abs(x + trunc * np.exp2(np.floor(np.log2(np.abs(x)))) * np.finfo(np.float16).eps) <= np.abs(x))


@pytest.mark.parametrize("kwargs, words", [(dict(p=1.0), "p must be"), (dict(p=0), "p must be"),
                                           (dict(n_samples=0), "n_samples"), (dict(n_keys=0), "n_keys")])
def test_bad_input_is_named(kwargs, words):
    with pytest.raises(ValueError, match=words):
        nd.dropout_variance(**kwargs)
