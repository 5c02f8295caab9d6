import pytest
import sympy as sp

from proofs.theorems.masking import (BOTTOM_RIGHT, TOP_LEFT, causal_mask, causal_mask_bottom_right,
                                     causal_mask_top_left, last_visible_key)

oo = sp.oo


def test_both_alignments_are_proved():
    for theorem in (causal_mask_top_left, causal_mask_bottom_right):
        d = theorem()
        assert d.verified, [(s.description, s.detail) for s in d.failed_steps]


def test_alignments_differ_when_nq_differs_from_nk():
    assert causal_mask(2, 3, TOP_LEFT) == sp.Matrix([[0, -oo, -oo], [0, 0, -oo]])
    assert causal_mask(2, 3, BOTTOM_RIGHT) == sp.Matrix([[0, 0, -oo], [0, 0, 0]])
    assert causal_mask(3, 3, TOP_LEFT) == causal_mask(3, 3, BOTTOM_RIGHT)


def _shifted(offset):
    def mask(n_q, n_k):
        return sp.Matrix([[0 if j <= i + offset else -oo for j in range(n_k)] for i in range(n_q)])
    return mask


@pytest.mark.parametrize("wrong", [_shifted(-1), _shifted(1)], ids=["j < i", "j <= i + 1"])
def test_off_by_one_masks_are_refused(wrong):
    assert not causal_mask_top_left(wrong).verified


def test_confusing_the_alignments_is_refused():
    assert not causal_mask_top_left(lambda q, k: causal_mask(q, k, BOTTOM_RIGHT)).verified
    assert not causal_mask_bottom_right(lambda q, k: causal_mask(q, k, TOP_LEFT)).verified


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
