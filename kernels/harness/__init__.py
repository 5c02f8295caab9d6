"""Conformance harness: judge any SDPA-compatible attention implementation by the derived laws."""
from kernels.harness.report import Check, ConformanceReport, Failure
from kernels.harness.verify import error_vs_length, verify_attention

__all__ = ["Check", "ConformanceReport", "Failure", "error_vs_length", "verify_attention"]
