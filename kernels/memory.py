"""Peak extra memory of one attention forward against N: this kernel against SDPA's math backend.

Method (exact on CPU): ``torch.profiler`` with ``profile_memory=True`` records every allocation and
free of torch's CPU allocator as a signed byte count with a timestamp; ordered by time, their
running sum is the memory the call holds, and its maximum is the call's peak. (tracemalloc sees
only Python's allocator, not torch's; ``torch.cuda.max_memory_allocated`` needs a GPU.) The extra
memory is the peak minus the output's own bytes, which every implementation must allocate.

What it counts: torch tensors. Under Triton's interpreter the kernel's tiles are NumPy arrays of
one program at a time (its on-chip state on a GPU), so they are not HBM and are not counted; the
kernel's HBM beyond the output is the lse it keeps (``proofs.traffic.extra_memory``).
"""
from __future__ import annotations

import numpy as np
import torch


def peak_bytes(fn) -> tuple[int, int]:
    """(peak bytes held during ``fn()``, bytes still held after it), from the profiler's allocation events."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = [e for e in prof.profiler.kineto_results.events()
              if e.name() == "[memory]" and str(e.device_type()) == "DeviceType.CPU"]
    if not events:
        raise RuntimeError("the profiler recorded no CPU allocation: nothing to measure")
    held = np.cumsum([e.nbytes() for e in sorted(events, key=lambda e: e.start_ns())])
    return int(max(0, held.max())), int(held[-1])


def _qkv(n: int, d: int, dtype=torch.float32):
    g = torch.Generator().manual_seed(n)
    return tuple(torch.randn(1, 1, n, d, generator=g).to(dtype) for _ in range(3))  # (1, 1, N, D) each


def extra_forward(impl: str, n: int, d: int = 16, *, causal: bool = False) -> int:
    """Peak bytes one forward call holds beyond its output: ``impl`` "flash" (this kernel) or "math"
    (torch SDPA's math backend)."""
    q, k, v = _qkv(n, d)
    out_bytes = n * d * q.element_size()
    if impl == "flash":
        from kernels.flash.api import flash_attention

        def run():
            with torch.no_grad():
                flash_attention(q, k, v, is_causal=causal)
    elif impl == "math":
        from torch.nn.attention import SDPBackend, sdpa_kernel

        def run():
            with torch.no_grad(), sdpa_kernel(SDPBackend.MATH):
                torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    else:
        raise ValueError(f"impl must be 'flash' or 'math', got {impl!r}")
    run()  # a first call's one-off allocations (launch caches) are not the call's memory
    peak, _ = peak_bytes(run)
    return peak - out_bytes


def loglog_slope(ns, values) -> float:
    """Least-squares slope of log(value) against log(N)."""
    if len(ns) != len(values) or len(ns) < 2 or min(values) <= 0:
        raise ValueError("ns and values must be equally long (>= 2) with positive values")
    return float(np.polyfit(np.log(ns), np.log(values), 1)[0])


NS = (64, 128, 256, 512, 1024)
QUICK_NS = (64, 128, 256)  # the quick report's: three points still fit a slope, at a fifth of the cost


def memory_curves(ns=NS, d: int = 16) -> dict:
    """Figure data: extra bytes per N for each implementation and their log-log slopes, beside the derived
    extra memory (``proofs.traffic.extra_memory``: lse, N floats, against S and P, 2N² floats) in bytes."""
    from proofs.traffic import extra_memory

    curves = {impl: [extra_forward(impl, n, d) for n in ns] for impl in ("flash", "math")}
    size = torch.finfo(torch.float32).bits // 8
    derived = [extra_memory(n, d) for n in ns]
    return {"n": list(ns), "d": d, **{f"{impl}_bytes": v for impl, v in curves.items()},
            **{f"{impl}_slope": loglog_slope(ns, v) for impl, v in curves.items()},
            "derived_flash_bytes": [int(x["flash_forward"]) * size for x in derived],
            "derived_math_bytes": [int(x["standard_forward"]) * size for x in derived]}


def figure_caption(data: dict) -> str:
    """The memory figure's caption, from its data."""
    n = data["n"]
    return (f"Peak bytes one forward call holds beyond its output, against N (N queries = N keys, d = {data['d']}, "
            "float32, batch 1, one head, non-causal, log–log): this kernel against torch SDPA's math backend, each "
            "from torch.profiler's allocation events on the CPU (kernels.memory.peak_bytes; the kernel's tiles, on "
            "chip on a GPU, are not counted). Fitted log–log slopes over "
            f"N = {', '.join(map(str, n))}: kernel {data['flash_slope']:.3f}, math backend {data['math_slope']:.3f}. "
            "Thin lines: the derived extra memory (proofs.traffic.extra_memory): lse, N floats, for the kernel; "
            f"S and P, 2N² floats, for standard attention. At N = {n[-1]} measured / derived is "
            f"{data['flash_bytes'][-1] / data['derived_flash_bytes'][-1]:.2f} (kernel) and "
            f"{data['math_bytes'][-1] / data['derived_math_bytes'][-1]:.2f} (math backend).")


if __name__ == "__main__":
    import time

    t = time.perf_counter()
    print(memory_curves(), f"{time.perf_counter() - t:.1f} s")
