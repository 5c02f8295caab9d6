"""Derived results from ``proofs`` as NumPy callables (``sympy.lambdify``), built once.

Every claimed value the numeric layer checks comes through here: from the SymPy expression a
derivation proved, never from a constant typed again by hand. A derivation that did not come
out "proved" is refused rather than confirmed.
"""
from __future__ import annotations

from functools import lru_cache

import sympy as sp

from proofs.claims import proved


@lru_cache(maxsize=None)
def dot_product_moment_functions():
    """(mean, variance) of q·k as functions of (d_k, μ_q, μ_k, σ_q², σ_k²)."""
    from proofs.theorems import dot_product as dp

    r = proved("dot-product-moments").result
    args = (dp.D_K, dp.MU_Q, dp.MU_K, dp.VAR_Q, dp.VAR_K)
    return sp.lambdify(args, r.mean, "numpy"), sp.lambdify(args, r.variance, "numpy")


@lru_cache(maxsize=None)
def in_d_k(claim_id: str, key: str):
    """A result of ``claim_id`` that depends on d_k only, as a function of d_k."""
    from proofs.theorems.dot_product import D_K

    return as_function_of_d_k(proved(claim_id).result[key], D_K)


def as_function_of_d_k(expr, d_k_symbol=None):
    from proofs.theorems.dot_product import D_K

    sym = d_k_symbol or D_K
    expr = sp.sympify(expr)
    extra = expr.free_symbols - {sym}
    if extra:
        raise ValueError(f"claimed must be an expression in d_k only, got free symbols {sorted(map(str, extra))}")
    return sp.lambdify(sym, expr, "numpy")


@lru_cache(maxsize=None)
def jacobian_entry():
    """J_ij = f(a_i, a_j, δ_ij) from the general-n softmax Jacobian derivation."""
    from proofs.theorems import softmax as sm

    entry = proved("softmax-jacobian").result
    x, y, delta = sp.symbols("x y delta")
    entry = entry.subs(sp.KroneckerDelta(sm._i, sm._j), delta).subs({sm._a[sm._i]: x, sm._a[sm._j]: y})
    if entry.free_symbols != {x, y, delta}:
        raise RuntimeError(f"unexpected form of the derived Jacobian entry: {entry}")
    return sp.lambdify((x, y, delta), entry, "numpy")


@lru_cache(maxsize=None)
def merge_with_reference():
    """(l, o) of the merged state for an explicit reference M, over (m1, l1, o1, m2, l2, o2, M).

    The merge derivation proves the rule for any reference (the max only prevents overflow),
    so a finite stand-in reference for empty (−∞) states is licensed by the same theorem.
    """
    from proofs.theorems import online_softmax as om

    proved("online-softmax-merge")
    ref = sp.Symbol("M", real=True)
    _, l, o = om.merge(*om.STATE_SYMBOLS, reference=ref)
    args = (*om.STATE_SYMBOLS, ref)
    return sp.lambdify(args, l, "numpy"), sp.lambdify(args, o, "numpy")


@lru_cache(maxsize=None)
def spectrum_bounds() -> tuple[float, float]:
    r = proved("softmax-jacobian-spectrum").result
    return float(r.max_eigenvalue), float(r.diagonal_max)


@lru_cache(maxsize=None)
def logsumexp_merged():
    r = proved("logsumexp-merge").result
    return sp.lambdify(r.symbols, r.merged, "numpy")


@lru_cache(maxsize=None)
def prescaled_scores():
    """s(QKᵀ) from the prescaled-query derivation, as f(s, q…, k…), with (n_q, n_k, d)."""
    r = proved("prescaled-query").result
    scores = r.scores
    s = sp.Symbol("s", positive=True)
    syms = sorted(scores.free_symbols - {s}, key=lambda x: (str(x)[0], int(str(x)[1:])))
    qs = [x for x in syms if str(x).startswith("q")]
    ks = [x for x in syms if str(x).startswith("k")]
    n_q, n_k = scores.shape
    return sp.lambdify((s, *qs, *ks), scores, "numpy"), (n_q, n_k, len(qs) // n_q)


@lru_cache(maxsize=None)
def real_score_moment_functions(claim_id: str):
    """(mean, variance, M symbols, index forms) of a real-attention score claim.

    ``mean(m)``/``variance(m)`` take the flattened entries of M = W_Q W_Kᵀ at the derivation's
    explicit size; ``index_value(key, M)`` evaluates the general-n index form at any numeric M."""
    r = proved(claim_id).result
    syms = list(r.M)
    mean = sp.lambdify(syms, r.mean, "numpy")
    variance = sp.lambdify(syms, r.variance, "numpy")
    return mean, variance, r.M.shape[0], {k: r[k] for k in r if k.endswith("index_form")}


def index_form_value(expr, M) -> float:
    """A general-n index form (sums over a, b of M[a, b]) evaluated at a numeric n×n matrix."""
    n_sym = [s for s in expr.free_symbols if str(s) == "n"]
    expanded = expr.subs(n_sym[0], M.shape[0]).doit() if n_sym else expr.doit()
    value = expanded.replace(lambda e: isinstance(e, sp.Indexed),
                             lambda e: sp.Float(M[int(e.indices[0]) - 1, int(e.indices[1]) - 1], 30))
    return float(value)


@lru_cache(maxsize=None)
def scale_trap_limits():
    r = proved("scale-trap-limits").result
    d_k, n, delta, _t, _gamma = r.symbols
    return (sp.lambdify(d_k, r.gap_std_unscaled, "numpy"),
            sp.lambdify((d_k, n, delta), r.uniform_tail_bound, "numpy"))


@lru_cache(maxsize=None)
def attention_gradients():
    """(f, shapes): f(Q, K, V, dO, scale) -> (dQ, dK, dV) from the attention-backward derivation."""
    import numpy as np

    r = proved("attention-backward").result
    args = [*r.Q, *r.K, *r.V, *r.dO, r.scale]
    fns = [sp.lambdify(args, r[key], "numpy") for key in ("dQ", "dK", "dV")]

    def f(Q, K, V, dO, scale):
        flat = [*np.ravel(Q), *np.ravel(K), *np.ravel(V), *np.ravel(dO), scale]
        return tuple(np.array(g(*flat), dtype=np.float64) for g in fns)

    return f, (r.Q.shape, r.K.shape, r.V.shape, r.dO.shape)
