"""A run's parts shared with a forked process give the same checks, in the same order, as one process; a child that
dies leaves its parts to the parent; the split depends on the weights alone."""
from __future__ import annotations

import os

import pytest
import torch

from kernels.harness import workers
from kernels.harness import dropout_lags
from kernels.harness.peers import sdpa_math
from kernels.harness.verify import verify_attention

needs_fork = pytest.mark.skipif(not workers.can_fork("cpu"), reason="forking is used on Linux's CPU device only")


def test_the_split_is_balanced_and_fixed_by_the_weights():
    assert workers.split([3, 3, 3, 2, 1, 1]) == [[0, 2, 5], [1, 3, 4]]
    assert workers.split([3, 3, 3, 2, 1, 1]) == workers.split([3, 3, 3, 2, 1, 1])
    assert workers.split([5]) == [[0], []]


@needs_fork
def test_two_workers_give_one_process_s_checks_in_its_order():
    options = dict(dtypes=["float32", "bfloat16"], generate_problems=12)
    one = verify_attention(sdpa_math, workers=1, **options)
    two = verify_attention(sdpa_math, workers=2, **options)
    assert one.checks == two.checks and one.notes == two.notes
    assert len({c.case_name for c in two.checks if c.case_name.startswith("generated-")}) > 12


@needs_fork
def test_a_child_that_dies_leaves_its_parts_to_the_parent():
    parent = os.getpid()

    def run(part, notes):
        if os.getpid() != parent and part == "b":
            os._exit(3)  # the impl crashing its process on the child's part
        notes.append(f"note of {part}")
        yield from (f"{part}{i}" for i in range(3))

    seen = []
    results, notes = workers.run_parts(["a", "b"], run, [1.0, 1.0], 2, seen=seen.append)
    assert results == [["a0", "a1", "a2"], ["b0", "b1", "b2"]]
    assert notes[:2] == ["note of a", "note of b"] and "exit code 3" in notes[2] and "parts (b)" in notes[2]
    assert sorted(seen) == sorted(r for part in results for r in part)


@needs_fork
def test_a_child_s_results_arrive_while_the_parent_runs():
    parent = os.getpid()

    def run(part, notes):
        yield from ((part, os.getpid() == parent) for _ in range(2))

    results, _ = workers.run_parts(["a", "b"], run, [1.0, 1.0], 2)
    assert {in_parent for part in results for _, in_parent in part} == {True, False}


def test_a_wrong_worker_count_is_refused_by_name(monkeypatch):
    with pytest.raises(ValueError, match="workers must be 1, 2 or None"):
        verify_attention(sdpa_math, workers=3)
    monkeypatch.setenv(workers.WORKERS_VARIABLE, "4")
    with pytest.raises(ValueError, match=workers.WORKERS_VARIABLE):
        workers.default_workers("cpu")
    monkeypatch.setenv(workers.WORKERS_VARIABLE, "1")
    assert workers.default_workers("cpu") == 1


def test_the_lag_autocorrelation_survives_the_shape_that_corrupted_torch_s_fft():
    """torch 2.13's CPU irfftn wrote out of bounds for a (6, 1103, 8) mask padded to (16, 4096, 16): the process
    aborted or segfaulted problems later (a dropout-only run, measured). The lags now come from SciPy's FFT: checked
    against the direct sum at a few lags, in a process that then keeps working."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(6, 1103, 8, generator=g, dtype=torch.float64)
    counted = torch.ones_like(x, dtype=torch.bool)
    lags, z = dropout_lags._counted_lag_z_nd(x, counted, 0.5)
    for lag, value in list(zip(lags.tolist(), z.tolist()))[:: max(1, len(z) // 5)]:
        a, b, c = lag
        s0, s1 = slice(max(0, -a), 6 - max(0, a)), slice(max(0, -b), 1103 - max(0, b))
        s2 = slice(max(0, -c), 8 - max(0, c))
        shifted = x[max(0, a):6 + min(0, a), max(0, b):1103 + min(0, b), max(0, c):8 + min(0, c)]
        direct = float((x[s0, s1, s2] * shifted).sum()) / (shifted.numel() ** 0.5 * 0.25)
        assert value == pytest.approx(direct, rel=1e-9, abs=1e-9)
