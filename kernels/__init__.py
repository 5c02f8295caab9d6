from kernels.flash import flash_attention  # noqa: F401  (issue 6)
from kernels.decode import flash_decode  # noqa: F401  (issue 8)
from kernels.harness import ConformanceReport, error_vs_length, verify_attention  # noqa: F401  (issue 5)
