"""Benchmark: flash_attention and flash_decode against torch's SDPA backends, in one run.

    python -m kernels.bench [--out FILE]     # a CUDA GPU: CUDA events, the issue's shapes
    python -m kernels.bench --tiny           # CPU, Triton's interpreter, tiny shapes, wall clock

Measured side by side: forward and forward+backward TFLOP/s of ``flash_attention`` and of
``torch.nn.functional.scaled_dot_product_attention`` under each SDPA backend that runs
(flash, cuDNN, efficient, math; via ``torch.nn.attention.sdpa_kernel``), as ratios; the
bfloat16 matmul ceiling; decoding (Nq = 1, long Nk): ``flash_decode`` against the unsplit
kernel and SDPA; and peak memory against N. Every timing is the median of many calls after
warm-up, cycling through several input sets (randn, never zeros) whose total size exceeds
the L2 cache, so no call finds its inputs cached by the previous one.

``--tiny`` runs every code path of the GPU run (the same functions, tables and checks);
only the timer (wall clock instead of CUDA events), the memory meter (none on CPU) and the
sizes differ, so CI catches a broken benchmark before a GPU hour is spent on it.
"""
from __future__ import annotations

import argparse
import datetime
import math
import os
import statistics
import sys
import time
import warnings
from dataclasses import dataclass, replace

MiB = 2 ** 20


@dataclass(frozen=True)
class Settings:
    lengths: tuple[int, ...]  # N = Nq = Nk for the training shapes
    head_dims: tuple[int, ...]
    dtypes: tuple[str, ...]
    tokens: int  # batch = tokens // N, so every length does the same work per token
    model_dim: int  # heads = model_dim // D
    decode_lengths: tuple[int, ...]  # Nk of the decoding shapes (Nq = 1)
    decode_batch: int
    decode_heads: tuple[int, int]  # (Hq, Hkv): grouped-query, as in current decoders
    decode_head_dim: int
    decode_splits: int | None  # None: flash_decode's own heuristic
    memory_head_dim: int
    warmup: int
    repeats: int
    matmul_n: int
    math_max_n: int  # SDPA's math backend builds N×N matrices: skipped beyond this length


GPU = Settings(lengths=(1024, 2048, 4096, 8192, 16384), head_dims=(64, 128), dtypes=("bfloat16", "float16"),
               tokens=16384, model_dim=2048, decode_lengths=(4096, 8192, 16384, 32768, 65536, 131072),
               decode_batch=2, decode_heads=(32, 8), decode_head_dim=128, decode_splits=None, memory_head_dim=128,
               warmup=5, repeats=30, matmul_n=8192, math_max_n=4096)
# Interpreted, a call costs milliseconds per tile pair: lengths of one and two 64-wide tiles
# (neither a tile multiple), GQA decoding over three tiles with fixed splits so the combine runs,
# and the math backend skipped at the longer length so that path runs too. One dtype: float16
# takes the same code path, and each interpreted call costs a tenth of a second or more.
TINY = Settings(lengths=(48, 80), head_dims=(32,), dtypes=("bfloat16",), tokens=80, model_dim=32,
                decode_lengths=(150,), decode_batch=1, decode_heads=(2, 1), decode_head_dim=32, decode_splits=3,
                memory_head_dim=32, warmup=1, repeats=1, matmul_n=128, math_max_n=48)

BACKENDS = ("flash", "cudnn", "efficient", "math")
FWD, FWD_BWD = "forward", "forward+backward"


# --------------------------------------------------------------------------- arithmetic

def visible_pairs(nq: int, nk: int, causal: bool) -> int:
    """(query, key) pairs that take part: top-left causal row i sees min(i + 1, Nk) keys."""
    if not causal:
        return nq * nk
    full = max(0, min(nq, nk))  # rows 0..min-1 see i + 1 keys; the rest see all Nk
    return full * (full + 1) // 2 + (nq - full) * nk


def attention_flops(batch: int, heads: int, nq: int, nk: int, head_dim: int, causal: bool, mode: str) -> float:
    """Two matmuls forward (QKᵀ, PV), five backward (recomputed QKᵀ, dV, dP, dQ, dK): 7/2 of the
    forward, FlashAttention's convention; masked pairs are not counted."""
    forward = 4.0 * batch * heads * visible_pairs(nq, nk, causal) * head_dim
    return forward if mode == FWD else 3.5 * forward


def input_sets(set_bytes: int, l2_bytes: int, at_most: int = 8) -> int:
    """How many input sets to cycle so that one pass over them overflows L2 twice."""
    return max(2, min(at_most, math.ceil(2 * l2_bytes / max(set_bytes, 1)) + 1))


# --------------------------------------------------------------------------- measuring

class Clock:
    """Times calls: CUDA events on a GPU (the kernels run asynchronously), wall clock on CPU."""

    def __init__(self, cuda: bool):
        self.cuda = cuda

    def each(self, calls) -> list[float]:
        import torch

        if not self.cuda:
            out = []
            for call in calls:
                start = time.perf_counter()
                call()
                out.append(time.perf_counter() - start)
            return out
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in calls]
        for (start, end), call in zip(events, calls):
            start.record()
            call()
            end.record()
        torch.cuda.synchronize()
        return [start.elapsed_time(end) / 1e3 for start, end in events]

    def median(self, fn, sets, warmup: int, repeats: int) -> float:
        """Median seconds of fn(*inputs) over `repeats` calls after `warmup`, cycling `sets`."""
        self.each([lambda s=s: fn(*s) for s in (sets[i % len(sets)] for i in range(warmup))])
        return statistics.median(self.each([lambda s=s: fn(*s) for s in (sets[i % len(sets)] for i in range(repeats))]))


def peak_memory(fn, inputs, cuda: bool) -> float | None:
    """Bytes allocated at the peak of one call beyond what was allocated before it; None on CPU,
    where the call still runs but no allocator keeps a peak."""
    import torch

    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
    fn(*inputs)
    if not cuda:
        return None
    torch.cuda.synchronize()
    return float(torch.cuda.max_memory_allocated() - before)


# --------------------------------------------------------------------------- what is timed

def timed_fn(attention, mode: str, causal: bool, gqa: bool = False):
    """``attention`` (SDPA's keyword contract) as a function of (q, k, v, dout); forward+backward
    returns the gradients, so the backward is part of what is timed."""
    import torch

    if mode == FWD:
        def forward(q, k, v, dout):
            with torch.no_grad():
                return attention(q, k, v, is_causal=causal, enable_gqa=gqa)
        return forward

    def forward_backward(q, k, v, dout):
        out = attention(q, k, v, is_causal=causal, enable_gqa=gqa)
        return torch.autograd.grad(out, (q, k, v), dout)
    return forward_backward


def flash_fn(mode: str, causal: bool, gqa: bool = False):
    from kernels.flash import flash_attention

    return timed_fn(flash_attention, mode, causal, gqa)


def sdpa_fn(mode: str, causal: bool, gqa: bool = False):
    from torch.nn.functional import scaled_dot_product_attention

    return timed_fn(scaled_dot_product_attention, mode, causal, gqa)


def backend_context(name: str):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel({"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                        "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}[name])


def backend_runs(name: str, fn, inputs) -> str | None:
    """None when the backend runs these inputs; else why not (SDPA refuses what it lacks)."""
    try:
        with warnings.catch_warnings(), backend_context(name):
            warnings.simplefilter("ignore")  # SDPA warns once per reason before refusing
            fn(*inputs)
        return None
    except RuntimeError as exc:
        return "refused: " + (str(exc).strip().splitlines() or [type(exc).__name__])[0][:120]


def make_sets(count: int, batch: int, hq: int, hkv: int, nq: int, nk: int, d: int, dtype, device, grad: bool):
    """`count` distinct randn input sets (q, k, v, dout); leaves require grad for the backward."""
    import torch

    sets = []
    for i in range(count):
        g = torch.Generator(device=device).manual_seed(i)
        q, k, v = (torch.randn(batch, h, n, d, generator=g, device=device, dtype=dtype)
                   for h, n in ((hq, nq), (hkv, nk), (hkv, nk)))
        dout = torch.randn(batch, hq, nq, d, generator=g, device=device, dtype=dtype)
        sets.append(tuple(t.requires_grad_(grad) for t in (q, k, v)) + (dout,))
    return sets


def set_bytes(batch, hq, hkv, nq, nk, d, dtype) -> int:
    import torch

    return (2 * batch * hq * nq + 2 * batch * hkv * nk) * d * torch.empty((), dtype=dtype).element_size()


# --------------------------------------------------------------------------- the run

@dataclass
class Env:
    settings: Settings
    device: str
    cuda: bool
    clock: Clock
    l2_bytes: int

    def sets(self, batch, hq, hkv, nq, nk, d, dtype, grad):
        n = input_sets(set_bytes(batch, hq, hkv, nq, nk, d, dtype), self.l2_bytes)
        return make_sets(n, batch, hq, hkv, nq, nk, d, dtype, self.device, grad)

    def time(self, fn, sets) -> float:
        return self.clock.median(fn, sets, self.settings.warmup, self.settings.repeats)


def matmul_ceiling(env: Env) -> float:
    """bfloat16 matmul TFLOP/s on this device, measured the same way as the kernels."""
    import torch

    n = env.settings.matmul_n
    count = input_sets(2 * n * n * 2, env.l2_bytes)
    g = torch.Generator(device=env.device).manual_seed(0)
    sets = [(torch.randn(n, n, generator=g, device=env.device, dtype=torch.bfloat16),
             torch.randn(n, n, generator=g, device=env.device, dtype=torch.bfloat16)) for _ in range(count)]
    return 2.0 * n ** 3 / env.time(torch.matmul, sets) / 1e12


def training_rows(env: Env, mode: str) -> list[dict]:
    """One record per (dtype, causal, D, N): TFLOP/s of flash_attention and each SDPA backend."""
    import torch

    s = env.settings
    rows = []
    for dtype_name in s.dtypes:
        dtype = getattr(torch, dtype_name)
        for causal in (False, True):
            for d in s.head_dims:
                for n in s.lengths:
                    batch, heads = max(1, s.tokens // n), s.model_dim // d
                    flops = attention_flops(batch, heads, n, n, d, causal, mode)
                    sets = env.sets(batch, heads, heads, n, n, d, dtype, grad=mode == FWD_BWD)
                    row = dict(dtype=dtype_name, causal=causal, d=d, n=n, batch=batch, heads=heads,
                               ours=flops / env.time(flash_fn(mode, causal), sets) / 1e12, backends={})
                    for name in BACKENDS:
                        if name == "math" and n > s.math_max_n:
                            row["backends"][name] = f"not run beyond N = {s.math_max_n} (it builds N×N matrices)"
                            continue
                        fn = sdpa_fn(mode, causal)
                        why = backend_runs(name, fn, sets[0])
                        if why is None:
                            with backend_context(name):
                                why = flops / env.time(fn, sets) / 1e12
                        row["backends"][name] = why
                    rows.append(row)
                    del sets
    return rows


def decode_rows(env: Env) -> list[dict]:
    """Nq = 1 against long key ranges: seconds per call of each implementation."""
    import torch

    from kernels.flash import flash_attention
    from kernels.decode import auto_split, flash_decode, num_splits_for
    from kernels.decode.api import block_n
    from kernels.decode.dispatch import sm_count

    s = env.settings
    hq, hkv = s.decode_heads
    d, dtype = s.decode_head_dim, torch.bfloat16
    rows = []
    for nk in s.decode_lengths:
        sets = env.sets(s.decode_batch, hq, hkv, 1, nk, d, dtype, grad=False)
        splits = s.decode_splits or num_splits_for(1, nk, batch=s.decode_batch, q_heads=hq, kv_heads=hkv,
                                                   sms=sm_count(env.device), block_n=block_n(d, dtype))

        def decode(q, k, v, dout, splits=splits):
            return flash_decode(q, k, v, enable_gqa=True, num_splits=splits)

        def unsplit(q, k, v, dout):
            with auto_split(False):
                return flash_attention(q, k, v, enable_gqa=True)

        def dispatched(q, k, v, dout):
            return flash_attention(q, k, v, enable_gqa=True)

        times = {"flash_decode": env.time(decode, sets), "unsplit": env.time(unsplit, sets),
                 "flash_attention": env.time(dispatched, sets)}
        fn = sdpa_fn(FWD, causal=False, gqa=True)
        for name in BACKENDS:
            why = backend_runs(name, fn, sets[0])
            if why is None:
                with backend_context(name):
                    why = env.time(fn, sets)
            times[name] = why
        kv_bytes = 2 * s.decode_batch * hkv * nk * d * 2
        rows.append(dict(nk=nk, splits=splits, times=times, kv_bytes=kv_bytes))
        del sets
    return rows


def memory_rows(env: Env) -> list[dict]:
    """Peak bytes beyond the inputs of one flash_attention call, B = 1, against N."""
    import torch

    s = env.settings
    d = s.memory_head_dim
    heads = s.model_dim // d
    rows = []
    for n in s.lengths:
        # One call each, so one input set: the peak is what the call adds, not how fast it runs.
        fwd_set, = make_sets(1, 1, heads, heads, n, n, d, torch.bfloat16, env.device, grad=False)
        bwd_set, = make_sets(1, 1, heads, heads, n, n, d, torch.bfloat16, env.device, grad=True)
        rows.append(dict(n=n, heads=heads, d=d, fwd=peak_memory(flash_fn(FWD, False), fwd_set, env.cuda),
                         fwd_bwd=peak_memory(flash_fn(FWD_BWD, False), bwd_set, env.cuda)))
    return rows


# --------------------------------------------------------------------------- the tables

def _mib(x: float | None, per_tokens: int | None = None) -> str:
    """Bytes as MiB (per 1k tokens when given); n/a where nothing was measured."""
    if x is None:
        return "n/a"
    return f"{x / MiB / (per_tokens / 1024):.2f}" if per_tokens else f"{x / MiB:.1f}"


def _cell(value, fmt) -> str:
    return fmt(value) if isinstance(value, float) else "—"


def _notes(rows, key: str) -> list[str]:
    """Why each SDPA backend cell that holds no number is empty, once per backend and reason."""
    seen = {}
    for r in rows:
        for b in BACKENDS:
            v = r[key][b]
            if isinstance(v, str):
                seen.setdefault((b, v), None)
    return [""] + [f"- sdpa-{b}, not measured: {why}" for b, why in seen] if seen else []


def training_table(rows, mode: str, ceiling: float) -> list[str]:
    head = ["dtype", "causal", "D", "N", "B×H", "flash_attention TFLOP/s", "% of matmul"]
    head += [f"sdpa-{b} TFLOP/s (ours ÷ it)" for b in BACKENDS] + ["ours ÷ best SDPA"]
    out = [f"### {mode.capitalize()}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["dtype"], "yes" if r["causal"] else "no", str(r["d"]), str(r["n"]), f"{r['batch']}×{r['heads']}",
                 f"{r['ours']:.3g}", f"{100 * r['ours'] / ceiling:.0f}%"]
        measured = [v for v in r["backends"].values() if isinstance(v, float)]
        for b in BACKENDS:
            v = r["backends"][b]
            cells.append(_cell(v, lambda x: f"{x:.3g} ({r['ours'] / x:.2f}×)"))
        cells.append(f"{r['ours'] / max(measured):.2f}×" if measured else "n/a")
        out.append("| " + " | ".join(cells) + " |")
    return out + _notes(rows, "backends")


def decode_table(rows, s: Settings) -> list[str]:
    names = ["flash_decode", "unsplit", "flash_attention"] + [f"sdpa-{b}" for b in BACKENDS]
    hq, hkv = s.decode_heads
    out = [f"### Decoding: Nq = 1, B = {s.decode_batch}, Hq = {hq}, Hkv = {hkv}, D = {s.decode_head_dim}, bfloat16",
           "", "µs per call; `unsplit` is flash_attention with automatic splitting off; `flash_attention` is "
           "as dispatched; GB/s counts K and V read once.", "",
           "| Nk | splits | " + " | ".join(f"{n} µs" for n in names) + " | unsplit ÷ flash_decode | flash_decode GB/s |",
           "|" + "---|" * (len(names) + 4)]
    for r in rows:
        t = r["times"]
        cells = [str(r["nk"]), str(r["splits"])]
        cells += [_cell(t[k], lambda x: f"{1e6 * x:.1f}") for k in ("flash_decode", "unsplit", "flash_attention")]
        cells += [_cell(t[b], lambda x: f"{1e6 * x:.1f}") for b in BACKENDS]
        cells += [f"{t['unsplit'] / t['flash_decode']:.2f}×", f"{r['kv_bytes'] / t['flash_decode'] / 1e9:.1f}"]
        out.append("| " + " | ".join(cells) + " |")
    return out + _notes(rows, "times")


def memory_table(rows) -> list[str]:
    out = ["### Peak memory of flash_attention (bfloat16, B = 1, not causal), beyond its inputs", "",
           "Linear in N means a constant MiB per 1k tokens (no N×N buffer).", "",
           "| N | H×D | forward MiB | forward MiB / 1k tokens | forward+backward MiB | forward+backward MiB / 1k tokens |",
           "|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['n']} | {r['heads']}×{r['d']} | {_mib(r['fwd'])} | {_mib(r['fwd'], r['n'])} "
                   f"| {_mib(r['fwd_bwd'])} | {_mib(r['fwd_bwd'], r['n'])} |")
    if rows and rows[0]["fwd"] is None:
        out += ["", "n/a: peak memory is read from CUDA's allocator; this run had no GPU."]
    return out


def device_name(env: Env) -> str:
    import platform

    import torch

    if env.cuda:
        return torch.cuda.get_device_name(env.device)
    return f"CPU ({platform.processor() or platform.machine()}), Triton interpreter"


def report(env: Env) -> str:
    import torch
    import triton

    s = env.settings
    ceiling = matmul_ceiling(env)
    lines = ["## Benchmark: flash_attention and flash_decode against torch SDPA", "",
             f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}",
             f"- device: {device_name(env)}",
             f"- torch {torch.__version__}, triton {triton.__version__}, Python {sys.version.split()[0]}",
             f"- timing: {'CUDA events' if env.cuda else 'wall clock (--tiny)'}, median of {s.repeats} calls "
             f"after {s.warmup} warm-up, input sets cycled to overflow L2 ({env.l2_bytes / MiB:.0f} MiB)",
             f"- bfloat16 matmul ceiling ({s.matmul_n}³): {ceiling:.3g} TFLOP/s",
             f"- training shapes: B = {s.tokens} / N, H = {s.model_dim} / D; FLOPs count visible pairs only, "
             "forward+backward = 3.5 × forward", ""]
    for mode in (FWD, FWD_BWD):
        lines += training_table(training_rows(env, mode), mode, ceiling) + [""]
    lines += decode_table(decode_rows(env), s) + [""]
    lines += memory_table(memory_rows(env))
    return "\n".join(lines) + "\n"


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m kernels.bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--tiny", action="store_true", help="CPU, Triton's interpreter, tiny shapes (for CI)")
    p.add_argument("--out", metavar="FILE", help="also write the Markdown table to FILE")
    p.add_argument("--lengths", type=int, nargs="+", help="override N of the training shapes")
    p.add_argument("--head-dims", type=int, nargs="+", help="override D of the training shapes")
    p.add_argument("--dtypes", nargs="+", choices=("bfloat16", "float16"), help="override the dtypes")
    p.add_argument("--decode-lengths", type=int, nargs="+", help="override Nk of the decoding shapes")
    p.add_argument("--repeats", type=int, help="timed calls per measurement (median)")
    return p.parse_args(argv)


def settings_from(args) -> Settings:
    s = TINY if args.tiny else GPU
    overrides = {k: tuple(v) for k, v in (("lengths", args.lengths), ("head_dims", args.head_dims),
                                          ("dtypes", args.dtypes), ("decode_lengths", args.decode_lengths)) if v}
    if args.repeats:
        overrides["repeats"] = args.repeats
    bad = [f"{k}={v}" for k, v in overrides.items() if k != "dtypes" and min(v if isinstance(v, tuple) else (v,)) < 1]
    if bad:
        raise SystemExit(f"kernels.bench: sizes must be >= 1: {', '.join(bad)}")
    return replace(s, **overrides)


def main(argv=None) -> str:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    from kernels.flash import runtime

    if args.tiny and not runtime.interpreting():
        if argv is not None:  # called from Python: restarting the caller's process is not ours to do
            raise RuntimeError(runtime.HOW_TO_INTERPRET)
        # Triton picks the interpreter at import, which has happened by now: start again with it on.
        os.execve(sys.executable, [sys.executable, "-m", "kernels.bench", *sys.argv[1:]],
                  dict(os.environ, TRITON_INTERPRET="1"))
    import torch

    if not args.tiny and not torch.cuda.is_available():
        raise SystemExit("kernels.bench: no CUDA device here; run with --tiny for the interpreted CPU version")
    cuda = not args.tiny
    device = "cuda" if cuda else "cpu"
    l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 50 * MiB) if cuda else 0
    env = Env(settings_from(args), device, cuda, Clock(cuda), l2)
    text = report(env)
    print(text, end="")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)
    return text


if __name__ == "__main__":
    main()
