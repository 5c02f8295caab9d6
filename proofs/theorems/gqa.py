"""Grouped-query attention: G query heads share one KV head.

GQA with H_q query heads and H_kv KV heads (G = H_q / H_kv) equals multi-head attention
whose KV heads are each repeated G times (``repeat_interleave``): query head h reads
KV head ⌊h/G⌋. The KV cache holds H_kv heads instead of H_q: smaller by the factor G.
"""
from __future__ import annotations

import numbers
from typing import Callable

import sympy as sp

from proofs import notation as nt
from proofs.engine import Derivation, Proof, Result
from proofs.validate import as_dimension

H_Q, H_KV, G, B, N, D = sp.symbols("H_q H_kv G B N d", integer=True, positive=True)
HEAD = nt.H_IDX  # a query head index h ≥ 0

# The statement's objects: per-head queries, the KV heads, their repeat_interleave'd copies, any
# per-head attention function, and the KV cache's entry count for H heads.
Q_HEADS, K_HEADS, V_HEADS = sp.IndexedBase("Q"), sp.IndexedBase("K"), sp.IndexedBase("V")
K_REPEATED, V_REPEATED = sp.IndexedBase("K_rep"), sp.IndexedBase("V_rep")
attention = sp.Function("attn")
cache = sp.Function("cache")
_HEADS, _B, _T, _C = sp.symbols("H b t c", integer=True, positive=True)  # a head count; bound indices

# (h, H_q, H_kv) -> the KV head query head h reads, as a SymPy expression in symbolic sizes.
Mapping = Callable[[sp.Expr, sp.Expr, sp.Expr], sp.Expr]


def kv_head_rule(h, n_heads_q, n_heads_kv) -> sp.Expr:
    """⌊h / G⌋ with G = H_q / H_kv, for symbolic or explicit sizes: ⌊h·H_kv / H_q⌋."""
    return sp.floor(sp.sympify(h) * n_heads_kv / n_heads_q)


def kv_head(h: int, n_heads_q: int, n_heads_kv: int) -> int:
    """The KV head that query head h reads: ⌊h / G⌋ with G = n_heads_q / n_heads_kv."""
    hq, hkv = int(as_dimension(n_heads_q, "n_heads_q")), int(as_dimension(n_heads_kv, "n_heads_kv"))
    if hq % hkv:
        raise ValueError(f"n_heads_q ({hq}) must be a multiple of n_heads_kv ({hkv})")
    if isinstance(h, bool) or not isinstance(h, numbers.Integral) or not 0 <= h < hq:
        raise ValueError(f"h must be a query head index in 0..{hq - 1}, got {h!r}")
    return int(kv_head_rule(int(h), hq, hkv))


def repeat_interleave(heads: list, times: int) -> list:
    """Each KV head repeated ``times`` times in place: [k0, k0, k1, k1] for times = 2."""
    return [x for x in heads for _ in range(times)]


def gqa_equals_repeated_mha(mapping: Mapping | None = None) -> Derivation:
    """GQA output of every query head equals MHA over the KV heads repeated G times, for any H_q, H_kv.

    ``mapping(h, H_q, H_kv)`` (a SymPy expression in symbolic sizes) defaults to ⌊h·H_kv/H_q⌋; pass another
    to have it judged (h mod H_kv, the layout of ``repeat`` rather than ``repeat_interleave``, is refused).
    """
    mapping = mapping or kv_head_rule
    pf = Proof("gqa-equals-repeated-mha")
    rule = pf.stated(nt.kv_head(HEAD))
    same_output = pf.stated(attention(Q_HEADS[HEAD], K_HEADS[nt.kv_head(HEAD)], V_HEADS[nt.kv_head(HEAD)]))
    ratio = pf.stated(cache(H_Q) / cache(H_KV))
    impl = pf.define(nt.kv_head(HEAD), mapping(HEAD, H_Q, H_KV), "the KV head query head h reads, as implemented",
                     forall=[HEAD])
    k_rep = pf.define(K_REPEATED[HEAD], K_HEADS[sp.floor(HEAD / G)], "repeat_interleave(K, G, dim=heads): "
                      "output head h is input head ⌊h/G⌋ (PyTorch's documented layout)", forall=[HEAD])
    v_rep = pf.define(V_REPEATED[HEAD], V_HEADS[sp.floor(HEAD / G)], "repeat_interleave(V, G, dim=heads)",
                      forall=[HEAD])
    sizes = pf.define(cache(_HEADS), 2 * sp.Sum(1, (_B, 1, B), (_T, 1, N), (_C, 1, D)) * _HEADS,
                      "the KV cache for H heads: K and V, each B × H × N × d entries", forall=[_HEADS])
    multiple = pf.assume(sp.Eq(H_Q, G * H_KV, evaluate=False), "H_q a multiple of H_kv: H_q = G·H_kv")
    pf.rewrite(rule.lhs, rule.rhs, [impl, multiple], "query head h reads KV head ⌊h·H_kv/H_q⌋ = ⌊h/G⌋, any H_q, "
               "H_kv", label="GQA = MHA with repeat_interleave")
    pf.rewrite(same_output.lhs, same_output.rhs, [impl, multiple, k_rep, v_rep], "so every head's output agrees: "
               "GQA reads the KV head that repeat_interleave puts at position h", label="substitution")
    pf.rewrite(ratio.lhs, ratio.rhs, [sizes, multiple], "cache(MHA)/cache(GQA) = 2BH_qNd / 2BH_kvNd = G",
               label="H_q = G·H_kv")
    return pf.finish(Result(cache_ratio=G, cache_gqa=2 * B * H_KV * N * D, cache_mha=2 * B * H_Q * N * D))
