"""The families red team rt42h's escapes belong to, each closed by a design that covers the family: process state
found rather than listed, inference tensors, argument forms drawn as an axis, batched and padded long decodes,
per-head rank-3 masks, retain_graph with dropout, concurrent callers. Each check rejects a bug of its family and
passes the correct references."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from kernels import mutants
from kernels.harness import edges
from kernels.harness import generate as gen
from kernels.harness import verify_attention
from kernels.harness.features import takes_positional
from kernels.harness.invariants import ATTN_MASK, BACKWARD, CAUSAL, DROPOUT, GQA
from kernels.harness.references import full_attention

ALL = frozenset({ATTN_MASK, BACKWARD, CAUSAL, DROPOUT, GQA})


def _failed(impl, invariant, dtypes=(torch.float32,), **options) -> set[str]:
    report = verify_attention(impl, invariants=[invariant], dtypes=list(dtypes), **options)
    assert report.judged, f"{invariant} never ran"
    return {c.detail for c in report.failures}


# ------------------------------------------------------------------ process state, found rather than listed

def test_the_sweep_finds_switches_nobody_listed():
    state = edges._global_state()
    # neither is in the hand-written list: found by the sweep of torch's readings and torch.backends' modules
    assert "torch.is_warn_always_enabled()" in state
    assert "torch.backends.cudnn.fp32_precision" in state
    assert "saved-tensor hooks" in state and "torch function modes" in state and "autocast on cpu" in state


def _warn_always(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    torch.set_warn_always(True)  # a switch no list named: left on for the process
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def test_a_switch_outside_every_list_is_seen_and_put_back():
    was = torch.is_warn_always_enabled()
    try:
        failed = _failed(_warn_always, "global-state-unchanged")
    finally:
        torch.set_warn_always(was)
    assert any("torch.is_warn_always_enabled()" in d for d in failed), failed
    assert not _failed(full_attention, "global-state-unchanged")


def test_saved_tensor_hooks_left_pushed_by_a_refused_call_are_seen_and_popped():
    failed = _failed(mutants.saved_tensor_hooks_leaked_on_refusal, "global-state-unchanged")
    assert any("saved-tensor hooks" in d for d in failed), failed
    assert torch._C._autograd._top_saved_tensors_default_hooks(False) is None  # put back for the checks after


def test_an_inference_tensor_returned_outside_inference_mode_is_a_bad_output():
    failed = _failed(mutants.no_grad_output_from_inference_mode, "output-dtype-shape")
    assert any("inference tensor" in d for d in failed), failed
    assert not _failed(full_attention, "output-dtype-shape")


# ------------------------------------------------------------------ argument forms

def _recorder(calls):
    def impl(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        calls.append((attn_mask, dropout_p, is_causal, scale))
        return full_attention(q, k, v, attn_mask, float(dropout_p), is_causal,
                              None if scale is None else float(scale), enable_gqa)
    return impl


def test_argument_forms_reach_the_impl_as_drawn():
    calls = []
    q = torch.randn(1, 1, 3, 4)
    for form in gen.ARGUMENT_FORMS:
        gen._in_form(_recorder(calls), form)(q, q, q, dropout_p=0.0, is_causal=True, scale=0.5)
    kinds = [(type(p).__name__, type(s).__name__) for _, p, _, s in calls]
    assert kinds == [("float", "float"), ("float", "float"), ("float32", "float64"), ("Tensor", "Tensor")]
    assert all(c is True for _, _, c, _ in calls)


def test_a_keyword_only_impl_is_called_by_keyword():
    def keyword_only(q, k, v, *, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)

    assert not takes_positional(keyword_only) and takes_positional(full_attention)
    assert gen._in_form(keyword_only, "positional") is keyword_only


def _problem(**fields) -> gen.Problem:
    base = dict(batch=1, q_heads=2, kv_heads=2, n_q=9, n_k=9, head_dim=8, value_dim=8, causal=True, dtype="float32")
    return gen.Problem(**{**base, **fields})


def test_positional_calls_catch_a_wrapper_in_flash_attn_order():
    p = _problem(arguments="positional")
    assert gen.failed(gen.check_problem(mutants.flash_attn_argument_order, p)[0])
    assert not gen.failed(gen.check_problem(full_attention, p)[0])
    assert not gen.failed(gen.check_problem(mutants.flash_attn_argument_order, replace(p, arguments="keywords"))[0])


@pytest.mark.parametrize("form", ["numpy scalars", "tensor scalars"])
def test_dropout_p_of_another_type_is_applied(form):
    p = _problem(relation=gen.DROPOUT_LAW, causal=False, n_k=16, value_dim=16, dropout_p=0.5, grads="",
                 arguments=form)
    assert gen.failed(gen.check_problem(mutants.dropout_only_for_python_float, p)[0])
    assert not gen.failed(gen.check_problem(full_attention, p)[0])


# ------------------------------------------------------------------ regimes

def _first(regime: str, dtype: str = "float32") -> gen.Problem:
    return gen.draw(0, gen.REGIMES.index(regime), dtype, ALL)


def test_batched_and_padded_long_decodes_are_drawn_first():
    batched, padded = _first("long-decode-batched"), _first("long-decode-padded")
    for p in (batched, padded):
        assert p.batch >= 2 and p.n_q == 1 and p.n_k > 2 ** 14 and not p.causal
    assert batched.mask is None
    assert padded.mask == "(B, 1, 1, Nk)" and padded.mask_padding


def test_padding_gives_one_entry_no_key_and_the_others_a_prefix():
    from kernels.harness.subject import Subject

    p = _problem(batch=3, n_q=1, n_k=40, causal=False, mask="(B, 1, 1, Nk)", mask_padding=True)
    s = Subject(full_attention, p.case(), torch.float32, "cpu", p.seed)
    m = gen._mask(s, p)  # (B, 1, 1, Nk)
    seen = m.reshape(3, 40).sum(-1)
    assert (seen == 0).sum() >= 1
    for row, n in zip(m.reshape(3, 40), seen):
        assert row[:n].all() and not row[n:].any()


@pytest.mark.parametrize("mutant", ["split_kv_workspace_without_batch", "decode_mask_of_entry_zero",
                                    "decode_merge_nan_for_empty_row"])
def test_batched_decodes_catch_per_batch_bugs(mutant):
    p = _first("long-decode-padded" if "mask" in mutant or "nan" in mutant else "long-decode-batched")
    assert gen.failed(gen.check_problem(getattr(mutants, mutant), p)[0])
    assert not gen.failed(gen.check_problem(full_attention, p)[0])


def test_rank3_inputs_take_a_per_head_mask():
    p = _first("rank-head-mask")
    assert p.rank == 3 and p.mask == "(B, Hq, Nq, Nk)" and p.batch * p.q_heads >= 2
    assert gen.failed(gen.check_problem(mutants.rank3_mask_of_head_zero, p)[0])
    assert not gen.failed(gen.check_problem(full_attention, p)[0])


def test_retain_graph_second_backward_keeps_the_keep_mask():
    p = _problem(relation=gen.DROPOUT_LAW, causal=False, n_k=16, value_dim=16, dropout_p=0.5, grads="qkv",
                 sequence="retain-graph")
    assert gen.failed(gen.check_problem(mutants.keep_mask_redrawn_on_second_backward, p)[0])
    assert not gen.failed(gen.check_problem(mutants.keep_mask_redrawn_on_second_backward, replace(p, sequence="single"))[0])
    assert not gen.failed(gen.check_problem(full_attention, p)[0])


# ------------------------------------------------------------------ concurrent callers

def test_concurrent_callers_catch_a_shared_workspace():
    failed = _failed(mutants.shared_score_scratch, "concurrent-calls")
    assert failed and all("past the bound" in d for d in failed)
    assert not _failed(full_attention, "concurrent-calls")
