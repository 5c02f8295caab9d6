"""Triton kernels of split-KV ("flash-decoding") attention.

Two launches. ``split_kv_partials`` gives each program one (block of query rows, batch and
KV head, key range) and writes the online-softmax state of its key range -- the running
max m, the rescaled sum l and the *unnormalised* accumulator acc -- to a float32
workspace. ``combine_partials`` then merges the states of all key ranges of a query row
with the rescaling identity of ``proofs.theorems.online_softmax.merge`` (claim
``online-softmax-merge``), taken with one common reference M = max_s m_s, which the
derivation allows ("for any merge reference M"):

    l = Σ_s e^{m_s - M} l_s,    o = Σ_s e^{m_s - M} acc_s / l,    lse = M + log l.

A key range that holds no visible key (empty, or masked by causality) leaves the identity
state (−∞, 0, 0): its weight e^{−∞ − M} is 0, so it drops out (claim
``online-softmax-monoid``), and nothing ever computes −∞ − (−∞).

The key loop is the unsplit forward's own (``kernels.flash.forward.attend_key_blocks``),
run over the split's key range.

GQA: the G = Hq / Hkv query heads that share a KV head are packed into one block of
G·Nq query rows, so each key/value tile is loaded once per group, not once per head.
In the flattened (B, Hq, Nq) row order those G·Nq rows are contiguous, which is the
workspace's row order.
"""
import triton
import triton.language as tl

from kernels.flash.forward import LN2, attend_key_blocks
from kernels.flash.tiles import round_to

# ln 2 as a compile-time constant of the kernels (the one LN2 of kernels.flash.forward): m is in base 2.
_LN2 = tl.constexpr(LN2)


@triton.jit
def split_kv_partials(
    Q, K, V, M_ws, L_ws, Acc_ws,
    stride_qb, stride_qh, stride_qm, stride_qd,
    stride_kb, stride_kh, stride_kn, stride_kd,
    stride_vb, stride_vh, stride_vn, stride_vd,
    qk_scale, N_Q, N_K, H_KV, chunk, num_splits,
    GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, HEAD_DIM_V: tl.constexpr, IS_CAUSAL: tl.constexpr,
    UPCAST: tl.constexpr, DOT_PRECISION: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
):
    pid_bh = tl.program_id(1)  # b · Hkv + KV head
    split = tl.program_id(2)
    b = (pid_bh // H_KV).to(tl.int64)  # 64-bit offsets: batch strides of long key ranges pass 2**31
    h_kv = (pid_bh % H_KV).to(tl.int64)

    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)  # (BLOCK_M,) packed row g · Nq + i
    row_ok = rows < GROUP * N_Q
    offs_m = rows % N_Q  # query index: what causality compares against
    h_q = h_kv * GROUP + rows // N_Q  # SDPA's GQA mapping: query head h reads KV head h // G
    offs_d = tl.arange(0, BLOCK_D)
    offs_dv = tl.arange(0, BLOCK_DV)
    # Packed rows are not one stride apart (head and query strides differ), so q is addressed per row.
    q = tl.load(Q + b * stride_qb + h_q[:, None] * stride_qh + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qd,
                mask=row_ok[:, None] & (offs_d[None, :] < HEAD_DIM), other=0.0)  # (BLOCK_M, BLOCK_D)
    if UPCAST:  # the interpreter's bfloat16 arithmetic is wrong; bfloat16 -> float32 is exact
        q = q.to(tl.float32)
    k_base = K + b * stride_kb + h_kv * stride_kh
    v_base = V + b * stride_vb + h_kv * stride_vh

    # This split's keys [lo, hi): whole tiles, so a tile never straddles two splits and the
    # only partial tile is the last one of the key range, which N_K masks.
    lo = split * chunk
    hi = tl.minimum(lo + chunk, N_K)
    if IS_CAUSAL:
        hi = tl.minimum(hi, N_Q)  # top-left causal: no row sees a key at or past Nq
        full_end = lo  # every tile may cut the diagonal: all masked (there are few: keys < Nq)
    else:
        full_end = tl.maximum(lo, tl.minimum(hi, N_K // BLOCK_N * BLOCK_N))

    # The state starts at the merge identity (−∞, 0, 0); a split with no visible key keeps it.
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_DV], dtype=tl.float32)
    # No attn_mask and no dropout here (flash_attention routes only calls without them): the
    # mask pointer, seed and dropout arguments are never read.
    acc, l_i, m_i = attend_key_blocks(acc, l_i, m_i, q, k_base, v_base, k_base, stride_kn, stride_kd, stride_vn,
                                      stride_vd, 0, 0, lo, full_end, qk_scale, 0, 0, 0.0, 1.0,
                                      offs_m, offs_d, offs_dv, N_Q, N_K, HEAD_DIM, HEAD_DIM_V,
                                      IS_CAUSAL, False, 0, False, UPCAST, DOT_PRECISION, BLOCK_N)
    acc, l_i, m_i = attend_key_blocks(acc, l_i, m_i, q, k_base, v_base, k_base, stride_kn, stride_kd, stride_vn,
                                      stride_vd, 0, 0, full_end, hi, qk_scale, 0, 0, 0.0, 1.0,
                                      offs_m, offs_d, offs_dv, N_Q, N_K, HEAD_DIM, HEAD_DIM_V,
                                      IS_CAUSAL, True, 0, False, UPCAST, DOT_PRECISION, BLOCK_N)

    # Workspace rows are (b, h_q, i) flattened; this group's G·Nq rows start at pid_bh·G·Nq.
    ws_row = pid_bh.to(tl.int64) * GROUP * N_Q + rows  # (BLOCK_M,) 64-bit: R·S·D can pass 2**31
    # m · ln 2: back from base 2 to natural-log units, the derivation's (claim logsumexp-merge).
    tl.store(M_ws + ws_row * num_splits + split, m_i * _LN2, mask=row_ok)
    tl.store(L_ws + ws_row * num_splits + split, l_i, mask=row_ok)
    tl.store(Acc_ws + (ws_row[:, None] * num_splits + split) * HEAD_DIM_V + offs_dv[None, :], acc,
             mask=row_ok[:, None] & (offs_dv[None, :] < HEAD_DIM_V))


@triton.jit
def combine_partials(
    M_ws, L_ws, Acc_ws, Out, Lse,
    stride_or, stride_od, n_rows, num_splits,
    HEAD_DIM: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)  # (BLOCK_R,) query rows (b, h_q, i)
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)  # one slice of the head dim
    state_ok = (rows[:, None] < n_rows) & (offs_s[None, :] < num_splits)  # (BLOCK_R, BLOCK_S)
    state = rows[:, None].to(tl.int64) * num_splits + offs_s[None, :]  # (BLOCK_R, BLOCK_S), 64-bit as above

    m = tl.load(M_ws + state, mask=state_ok, other=float("-inf"))  # (BLOCK_R, BLOCK_S)
    l = tl.load(L_ws + state, mask=state_ok, other=0.0)
    big_m = tl.max(m, 1)  # (BLOCK_R,) the merge reference M
    # A row whose splits are all empty (impossible through flash_decode: every row sees key 0)
    # would have M = −∞; rescale against 0 there so the identity states stay NaN-free.
    ref = tl.where(big_m == float("-inf"), 0.0, big_m)
    w = tl.exp(m - ref[:, None])  # (BLOCK_R, BLOCK_S) e^{m_s − M}; exactly 0 for an identity state
    l_sum = tl.sum(w * l, 1)  # (BLOCK_R,)
    acc_ok = state_ok[:, :, None] & (offs_d[None, None, :] < HEAD_DIM)
    acc = tl.load(Acc_ws + state[:, :, None] * HEAD_DIM + offs_d[None, None, :], mask=acc_ok,
                  other=0.0)  # (BLOCK_R, BLOCK_S, BLOCK_D)
    acc_sum = tl.sum(w[:, :, None] * acc, 1)  # (BLOCK_R, BLOCK_D)
    # l > 0 whenever some split saw a key; a row that saw none gets o = 0 and lse = −∞.
    seen = l_sum > 0.0
    l_safe = tl.where(seen, l_sum, 1.0)
    o = acc_sum / l_safe[:, None]  # (BLOCK_R, BLOCK_D)
    row_ok = rows < n_rows
    tl.store(Out + rows[:, None] * stride_or + offs_d[None, :] * stride_od, round_to(o, Out.dtype.element_ty),
             mask=row_ok[:, None] & (offs_d[None, :] < HEAD_DIM))
    if tl.program_id(1) == 0:  # one head-dim slice writes the lse
        lse = tl.where(seen, big_m + tl.log(l_safe), float("-inf"))  # (BLOCK_R,) natural log
        tl.store(Lse + rows, lse, mask=row_ok)
