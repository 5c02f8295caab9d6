"""Hypothesis properties of the NumPy softmax, merge and blockwise attention.

Random shapes, extreme logits (±1e4), −∞ entries, fully masked blocks and rows: no NaN wherever
the answer is defined, and agreement with the direct computation within a stated rounding bound.
Example counts come from the profile in conftest.py (20 in CI), so the file runs in seconds.
"""
import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from numeric import online_softmax_trace
from numeric import softmax as sm
from numeric.merge_checks import merge_error_bound

U = np.finfo(np.float64).eps / 2
logit = st.one_of(st.floats(-1e4, 1e4), st.just(-np.inf), st.sampled_from([-1e4, 1e4, 0.0]))


@st.composite
def score_rows(draw, max_rows=4, max_n=40):
    n_q, n = draw(st.integers(1, max_rows)), draw(st.integers(1, max_n))
    return draw(hnp.arrays(np.float64, (n_q, n), elements=logit))


@st.composite
def attention_cases(draw):
    s = draw(score_rows())
    n = s.shape[1]
    v = draw(hnp.arrays(np.float64, (n, draw(st.integers(1, 4))), elements=st.floats(-10, 10)))
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=6))) if n > 1 else []
    masked = draw(st.lists(st.booleans(), min_size=len(cuts) + 1, max_size=len(cuts) + 1))
    for (a, b), m in zip(sm.partition(n, cuts=cuts), masked):
        if m:
            s[:, a:b] = -np.inf  # a fully masked block
    return s, v, cuts


@given(score_rows())
def test_softmax_is_a_distribution_or_zero_row(s):
    a = sm.softmax(s)
    assert not np.isnan(a).any()
    assert np.all(a >= 0)
    defined = np.isfinite(s).any(axis=1)
    np.testing.assert_allclose(a[defined].sum(axis=1), 1.0, atol=(s.shape[1] + 2) * U)
    assert np.all(a[~defined] == 0)  # every logit −∞: no softmax, zeros by convention
    assert np.all(a[np.isneginf(s)] == 0)


@given(score_rows(), st.floats(-1e3, 1e3))
def test_softmax_shift_invariance(s, c):
    finite = np.isfinite(s)
    if not finite.any():
        return
    bound = U * (np.max(np.abs(s[finite])) + abs(c)) / 2 + 2 * (s.shape[1] + 4) * U
    np.testing.assert_allclose(sm.softmax(s + c), sm.softmax(s), atol=bound, rtol=0)


@given(st.integers(1, 12).flatmap(lambda n: hnp.arrays(np.float64, n, elements=st.floats(-50, 50))))
def test_jacobian_rows_sum_to_zero_and_is_symmetric(z):
    J = sm.jacobian(sm.softmax(z))
    assert not np.isnan(J).any()
    np.testing.assert_array_equal(J, J.T)
    np.testing.assert_allclose(J.sum(axis=1), 0.0, atol=4 * (z.size + 2) * U)


@given(attention_cases())
def test_blockwise_equals_direct_attention(case):
    s, v, cuts = case
    direct, blocked = sm.attention(s, v), sm.blockwise_attention(s, v, cuts=cuts)
    assert not np.isnan(blocked).any() and not np.isnan(direct).any()
    np.testing.assert_allclose(blocked, direct, rtol=0, atol=merge_error_bound(s.shape[1], len(cuts) + 1, v))
    empty = ~np.isfinite(s).any(axis=1)
    assert np.all(blocked[empty] == 0)


@given(attention_cases(), st.permutations(range(3)))
def test_merge_order_does_not_matter(case, order):
    s, v, _ = case
    n = s.shape[1]
    thirds = sm.partition(n, cuts=sorted({n // 3, 2 * n // 3} - {0, n}))
    states = [sm.block_state(s[:, a:b], v[a:b]) for a, b in thirds]
    states = [states[i] for i in order if i < len(states)]
    merged = states[0]
    for st_ in states[1:]:
        merged = sm.merge(merged, st_)
    np.testing.assert_allclose(merged[2], sm.attention(s, v), rtol=0, atol=merge_error_bound(n, 3, v))


@given(st.integers(1, 60).flatmap(lambda n: hnp.arrays(np.float64, n, elements=logit)), st.integers(1, 16))
def test_online_trace_ends_at_the_logsumexp(s, block):
    t = online_softmax_trace(s, block)
    assert not np.isnan(t["running_max"]).any() and not np.isnan(t["running_sum"]).any()
    assert np.all(t["running_max"][1:] >= t["running_max"][:-1])  # −∞ ≥ −∞ holds; diff would give NaN
    if np.isfinite(s).any():
        lse = t["running_max"][-1] + np.log(t["running_sum"][-1])
        np.testing.assert_allclose(lse, sm.logsumexp(s), rtol=4 * (s.size + 4) * U, atol=4 * (s.size + 4) * U)


def test_the_merge_check_can_fail():
    # A merge that forgets to rescale disagrees with direct attention on a simple case.
    s = np.array([[0.0, 5.0]])
    v = np.array([[1.0], [-1.0]])
    a, b = sm.block_state(s[:, :1], v[:1]), sm.block_state(s[:, 1:], v[1:])
    l = a[1] + b[1]
    wrong = (a[1] * a[2] + b[1] * b[2]) / l
    assert np.abs(wrong - sm.attention(s, v)).max() > 0.5
    assert np.abs(sm.merge(a, b)[2] - sm.attention(s, v)).max() < 1e-15
