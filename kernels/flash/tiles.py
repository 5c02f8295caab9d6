"""Tile addressing, masks and loop bounds shared by the forward and backward kernels.

Conventions every kernel here follows (and split-KV decoding reuses):
- tensors are addressed with plain pointer arithmetic and their own strides, so any
  layout works without a copy; every load and store is masked (rows past the sequence
  length, head-dim columns past D when D is padded to the power of two BLOCK_D);
- a (query, key) pair takes part iff both are in range and, causal, key <= query
  (top-left alignment, as torch's SDPA); pairs that do not are scored −∞, never a finite
  sentinel that a real score could beat;
- blocks that touch padding or the causal diagonal run the masked path; blocks entirely
  inside the visible region run unmasked; blocks with no visible pair are not visited;
- an attn_mask (a constexpr switch: MASK_KIND 0 none, 1 bool, 2 additive) is read tile by
  tile through its own strides, 0 along broadcast dims, in every block, masked or not;
- scores are built by ``scores`` and dropout decided by ``dropout_keep``, the forward's
  and the backward's alike, so the backward recomputes exactly the forward's values.
"""
import triton.language as tl

from kernels.flash import runtime


@runtime.device_function
def load_tile(base, offs_rows, offs_cols, stride_row, stride_col, n_rows, n_cols, UPCAST: tl.constexpr):
    """A (rows, cols) tile; entries outside (n_rows, n_cols) read as 0.

    Pass (offs_d, offs_n) with (stride_d, stride_n) to load a transposed tile."""
    ptrs = base + offs_rows[:, None] * stride_row + offs_cols[None, :] * stride_col
    mask = (offs_rows[:, None] < n_rows) & (offs_cols[None, :] < n_cols)
    tile = tl.load(ptrs, mask=mask, other=0.0)
    if UPCAST:  # the interpreter's bfloat16 arithmetic is wrong; bfloat16 -> float32 is exact
        tile = tile.to(tl.float32)
    return tile


@runtime.device_function
def round_to(x, dtype: tl.constexpr):
    """x in ``dtype``, rounded to nearest, ties to even, on every backend.

    The interpreter converts float32 to bfloat16 by truncation (a bias toward zero in every
    bfloat16 result), so float32 → bfloat16 rounds on the bit pattern instead: adding 0x7FFF
    plus the lowest kept bit carries into the kept half exactly when the dropped half is
    above one half-ulp, or equal to it with an odd kept half. Infinities pass unchanged; a
    NaN is made quiet first, since a payload in the low bits alone would carry into ±inf."""
    if dtype == tl.bfloat16:
        if x.dtype == tl.float32:
            bits = x.to(tl.uint32, bitcast=True)
            rounded = bits + 0x7FFF + ((bits >> 16) & 1)
            bits = tl.where(x != x, bits | 0x00400000, rounded)
            return (bits >> 16).to(tl.uint16).to(tl.bfloat16, bitcast=True)
    return x.to(dtype)


@runtime.device_function
def store_tile(base, tile, offs_rows, offs_cols, stride_row, stride_col, n_rows, n_cols):
    ptrs = base + offs_rows[:, None] * stride_row + offs_cols[None, :] * stride_col
    mask = (offs_rows[:, None] < n_rows) & (offs_cols[None, :] < n_cols)
    tl.store(ptrs, round_to(tile, base.dtype.element_ty), mask=mask)


@runtime.device_function
def load_row(base, offs, stride, n):
    """A per-query-row float32 vector (lse, delta); rows past n read as 0, a finite value."""
    return tl.load(base + offs * stride, mask=offs < n, other=0.0)


@runtime.device_function
def visible(offs_q, offs_k, N_Q, N_K, IS_CAUSAL: tl.constexpr):
    """Which (query, key) pairs take part. offs_q and offs_k come already broadcast,
    e.g. offs_m[:, None] and offs_n[None, :], or transposed for a key-major tile."""
    ok = (offs_q < N_Q) & (offs_k < N_K)
    if IS_CAUSAL:
        ok = ok & (offs_k <= offs_q)
    return ok


# MASK_KIND values (globals a kernel reads must be tl.constexpr instances)
NO_MASK = tl.constexpr(0)
BOOL_MASK = tl.constexpr(1)
ADDITIVE_MASK = tl.constexpr(2)
_LOG2E = tl.constexpr(1.4426950408889634)


@runtime.device_function
def scores(q, k_t, qk_scale, offs_m, offs_n, N_Q, N_K, mask_base, stride_mm, stride_mn,
           IS_CAUSAL: tl.constexpr, MASKED: tl.constexpr, MASK_KIND: tl.constexpr, DOT_PRECISION: tl.constexpr):
    """Base-2 scores of a (query block, key block) tile: log2(e)·(scale·q·kᵀ + additive mask),
    −∞ where a pair takes no part (out of range, above the causal diagonal, or a False in a
    bool mask). qk_scale = scale·log2(e) is folded into one multiply. (BLOCK_M, BLOCK_N)"""
    s = tl.dot(q, k_t, input_precision=DOT_PRECISION) * qk_scale
    if MASK_KIND != NO_MASK:
        in_range = (offs_m[:, None] < N_Q) & (offs_n[None, :] < N_K)
        m = tl.load(mask_base + offs_m[:, None] * stride_mm + offs_n[None, :] * stride_mn, mask=in_range, other=0)
        if MASK_KIND == BOOL_MASK:
            s = tl.where(m != 0, s, float("-inf"))
        else:
            s = s + m.to(tl.float32) * _LOG2E
    if MASKED:
        s = tl.where(visible(offs_m[:, None], offs_n[None, :], N_Q, N_K, IS_CAUSAL), s, float("-inf"))
    return s


@runtime.device_function
def dropout_keep(seed, bh, offs_m, offs_n, p_drop):
    """Which weights of a (query block, key block) tile dropout keeps: u >= p for u uniform
    in [0, 1) from Philox (tl.rand's generator), keyed by the call's seed and counted by
    (key, query, batch·query heads + head), so each weight has its own number and the
    backward regenerates the forward's mask from the same coordinates. (BLOCK_M, BLOCK_N)"""
    zeros = tl.full([offs_m.shape[0], offs_n.shape[0]], 0, dtype=tl.int32)
    cols = (zeros + offs_n[None, :]).to(tl.uint32)
    rows = (zeros + offs_m[:, None]).to(tl.uint32)
    heads = (zeros + bh).to(tl.uint32)
    r, _, _, _ = tl.philox(seed, cols, rows, heads, zeros.to(tl.uint32))
    return tl.uint_to_uniform_float(r) >= p_drop


@runtime.device_function
def key_bounds(start_m, N_Q, N_K, IS_CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Key-block loop bounds for the query block [start_m, start_m + BLOCK_M).

    Returns (full_end, hi): key blocks starting in [0, full_end) are visible to every row
    and need no mask; blocks starting in [full_end, hi) need one; keys >= hi are seen by
    no row of this block (causal) and are skipped."""
    if IS_CAUSAL:
        hi = tl.minimum(start_m + BLOCK_M, N_K)
        # a block is fully visible when its last key is <= the block's first query
        full_end = tl.minimum(start_m + 1, N_K) // BLOCK_N * BLOCK_N
    else:
        hi = N_K
        full_end = N_K // BLOCK_N * BLOCK_N
    # padded query rows make every block of the tail query block a masked one
    full_end = tl.where(start_m + BLOCK_M <= N_Q, full_end, 0)
    return full_end, hi


@runtime.device_function
def query_bounds(start_n, N_Q, N_K, IS_CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Query-block loop bounds for the key block [start_n, start_n + BLOCK_N).

    Returns (lo, full_lo, full_hi, hi): query blocks starting in [full_lo, full_hi) see
    every key of the block and need no mask; those in [lo, full_lo) (causal diagonal) and
    [full_hi, hi) (query tail) need one; query blocks before lo see none of these keys."""
    hi = tl.cdiv(N_Q, BLOCK_M) * BLOCK_M
    if IS_CAUSAL:
        lo = tl.minimum(start_n // BLOCK_M * BLOCK_M, hi)
        # first query block whose first row is >= the block's last key
        full_lo = tl.minimum(tl.cdiv(start_n + BLOCK_N - 1, BLOCK_M) * BLOCK_M, hi)
    else:
        lo = 0
        full_lo = 0
    # padded keys make every query block of the tail key block a masked one
    full_lo = tl.where(start_n + BLOCK_N <= N_K, full_lo, hi)
    full_hi = tl.maximum(full_lo, N_Q // BLOCK_M * BLOCK_M)
    return lo, full_lo, full_hi, hi
