"""The kernel layer's one policy on where Triton kernels run: compiled on an NVIDIA GPU, else in
Triton's interpreter on the CPU.

Light on purpose (no torch, no triton): the command line and the test session call
:func:`use_triton_interpreter_without_gpu` before anything imports triton, which reads the
choice (``TRITON_INTERPRET``) once, at import; ``kernels.flash.runtime.interpreting`` reports it.
"""
from __future__ import annotations

import os
import shutil
import sys


def has_nvidia_gpu() -> bool:
    """Decided without importing torch, which would import triton too early."""
    return os.path.exists("/dev/nvidiactl") or shutil.which("nvidia-smi") is not None


def use_triton_interpreter_without_gpu() -> None:
    """On a machine with no NVIDIA GPU, run Triton kernels in Triton's interpreter.

    It must come before anything imports triton: the flag is read then, and setting it later
    breaks Triton's helpers, so once triton is imported it is left alone. A TRITON_INTERPRET
    the user set is kept."""
    if not has_nvidia_gpu() and "triton" not in sys.modules:
        os.environ.setdefault("TRITON_INTERPRET", "1")
