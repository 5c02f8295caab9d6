import math

import pytest
import sympy as sp

from proofs import online_softmax_merge
from proofs.theorems.online_softmax import STATE_SYMBOLS, merge, merge_monoid


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


def _never_rescales(m1, l1, o1, m2, l2, o2, *, reference=None):
    """Associative, commutative, with identity (−∞, 0, 0): a monoid, but not the merge of blocks."""
    m = sp.Max(m1, m2) if reference is None else reference
    return m, l1 + l2, (l1 * o1 + l2 * o2) / (l1 + l2)


def _wrong_only_with_a_given_reference(m1, l1, o1, m2, l2, o2, *, reference=None):
    if reference is None:
        return merge(m1, l1, o1, m2, l2, o2)
    return _never_rescales(m1, l1, o1, m2, l2, o2, reference=reference)


@pytest.mark.parametrize("wrong", [_drops_second_rescale, _forgets_accumulator_rescale, _never_rescales,
                                   _wrong_only_with_a_given_reference])
def test_wrong_merges_are_refused_for_a_symbolic_number_of_blocks(wrong):
    d = online_softmax_merge(wrong)
    assert not d.verified, wrong.__name__
    assert d.failed_steps


def test_the_monoid_laws_are_proved_for_the_derived_merge_only():
    assert merge_monoid().verified
    # A merge that never rescales satisfies the laws; exactness on blocks is what refuses it.
    d = merge_monoid(_never_rescales)
    assert not d.verified
    assert [s.description for s in d.failed_steps] == ["exact on two blocks: merge(s(A), s(B)) = s(A ∪ B)"]
    assert not merge_monoid(_drops_second_rescale).verified


@pytest.mark.parametrize("claim", ["online-softmax-merge", "online-softmax-monoid"])
def test_online_softmax_claims_rest_on_rules_alone(claim):
    from proofs.claims import catalogued

    d = catalogued(claim).derive()
    assert d.verified, d.reasons
    assert d.computations == []
    # The merge the laws hold for is named in the verdict, as a definition.
    assert any("merge((m_1, l_1, o_1), (m_2, l_2, o_2))" in x for x in d.trust_base["definition"])


def test_an_update_that_forgets_to_rescale_the_accumulator_is_refused():
    from proofs.theorems.online_softmax import _stream_step, unnormalised_accumulator

    assert unnormalised_accumulator().verified

    def no_alpha_on_acc(m, l, acc, m_new, z, u):
        m_new, l_new, _ = _stream_step(m, l, acc, m_new, z, u)
        return m_new, l_new, acc + sp.exp(-m_new) * u  # bug: acc keeps the old max's scale

    d = unnormalised_accumulator(no_alpha_on_acc)
    assert not d.verified and [s.description for s in d.failed_steps] == [
        "block N + 1: α = e^{M − m′} turns e^{−M} into e^{−m′}"]


@pytest.mark.parametrize("claim", ["online-softmax-unnormalised", "logsumexp-merge"])
def test_the_other_online_softmax_claims_rest_on_rules_alone(claim):
    from proofs.claims import catalogued

    d = catalogued(claim).derive()
    assert d.verified, d.reasons
    assert d.computations == []
