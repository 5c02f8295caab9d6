"""flash_decode against the float64 golden value, the unsplit kernel and the tolerance rule of
kernels.harness.tolerance, for every split count, including splits that hold only masked keys.

Interpreted, every tile pair costs milliseconds: the shapes are a few tiles long, chosen so
that the split counts 1..S cut them every way (whole tiles, empty trailing splits, splits
past a causal diagonal).
"""
import functools
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kernels.decode import auto_split, flash_decode, num_splits_for, should_split
from kernels.decode.api import block_n, combine, partials, workspace
from kernels.flash import flash_attention
from kernels.harness import reference, tolerance

DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def make(b, hq, hkv, nq, nk, d, dtype, seed=0, device="cpu"):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(b, h, n, d, generator=g).to(device=device, dtype=dtype) for h, n in ((hq, nq), (hkv, nk), (hkv, nk))]


def assert_golden(out, q, k, v, **kw):
    """The harness's rule: error vs float64 <= 2 × the plain same-precision reference's + floor."""
    golden = reference.attention64(q, k, v, **kw)
    ref_err = tolerance.max_abs_error(reference.attention(q, k, v, **kw), golden)
    err = tolerance.max_abs_error(out, golden)
    assert err <= tolerance.bound(q.dtype, ref_err, golden), (err, ref_err)
    return err


def lse_of(q, k, dtype, *, is_causal=False, enable_gqa=False):
    """torch.logsumexp of the scaled scores, computed in ``dtype``."""
    q, k = q.to(dtype), (reference.repeat_kv(k, q.shape[1]) if enable_gqa else k).to(dtype)
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])  # (B, Hq, Nq, Nk)
    if is_causal:
        s = s.masked_fill(~reference.causal_mask(q.shape[2], k.shape[2]), float("-inf"))
    return s.logsumexp(-1)  # (B, Hq, Nq)


def lse_bound(q, k, **kw):
    """The lse is float32 whatever the inputs: the same rule, with a float32 plain reference."""
    golden = lse_of(q, k, torch.float64, **kw)
    return golden, tolerance.bound(torch.float32, tolerance.max_abs_error(lse_of(q, k, torch.float32, **kw), golden),
                                   golden)


# Nk = 200 is 4 key tiles: splits 1-4 cut it into whole tiles, 5 and 6 leave empty splits;
# causal with Nq = 3 leaves every split but the first with masked keys only.
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_every_split_count_matches_golden_and_unsplit_kernel(dtype, causal):
    q, k, v = make(1, 4, 2, 3, 200, 48, dtype)
    kw = dict(is_causal=causal, enable_gqa=True)
    unsplit, unsplit_lse = flash_attention(q, k, v, return_lse=True, **kw)
    golden = reference.attention64(q, k, v, **kw)
    allowed = tolerance.bound(dtype, tolerance.max_abs_error(reference.attention(q, k, v, **kw), golden), golden)
    golden_lse, lse_allowed = lse_bound(q, k, **kw)
    for splits in range(1, 7):
        out, lse = flash_decode(q, k, v, num_splits=splits, return_lse=True, **kw)
        assert_golden(out, q, k, v, **kw)
        assert tolerance.max_abs_error(lse, golden_lse) <= lse_allowed
        if splits == 1:  # one split runs the unsplit loop, and the combine multiplies by e^0 = 1
            assert torch.equal(out, unsplit)
        # Each within the bound of the golden value, so within twice the bound of each other.
        assert tolerance.max_abs_error(out, unsplit) <= 2 * allowed
        assert tolerance.max_abs_error(lse, unsplit_lse) <= 2 * lse_allowed


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_rows_with_no_visible_key_inside_a_running_split(dtype):
    # Nq = 80, Nk = 100, 2 splits of 64 keys: causal rows 0-63 see nothing in split 2, while
    # rows 64-79 of the same program do, so the loop runs over rows whose state stays (−∞, 0, 0).
    q, k, v = make(1, 1, 1, 80, 100, 32, dtype, seed=1)
    out = flash_decode(q, k, v, is_causal=True, num_splits=2)
    assert_golden(out, q, k, v, is_causal=True)


@pytest.mark.parametrize("shape", [(2, 4, 1, 5, 130, 64), (1, 3, 3, 2, 70, 32), (1, 4, 2, 16, 90, 80)],
                         ids=["mqa", "mha", "gqa-16q-d80"])
@pytest.mark.parametrize("splits", [1, 2, 3])
def test_grouped_heads(shape, splits):
    q, k, v = make(*shape, torch.float16, seed=2)
    gqa = shape[1] != shape[2]
    assert_golden(flash_decode(q, k, v, enable_gqa=gqa, num_splits=splits), q, k, v, enable_gqa=gqa)
    assert_golden(flash_decode(q, k, v, enable_gqa=gqa, is_causal=True, num_splits=splits), q, k, v,
                  enable_gqa=gqa, is_causal=True)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_one_query_long_keys(dtype):
    q, k, v = make(1, 2, 2, 1, 1000, 64, dtype, seed=3)  # 16 tiles, the last partial
    for splits in (1, 4, 7):  # 7: six splits of 3 tiles, then an empty one
        assert_golden(flash_decode(q, k, v, num_splits=splits), q, k, v)


@pytest.mark.parametrize("dv", [24, 128])
def test_value_head_dim_differs_from_query_head_dim(dv):
    gen = torch.Generator().manual_seed(dv)
    q, k = (torch.randn(1, 4, n, 48, generator=gen).half() for n in (3, 200))
    v = torch.randn(1, 2, 200, dv, generator=gen).half()
    k = k[:, :2]
    for splits in (1, 3):
        out = flash_decode(q, k, v, enable_gqa=True, num_splits=splits)
        assert out.shape == (1, 4, 3, dv)
        assert_golden(out, q, k, v, enable_gqa=True)


def test_default_splits_on_cpu_are_one():
    q, k, v = make(1, 2, 2, 1, 150, 32, torch.float32, seed=4)
    assert torch.equal(flash_decode(q, k, v), flash_decode(q, k, v, num_splits=1))


def guarded(shape, guard=37, device="cpu"):
    """A NaN buffer with `guard` elements either side of a view of `shape`."""
    buf = torch.full((math.prod(shape) + 2 * guard,), float("nan"), device=device)
    return buf, buf[guard:-guard].view(shape)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_out_of_bounds_safety(causal):
    b, hq, hkv, nq, nk, d, splits = 1, 4, 2, 3, 150, 48, 4
    # Inputs: views into NaN-filled buffers padded in keys and head dim, q in (B, N, H, D)
    # layout: a read past a row, a key or a head-dim column brings a NaN into the output.
    q = torch.full((b, nq, hq, 64), float("nan"))[..., :d].transpose(1, 2)
    kbuf, vbuf = (torch.full((b, hkv, nk + 64, 64), float("nan")) for _ in range(2))
    k, v = kbuf[:, :, :nk, :d], vbuf[:, :, :nk, :d]
    for t, src in zip((q, k, v), make(b, hq, hkv, nq, nk, d, torch.float32, seed=5)):
        t.copy_(src)
    rows = b * hq * nq
    (mb, m_ws), (lb, l_ws), (ab, acc_ws) = (guarded(s) for s in ((rows, splits), (rows, splits), (rows, splits, d)))
    partials(q, k, v, m_ws, l_ws, acc_ws, is_causal=causal, scale=d ** -0.5, num_splits=splits)
    # Every (row, split) state is written, empty splits included: none is left NaN.
    assert not any(t.isnan().any() for t in (m_ws, l_ws, acc_ws))
    assert (m_ws[:, 3] == float("-inf")).all() and (l_ws[:, 3] == 0).all()  # split 4 holds no key
    obuf = torch.full((rows, d + 16), float("nan"))  # row stride d + 16: a padded output layout
    out = obuf[:, :d]
    lbuf, lse = guarded((rows,))
    combine(m_ws, l_ws, acc_ws, out, lse)
    for buf in (mb, lb, ab, lbuf):  # guard regions untouched
        assert buf[:37].isnan().all() and buf[-37:].isnan().all()
    assert obuf[:, d:].isnan().all()
    assert_golden(out.view(b, hq, nq, d), q, k, v, is_causal=causal, enable_gqa=True)


def test_gradients_are_refused_but_no_grad_works():
    q, k, v = make(1, 2, 2, 1, 64, 16, torch.float32)
    q.requires_grad_(True)
    with pytest.raises(NotImplementedError, match="forward-only"):
        flash_decode(q, k, v)
    with torch.no_grad():
        assert_golden(flash_decode(q, k, v, num_splits=2), q.detach(), k, v)


def _bad(**over):
    q, k, v = make(1, 4, 2, 2, 20, 16, torch.float32)
    args = dict(q=q, k=k, v=v, enable_gqa=True) | over
    return lambda: flash_decode(args.pop("q"), args.pop("k"), args.pop("v"), **args)


@pytest.mark.parametrize("call, error, name", [
    (_bad(num_splits=0), ValueError, "num_splits"),
    (_bad(num_splits=2.0), TypeError, "num_splits"),
    (_bad(num_splits=True), TypeError, "num_splits"),
    (_bad(return_lse="yes"), TypeError, "return_lse"),
    (_bad(is_causal=1), TypeError, "is_causal"),
    (_bad(scale="0.1"), TypeError, "scale"),
    (_bad(enable_gqa=False), ValueError, "enable_gqa"),
    (_bad(q=torch.randn(4, 2, 16)), ValueError, "q"),
    (_bad(k=torch.ones(1, 2, 20, 16, dtype=torch.int32)), TypeError, "k"),
    (_bad(v=torch.randn(1, 2, 20, 16, dtype=torch.float16)), TypeError, "v"),
    (_bad(k=torch.randn(1, 3, 20, 16), v=torch.randn(1, 3, 20, 16)), ValueError, "multiple"),
    (_bad(k=torch.randn(1, 2, 0, 16), v=torch.randn(1, 2, 0, 16)), ValueError, "k"),
    (_bad(q=torch.randn(1, 4, 2, 300), k=torch.randn(1, 2, 20, 300), v=torch.randn(1, 2, 20, 300)), ValueError,
     "head dim"),
    (_bad(v=torch.randn(1, 2, 21, 16)), ValueError, "v"),
    (_bad(k=[[1.0]]), TypeError, "k"),
], ids=lambda x: x if isinstance(x, str) else "")
def test_bad_input_names_the_argument(call, error, name):
    with pytest.raises(error, match=name):
        call()


def test_num_splits_heuristic():
    h200 = 132
    # Decoding on a GPU: 8 KV heads × 2 batches = 16 programs unsplit; split to fill two waves.
    assert num_splits_for(1, 32768, batch=2, q_heads=32, kv_heads=8, sms=h200) == math.ceil(2 * h200 / 16)
    # Short key ranges keep at least 4 tiles per split.
    assert num_splits_for(1, 1024, batch=2, q_heads=32, kv_heads=8, sms=h200) == 1024 // 64 // 4
    assert num_splits_for(1, 128, sms=h200) == 1  # two tiles: nothing to gain
    assert num_splits_for(17, 32768, sms=h200) == 1  # past the decoding regime
    assert num_splits_for(1, 32768, is_causal=True, sms=h200) == 1  # top-left causal: one visible key
    assert num_splits_for(1, 32768, batch=64, q_heads=32, kv_heads=8, sms=h200) == 1  # GPU already full
    assert num_splits_for(1, 10 ** 7, sms=h200) == 128  # capped
    assert num_splits_for(1, 32768, sms=None) == 1  # the interpreter: programs run one by one
    assert block_n(256, torch.float32) == 32 and block_n(128, torch.float32) == 64


def test_should_split_and_its_switch():
    assert should_split(1, 32768, q_heads=32, kv_heads=8, sms=132)
    assert not should_split(1, 32768, q_heads=32, kv_heads=8)  # CPU: never
    assert not should_split(1024, 1024, sms=132)
    with auto_split(False):
        assert not should_split(1, 32768, q_heads=32, kv_heads=8, sms=132)
    assert should_split(1, 32768, q_heads=32, kv_heads=8, sms=132)


def test_workspace_helper_shapes():
    m_ws, l_ws, acc_ws = workspace(6, 3, 5, "cpu", fill=float("nan"))
    assert (m_ws.shape, l_ws.shape, acc_ws.shape) == ((6, 3), (6, 3), (6, 3, 5)) and acc_ws.isnan().all()


def test_passes_verify_attention_forward_invariants():
    # The harness's forward invariants (agreement, convex hull, shifts, permutations, causality,
    # scale, GQA, block merge) on decoding shapes, with three splits so that the combine works.
    from kernels.harness import verify_attention
    from kernels.harness.cases import NEGATIVE, Case

    cases = [Case("decode-gqa", 1, 4, 2, 1, 150, 64, False),  # one query, three splits of one tile
             Case("decode-mqa-causal-negative", 1, 2, 1, 4, 90, 16, True, NEGATIVE, 3e4)]  # splits 2, 3 masked
    report = verify_attention(functools.partial(flash_decode, num_splits=3), backward=False, cases=cases)
    failed = [c for c in report.checks if not c.passed]
    assert report.checks and not failed, failed


# -- compiled on a GPU, at decoding sizes ------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(2, 32, 8, 1, 32768, 128), (1, 8, 2, 16, 5000, 80), (1, 4, 4, 3, 4099, 256)],
                         ids=["gqa-1x32768-d128", "gqa-16x5000-d80", "3x4099-d256"])
def test_gpu_matches_golden_and_unsplit(dtype, shape):
    q, k, v = make(*shape, dtype, seed=sum(shape), device="cuda")
    gqa = shape[1] != shape[2]
    for causal in (False, True):
        kw = dict(is_causal=causal, enable_gqa=gqa)
        unsplit = flash_attention(q, k, v, **kw)
        golden = reference.attention64(q, k, v, **kw)
        allowed = tolerance.bound(dtype, tolerance.max_abs_error(reference.attention(q, k, v, **kw), golden), golden)
        for splits in (None, 1, 7):  # None: the heuristic's count for this GPU
            out = flash_decode(q, k, v, num_splits=splits, **kw)
            assert_golden(out, q, k, v, **kw)
            # Not bitwise here: autotuning may give the unsplit kernel another key-tile width.
            assert tolerance.max_abs_error(out, unsplit) <= 2 * allowed


@pytest.mark.gpu
def test_gpu_workspace_and_outputs_stay_in_bounds():
    b, hq, hkv, nq, nk, d, splits = 2, 8, 2, 5, 3000, 96, 9
    q, k, v = make(b, hq, hkv, nq, nk, d, torch.bfloat16, seed=6, device="cuda")
    rows = b * hq * nq
    (mb, m_ws), (lb, l_ws), (ab, acc_ws) = (guarded(s, device="cuda")
                                            for s in ((rows, splits), (rows, splits), (rows, splits, d)))
    partials(q, k, v, m_ws, l_ws, acc_ws, is_causal=False, scale=d ** -0.5, num_splits=splits)
    assert not any(t.isnan().any() for t in (m_ws, l_ws, acc_ws))
    (ob, out), (lbuf, lse) = guarded((rows, d), device="cuda"), guarded((rows,), device="cuda")
    combine(m_ws, l_ws, acc_ws, out, lse)
    for buf in (mb, lb, ab, ob, lbuf):
        assert buf[:37].isnan().all() and buf[-37:].isnan().all()
    assert_golden(out.view(b, hq, nq, d).to(torch.bfloat16), q, k, v, enable_gqa=True)


@pytest.mark.gpu
def test_gpu_dispatch_splits_decoding_shapes():
    assert should_split(1, 32768, batch=2, q_heads=32, kv_heads=8, device="cuda")
    assert not should_split(4096, 4096, batch=2, q_heads=32, kv_heads=8, device="cuda")


# The sm_90 compile test of both decoding kernels lives with every other kernel's in test_flash_compile.py.
