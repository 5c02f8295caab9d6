"""FlashAttention forward: one program per (query block, batch·head), streaming key blocks.

Per query row the kernel keeps the online-softmax state of claim
``online-softmax-unnormalised`` (proofs.theorems.online_softmax.stream_unnormalised):
running max m, running sum l = Σ exp(s - m) and the unnormalised accumulator
acc = Σ exp(s - m) v, all rescaled by exp(m_old - m_new) when the max grows, and divides
acc by l once at the end. Scores are kept in base 2 (the scale is folded with log2 e and
the loop uses exp2). The kernel saves the row's base-2 log-sum-exp lse₂ = m + log2 l (claim
``logsumexp-merge``), exactly as the loop leaves it, so that the backward recomputes the
same probabilities; the natural lse handed to users is lse₂·ln 2.
"""
import math

import torch
import triton
import triton.language as tl

from kernels.flash import runtime
from kernels.flash.tiles import key_bounds, load_tile, store_tile, visible

LOG2E = math.log2(math.e)
LN2 = math.log(2.0)


@triton.jit
def attend_key_blocks(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
                      lo, hi, qk_scale, offs_m, offs_d, N_Q, N_K, HEAD_DIM,
                      IS_CAUSAL: tl.constexpr, MASKED: tl.constexpr, UPCAST: tl.constexpr,
                      DOT_PRECISION: tl.constexpr, BLOCK_N: tl.constexpr):
    """Fold key blocks starting in [lo, hi) into the state (acc, l, m) of one query block.

    MASKED splits blocks on the causal diagonal or over padding (scores of invisible pairs
    set to −∞) from blocks inside the visible region (no mask work at all)."""
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k_t = load_tile(k_base, offs_d, offs_n, stride_kd, stride_kn, HEAD_DIM, N_K, UPCAST)  # (BLOCK_D, BLOCK_N)
        v = load_tile(v_base, offs_n, offs_d, stride_vn, stride_vd, N_K, HEAD_DIM, UPCAST)  # (BLOCK_N, BLOCK_D)
        s = tl.dot(q, k_t, input_precision=DOT_PRECISION) * qk_scale  # (BLOCK_M, BLOCK_N), base-2 scores
        if MASKED:
            s = tl.where(visible(offs_m[:, None], offs_n[None, :], N_Q, N_K, IS_CAUSAL), s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))  # (BLOCK_M,)
        # A row with no visible key yet keeps m = −∞; shifting by 0 instead avoids −∞ − (−∞).
        shift = tl.where(m_new == float("-inf"), 0.0, m_new)  # (BLOCK_M,)
        alpha = tl.exp2(m_i - shift)  # rescales what was accumulated under the old max
        # s − m subtracts the very rounded value the max was taken of, so the largest score
        # gives exactly exp2(0) = 1 whatever the magnitude of the scores.
        p = tl.exp2(s - shift[:, None])  # (BLOCK_M, BLOCK_N)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=DOT_PRECISION)  # (BLOCK_M, BLOCK_D)
        m_i = m_new
    return acc, l_i, m_i


@triton.autotune(configs=runtime.tile_configs("forward"), key=["N_Q", "N_K", "BLOCK_D", "IS_CAUSAL"],
                 prune_configs_by={"early_config_prune": runtime.prune_for_head_dim})
@triton.jit
def _forward_kernel(Q, K, V, O, LSE2, qk_scale,
                    stride_qb, stride_qh, stride_qm, stride_qd,
                    stride_kb, stride_kh, stride_kn, stride_kd,
                    stride_vb, stride_vh, stride_vn, stride_vd,
                    stride_ob, stride_oh, stride_om, stride_od,
                    stride_lb, stride_lh, stride_lm,
                    H_Q, GROUP, N_Q, N_K, HEAD_DIM,
                    IS_CAUSAL: tl.constexpr, UPCAST: tl.constexpr, DOT_PRECISION: tl.constexpr,
                    BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    b = (bh // H_Q).to(tl.int64)  # 64-bit offsets: batch·head strides can pass 2**31 elements
    h = (bh % H_Q).to(tl.int64)
    h_kv = h // GROUP  # GQA: query head h reads KV head h // (H_Q / H_KV)
    q_base = Q + b * stride_qb + h * stride_qh
    k_base = K + b * stride_kb + h_kv * stride_kh
    v_base = V + b * stride_vb + h_kv * stride_vh

    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    q = load_tile(q_base, offs_m, offs_d, stride_qm, stride_qd, N_Q, HEAD_DIM, UPCAST)  # (BLOCK_M, BLOCK_D)

    # The state starts at the merge identity (−∞, 0, 0) (claim online-softmax-monoid).
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)

    full_end, hi = key_bounds(start_m, N_Q, N_K, IS_CAUSAL, BLOCK_M, BLOCK_N)
    acc, l_i, m_i = attend_key_blocks(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
                                      0, full_end, qk_scale, offs_m, offs_d, N_Q, N_K, HEAD_DIM,
                                      IS_CAUSAL, False, UPCAST, DOT_PRECISION, BLOCK_N)
    acc, l_i, m_i = attend_key_blocks(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
                                      full_end, hi, qk_scale, offs_m, offs_d, N_Q, N_K, HEAD_DIM,
                                      IS_CAUSAL, True, UPCAST, DOT_PRECISION, BLOCK_N)

    # Divide by l once. A row that saw no key (l = 0; only padding rows here, since
    # top-left causal always shows key 0) gets output 0 and lse −∞, as torch's SDPA does.
    seen = l_i > 0.0
    l_safe = tl.where(seen, l_i, 1.0)
    out = acc / l_safe[:, None]  # (BLOCK_M, BLOCK_D)
    # natural log (claim logsumexp-merge): m·ln 2 + ln l in one fma, rounded once
    lse2 = tl.where(seen, m_i + tl.log2(l_safe), float("-inf"))
    o_base = O + b * stride_ob + h * stride_oh
    store_tile(o_base, out, offs_m, offs_d, stride_om, stride_od, N_Q, HEAD_DIM)
    tl.store(LSE2 + b * stride_lb + h * stride_lh + offs_m * stride_lm, lse2, mask=offs_m < N_Q)


def head_block(head_dim: int) -> int:
    """Head dims pad to the next power of two (at least 16, tl.dot's minimum); masks hide the padding."""
    return max(16, triton.next_power_of_2(head_dim))


def attention_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor, lse2: torch.Tensor,
                      *, scale: float, is_causal: bool, tiles: tuple[int, int] | None = None) -> None:
    """Launch the forward into caller-owned buffers (any strides): out (B, Hq, Nq, D) in
    q's dtype, lse2 (B, Hq, Nq) float32, the base-2 log-sum-exp (natural lse = lse2·ln 2).
    Inputs are assumed validated (see api.py). ``tiles`` = (BLOCK_M, BLOCK_N) bypasses
    autotuning, so tests can run the GPU's tile shapes under the interpreter."""
    batch, heads_q, n_q, head_dim = q.shape
    heads_kv, n_k = k.shape[1], k.shape[2]

    def grid(meta):
        return (triton.cdiv(n_q, meta["BLOCK_M"]), batch * heads_q)

    kernel, chosen = runtime.launcher(_forward_kernel, tiles)
    kernel[grid](
        q, k, v, out, lse2, scale * LOG2E,
        *q.stride(), *k.stride(), *v.stride(), *out.stride(), *lse2.stride(),
        heads_q, heads_q // heads_kv, n_q, n_k, head_dim,
        IS_CAUSAL=is_causal, UPCAST=runtime.upcast_operands(q.dtype),
        DOT_PRECISION=runtime.dot_precision(q.dtype), BLOCK_D=head_block(head_dim), **chosen)
