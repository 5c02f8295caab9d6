"""When splitting the key range pays, and into how many splits.

A decoding step has few query rows, so the unsplit kernel launches only
⌈G·Nq / BLOCK_M⌉ · B · Hkv programs, each walking all Nk keys: most of a GPU's
streaming multiprocessors sit idle. Splitting the keys S ways multiplies the programs
by S at the price of one small combine launch. Under Triton's interpreter the programs
run one after another, so splitting never pays there and the answer is always 1.
"""
from __future__ import annotations

import contextlib
import math

MAX_QUERIES = 16  # flash-decoding's regime: beyond this the query tiles alone fill the GPU
BLOCK_M = 16  # query rows per program (tl.dot's smallest M on a GPU)
BLOCK_N = 64  # keys per tile
MIN_TILES_PER_SPLIT = 4  # below this a split's fixed costs outweigh its keys
MAX_SPLITS = 128
WAVES = 2  # aim for about two programs per streaming multiprocessor

_auto = True


@contextlib.contextmanager
def auto_split(enabled: bool):
    """Switch the automatic routing of ``should_split`` on or off (the benchmark times the
    unsplit kernel this way)."""
    global _auto
    previous, _auto = _auto, bool(enabled)
    try:
        yield
    finally:
        _auto = previous


def sm_count(device) -> int | None:
    """Streaming multiprocessors of a CUDA device; None for anything else (the interpreter)."""
    import torch

    device = torch.device(device)
    if device.type != "cuda":
        return None
    return torch.cuda.get_device_properties(device).multi_processor_count


def num_splits_for(nq: int, nk: int, *, batch: int = 1, q_heads: int = 1, kv_heads: int = 1,
                   is_causal: bool = False, sms: int | None = None, block_n: int = BLOCK_N) -> int:
    """Splits of the key range that fill about ``WAVES`` waves of ``sms`` multiprocessors,
    each split keeping at least ``MIN_TILES_PER_SPLIT`` key tiles. 1 when ``sms`` is None."""
    if sms is None or nq > MAX_QUERIES:
        return 1
    visible = min(nk, nq) if is_causal else nk  # top-left causal: no row sees a key at or past Nq
    programs = math.ceil(q_heads // kv_heads * nq / BLOCK_M) * batch * kv_heads
    want = math.ceil(WAVES * sms / programs)
    return max(1, min(want, math.ceil(visible / block_n) // MIN_TILES_PER_SPLIT, MAX_SPLITS))


def should_split(nq: int, nk: int, *, batch: int = 1, q_heads: int = 1, kv_heads: int = 1,
                 is_causal: bool = False, device="cpu", sms: int | None = None) -> bool:
    """True when ``flash_decode`` should serve a forward call instead of the unsplit kernel.
    ``sms`` defaults to the device's multiprocessor count (None on CPU: never split)."""
    sms = sm_count(device) if sms is None else sms
    return _auto and num_splits_for(nq, nk, batch=batch, q_heads=q_heads, kv_heads=kv_heads,
                                    is_causal=is_causal, sms=sms) > 1
