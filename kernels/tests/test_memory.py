"""Peak extra memory: exact allocation accounting, O(N) for this kernel, O(N²) for SDPA's math backend."""
import pytest
import torch

from kernels import memory


def test_peak_bytes_sees_a_freed_temporary():
    def fn():
        tmp = torch.empty(1000, dtype=torch.float32)
        del tmp
        fn.kept = torch.empty(10, dtype=torch.float64)

    peak, held = memory.peak_bytes(fn)
    assert (peak, held) == (4000, 80)


def test_the_kernel_keeps_two_float32_per_row_and_the_math_backend_two_n_by_n_matrices():
    flash = [memory.extra_forward("flash", n) for n in (64, 128)]
    math_ = [memory.extra_forward("math", n) for n in (64, 128)]
    # lse₂ (kept for the backward) and the natural lse handed back: 2 · 4 bytes per query row.
    assert flash[1] - flash[0] == 8 * 64
    # S and P, float32, N × N each, at least.
    assert all(m >= 2 * 4 * n * n for m, n in zip(math_, (64, 128)))


def test_slopes_and_bad_input():
    assert memory.loglog_slope([10, 100], [3, 300]) == pytest.approx(2.0, abs=1e-12)
    assert memory.loglog_slope([10, 100], [3, 30]) != pytest.approx(2.0, abs=0.5)
    with pytest.raises(ValueError, match="ns and values"):
        memory.loglog_slope([1], [1])
    with pytest.raises(ValueError, match="impl"):
        memory.extra_forward("xformers", 8)
