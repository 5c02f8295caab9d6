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


# The sizes the attention-backward confirmation draws its cases at: the claim is proved for any sizes,
# and these are small enough that every entry's expression lambdifies at once yet have N_k = 3 > 2 keys,
# more than one row and more than one column everywhere, so no sum or row correction degenerates.
BACKWARD_SIZES = {"N_q": 2, "N_k": 3, "d": 2, "d_v": 2}


def _entrywise(rhs, indices, shape, sizes, inputs):
    """An index-form right-hand side over entry ``indices`` (1-based) as a NumPy function of ``inputs``.

    ``sizes`` maps the size symbols to integers; ``inputs`` is a sequence of (IndexedBase, shape), or
    (Symbol, None) for a scalar. Every entry is the sum written out at those sizes; each indexed input
    entry becomes one argument."""
    import numpy as np

    arg_of = {}
    for base, base_shape in inputs:
        if base_shape is None:
            arg_of[base] = sp.Dummy(str(base))
            continue
        for idx in np.ndindex(base_shape):
            arg_of[base[tuple(i + 1 for i in idx)]] = sp.Dummy(f"{base}_{'_'.join(map(str, idx))}")
    entries = []
    for idx in np.ndindex(shape):
        e = sp.sympify(rhs).subs(sizes).subs({s: i + 1 for s, i in zip(indices, idx)}).doit()
        e = e.xreplace(arg_of)
        stray = e.atoms(sp.Indexed) | (e.free_symbols - set(arg_of.values()))
        if stray:
            raise ValueError(f"entry {idx} of {rhs} still reads {sorted(map(str, stray))}: not an input")
        entries.append(e)
    fn = sp.lambdify(list(arg_of.values()), entries, "numpy")

    def f(*arrays):
        flat = [v for a in arrays for v in np.ravel(a)]
        return np.array(fn(*flat), dtype=np.float64).reshape(shape)

    return f


@lru_cache(maxsize=None)
def attention_gradients():
    """(f, shapes): f(Q, K, V, dO, scale) -> (dQ, dK, dV) from the attention-backward derivation.

    The claim is proved in index form over symbolic sizes: dV, dP, dQ and dK are read from the proved
    statement's conjuncts, dS from the derivation's result (the dS rule it proved, with its row
    correction written as a sum), P from the derivation's definition premise (softmax of S by rows),
    each written out at ``BACKWARD_SIZES``. S = scale·QKᵀ is the claim's assumption, a NumPy product."""
    from proofs import checker

    d = proved("attention-backward")
    cert = d.certificate
    defined = [checker.read_in(cert, p["statement"]) for p in cert["premises"] if p["kind"] == "definition"]
    softmax_def = [e for e in defined if isinstance(e.lhs, sp.Indexed) and str(e.lhs.base) == "P"]
    if len(softmax_def) != 1:
        raise ValueError("attention-backward no longer defines P = softmax(S) by one definition premise")
    by_lhs = {str(c.lhs.base): c for c in d.statement.args if isinstance(c.lhs, sp.Indexed)
              and len(c.lhs.indices) == 2}
    missing = {"dV", "dP", "dQ", "dK"} - set(by_lhs)
    if missing:
        raise ValueError(f"attention-backward's statement no longer states {sorted(missing)}")
    rule = d.result.rule
    size_symbols = {str(s): s for c in d.statement.args for s in c.free_symbols} | \
        {str(s): s for s in rule.free_symbols}
    sizes = {size_symbols[k]: v for k, v in BACKWARD_SIZES.items() if k in size_symbols}
    n_q, n_k, dh, dv = (BACKWARD_SIZES[k] for k in ("N_q", "N_k", "d", "d_v"))
    bases = {str(b): b for e in (*d.statement.args, rule, softmax_def[0]) for b in e.atoms(sp.IndexedBase)}
    scale = next(s for s in size_symbols.values() if str(s) == "scale")

    def entries(name):
        lhs = by_lhs[name].lhs
        return lhs.indices, by_lhs[name].rhs

    P_of_S = _entrywise(softmax_def[0].rhs, softmax_def[0].lhs.indices, (n_q, n_k), sizes,
                        [(bases["S"], (n_q, n_k))])
    idx, rhs = entries("dV")
    dV = _entrywise(rhs, idx, (n_k, dv), sizes, [(bases["P"], (n_q, n_k)), (bases["dO"], (n_q, dv))])
    idx, rhs = entries("dP")
    dP = _entrywise(rhs, idx, (n_q, n_k), sizes, [(bases["dO"], (n_q, dv)), (bases["V"], (n_k, dv))])
    a, b = sorted((s for s in rule.free_symbols if str(s) in ("a", "b")), key=str)
    dS = _entrywise(rule, (a, b), (n_q, n_k), sizes, [(bases["P"], (n_q, n_k)), (bases["dP"], (n_q, n_k))])
    idx, rhs = entries("dQ")
    dQ = _entrywise(rhs, idx, (n_q, dh), sizes, [(bases["dS"], (n_q, n_k)), (bases["K"], (n_k, dh)), (scale, None)])
    idx, rhs = entries("dK")
    dK = _entrywise(rhs, idx, (n_k, dh), sizes, [(bases["dS"], (n_q, n_k)), (bases["Q"], (n_q, dh)), (scale, None)])

    def f(Q, K, V, dO, scale_value):
        P = P_of_S(scale_value * Q @ K.T)  # (n_q, n_k)
        ds = dS(P, dP(dO, V))  # (n_q, n_k)
        return dQ(ds, K, scale_value), dK(ds, Q, scale_value), dV(P, dO)

    return f, ((n_q, dh), (n_k, dh), (n_k, dv), (n_q, dv))
