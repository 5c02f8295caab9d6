"""Where the kernels run: Triton's interpreter on a CPU, compiled on a CUDA GPU.

The interpreter is chosen when triton is imported (TRITON_INTERPRET=1 must be set
before that), so this module only reports the choice and picks launch settings to
match it: one tile configuration when interpreting (autotuning several fails there),
a real list on a GPU.
"""
from __future__ import annotations

import functools
import os
import re

import torch
import triton

HOW_TO_INTERPRET = ("Triton kernels on CPU tensors need Triton's interpreter: set the environment "
                    "variable TRITON_INTERPRET=1 before anything imports triton (e.g. "
                    "`TRITON_INTERPRET=1 python ...`), or pass CUDA tensors on a machine with a GPU.")


def _interpret_flag() -> bool:
    knobs = getattr(triton, "knobs", None)
    if knobs is not None:
        return bool(knobs.runtime.interpret)
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")


# Read once, when this module is imported: @triton.jit reads the same flag as the kernel
# modules that import this one are decorated, so later changes to the environment do not
# change how the kernels run (and must not change what we report).
_INTERPRETING = _interpret_flag()


def interpreting() -> bool:
    """Whether the kernels were built for Triton's interpreter."""
    return _INTERPRETING


class _InterpretedDeviceFunction:
    """A device function under the interpreter, called without re-patching triton.language.

    Triton's interpreter patches triton.language (inspect.getmembers over its modules) on every
    call of a device function, once per program and loop iteration: measured, a quarter of an
    interpreted conformance run. The launch (GridExecutor) has patched the same module object for
    the whole grid before any program runs, and these functions see triton.language only as ``tl``,
    as the kernels calling them do, so the call goes straight to the rewritten function."""

    def __init__(self, jitted):
        self.jitted = jitted
        functools.update_wrapper(self, jitted.fn)

    def __call__(self, *args, **kwargs):
        return self.jitted.rewrite()(*args, **kwargs)


def device_function(fn):
    """triton.jit for a function called from kernels (not launched); see _InterpretedDeviceFunction."""
    jitted = triton.jit(fn)
    return _InterpretedDeviceFunction(jitted) if _INTERPRETING else jitted


# Triton's interpreter before 3.7.1 fails every kernel with NumPy 2 ("only 0-dimensional arrays
# can be converted to Python scalars"); compiled kernels on a GPU have no such need, so the
# `kernels` extra does not ask for it and the `cpu` extra does.
INTERPRETER_MIN_TRITON = (3, 7, 1)


def _version(text: str) -> tuple[int, ...]:
    """(major, minor, patch) from a version string; each part's leading digits ("0rc1" -> 0)."""
    parts = [re.match(r"\d*", piece).group() for piece in text.split("+")[0].split(".")[:3]]
    return tuple(int(p) if p else 0 for p in parts)


def interpreter_problem(triton_version: str, numpy_version: str) -> str | None:
    """Why this Triton cannot interpret kernels beside this NumPy, or None when it can."""
    if _version(numpy_version) >= (2,) and _version(triton_version) < INTERPRETER_MIN_TRITON:
        need = ".".join(map(str, INTERPRETER_MIN_TRITON))
        return (f"Triton {triton_version} cannot interpret kernels with NumPy {numpy_version}; on CPU install "
                f"triton>={need} (pip install 'attention-proofs[cpu]'), or numpy<2")
    return None


def require_interpreter() -> None:
    """Raise a RuntimeError saying what to do when CPU tensors cannot run here."""
    if not interpreting():
        raise RuntimeError(HOW_TO_INTERPRET)
    import numpy

    problem = interpreter_problem(triton.__version__, numpy.__version__)
    if problem:
        raise RuntimeError(problem)


def upcast_operands(dtype: torch.dtype) -> bool:
    """The interpreter multiplies bfloat16 as raw bits: there, bf16 tiles go to float32 after loading."""
    return dtype == torch.bfloat16 and interpreting()


def dot_precision(dtype: torch.dtype) -> str:
    """float32 inputs use full-precision dots (no TF32), so float32 is held to a float32 reference.

    For 16-bit inputs Triton ignores the option; "tf32" is its default and valid on every target."""
    return "ieee" if dtype == torch.float32 else "tf32"


# Tile shapes. Interpreted time grows with the number of tile pairs, not their size, so
# one 64x64 configuration there; compiled, a short list that autotuning picks from. The
# backward holds four (BLOCK, D) tiles per program, so its list stays smaller.
_INTERPRETED = [triton.Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_warps=4, num_stages=1)]
_FORWARD = [(128, 64, 8, 3), (128, 32, 4, 3), (64, 64, 4, 3), (64, 32, 4, 2), (32, 32, 4, 2)]
_BACKWARD = [(64, 64, 8, 2), (64, 64, 4, 2), (32, 64, 4, 2), (64, 32, 4, 2), (32, 32, 4, 1)]


def tile_configs(kind: str) -> list:
    """Autotuning candidates for kind "forward" or "backward"."""
    if interpreting():
        return list(_INTERPRETED)
    return [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=s)
            for bm, bn, w, s in {"forward": _FORWARD, "backward": _BACKWARD}[kind]]


def prune_for_head_dim(configs, named_args, **kwargs):
    """Head dim 256 overflows registers with large tiles: keep tiles of at most 64x64 there."""
    block_d = max(kwargs.get(name, named_args.get(name)) or 0 for name in ("BLOCK_D", "BLOCK_DV"))
    max_tile = 64 * 64 if block_d >= 256 else 128 * 64
    return [c for c in configs if c.kwargs["BLOCK_M"] * c.kwargs["BLOCK_N"] <= max_tile] or configs[-1:]


def launcher(kernel, tiles):
    """(kernel to launch, extra launch arguments): the autotuned kernel, or with ``tiles`` =
    (BLOCK_M, BLOCK_N) the plain jitted one with those tile sizes."""
    if tiles is None:
        return kernel, {}
    block_m, block_n = tiles
    return kernel.fn, {"BLOCK_M": block_m, "BLOCK_N": block_n}
