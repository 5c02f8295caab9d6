"""verify_attention: run every applicable invariant on every case and dtype, collect a report."""
from __future__ import annotations

import itertools
import time
from dataclasses import replace
from typing import Callable, Iterable

import torch

from kernels.harness import edges
from kernels.harness import generate as gen
from kernels.harness import paths as paths_mod
from kernels.harness import tolerance as tol
from kernels.harness import workers as workers_mod
from kernels.harness.cases import Case, narrowed, standard_cases
from kernels.harness.features import check_signature, offered
from kernels.harness.invariants import INVARIANTS, Subject
from kernels.harness.subject import NotApplicable
from kernels.harness.report import NOT_APPLICABLE, Check, ConformanceReport
from kernels.threads import one_thread

_DTYPE_NAMES = {
    "float32": torch.float32, "fp32": torch.float32, "float": torch.float32,
    "float16": torch.float16, "fp16": torch.float16, "half": torch.float16,
    "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
}
# float64 is the golden precision of every invariant but one: float64 inputs are judged by
# float64-agreement (against longdouble, kernels/harness/float64.py) in every run's float32 pass.
_GOLDEN = {"float64", "fp64", "double", "torch.float64"}


def parse_dtype(value) -> torch.dtype:
    if value == torch.float64 or value in _GOLDEN:
        raise ValueError("dtype float64 is the harness's golden precision, not a dtype to run every invariant in: "
                         "float64 inputs are judged by the float64-agreement invariant in the float32 pass "
                         "(use float32, float16 or bfloat16)")
    if isinstance(value, torch.dtype):
        if value not in _DTYPE_NAMES.values():
            raise ValueError(f"dtype {value} is not supported; use float32, float16 or bfloat16")
        return value
    if isinstance(value, str) and value.removeprefix("torch.") in _DTYPE_NAMES:
        return _DTYPE_NAMES[value.removeprefix("torch.")]
    raise ValueError(f"unknown dtype {value!r}; use one of float32, float16, bfloat16")


def parse_device(device) -> str:
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(f"device {device!r} is not a device torch knows (try 'cpu' or 'cuda')") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device {device!r} is not available here: torch.cuda.is_available() is False")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"device {device!r} is not available here: "
                             f"only {torch.cuda.device_count()} CUDA device(s)")
    elif dev.type != "cpu":
        raise ValueError(f"device {device!r} is not supported; use 'cpu' or 'cuda'")
    return str(dev)


def default_dtypes(device: str) -> list[torch.dtype]:
    dtypes = [torch.float32, torch.float16]
    if not device.startswith("cuda") or torch.cuda.is_bf16_supported():
        dtypes.append(torch.bfloat16)
    return dtypes


def _name(impl) -> str:
    module = getattr(impl, "__module__", None)
    name = getattr(impl, "__qualname__", None) or getattr(impl, "__name__", None) or type(impl).__name__
    return f"{module}:{name}" if module else str(name)


def _validated(impl, device, dtypes) -> tuple[str, list[torch.dtype]]:
    """(device, dtypes) parsed, after ``impl`` is checked callable as the harness calls SDPA: the one
    place a wrong impl, device or dtype is refused (verify_attention, error_vs_length, the CLI and
    the pytest plugin all come through here), each with one message naming the argument."""
    if not callable(impl):
        raise TypeError(f"impl must be callable like scaled_dot_product_attention, got {type(impl).__name__}")
    check_signature(impl)
    device = parse_device(device)
    if dtypes is None:
        return device, default_dtypes(device)
    if isinstance(dtypes, (str, torch.dtype)):
        dtypes = [dtypes]
    parsed = list(dict.fromkeys(parse_dtype(d) for d in dtypes))
    if not parsed:
        raise ValueError("dtypes is empty; pass None for the default set")
    return device, parsed


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def verify_attention(impl: Callable, *, device="cpu", dtypes=None, causal: bool = True, gqa: bool = True,
                     backward: bool = True, value_dim: bool = True, seed: int = 0, thorough: bool = False,
                     cases: Iterable[Case] | None = None, invariants: Iterable[str] | None = None,
                     generate_seconds: float | None = None, generate_problems: int | None = None,
                     regimes: Iterable[str] | None = None, paths: Iterable[str] | None = None,
                     workers: int | None = None, first_failure: bool = False) -> ConformanceReport:
    """Judge an SDPA-compatible ``impl(q, k, v, attn_mask=, dropout_p=, is_causal=, scale=, enable_gqa=)``.

    ``value_dim=False`` runs the Dv ≠ D cases with Dv = D (for an impl that has only one head dim).
    ``causal``/``gqa``/``backward`` = False say the implementation lacks that feature; an impl whose
    signature lacks ``attn_mask`` or ``dropout_p`` lacks those. The invariants needing a missing
    feature are reported "not applicable" (never failed), and the cases run with it switched off.
    ``cases`` overrides the built-in set (the default, or the larger thorough one); ``invariants``
    (names) runs only those.

    Beside the fixed cases (and the contract's, ``cases.CONTRACT_CASES``), ``generate_problems``
    problems drawn from the whole input space are judged per dtype (``generate.py``; with ``invariants``
    naming some generated relations, those of the same problems): by default the
    regimes, the rows of a covering array over paths and features (every pair, and triples) (``paths.py``; THOROUGH_ARRAYS arrays
    with ``thorough``) and generate.DEFAULT_DRAWN more (THOROUGH_DRAWN with ``thorough``), whatever the
    machine's speed, with ``generate_seconds`` (default generate.DEFAULT_SECONDS or THOROUGH_SECONDS)
    only a safety cap, told in the report's notes when hit. ``generate_seconds`` given alone is a time
    budget instead (0: no drawn problems); with ``cases`` given none are drawn unless asked for (the
    caller chose what to run). ``regimes`` (names of generate.REGIMES, all by default)
    are the regimes drawn first and at random: an impl whose long paths cost minutes (interpreted
    kernels over 2¹⁷ keys) and are judged by fixed cases may leave some out; ``paths`` (names of paths.PATHS, all by
    default) likewise the covering array's size classes (its pairs and triples are then those of the paths kept).

    The run's parts (each dtype's fixed cases, drawn problems, and covering rows in COVERING_SLICES parts) are shared by ``workers`` processes, this
    one and a forked copy (``workers.py``): by default two where forking is safe and a second core is free, else one
    (``ATTENTION_PROOFS_WORKERS=1`` keeps every run in one process). The split depends on the parts alone, so the
    checks and the report are the same whichever number of workers ran them.

    ``first_failure``: each part of a dtype's drawn problems (its regimes and draws, each COVERING_SLICES-th of its
    covering rows, those on several threads) ends at its first failure, shrunk
    as usual: a quick verdict while a kernel is being fixed, the law it breaks and its smallest case, where the whole
    run judges every covering row in every dtype. It changes no verdict of a problem, only how many are judged after
    one failed, so a run that passes with it passes without it (the report's notes say the run stopped early)."""
    device, dtypes = _validated(impl, device, dtypes)
    only = _invariant_names(invariants)
    if not isinstance(first_failure, bool):
        raise ValueError(f"first_failure must be True or False, got {first_failure!r}")
    if not (workers is None or workers in (1, 2) and not isinstance(workers, bool)):
        raise ValueError(f"workers must be 1, 2 or None (two where forking is safe), got {workers!r}")
    start = time.perf_counter()
    chosen = list(cases) if cases is not None else list(standard_cases(thorough))
    if not (generate_seconds is None or isinstance(generate_seconds, (int, float)) and generate_seconds >= 0):
        raise ValueError(f"generate_seconds must be a number of seconds >= 0, got {generate_seconds!r}")
    if not (generate_problems is None or isinstance(generate_problems, int) and not isinstance(generate_problems, bool)
            and generate_problems >= 0):
        raise ValueError(f"generate_problems must be a whole number >= 0, got {generate_problems!r}")
    features = offered(impl, causal=causal, gqa=gqa, backward=backward)
    regimes = gen.chosen_regimes(regimes)
    kept_paths = paths_mod.chosen_paths(paths)
    if generate_problems is None and (generate_seconds is not None or cases is not None):
        generate_seconds = generate_seconds or 0.0  # a time budget (the caller's), or none beside its cases
    else:
        if generate_problems is None:
            generate_problems = len(regimes) + (gen.THOROUGH_DRAWN if thorough else gen.DEFAULT_DRAWN)
        if generate_seconds is None:
            generate_seconds = gen.THOROUGH_SECONDS if thorough else gen.DEFAULT_SECONDS
        if generate_problems == 0:
            generate_seconds = 0.0
    report = ConformanceReport(_name(impl), device, tuple(str(d).removeprefix("torch.") for d in dtypes))
    covering = paths_mod.after_regimes(seed, dtypes, features, value_dim,
                                       paths_mod.THOROUGH_ARRAYS if thorough else 1, kept_paths)
    generating = bool(generate_problems) or generate_seconds > 0
    parts = ([(FIXED, d) for d in dtypes] + [(GENERATED, d) for d in dtypes if generating]
             + [(COVERING, d, i) for d in dtypes for i in range(COVERING_SLICES) if generating])
    # the drawn problems again on several threads: in this process (a forked child's OpenMP pool is gone: workers.py)
    # (with a count of problems, as the default and thorough runs have; a caller's time budget alone draws none)
    threaded = [(THREADED, d) for d in dtypes if generate_problems and (only is None or gen.THREAD_COUNT in only)]

    names = tuple(str(d).removeprefix("torch.") for d in dtypes)

    def threaded_problems(dtype):  # (each dtype's drawn ones, and the paths' in the first pass)
        return (gen.thread_problems(seed, dtype, features, value_dim=value_dim, regimes=regimes)
                + paths_mod.threaded(seed, str(dtype).removeprefix("torch."), names, features, value_dim, kept_paths))

    def stops(outcome, refused, what, dtype, notes) -> bool:
        """With first_failure, whether the part ends after this problem (a failure, not a refusal), told in the notes."""
        if first_failure and refused is None and gen.failed(outcome):
            notes.append(f"{what} ({str(dtype).removeprefix('torch.')}): stopped at the first failure (first_failure)")
            return True
        return False

    def run(part, notes):
        kind, dtype, *slice_ = part
        if kind == THREADED:
            for problem in threaded_problems(dtype):
                clock = time.process_time()
                outcome, refused = gen.check_problem(impl, problem, device)
                repro = ("reproduce with:\n" + gen.reproduction(impl, problem)
                         if refused is None and gen.failed(outcome) else None)
                yield _drawn_check(problem, outcome, repro, device, time.process_time() - clock, gen.THREAD_COUNT)
                if stops(outcome, refused, gen.THREAD_COUNT, dtype, notes):
                    return
            return
        if kind == FIXED:
            subjects: dict = {}  # (per part: its cases share their inputs and golden values)
            for item in planned(chosen, dtype, features, causal=causal, gqa=gqa, value_dim=value_dim, only=only):
                yield run_item(item, impl, dtype, device, seed, subjects)
            return
        # each dtype's pass its share of the safety cap and of the time for shrinking, and each covering part (every
        # COVERING_SLICES-th of the dtype's covering rows) half that share, whichever process runs it: an impl failing
        # everywhere still shrinks for at most 4 × SHRINK_SECONDS of CPU
        clock = time.process_time()
        sliced = None if kind == GENERATED else (
            lambda name: itertools.islice(covering(name), slice_[0], None, COVERING_SLICES))
        for problem, outcome, refused, repro in gen.generated_checks(
                impl, [dtype], device, seed, generate_seconds / len(dtypes), features, value_dim=value_dim,
                only=only, drawn=generate_problems, regimes=regimes, notes=notes,
                shrink_seconds=gen.SHRINK_SECONDS / len(dtypes) / (1 if sliced is None else 2), covering=sliced,
                covering_only=sliced is not None):
            # (CPU seconds of drawing, judging and shrinking the problem)
            yield _drawn_check(problem, outcome, repro, device, time.process_time() - clock)
            if stops(outcome, refused, "generated problems", dtype, notes):
                return
            clock = time.process_time()

    with one_thread():
        # the process state before the impl's first call (global-state-unchanged); taken inside
        # one_thread, whose thread count every check then runs under
        edges.remember_baseline()
        weights = [_weight(part, chosen, features, only, regimes, generate_problems, covering, value_dim, causal, gqa)
                   for part in parts]
        # (the threaded parts run here: their weight leaves the child more of the others)
        weights += [_PROBLEM_SECONDS * len(threaded_problems(dtype)) for _, dtype in threaded]
        results, notes = workers_mod.run_parts(parts + threaded, run, weights,
                                               workers_mod.default_workers(device) if workers is None else workers,
                                               seen=report.checks.append,
                                               here=range(len(parts), len(parts) + len(threaded)))
    report.checks[:] = [check for part in results for check in part]  # the parts' order, however they were run
    report.notes += notes
    report.seconds = time.perf_counter() - start
    return report


FIXED, GENERATED, COVERING, THREADED = ("fixed cases", "generated problems", "covering rows",
                                       "generated problems on several threads")
# Each dtype's covering rows are dealt into this many parts (every COVERING_SLICES-th row), so that the two processes'
# shares can be made near equal: with a dtype's rows in one part of about 30 CPU-s, the parent's share was 70.9 CPU-s
# and the child's 46.9 (a default run of SDPA math).
COVERING_SLICES = 6


def _drawn_check(problem, outcome, repro, device, seconds: float, invariant: str | None = None) -> Check:
    detail = outcome.detail if repro is None else f"{outcome.detail}\n{repro}"
    return Check(invariant=invariant or problem.relation, claim_id=None, case=problem.describe(),
                 case_name=f"generated-{problem.seed}", dtype=problem.dtype, device=device,
                 discrepancy=outcome.discrepancy, bound=outcome.bound, passed=outcome.discrepancy <= outcome.bound,
                 detail=detail, seconds=seconds)
# Rough CPU seconds a fixed check and a drawn problem take (a default run of SDPA's math backend: 1709 checks in 22.8 s,
# 538 problems in 45.8 s): only the two processes' shares of a run are set by them (workers.split).
_FIXED_CHECK_SECONDS, _PROBLEM_SECONDS = 0.013, 0.085
# The regimes and drawn problems are smaller than the covering rows on the whole: measured on SDPA math, 0.55-0.78
# of _PROBLEM_SECONDS each, the covering rows 0.8-1.6 (a part of a quarter of a dtype's rows)
_DRAWN_SECONDS = 0.055
# A fixed check's weight by dtype: float32's cases run the float32-only invariants besides (the concurrent callers, the
# dropout seeds, the many calls): measured on SDPA math, a process's first fixed part 10-12 CPU-s, its second 5.9,
# float32's 11.5 as the second (about 560 checks each)
FIXED_DTYPE_WEIGHT = {torch.float32: 1.65}
# a float64 covering row (the first pass's) costs about one of another dtype's: measured on SDPA math, float32's pass
# 31.1 CPU-s for its regimes, drawn problems, 126 rows of its own and 133 of float64, float16's 21.8 for 135 rows (at
# two, the first pass was given too much: 62.4 s wall for 108.6 CPU-s in two processes)
FLOAT64_ROW = 1.0


def _weight(part, chosen, features, only, regimes, drawn, covering, value_dim, causal, gqa) -> float:
    kind, dtype, *slice_ = part
    if kind == FIXED:
        return _FIXED_CHECK_SECONDS * FIXED_DTYPE_WEIGHT.get(dtype, 1.0) * len(
            planned(chosen, dtype, features, causal=causal, gqa=gqa, value_dim=value_dim, only=only))
    if kind == GENERATED:
        return _DRAWN_SECONDS * (len(regimes) + (drawn or 0))
    rows = itertools.islice(covering(str(dtype).removeprefix("torch.")), slice_[0], None, COVERING_SLICES)
    return _PROBLEM_SECONDS * sum(FLOAT64_ROW if p.dtype == "float64" else 1 for p in rows)


def _invariant_names(names) -> set[str] | None:
    if names is None:
        return None
    names = [names] if isinstance(names, str) else list(names)
    known = {i.name for i in INVARIANTS}
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise ValueError(f"invariants {unknown or names!r} unknown or empty; known: {', '.join(sorted(known))}")
    return set(names)


def planned(cases, dtype, features, *, causal=True, gqa=True, value_dim=True, only=None):
    """(invariant, original case, case as run, missing features) for every invariant that applies.

    The case as run has causal masking or GQA switched off when the impl lacks them; the invariant
    is then not applicable if it needs what is missing."""
    items = []
    for case in cases:
        run_as = narrowed([case], causal=causal, gqa=gqa, value_dim=value_dim)[0]
        for inv in INVARIANTS:
            if not inv.runs_on(case) or (inv.dtypes is not None and dtype not in inv.dtypes):
                continue
            if only is not None and inv.name not in only:
                continue
            items.append((inv, case, run_as, inv.needs - features))
    return items


def run_item(item, impl, dtype, device, seed, subjects: dict) -> Check:
    """One planned check. ``subjects`` keeps the Subject (inputs, golden values, calls) of the case
    being run, shared by its consecutive checks; an earlier case's is dropped."""
    inv, case, run_as, missing = item
    if missing:
        return Check(invariant=inv.name, claim_id=inv.claim_id, case=case.describe(), case_name=case.name,
                     dtype=str(dtype).removeprefix("torch."), device=device, discrepancy=0.0, bound=0.0,
                     passed=True, status=NOT_APPLICABLE,
                     detail=f"impl lacks {', '.join(sorted(missing))}")
    started = time.process_time()
    key = (run_as, dtype, device, seed)
    if key not in subjects:
        subjects.clear()
        subjects[key] = Subject(impl, run_as, dtype, device, seed)
    return replace(_run_check(inv, subjects[key]), seconds=time.process_time() - started)


def _run_check(inv, s: Subject) -> Check:
    common = dict(invariant=inv.name, claim_id=inv.claim_id, case=s.case.describe(), case_name=s.case.name,
                  dtype=str(s.dtype).removeprefix("torch."), device=s.device)
    try:
        o = inv.check(s)
    except NotApplicable as why:
        return Check(discrepancy=0.0, bound=0.0, passed=True, status=NOT_APPLICABLE, detail=str(why), **common)
    except Exception as exc:  # impl failing on a case is a failure of that case, never a crash
        return Check(discrepancy=float("inf"), bound=0.0, passed=False, error=_short(exc), **common)
    passed = o.discrepancy <= o.bound  # False for nan
    return Check(discrepancy=o.discrepancy, bound=o.bound, passed=passed, detail=o.detail, **common)


def error_vs_length(impl: Callable, lengths, dtypes, *, device="cpu", seed: int = 0, causal: bool = False,
                    head_dim: int = 64) -> list[dict]:
    """Forward error against float64 for Nq = Nk = n, with the bound of the same tolerance rule.

    One record per (dtype, n): dtype, n, error, bound, passed, reference_error."""
    device, dtypes = _validated(impl, device, dtypes)
    lengths = list(lengths)
    if not lengths or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in lengths):
        raise ValueError(f"lengths must be positive integers, got {lengths!r}")
    records = []
    with one_thread():
        for dtype in dtypes:
            records += _errors_at_lengths(impl, lengths, dtype, device, seed, causal, head_dim)
    return records


def _errors_at_lengths(impl, lengths, dtype, device, seed, causal, head_dim) -> list[dict]:
    records = []
    for n in lengths:
        s = Subject(impl, Case(f"length-{n}", 1, 2, 2, n, n, head_dim, causal), dtype, device, seed)
        golden = s.base
        gold, ref_err = golden.value, golden.error
        try:
            err = tol.max_abs_error(s.output().cpu(), gold)
        except Exception:  # an impl that fails at this length has no finite error
            err = float("inf")
        limit = tol.bound(dtype, ref_err, gold, golden.sensitivity, lse_size=golden.lse_size)
        records.append(dict(dtype=str(dtype).removeprefix("torch."), n=n, error=err, bound=limit,
                            passed=err <= limit, reference_error=ref_err))
    return records
