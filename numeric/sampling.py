"""The sampling engine: seeded, chunked, threaded draws of random vectors.

Reproducibility: chunk i always holds the same rows and draws them from its own generator,
seeded by the i-th child of ``SeedSequence(seed).spawn``; chunk sizes depend only on the
width of a row, and per-chunk results are reduced in chunk order. So a result depends on the
seed alone, not on the thread count or the memory budget (which only caps how many chunks are
in flight at once).

Speed: NumPy's generators and ufuncs release the GIL, so threads over chunks use every core.
Components are drawn in float32 (half the memory traffic); sums are accumulated in float64.
"""
from __future__ import annotations

import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from numeric import arguments

MEMORY_BUDGET = 512 * 2**20  # bytes in flight at once, whatever n is
CHUNK_ELEMENTS = 1 << 20  # elements per vector per chunk: ~4 MB of float32, cache friendly
BYTES_PER_ELEMENT = 16  # per element of a row in flight: float32 draws plus temporaries
DEFAULT_NU = 10.0  # Student-t degrees of freedom when none are given


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class Components:
    """I.i.d. vector components from ``distribution`` with the given mean and variance."""

    distribution: str = "normal"
    mean: float = 0.0
    variance: float = 1.0
    nu: float = DEFAULT_NU  # Student-t only

    def __post_init__(self):
        arguments.distribution(self.distribution)
        arguments.real(self.mean, "mean")
        arguments.variance(self.variance, "variance")
        if self.distribution == "student-t":
            arguments.nu(self.nu)

    def draw(self, rng: np.random.Generator, shape: tuple[int, ...], out: np.ndarray | None = None) -> np.ndarray:
        """float32 draws of ``shape``; into ``out`` (float32, that many elements) when given."""
        x = standard(rng, self.distribution, shape, self.nu, out)
        if self.variance != 1:
            x *= np.float32(math.sqrt(self.variance))
        if self.mean != 0:
            x += np.float32(self.mean)
        return x


_local = threading.local()


def scratch(name: str, size: int) -> np.ndarray:
    """A float32 buffer of ``size`` elements private to this thread and reused across chunks:
    fresh multi-megabyte arrays per chunk cost as much in page faults as the arithmetic on them."""
    buffers = _local.__dict__.setdefault("buffers", {})
    buf = buffers.get(name)
    if buf is None or buf.size < size:
        buf = buffers[name] = np.empty(size, dtype=np.float32)
    return buf[:size]


def standard(rng: np.random.Generator, distribution: str, shape: tuple[int, ...], nu: float = DEFAULT_NU,
             out: np.ndarray | None = None) -> np.ndarray:
    """float32 draws with mean 0 and variance 1 (into ``out`` when given)."""
    size = math.prod(shape)
    x = np.empty(size, dtype=np.float32) if out is None else out.reshape(-1)
    if x.size != size or x.dtype != np.float32:
        raise ValueError(f"out must be a float32 array of {size} elements")
    if distribution == "normal":
        _box_muller(rng, x)
    elif distribution == "uniform":  # U(-√3, √3) has variance 1
        rng.random(out=x, dtype=np.float32)
        x -= np.float32(0.5)
        x *= np.float32(math.sqrt(12.0))
    elif distribution == "rademacher":  # one random bit per component: each byte picks 8 signs
        n_bytes = (size + 7) // 8
        byte = np.frombuffer(rng.bytes(n_bytes), dtype=np.uint8)
        signs = scratch("signs", 8 * n_bytes)
        np.take(_SIGNS, byte, axis=0, out=signs.reshape(n_bytes, 8))
        x[:] = signs[:size]
    elif distribution == "student-t":  # t_ν = Z / √(χ²_ν / ν), scaled to variance 1 by √((ν-2)/ν)
        half_chi2 = scratch("chi2", size)  # χ²_ν / 2
        rng.standard_gamma(nu / 2, out=half_chi2, dtype=np.float32)
        _box_muller(rng, x)
        np.divide(np.float32((nu - 2) / 2), half_chi2, out=half_chi2)
        np.sqrt(half_chi2, out=half_chi2)
        x *= half_chi2
    else:
        arguments.distribution(distribution)
    return x.reshape(shape)


_SIGNS = 1 - 2 * np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.float32)  # (256, 8): ±1


def _box_muller(rng: np.random.Generator, out: np.ndarray) -> None:
    """Fill ``out`` with standard normals by the Box-Muller transform, in float32.

    Exact in distribution up to float32 resolution, and about twice as fast as NumPy's ziggurat
    on this machine: the uniforms come from the bit generator and NumPy's SIMD log/sin/cos do
    the rest. The radius tops out at √(2·24·ln 2) ≈ 5.77 (24-bit uniforms): the 2-D mass beyond
    it is 2⁻²⁴, which moves the variance by ~1e-6, far below any Monte Carlo error here.
    """
    size = out.size
    half = (size + 1) // 2
    u = scratch("box-muller", 2 * half)
    rng.random(out=u, dtype=np.float32)
    r, theta = u[:half], u[half:]
    np.subtract(np.float32(1), r, out=r)  # (0, 1]: log is finite
    np.log(r, out=r)
    r *= np.float32(-2)
    np.sqrt(r, out=r)
    theta *= np.float32(2 * math.pi)
    np.cos(theta, out=out[:half])
    out[:half] *= r
    np.sin(theta, out=theta)
    np.multiply(theta[:size - half], r[:size - half], out=out[half:])


def chunk_rows(width: int) -> int:
    """Rows per chunk for rows of ``width`` elements: fixed by the width, never by n or threads."""
    return max(1, CHUNK_ELEMENTS // width)


def map_chunks(work: Callable[[np.random.Generator, int], object], n_rows: int, width: int, seed: int, *,
               threads: int | None = None, memory_budget: int = MEMORY_BUDGET) -> list:
    """Run ``work(rng, rows)`` over the chunks of ``n_rows`` rows; results in chunk order."""
    n_rows = arguments.n_samples(n_rows, "n_samples")
    seed = arguments.seed(seed)
    threads = cpu_count() if threads is None else arguments.positive_int(threads, "threads")
    memory_budget = arguments.positive_int(memory_budget, "memory_budget")
    rows = chunk_rows(width)
    chunk_bytes = rows * width * BYTES_PER_ELEMENT
    if chunk_bytes > memory_budget:
        raise ValueError(f"memory_budget of {memory_budget} bytes cannot hold one chunk "
                         f"({rows} rows of width {width}: {chunk_bytes} bytes)")
    n_chunks = -(-n_rows // rows)
    children = np.random.SeedSequence(seed).spawn(n_chunks)

    def run(i: int):
        return work(np.random.default_rng(children[i]), min(rows, n_rows - i * rows))

    workers = min(threads, n_chunks, memory_budget // chunk_bytes)
    if workers == 1:
        return [run(i) for i in range(n_chunks)]
    with ThreadPoolExecutor(workers) as pool:  # at most `workers` chunks alive at once
        return list(pool.map(run, range(n_chunks)))


def prefix_dot_products(rng: np.random.Generator, rows: int, d_ks: Sequence[int], q: Components,
                        k: Components) -> np.ndarray:
    """q·k over the first d components, for each d in the increasing ``d_ks``, of one draw of
    ``rows`` vector pairs of length max(d_ks): one draw serves a whole sweep (nested sums)."""
    width = d_ks[-1]
    qs = q.draw(rng, (rows, width), scratch("q", rows * width))  # (rows, d_max) float32
    ks = k.draw(rng, (rows, width), scratch("k", rows * width))  # (rows, d_max) float32
    bounds = (0, *d_ks)
    # float32 x float32 products are exact in float64; einsum sums them in float64.
    segments = [np.einsum("ij,ij->i", qs[:, a:b], ks[:, a:b], dtype=np.float64) for a, b in zip(bounds, bounds[1:])]
    return np.cumsum(np.stack(segments), axis=0)  # (len(d_ks), rows)


def dot_products(d_ks: Sequence[int], n_samples: int, seed: int, q: Components, k: Components,
                 reduce: Callable[[np.ndarray], object], *, threads: int | None = None,
                 memory_budget: int = MEMORY_BUDGET) -> list:
    """Per-chunk ``reduce`` of the (len(d_ks), rows) scores q·k, in chunk order."""
    d_ks = tuple(sorted(set(arguments.dimensions(d_ks, "d_k"))))
    return map_chunks(lambda rng, rows: reduce(prefix_dot_products(rng, rows, d_ks, q, k)),
                      n_samples, d_ks[-1], seed, threads=threads, memory_budget=memory_budget)


def dot_product_samples(d_k: int, n_samples: int, seed: int = 0, distribution: str = "normal", *,
                        nu: float = DEFAULT_NU) -> np.ndarray:
    """``n_samples`` draws of q·k (zero-mean, unit-variance components): float64, shape (n,)."""
    d_k = arguments.positive_int(d_k, "d_k")
    comp = Components(distribution, 0.0, 1.0, nu)
    parts = dot_products((d_k,), n_samples, seed, comp, comp, lambda s: s[0])
    return np.concatenate(parts)
