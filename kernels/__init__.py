from kernels.decode import flash_decode  # noqa: F401  (issue 8)
