"""State kept across calls and autograd plumbing (red team rt44h's escapes), each closed by a design that covers the
family: an earlier call of the same shapes in another dtype; every earlier output (and the first output and gradients
of the gradient sequences) re-checked bit for bit after the later calls; q, k, v written through ``.data`` (no version
counter moves) between two calls; every subset of q, k, v requiring grad with each input, frozen ones too, written in
place before the backward; the drawn gradients at ranks 3 and 5 with GQA. Each check rejects a bug of its family and
passes the correct references and SDPA's math backend."""
from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from kernels import mutants
from kernels.harness import edges
from kernels.harness import generate as gen
from kernels.harness import peers, verify_attention
from kernels.harness.features import offered
from kernels.harness.references import blocked_attention, full_attention, manual_backward_attention
from kernels.harness.subject import BadOutput, ratio, unchanged

CORRECT = (full_attention, peers.sdpa_math)
DTYPES = ("float32", "float16", "bfloat16")
SEEDS = (0, 1, 2)


def _regime(impl, name: str, dtype: str, seed: int = 0, backward: bool = True) -> gen.Problem:
    return gen.draw(seed, gen.REGIMES.index(name), dtype, offered(impl, backward=backward))


def _drawn(impl, dtype: str, seed: int, wanted, count: int, backward: bool = True) -> list[gen.Problem]:
    """The first ``count`` problems past the regimes for which ``wanted`` holds."""
    features, found = offered(impl, backward=backward), []
    for index in range(len(gen.REGIMES), len(gen.REGIMES) + 400):
        p = gen.draw(seed, index, dtype, features)
        if wanted(p):
            found.append(p)
            if len(found) == count:
                return found
    raise AssertionError(f"fewer than {count} such problems among 400 draws")


def _fails(impl, problem) -> str:
    o, refused = gen.check_problem(impl, problem)
    assert refused is None and gen.failed(o), (problem.describe(), o, refused)
    return o.detail


def _passes(impl, problem) -> float:
    o, refused = gen.check_problem(impl, problem)
    assert refused is None and not gen.failed(o), (getattr(impl, "__name__", impl), problem.describe(), o)
    return ratio(o)


# ------------------------------------------------------------------ an earlier call in another dtype

def test_each_dtype_follows_another_in_both_directions():
    assert {d: others[0] for d, others in gen.PRIOR_DTYPES.items()} == {
        "float64": "float32", "float32": "bfloat16", "bfloat16": "float16", "float16": "float64"}
    for dtype in DTYPES:
        p = _regime(peers.sdpa_math, "after-other-dtype", dtype)
        assert p.prior == "other dtype" and p.prior_dtype == gen.PRIOR_DTYPES[dtype][0] and p.causal, p
        assert f"after the same shapes in {p.prior_dtype}" in p.describe()


def test_a_workspace_in_the_first_calls_dtype_fails_float64_after_float32():
    p = _regime(mutants.workspace_dtype_of_first_call, "after-other-dtype", "float64")
    assert p.prior_dtype == "float32"
    _fails(mutants.workspace_dtype_of_first_call, p)
    for impl in CORRECT:
        _passes(impl, p)


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_causal_bias_cached_in_the_first_dtype_is_a_refusal_the_call_alone_does_not_get(dtype):
    mutants._CAUSAL_BIAS.clear()  # (its cache outlives a test: another test's calls of these lengths left theirs)
    p = _regime(mutants.causal_bias_cached_in_first_dtype, "after-other-dtype", dtype)
    assert "refused an input SDPA accepts" in _fails(mutants.causal_bias_cached_in_first_dtype, p)


@pytest.mark.parametrize("dtype", DTYPES)
def test_correct_designs_pass_after_a_call_in_another_dtype(dtype):
    for seed in SEEDS:
        for impl, backward in ((peers.sdpa_math, True), (full_attention, True), (blocked_attention, False)):
            problems = [_regime(impl, "after-other-dtype", dtype, seed, backward)] + _drawn(
                impl, dtype, seed, lambda p: p.prior == "other dtype", 3, backward)
            assert all(p.prior == "other dtype" and p.prior_dtype not in (None, dtype) for p in problems), problems
            for p in problems:
                _passes(impl, p)


def test_an_impl_that_refuses_a_dtype_is_no_failure_after_another():
    """The rule's other side: a kernel without float64 refuses it alone too (at twice the lengths), so refusing it
    after a float32 call is an honest refusal."""
    def no_float64(q, k, v, **kwargs):
        if q.dtype == torch.float64:
            raise TypeError("q: float64 is not supported")
        return full_attention(q, k, v, **kwargs)

    p = _regime(no_float64, "after-other-dtype", "float64")
    o, refused = gen.check_problem(no_float64, p)
    assert refused and not gen.failed(o), (o, refused)


# ------------------------------------------------------------------ earlier outputs re-checked

def test_the_static_output_buffer_changes_the_earlier_output():
    p = _regime(mutants.output_in_static_buffer, "after-other-calls", "float32")
    assert p.prior and p.context != "inference_mode", p
    assert "earlier call's output changed" in _fails(mutants.output_in_static_buffer, p)
    for impl in CORRECT:
        _passes(impl, p)


def test_unchanged_compares_bits_nan_included():
    x = torch.tensor([float("nan"), -0.0, 1.0])
    unchanged((x, x.clone()), "x")  # NaN equal to itself bit for bit
    with pytest.raises(BadOutput, match="x changed"):
        unchanged((x, torch.tensor([float("nan"), 0.0, 1.0])), "x")  # -0 became +0


_LAYER_BUFFERS: dict = {}


class _OutputInBuffer(torch.autograd.Function):
    """An output returned in a buffer kept per shape, on the autograd path too."""
    @staticmethod
    def forward(ctx, q, k, v):
        out = full_attention(q, k, v)
        buf = _LAYER_BUFFERS.setdefault((out.shape, out.dtype), torch.empty_like(out))
        ctx.save_for_backward(q, k, v)
        return buf.copy_(out)  # (the buffer itself: autograd refuses a backward through a view written since)

    @staticmethod
    def backward(ctx, dout):
        with torch.enable_grad():
            leaves = [x.detach().requires_grad_() for x in ctx.saved_tensors]
            return torch.autograd.grad(full_attention(*leaves), leaves, dout)


def test_the_two_layers_sequence_rechecks_the_first_layers_output():
    def layer_buffer(q, k, v, is_causal=False, scale=None, enable_gqa=False):
        if torch.is_grad_enabled() and not is_causal and scale is None and not enable_gqa:
            return _OutputInBuffer.apply(q, k, v)
        return full_attention(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)

    from kernels.harness.cases import Case
    from kernels.harness.subject import Subject, subset_gradients

    s = Subject(layer_buffer, Case("layer buffer", 1, 2, 2, 8, 8, 16, False), torch.float32, "cpu", 0)
    _, gold, plain = s.gradients
    kw = s.kwargs()
    tensors = [t.detach().clone().requires_grad_() for t in (s.q, s.k, s.v)]
    with pytest.raises(BadOutput, match="first layer's output changed"):
        subset_gradients(s, tensors, kw, gold, plain, s.gradient_sizes, "two-layers")


# ------------------------------------------------------------------ writes no version counter sees

def test_writes_through_data_move_no_version_counter():
    x = torch.randn(2, 3)
    was = x._version
    x.data.copy_(torch.randn(2, 3))
    x.numpy()[:] = 0.0
    assert x._version == was


def test_an_upcast_kv_cache_keyed_by_version_is_stale_after_a_write_through_data():
    report = verify_attention(mutants.kcache_keyed_by_version, invariants=["buffers-mutated-between-calls"])
    assert report.judged and len(report.failures) == len(report.dtypes), report
    for c in report.failures:
        assert "written through .data (versions unchanged)" in c.detail
        assert "written in place: " in c.detail and "sibling views: " in c.detail


# ------------------------------------------------------------------ inputs written before the backward

def test_frozen_kv_kept_on_ctx_by_reference_fails_input_inplace_before_backward():
    report = verify_attention(mutants.frozen_kv_on_ctx_by_reference, invariants=["input-inplace-before-backward"])
    assert report.judged and len(report.failures) == len(report.dtypes), report
    assert all("grad q, k written" in c.detail for c in report.failures)


def test_correct_designs_pass_the_written_input_legs():
    """SDPA math raises (its version counter) or gives the forward-time gradients, for each leg; so do the
    references (their own version counters, or copies saved)."""
    for impl in CORRECT + (manual_backward_attention,):
        report = verify_attention(impl, invariants=["input-inplace-before-backward"],
                                  dtypes=[torch.float32, torch.float16, torch.bfloat16])
        assert report.judged and not report.failures, report
        for c in report.checks:
            assert c.detail.count("written") >= 22, c.detail  # every leg ran: 7 subsets × 3 written, all three


# ------------------------------------------------------------------ gradients at ranks 3 and 5

def test_gradient_problems_draw_ranks_three_and_five():
    p = _regime(peers.sdpa_math, "rank-backward", "float32")
    assert p.relation == gen.GRADIENTS and p.rank == 3 and p.q_heads != p.kv_heads and p.enable_gqa, p
    drawn = _drawn(peers.sdpa_math, "float32", 0, lambda p: p.relation == gen.GRADIENTS, 12)
    assert {p.rank for p in drawn} == {3, 4, 5}


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_gqa_backward_reshaped_through_rank_four_fails_at_rank_three(dtype):
    p = _regime(mutants.rank3_gqa_backward_reshape, "rank-backward", dtype)
    assert "refused an input SDPA accepts" in _fails(mutants.rank3_gqa_backward_reshape, p)


@pytest.mark.parametrize("dtype", DTYPES)
def test_correct_designs_pass_gradients_at_ranks_three_and_five(dtype):
    for seed in SEEDS:
        for impl in CORRECT:
            problems = [_regime(impl, "rank-backward", dtype, seed)] + _drawn(
                impl, dtype, seed, lambda p: p.relation == gen.GRADIENTS and p.rank != 4, 4)
            for p in problems:
                if p.causal and p.mask:  # gradient problems pair them on purpose: SDPA refuses (no verdict), others join
                    o, refused = gen.check_problem(impl, p)
                    assert not gen.failed(o), (p.describe(), o)
                    continue
                _passes(impl, p)


def test_the_mutants_are_named_by_their_checks_alone():
    """Each new mutant passes the check as it was before this family's designs: the same problem without the new
    axis (no earlier call in another dtype; rank 4), and the unchanged legs of the fixed checks."""
    p = _regime(mutants.causal_bias_cached_in_first_dtype, "after-other-dtype", "float32")
    mutants._CAUSAL_BIAS.clear()  # (earlier tests of this process left biases of these lengths in other dtypes)
    _passes(mutants.causal_bias_cached_in_first_dtype, replace(p, prior=None, prior_dtype=None))
    p = _regime(mutants.rank3_gqa_backward_reshape, "rank-backward", "float32")
    _passes(mutants.rank3_gqa_backward_reshape, replace(p, rank=4))
    kcache = verify_attention(mutants.kcache_keyed_by_version, invariants=["buffers-mutated-between-calls"],
                              dtypes=[torch.float32]).failures[0].detail
    assert "written in place: " in kcache and all(
        float(part.split(": ")[1].split("/")[0]) <= float(part.split("/")[1])
        for part in kcache.split("; ")[:2]), kcache
    edges_legs = verify_attention(mutants.frozen_kv_on_ctx_by_reference, invariants=["input-inplace-before-backward"],
                                  dtypes=[torch.float32]).failures[0].detail
    assert "grad qkv, qkv written: refused" in edges_legs  # every input requiring grad: the old leg refused honestly
