"""HBM traffic of the Triton kernels, counted on the running kernel, against the derived formulas.

Method (exact, CPU): under Triton's interpreter every ``tl.load``/``tl.store`` goes through the
interpreter builder's ``create_masked_load``/``create_masked_store`` (an unmasked one through
``create_load``/``create_store``, which call them). ``count_traffic`` wraps those two methods on
the builder instance for the duration of a ``with`` block and, for each call, counts the lanes
whose mask is true, attributing each lane's address to the named tensor whose byte range holds it
(the interpreter runs on the tensors' own storage on CPU, so the addresses are theirs). A lane
that falls in no named tensor is an error: nothing is left uncounted. Elements and bytes (lanes
× element size of the pointer's type) are both kept.

``compare_*`` run one kernel launch under the counter and set the count beside
``proofs.traffic``'s expression for the same sizes; ``grid_table`` runs a grid of them.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field

import numpy as np
import torch

from kernels.flash import runtime
from proofs import traffic as derived


@dataclass
class Counts:
    """Elements and bytes moved per named tensor, reads and writes apart."""

    reads: dict = field(default_factory=dict)
    writes: dict = field(default_factory=dict)
    read_bytes: dict = field(default_factory=dict)
    write_bytes: dict = field(default_factory=dict)

    def add(self, kind: str, name: str, elements: int, nbytes: int) -> None:
        elems, byts = (self.reads, self.read_bytes) if kind == "load" else (self.writes, self.write_bytes)
        elems[name] = elems.get(name, 0) + elements
        byts[name] = byts.get(name, 0) + nbytes

    @property
    def total_bytes(self) -> int:
        return sum(self.read_bytes.values()) + sum(self.write_bytes.values())


def _builder():
    from triton.runtime import interpreter

    return interpreter.interpreter_builder


@contextlib.contextmanager
def count_traffic(tensors: dict[str, torch.Tensor]):
    """Count every masked-in load and store lane of interpreted kernels launched inside the block,
    attributed to ``tensors`` (name -> tensor; their storages must not overlap). Yields a Counts."""
    runtime.require_interpreter()
    if not isinstance(tensors, dict) or not all(isinstance(t, torch.Tensor) for t in tensors.values()):
        raise ValueError("tensors must map names to torch tensors")
    ranges = []
    for name, t in tensors.items():
        start = t.untyped_storage().data_ptr()
        ranges.append((start, start + t.untyped_storage().nbytes(), name))
    ranges.sort()
    for (a0, a1, n0), (b0, _, n1) in zip(ranges, ranges[1:]):
        if b0 < a1:
            raise ValueError(f"tensors {n0!r} and {n1!r} share storage: their traffic could not be told apart")
    starts = np.array([r[0] for r in ranges], dtype=np.uint64)
    ends = np.array([r[1] for r in ranges], dtype=np.uint64)
    counts = Counts()
    builder = _builder()

    def attribute(kind, ptrs, mask):
        addr = np.broadcast_to(ptrs.data, np.broadcast_shapes(ptrs.data.shape, mask.data.shape))
        on = np.broadcast_to(mask.data.astype(bool), addr.shape)
        live = addr[on].astype(np.uint64).ravel()
        if live.size == 0:
            return
        itemsize = np.dtype(_np_dtype(ptrs.get_element_ty())).itemsize
        slot = np.searchsorted(starts, live, side="right") - 1
        bad = (slot < 0) | (live >= ends[np.clip(slot, 0, None)])
        if bad.any():
            raise RuntimeError(f"a {kind} touched {int(bad.sum())} addresses outside every named tensor "
                               f"(first {hex(int(live[bad][0]))}): name every buffer the kernel reads or writes")
        for k, n in zip(*np.unique(slot, return_counts=True)):
            counts.add(kind, ranges[int(k)][2], int(n), int(n) * itemsize)

    original_load, original_store = builder.create_masked_load, builder.create_masked_store

    def load(ptrs, mask, other, cache_policy, is_volatile):
        attribute("load", ptrs, mask)
        return original_load(ptrs, mask, other, cache_policy, is_volatile)

    def store(ptrs, value, mask, cache_policy):
        attribute("store", ptrs, mask)
        return original_store(ptrs, value, mask, cache_policy)

    builder.create_masked_load, builder.create_masked_store = load, store
    try:
        yield counts
    finally:
        del builder.create_masked_load, builder.create_masked_store  # back to the class's methods


def _np_dtype(tt):
    from triton.runtime.interpreter import _get_np_dtype

    return _get_np_dtype(tt)


def _inputs(batch, heads_q, heads_kv, n_q, n_k, d, dv, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, heads_q, n_q, d, generator=g).to(dtype)  # (B, Hq, Nq, D)
    k = torch.randn(batch, heads_kv, n_k, d, generator=g).to(dtype)  # (B, Hkv, Nk, D)
    v = torch.randn(batch, heads_kv, n_k, dv, generator=g).to(dtype)  # (B, Hkv, Nk, Dv)
    return q, k, v


@dataclass(frozen=True)
class Comparison:
    kernel: str
    sizes: dict
    derived: derived.Traffic  # evaluated, whole call
    measured: Counts

    @property
    def agrees(self) -> bool:
        return (self.derived.reads == self.measured.reads) and (self.derived.writes == self.measured.writes)

    def differences(self) -> dict:
        out = {}
        for kind, a, b in (("read", self.derived.reads, self.measured.reads),
                           ("write", self.derived.writes, self.measured.writes)):
            for name in sorted(set(a) | set(b)):
                if a.get(name, 0) != b.get(name, 0):
                    out[f"{kind} {name}"] = (a.get(name, 0), b.get(name, 0))
        return out


def compare_forward(n_q, n_k, d, block_m, block_n, *, causal, batch=1, heads=1, dv=None,
                    dtype=torch.float32, formula=derived.flash_forward) -> Comparison:
    from kernels.flash.forward import attention_forward

    dv = d if dv is None else dv
    q, k, v = _inputs(batch, heads, heads, n_q, n_k, d, dv, dtype)
    out = torch.empty(batch, heads, n_q, dv, dtype=dtype)  # (B, H, Nq, Dv)
    lse2 = torch.empty(batch, heads, n_q, dtype=torch.float32)  # (B, H, Nq)
    with count_traffic({"Q": q, "K": k, "V": v, "O": out, "LSE": lse2}) as counts:
        attention_forward(q, k, v, out, lse2, scale=1 / math.sqrt(d), is_causal=causal, tiles=(block_m, block_n))
    per_head = formula(n_q, n_k, d, dv, block_m, block_n, causal=causal)
    sizes = dict(n_q=n_q, n_k=n_k, d=d, dv=dv, block_m=block_m, block_n=block_n, causal=causal, bh=batch * heads)
    return Comparison("forward", sizes, per_head.scaled(batch * heads).evaluate(), counts)


def compare_backward(n_q, n_k, d, block_m, block_n, *, causal, batch=1, heads_q=1, heads_kv=1, dv=None,
                     dtype=torch.float32, formula=derived.flash_backward) -> Comparison:
    from kernels.flash.backward import attention_backward
    from kernels.flash.forward import attention_forward

    dv = d if dv is None else dv
    q, k, v = _inputs(batch, heads_q, heads_kv, n_q, n_k, d, dv, dtype)
    out = torch.empty(batch, heads_q, n_q, dv, dtype=dtype)  # (B, Hq, Nq, Dv)
    lse2 = torch.empty(batch, heads_q, n_q, dtype=torch.float32)  # (B, Hq, Nq)
    scale = 1 / math.sqrt(d)
    attention_forward(q, k, v, out, lse2, scale=scale, is_causal=causal, tiles=(block_m, block_n))
    grad_out = torch.randn_like(out)  # (B, Hq, Nq, Dv)
    dq, dk, dv_ = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    # Delta is allocated inside attention_backward: its traffic is attributed by catching the allocation.
    named = {"Q": q, "K": k, "V": v, "O": out, "LSE": lse2, "dO": grad_out, "dQ": dq, "dK": dk, "dV": dv_}
    with _named_allocation(named, "Delta", (batch, heads_q, n_q)), count_traffic(named) as counts:
        attention_backward(q, k, v, out, lse2, grad_out, None, dq, dk, dv_, scale=scale, is_causal=causal,
                           tiles=(block_m, block_n))
    per_head = formula(n_q, n_k, d, dv, block_m, block_n, causal=causal, group=heads_q // heads_kv)
    sizes = dict(n_q=n_q, n_k=n_k, d=d, dv=dv, block_m=block_m, block_n=block_n, causal=causal,
                 bh=batch * heads_q, group=heads_q // heads_kv)
    return Comparison("backward", sizes, per_head.scaled(batch * heads_q).evaluate(), counts)


@contextlib.contextmanager
def _named_allocation(named: dict, name: str, shape: tuple):
    """Pre-allocate the float32 buffer of ``shape`` that the next ``torch.empty`` of that shape in
    kernels.flash.backward would create, and register it under ``name``: the backward's Delta
    is the one such allocation (its only torch.empty)."""
    import kernels.flash.backward as bwd

    buffer = torch.empty(shape, dtype=torch.float32)
    named[name] = buffer
    real_torch = bwd.torch

    class _Torch:
        def __getattr__(self, attr):
            return getattr(real_torch, attr)

        @staticmethod
        def empty(size, *args, **kwargs):
            if tuple(size) == tuple(shape) and kwargs.get("dtype") == torch.float32:
                return buffer
            return real_torch.empty(size, *args, **kwargs)

    bwd.torch = _Torch()
    try:
        yield
    finally:
        bwd.torch = real_torch


def compare_decode(n_q, n_k, d, splits, *, causal, batch=1, heads_q=1, heads_kv=1, dv=None,
                   dtype=torch.float32, formula=derived.flash_decode) -> Comparison:
    from kernels.decode import api

    dv = d if dv is None else dv
    q, k, v = _inputs(batch, heads_q, heads_kv, n_q, n_k, d, dv, dtype)
    rows = batch * heads_q * n_q
    m_ws, l_ws, acc_ws = api.workspace(rows, splits, dv, "cpu")
    out = torch.empty(rows, dv, dtype=dtype)  # (R, Dv)
    lse = torch.empty(rows, dtype=torch.float32)  # (R,)
    named = {"Q": q, "K": k, "V": v, "M_ws": m_ws, "L_ws": l_ws, "Acc_ws": acc_ws, "O": out, "LSE": lse}
    with torch.no_grad(), count_traffic(named) as counts:
        api.partials(q, k, v, m_ws, l_ws, acc_ws, is_causal=causal, scale=1 / math.sqrt(d), num_splits=splits)
        api.combine(m_ws, l_ws, acc_ws, out, lse)
    bn = api.block_n(max(d, dv), dtype)
    expected = formula(batch, heads_q, heads_kv, n_q, n_k, d, dv, splits, bn, causal=causal,
                       block_m=api.dispatch.BLOCK_M, combine_block_d=api.COMBINE_BLOCK_D,
                       combine_tile=api.COMBINE_TILE)
    sizes = dict(n_q=n_q, n_k=n_k, d=d, dv=dv, splits=splits, block_n=bn, causal=causal, bh=batch * heads_q,
                 group=heads_q // heads_kv)
    return Comparison("decode", sizes, expected, counts)


# The grid the report and the test share: small N (the interpreter costs ~7 ms per tile pair),
# tails (N not a multiple of the blocks), unequal blocks, causal and not, d not a power of two.
FORWARD_GRID = [(n, n, hd, bm, bn, c) for n, hd, bm, bn in ((64, 16, 32, 32), (100, 32, 32, 64), (130, 24, 64, 32),
                                                           (96, 64, 16, 32))
                for c in (False, True)] + [(40, 150, 16, 32, 16, True), (150, 40, 16, 64, 32, False)]
BACKWARD_GRID = [(64, 64, 16, 32, 32, c) for c in (False, True)] + [(100, 100, 24, 32, 64, c) for c in (False, True)] \
    + [(70, 50, 16, 16, 32, True), (50, 90, 16, 32, 16, True)]
DECODE_GRID = [(1, 300, 32, 1, False), (1, 300, 32, 3, False), (4, 200, 64, 2, True), (3, 129, 24, 4, False),
               (2, 70, 16, 5, True)]


def grid_table(quick: bool = True) -> list[Comparison]:
    """Every comparison of the grids (``quick`` keeps one of each kernel's cases in three)."""
    pick = (lambda xs: xs[::3]) if quick else (lambda xs: xs)
    out = [compare_forward(nq, nk, hd, bm, bn, causal=c) for nq, nk, hd, bm, bn, c in pick(FORWARD_GRID)]
    out += [compare_backward(nq, nk, hd, bm, bn, causal=c) for nq, nk, hd, bm, bn, c in pick(BACKWARD_GRID)]
    out += [compare_decode(nq, nk, hd, s, causal=c) for nq, nk, hd, s, c in pick(DECODE_GRID)]
    return out


def table_rows(comparisons: list[Comparison]) -> list[dict]:
    """One row per comparison: sizes, derived and measured totals (elements, reads + writes), agreement."""
    rows = []
    for c in comparisons:
        measured = sum(c.measured.reads.values()) + sum(c.measured.writes.values())
        rows.append({"kernel": c.kernel, **c.sizes, "derived_elements": int(c.derived.total),
                     "measured_elements": measured, "measured_bytes": c.measured.total_bytes, "agrees": c.agrees})
    return rows


# The report's figure: per kernel and causal setting, one series over N with the other sizes fixed, so the
# measured and derived counts can be read as curves. kernel -> (fixed sizes, N of the quick plan, N of the full).
FIGURE_SERIES = {
    "forward": (dict(d=16, block_m=32, block_n=32), (32, 64, 128), (64, 128, 256, 512)),
    "backward": (dict(d=16, block_m=32, block_n=32), (32, 64), (64, 128, 256)),
    "decode": (dict(n_q=4, d=16, splits=2), (64, 128, 256), (128, 256, 512, 1024, 2048)),
}


def _figure_comparison(kernel: str, n: int, causal: bool, fixed: dict) -> Comparison:
    if kernel == "forward":
        return compare_forward(n, n, fixed["d"], fixed["block_m"], fixed["block_n"], causal=causal)
    if kernel == "backward":
        return compare_backward(n, n, fixed["d"], fixed["block_m"], fixed["block_n"], causal=causal)
    return compare_decode(fixed["n_q"], n, fixed["d"], fixed["splits"], causal=causal)


def figure_data(quick: bool = True) -> dict:
    """The traffic figure's data: for each kernel of ``FIGURE_SERIES``, causal and not, the measured and the
    derived elements (reads + writes, whole launch) at each N, whether they agree tensor by tensor, and
    where they do not, (derived, measured) per differing tensor."""
    series = []
    for kernel, (fixed, quick_ns, full_ns) in FIGURE_SERIES.items():
        for causal in (False, True):
            points = []
            for n in quick_ns if quick else full_ns:
                c = _figure_comparison(kernel, n, causal, fixed)
                [row] = table_rows([c])
                points.append({"n": n, "derived": row["derived_elements"], "measured": row["measured_elements"],
                               "measured_bytes": row["measured_bytes"], "agrees": row["agrees"],
                               "differences": {k: list(v) for k, v in c.differences().items()}})
            series.append({"kernel": kernel, "causal": causal, "fixed": dict(fixed), "points": points})
    return {"grid": "quick" if quick else "full", "series": series}


def figure_caption(data: dict) -> str:
    """The traffic figure's caption, from its data: the sizes, what is measured and what derived, the agreement."""
    points = [(s, p) for s in data["series"] for p in s["points"]]
    bad = [(s, p) for s, p in points if not p["agrees"]]

    def sizes(kernel):
        fixed = FIGURE_SERIES[kernel][0]
        return ", ".join(f"{k} = {v}" for k, v in fixed.items())

    agreement = (f"All {len(points)} counts agree with the derivation tensor by tensor." if not bad else
                 f"{len(bad)} of {len(points)} counts DISAGREE with the derivation (crosses): " + "; ".join(
                     f"{s['kernel']}{' causal' if s['causal'] else ''} N = {p['n']}: "
                     + ", ".join(f"{k} derived {v[0]} measured {v[1]}" for k, v in p["differences"].items())
                     for s, p in bad) + ".")
    return (f"HBM elements (reads + writes, float32, batch 1, one head) that one call of each Triton kernel moves, "
            f"against N ({data['grid']} grid). Measured (markers): every lane of the kernel's masked loads and stores "
            "counted under Triton's interpreter (kernels.traffic.count_traffic). Derived (lines): proofs.traffic's "
            "loop counts for the same sizes. Forward (N queries = N keys; "
            f"{sizes('forward')}); backward (preprocess + dK/dV + dQ; {sizes('backward')}); split-KV decode "
            f"(N keys, partials + combine; {sizes('decode')}); causal dashed. {agreement} "
            "Claim memory-traffic proves the non-causal forward's count; the causal and backward counts are "
            "proofs.traffic's loop formulas, evaluated, not checked by the proof checker.")


if __name__ == "__main__":
    import sys

    for row in table_rows(grid_table(quick="--full" not in sys.argv)):
        print(row)
