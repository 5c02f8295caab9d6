"""shape-contract and arguments-released: each rejects the mutants it was written for, in every dtype, and passes
SDPA (its math backend and the default dispatch) and the references the mutants are cut from."""
from __future__ import annotations

import pytest
import torch

from kernels import mutants
from kernels.harness import peers, references, verify_attention
from kernels.harness.cases import CONTRACT_CASES
from kernels.harness.edges import arguments_released, shape_contract, shape_space
from kernels.harness.subject import Subject

DTYPES = (torch.float32, torch.float16, torch.bfloat16)  # (verify_attention judges float64 inputs elsewhere)
CORRECT = {"sdpa_math": peers.sdpa_math, "sdpa": peers.sdpa, "full_attention": references.full_attention,
           "blocked_attention": references.blocked_attention}
CAUGHT = {"shape-contract": (mutants.kv_batch_larger_than_q_accepted, mutants.value_heads_read_through_key_map),
          "arguments-released": (mutants.output_memo_by_reference, mutants.mask_cache_unbounded)}


def _subject(impl, dtype=torch.float32, seed=0) -> Subject:
    return Subject(impl, CONTRACT_CASES[0], dtype, "cpu", seed)


@pytest.mark.parametrize("invariant, mutant", [(i, m) for i, ms in CAUGHT.items() for m in ms],
                         ids=[m.__name__ for ms in CAUGHT.values() for m in ms])
def test_the_mutant_is_rejected_in_every_dtype(invariant, mutant):
    report = verify_attention(mutant, dtypes=DTYPES, invariants=[invariant], first_failure=True)
    assert report.judged
    for dtype in report.dtypes:
        assert invariant in {c.invariant for c in report.failures if c.dtype == dtype}, (mutant.__name__, dtype)


@pytest.mark.parametrize("name", list(CORRECT))
@pytest.mark.parametrize("invariant", list(CAUGHT))
def test_correct_designs_pass(invariant, name):
    for seed in (0, 1):
        report = verify_attention(CORRECT[name], dtypes=DTYPES, invariants=[invariant], seed=seed)
        assert report.judged and report.passed, "\n".join(report.failure_lines())
    for check in (shape_contract, arguments_released):  # float64 inputs: SDPA takes them, so the check must too
        o = check(_subject(CORRECT[name], torch.float64))
        assert o.discrepancy <= o.bound, o.detail


def test_sdpa_is_asked_over_the_whole_space():
    """The contract case's space: SDPA math refuses 59 shape sets and answers 37 (measured, torch 2.13); itself
    answers each of those 37 within the bound."""
    assert len(shape_space(_subject(peers.sdpa_math))) == 96
    detail = shape_contract(_subject(peers.sdpa_math)).detail
    assert "59 SDPA refuses (59 refused), 37 it answers (0 refused, 37 judged)" in detail, detail


def test_the_verdict_names_every_accepted_shape_sdpa_refuses():
    detail = shape_contract(_subject(mutants.kv_batch_larger_than_q_accepted)).detail
    for base in ("GQA enable_gqa", "MHA"):
        for how in ("+1 (2 → 3)", "×2 (2 → 4)"):
            assert f"{base}: k and v batch {how}" in detail, detail


def test_the_verdict_names_wrong_answers_to_shapes_sdpa_accepts():
    detail = shape_contract(_subject(mutants.value_heads_read_through_key_map)).detail
    assert "past the bound: GQA enable_gqa: k heads 1 (2 → 1)" in detail and "v heads ×2 (2 → 4)" in detail, detail


def test_the_survivors_are_named():
    detail = arguments_released(_subject(mutants.mask_cache_unbounded)).detail
    assert "no_grad, bool mask: attn_mask" in detail and "bool mask: attn_mask," not in detail, detail
    assert "additive" not in detail.split("kept alive")[1], detail
    detail = arguments_released(_subject(mutants.output_memo_by_reference)).detail
    assert "no_grad, bool mask: q, k, v, attn_mask, output" in detail, detail


def _causal_mask_cached(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """A derived thing cached (a boolean mask built from the shape alone): no argument kept, must pass."""
    if attn_mask is None:
        attn_mask = _CACHE.setdefault((q.shape[-2], k.shape[-2]), torch.ones(q.shape[-2], k.shape[-2],
                                                                              dtype=torch.bool))
    return references.full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


_CACHE: dict = {}


def test_a_cache_of_what_the_impl_builds_itself_passes():
    o = arguments_released(_subject(_causal_mask_cached))
    assert o.discrepancy == 0.0, o.detail


def _garbage_cycle(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """Leaves the arguments in a reference cycle (garbage, not kept): reference counting cannot free them, the
    one gc.collect() does, so it must pass."""
    cycle = [q, k, v, attn_mask]
    cycle.append(cycle)
    return references.full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def test_arguments_left_in_garbage_cycles_are_collected_and_pass():
    o = arguments_released(_subject(_garbage_cycle))
    assert o.discrepancy == 0.0, o.detail


@pytest.mark.parametrize("name", ["manual-backward-reference", "full-signature-reference", "plain-reference",
                                  "split-kv-decode", "split-k-lse", "blocked-reference", "float64-reference"])
def test_the_designs_take_rank_5_inputs_with_an_empty_axis(name):
    """The survey's seed 3 (2026-12-06): the references flattened rank-5 inputs with reshape(-1, ...), ambiguous
    for a tensor of no elements, so rank-5 inputs with no keys (which SDPA accepts) raised. Its shrunk problem must
    pass, and each design's output must be SDPA's on both empty sequence axes."""
    from kernels.harness.generate import Problem, check_problem

    impl, _ = peers.PEERS[name]
    problem = Problem(batch=1, q_heads=1, kv_heads=1, n_q=1, n_k=0, head_dim=1, value_dim=1, causal=False,
                      dtype="float32", layout="contiguous", mask=None, mask_values="random", mask_kind="additive",
                      dropout_p=0.0, grads="qkv", scale=None, relation="generated-gradients", seed=785401635,
                      magnitude=False, late_values=False, mask_storage="contiguous", mask_dtype=None,
                      mask_nonfinite=None, mask_far=None, rank=5, mask_grad=False, sequence="single", enable_gqa=False,
                      kv_broadcast=False, input_nan=None, input_value="NaN", context="no_grad", prior=None,
                      prior_dtype=None, arguments="keywords", mask_padding=False, underflow=False,
                      grad_context="enable_grad", dout_value=None, path=None, mask_near=None, threads=1)
    if name in ("manual-backward-reference", "full-signature-reference", "float64-reference"):
        outcome = check_problem(impl, problem)[0]  # was: "refused an input SDPA accepts", inf/0
        assert outcome.discrepancy <= outcome.bound, outcome.detail
    for n_q, n_k in ((4, 0), (0, 3), (0, 0)):
        q, k, v = torch.randn(1, 2, 2, n_q, 8), torch.randn(1, 2, 2, n_k, 8), torch.randn(1, 2, 2, n_k, 8)
        expected = torch.nn.functional.scaled_dot_product_attention(q, k, v)  # (1, 2, 2, Nq, 8)
        torch.testing.assert_close(impl(q, k, v), expected, rtol=0, atol=0)
