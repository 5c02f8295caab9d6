"""One intra-op and one BLAS thread for a block of small-tensor work, the caller's counts put back after."""
from __future__ import annotations

import contextlib

import torch


@contextlib.contextmanager
def one_thread():
    """The harness's tensors are small: intra-op threads only add synchronisation, which on a busy
    2-core machine cost 8× (a default run measured 10.7 s with 2 threads, 1.3 s with one). The same
    holds for the BLAS under NumPy, which Triton's interpreter multiplies its tiles with: one
    OpenBLAS thread halved the CPU time of an interpreted flash_attention call (0.62 s against
    1.25 s, 129×385 GQA) and, on a machine already busy, its wall time by up to 7×. threadpoolctl
    (the `cpu` extra; scikit-learn's tool for this) sets it; without it the BLAS keeps its threads."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with _one_blas_thread():
            yield
    finally:
        torch.set_num_threads(before)


def _one_blas_thread():
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")
