"""Red team rt50's escaped families, each answered by a design (the mutants each design alone catches are in
kernels/mutants.py, judged by test_mutants.py): the caller (worker thread, default dtype, a machine's CPU count), a
fresh process (hash seed, CPU capability), one keep mask for every output channel, the same seed's mask under
every grad mode, sizes one step past the drawn ones, concurrent half-precision callers."""
from __future__ import annotations

import os
import threading

import pytest
import torch
import torch.nn.functional as F

from kernels import mutants
from kernels.harness import callers, paths, processes, verify_attention
from kernels.harness import dropout as drop
from kernels.harness.features import offered
from kernels.harness.subject import NotApplicable

SDPA = offered(F.scaled_dot_product_attention)
DTYPES = ("float32", "float16", "bfloat16")


def test_each_caller_and_thread_count_meets_the_paths_rows_plain_and_causal():
    from kernels.harness import generate as gen

    # (the forward rows: the gradient rows meet the training step's callers, test_rt51_families)
    rows = [p for p in paths.threaded(0, "float32", DTYPES, SDPA) if p.relation == gen.AGREEMENT]
    for causal in (False, True):
        assert {p.caller for p in rows if p.causal == causal} == set(callers.CALLERS)
    assert {p.threads for p in rows} == set(paths.PATH_THREAD_COUNTS)
    # a causal row past half precision's exact positions under a half default dtype (positions built in it round)
    assert any(p.causal and p.caller in ("default float16", "default bfloat16") and p.n_q > 2048 for p in rows)
    assert any(p.caller == callers.WORKER for p in rows)


def test_rows_one_step_past_rt50s_sizes():
    rows = [p for d in DTYPES for p in paths.problems(0, d, DTYPES, SDPA)]
    assert any(p.causal and p.n_q > 2 ** 16 and p.n_k >= 2 for p in rows)  # (uint16 positions wrap)
    assert any(p.kv_heads == 1 and p.q_heads >= 128 and p.n_q <= 8 for p in rows)  # (MQA as MLA decodes)


def test_called_by_names_the_argument_and_restores_the_default_dtype():
    with pytest.raises(ValueError, match="caller"):
        callers.called_by(F.scaled_dot_product_attention, "gpu thread")
    seen = callers.called_by(lambda: torch.get_default_dtype(), "default bfloat16")()
    assert seen == torch.bfloat16 and torch.get_default_dtype() == torch.float32
    assert callers.called_by(lambda: threading.current_thread(), callers.WORKER)() is not threading.current_thread()


def test_on_worker_carries_grad_mode_and_raises_the_callers_exception():
    with torch.no_grad():
        assert callers.on_worker(torch.is_grad_enabled) is False
    assert callers.on_worker(torch.is_grad_enabled) is True
    with pytest.raises(KeyError):
        callers.on_worker(lambda: {}["missing"])


def test_machine_of_presents_the_cpu_count_and_puts_it_back():
    before = os.cpu_count()
    with callers.machine_of(32):
        assert os.cpu_count() == 32 and len(os.sched_getaffinity(0)) == 32
    assert os.cpu_count() == before


def test_same_keep_mask_fails_on_one_differing_weight_only_where_counted():
    a = torch.tensor([[1.0, 0.0, 2.0, 0.0]])
    b = torch.tensor([[1.0, 0.0, 0.0, 0.0]])
    counted = torch.tensor([[True, True, True, True]])
    o = drop.same_keep_mask(a, b, counted, "x")
    assert o.discrepancy == 1.0 > o.bound
    assert drop.same_keep_mask(a, b, counted & torch.tensor([[True, True, False, True]]), "x").discrepancy == 0.0


def test_fresh_process_is_not_applicable_to_what_a_process_cannot_import():
    with pytest.raises(NotApplicable, match="import"):
        processes.importable(lambda q, k, v, **kw: F.scaled_dot_product_attention(q, k, v, **kw))
    report = verify_attention(lambda q, k, v, **kw: F.scaled_dot_product_attention(q, k, v, **kw),
                              dtypes=[torch.float32], invariants=["fresh-process"])
    assert not report.judged and [c.status for c in report.checks] == ["not applicable"]


def test_fresh_process_passes_sdpa_and_the_reference_and_names_the_hash_seeded_mutant():
    for impl in (F.scaled_dot_product_attention, mutants.full_attention):
        report = verify_attention(impl, dtypes=[torch.float32], invariants=["fresh-process"])
        assert report.passed and report.judged, str(report)
    failed = verify_attention(mutants.hash_seeded_dropout, dtypes=[torch.float32], invariants=["fresh-process"])
    assert not failed.passed and "keep mask" in str(failed)


def test_each_path_meets_autocast_in_one_half_dtype_and_sdpa_passes_there():
    """rt50's autocast_lowp_state: the paths' plain rows dealt among the run's half dtypes, called in float32 under
    torch.autocast; SDPA passes them (its autocast answer is the half call's), the split-K design too, and the blocked
    loop judged by its declared recipe (float32 accumulators: references.autocast_as_sdpa keeps them so)."""
    from kernels.harness import generate as gen
    from kernels.harness.designs import split_k_lse
    from kernels.harness.references import blocked_attention

    # (the forward rows: the gradient rows under autocast are test_rt51_families')
    rows = [p for d in DTYPES for p in paths.threaded(0, d, DTYPES, SDPA)
            if p.caller == callers.AUTOCAST and p.relation == gen.AGREEMENT]
    firsts = [p for p in paths.threaded(0, "float32", DTYPES, SDPA) if not p.causal and p.relation == gen.AGREEMENT]
    assert {p.dtype for p in rows} == {"float16", "bfloat16"} and len(rows) == len(firsts)
    assert {p.path for p in rows} == {p.path for p in firsts}
    assert all(p.caller != callers.AUTOCAST for d in ("float32",) for p in paths.threaded(0, d, ("float32",), SDPA))
    for impl in (F.scaled_dot_product_attention, split_k_lse, blocked_attention):  # (the last declares a recipe)
        for p in rows:
            o, refused = gen.check_problem(impl, p)
            assert refused is None and not gen.failed(o), (impl.__name__, p.describe(), o)
    assert "under torch.autocast(bfloat16)" in next(p for p in rows if p.dtype == "bfloat16").describe()


def test_the_autocast_caller_casts_exactly_and_leaves_autocast_as_it_was():
    seen = {}

    def impl(q, k, v, **kwargs):
        seen.update(dtype=q.dtype, autocast=torch.is_autocast_enabled("cpu"), half=torch.get_autocast_dtype("cpu"))
        return F.scaled_dot_product_attention(q, k, v, **kwargs).float()  # (float32 answered: rounded to the half)
    q = torch.randn(1, 2, 5, 8, dtype=torch.float16)
    out = callers.called_by(impl, callers.AUTOCAST)(q, q, q)
    assert seen == {"dtype": torch.float32, "autocast": True, "half": torch.float16}
    assert out.dtype == torch.float16 and torch.equal(out, F.scaled_dot_product_attention(q, q, q))
    assert not torch.is_autocast_enabled("cpu")
    with pytest.raises(ValueError, match="float16 or bfloat16"):
        callers.called_by(impl, callers.AUTOCAST)(q.float(), q.float(), q.float())


def test_split_k_designs_splits_do_not_depend_on_the_default_dtype():
    """The harness's own split-K design built its split edges by torch.linspace in the default dtype: under a bfloat16
    default 385 keys split wrong (found by its default-bfloat16 caller row: 6.5× the float16 rule)."""
    from kernels.harness.designs import split_k_lse

    q, k, v = torch.randn(4, 1, 2, 2), torch.randn(4, 1, 385, 2), torch.randn(4, 1, 385, 2)
    assert torch.equal(callers.called_by(split_k_lse, "default bfloat16")(q, k, v), split_k_lse(q, k, v))
