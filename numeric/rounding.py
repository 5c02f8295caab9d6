"""The proved rounding-error bounds of attention, evaluated on arrays; and the statistics of their confirmation.

``forward_bound(q, k, v, recipe)`` evaluates, element by element, the bound that claim
``rounding-attention-forward`` proves (and, with ``failure=Q``, the probabilistic bound of
``rounding-attention-probabilistic``, which fails anywhere in the tensor with probability ≤ Q).
Every formula comes from the derivations' SymPy expressions through ``lambdify``; this module only
supplies the arrays: exact scores and probabilities in float64 from the (already rounded) inputs,
c|Q||K|ᵀ, and the row sums the bound is made of.

The confirmation that runs implementations against it (torch's SDPA, the blocked reference, the
Triton kernel) lives in the kernels layer, ``python -m kernels.rounding_confirmation``, and builds on
this module: here are only the NumPy/SciPy parts it reports with (the binomial test of the
probabilistic bound, the tightness table). Nothing here imports torch or the kernels.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import sympy as sp
from scipy import stats

from proofs.theorems import rounding as R

FAILURE = 0.01  # the probabilistic bound's stated failure probability, per output tensor
ALPHA = 0.01  # level of the binomial test of that probability


@lru_cache(maxsize=None)
def _derived():
    """(forward result, probabilistic result), refusing derivations that did not prove."""
    from numeric.derived import proved

    return proved("rounding-attention-forward").result, proved("rounding-attention-probabilistic").result


_ALL = (R.U_IN, R.U_A, R.U_P, R.MU, R.LAMBDA_A, R.LAMBDA_P, R.LAMBDA_O, R.HEAD_DIM, R.BLOCK_N, R.BLOCKS, R.KEYS,
        R.QK_ABS, R.GAP, R.DELTA_MAX, R.T_P, R.PRV, R.PB, R.O_ABS, R.V_L1, R.ZETA, R.LAM)


@lru_cache(maxsize=None)
def _fn(which: str, key: str):
    """A derived expression as a NumPy function of every bound symbol (keyword names = symbol names)."""
    fwd, prob = _derived()
    expr = (prob if which == "prob" else fwd)[key]
    return sp.lambdify(_ALL, expr, "numpy")


def _call(which: str, key: str, values: dict):
    args = [values.get(s, 0.0) for s in _ALL]
    with np.errstate(over="ignore", invalid="ignore"):
        return _fn(which, key)(*args)


@dataclass
class Bound:
    deterministic: np.ndarray  # (..., Nq, Dv): proved, always
    probabilistic: np.ndarray | None  # holds everywhere with probability ≥ 1 − failure
    failure: float | None
    lam: float | None


@lru_cache(maxsize=None)
def _lam_fn():
    """λ as derived from the stated failure probability Q and the tensor's chain count C."""
    res = _derived()[1]
    return sp.lambdify((res["chains"], res["q_fail"], R.U_A), res["lam_of_q"], "math")


def _recipe_values(recipe: R.Recipe) -> dict:
    return {s: float(v) for s, v in recipe.values.items()}


def forward_bound(q, k, v, recipe: R.Recipe, *, scale=None, is_causal=False, failure: float | None = None,
                  independent_axes: int = 0) -> Bound:
    """The per-element bound on |computed − exact| for attention of q (..., Nq, D), k (..., Nk, D),
    v (..., Nk, Dv), given as float64 arrays holding the values the kernel reads (rounded inputs).

    Heads must already match (repeat KV heads for GQA). Rows with no visible key are exact zeros.
    ``independent_axes``: how many leading axes index independent inputs stacked into one call
    (a confirmation's samples): the probabilistic bound then fails with probability ≤ ``failure``
    in each of them, its λ counting one input's rounding chains, not the whole array's."""
    q, k, v = (np.asarray(t, dtype=np.float64) for t in (q, k, v))
    if q.ndim < 2 or k.shape[-1] != q.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(f"q, k, v shapes do not fit attention: {q.shape}, {k.shape}, {v.shape}")
    if failure is not None and not 0.0 < failure < 1.0:
        raise ValueError(f"failure must be a probability in (0, 1), got {failure!r}")
    if isinstance(independent_axes, bool) or not isinstance(independent_axes, int) or \
            not 0 <= independent_axes <= q.ndim - 2:
        raise ValueError(f"independent_axes must be an int from 0 to {q.ndim - 2} (q's axes before (Nq, D)), "
                         f"got {independent_axes!r}")
    n_q, d = q.shape[-2], q.shape[-1]
    n_k, d_v = k.shape[-2], v.shape[-1]
    c = 1.0 / math.sqrt(d) if scale is None else float(scale)
    visible = np.ones((n_q, n_k), dtype=bool)
    if is_causal:
        visible = np.arange(n_k)[None, :] <= np.arange(n_q)[:, None]  # top-left
    s = c * (q @ np.swapaxes(k, -1, -2))  # (..., Nq, Nk) exact scores
    s = np.where(visible, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)  # (..., Nq, 1)
    m = np.where(np.isfinite(m), m, 0.0)
    gap = np.where(visible, m - s, 0.0)  # (..., Nq, Nk) ≥ 0
    log_l = np.log(np.where(visible, np.exp(-gap), 0.0).sum(-1, keepdims=True))  # (..., Nq, 1)
    log_p = np.where(visible, -gap - log_l, -np.inf)
    p = np.exp(log_p)  # (..., Nq, Nk) exact probabilities
    o_abs = np.abs(p @ v)  # (..., Nq, Dv)
    v_abs = np.abs(v)
    qk_abs = abs(c) * (np.abs(q) @ np.swapaxes(np.abs(k), -1, -2))  # (..., Nq, Nk)
    v_l1 = visible.astype(np.float64) @ v_abs  # (..., Nq, Dv): Σ over visible keys of |v|
    n_keys = visible.sum(-1)[:, None].astype(np.float64)  # (Nq, 1)

    base = _recipe_values(recipe) | {R.HEAD_DIM: d, R.QK_ABS: qk_abs, R.GAP: gap, R.O_ABS: o_abs, R.V_L1: v_l1,
                                     R.KEYS: n_keys}
    delta = _call("fwd", "delta", base)
    base[R.DELTA_MAX] = np.where(visible, delta, 0.0).max(-1, keepdims=True)  # (..., Nq, 1)
    h = _call("fwd", "H", base)  # (..., Nq, Nk)

    lam = None
    if failure is not None:
        rows = q[..., 0].size // math.prod(q.shape[:independent_axes])  # query rows of one input
        chains = (2 + d_v) * rows * n_k + rows * d_v
        lam = float(_lam_fn()(chains, failure, float(recipe.values[R.U_A])))
    det, prb = None, None
    for block in recipe.block_n:
        bn = min(block, n_k)
        vals = base | {R.BLOCK_N: bn, R.BLOCKS: math.ceil(n_k / bn), R.LAM: lam or 1.0}
        one_det = _bound_for(vals, h, log_p, p, v_abs, visible, "fwd")
        det = one_det if det is None else np.maximum(det, one_det)
        if failure is not None:
            # the probabilistic score error enters H through Δ: recompute with min(γ, γ̃)
            pv = vals | {}
            score_p = _call("prob", "score", pv)
            scale_ratio = score_p / _call("fwd", "score", pv)
            pv[R.QK_ABS] = qk_abs * scale_ratio  # Δ = score·c|q||k|: the same H formula with the smaller score
            delta_p = _call("fwd", "delta", pv)
            pv[R.DELTA_MAX] = np.where(visible, delta_p, 0.0).max(-1, keepdims=True)
            h_p = _call("fwd", "H", pv)
            one = _bound_for(pv, h_p, log_p, p, v_abs, visible, "prob")
            prb = one if prb is None else np.maximum(prb, one)
    return Bound(det, prb, failure, lam)


def _bound_for(vals, h, log_p, p, v_abs, visible, which) -> np.ndarray:
    """E and the final bound for one block size; ``which`` picks the chain forms (fwd or prob)."""
    log_fa = np.log1p(_call(which, "chain_a", vals))
    log_fl = np.log1p(_call(which, "chain_l", vals))
    with np.errstate(over="ignore", invalid="ignore"):
        # p·R = p(e^H(1 + Θ_a) − 1), evaluated in log space: p underflows where e^H does not matter
        p_r = np.where(visible, np.expm1(np.minimum(h + log_fa, 700.0)) * p, 0.0)
        p_r = np.where(visible & (h + log_fa > 700.0), np.exp(np.minimum(log_p + h + log_fa, 700.0)), p_r)
        p_b = np.where(visible, np.expm1(np.minimum(h + log_fl, 700.0)) * p, 0.0)
        p_b = np.where(visible & (h + log_fl > 700.0), np.exp(np.minimum(log_p + h + log_fl, 700.0)), p_b)
    prv = p_r @ v_abs  # (..., Nq, Dv)
    pb = p_b.sum(-1, keepdims=True)  # (..., Nq, 1)
    t_p = vals[R.U_P] * ((p + p_r) @ v_abs)
    if which == "prob":
        with np.errstate(over="ignore", invalid="ignore"):  # +∞ where the bound is vacuous anyway
            hoeffding = vals[R.LAM] * vals[R.U_P] * np.sqrt((p + p_r)**2 @ v_abs**2)
        t_p = np.minimum(t_p, hoeffding)
    amplification = (1 + vals[R.U_P]) * (1 + _call(which, "chain_a", vals))
    vals = vals | {R.PRV: prv, R.PB: pb, R.T_P: t_p, R.ZETA: _call("fwd", "zeta", vals)}
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        e = _call("fwd", "E", vals)
        denominator = 1 - pb - vals[R.KEYS] * vals[R.ZETA]
        e = np.where((denominator > 0) & (amplification <= 2) & np.isfinite(e), e, np.inf)
        return np.nan_to_num(_final_fn()(e, *[vals.get(sym, 0.0) for sym in _ALL]), nan=np.inf, posinf=np.inf)


@lru_cache(maxsize=None)
def _final_fn():
    """The derived final step as a function of E's value (+∞ where the bound is vacuous) and the symbols."""
    fwd = _derived()[0]
    e_sym = sp.Symbol("E_value", nonnegative=True)
    return sp.lambdify((e_sym,) + _ALL, fwd["bound"].subs(fwd["E"], e_sym), "numpy")


# ============================================================================= confirmation records

DTYPES = ("float32", "float16", "bfloat16")  # the formats confirmed, in the order the tables list them


def binomial_p_value(exceedances: int, trials: int, failure: float = FAILURE) -> float:
    """P(X ≥ exceedances) for X ~ Binomial(trials, failure): small means the stated probability is too low."""
    return float(stats.binom.sf(exceedances - 1, trials, failure)) if exceedances else 1.0


def _quantiles(x):
    x = np.asarray(x, dtype=np.float64)
    return float(np.median(x)), float(np.quantile(x, 0.99)), float(x.max())


def tightness_table(records) -> str:
    """Observed/bound ratios (median, p99, max) by dtype and N, deterministic, probabilistic, empirical."""
    lines = [f"{'impl':<16} {'dtype':<9} {'N':>5} {'n':>5}  {'det: median   p99     max':<30} "
             f"{'prob: median   p99     max':<31} {'empirical: median  p99     max'}"]
    keys = sorted({(r["impl"], r["dtype"], r["n"]) for r in records if r["source"] == "random"},
                  key=lambda t: (t[0], DTYPES.index(t[1]), t[2]))
    for impl, dtype, n in keys:
        rs = [r for r in records if r["source"] == "random" and (r["impl"], r["dtype"], r["n"]) == (impl, dtype, n)]
        det, prob, emp = (_quantiles([r[f] for r in rs]) for f in ("det_ratio", "prob_ratio", "emp_ratio"))
        fmt = lambda t: " ".join(f"{x:8.2e}" for x in t)  # noqa: E731
        lines.append(f"{impl:<16} {dtype:<9} {n:>5} {len(rs):>5}  {fmt(det):<30} {fmt(prob):<31} {fmt(emp)}")
    return "\n".join(lines)


def summary(records) -> str:
    """Per (impl, dtype): deterministic violations, probabilistic exceedances against what the binomial allows."""
    lines = [f"impl             dtype     samples  det-violations  prob-exceed  (allowed by binomial, α={ALPHA:g})  "
             "p-value   closest prob bound to largest error"]
    for impl in sorted({r["impl"] for r in records}):
        for dtype in DTYPES:
            rs = [r for r in records if r["impl"] == impl and r["dtype"] == dtype]
            if not rs:
                continue
            viol = sum(r["det_ratio"] > 1 for r in rs)
            rand = [r for r in rs if r["source"] == "random"]
            exceed = sum(r["prob_ratio"] > 1 for r in rand)
            p = binomial_p_value(exceed, len(rand)) if rand else float("nan")
            allowed = int(stats.binom.isf(ALPHA, len(rand), FAILURE)) if rand else 0
            worst = max((r["prob_ratio"] for r in rand), default=float("nan"))
            lines.append(f"{impl:<16} {dtype:<9} {len(rs):>7}  {viol:>14}  {exceed:>11}  {allowed:>29}  {p:8.3f}  "
                         f"bound = {1 / worst if worst else float('inf'):.1f}× largest error")
    return "\n".join(lines)
