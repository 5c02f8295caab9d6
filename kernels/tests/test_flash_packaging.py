"""The `kernels` extra installs beside a GPU machine's own torch and Triton; the interpreter's
need (Triton 3.7.1+ with NumPy 2) lives in the `cpu` extra and in a call-time message.

A CUDA torch wheel pins its Triton (torch 2.11 pins triton==3.6.0, the lent H200's pair): an
extra demanding more makes pip refuse the install or replace both. Measured with pip's
resolver (`pip install --dry-run --ignore-installed torch==2.11.0 triton==3.6.0 '.[kernels]'`):
with kernels = triton>=3.7.1 it ends in ResolutionImpossible; with triton>=3.6 it resolves to
torch-2.11.0 and triton-3.6.0. These tests keep pyproject.toml and the runtime check in step
without the network.
"""
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from kernels.flash import runtime

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def extra(name):
    """The requirements of an optional-dependency group, by package name."""
    with open(PYPROJECT, "rb") as f:
        groups = tomllib.load(f)["project"]["optional-dependencies"]
    return {r.name: r for r in map(Requirement, groups[name])}


def test_kernels_extra_accepts_the_gpu_machines_triton():
    assert extra("kernels")["triton"].specifier.contains("3.6.0")
    assert extra("kernels")["torch"].specifier.contains("2.11.0")


def test_cpu_extra_asks_what_the_interpreter_needs():
    """The same version the call-time check names: one source of truth, runtime.INTERPRETER_MIN_TRITON."""
    need = ".".join(map(str, runtime.INTERPRETER_MIN_TRITON))
    spec = extra("cpu")["triton"].specifier
    assert spec.contains(need) and not spec.contains("3.7.0") and not spec.contains("3.6.0")


@pytest.mark.parametrize("triton_version, numpy_version, refused", [
    ("3.6.0", "2.4.1", True), ("3.7.0", "2.0.0", True), ("3.7.1", "2.4.1", False), ("3.9.0", "2.5.0", False),
    ("3.6.0", "1.26.4", False), ("3.10.0+git1234", "2.4.1", False), ("3.6.0rc1", "2.1.0", True), ("3.7.0rc1", "2.1.0", True)])
def test_interpreter_check_names_what_to_install(triton_version, numpy_version, refused):
    problem = runtime.interpreter_problem(triton_version, numpy_version)
    assert (problem is not None) == refused
    if refused:
        assert "triton>=3.7.1" in problem and "attention-proofs[cpu]" in problem and triton_version in problem
