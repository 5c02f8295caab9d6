"""The proved rounding-error bound confirmed on implementations: torch's CPU SDPA, a float32 blocked
reference and the project's Triton kernel under the interpreter.

``python -m kernels.rounding_confirmation`` runs random inputs per dtype and length, plus the
conformance harness's cases (extreme ones included), and prints violation counts, the binomial test
of the probabilistic bound, and the tightness table. Random inputs are drawn in stacks along heads,
each head an independent input judged against its own float64 golden output and its own bound, so
one call per (dtype, length, head dim, causal) serves many inputs: with ``--kernel-samples 1000`` the
interpreted kernel runs 11,041 inputs per dtype (measured: 8-12 min per dtype on two shared cores).
``--mutants`` lists which of ``kernels.mutants`` the harness invariant rounding-attention-forward fails
on its own; ``--paper`` repeats the measurement of "Is Flash Attention Stable?" (arXiv 2405.02803)
beside the bounds of the recipes that cover it. ``error_curve`` gives the report's
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

from dataclasses import replace

import numpy as np
import torch
import torch.nn.functional as F

from kernels.flash import flash_attention
from kernels.threads import one_thread
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
CHUNK_ELEMENTS = 2**23  # float64 values of one k array per call: 64 MiB (memory of a 4096-key stack)


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


def judge(out, gold, q64, k64, v64, recipe, *, is_causal, scale=None, failure=FAILURE) -> list[dict]:
    """Each input of a stack against its own bounds: arrays (S, ..., Nq, D) whose first axis indexes
    S independent inputs. Per input: the largest error, the worst det and prob ratios, and at the
    element nearest its deterministic bound the error and both bounds."""
    b = forward_bound(q64, k64, v64, recipe, scale=scale, is_causal=is_causal, failure=failure, independent_axes=1)
    err = np.abs(np.asarray(out, dtype=np.float64) - gold)
    err = np.where(np.isnan(err), np.inf, err)
    with np.errstate(invalid="ignore", divide="ignore"):
        det = np.where(err == 0, 0.0, err / b.deterministic)
        prob = np.where(err == 0, 0.0, err / b.probabilistic)
    flat = lambda x: x.reshape(x.shape[0], -1)  # noqa: E731  (S, elements of one input)
    err_s, det_s, prob_s, bdet_s, bprob_s = map(flat, (err, det, prob, b.deterministic, b.probabilistic))
    worst = np.argmax(np.nan_to_num(det_s, nan=np.inf), axis=1)  # per input, the element nearest its bound
    pick = lambda x: x[np.arange(x.shape[0]), worst]  # noqa: E731
    return [dict(error=float(e), det_ratio=float(d), prob_ratio=float(p), det_bound=float(bd), prob_bound=float(bp),
                 lam=b.lam, worst_error=float(we), worst_det=float(wd), worst_prob=float(wp))
            for e, d, p, bd, bp, we, wd, wp in zip(err_s.max(1), det_s.max(1), prob_s.max(1), bdet_s.max(1),
                                                   bprob_s.max(1), pick(err_s), pick(bdet_s), pick(bprob_s))]


def draw(rng, count: int, n_k: int, dtype: str, d: int):
    """``count`` independent random inputs stacked along heads: q (1, count, N_QUERIES, d) and k, v
    (1, count, n_k, d) in ``dtype``, and float64 arrays holding the same (rounded) values. Each head
    has its own query magnitude, log-uniform in [1/4, 4]: flatter or peakier softmax rows."""
    sharp = np.exp(rng.uniform(math.log(0.25), math.log(4.0), size=count))
    q = rng.standard_normal((1, count, N_QUERIES, d)) * sharp[None, :, None, None]  # (1, S, Nq, D)
    k, v = rng.standard_normal((1, count, n_k, d)), rng.standard_normal((1, count, n_k, d))  # (1, S, Nk, D)
    tensors = [torch.from_numpy(x).to(getattr(torch, dtype)) for x in (q, k, v)]
    return tensors, [t.double().numpy() for t in tensors]


def _stacked(x):
    """(1, S, ...) -> (S, 1, ...): the samples axis first, as judge reads it (a view)."""
    return np.moveaxis(np.asarray(x), 1, 0)


def _timed(timings, name, dtype, fn, *args, **kw) -> np.ndarray:
    """fn's output in float64, its seconds added to timings[(name, dtype)]."""
    start = time.perf_counter()
    with torch.no_grad():
        out = fn(*args, **kw)
    if timings is not None:
        timings[(name, dtype)] = timings.get((name, dtype), 0.0) + time.perf_counter() - start
    return out.double().numpy()


def _take(x, sel):
    """The samples of a (1, S, ...) stack where ``sel`` is True (the stack itself when all are)."""
    if sel.all():
        return x
    return x[:, torch.from_numpy(sel)] if torch.is_tensor(x) else x[:, sel]


def golden(q, k, v, dtype: str, causal: bool):
    """(float64 golden output as an array (1, S, Nq, D), per sample the empirical rule's tensor-wide
    allowance: MULT × the plain same-precision reference's error + the floor at the golden output's
    size and its score sensitivity, as kernels.harness.tolerance judges a forward output)."""
    gold, sensitivity = ref.golden_and_sensitivity(q, k, v, is_causal=causal)  # (1, S, Nq, D) each
    plain = ref.attention(q, k, v, is_causal=causal)  # (1, S, Nq, D)
    allowed = [tol.bound(getattr(torch, dtype), tol.max_abs_error(plain[:, s], gold[:, s]), gold[:, s],
                         sensitivity[:, s]) for s in range(q.shape[1])]
    return gold.numpy(), allowed


def _chunks(count: int, n_k: int, d: int):
    """Sample counts per call: at most CHUNK_ELEMENTS float64 values in one k array (memory)."""
    size = max(1, CHUNK_ELEMENTS // (n_k * d))
    return [min(size, count - i) for i in range(0, count, size)]


@one_thread()
def confirm(samples_per_length: int, kernel_samples: int, seed: int = 0, lengths=LENGTHS, dtypes=DTYPES,
            progress=None, timings: dict | None = None, impls=None) -> list[dict]:
    """One record per (sample, implementation): the ratios error/bound and the empirical rule's ratio.

    Per (dtype, length) the samples are drawn in stacks along heads, one stack per (head dim, causal),
    and every implementation runs a stack in one call; the first ``kernel_samples`` samples of each
    (dtype, length) also run the Triton kernel. ``timings`` collects seconds spent per (impl, dtype).
    ``impls``: (name, fn, recipe name) triples to confirm instead, each on every sample (tests use it
    to show that a wrong implementation run the same way is flagged)."""
    records = []
    for dtype in dtypes:
        for n_k in lengths:
            rng = np.random.default_rng(np.random.SeedSequence([seed, DTYPES.index(dtype), n_k]))
            count = samples_per_length if n_k <= LONG else max(1, samples_per_length // 4)
            dims = np.array([HEAD_DIMS[i % len(HEAD_DIMS)] for i in range(count)])
            causal_of = rng.random(count) < 0.25
            for d in HEAD_DIMS:
                for causal in (False, True):
                    members = np.flatnonzero((dims == d) & (causal_of == causal))
                    for chunk in np.split(members, np.cumsum(_chunks(len(members), n_k, d))[:-1]):
                        if len(chunk):
                            records += _confirm_stack(rng, chunk, n_k, d, causal, dtype, chunk < kernel_samples,
                                                      timings, impls)
            if progress:
                progress(f"{dtype} N={n_k}: {len(records)} records")
    return records


def _confirm_stack(rng, chunk, n_k, d, causal, dtype, on_kernel, timings, impls) -> list[dict]:
    """Draw len(chunk) inputs, run each implementation on the stack (the kernel on the inputs
    ``on_kernel`` marks), one record per (input, implementation)."""
    (q, k, v), (q64, k64, v64) = draw(rng, len(chunk), n_k, dtype, d)
    gold, emp = golden(q, k, v, dtype, causal)
    records = []
    for name, fn, recipe_name in impls or _impls(kernel=bool(on_kernel.any())):
        sel = on_kernel if name == "triton-kernel" and not impls else np.ones(len(chunk), dtype=bool)
        out = _timed(timings, name, dtype, fn, *(_take(t, sel) for t in (q, k, v)), is_causal=causal)  # (1, S', Nq, D)
        judged = judge(_stacked(out), *(_stacked(_take(x, sel)) for x in (gold, q64, k64, v64)),
                       impl_recipe(recipe_name, dtype), is_causal=causal)
        for rec, e in zip(judged, np.asarray(emp)[sel]):
            rec.update(impl=name, dtype=dtype, n=n_k, d=d, causal=causal, source="random",
                       emp_ratio=rec["error"] / e, emp_bound=float(e))
            records.append(rec)
    return records


def confirm_harness_cases(dtypes=DTYPES, seed: int = 0, kernel: bool = True, timings: dict | None = None) -> list[dict]:
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
            for name, fn, recipe_name in _impls(kernel=kernel):
                out = _timed(timings, name, dtype, fn, q, k, v, **kw)
                # one case is one input (its heads share the failure probability): a stack of one
                (rec,) = judge(out[None], gold[None], q64[None], k64[None], v64[None],
                               impl_recipe(recipe_name, dtype), is_causal=case.causal, scale=case.scale)
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


# ============================================================================= "Is Flash Attention Stable?"
# Golden et al., arXiv 2405.02803, §III–IV: a numerical re-implementation of FlashAttention (Dao et al.
# 2022, Algorithm 1: tiles B_c = ⌈M/4d⌉) run with every tensor in one number format, against Baseline
# Attention (softmax(QKᵀ/√d)V) in the same format; both compared with a golden value, Baseline Attention
# in float64, by the largest elementwise difference of the output matrices (their Fig. 4: FlashAttention
# ≈ 10× Baseline's at BF16), swept over sequence length at a fixed tile size (Fig. 5) and over tile size
# (Fig. 6c). Their N, d and SRAM size M are not stated in the text; the sweep below picks its own.


def fa1_attention(q, k, v, *, block: int, work_dtype):
    """FlashAttention-1's loop (Dao et al. 2022, Algorithm 1, one query tile), every tensor in
    ``work_dtype``: the output is kept normalised and rescaled by ℓ_old·e^{m_old − m_new}/ℓ_new per key block."""
    c = 1.0 / math.sqrt(q.shape[-1])
    q, k, v = (t.to(work_dtype) for t in (q, k, v))
    m = torch.full(q.shape[:-1] + (1,), float("-inf"), dtype=work_dtype)  # (B, H, Nq, 1)
    l = torch.zeros_like(m)  # (B, H, Nq, 1)
    o = torch.zeros(q.shape[:-1] + (v.shape[-1],), dtype=work_dtype)  # (B, H, Nq, Dv)
    for j0 in range(0, k.shape[-2], block):
        s = (q * c) @ k[..., j0:j0 + block, :].transpose(-2, -1)  # (B, H, Nq, Bc)
        m_blk = s.amax(-1, keepdim=True)
        p = torch.exp(s - m_blk)
        m_new = torch.maximum(m, m_blk)
        old, new = torch.exp(m - m_new), torch.exp(m_blk - m_new)
        l_new = old * l + new * p.sum(-1, keepdim=True)
        o = (l * old * o + new * (p @ v[..., j0:j0 + block, :])) / l_new
        m, l = m_new, l_new
    return o


PAPER_IMPLS = {  # name: (fn(q, k, v, B_c), the Recipe of ours that covers it (dtype, N, B_c) or None, tiled, what)
    "baseline": (lambda q, k, v, b: ref.attention(q, k, v), None, False,
                 "Baseline Attention: S, softmax(S) and P·V each rounded to the format (torch math)"),
    "fa1-all-lowp": (lambda q, k, v, b: fa1_attention(q, k, v, block=b, work_dtype=q.dtype), None, True,
                     "the paper's re-implementation: FlashAttention-1's loop, every tensor in the format"),
    "fa2-all-lowp": (lambda q, k, v, b: blocked_attention(q, k, v, block=b, work_dtype="input"),
                     lambda dt, n, b: replace(R.recipe("loosest", dt), name="all in the format", block_n=(min(b, n),),
                                              exp_ulps=1), True,
                     "FlashAttention-2's loop, its state (m, ℓ, acc) in the format"),
    "fa2-fp32-state": (lambda q, k, v, b: blocked_attention(q, k, v, block=b),
                       lambda dt, n, b: replace(R.recipe("float32-blocked", dt), block_n=(min(b, n),)), True,
                       "FlashAttention-2's loop, state in float32, P not rounded"),
    "torch-sdpa": (lambda q, k, v, b: F.scaled_dot_product_attention(q, k, v),
                   lambda dt, n, b: R.recipe("torch-cpu-sdpa", dt), False,
                   "torch's CPU SDPA: float32 state, P rounded to the format"),
    "triton-kernel": (lambda q, k, v, b: flash_attention(q, k, v), lambda dt, n, b: flash_recipe(dt), False,
                      "this project's kernel (interpreted: float32 state; P rounded to fp16, kept fp32 for bf16)"),
}


@one_thread()
def paper_deviation(lengths=(512, 2048, 4096), blocks=(16, 64, 256), dtypes=("bfloat16", "float16"), d: int = 64,
                    seeds: int = 3, bound_rows: int = 128, impls=tuple(PAPER_IMPLS)) -> list[dict]:
    """Per (dtype, N, impl, B_c for the tiled ones): the paper's quantity max|O − O_golden| (golden:
    Baseline Attention in float64), averaged over ``seeds`` random (1, 1, N, d) inputs (torch.randn,
    square self-attention); and for the impls a recipe of ours covers, the proved bound's largest value
    over the first ``bound_rows`` query rows (averaged likewise) and the largest error/bound there."""
    rows = []
    for dtype in dtypes:
        for n in lengths:
            gen = torch.Generator().manual_seed(n)
            inputs = [[torch.randn(1, 1, n, d, generator=gen, dtype=torch.float64).to(getattr(torch, dtype))
                       for _ in range(3)] for _ in range(seeds)]
            golds = [ref.attention64(*x) for x in inputs]
            for name in impls:
                fn, recipe_of, tiled, _ = PAPER_IMPLS[name]
                for b in [b for b in blocks if b < n] if tiled else [None]:
                    errors, bounds, ratios = [], [], []
                    for x, gold in zip(inputs, golds):
                        with torch.no_grad():
                            out = fn(*x, b)
                        errors.append(tol.max_abs_error(out, gold))
                        if recipe_of is not None:
                            q64, k64, v64 = (t.double().numpy() for t in x)
                            recipe = recipe_of(dtype, n, b)
                            bound = forward_bound(q64[..., :bound_rows, :], k64, v64, recipe).deterministic
                            err = np.abs(out.double().numpy() - gold.numpy())[..., :bound_rows, :]
                            bounds.append(float(bound.max()))
                            ratios.append(float(np.where(err == 0, 0.0, err / bound).max()))
                    rows.append(dict(dtype=dtype, n=n, block=b, impl=name, error=float(np.mean(errors)),
                                     bound=float(np.mean(bounds)) if bounds else None,
                                     det_ratio=max(ratios) if ratios else None))
    return rows


def paper_table(rows) -> str:
    """The paper's comparison (error ÷ Baseline's) beside ours (bound ÷ torch SDPA's bound)."""
    base = {(r["dtype"], r["n"]): r["error"] for r in rows if r["impl"] == "baseline"}
    sdpa = {(r["dtype"], r["n"]): r["bound"] for r in rows if r["impl"] == "torch-sdpa"}
    lines = [f"{'dtype':<9} {'N':>5} {'B_c':>4} {'T':>4} {'impl':<15} {'max|O-gold|':>11} {'÷ baseline':>10} "
             f"{'proved bound':>12} {'÷ sdpa bound':>12} {'max err/bound':>13}"]
    for r in rows:
        key = (r["dtype"], r["n"])
        blocks = math.ceil(r["n"] / r["block"]) if r["block"] else None
        bound = "no recipe" if r["bound"] is None else f"{r['bound']:.3e}"
        ratio = "" if r["bound"] is None or key not in sdpa else f"{r['bound'] / sdpa[key]:.2f}"
        worst = "" if r["det_ratio"] is None else f"{r['det_ratio']:.3f}"
        if r["bound"] is not None and math.isinf(r["bound"]):
            bound, ratio, worst = "vacuous (∞)", "", ""
        lines.append(f"{r['dtype']:<9} {r['n']:>5} {r['block'] or '-':>4} {blocks or '-':>4} {r['impl']:<15} "
                     f"{r['error']:11.3e} {r['error'] / base[key] if key in base else float('nan'):10.2f} "
                     f"{bound:>12} {ratio:>12} {worst:>13}")
    lines.append("")
    lines += [f"  {name}: {what}" for name, (_, _, _, what) in PAPER_IMPLS.items()]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernels.rounding_confirmation", description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=1000, help="random samples per (dtype, length) up to "
                    f"N = {LONG}, a quarter of them above: the default gives 11000 per dtype")
    ap.add_argument("--kernel-samples", type=int, default=0, help="of those, how many also run the Triton kernel")
    ap.add_argument("--lengths", type=str, default=",".join(map(str, LENGTHS)))
    ap.add_argument("--json", type=str, default=None, help="write every record here")
    ap.add_argument("--no-harness-cases", action="store_true")
    ap.add_argument("--dtypes", type=str, default=",".join(DTYPES))
    ap.add_argument("--paper", action="store_true", help="only the measurement of 'Is Flash Attention Stable?' "
                    "(arXiv 2405.02803): max |O − O_float64| of FlashAttention re-implemented in bf16/fp16 against "
                    "Baseline Attention's, beside the proved bounds of the recipes that cover them (its own lengths, "
                    "tiles and dtypes: --lengths and --dtypes do not apply)")
    ap.add_argument("--mutants", action="store_true", help="only list which of kernels.mutants the harness "
                    "invariant rounding-attention-forward fails on its own (default cases, forward)")
    args = ap.parse_args(argv)
    # BLAS threads on tiny matrices cost 100× on a shared 2-core machine (measured: 23 ms against
    # 0.2 ms for a 4×64 by 64×4096 product), and Triton picks its interpreter: both are read at import,
    # which has happened by now (the kernels package imports triton), hence the re-exec.
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    if args.kernel_samples or args.paper:
        env.setdefault("TRITON_INTERPRET", "1")
    if argv is None and env != dict(os.environ):  # from Python, restarting the caller's process is not ours to do
        os.execve(sys.executable, [sys.executable, "-m", "kernels.rounding_confirmation", *sys.argv[1:]], env)
    lengths = tuple(int(x) for x in args.lengths.split(","))
    dtypes = tuple(args.dtypes.split(","))
    if args.paper:
        print(paper_table(paper_deviation()))
        return 0
    if args.mutants:
        for name, caught_in, n in mutants_caught(dtypes):
            print(f"{name:<40} {'caught in ' + ', '.join(caught_in) if caught_in else 'not caught'}"
                  f"{f' ({n} case-dtype failures)' if n else ''}")
        return 0
    start, timings, records = time.perf_counter(), {}, []
    log = lambda m: print(f"[{time.perf_counter() - start:6.0f} s] {m}", file=sys.stderr, flush=True)  # noqa: E731
    for dtype in dtypes:
        begun = time.perf_counter()
        records += confirm(args.samples, args.kernel_samples, lengths=lengths, dtypes=(dtype,), timings=timings,
                           progress=log)
        if not args.no_harness_cases:
            records += confirm_harness_cases(dtypes=(dtype,), kernel=args.kernel_samples > 0, timings=timings)
        timings[("wall, all impls", dtype)] = time.perf_counter() - begun
        log(f"{dtype} done")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(records=records, timings=[dict(impl=i, dtype=d, seconds=t) for (i, d), t in timings.items()],
                           argv=sys.argv[1:]), fh)
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
    print("\nseconds per dtype: inside each implementation's calls, and wall time of the dtype (random and "
          "harness inputs, golden outputs and bounds included):")
    for (impl, dtype), t in sorted(timings.items()):
        print(f"  {impl:<16} {dtype:<9} {t:8.1f} s")
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
