import math

import sympy as sp

from proofs import online_softmax_merge
from proofs.theorems.online_softmax import STATE_SYMBOLS


def test_derived_merge_is_proved_and_lambdifies():
    d = online_softmax_merge()
    assert d.verified
    f = sp.lambdify(STATE_SYMBOLS, [d.result.m, d.result.l, d.result.o], "math")
    # Two one-element blocks: scores 1 and 3, values 10 and 20.
    m, l, o = f(1.0, 1.0, 10.0, 3.0, 1.0, 20.0)
    w = [math.exp(1), math.exp(3)]
    assert m == 3.0
    assert math.isclose(o, (w[0] * 10 + w[1] * 20) / sum(w), rel_tol=1e-12)


def _drops_second_rescale(m1, l1, o1, m2, l2, o2, *, reference=None):
    m = sp.Max(m1, m2) if reference is None else reference
    w1 = sp.exp(m1 - m) * l1
    l = w1 + l2  # bug: forgets e^{m2 - m}
    return m, l, (w1 * o1 + sp.exp(m2 - m) * l2 * o2) / l


def _forgets_accumulator_rescale(m1, l1, o1, m2, l2, o2, *, reference=None):
    m = sp.Max(m1, m2) if reference is None else reference
    w1, w2 = sp.exp(m1 - m) * l1, sp.exp(m2 - m) * l2
    l = w1 + w2
    return m, l, (l1 * o1 + w2 * o2) / l  # bug: old output not rescaled


def test_negative_controls_are_rejected_by_the_engine():
    for wrong in (_drops_second_rescale, _forgets_accumulator_rescale):
        d = online_softmax_merge(wrong)
        assert not d.verified, wrong.__name__
        assert d.failed_steps
