"""Fused QKV projection against three projections: one GEMM X·[W_q W_k W_v] against X·W_q, X·W_k, X·W_v.

    python -m kernels.bench_qkv [--tokens T] [--model-dim D] [--dtype float32] [--threads 1]

Times both on the current device (CPU here: wall clock; CUDA: events) as the median of ``repeats``
calls after warm-up, and prints the speed-up t_three / t_fused. The seed's "up to 1.8× on NVIDIA
Tensor Cores" is a GPU statement: only a CUDA run of this script can decide it; a CPU ratio is
a CPU fact. Both paths compute the same products (claim fused-qkv-projection); the script checks
that the outputs agree before timing.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch


def _timer(device: torch.device):
    if device.type == "cuda":
        def run(fn):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            return start.elapsed_time(end) / 1e3
    else:
        def run(fn):
            t = time.perf_counter()
            fn()
            return time.perf_counter() - t
    return run


def measure(tokens: int = 4096, model_dim: int = 768, *, dtype=torch.float32, device="cpu", repeats: int = 30,
            warmup: int = 5, seed: int = 0) -> dict:
    """Median seconds of the fused and the three-GEMM projection of a (tokens, model_dim) input."""
    for name, value in (("tokens", tokens), ("model_dim", model_dim), ("repeats", repeats)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    device = torch.device(device)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(tokens, model_dim, generator=g).to(device, dtype)  # (T, D)
    w = torch.randn(model_dim, 3 * model_dim, generator=g).to(device, dtype) / model_dim**0.5  # (D, 3D)
    w_q, w_k, w_v = (w[:, i * model_dim:(i + 1) * model_dim].contiguous() for i in range(3))  # (D, D) each

    def fused():
        return (x @ w).split(model_dim, dim=1)  # views: the slicing moves no data

    def three():
        return x @ w_q, x @ w_k, x @ w_v

    tol = 1e-4 if dtype == torch.float32 else 1e-2
    for a, b in zip(fused(), three()):
        if not torch.allclose(a, b, rtol=tol, atol=tol):
            raise RuntimeError("the fused and the three projections disagree")
    timer = _timer(device)
    times = {}
    for name, fn in (("fused", fused), ("three", three)):
        for _ in range(warmup):
            fn()
        times[name] = statistics.median(timer(fn) for _ in range(repeats))
    return {"tokens": tokens, "model_dim": model_dim, "dtype": str(dtype).removeprefix("torch."),
            "device": str(device), "threads": torch.get_num_threads(), "fused_s": times["fused"],
            "three_s": times["three"], "speedup": times["three"] / times["fused"]}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[512, 4096])
    parser.add_argument("--model-dim", type=int, default=768)
    parser.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    for tokens in args.tokens:
        r = measure(tokens, args.model_dim, dtype=getattr(torch, args.dtype), device=device, repeats=args.repeats)
        print(f"{r['device']} {r['dtype']} threads={r['threads']} tokens={tokens} d_model={r['model_dim']}: "
              f"fused {r['fused_s'] * 1e3:.3f} ms, three {r['three_s'] * 1e3:.3f} ms, speed-up {r['speedup']:.3f}x")


if __name__ == "__main__":
    main()
