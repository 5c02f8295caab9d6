"""Test-session set-up shared by every package's tests.

Triton's interpreter must be switched on before anything imports triton, so this runs
first: when the machine has no NVIDIA GPU, kernels run interpreted on the CPU.
"""
import importlib.util
import os

import pytest

from proofs.cli import use_triton_interpreter_without_gpu

use_triton_interpreter_without_gpu()

# xdist runs one worker per core already: BLAS threads on top only contend (the interpreter's tile
# products ran 2× the CPU time with OpenBLAS's two threads; see kernels.harness.verify). threadpoolctl
# is the `cpu` extra's; without it the BLAS keeps its threads.
if os.environ.get("PYTEST_XDIST_WORKER") and importlib.util.find_spec("threadpoolctl"):
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")

try:
    from hypothesis import HealthCheck, settings

    settings.register_profile("ci", derandomize=True, max_examples=20, deadline=None,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.register_profile("dev", max_examples=50, deadline=None)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
except ImportError:  # hypothesis is a test extra; the proofs tests do not need it
    pass


def pytest_collection_modifyitems(config, items):
    if any(item.get_closest_marker("gpu") for item in items):
        try:
            import torch

            cuda = torch.cuda.is_available()
        except ImportError:
            cuda = False
        if not cuda:
            skip = pytest.mark.skip(reason="needs a CUDA GPU; this machine has none (tests run interpreted instead)")
            for item in items:
                if item.get_closest_marker("gpu"):
                    item.add_marker(skip)
