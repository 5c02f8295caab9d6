"""HBM traffic of attention in a two-level memory model, as exact SymPy expressions.

The model (FlashAttention, Dao et al. 2022, section 3.2): a slow memory (HBM) of unbounded size
and a fast memory of M elements. A kernel's traffic is the number of elements it reads from and
writes to HBM; arithmetic in fast memory is free. Counts are per tensor, so bytes follow by
multiplying each tensor's count by its element size.

Two algorithms are counted:

- standard attention, which materialises S = scale·QKᵀ and P = softmax(S) in HBM
  (FlashAttention's Algorithm 0), optionally with the scaling as its own pass over S;
- this project's Triton kernels, loop by loop as they run (``kernels/flash/forward.py``,
  ``backward.py``, ``tiles.key_bounds``/``query_bounds`` and ``kernels/decode``): every tile load
  is masked to the tensor's bounds, so a tail tile moves only its in-range elements, and the causal
  loops skip key blocks that lie wholly above the diagonal but load the diagonal blocks whole.

``kernels/traffic.py`` counts the same elements on the running kernel (its loads and stores under
Triton's interpreter) and compares them with these expressions. No ``Proof`` objects here: these
are plain functions returning expressions (their checks live in the tests and in the kernel count).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

# Symbols of the model: sequence lengths, head dims, block sizes, fast-memory size, heads.
N, N_Q, N_K = sp.symbols("N N_Q N_K", positive=True, integer=True)
d, d_v = sp.symbols("d d_v", positive=True, integer=True)
B_M, B_N = sp.symbols("B_M B_N", positive=True, integer=True)
M = sp.symbols("M", positive=True)
i, j, s = sp.symbols("i j s", nonnegative=True, integer=True)

# FlashAttention, Proposition 3 (cited premise, not proved here).
LOWER_BOUND_PREMISE = (
    "FlashAttention (Dao et al. 2022), Proposition 3: for N the sequence length, d the head dimension and M the "
    "fast memory with d <= M <= Nd, no algorithm computes exact attention with o(N²d²/M) HBM accesses for all M "
    "in [d, Nd]. Cited premise, not derived here.")


@dataclass(frozen=True)
class Traffic:
    """Elements read and written per tensor (SymPy expressions, possibly unevaluated Sums)."""

    reads: dict = field(default_factory=dict)
    writes: dict = field(default_factory=dict)

    def __add__(self, other: "Traffic") -> "Traffic":
        return Traffic(_merge(self.reads, other.reads), _merge(self.writes, other.writes))

    def scaled(self, factor) -> "Traffic":
        return Traffic({k: factor * v for k, v in self.reads.items()}, {k: factor * v for k, v in self.writes.items()})

    @property
    def read_total(self) -> sp.Expr:
        return sp.Add(*self.reads.values())

    @property
    def write_total(self) -> sp.Expr:
        return sp.Add(*self.writes.values())

    @property
    def total(self) -> sp.Expr:
        return self.read_total + self.write_total

    def evaluate(self, **values) -> "Traffic":
        """Integers for given symbol values (by name), Sums expanded."""
        subs = {_SYMBOLS[k]: v for k, v in values.items() if k in _SYMBOLS}
        unknown = set(values) - set(_SYMBOLS)
        if unknown:
            raise ValueError(f"unknown symbols {sorted(unknown)}; known: {sorted(_SYMBOLS)}")

        def ev(x):
            out = sp.sympify(x).subs(subs).doit()
            if not out.is_Integer:
                raise ValueError(f"traffic did not evaluate to an integer: {out} (give every symbol a value)")
            return int(out)

        return Traffic({k: ev(v) for k, v in self.reads.items()}, {k: ev(v) for k, v in self.writes.items()})


def _merge(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out


_SYMBOLS = {str(x): x for x in (N, N_Q, N_K, d, d_v, B_M, B_N, M)}


def _positive_int(x, name: str):
    if isinstance(x, sp.Basic):
        return x
    if isinstance(x, bool) or not isinstance(x, int) or x < 1:
        raise ValueError(f"{name} must be a positive integer or a SymPy symbol, got {x!r}")
    return sp.Integer(x)


def cdiv(a, b) -> sp.Expr:
    return sp.ceiling(sp.sympify(a) / b)


def standard_forward(n=N, head_dim=d, head_dim_v=d_v, *, separate_scale_pass: bool = False) -> Traffic:
    """Standard attention per (batch, head), N queries and N keys: read Q, K; write S; [read and write S
    once more to scale it]; read S, write P (softmax); read P and V; write O. Causal or not, S and P
    are N × N in HBM (torch's math backend masks the materialised S)."""
    n, head_dim, head_dim_v = (_positive_int(x, name) for x, name in ((n, "n"), (head_dim, "head_dim"),
                                                                       (head_dim_v, "head_dim_v")))
    square = n * n
    reads = {"Q": n * head_dim, "K": n * head_dim, "S": square, "P": square, "V": n * head_dim_v}
    writes = {"S": square, "P": square, "O": n * head_dim_v}
    if separate_scale_pass:
        reads["S"] += square
        writes["S"] += square
    return Traffic(reads, writes)


def keys_loaded_forward(start_m, n_q, n_k, block_m, block_n, causal: bool) -> sp.Expr:
    """Key rows the forward (and the dQ kernel) loads for the query block starting at ``start_m``.

    Non-causal: every key block, the tail masked to N_K, so exactly N_K rows. Causal
    (tiles.key_bounds): the blocks starting below hi = min(start_m + B_M, N_K), the last one loaded
    whole up to N_K, so min(B_N·⌈hi/B_N⌉, N_K) rows. n_q enters only through the caller's range."""
    if not causal:
        return n_k
    hi = sp.Min(start_m + block_m, n_k)
    return sp.Min(block_n * cdiv(hi, block_n), n_k)


def flash_forward(n_q=N, n_k=None, head_dim=d, head_dim_v=None, block_m=B_M, block_n=B_N, *,
                  causal: bool = False) -> Traffic:
    """The Triton forward per (batch, query head): one program per query block loads its Q rows
    once, then K and V rows of every key block it visits; it writes O and the float32 lse₂ row."""
    n_k = n_q if n_k is None else n_k
    head_dim_v = head_dim if head_dim_v is None else head_dim_v
    n_q, n_k, head_dim, head_dim_v, block_m, block_n = (
        _positive_int(x, name) for x, name in ((n_q, "n_q"), (n_k, "n_k"), (head_dim, "head_dim"),
                                               (head_dim_v, "head_dim_v"), (block_m, "block_m"),
                                               (block_n, "block_n")))
    blocks = cdiv(n_q, block_m)
    keys = sp.Sum(keys_loaded_forward(i * block_m, n_q, n_k, block_m, block_n, causal), (i, 0, blocks - 1))
    if not causal:
        keys = blocks * n_k
    return Traffic({"Q": n_q * head_dim, "K": head_dim * keys, "V": head_dim_v * keys},
                   {"O": n_q * head_dim_v, "LSE": n_q})


def query_rows_dkdv(start_n, n_q, block_m, causal: bool) -> sp.Expr:
    """Query rows the dK/dV kernel loads for the key block starting at ``start_n`` (tiles.query_bounds):
    query blocks from lo to ⌈N_Q/B_M⌉·B_M, lo = 0, or causal ⌊start_n/B_M⌋·B_M; the tail masked to N_Q."""
    if not causal:
        return n_q
    lo = sp.floor(sp.sympify(start_n) / block_m) * block_m
    return sp.Max(n_q - lo, 0)


def flash_backward(n_q=N, n_k=None, head_dim=d, head_dim_v=None, block_m=B_M, block_n=B_N, *,
                   causal: bool = False, group: int = 1, preprocess_block_m: int = 64) -> Traffic:
    """The three backward launches per (batch, query head), grad_lse absent (the autograd path when
    only the output is used): preprocess (read O, dO; write Delta), dK/dV (per KV head: read K, V once,
    then Q, dO, lse, Delta of the visited query blocks; write dK, dV), dQ (per query head: read Q, dO,
    lse, Delta once, K and V of the forward's key blocks; write dQ). With GQA (``group`` query heads
    per KV head) the dK/dV reads of K, V and writes of dK, dV are shared by the group: they are
    divided by ``group`` here, per query head. ``preprocess_block_m`` does not change the counts."""
    n_k = n_q if n_k is None else n_k
    head_dim_v = head_dim if head_dim_v is None else head_dim_v
    n_q, n_k, head_dim, head_dim_v, block_m, block_n = (
        _positive_int(x, name) for x, name in ((n_q, "n_q"), (n_k, "n_k"), (head_dim, "head_dim"),
                                               (head_dim_v, "head_dim_v"), (block_m, "block_m"),
                                               (block_n, "block_n")))
    group = _positive_int(group, "group")
    del preprocess_block_m  # masked by N_Q: every row of O and dO is read once whatever the block
    pre = Traffic({"O": n_q * head_dim_v, "dO": n_q * head_dim_v}, {"Delta": n_q})
    if causal:
        rows = sp.Sum(query_rows_dkdv(j * block_n, n_q, block_m, causal), (j, 0, cdiv(n_k, block_n) - 1))
    else:
        rows = cdiv(n_k, block_n) * n_q
    dkdv = Traffic({"K": n_k * head_dim / group, "V": n_k * head_dim_v / group, "Q": rows * head_dim,
                    "dO": rows * head_dim_v, "LSE": rows, "Delta": rows},
                   {"dK": n_k * head_dim / group, "dV": n_k * head_dim_v / group})
    fwd = flash_forward(n_q, n_k, head_dim, head_dim_v, block_m, block_n, causal=causal)
    dq = Traffic({"Q": n_q * head_dim, "dO": n_q * head_dim_v, "LSE": n_q, "Delta": n_q,
                  "K": fwd.reads["K"], "V": fwd.reads["V"]}, {"dQ": n_q * head_dim})
    return pre + dkdv + dq


def decode_chunk(n_k, splits, block_n):
    """Keys per split: whole tiles, ⌈⌈N_K/S⌉/B_N⌉·B_N (kernels.decode.api.partials)."""
    return cdiv(cdiv(n_k, splits), block_n) * block_n


def decode_keys_loaded(split, n_q, n_k, chunk, block_n, causal: bool) -> sp.Expr:
    """Key rows one split program loads: blocks from lo = s·chunk below hi = min(lo + chunk, N_K)
    (causal: also below N_Q), the last loaded whole up to N_K."""
    lo = split * chunk
    hi = sp.Min(lo + chunk, n_k)
    if causal:
        hi = sp.Min(hi, n_q)
    span = sp.Max(hi - lo, 0)
    return sp.Min(block_n * cdiv(span, block_n), sp.Max(n_k - lo, 0))


def _next_pow2(x: int) -> int:
    return 1 << max(0, int(x) - 1).bit_length()


def flash_decode(batch: int, heads_q: int, heads_kv: int, n_q: int, n_k: int, head_dim: int, head_dim_v: int,
                 splits: int, block_n: int, *, causal: bool = False, block_m: int = 16,
                 combine_block_d: int = 64, combine_tile: int = 8192) -> Traffic:
    """Split-KV decoding, whole call (all batches and heads; concrete sizes, since the combine
    launch's tile shape depends on powers of two of them). Partials: per (row block of the G·N_Q packed
    rows, batch·KV head, split), read its Q rows and the split's K, V rows; write m, l (float32) and
    acc (float32, d_v wide) per row and split. Combine: per (row block, head-dim slice), read m, l of
    every split (so once per slice), acc of its slice; write O and lse."""
    for x, name in ((batch, "batch"), (heads_q, "heads_q"), (heads_kv, "heads_kv"), (n_q, "n_q"), (n_k, "n_k"),
                    (head_dim, "head_dim"), (head_dim_v, "head_dim_v"), (splits, "splits"), (block_n, "block_n")):
        _positive_int(x, name)
    if heads_q % heads_kv:
        raise ValueError(f"heads_q ({heads_q}) must be a multiple of heads_kv ({heads_kv})")
    group = heads_q // heads_kv
    chunk = decode_chunk(n_k, splits, block_n)
    keys = sp.Add(*[decode_keys_loaded(sp.Integer(sp_), n_q, n_k, chunk, block_n, causal) for sp_ in range(splits)])
    row_blocks = cdiv(group * n_q, block_m)
    programs_kv = batch * heads_kv
    rows = batch * heads_q * n_q
    partial = Traffic({"Q": rows * head_dim * splits, "K": programs_kv * row_blocks * keys * head_dim,
                       "V": programs_kv * row_blocks * keys * head_dim_v},
                      {"M_ws": rows * splits, "L_ws": rows * splits, "Acc_ws": rows * splits * head_dim_v})
    block_d = min(combine_block_d, max(16, _next_pow2(head_dim_v)))
    slices = cdiv(head_dim_v, block_d)
    combine = Traffic({"M_ws": rows * splits * slices, "L_ws": rows * splits * slices,
                       "Acc_ws": rows * splits * head_dim_v}, {"O": rows * head_dim_v, "LSE": rows})
    return (partial + combine).evaluate()


def divisible_forward_closed_form(causal: bool) -> sp.Expr:
    """The forward's total per (batch, head) when B_M = B_N = B divides N (d_v = d), in closed form."""
    b, t = sp.symbols("B T", positive=True, integer=True)  # N = T·B
    if causal:
        keys = b * t * (t + 1) / 2  # query block i loads (i + 1)·B keys
    else:
        keys = t * t * b
    return sp.expand((t * b * d + 2 * d * keys + t * b * d + t * b).subs(t, N / b).subs(b, B_M))


def tiles_from_fast_memory(fast=M, head_dim=d):
    """Block sizes chosen from M: B_M = ⌊M/(5d)⌋, B_N = min(⌊M/(5d)⌋, d). The working set
    Q and acc tiles (2·B_M·d), K and V tiles (2·B_N·d) and the score tile (B_M·B_N ≤ M/5) then
    fits in M: 2M/5 + 2M/5 + M/5 = M (FlashAttention's choice, Algorithm 1, with 5 for its 4
    since this kernel also keeps acc on chip)."""
    bm = sp.floor(fast / (5 * head_dim))
    return bm, sp.Min(bm, head_dim)


def forward_theta_constant(causal: bool = False) -> sp.Expr:
    """lim_{N→∞} (forward traffic) / (N²d²/M) with B_M = M/(5d) (divisibility assumed), the constant
    of the Θ(N²d²/M) form of FlashAttention's Theorem 2 for this kernel's loop order."""
    closed = divisible_forward_closed_form(causal)
    ratio = closed.subs(B_M, M / (5 * d)) / (N**2 * d**2 / M)
    return sp.limit(ratio, N, sp.oo)


def sp_traffic(n=N, head_dim=d) -> dict[str, sp.Expr]:
    """The N × N traffic (S and P reads and writes) of each algorithm, and the totals."""
    std = standard_forward(n, head_dim, head_dim)
    return {"standard_SP": std.reads["S"] + std.writes["S"] + std.reads["P"] + std.writes["P"],
            "flash_SP": sp.Integer(0), "standard_total": std.total}


def prescale_saving(n=N, head_dim=d) -> dict[str, sp.Expr]:
    """What scaling Q (N × d) instead of S (N × N) saves in HBM traffic per head.

    Standard attention with a separate scaling pass over S: 2N² more (read and write S).
    Scaling Q in its own pass instead: 2Nd (read and write Q). Folding the scale into the GEMM
    or into the kernel's registers (this kernel multiplies the tile's scores by scale·log2 e): 0.
    Inside a fused kernel S never reaches HBM, so scaling S there costs no traffic either."""
    with_s_pass = standard_forward(n, head_dim, head_dim, separate_scale_pass=True).total
    without = standard_forward(n, head_dim, head_dim).total
    return {"scale_S_pass": sp.expand(with_s_pass - without), "scale_Q_pass": 2 * n * head_dim,
            "saving_vs_Q_pass": sp.expand(with_s_pass - without - 2 * n * head_dim),
            "saving_folded": sp.expand(with_s_pass - without), "saving_in_fused_kernel": sp.Integer(0)}


def extra_memory(n=N, head_dim=d) -> dict[str, sp.Expr]:
    """HBM beyond the inputs and output per head: the forward keeps lse (N floats) for the backward,
    the backward adds Delta (N); standard attention keeps S and P (N² each; P for the backward)."""
    return {"flash_forward": n, "flash_backward": 2 * n, "standard_forward": 2 * n * n}


def traffic_curves(ns=(256, 512, 1024, 2048, 4096, 8192), head_dim: int = 64, block: int = 64) -> dict:
    """Figure data: HBM elements per head of one forward against N, for standard attention (and its
    S/P part) and for this kernel with B_M = B_N = ``block``, non-causal and causal."""
    out = {"n": list(ns), "d": head_dim, "block": block, "standard": [], "standard_SP": [], "flash": [],
           "flash_causal": []}
    for n in ns:
        std = standard_forward(n, head_dim, head_dim)
        out["standard"].append(int(std.total))
        out["standard_SP"].append(int(std.reads["S"] + std.writes["S"] + std.reads["P"] + std.writes["P"]))
        for key, causal in (("flash", False), ("flash_causal", True)):
            out[key].append(int(flash_forward(n, n, head_dim, head_dim, block, block, causal=causal).evaluate().total))
    return out
