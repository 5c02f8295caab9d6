"""The fused-QKV benchmark runs and reports its fields (no timing is asserted: timings are not tests)."""
import pytest
import torch

from kernels import bench_qkv


def test_the_benchmark_reports_a_ratio_of_its_two_timings():
    r = bench_qkv.measure(64, 32, repeats=3, warmup=1)
    assert r["speedup"] == r["three_s"] / r["fused_s"] and r["fused_s"] > 0
    with pytest.raises(ValueError, match="tokens"):
        bench_qkv.measure(0, 32)


def test_a_wrong_fusion_is_refused(monkeypatch):
    real_split = torch.Tensor.split
    monkeypatch.setattr(torch.Tensor, "split", lambda self, n, dim=0: tuple(reversed(real_split(self, n, dim))))
    with pytest.raises(RuntimeError, match="disagree"):
        bench_qkv.measure(16, 16, repeats=1, warmup=0)
