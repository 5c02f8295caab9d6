"""Tile addressing, masks and loop bounds shared by the forward and backward kernels.

Conventions every kernel here follows (and split-KV decoding reuses):
- tensors are addressed with plain pointer arithmetic and their own strides, so any
  layout works without a copy; every load and store is masked (rows past the sequence
  length, head-dim columns past D when D is padded to the power of two BLOCK_D);
- a (query, key) pair takes part iff both are in range and, causal, key <= query
  (top-left alignment, as torch's SDPA); pairs that do not are scored −∞, never a finite
  sentinel that a real score could beat;
- blocks that touch padding or the causal diagonal run the masked path; blocks entirely
  inside the visible region run unmasked; blocks with no visible pair are not visited.
"""
import triton
import triton.language as tl


@triton.jit
def load_tile(base, offs_rows, offs_cols, stride_row, stride_col, n_rows, n_cols, UPCAST: tl.constexpr):
    """A (rows, cols) tile; entries outside (n_rows, n_cols) read as 0.

    Pass (offs_d, offs_n) with (stride_d, stride_n) to load a transposed tile."""
    ptrs = base + offs_rows[:, None] * stride_row + offs_cols[None, :] * stride_col
    mask = (offs_rows[:, None] < n_rows) & (offs_cols[None, :] < n_cols)
    tile = tl.load(ptrs, mask=mask, other=0.0)
    if UPCAST:  # the interpreter's bfloat16 arithmetic is wrong; bfloat16 -> float32 is exact
        tile = tile.to(tl.float32)
    return tile


@triton.jit
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


@triton.jit
def store_tile(base, tile, offs_rows, offs_cols, stride_row, stride_col, n_rows, n_cols):
    ptrs = base + offs_rows[:, None] * stride_row + offs_cols[None, :] * stride_col
    mask = (offs_rows[:, None] < n_rows) & (offs_cols[None, :] < n_cols)
    tl.store(ptrs, round_to(tile, base.dtype.element_ty), mask=mask)


@triton.jit
def load_row(base, offs, stride, n):
    """A per-query-row float32 vector (lse, delta); rows past n read as 0, a finite value."""
    return tl.load(base + offs * stride, mask=offs < n, other=0.0)


@triton.jit
def visible(offs_q, offs_k, N_Q, N_K, IS_CAUSAL: tl.constexpr):
    """Which (query, key) pairs take part. offs_q and offs_k come already broadcast,
    e.g. offs_m[:, None] and offs_n[None, :], or transposed for a key-major tile."""
    ok = (offs_q < N_Q) & (offs_k < N_K)
    if IS_CAUSAL:
        ok = ok & (offs_k <= offs_q)
    return ok


@triton.jit
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


@triton.jit
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
