"""Experiment (not a test): does rounding-bias-decode raise false alarms on correct designs?

    python -m kernels.decode_bias_survey 30

For each correct design (SDPA's math backend, full_attention, blocked_attention), float16 and bfloat16, seeds
0..n-1 and each decode shape of bias.decode_shapes (on the default decode-4097 case), prints the largest
statistic of the test, (|row-mean error| - δ)/se, unclipped (the invariant reports it clipped at 0), and the
largest |mean|/se (how far from zero bias at all), against the one-sided threshold z(1 - ALPHA).
"""
from __future__ import annotations

import math
import sys

import torch

from kernels.harness import bias, peers, reference as ref, rounding_direction as rd
from kernels.harness.cases import DEFAULT_CASES
from kernels.harness.references import blocked_attention, full_attention
from kernels.harness.subject import Subject

DESIGNS = {"sdpa-math": peers.sdpa_math, "full_attention": full_attention, "blocked_attention": blocked_attention}


def worst_statistics(impl, dtype: torch.dtype, seeds: int) -> dict[str, tuple[float, float]]:
    """{shape label: (largest (|mean| - δ)/se, largest |mean|/se)} over both statistics and the seeds."""
    case = next(c for c in DEFAULT_CASES if c.n_q == 1 and c.n_k > bias.LONG_DECODE_KEYS)
    margin = rd.margin()
    worst: dict[str, tuple[float, float]] = {}
    for seed in range(seeds):
        s = Subject(impl, case, dtype, "cpu", seed)
        for label, (b, hq, hkv, nk, d) in bias.decode_shapes(case).items():
            gen = s.rng(f"decode bias {label}")  # the invariant's own inputs
            q, k, v = (s.cast(torch.randn(shape, generator=gen, dtype=torch.float64))
                       for shape in ((b, hq, 1, d), (b, hkv, nk, d), (b, hkv, nk, d)))
            kw = s.kwargs(is_causal=False, enable_gqa=hq != hkv)
            stats = rd.bias_statistics(s.run(q, k, v, **kw), ref.attention64(q.cpu(), k.cpu(), v.cpu(), **kw), dtype)
            z = max((abs(m) - margin) / se for m, se, _ in stats.values())
            raw = max(abs(m) / se for m, se, _ in stats.values())
            old = worst.get(label, (-math.inf, -math.inf))
            worst[label] = (max(old[0], z), max(old[1], raw))
    return worst


def main(argv: list[str]) -> None:
    seeds = int(argv[0]) if argv else 20
    print(f"threshold z(1 - {rd.ALPHA:g}) = {rd.z_critical():.3f}; {seeds} seeds")
    for name, impl in DESIGNS.items():
        for dtype in sorted(rd.BIASED_DTYPES, key=str):
            for label, (z, raw) in worst_statistics(impl, dtype, seeds).items():
                print(f"{name:18s} {str(dtype):15s} {label:18s} largest (|mean|-δ)/se {z:+.2f}, |mean|/se {raw:.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
