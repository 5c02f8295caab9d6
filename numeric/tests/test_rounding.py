"""The proved bound against computations whose recipe is known exactly (NumPy, one key block)."""
from dataclasses import replace

import numpy as np
import pytest

from numeric.rounding import binomial_p_value, forward_bound
from proofs.theorems.rounding import recipe


def _plain(q, k, v, dtype):
    """softmax(q kᵀ/√D) v computed entirely in ``dtype``: one key block, P never rounded further."""
    q, k, v = (x.astype(dtype) for x in (q, k, v))
    s = (q * dtype(1 / np.sqrt(q.shape[-1]))) @ k.T
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e @ v) / e.sum(-1, keepdims=True)


def _case(rng, n_k, d=32, n_q=6, sharp=1.0):
    q, k, v = (rng.standard_normal(shape) for shape in ((n_q, d), (n_k, d), (n_k, d)))
    q, k, v = (x.astype(np.float32).astype(np.float64) for x in (q * sharp, k, v))
    s = q @ k.T / np.sqrt(d)
    p = np.exp(s - s.max(-1, keepdims=True))
    return q, k, v, (p / p.sum(-1, keepdims=True)) @ v


FLOAT32_ONE_BLOCK = lambda n_k: replace(recipe("float32-blocked", "float32"), block_n=(n_k,))  # noqa: E731


@pytest.mark.parametrize("n_k", [1, 2, 7, 100, 700])
def test_float32_attention_stays_within_both_bounds(n_k):
    rng = np.random.default_rng(n_k)
    for sharp in (0.3, 1.0, 4.0):
        q, k, v, gold = _case(rng, n_k, sharp=sharp)
        b = forward_bound(q, k, v, FLOAT32_ONE_BLOCK(n_k), failure=0.01)
        err = np.abs(_plain(q, k, v, np.float32) - gold)
        assert (err <= b.deterministic).all()
        assert (err <= b.probabilistic).all()
        assert (b.probabilistic <= b.deterministic * (1 + 1e-12)).all()


@pytest.mark.parametrize("n_k", [7, 100])
def test_float16_inside_while_declaring_float32_is_refused(n_k):
    rng = np.random.default_rng(0)
    q, k, v, gold = _case(rng, n_k)
    b = forward_bound(q, k, v, FLOAT32_ONE_BLOCK(n_k))
    err = np.abs(_plain(q, k, v, np.float16).astype(np.float64) - gold)
    assert (err > b.deterministic).any()


def test_causal_rows_see_their_prefix_only():
    rng = np.random.default_rng(1)
    q, k, v, _ = _case(rng, 6, n_q=6)
    k2, v2 = k.copy(), v.copy()
    k2[3:], v2[3:] = 50 * k[3:], -7 * v[3:]  # keys row 2 cannot see
    a = forward_bound(q, k, v, FLOAT32_ONE_BLOCK(6), is_causal=True).deterministic
    b = forward_bound(q, k2, v2, FLOAT32_ONE_BLOCK(6), is_causal=True).deterministic
    assert np.array_equal(a[:3], b[:3])
    assert not np.array_equal(a[3:], b[3:])


def test_bound_is_infinite_where_it_proves_nothing():
    rng = np.random.default_rng(2)
    q, k, v, _ = _case(rng, 4096, n_q=2)
    b = forward_bound(q, k, v, recipe("loosest", "float16"))  # float16 accumulators over 4096 keys
    assert np.isinf(b.deterministic).all()


def test_bad_arguments_are_named():
    q = np.zeros((2, 4))
    with pytest.raises(ValueError, match="shapes"):
        forward_bound(q, np.zeros((3, 5)), np.zeros((3, 4)), recipe("loosest", "float32"))
    with pytest.raises(ValueError, match="failure"):
        forward_bound(q, np.zeros((3, 4)), np.zeros((3, 4)), recipe("loosest", "float32"), failure=1.5)
    with pytest.raises(ValueError, match="independent_axes"):
        forward_bound(q, np.zeros((3, 4)), np.zeros((3, 4)), recipe("loosest", "float32"), independent_axes=1)


def test_independent_inputs_each_get_the_stated_failure_probability():
    """λ of a stack of independent inputs is one input's λ (fewer chains), smaller than the stack's as one tensor."""
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((8, 4, 50, 32)) for _ in range(3))
    one = forward_bound(q[:1, :1], k[:1, :1], v[:1, :1], FLOAT32_ONE_BLOCK(50), failure=0.01)
    per_input = forward_bound(q, k, v, FLOAT32_ONE_BLOCK(50), failure=0.01, independent_axes=2)
    whole = forward_bound(q, k, v, FLOAT32_ONE_BLOCK(50), failure=0.01)
    assert per_input.lam == one.lam < whole.lam
    np.testing.assert_allclose(per_input.probabilistic[:1, :1], one.probabilistic, rtol=1e-12)


def test_binomial_test_flags_too_many_exceedances():
    assert binomial_p_value(0, 1000, 0.01) == 1.0
    assert binomial_p_value(12, 1000, 0.01) > 0.05
    assert binomial_p_value(40, 1000, 0.01) < 1e-6
