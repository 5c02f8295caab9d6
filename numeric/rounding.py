"""The proved rounding-error bounds of attention, evaluated on arrays; and their confirmation.

``forward_bound(q, k, v, recipe)`` evaluates, element by element, the bound that claim
``rounding-attention-forward`` proves (and, with ``failure=Q``, the probabilistic bound of
``rounding-attention-probabilistic``, which fails anywhere in the tensor with probability ≤ Q).
Every formula comes from the derivations' SymPy expressions through ``lambdify``; this module only
supplies the arrays: exact scores and probabilities in float64 from the (already rounded) inputs,
c|Q||K|ᵀ, and the row sums the bound is made of.

``python -m numeric.rounding`` runs the confirmation: random inputs per dtype and length, plus the
conformance harness's extreme cases, against torch's CPU SDPA, a float32 blocked reference and
(a few cases) the project's Triton kernel under the interpreter. It prints violation counts, the
binomial test of the probabilistic bound, and the tightness table. torch and the kernels are
imported inside the confirmation only: the bound itself needs NumPy and SymPy.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import sympy as sp

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


def forward_bound(q, k, v, recipe: R.Recipe, *, scale=None, is_causal=False, failure: float | None = None) -> Bound:
    """The per-element bound on |computed − exact| for attention of q (..., Nq, D), k (..., Nk, D),
    v (..., Nk, Dv), given as float64 arrays holding the values the kernel reads (rounded inputs).

    Heads must already match (repeat KV heads for GQA). Rows with no visible key are exact zeros."""
    q, k, v = (np.asarray(t, dtype=np.float64) for t in (q, k, v))
    if q.ndim < 2 or k.shape[-1] != q.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(f"q, k, v shapes do not fit attention: {q.shape}, {k.shape}, {v.shape}")
    if failure is not None and not 0.0 < failure < 1.0:
        raise ValueError(f"failure must be a probability in (0, 1), got {failure!r}")
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
        chains = (2 + d_v) * q[..., 0].size * n_k + q[..., 0].size * d_v
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


# ============================================================================= confirmation

LENGTHS = (1, 2, 3, 5, 8, 16, 31, 64, 127, 256, 511, 1024, 2048, 4096)
DTYPES = ("float32", "float16", "bfloat16")
HEAD_DIMS = (32, 64, 128)
LONG = 256  # above this length a quarter of the samples: 1000 × 10 + 250 × 4 = 11000 per dtype
N_QUERIES = 4  # rows per sample: the bound is per row, so few rows reach long key lengths cheaply


def _impls(kernel: bool):
    """(name, fn, recipe name) of the implementations confirmed; torch and kernels imported here only."""
    import torch.nn.functional as F

    from kernels.mutants import blocked_attention

    out = [("torch-sdpa", F.scaled_dot_product_attention, "torch-cpu-sdpa"),
           ("float32-blocked", blocked_attention, "float32-blocked")]
    if kernel:
        from kernels.flash import flash_attention

        out.append(("triton-kernel", flash_attention, "flash-attention-2"))
    return out


def impl_recipe(recipe_name: str, dtype: str) -> R.Recipe:
    """The declared recipe; the project's kernel keeps bfloat16 P in float32 under the interpreter
    (it upcasts bf16 tiles there: kernels.flash.runtime.upcast_operands)."""
    if recipe_name == "flash-attention-2":
        from kernels.harness.rounding_bound import flash_recipe

        return flash_recipe(dtype)
    return R.recipe(recipe_name, dtype)


def _torch_dtype(name):
    import torch

    return getattr(torch, name)


def judge(out, gold, q64, k64, v64, recipe, *, is_causal, failure=FAILURE) -> dict:
    """One output tensor against its bounds: worst det ratio, worst prob ratio, largest error."""
    b = forward_bound(q64, k64, v64, recipe, is_causal=is_causal, failure=failure)
    err = np.abs(np.asarray(out, dtype=np.float64) - gold)
    err = np.where(np.isnan(err), np.inf, err)
    with np.errstate(invalid="ignore", divide="ignore"):
        det = np.where(err == 0, 0.0, err / b.deterministic)
        prob = np.where(err == 0, 0.0, err / b.probabilistic)
    worst = np.unravel_index(int(np.argmax(np.nan_to_num(det, nan=np.inf))), det.shape)  # the element nearest its bound
    return dict(error=float(err.max()), det_ratio=float(det.max()), prob_ratio=float(prob.max()),
                det_bound=float(b.deterministic.max()), prob_bound=float(b.probabilistic.max()), lam=b.lam,
                worst_error=float(err[worst]), worst_det=float(b.deterministic[worst]),
                worst_prob=float(b.probabilistic[worst]))


def _sample(rng, n_k, dtype, d):
    """Rounded inputs (float64 arrays holding dtype values) and the golden output."""
    import torch

    sharp = math.exp(rng.uniform(math.log(0.25), math.log(4.0)))  # flatter or peakier softmax rows
    q = rng.standard_normal((1, 1, N_QUERIES, d)) * sharp
    k, v = rng.standard_normal((1, 1, n_k, d)), rng.standard_normal((1, 1, n_k, d))
    tensors = [torch.from_numpy(x).to(_torch_dtype(dtype)) for x in (q, k, v)]
    return tensors, [t.double().numpy() for t in tensors]


def _golden(q64, k64, v64, is_causal):
    s = q64 @ np.swapaxes(k64, -1, -2) / math.sqrt(q64.shape[-1])
    if is_causal:
        n_q, n_k = s.shape[-2:]
        s = np.where(np.arange(n_k)[None, :] <= np.arange(n_q)[:, None], s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v64


def confirm(samples_per_length: int, kernel_samples: int, seed: int = 0, lengths=LENGTHS, dtypes=DTYPES,
            progress=None) -> list[dict]:
    """One record per (sample, implementation): the ratios error/bound and the empirical rule's ratio."""
    import torch

    from kernels.harness import reference as ref
    from kernels.harness import tolerance as tol

    torch.set_num_threads(1)
    records = []
    for dtype in dtypes:
        for n_k in lengths:
            rng = np.random.default_rng(np.random.SeedSequence([seed, DTYPES.index(dtype), n_k]))
            for i in range(samples_per_length if n_k <= LONG else max(1, samples_per_length // 4)):
                d = HEAD_DIMS[i % len(HEAD_DIMS)]
                causal = bool(rng.random() < 0.25)
                (q, k, v), (q64, k64, v64) = _sample(rng, n_k, dtype, d)
                gold = _golden(q64, k64, v64, causal)
                emp_ref = tol.max_abs_error(ref.attention(q, k, v, is_causal=causal), torch.from_numpy(gold))
                emp_bound = tol.bound(_torch_dtype(dtype), emp_ref, torch.from_numpy(gold))
                for name, fn, recipe_name in _impls(kernel=i < kernel_samples):
                    with torch.no_grad():
                        out = fn(q, k, v, is_causal=causal).double().numpy()
                    rec = judge(out, gold, q64, k64, v64, impl_recipe(recipe_name, dtype), is_causal=causal)
                    rec.update(impl=name, dtype=dtype, n=n_k, d=d, causal=causal, source="random",
                               emp_ratio=rec["error"] / emp_bound, emp_bound=emp_bound)
                    records.append(rec)
            if progress:
                progress(f"{dtype} N={n_k}: {len(records)} records")
    return records


def confirm_harness_cases(dtypes=DTYPES, seed: int = 0, kernel: bool = True) -> list[dict]:
    """The conformance harness's cases (random and robustness kinds), every impl, every dtype."""
    import torch

    from kernels.harness import reference as ref
    from kernels.harness.cases import THOROUGH_CASES, make_inputs

    records = []
    for dtype in dtypes:
        for case in THOROUGH_CASES:
            q, k, v, _ = make_inputs(case, _torch_dtype(dtype), "cpu", seed)
            kw = dict(is_causal=case.causal, enable_gqa=case.gqa)
            q64 = q.double().numpy()
            k64, v64 = (ref.repeat_kv(t, q.shape[1]).double().numpy() if case.gqa else t.double().numpy()
                        for t in (k, v))
            gold = ref.attention64(q, k, v, **kw).numpy()
            for name, fn, recipe_name in _impls(kernel=kernel and case.n_q * case.n_k <= 300 * 300):
                with torch.no_grad():
                    out = fn(q, k, v, **kw).double().numpy()
                rec = judge(out, gold, q64, k64, v64, impl_recipe(recipe_name, dtype), is_causal=case.causal)
                rec.update(impl=name, dtype=dtype, n=case.n_k, case=case.name, kind=case.kind, source="harness")
                records.append(rec)
    return records


def binomial_p_value(exceedances: int, trials: int, failure: float = FAILURE) -> float:
    """P(X ≥ exceedances) for X ~ Binomial(trials, failure): small means the stated probability is too low."""
    from scipy import stats

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
    lines = ["impl             dtype     samples  det-violations  prob-exceed  (allowed by binomial, α=0.01)  "
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
            from scipy import stats

            allowed = int(stats.binom.isf(ALPHA, len(rand), FAILURE)) if rand else 0
            worst = max((r["prob_ratio"] for r in rand), default=float("nan"))
            lines.append(f"{impl:<16} {dtype:<9} {len(rs):>7}  {viol:>14}  {exceed:>11}  {allowed:>29}  {p:8.3f}  "
                         f"bound = {1 / worst if worst else float('inf'):.1f}× largest error")
    return "\n".join(lines)


def main(argv=None) -> int:
    import argparse
    import json
    import os
    import sys
    import time

    ap = argparse.ArgumentParser(prog="python -m numeric.rounding", description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=1000, help="random samples per (dtype, length) up to "
                    f"N = {LONG}, a quarter of them above: the default gives 11000 per dtype")
    ap.add_argument("--kernel-samples", type=int, default=0, help="of those, how many also run the Triton kernel")
    ap.add_argument("--lengths", type=str, default=",".join(map(str, LENGTHS)))
    ap.add_argument("--json", type=str, default=None, help="write every record here")
    ap.add_argument("--no-harness-cases", action="store_true")
    ap.add_argument("--dtypes", type=str, default=",".join(DTYPES))
    ap.add_argument("--mutants", action="store_true", help="only list which of kernels.mutants the harness "
                    "invariant rounding-attention-forward fails on its own (default cases, forward)")
    args = ap.parse_args(argv)
    if os.environ.get("OPENBLAS_NUM_THREADS") != "1":
        # BLAS threads on tiny matrices cost 100× on a shared 2-core machine (measured: 23 ms against
        # 0.2 ms for a 4×64 by 64×4096 product); NumPy reads this only at import, hence the re-exec.
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        os.execve(sys.executable, [sys.executable, "-m", "numeric.rounding", *(sys.argv[1:] if argv is None else argv)],
                  env)
    if args.kernel_samples:
        os.environ.setdefault("TRITON_INTERPRET", "1")
    lengths = tuple(int(x) for x in args.lengths.split(","))
    dtypes = tuple(args.dtypes.split(","))
    if args.mutants:
        from kernels.harness.rounding_bound import mutants_caught

        for name, caught_in, n in mutants_caught(dtypes):
            print(f"{name:<40} {'caught in ' + ', '.join(caught_in) if caught_in else 'not caught'}"
                  f"{f' ({n} case-dtype failures)' if n else ''}")
        return 0
    start = time.perf_counter()
    records = confirm(args.samples, args.kernel_samples, lengths=lengths, dtypes=dtypes,
                      progress=lambda m: print(m, file=sys.stderr, flush=True))
    if not args.no_harness_cases:
        records += confirm_harness_cases(dtypes=dtypes, kernel=args.kernel_samples > 0)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(records, fh)
    print(summary(records))
    print()
    print(tightness_table(records))
    harness = [r for r in records if r["source"] == "harness"]
    if harness:
        print("\nharness cases: worst det ratio per (impl, dtype):")
        for impl in sorted({r["impl"] for r in harness}):
            for dtype in DTYPES:
                rs = [r for r in harness if r["impl"] == impl and r["dtype"] == dtype]
                if rs:
                    w = max(rs, key=lambda r: r["det_ratio"])
                    vac = sum(math.isinf(r["det_bound"]) for r in rs)
                    print(f"  {impl:<16} {dtype:<9} {len(rs)} cases, worst {w['det_ratio']:.3g} ({w['case']}), "
                          f"vacuous (infinite) bounds: {vac}")
    print(f"\n{len(records)} records in {time.perf_counter() - start:.0f} s")
    return 0



def error_curve(lengths=(1, 4, 16, 64, 256, 1024, 4096), dtypes=DTYPES, samples: int = 8, seed: int = 0,
                impl: str = "torch-sdpa") -> dict:
    """The rounding figure's data: per (dtype, N), of ``samples`` random inputs the one whose error came
    nearest its deterministic bound, and at that element: the error, the deterministic and the
    probabilistic bound; beside them the empirical rule's tensor-wide bound for the same input.
    (Draw with proofs.report.rounding_figure.rounding.)"""
    chosen = [r for r in confirm(samples, 0, seed=seed, lengths=tuple(lengths), dtypes=tuple(dtypes))
              if r["impl"] == impl]
    rows = []
    for dtype in dtypes:
        for n in lengths:
            rs = [r for r in chosen if r["dtype"] == dtype and r["n"] == n]
            w = max(rs, key=lambda r: r["det_ratio"])
            rows.append(dict(dtype=dtype, n=n, error=w["worst_error"], deterministic=w["worst_det"],
                             probabilistic=w["worst_prob"], empirical=w["emp_bound"],
                             violations=sum(r["det_ratio"] > 1 for r in rs)))
    return dict(records=rows, impl=impl, samples=samples, failure=FAILURE)


if __name__ == "__main__":
    raise SystemExit(main())
