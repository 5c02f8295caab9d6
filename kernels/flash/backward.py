"""FlashAttention backward: preprocess, then dK/dV per key block and dQ per query block.

The gradients are those of claim ``attention-backward`` (derived from the softmax Jacobian):
dV = Pᵀ dO, dP = dO Vᵀ, dS = P ∘ (dP − D) with D = rowsum(dO ∘ O), dQ = scale·dS K,
dK = scale·dSᵀ Q. P is recomputed from the forward's saved base-2 lse, p = exp2(s₂ − lse₂) (claim
``logsumexp-merge``: lse = m + log l normalises the whole row at once), with the very
products and scaling the forward used. A gradient dlse flowing into the returned lse adds
dlse·∂lse/∂s = dlse·p to dS, which is the same as using D − dlse in place of D.

GQA: a dK/dV program owns one KV head and loops over the query heads of its group, so
the group sum happens in registers, with no atomics and no extra reduction pass.
"""
import torch
import triton
import triton.language as tl

from kernels.flash import runtime
from kernels.flash.forward import LOG2E, head_block
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
def _row_lse2(lse2_base, offs_m, stride_lm, N_Q):
    """The saved base-2 lse; a row with no visible key (−∞) maps to 0 so that
    exp2(−∞ − lse2) is 0, never −∞ − (−∞)."""
    lse2 = load_row(lse2_base, offs_m, stride_lm, N_Q)
    return tl.where(lse2 == float("-inf"), 0.0, lse2)


@triton.jit
def _probabilities(q, k_t, lse2, qk_scale, offs_m, offs_n, N_Q, N_K,
                   IS_CAUSAL: tl.constexpr, MASKED: tl.constexpr, DOT_PRECISION: tl.constexpr):
    """P of a (query block, key block) tile, recomputed as the forward computed it: the same
    product q·kᵀ of the same tiles, the same scaling, minus the saved lse2 = m + log2 l. The
    largest score of a one-hot row then gives exactly exp2(0) = 1 at any magnitude. Every
    p <= 1 since lse2 >= each score; the clamp keeps it so when roundings say otherwise."""
    s = tl.dot(q, k_t, input_precision=DOT_PRECISION) * qk_scale  # (BLOCK_M, BLOCK_N), base 2
    arg = tl.minimum(s - lse2[:, None], 0.0)
    if MASKED:
        arg = tl.where(visible(offs_m[:, None], offs_n[None, :], N_Q, N_K, IS_CAUSAL), arg, float("-inf"))
    return tl.exp2(arg)  # (BLOCK_M, BLOCK_N)


@triton.jit
def _dkdv_query_blocks(dk, dv, k_t, v, q_base, do_base, lse2_base, delta_base,
                       stride_qm, stride_qd, stride_dom, stride_dod, stride_lm,
                       lo, hi, qk_scale, offs_n, offs_d, N_Q, N_K, HEAD_DIM,
                       IS_CAUSAL: tl.constexpr, MASKED: tl.constexpr, UPCAST: tl.constexpr,
                       DOT_PRECISION: tl.constexpr, BLOCK_M: tl.constexpr):
    """Accumulate one query head's query blocks [lo, hi) into dK, dV of a key block."""
    for start_m in range(lo, hi, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)
        q = load_tile(q_base, offs_m, offs_d, stride_qm, stride_qd, N_Q, HEAD_DIM, UPCAST)  # (BLOCK_M, BLOCK_D)
        do = load_tile(do_base, offs_m, offs_d, stride_dom, stride_dod, N_Q, HEAD_DIM, UPCAST)  # (BLOCK_M, BLOCK_D)
        lse2 = _row_lse2(lse2_base, offs_m, stride_lm, N_Q)  # (BLOCK_M,)
        delta = load_row(delta_base, offs_m, 1, N_Q)  # (BLOCK_M,)
        # q·kᵀ in the forward's orientation: k·qᵀ would round differently
        p = _probabilities(q, k_t, lse2, qk_scale, offs_m, offs_n, N_Q, N_K, IS_CAUSAL, MASKED, DOT_PRECISION)
        p_t = tl.trans(p)  # (BLOCK_N, BLOCK_M)
        dv += tl.dot(p_t.to(do.dtype), do, input_precision=DOT_PRECISION)  # (BLOCK_N, BLOCK_D)
        dp_t = tl.dot(v, tl.trans(do), input_precision=DOT_PRECISION)  # (BLOCK_N, BLOCK_M)
        ds_t = p_t * (dp_t - delta[None, :])  # (BLOCK_N, BLOCK_M)
        dk += tl.dot(ds_t.to(q.dtype), q, input_precision=DOT_PRECISION)  # (BLOCK_N, BLOCK_D)
    return dk, dv


@triton.autotune(configs=runtime.tile_configs("backward"), key=["N_Q", "N_K", "BLOCK_D", "IS_CAUSAL"],
                 prune_configs_by={"early_config_prune": runtime.prune_for_head_dim})
@triton.jit
def _dkdv_kernel(Q, K, V, DO, LSE2, DELTA, DK, DV, sm_scale, qk_scale,
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
    k_t = load_tile(K + b * stride_kb + h_kv * stride_kh, offs_d, offs_n, stride_kd, stride_kn, HEAD_DIM, N_K,
                    UPCAST)  # (BLOCK_D, BLOCK_N)
    v = load_tile(V + b * stride_vb + h_kv * stride_vh, offs_n, offs_d, stride_vn, stride_vd, N_K, HEAD_DIM,
                  UPCAST)  # (BLOCK_N, BLOCK_D)
    dk = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)

    lo, full_lo, full_hi, hi = query_bounds(start_n, N_Q, N_K, IS_CAUSAL, BLOCK_M, BLOCK_N)
    for g in range(GROUP):  # the query heads that share this KV head: their gradients sum
        h = h_kv * GROUP + g
        q_base = Q + b * stride_qb + h * stride_qh
        do_base = DO + b * stride_dob + h * stride_doh
        lse2_base = LSE2 + b * stride_lb + h * stride_lh
        delta_base = DELTA + (b * H_Q + h) * N_Q
        # causal diagonal (masked), interior (unmasked), query tail (masked)
        dk, dv = _dkdv_query_blocks(dk, dv, k_t, v, q_base, do_base, lse2_base, delta_base,
                                    stride_qm, stride_qd, stride_dom, stride_dod, stride_lm,
                                    lo, full_lo, qk_scale, offs_n, offs_d, N_Q, N_K, HEAD_DIM,
                                    IS_CAUSAL, True, UPCAST, DOT_PRECISION, BLOCK_M)
        dk, dv = _dkdv_query_blocks(dk, dv, k_t, v, q_base, do_base, lse2_base, delta_base,
                                    stride_qm, stride_qd, stride_dom, stride_dod, stride_lm,
                                    full_lo, full_hi, qk_scale, offs_n, offs_d, N_Q, N_K, HEAD_DIM,
                                    IS_CAUSAL, False, UPCAST, DOT_PRECISION, BLOCK_M)
        dk, dv = _dkdv_query_blocks(dk, dv, k_t, v, q_base, do_base, lse2_base, delta_base,
                                    stride_qm, stride_qd, stride_dom, stride_dod, stride_lm,
                                    full_hi, hi, qk_scale, offs_n, offs_d, N_Q, N_K, HEAD_DIM,
                                    IS_CAUSAL, True, UPCAST, DOT_PRECISION, BLOCK_M)

    # s = scale · q kᵀ, so dK carries the natural scale once (dV does not).
    store_tile(DK + b * stride_dkb + h_kv * stride_dkh, dk * sm_scale, offs_n, offs_d, stride_dkn, stride_dkd,
               N_K, HEAD_DIM)
    store_tile(DV + b * stride_dvb + h_kv * stride_dvh, dv, offs_n, offs_d, stride_dvn, stride_dvd, N_K, HEAD_DIM)


@triton.jit
def _dq_key_blocks(dq, q, do, lse2, delta, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
                   lo, hi, qk_scale, offs_m, offs_d, N_Q, N_K, HEAD_DIM,
                   IS_CAUSAL: tl.constexpr, MASKED: tl.constexpr, UPCAST: tl.constexpr,
                   DOT_PRECISION: tl.constexpr, BLOCK_N: tl.constexpr):
    """Accumulate key blocks [lo, hi) into dQ of a query block."""
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k_t = load_tile(k_base, offs_d, offs_n, stride_kd, stride_kn, HEAD_DIM, N_K, UPCAST)  # (BLOCK_D, BLOCK_N)
        v_t = load_tile(v_base, offs_d, offs_n, stride_vd, stride_vn, HEAD_DIM, N_K, UPCAST)  # (BLOCK_D, BLOCK_N)
        p = _probabilities(q, k_t, lse2, qk_scale, offs_m, offs_n, N_Q, N_K, IS_CAUSAL, MASKED, DOT_PRECISION)
        dp = tl.dot(do, v_t, input_precision=DOT_PRECISION)  # (BLOCK_M, BLOCK_N)
        ds = p * (dp - delta[:, None])  # (BLOCK_M, BLOCK_N)
        dq += tl.dot(ds.to(k_t.dtype), tl.trans(k_t), input_precision=DOT_PRECISION)  # (BLOCK_M, BLOCK_D)
    return dq


@triton.autotune(configs=runtime.tile_configs("backward"), key=["N_Q", "N_K", "BLOCK_D", "IS_CAUSAL"],
                 prune_configs_by={"early_config_prune": runtime.prune_for_head_dim})
@triton.jit
def _dq_kernel(Q, K, V, DO, LSE2, DELTA, DQ, sm_scale, qk_scale,
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
    lse2 = _row_lse2(LSE2 + b * stride_lb + h * stride_lh, offs_m, stride_lm, N_Q)  # (BLOCK_M,)
    delta = load_row(DELTA + bh.to(tl.int64) * N_Q, offs_m, 1, N_Q)  # (BLOCK_M,)
    k_base = K + b * stride_kb + h_kv * stride_kh
    v_base = V + b * stride_vb + h_kv * stride_vh
    dq = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)

    full_end, hi = key_bounds(start_m, N_Q, N_K, IS_CAUSAL, BLOCK_M, BLOCK_N)
    dq = _dq_key_blocks(dq, q, do, lse2, delta, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
                        0, full_end, qk_scale, offs_m, offs_d, N_Q, N_K, HEAD_DIM,
                        IS_CAUSAL, False, UPCAST, DOT_PRECISION, BLOCK_N)
    dq = _dq_key_blocks(dq, q, do, lse2, delta, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
                        full_end, hi, qk_scale, offs_m, offs_d, N_Q, N_K, HEAD_DIM,
                        IS_CAUSAL, True, UPCAST, DOT_PRECISION, BLOCK_N)
    store_tile(DQ + b * stride_dqb + h * stride_dqh, dq * sm_scale, offs_m, offs_d, stride_dqm, stride_dqd,
               N_Q, HEAD_DIM)


_PREPROCESS_BLOCK_M = 64


def attention_backward(q, k, v, out, lse2, grad_out, grad_lse, dq, dk, dv, *, scale: float, is_causal: bool,
                       tiles: tuple[int, int] | None = None) -> None:
    """Launch the three backward kernels into caller-owned dq, dk, dv (any strides; shapes
    of q, k, v). lse2: the forward's base-2 lse; grad_lse: the gradient of the natural lse
    (B, Hq, Nq), or None. Inputs are assumed validated (see api.py). ``tiles`` as in
    attention_forward: (BLOCK_M, BLOCK_N) for both kernels, bypassing autotuning."""
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
    strides_in = (*q.stride(), *k.stride(), *v.stride(), *grad_out.stride(), *lse2.stride())
    dkdv_kernel, chosen = runtime.launcher(_dkdv_kernel, tiles)
    dkdv_kernel[lambda meta: (triton.cdiv(n_k, meta["BLOCK_N"]), batch * heads_kv)](
        q, k, v, grad_out, lse2, delta, dk, dv, scale, scale * LOG2E, *strides_in, *dk.stride(), *dv.stride(),
        heads_q, heads_kv, group, n_q, n_k, head_dim, **common, **chosen)
    dq_kernel, chosen = runtime.launcher(_dq_kernel, tiles)
    dq_kernel[lambda meta: (triton.cdiv(n_q, meta["BLOCK_M"]), batch * heads_q)](
        q, k, v, grad_out, lse2, delta, dq, scale, scale * LOG2E, *strides_in, *dq.stride(),
        heads_q, group, n_q, n_k, head_dim, **common, **chosen)
