"""The generator draws the axes' combinations and call sequences a default run needs (scale 0 in the
backward, query masks, learned masks in every form, a mask with is_causal in the backward, one KV head
without enable_gqa, dropout over one or two keys, two layers and retain_graph, B·H past 65535, Dv past
256), and each combination, judged on one small problem, refuses its mutant while the reference the
mutant is cut from passes the same problem."""
from __future__ import annotations

import pytest
import torch

from kernels import mutants
from kernels.harness import generate as gen
from kernels.harness.features import offered
from kernels.harness.masks import QUERY_MASKS
from kernels.harness.references import full_attention
from kernels.harness.subject import SEQUENCES

FEATURES = offered(full_attention)
DTYPES = ("float32", "float16", "bfloat16")
# the problems a default run draws whatever the machine's speed: its regimes and one round of the relations,
# then what the seconds allow; these properties must hold within the first ROUNDS problems of each relation
ROUNDS = 16


def _drawn(dtype: str, relation: str) -> list:
    start = len(gen.REGIMES)
    problems = [gen.draw(0, i, dtype, FEATURES) for i in range(start, start + ROUNDS * len(gen.RELATIONS))]
    return [p for p in problems if p.relation == relation]


@pytest.mark.parametrize("dtype", DTYPES)
def test_each_relation_meets_every_scale_including_zero(dtype):
    assert 0.0 in gen.SCALES
    for relation in gen.RELATIONS:
        seen = {p.scale for p in _drawn(dtype, relation)}
        assert 0.0 in seen, (relation, seen)
        if relation == gen.GRADIENTS:  # (a regime drawn at random may set its own scale in the others)
            assert set(gen.SCALES) <= seen, seen


@pytest.mark.parametrize("dtype", DTYPES)
def test_gradient_problems_combine_masks_with_causal_mask_gradients_and_call_sequences(dtype):
    grads = _drawn(dtype, gen.GRADIENTS)
    assert any(p.causal and p.mask is not None for p in grads)
    assert any(p.mask_grad for p in grads)
    assert all(not p.mask_grad or p.mask_kind == "additive" and p.mask_storage != "expanded" for p in grads)
    assert {p.sequence for p in grads} == set(SEQUENCES)


@pytest.mark.parametrize("dtype", DTYPES)
def test_query_masks_one_kv_head_without_gqa_and_tiny_dropout_are_drawn(dtype):
    every = [p for rel in gen.RELATIONS for p in _drawn(dtype, rel)]
    # (29 broadcast patterns since rt44h, spread over the dtypes: each one in every default run, test_rt44h_masks;
    # some query mask in every dtype)
    assert {p.mask for p in every} & set(QUERY_MASKS)
    assert any(not p.enable_gqa and p.kv_heads == 1 < p.q_heads for p in every)
    assert all(p.enable_gqa or p.kv_heads == 1 < p.q_heads for p in every)
    assert {1, 2} <= {p.n_k for p in _drawn(dtype, gen.DROPOUT_LAW)}


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_extreme_shape_regimes_are_drawn_first(dtype):
    first = {name: gen.draw(0, i, dtype, FEATURES) for i, name in enumerate(gen.REGIMES)}
    grid = first["huge-grid"]
    assert grid.batch * grid.q_heads > gen.GRID_LIMIT and max(grid.n_q, grid.n_k, grid.head_dim) <= 4
    assert grid.batch * grid.q_heads * (grid.n_q * grid.head_dim + grid.n_k * (grid.head_dim + grid.value_dim)) < 2 ** 20
    assert 257 <= first["wide-value"].value_dim <= 320


def _p(relation=gen.AGREEMENT, **fields) -> gen.Problem:
    base = dict(batch=2, q_heads=2, kv_heads=2, n_q=5, n_k=7, head_dim=8, value_dim=8, causal=False,
                dtype="float32", relation=relation, seed=7)
    return gen.Problem(**{**base, **fields})


CATCHES = [
    (mutants.backward_zero_scale_as_default, _p(gen.GRADIENTS, scale=0.0)),
    (mutants.one_kv_head_refused_without_gqa, _p(q_heads=4, kv_heads=1, enable_gqa=False)),
    (mutants.one_key_returns_v_under_dropout, _p(gen.DROPOUT_LAW, n_q=16, n_k=1, value_dim=1, dropout_p=0.5)),
    (mutants.query_mask_read_along_rows, _p(mask="(B, 1, Nq, 1)", mask_kind="additive")),
    (mutants.query_mask_read_along_rows, _p(mask="(Nq, 1)", mask_kind="bool", n_q=9)),
    (mutants.mask_gradient_of_head_zero, _p(gen.GRADIENTS, q_heads=3, kv_heads=3, mask="(B, 1, Nq, Nk)",
                                            mask_kind="additive", mask_grad=True)),
    (mutants.backward_drops_causal_with_mask, _p(gen.GRADIENTS, n_q=6, n_k=6, causal=True, mask="(B, Hq, Nq, Nk)")),
    (mutants.probabilities_in_shape_workspace, _p(gen.GRADIENTS, sequence="two-layers")),
    (mutants.saved_probabilities_rescaled_in_place, _p(gen.GRADIENTS, sequence="retain-graph")),
    (mutants.inputs_made_contiguous_in_place, _p(layout="transposed")),
    (mutants.grad_path_output_in_float32, _p(gen.GRADIENTS, dtype="float16")),
    (mutants.grid_past_65535_dropped, _p(batch=1, q_heads=65537, kv_heads=65537, n_q=1, n_k=2, head_dim=2,
                                         value_dim=2)),
    (mutants.value_dim_past_256_dropped, _p(value_dim=300)),
]


@pytest.mark.parametrize("mutant, problem", CATCHES, ids=[f"{m.__name__}-{i}" for i, (m, _) in enumerate(CATCHES)])
def test_the_combination_refuses_its_mutant_and_passes_the_reference(mutant, problem):
    outcome, refused = gen.check_problem(mutant, problem)
    assert refused is None and gen.failed(outcome), (problem.describe(), outcome)
    outcome, refused = gen.check_problem(full_attention, problem)
    assert refused is None and not gen.failed(outcome), (problem.describe(), outcome)


def test_a_refused_learned_mask_keeps_the_gradients_judged():
    """A mask requiring grad may be refused (contract item mask-gradient): the q, k, v gradients of the
    same problem are still judged, and the problem is not a refusal."""
    def no_mask_gradient(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        if attn_mask is not None and attn_mask.requires_grad:
            raise ValueError("attn_mask must not require grad")
        return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)

    problem = _p(gen.GRADIENTS, mask="(B, 1, Nq, Nk)", mask_kind="additive", mask_grad=True)
    outcome, refused = gen.check_problem(no_mask_gradient, problem)
    assert refused is None and not gen.failed(outcome) and "mask gradient refused" in outcome.detail
    assert torch.isfinite(torch.tensor(outcome.discrepancy))
