"""Red team rt51's escaped families, each answered by a design (the mutants each design alone catches are in
kernels/mutants.py, judged by test_mutants.py): rank-2 inputs, a training step's callers (the backward on another
thread, under a default dtype, under autocast), float16 outputs below its least normal; and two harness defects the
default run of SDPA math showed at this stop (a kept count read with float32 rounding, a shrink of 50 GB)."""
from __future__ import annotations

import threading
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

from kernels.harness import callers, paths
from kernels.harness import generate as gen
from kernels.harness import tolerance as tol
from kernels.harness.dropout_lags import COUNT_BLOCK, count_columns
from kernels.harness.features import offered
from kernels.harness.peers import sdpa_math

SDPA = offered(F.scaled_dot_product_attention)
DTYPES = ("float32", "float16", "bfloat16")


def _least_rank_sdpa_takes() -> int:
    for rank in range(1, 5):
        x = torch.randn((1,) * max(rank - 2, 0) + ((3, 4) if rank >= 2 else (4,)))
        try:
            F.scaled_dot_product_attention(x, x, x)
        except RuntimeError:
            continue
        return rank
    raise AssertionError("SDPA took no rank below 5")


def test_the_array_draws_the_least_rank_sdpa_takes_with_causal_and_a_mask():
    least = _least_rank_sdpa_takes()
    assert least == min(paths.FEATURE_LEVELS["rank"])  # (torch 2.13: 2; a torch taking rank 1 fails this)
    rows = [r for r in paths.rows(0, SDPA) if r["rank"] == least]
    assert any(r["causal"] for r in rows) and any(r["mask"] != "none" for r in rows)
    assert any(r["relation"] == "gradients" for r in rows)


def _rank_two_row(causal: bool):
    for i, row in enumerate(paths.rows(0, SDPA)):
        if row["rank"] == 2 and row["causal"] == causal and row["relation"] == "forward" and row["path"] == "small":
            return paths.problem(row, 0, i)
    raise AssertionError("no rank-2 forward row on the small path")


def test_rank_two_problems_pass_sdpa_and_fail_an_impl_refusing_or_dropping_causal_there():
    p = _rank_two_row(causal=True)
    assert not gen.failed(gen.check_problem(F.scaled_dot_product_attention, p)[0])

    def refusing(q, k, v, **kwargs):
        if q.dim() == 2:
            raise ValueError("expected 4-D inputs")
        return F.scaled_dot_product_attention(q, k, v, **kwargs)

    def causal_dropped(q, k, v, is_causal=False, **kwargs):
        return F.scaled_dot_product_attention(q, k, v, is_causal=is_causal and q.dim() != 2, **kwargs)

    outcome, refused = gen.check_problem(refusing, p)
    assert refused is None and gen.failed(outcome) and "refused an input SDPA accepts" in outcome.detail
    assert gen.failed(gen.check_problem(causal_dropped, p)[0])


def test_gradient_rows_meet_every_training_caller_and_the_longest_path_meets_them_all():
    rows = [p for d in DTYPES for p in paths.threaded(0, d, DTYPES, SDPA) if p.relation == gen.GRADIENTS]
    assert {p.caller for p in rows} == set(callers.GRADIENT_CALLERS) | {callers.AUTOCAST}
    assert {p.dtype for p in rows if p.caller == callers.AUTOCAST} == {"float16", "bfloat16"}
    longest = [p for p in rows if p.caller in callers.GRADIENT_CALLERS and p.causal and min(p.n_q, p.n_k) > 256]
    assert {p.caller for p in longest} == set(callers.GRADIENT_CALLERS)  # (past bfloat16's exact 256 positions)


def test_backward_by_runs_the_backward_on_the_worker_or_under_the_default_dtype_and_restores_it():
    here = threading.current_thread()
    assert callers.backward_by(callers.BACKWARD_ON_WORKER)(threading.current_thread) is not here
    assert callers.called_by(threading.current_thread, callers.BACKWARD_ON_WORKER)() is here  # (its forward: main)
    assert callers.backward_by("default bfloat16")(torch.get_default_dtype) == torch.bfloat16
    assert torch.get_default_dtype() == torch.float32
    assert callers.backward_by(callers.MAIN)(threading.current_thread) is here


def test_a_refusal_of_one_caller_alone_fails():
    row = next(p for p in paths.threaded(0, "float32", DTYPES, SDPA) if p.caller == callers.WORKER)

    def main_thread_only(q, k, v, **kwargs):
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("this kernel's workspace lives on the main thread")
        return F.scaled_dot_product_attention(q, k, v, **kwargs)

    outcome, refused = gen.check_problem(main_thread_only, row)
    assert refused is None and gen.failed(outcome) and "refused an input SDPA accepts" in outcome.detail


def test_the_floor_scales_with_vs_unit_down_to_one_subnormal_spacing():
    fp16 = torch.float16
    assert tol.floor(fp16, 0.0) == pytest.approx(tol.eps(fp16) * tol.FLOOR_OFFSET + 2.0 ** -24)
    small = tol.floor(fp16, 1e-6, unit=2.0 ** -20)
    assert small < 1e-7 < tol.floor(fp16, 1e-6)  # (a flushed output of 1e-6: past the first, within the second)
    assert small >= 2.0 ** -24  # (a correct store rounds to a subnormal: half a spacing)


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_small_values_problem_passes_sdpa_and_fails_a_float16_store_flushing_subnormals(dtype):
    p = gen.draw(0, gen.REGIMES.index("small-values"), dtype, SDPA)
    assert gen.SMALL_VALUE_EXPONENTS[0] <= p.small_values <= gen.SMALL_VALUE_EXPONENTS[1]
    assert not gen.failed(gen.check_problem(sdpa_math, p)[0])

    def flushed(q, k, v, **kwargs):
        out = sdpa_math(q, k, v, **kwargs)
        tiny = torch.finfo(out.dtype).smallest_normal if out.dtype == torch.float16 else 0.0
        return out.masked_fill(out.abs() < tiny, 0.0)

    assert gen.failed(gen.check_problem(flushed, p)[0]) == (dtype == "float16")


def test_count_columns_partition_the_keys_in_blocks():
    n = 3 * COUNT_BLOCK + 5
    c = count_columns(n)
    assert c.shape == (n, 4) and torch.equal(c.sum(dim=1), torch.ones(n)) and c[:, -1].sum() == 5


def test_a_long_decodes_kept_count_is_read_exactly_in_float32():
    """SDPA math's default run at seed 0 failed this row (z = +8.6) while its float64 call's count was right: one
    column of ones summed 159 243 weights in float32 with a one-signed rounding (dropout_lags.COUNT_BLOCK)."""
    p = gen.Problem(1, 1, 1, 1, 159243, 1, 1, False, "float32", dropout_p=0.00329, relation=gen.DROPOUT_LAW,
                    seed=4021513452, path="longest-decode")
    outcome = gen.check_problem(sdpa_math, p)[0]
    assert not gen.failed(outcome), outcome.detail

    def drops_too_few(q, k, v, dropout_p=0.0, **kwargs):  # (p two thirds of the asked: a few hundred keys)
        return sdpa_math(q, k, v, dropout_p=dropout_p * 2 / 3, **kwargs) * (1 - dropout_p * 2 / 3) / (1 - dropout_p)

    assert gen.failed(gen.check_problem(drops_too_few, p)[0])


def test_shrinking_a_long_paths_dropout_problem_keeps_its_value_dim():
    p = gen.Problem(1, 1, 1, 1, 159243, 1, 1, False, "float32", dropout_p=0.5, relation=gen.DROPOUT_LAW,
                    path="longest-decode")
    assert all(c.value_dim <= p.value_dim for c in gen._smaller(p))
    plain = replace(p, path=None, n_k=64, value_dim=64)  # (V = I elsewhere: Dv = Nk shrinks with it)
    assert any(c.n_k == 32 and c.value_dim == 32 for c in gen._smaller(plain))
