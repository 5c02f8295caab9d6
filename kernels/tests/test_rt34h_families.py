"""Red team rt34h's five buggy SDPA implementations that escaped the default run, each now judged by a
problem every default run draws (generate.REGIMES' first draws): rank-5 inputs with is_causal
(rank-causal), B = 2 and causal with more than 4096 queries (long-queries), a bfloat16 output past
float16's 65504 (magnitude in float32 and bfloat16: v scaled), and dropout with p in (1e-4, 1e-3)
(tiny-dropout). For each: the red team's impl fails the drawn problem, torch's SDPA math backend passes it,
and the draw has the structure that shows the bug for several seeds.

The buggy impls below are copied from red team rt34h's impls.py (its query-chunked plain-math engine, cut
down to what these five bugs use; each ``bug_*`` turns on one bug, as there)."""
from __future__ import annotations

import math

import pytest
import torch

from kernels.harness import generate as gen
from kernels.harness import reference as ref
from kernels.harness.peers import sdpa_math
from kernels.harness.subject import Subject

ALL = frozenset({"causal", "gqa", "backward", "attn_mask", "dropout_p"})
SEEDS = range(8)
NEG = float("-inf")


# ----------------------------------------------------------------------------------------- red team rt34h
def _gqa(q, k, v, enable_gqa):
    hq, hk = q.shape[-3], k.shape[-3]
    if hq != hk:
        if not enable_gqa:
            if hk != 1:
                raise ValueError("Hq != Hkv: pass enable_gqa=True")
            return k, v
        g = hq // hk
        k, v = k.repeat_interleave(g, dim=-3), v.repeat_interleave(g, dim=-3)
    return k, v


def _mask_block(attn_mask, nq, nk, i0, i1, acc):
    m = attn_mask[None] if attn_mask.dim() == 1 else attn_mask
    m = m.expand(*m.shape[:-2], nq, nk)[..., i0:i1, :]
    if m.dtype == torch.bool:
        return torch.zeros(m.shape, dtype=acc).masked_fill(~m, NEG)
    return m.to(acc)


def _plain(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False,
           *, qc=1024, bug=None):
    """red team rt34h: query-chunked plain math in float32 (engine A of impls.py)."""
    k, v = _gqa(q, k, v, enable_gqa)
    dt, acc = q.dtype, torch.float32
    d = q.shape[-1]
    sc = scale if scale is not None else (1.0 / math.sqrt(d) if d > 0 else 1.0)
    qf, kf, vf = q.to(acc), k.to(acc), v.to(acc)
    nq, nk = q.shape[-2], k.shape[-2]
    if bug in ("causal_chunk_local_offset", "batch_gt1_chunked"):
        qc = 4096
    outs = []
    for i0 in range(0, max(nq, 1), qc):
        i1 = min(i0 + qc, nq)
        kk, vv = kf, vf
        if bug == "batch_gt1_chunked" and nq > qc and kf.dim() >= 4 and kf.shape[0] > 1:
            kk, vv = kf[:1], vf[:1]  # BUG: the multi-chunk path reads batch 0's K/V for every batch
        s = torch.matmul(qf[..., i0:i1, :], kk.transpose(-2, -1)) * sc
        if attn_mask is not None:
            s = s + _mask_block(attn_mask, nq, nk, i0, i1, acc)
        if is_causal:
            if bug == "causal_chunk_local_offset":
                qi = torch.arange(0, i1 - i0)  # BUG: chunk-local query index
            else:
                qi = torch.arange(i0, i1)
            s = s.masked_fill(torch.arange(nk)[None, :] > qi[:, None], NEG)
        m = s.amax(-1, keepdim=True) if nk else torch.zeros(s.shape[:-1] + (1,), dtype=acc)
        m = torch.where(m == NEG, torch.zeros_like(m), m)
        p = torch.exp(s - m)
        l = p.sum(-1, keepdim=True)
        w = p / torch.where(l == 0, torch.ones_like(l), l)
        if dropout_p > 0:
            if bug == "dropout_tiny_p_skipped" and dropout_p < 1e-3:
                pass  # BUG: "negligible" dropout treated as p = 0
            elif dropout_p >= 1.0:
                w = w * 0.0
            else:
                w = w * (torch.rand(w.shape, dtype=acc) >= dropout_p).to(acc) / (1.0 - dropout_p)
        outs.append(torch.matmul(w, vv))
    out = outs[0] if len(outs) == 1 else torch.cat(outs, dim=-2)
    if bug == "bf16_out_via_fp16" and dt == torch.bfloat16:
        return out.to(torch.float16).to(dt)  # BUG: bf16 epilogue goes through the fp16 store path
    return out.to(dt)


def _mk(bug):
    def impl(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        return _plain(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa, bug=bug)
    impl.__name__ = "bug_" + bug
    return impl


bug_batch_gt1_chunked = _mk("batch_gt1_chunked")
bug_causal_chunk_local_offset = _mk("causal_chunk_local_offset")
bug_bf16_out_via_fp16 = _mk("bf16_out_via_fp16")
bug_dropout_tiny_p_skipped = _mk("dropout_tiny_p_skipped")


def bug_rank5_drops_causal(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    # red team rt34h. BUG: the rank >= 5 path flattens leading dims and forgets is_causal
    if q.dim() >= 5 and q.dim() == k.dim() == v.dim():
        lead = q.shape[:-3]
        out = _plain(q.reshape(-1, *q.shape[-3:]), k.reshape(-1, *k.shape[-3:]) if k.shape[:-3] == lead
                     else k.expand(*lead, *k.shape[-3:]).reshape(-1, *k.shape[-3:]),
                     v.reshape(-1, *v.shape[-3:]) if v.shape[:-3] == lead
                     else v.expand(*lead, *v.shape[-3:]).reshape(-1, *v.shape[-3:]),
                     attn_mask, dropout_p, False, scale, enable_gqa)
        return out.reshape(*lead, *out.shape[-3:])
    return _plain(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


# ----------------------------------------------------------------------------------------- the catches
def _first(name: str, dtype: str, seed: int = 0) -> gen.Problem:
    return gen.draw(seed, gen.REGIMES.index(name), dtype, ALL)


def _fails(impl, problem):
    o, refused = gen.check_problem(impl, problem)
    return refused is None and gen.failed(o)


def _passes(impl, problem):
    o, refused = gen.check_problem(impl, problem)
    return refused is None and not gen.failed(o)


@pytest.mark.parametrize("dtype", ("float32", "float16", "bfloat16"))
def test_rank5_dropping_causal_fails_the_rank_causal_first_draw(dtype):
    problem = _first("rank-causal", dtype)
    assert _fails(bug_rank5_drops_causal, problem), problem.describe()
    assert _passes(sdpa_math, problem), problem.describe()
    for seed in SEEDS:
        p = _first("rank-causal", dtype, seed)
        assert p.rank == 5 and p.causal and p.mask is None and min(p.n_q, p.n_k) >= 2, p
    # later rank draws: causal about half the time, then without a mask
    later = [gen.draw(seed, i, dtype, ALL) for seed in range(4) for i in range(len(gen.REGIMES), 400)]
    ranked = [p for p in later if p.rank != 4 and p.relation != gen.GRADIENTS]  # (gradient problems take a mask
    # with is_causal: the pair SDPA math refuses only in the forward)
    assert any(p.causal for p in ranked) and any(not p.causal for p in ranked)
    assert all(p.mask is None for p in ranked if p.causal)


def test_query_chunks_of_4096_fail_the_long_square_first_draw():
    """B = 2 and causal past 4096 queries: batch 0's K/V read for batch 1 in the second chunk, and
    chunk-local query positions in it, both fail; SDPA math passes (float32; the other dtypes' draws
    have the same structure)."""
    problem = _first("long-queries", "float32")
    assert _fails(bug_batch_gt1_chunked, problem), problem.describe()
    assert _fails(bug_causal_chunk_local_offset, problem), problem.describe()
    assert _passes(sdpa_math, problem), problem.describe()
    for dtype in ("float32", "float16", "bfloat16"):
        for seed in SEEDS:
            p = _first("long-queries", dtype, seed)
            assert p.batch == 2 and p.causal and gen.LONG_QUERIES_LENGTHS[0] <= p.n_q <= gen.LONG_QUERIES_LENGTHS[1] and 128 < p.n_k <= 256 and p.mask is None, p
            assert p.relation == gen.AGREEMENT and p.layout == "contiguous" and p.q_heads == p.kv_heads == 1, p


def _largest_output(problem) -> tuple[float, float]:
    """(max |v|, max |float64 output|) of the problem as check_problem poses it."""
    s = Subject(sdpa_math, problem.case(), getattr(torch, problem.dtype), "cpu", problem.seed)
    gen._near_the_top(s)
    m = gen._mask(s, problem)
    gen._large_outputs(s, problem, m)
    out = ref.attention64(s.q, s.k, s.v, **s.kwargs(attn_mask=m))
    return float(s.v.double().abs().max()), float(out[torch.isfinite(out)].abs().max())


def test_a_bfloat16_output_through_float16_fails_the_magnitude_first_draw():
    problem = _first("magnitude", "bfloat16")
    assert _fails(bug_bf16_out_via_fp16, problem), problem.describe()
    assert _passes(sdpa_math, problem), problem.describe()
    for seed in SEEDS:
        for dtype in ("bfloat16", "float32"):
            p = _first("magnitude", dtype, seed)
            largest_v, largest_out = _largest_output(p)
            assert largest_v > 65504 and 2 ** 19 < largest_out <= 2 ** 20, (p, largest_v, largest_out)
            if seed < 1:  # the relative rule accepts SDPA math on outputs of size 2^20
                assert _passes(sdpa_math, p), p.describe()
    p = _first("magnitude", "float16")  # float16's range ends at 65504: its q is near the top instead
    assert _largest_output(p)[0] < 65504


def test_tiny_dropout_skipped_fails_the_tiny_dropout_first_draw():
    from kernels.harness import dropout as drop

    problem = _first("tiny-dropout", "float32")
    assert _fails(bug_dropout_tiny_p_skipped, problem), problem.describe()
    assert _passes(sdpa_math, problem), problem.describe()
    for dtype in ("float32", "float16", "bfloat16"):
        for seed in SEEDS:
            p = _first("tiny-dropout", dtype, seed)
            assert p.relation == gen.DROPOUT_LAW and 1e-4 <= p.dropout_p < 1e-3 and p.mask is None, p
            expected = p.batch * p.q_heads * p.n_q * p.n_k * p.dropout_p
            assert expected >= 20 and p.n_k > 2048, p
            # nothing dropped: z = sqrt(n·p/(1-p)) past the kept-fraction test's threshold
            assert math.sqrt(expected / (1 - p.dropout_p)) > drop._z(), p
