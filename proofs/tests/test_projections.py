import pytest
import sympy as sp

from proofs.theorems.projections import (B, D_K, D_MODEL, T, fused_qkv_projection, parameter_count,
                                         projected_shape, projection_parameter_count, projection_shapes,
                                         score_asymmetry, split_blocks)


def test_shape_contract_is_proved():
    d = projection_shapes()
    assert d.verified
    assert projected_shape((B, T, D_MODEL), (D_MODEL, D_K)) == (B, T, D_K)
    assert projected_shape((2, 5, 768), (768, 64)) == (2, 5, 64)


@pytest.mark.parametrize("x,w,name", [((2, 3, 4), (5, 2), "w_shape"), ((2, 3, 4), (4,), "w_shape"),
                                      ((), (4, 2), "x_shape"), ((2, 0, 4), (4, 2), "x_shape")])
def test_bad_shapes_are_value_errors(x, w, name):
    with pytest.raises(ValueError, match=name):
        projected_shape(x, w)


def test_fused_qkv_is_proved_and_interleaved_slicing_is_refused():
    assert fused_qkv_projection().verified

    def interleaved(Y, d_k, d_v):  # the (T, d, 3) reshape convention applied to a block layout
        return Y[:, 0::3], Y[:, 1::3], Y[:, 2::3]

    def swapped(Y, d_k, d_v):
        q, k, v = split_blocks(Y, d_k, d_v)
        return k, q, v

    for wrong in (interleaved, swapped):
        d = fused_qkv_projection(wrong)
        assert not d.verified, wrong.__name__


def test_parameter_counts_and_gpt2():
    d = projection_parameter_count()
    assert d.verified
    assert d.result.gpt2_qkv == 1_769_472
    assert parameter_count(768, 768) == 589_824
    assert parameter_count(768, 768, bias=True, matrices=3) == 1_771_776
    assert sp.expand(d.result.qkv - 3 * D_MODEL * D_K) == 0


@pytest.mark.parametrize("kw,name", [({"bias": 1}, "bias"), ({"matrices": 0}, "matrices"),
                                     ({"matrices": True}, "matrices")])
def test_bad_parameter_count_arguments(kw, name):
    with pytest.raises(ValueError, match=name):
        parameter_count(4, 4, **kw)


def test_bad_d_model_is_a_value_error():
    with pytest.raises(ValueError, match="d_model"):
        parameter_count(-1, 4)


def test_score_asymmetry_is_proved():
    d = score_asymmetry()
    assert d.verified, [(s.description, s.detail) for s in d.failed_steps]
    assert d.result.seed_scores == sp.Matrix([[3, 2], [6, 4]])


def test_general_weights_do_not_give_symmetric_scores():
    from proofs.engine import identity

    S = score_asymmetry().result.scores
    ok, detail = identity(S, S.T)
    assert not ok and "refuted" in detail
