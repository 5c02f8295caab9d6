import pytest
import sympy as sp

from proofs.theorems.masking import (BOTTOM_RIGHT, TOP_LEFT, causal_mask, causal_mask_bottom_right,
                                     causal_mask_top_left, last_visible_key, visibility_rule)

oo = sp.oo


def test_both_alignments_are_proved_for_any_sizes_without_computations():
    for theorem in (causal_mask_top_left, causal_mask_bottom_right):
        d = theorem()
        assert d.verified, d.reasons
        assert d.computations == []
        assert any("N_k - 1" in text for text in d.trust_base["definition"])  # a softmax over symbolic N_k keys


def test_alignments_differ_when_nq_differs_from_nk():
    assert causal_mask(2, 3, TOP_LEFT) == sp.Matrix([[0, -oo, -oo], [0, 0, -oo]])
    assert causal_mask(2, 3, BOTTOM_RIGHT) == sp.Matrix([[0, 0, -oo], [0, 0, 0]])
    assert causal_mask(3, 3, TOP_LEFT) == causal_mask(3, 3, BOTTOM_RIGHT)
    # More queries than keys, bottom-right: the first rows see nothing.
    assert causal_mask(3, 1, BOTTOM_RIGHT) == sp.Matrix([[-oo], [-oo], [0]])


@pytest.mark.parametrize("wrong", [lambda i, j, nq, nk: sp.Lt(j, i), lambda i, j, nq, nk: sp.Le(j, i + 1)],
                         ids=["j < i", "j <= i + 1"])
def test_off_by_one_rules_are_refused(wrong):
    assert not causal_mask_top_left(wrong).verified


def test_confusing_the_alignments_is_refused():
    assert not causal_mask_top_left(visibility_rule(BOTTOM_RIGHT)).verified
    assert not causal_mask_bottom_right(visibility_rule(TOP_LEFT)).verified


@pytest.mark.parametrize("align,theorem", [(TOP_LEFT, causal_mask_top_left), (BOTTOM_RIGHT, causal_mask_bottom_right)])
def test_a_rule_wrong_only_from_9_keys_on_is_refused(align, theorem):
    # Right for every N_q, N_k ≤ 8 (all the old proof enumerated); from N_k = 9 on it also hides key 8.
    right = visibility_rule(align)

    def wrong(i, j, n_q, n_k):
        return sp.And(right(i, j, n_q, n_k), sp.Or(n_k < 9, sp.Ne(j, 8)))

    assert all(bool(wrong(i, j, q, k)) == bool(right(i, j, q, k))
               for q in range(1, 9) for k in range(1, 9) for i in range(q) for j in range(k))
    assert bool(right(8, 8, 9, 9)) and not bool(wrong(8, 8, 9, 9))
    assert not theorem(wrong).verified


def test_bottom_right_is_the_end_of_the_key_sequence():
    assert [last_visible_key(i, 2, 5, BOTTOM_RIGHT) for i in range(2)] == [3, 4]
    # More queries than keys: the first queries see nothing (a fully masked row).
    assert [last_visible_key(i, 4, 2, BOTTOM_RIGHT) for i in range(4)] == [-1, -1, 0, 1]


@pytest.mark.parametrize("args,name", [((2, 3, "diagonal"), "align"), ((0, 3), "n_q"), ((2, 2.5), "n_k")])
def test_bad_mask_arguments(args, name):
    with pytest.raises(ValueError, match=name):
        causal_mask(*args)


def test_bad_query_index():
    with pytest.raises(ValueError, match="^i "):
        last_visible_key(2, 2, 3)
