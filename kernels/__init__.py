"""Kernels: the Triton FlashAttention kernel, split-KV decoding and the conformance harness.

The names below load on first use: importing ``kernels`` itself (as pytest does for this project's
plugin, before any conftest runs) must not import triton, which reads TRITON_INTERPRET once, at import.
"""
import importlib

_EXPORTS = {
    "flash_attention": "kernels.flash",
    "flash_decode": "kernels.decode",
    "ConformanceReport": "kernels.harness",
    "error_vs_length": "kernels.harness",
    "verify_attention": "kernels.harness",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'kernels' has no attribute {name!r}")
