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
from kernels.flash.tiles import dropout_keep, key_bounds, load_tile, scores, store_tile

LOG2E = math.log2(math.e)
LN2 = math.log(2.0)


@runtime.device_function
def attend_key_blocks(acc, l_i, m_i, q, k_base, v_base, mask_base, stride_kn, stride_kd, stride_vn, stride_vd,
                      stride_mm, stride_mn, lo, hi, qk_scale, seed, bh, p_drop, keep_scale,
                      offs_m, offs_d, offs_dv, N_Q, N_K, HEAD_DIM, HEAD_DIM_V,
                      IS_CAUSAL: tl.constexpr, MASKED: tl.constexpr, MASK_KIND: tl.constexpr,
                      DROPOUT: tl.constexpr, UPCAST: tl.constexpr, DOT_PRECISION: tl.constexpr,
                      BLOCK_N: tl.constexpr):
    """Fold key blocks starting in [lo, hi) into the state (acc, l, m) of one query block.

    MASKED splits blocks on the causal diagonal or over padding (scores of invisible pairs
    set to −∞) from blocks inside the visible region (no bounds work at all). Dropout acts
    on the weights that reach V only: l sums the undropped weights, so the output is
    (P ∘ keep / (1 − p)) V with P the softmax of the scores."""
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k_t = load_tile(k_base, offs_d, offs_n, stride_kd, stride_kn, HEAD_DIM, N_K, UPCAST)  # (BLOCK_D, BLOCK_N)
        v = load_tile(v_base, offs_n, offs_dv, stride_vn, stride_vd, N_K, HEAD_DIM_V, UPCAST)  # (BLOCK_N, BLOCK_DV)
        s = scores(q, k_t, qk_scale, offs_m, offs_n, N_Q, N_K, mask_base, stride_mm, stride_mn,
                   IS_CAUSAL, MASKED, MASK_KIND, DOT_PRECISION)  # (BLOCK_M, BLOCK_N), base 2
        m_new = tl.maximum(m_i, tl.max(s, 1))  # (BLOCK_M,)
        # A row with no visible key yet keeps m = −∞; shifting by 0 instead avoids −∞ − (−∞).
        shift = tl.where(m_new == float("-inf"), 0.0, m_new)  # (BLOCK_M,)
        alpha = tl.exp2(m_i - shift)  # rescales what was accumulated under the old max
        # s − m subtracts the very rounded value the max was taken of, so the largest score
        # gives exactly exp2(0) = 1 whatever the magnitude of the scores.
        p = tl.exp2(s - shift[:, None])  # (BLOCK_M, BLOCK_N)
        l_i = l_i * alpha + tl.sum(p, 1)
        if DROPOUT:
            p = tl.where(dropout_keep(seed, bh, offs_m, offs_n, p_drop), p * keep_scale, 0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=DOT_PRECISION)  # (BLOCK_M, BLOCK_DV)
        m_i = m_new
    return acc, l_i, m_i


@triton.autotune(configs=runtime.tile_configs("forward"),
                 key=["N_Q", "N_K", "BLOCK_D", "BLOCK_DV", "IS_CAUSAL", "MASK_KIND", "DROPOUT"],
                 prune_configs_by={"early_config_prune": runtime.prune_for_head_dim})
@triton.jit
def _forward_kernel(Q, K, V, O, LSE2, MASK, qk_scale, seed, p_drop, keep_scale,
                    stride_qb, stride_qh, stride_qm, stride_qd,
                    stride_kb, stride_kh, stride_kn, stride_kd,
                    stride_vb, stride_vh, stride_vn, stride_vd,
                    stride_ob, stride_oh, stride_om, stride_od,
                    stride_lb, stride_lh, stride_lm,
                    stride_mb, stride_mh, stride_mm, stride_mn,
                    H_Q, GROUP, N_Q, N_K, HEAD_DIM, HEAD_DIM_V,
                    IS_CAUSAL: tl.constexpr, MASK_KIND: tl.constexpr, DROPOUT: tl.constexpr,
                    UPCAST: tl.constexpr, DOT_PRECISION: tl.constexpr,
                    BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    b = (bh // H_Q).to(tl.int64)  # 64-bit offsets: batch·head strides can pass 2**31 elements
    h = (bh % H_Q).to(tl.int64)
    h_kv = h // GROUP  # GQA: query head h reads KV head h // (H_Q / H_KV)
    q_base = Q + b * stride_qb + h * stride_qh
    k_base = K + b * stride_kb + h_kv * stride_kh
    v_base = V + b * stride_vb + h_kv * stride_vh
    mask_base = MASK + b * stride_mb + h * stride_mh  # broadcast dims have stride 0

    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    offs_dv = tl.arange(0, BLOCK_DV)
    q = load_tile(q_base, offs_m, offs_d, stride_qm, stride_qd, N_Q, HEAD_DIM, UPCAST)  # (BLOCK_M, BLOCK_D)

    # The state starts at the merge identity (−∞, 0, 0) (claim online-softmax-monoid).
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.full([BLOCK_M], 0, dtype=tl.float32)
    acc = tl.full([BLOCK_M, BLOCK_DV], 0, dtype=tl.float32)

    full_end, hi = key_bounds(start_m, N_Q, N_K, IS_CAUSAL, BLOCK_M, BLOCK_N)
    acc, l_i, m_i = attend_key_blocks(acc, l_i, m_i, q, k_base, v_base, mask_base, stride_kn, stride_kd,
                                      stride_vn, stride_vd, stride_mm, stride_mn, 0, full_end, qk_scale,
                                      seed, bh, p_drop, keep_scale, offs_m, offs_d, offs_dv, N_Q, N_K,
                                      HEAD_DIM, HEAD_DIM_V, IS_CAUSAL, False, MASK_KIND, DROPOUT, UPCAST,
                                      DOT_PRECISION, BLOCK_N)
    acc, l_i, m_i = attend_key_blocks(acc, l_i, m_i, q, k_base, v_base, mask_base, stride_kn, stride_kd,
                                      stride_vn, stride_vd, stride_mm, stride_mn, full_end, hi, qk_scale,
                                      seed, bh, p_drop, keep_scale, offs_m, offs_d, offs_dv, N_Q, N_K,
                                      HEAD_DIM, HEAD_DIM_V, IS_CAUSAL, True, MASK_KIND, DROPOUT, UPCAST,
                                      DOT_PRECISION, BLOCK_N)

    # Divide by l once. A row that saw no key (l = 0: padding rows, or every key hidden by
    # attn_mask) gets output 0 and lse −∞, as torch's SDPA does.
    seen = l_i > 0.0
    l_safe = tl.where(seen, l_i, 1.0)
    out = acc / l_safe[:, None]  # (BLOCK_M, BLOCK_DV)
    lse2 = tl.where(seen, m_i + tl.log2(l_safe), float("-inf"))
    o_base = O + b * stride_ob + h * stride_oh
    store_tile(o_base, out, offs_m, offs_dv, stride_om, stride_od, N_Q, HEAD_DIM_V)
    tl.store(LSE2 + b * stride_lb + h * stride_lh + offs_m * stride_lm, lse2, mask=offs_m < N_Q)


def head_block(head_dim: int) -> int:
    """Head dims pad to the next power of two (at least 16, tl.dot's minimum); masks hide the padding."""
    return max(16, triton.next_power_of_2(head_dim))


class Extras:
    """What a call adds to plain attention, as the kernels take it: the attn_mask (expanded to
    (B, Hq, Nq, Nk) with stride 0 along broadcast dims, never copied) and its kind, and
    dropout's probability and Philox seed. The default is neither."""

    def __init__(self, mask: torch.Tensor | None = None, dropout_p: float = 0.0, seed: int = 0):
        self.mask, self.dropout_p, self.seed = mask, float(dropout_p), int(seed)

    @property
    def mask_kind(self) -> int:
        if self.mask is None:
            return 0
        return 1 if self.mask.dtype == torch.bool else 2

    def launch_args(self, q: torch.Tensor) -> tuple:
        """(MASK, seed, p_drop, keep_scale) and the mask's four strides, for a kernel call."""
        if self.mask is None:
            mask, strides = q, (0, 0, 0, 0)  # never read: MASK_KIND = 0
        else:
            # bool is read as bytes (0 = hidden), which every Triton version loads alike
            mask = self.mask.view(torch.uint8) if self.mask.dtype == torch.bool else self.mask
            strides = self.mask.stride()
        keep_scale = 1.0 / (1.0 - self.dropout_p)
        return (mask, self.seed, self.dropout_p, keep_scale), strides

    def constexprs(self) -> dict:
        return dict(MASK_KIND=self.mask_kind, DROPOUT=self.dropout_p > 0.0)


NONE = Extras()


def attention_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor, lse2: torch.Tensor,
                      *, scale: float, is_causal: bool, extras: Extras = NONE,
                      tiles: tuple[int, int] | None = None) -> None:
    """Launch the forward into caller-owned buffers (any strides): out (B, Hq, Nq, Dv) in
    q's dtype, lse2 (B, Hq, Nq) float32, the base-2 log-sum-exp (natural lse = lse2·ln 2).
    Inputs are assumed validated (see inputs.py). ``tiles`` = (BLOCK_M, BLOCK_N) bypasses
    autotuning, so tests can run the GPU's tile shapes under the interpreter."""
    batch, heads_q, n_q, head_dim = q.shape
    heads_kv, n_k, head_dim_v = k.shape[1], k.shape[2], v.shape[3]

    def grid(meta):
        return (triton.cdiv(n_q, meta["BLOCK_M"]), batch * heads_q)

    (mask, seed, p_drop, keep_scale), mask_strides = extras.launch_args(q)
    kernel, chosen = runtime.launcher(_forward_kernel, tiles)
    kernel[grid](
        q, k, v, out, lse2, mask, scale * LOG2E, seed, p_drop, keep_scale,
        *q.stride(), *k.stride(), *v.stride(), *out.stride(), *lse2.stride(), *mask_strides,
        heads_q, heads_q // heads_kv, n_q, n_k, head_dim, head_dim_v,
        IS_CAUSAL=is_causal, **extras.constexprs(), UPCAST=runtime.upcast_operands(q.dtype),
        DOT_PRECISION=runtime.dot_precision(q.dtype), BLOCK_D=head_block(head_dim),
        BLOCK_DV=head_block(head_dim_v), **chosen)
