"""FlashAttention backward: preprocess, then dK/dV per key block and dQ per query block.

The probabilities are recomputed from the saved lse, p = exp(s - lse) (claim
``logsumexp-merge``: lse = m + log l normalises the whole row at once), in natural
units since the saved lse is natural. With dP = dO Vᵀ and the softmax Jacobian (claim ``softmax-jacobian``),
dS = P ∘ (dP − D) where D = rowsum(dO ∘ O) − dlse; dlse is the gradient flowing into
the returned lse (∂lse/∂s = p), zero when lse is not used.

GQA: a dK/dV program owns one KV head and loops over the query heads of its group, so
the group sum happens in registers, with no atomics and no extra reduction pass.
"""
import torch
import triton
import triton.language as tl

from kernels.flash import runtime
from kernels.flash.forward import head_block
from kernels.flash.tiles import key_bounds, load_row, load_tile, query_bounds, store_tile, visible


@triton.jit
def _preprocess_kernel(O, DO, DLSE, DELTA,
                       stride_ob, stride_oh, stride_om, stride_od,
                       stride_dob, stride_doh, stride_dom, stride_dod,
                       H_Q, N_Q, HEAD_DIM,
                       HAS_DLSE: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr):
    """DELTA (B, Hq, Nq) contiguous float32 = rowsum(dO ∘ O) − dlse."""
    start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    b = (bh // H_Q).to(tl.int64)
    h = (bh % H_Q).to(tl.int64)
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    o = load_tile(O + b * stride_ob + h * stride_oh, offs_m, offs_d, stride_om, stride_od, N_Q, HEAD_DIM,
                  True)  # (BLOCK_M, BLOCK_D) float32
    do = load_tile(DO + b * stride_dob + h * stride_doh, offs_m, offs_d, stride_dom, stride_dod, N_Q, HEAD_DIM,
                   True)  # (BLOCK_M, BLOCK_D) float32
    delta = tl.sum(o * do, 1)  # (BLOCK_M,)
    row = bh.to(tl.int64) * N_Q + offs_m
    if HAS_DLSE:
        delta -= tl.load(DLSE + row, mask=offs_m < N_Q, other=0.0)
    tl.store(DELTA + row, delta, mask=offs_m < N_Q)


@triton.jit
def _row_lse(lse_base, offs_m, stride_lm, N_Q):
    """The saved natural lse; a row with no visible key (lse = −∞) maps to 0 so that
    exp(−∞ − lse) is 0, never −∞ − (−∞)."""
    lse = load_row(lse_base, offs_m, stride_lm, N_Q)
    return tl.where(lse == float("-inf"), 0.0, lse)


@triton.jit
def _probabilities(qk, lse, sm_scale, seen, MASKED: tl.constexpr):
    """p = exp(scale·qk − lse), its argument rounded once (fma). Natural units: the saved
    lse is natural, and converting it to base 2 would round it again. Every p <= 1 since
    lse >= each score; the clamp keeps that true when roundings of huge scores (|s| beyond
    2**24, where one float32 step exceeds 1) would say otherwise, so p never overflows."""
    arg = tl.minimum(tl.fma(qk, sm_scale, -lse), 0.0)
    if MASKED:
        arg = tl.where(seen, arg, float("-inf"))
    return tl.exp(arg)


@triton.jit
def _dkdv_query_blocks(dk, dv, k, v, q_base, do_base, lse_base, delta_base,
                       stride_qm, stride_qd, stride_dom, stride_dod, stride_lm,
                       lo, hi, sm_scale, offs_n, offs_d, N_Q, N_K, HEAD_DIM,
                       IS_CAUSAL: tl.constexpr, MASKED: tl.constexpr, UPCAST: tl.constexpr,
                       DOT_PRECISION: tl.constexpr, BLOCK_M: tl.constexpr):
    """Accumulate one query head's query blocks [lo, hi) into dK, dV of a key block (key-major tiles)."""
    for start_m in range(lo, hi, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)
        q_t = load_tile(q_base, offs_d, offs_m, stride_qd, stride_qm, HEAD_DIM, N_Q, UPCAST)  # (BLOCK_D, BLOCK_M)
        do = load_tile(do_base, offs_m, offs_d, stride_dom, stride_dod, N_Q, HEAD_DIM, UPCAST)  # (BLOCK_M, BLOCK_D)
        lse = _row_lse(lse_base, offs_m, stride_lm, N_Q)  # (BLOCK_M,)
        delta = load_row(delta_base, offs_m, 1, N_Q)  # (BLOCK_M,)
        qk_t = tl.dot(k, q_t, input_precision=DOT_PRECISION)  # (BLOCK_N, BLOCK_M), unscaled
        seen = visible(offs_m[None, :], offs_n[:, None], N_Q, N_K, IS_CAUSAL)
        p_t = _probabilities(qk_t, lse[None, :], sm_scale, seen, MASKED)  # (BLOCK_N, BLOCK_M)
        dv += tl.dot(p_t.to(do.dtype), do, input_precision=DOT_PRECISION)  # (BLOCK_N, BLOCK_D)
        dp_t = tl.dot(v, tl.trans(do), input_precision=DOT_PRECISION)  # (BLOCK_N, BLOCK_M)
        ds_t = p_t * (dp_t - delta[None, :])  # (BLOCK_N, BLOCK_M)
        dk += tl.dot(ds_t.to(q_t.dtype), tl.trans(q_t), input_precision=DOT_PRECISION)  # (BLOCK_N, BLOCK_D)
    return dk, dv


@triton.autotune(configs=runtime.tile_configs("backward"), key=["N_Q", "N_K", "BLOCK_D", "IS_CAUSAL"],
                 prune_configs_by={"early_config_prune": runtime.prune_for_head_dim})
@triton.jit
def _dkdv_kernel(Q, K, V, DO, LSE, DELTA, DK, DV, sm_scale,
                 stride_qb, stride_qh, stride_qm, stride_qd,
                 stride_kb, stride_kh, stride_kn, stride_kd,
                 stride_vb, stride_vh, stride_vn, stride_vd,
                 stride_dob, stride_doh, stride_dom, stride_dod,
                 stride_lb, stride_lh, stride_lm,
                 stride_dkb, stride_dkh, stride_dkn, stride_dkd,
                 stride_dvb, stride_dvh, stride_dvn, stride_dvd,
                 H_Q, H_KV, GROUP, N_Q, N_K, HEAD_DIM,
                 IS_CAUSAL: tl.constexpr, UPCAST: tl.constexpr, DOT_PRECISION: tl.constexpr,
                 BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_n = tl.program_id(0) * BLOCK_N
    bh = tl.program_id(1)
    b = (bh // H_KV).to(tl.int64)
    h_kv = (bh % H_KV).to(tl.int64)
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    k = load_tile(K + b * stride_kb + h_kv * stride_kh, offs_n, offs_d, stride_kn, stride_kd, N_K, HEAD_DIM,
                  UPCAST)  # (BLOCK_N, BLOCK_D)
    v = load_tile(V + b * stride_vb + h_kv * stride_vh, offs_n, offs_d, stride_vn, stride_vd, N_K, HEAD_DIM,
                  UPCAST)  # (BLOCK_N, BLOCK_D)
    dk = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)

    lo, full_lo, full_hi, hi = query_bounds(start_n, N_Q, N_K, IS_CAUSAL, BLOCK_M, BLOCK_N)
    for g in range(GROUP):  # the query heads that share this KV head: their gradients sum
        h = h_kv * GROUP + g
        q_base = Q + b * stride_qb + h * stride_qh
        do_base = DO + b * stride_dob + h * stride_doh
        lse_base = LSE + b * stride_lb + h * stride_lh
        delta_base = DELTA + (b * H_Q + h) * N_Q
        # causal diagonal (masked), interior (unmasked), query tail (masked)
        dk, dv = _dkdv_query_blocks(dk, dv, k, v, q_base, do_base, lse_base, delta_base,
                                    stride_qm, stride_qd, stride_dom, stride_dod, stride_lm,
                                    lo, full_lo, sm_scale, offs_n, offs_d, N_Q, N_K, HEAD_DIM,
                                    IS_CAUSAL, True, UPCAST, DOT_PRECISION, BLOCK_M)
        dk, dv = _dkdv_query_blocks(dk, dv, k, v, q_base, do_base, lse_base, delta_base,
                                    stride_qm, stride_qd, stride_dom, stride_dod, stride_lm,
                                    full_lo, full_hi, sm_scale, offs_n, offs_d, N_Q, N_K, HEAD_DIM,
                                    IS_CAUSAL, False, UPCAST, DOT_PRECISION, BLOCK_M)
        dk, dv = _dkdv_query_blocks(dk, dv, k, v, q_base, do_base, lse_base, delta_base,
                                    stride_qm, stride_qd, stride_dom, stride_dod, stride_lm,
                                    full_hi, hi, sm_scale, offs_n, offs_d, N_Q, N_K, HEAD_DIM,
                                    IS_CAUSAL, True, UPCAST, DOT_PRECISION, BLOCK_M)

    # s = scale · q kᵀ, so dK carries the natural scale once (dV does not).
    store_tile(DK + b * stride_dkb + h_kv * stride_dkh, dk * sm_scale, offs_n, offs_d, stride_dkn, stride_dkd,
               N_K, HEAD_DIM)
    store_tile(DV + b * stride_dvb + h_kv * stride_dvh, dv, offs_n, offs_d, stride_dvn, stride_dvd, N_K, HEAD_DIM)


@triton.jit
def _dq_key_blocks(dq, q, do, lse, delta, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
                   lo, hi, sm_scale, offs_m, offs_d, N_Q, N_K, HEAD_DIM,
                   IS_CAUSAL: tl.constexpr, MASKED: tl.constexpr, UPCAST: tl.constexpr,
                   DOT_PRECISION: tl.constexpr, BLOCK_N: tl.constexpr):
    """Accumulate key blocks [lo, hi) into dQ of a query block."""
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k_t = load_tile(k_base, offs_d, offs_n, stride_kd, stride_kn, HEAD_DIM, N_K, UPCAST)  # (BLOCK_D, BLOCK_N)
        v_t = load_tile(v_base, offs_d, offs_n, stride_vd, stride_vn, HEAD_DIM, N_K, UPCAST)  # (BLOCK_D, BLOCK_N)
        qk = tl.dot(q, k_t, input_precision=DOT_PRECISION)  # (BLOCK_M, BLOCK_N), unscaled
        seen = visible(offs_m[:, None], offs_n[None, :], N_Q, N_K, IS_CAUSAL)
        p = _probabilities(qk, lse[:, None], sm_scale, seen, MASKED)  # (BLOCK_M, BLOCK_N)
        dp = tl.dot(do, v_t, input_precision=DOT_PRECISION)  # (BLOCK_M, BLOCK_N)
        ds = p * (dp - delta[:, None])  # (BLOCK_M, BLOCK_N)
        dq += tl.dot(ds.to(k_t.dtype), tl.trans(k_t), input_precision=DOT_PRECISION)  # (BLOCK_M, BLOCK_D)
    return dq


@triton.autotune(configs=runtime.tile_configs("backward"), key=["N_Q", "N_K", "BLOCK_D", "IS_CAUSAL"],
                 prune_configs_by={"early_config_prune": runtime.prune_for_head_dim})
@triton.jit
def _dq_kernel(Q, K, V, DO, LSE, DELTA, DQ, sm_scale,
               stride_qb, stride_qh, stride_qm, stride_qd,
               stride_kb, stride_kh, stride_kn, stride_kd,
               stride_vb, stride_vh, stride_vn, stride_vd,
               stride_dob, stride_doh, stride_dom, stride_dod,
               stride_lb, stride_lh, stride_lm,
               stride_dqb, stride_dqh, stride_dqm, stride_dqd,
               H_Q, GROUP, N_Q, N_K, HEAD_DIM,
               IS_CAUSAL: tl.constexpr, UPCAST: tl.constexpr, DOT_PRECISION: tl.constexpr,
               BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    b = (bh // H_Q).to(tl.int64)
    h = (bh % H_Q).to(tl.int64)
    h_kv = h // GROUP
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    q = load_tile(Q + b * stride_qb + h * stride_qh, offs_m, offs_d, stride_qm, stride_qd, N_Q, HEAD_DIM,
                  UPCAST)  # (BLOCK_M, BLOCK_D)
    do = load_tile(DO + b * stride_dob + h * stride_doh, offs_m, offs_d, stride_dom, stride_dod, N_Q, HEAD_DIM,
                   UPCAST)  # (BLOCK_M, BLOCK_D)
    lse = _row_lse(LSE + b * stride_lb + h * stride_lh, offs_m, stride_lm, N_Q)  # (BLOCK_M,)
    delta = load_row(DELTA + bh.to(tl.int64) * N_Q, offs_m, 1, N_Q)  # (BLOCK_M,)
    k_base = K + b * stride_kb + h_kv * stride_kh
    v_base = V + b * stride_vb + h_kv * stride_vh
    dq = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)

    full_end, hi = key_bounds(start_m, N_Q, N_K, IS_CAUSAL, BLOCK_M, BLOCK_N)
    dq = _dq_key_blocks(dq, q, do, lse, delta, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
                        0, full_end, sm_scale, offs_m, offs_d, N_Q, N_K, HEAD_DIM,
                        IS_CAUSAL, False, UPCAST, DOT_PRECISION, BLOCK_N)
    dq = _dq_key_blocks(dq, q, do, lse, delta, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
                        full_end, hi, sm_scale, offs_m, offs_d, N_Q, N_K, HEAD_DIM,
                        IS_CAUSAL, True, UPCAST, DOT_PRECISION, BLOCK_N)
    store_tile(DQ + b * stride_dqb + h * stride_dqh, dq * sm_scale, offs_m, offs_d, stride_dqm, stride_dqd,
               N_Q, HEAD_DIM)


_PREPROCESS_BLOCK_M = 64


def attention_backward(q, k, v, out, lse, grad_out, grad_lse, dq, dk, dv, *, scale: float, is_causal: bool) -> None:
    """Launch the three backward kernels into caller-owned dq, dk, dv (any strides; shapes
    of q, k, v). grad_lse (B, Hq, Nq) or None. Inputs are assumed validated (see api.py)."""
    batch, heads_q, n_q, head_dim = q.shape
    heads_kv, n_k = k.shape[1], k.shape[2]
    group = heads_q // heads_kv
    block_d = head_block(head_dim)
    upcast, precision = runtime.upcast_operands(q.dtype), runtime.dot_precision(q.dtype)

    delta = torch.empty((batch, heads_q, n_q), dtype=torch.float32, device=q.device)  # (B, Hq, Nq)
    has_dlse = grad_lse is not None
    dlse = grad_lse.to(torch.float32).contiguous() if has_dlse else delta  # (B, Hq, Nq); unread without a grad
    _preprocess_kernel[(triton.cdiv(n_q, _PREPROCESS_BLOCK_M), batch * heads_q)](
        out, grad_out, dlse, delta, *out.stride(), *grad_out.stride(), heads_q, n_q, head_dim,
        HAS_DLSE=has_dlse, BLOCK_D=block_d, BLOCK_M=_PREPROCESS_BLOCK_M)

    common = dict(IS_CAUSAL=is_causal, UPCAST=upcast, DOT_PRECISION=precision, BLOCK_D=block_d)
    strides_in = (*q.stride(), *k.stride(), *v.stride(), *grad_out.stride(), *lse.stride())
    _dkdv_kernel[lambda meta: (triton.cdiv(n_k, meta["BLOCK_N"]), batch * heads_kv)](
        q, k, v, grad_out, lse, delta, dk, dv, scale, *strides_in, *dk.stride(), *dv.stride(),
        heads_q, heads_kv, group, n_q, n_k, head_dim, **common)
    _dq_kernel[lambda meta: (triton.cdiv(n_q, meta["BLOCK_M"]), batch * heads_q)](
        q, k, v, grad_out, lse, delta, dq, scale, *strides_in, *dq.stride(),
        heads_q, group, n_q, n_k, head_dim, **common)
