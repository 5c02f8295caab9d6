"""The proved rounding-error bound confirmed on implementations: torch's CPU SDPA, a float32 blocked
reference and (a few cases) the project's Triton kernel under the interpreter.

``python -m kernels.rounding_confirmation`` runs random inputs per dtype and length, plus the
conformance harness's extreme cases, and prints violation counts, the binomial test of the
probabilistic bound, and the tightness table; ``--mutants`` lists which of ``kernels.mutants`` the
harness invariant rounding-attention-forward fails on its own. ``error_curve`` gives the report's
rounding figure its data. The bound itself is evaluated by ``numeric.rounding`` (NumPy, below
kernels); this module supplies the implementations, their inputs and the float64 golden outputs.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

from kernels.flash import flash_attention
from kernels.harness import reference as ref
from kernels.harness import tolerance as tol
from kernels.harness.cases import THOROUGH_CASES, make_inputs
from kernels.harness.rounding_bound import flash_recipe
from kernels.harness.verify import verify_attention
from kernels.mutants import MUTANTS, blocked_attention
from numeric.rounding import DTYPES, FAILURE, forward_bound, summary, tightness_table
from proofs.theorems import rounding as R

LENGTHS = (1, 2, 3, 5, 8, 16, 31, 64, 127, 256, 511, 1024, 2048, 4096)
HEAD_DIMS = (32, 64, 128)
LONG = 256  # above this length a quarter of the samples: 1000 × 10 + 250 × 4 = 11000 per dtype
N_QUERIES = 4  # rows per sample: the bound is per row, so few rows reach long key lengths cheaply


def _impls(kernel: bool):
    """(name, fn, recipe name) of the implementations confirmed."""
    out = [("torch-sdpa", F.scaled_dot_product_attention, "torch-cpu-sdpa"),
           ("float32-blocked", blocked_attention, "float32-blocked")]
    if kernel:
        out.append(("triton-kernel", flash_attention, "flash-attention-2"))
    return out


def impl_recipe(recipe_name: str, dtype: str) -> R.Recipe:
    """The declared recipe; the project's kernel keeps bfloat16 P in float32 under the interpreter
    (it upcasts bf16 tiles there: kernels.flash.runtime.upcast_operands)."""
    if recipe_name == "flash-attention-2":
        return flash_recipe(dtype)
    return R.recipe(recipe_name, dtype)


def judge(out, gold, q64, k64, v64, recipe, *, is_causal, scale=None, failure=FAILURE) -> dict:
    """One output tensor against its bounds: worst det ratio, worst prob ratio, largest error."""
    b = forward_bound(q64, k64, v64, recipe, scale=scale, is_causal=is_causal, failure=failure)
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
    """Rounded inputs: the dtype tensors and float64 arrays holding the same values."""
    sharp = math.exp(rng.uniform(math.log(0.25), math.log(4.0)))  # flatter or peakier softmax rows
    q = rng.standard_normal((1, 1, N_QUERIES, d)) * sharp
    k, v = rng.standard_normal((1, 1, n_k, d)), rng.standard_normal((1, 1, n_k, d))
    tensors = [torch.from_numpy(x).to(getattr(torch, dtype)) for x in (q, k, v)]
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
                emp_bound = tol.bound(getattr(torch, dtype), emp_ref, torch.from_numpy(gold))
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
    records = []
    for dtype in dtypes:
        for case in THOROUGH_CASES:
            q, k, v, _ = make_inputs(case, getattr(torch, dtype), "cpu", seed)
            kw = dict(is_causal=case.causal, enable_gqa=case.gqa, scale=case.scale)
            q64 = q.double().numpy()
            k64, v64 = (ref.repeat_kv(t, q.shape[1]).double().numpy() if case.gqa else t.double().numpy()
                        for t in (k, v))
            gold = ref.attention64(q, k, v, **kw).numpy()
            for name, fn, recipe_name in _impls(kernel=kernel and case.n_q * case.n_k <= 300 * 300):
                with torch.no_grad():
                    out = fn(q, k, v, **kw).double().numpy()
                rec = judge(out, gold, q64, k64, v64, impl_recipe(recipe_name, dtype), is_causal=case.causal,
                            scale=case.scale)
                rec.update(impl=name, dtype=dtype, n=case.n_k, case=case.name, kind=case.kind, source="harness")
                records.append(rec)
    return records


def mutants_caught(dtypes=DTYPES) -> list[tuple[str, list[str], int]]:
    """(mutant, dtypes in which the invariant rounding-attention-forward alone fails it, failing cases)
    for every mutant of kernels.mutants, judged on the default cases (backward mutants: the forward is correct)."""
    out = []
    for m in MUTANTS:
        report = verify_attention(m.fn, dtypes=list(dtypes), backward=False)
        bad = [c for c in report.checks if c.invariant == "rounding-attention-forward" and not c.passed]
        out.append((m.name, sorted({c.dtype for c in bad}), len(bad)))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernels.rounding_confirmation", description=__doc__.split("\n\n")[0])
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
    # BLAS threads on tiny matrices cost 100× on a shared 2-core machine (measured: 23 ms against
    # 0.2 ms for a 4×64 by 64×4096 product), and Triton picks its interpreter: both are read at import,
    # which has happened by now (the kernels package imports triton), hence the re-exec.
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    if args.kernel_samples:
        env.setdefault("TRITON_INTERPRET", "1")
    if argv is None and env != dict(os.environ):  # from Python, restarting the caller's process is not ours to do
        os.execve(sys.executable, [sys.executable, "-m", "kernels.rounding_confirmation", *sys.argv[1:]], env)
    lengths = tuple(int(x) for x in args.lengths.split(","))
    dtypes = tuple(args.dtypes.split(","))
    if args.mutants:
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
    (Drawn by proofs.report.plots.rounding.)"""
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
