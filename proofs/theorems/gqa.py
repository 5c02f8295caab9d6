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

Mapping = Callable[[int, int, int], int]


def kv_head(h: int, n_heads_q: int, n_heads_kv: int) -> int:
    """The KV head that query head h reads: ⌊h / G⌋ with G = n_heads_q / n_heads_kv."""
    hq, hkv = int(as_dimension(n_heads_q, "n_heads_q")), int(as_dimension(n_heads_kv, "n_heads_kv"))
    if hq % hkv:
        raise ValueError(f"n_heads_q ({hq}) must be a multiple of n_heads_kv ({hkv})")
    if isinstance(h, bool) or not isinstance(h, numbers.Integral) or not 0 <= h < hq:
        raise ValueError(f"h must be a query head index in 0..{hq - 1}, got {h!r}")
    return int(h) // (hq // hkv)


def repeat_interleave(heads: list, times: int) -> list:
    """Each KV head repeated ``times`` times in place: [k0, k0, k1, k1] for times = 2."""
    return [x for x in heads for _ in range(times)]


def _attention(q: sp.Matrix, K: sp.Matrix, V: sp.Matrix) -> sp.Matrix:
    """One head: softmax(q Kᵀ) V for a single query row."""
    s = q * K.T  # (1, N_k)
    w = [sp.exp(x) for x in s]
    return sum((wi * V.row(j) for j, wi in enumerate(w)), sp.zeros(1, V.cols)) / sum(w)


def _heads(name: str, count: int, rows: int, d: int) -> list[sp.Matrix]:
    return [sp.Matrix(rows, d, lambda i, j: sp.Symbol(f"{name}{h}_{i + 1}{j + 1}", real=True)) for h in range(count)]


def gqa_equals_repeated_mha(mapping: Mapping | None = None, *, n_heads_q: int = 4, n_heads_kv: int = 2,
                            n_k: int = 2, d: int = 1) -> Derivation:
    """GQA output of every query head equals MHA over the KV heads repeated G times.

    ``mapping(h, n_heads_q, n_heads_kv)`` defaults to ⌊h/G⌋; pass another to have it judged
    (h mod H_kv, the layout of ``repeat`` rather than ``repeat_interleave``, is refused).
    """
    mapping = mapping or kv_head
    hq, hkv = int(as_dimension(n_heads_q, "n_heads_q")), int(as_dimension(n_heads_kv, "n_heads_kv"))
    kv_head(0, hq, hkv)  # validates divisibility
    g = hq // hkv
    pf = Proof("gqa-equals-repeated-mha")
    Qs, Ks, Vs = _heads("q", hq, 1, d), _heads("k", hkv, n_k, d), _heads("v", hkv, n_k, d)
    K_rep, V_rep = repeat_interleave(Ks, g), repeat_interleave(Vs, g)  # H_q heads each
    mha = [_attention(Qs[h], K_rep[h], V_rep[h]) for h in range(hq)]
    gqa = [_attention(Qs[h], Ks[mapping(h, hq, hkv)], Vs[mapping(h, hq, hkv)]) for h in range(hq)]
    rule = pf.stated(nt.kv_head(nt.H_IDX))
    stated = lambda h, g: int(rule.rhs.subs({nt.H_IDX: h, G: g}))  # noqa: E731

    def layouts() -> tuple[bool, str]:
        # repeat_interleave's head h, the mapping under test and the stated rule, for every H_kv | H_q ≤ 8.
        for n_q in range(1, 9):
            for n_kv in (k for k in range(1, n_q + 1) if n_q % k == 0):
                heads = repeat_interleave(list(range(n_kv)), n_q // n_kv)
                for h in range(n_q):
                    if not heads[h] == mapping(h, n_q, n_kv) == stated(h, n_q // n_kv):
                        return False, (f"H_q = {n_q}, H_kv = {n_kv}, h = {h}: repeat_interleave gives {heads[h]}, "
                                       f"the mapping {mapping(h, n_q, n_kv)}, the statement {stated(h, n_q // n_kv)}")
        return True, "repeat_interleave, the mapping and the stated ⌊h/G⌋ agree for every H_kv | H_q ≤ 8"

    same_heads = pf.holds("definition of repeat_interleave", "repeated KV head h is KV head ⌊h/G⌋, every H_kv | H_q ≤ 8",
                          nt.kv_head(nt.H_IDX), rule.rhs, layouts)
    same_out = pf.equal("substitution", f"so every head's output agrees: GQA(h) = MHA on repeated KV (H_q = {hq}, "
                        f"H_kv = {hkv}, G = {g}; {n_k} keys, head dim {d}, entries symbolic)", gqa, mha)
    pf.holds("GQA = MHA with repeat_interleave", "query head h reads KV head ⌊h/G⌋", nt.kv_head(nt.H_IDX), rule.rhs,
             lambda: (same_heads and same_out, "the layouts and the outputs agree (above)"), establishes=rule)

    def cache_entries() -> tuple[bool, str]:
        grouped = {s for M in Ks + Vs for s in M}
        repeated = [s for M in K_rep + V_rep for s in M]
        return len(repeated) == g * len(grouped), f"{len(grouped)} stored entries against {len(repeated)}: factor {g}"

    pf.holds("counting entries", "the KV cache stores H_kv heads instead of H_q: G times fewer entries",
             sp.Symbol("cache_MHA / cache_GQA"), g, cache_entries)
    cache_mha, cache_gqa = 2 * B * H_Q * N * D, 2 * B * H_KV * N * D
    pf.equal("H_q = G·H_kv", "in general: cache(MHA)/cache(GQA) = 2BH_qNd / 2BH_kvNd = G",
             (cache_mha / cache_gqa).subs(H_Q, G * H_KV), G,
             subject=sp.Symbol("cache_MHA") / sp.Symbol("cache_GQA"))
    return pf.finish(Result(cache_ratio=G, cache_gqa=cache_gqa, cache_mha=cache_mha))
