"""Conformance harness: judge any SDPA-compatible attention implementation by the derived laws."""
# The invariant families beyond the core ones register themselves into invariants.INVARIANTS when
# imported: the training path, attn_mask, dropout, the rounding bias and the derived rounding bound.
from kernels.harness import bias, dropout, masks, rounding_bound, training  # noqa: F401
from kernels.harness.report import Check, ConformanceReport, Failure
from kernels.harness.verify import error_vs_length, verify_attention

__all__ = ["Check", "ConformanceReport", "Failure", "error_vs_length", "verify_attention"]
