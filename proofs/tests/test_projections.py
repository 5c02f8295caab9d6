import pytest
import sympy as sp

from proofs.theorems.projections import (B, D_K, D_MODEL, T, block_column, fused_qkv_projection, parameter_count,
                                         projected_shape, projection_parameter_count, projection_shapes,
                                         score_asymmetry, split_blocks)


def test_shape_contract_is_proved():
    d = projection_shapes()
    assert d.verified, d.reasons
    assert d.computations == []
    assert projected_shape((B, T, D_MODEL), (D_MODEL, D_K)) == (B, T, D_K)
    assert projected_shape((2, 5, 768), (768, 64)) == (2, 5, 64)


@pytest.mark.parametrize("x,w,name", [((2, 3, 4), (5, 2), "w_shape"), ((2, 3, 4), (4,), "w_shape"),
                                      ((), (4, 2), "x_shape"), ((2, 0, 4), (4, 2), "x_shape")])
def test_bad_shapes_are_value_errors(x, w, name):
    with pytest.raises(ValueError, match=name):
        projected_shape(x, w)


def test_fused_qkv_is_proved_and_interleaved_slicing_is_refused():
    d = fused_qkv_projection()
    assert d.verified, d.reasons
    assert d.computations == []

    def interleaved(c, block, d_k, d_v):  # the (T, d, 3) reshape convention applied to a block layout
        return 3 * c + block

    def swapped(c, block, d_k, d_v):
        return block_column(c, (1, 0, 2)[block], d_k, d_v)

    for wrong in (interleaved, swapped):
        assert not fused_qkv_projection(wrong).verified, wrong.__name__


def test_a_split_wrong_only_off_the_old_tested_shapes_is_refused():
    # The old proof built (T, d_model, d_k, d_v) = (2, 3, 2, 2), (1, 2, 1, 3), (3, 2, 3, 1): d_k ≤ 3. This split
    # reads V one column late from d_k = 4 on.
    def late_v(c, block, d_k, d_v):
        return block_column(c, block, d_k, d_v) + (sp.Piecewise((0, d_k <= 3), (1, True)) if block == 2 else 0)

    for d_k, d_v in ((2, 2), (1, 3), (3, 1)):
        assert all(late_v(c, b, d_k, d_v) == block_column(c, b, d_k, d_v) for b in range(3) for c in range(3))
    d = fused_qkv_projection(late_v)
    assert not d.verified
    assert {s.description.split("(")[0] for s in d.failed_steps} == {"V̂", "V̂_b"}


def test_split_blocks_slices_the_stated_layout():
    Y = sp.Matrix(2, 7, lambda i, j: 10 * i + j)
    q, k, v = split_blocks(Y, 2, 3)
    assert q == Y[:, 0:2] and k == Y[:, 2:4] and v == Y[:, 4:7]


def test_parameter_counts_and_gpt2():
    d = projection_parameter_count()
    assert d.verified, d.reasons
    assert d.computations == []
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
    assert d.verified, d.reasons
    assert d.computations == []
    assert d.result.seed_scores == sp.Matrix([[3, 2], [6, 4]])


def test_a_wrong_transpose_rule_is_refused():
    # (S − Sᵀ) = X(M + Mᵀ)Xᵀ: the sign slip a symmetric-looking formula hides.
    import sympy

    from proofs.claims import claim
    from proofs.checker import conjuncts
    from proofs.tests.perturb import stated_as
    from proofs.theorems.projections import TOKEN_P, TOKEN_Q, score_matrices

    X, M = score_matrices()
    S = X * M * X.T
    statement = claim("score-asymmetry").statement
    gap = next(c for c in conjuncts(statement) if c.has(X))
    wrong = statement.xreplace({gap: sympy.Eq(gap.lhs, (X * (M + M.T) * X.T)[TOKEN_P, TOKEN_Q], evaluate=False)})
    assert wrong != statement and S.shape == (X.rows, X.rows)
    with stated_as("score-asymmetry", wrong):
        assert not score_asymmetry().verified


def test_general_weights_do_not_give_symmetric_scores():
    from proofs.engine import identity

    n = 2
    X, W_Q, W_K = (sp.Matrix(n, n, lambda i, j, s=s: sp.Symbol(f"{s}_{i}{j}", real=True)) for s in ("x", "q", "k"))
    from proofs.theorems.projections import scores

    S = scores(X, W_Q, W_K)
    ok, detail = identity(S, S.T)
    assert not ok and "refuted" in detail
