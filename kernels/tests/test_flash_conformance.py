"""flash_attention judged by the conformance harness (kernels.verify_attention).

The default run with every invariant: the fixed cases (attn_mask, dropout_p, Dv ≠ D, the training
path, determinism, error growth, rounding bias, causal past 2048 keys), the contract's cases
(cases.CONTRACT_CASES: empty dimensions, refused inputs, NaN, gradient subsets, double backward,
the output written into before backward, dO of stride 0, broadcast masks in the backward, state
across calls) and problems drawn from the whole input space (generate.py) for GENERATE_SECONDS a
dtype (in its REST item), at least one of each of its four relations and of KERNEL_REGIMES whatever the machine's speed. Budget: under 4
minutes on CI's 2 cores (`pytest kernels/tests/test_flash_conformance.py -n 2 --long`).

What runs in float32 only, because it costs most under the interpreter and is one code path in
every dtype: the two long cases (long-causal, 257×257, B = 2; long-gqa, 129×385, B = 2, 4 heads),
decoding over 4097 keys, the two dropout moment tests (24 seeded calls per case each), the
across-calls draws, and the contract checks built of many backward calls (SAME_PATH_CONTRACT);
likewise determinism, the default, zero and explicit scale and the strided inputs (SAME_PATH: the
kernel's reduction order is fixed by its program and grid; the scale is resolved in Python and
folded into one float32 factor before the launch; strides are integer arguments the kernel scales
by Triton's typed pointers, whatever the dtype). The kernel's dropout is one code path in every
dtype, and the half types keep its mask law, the forward/backward mask identity and the same-seed
check, and every other case, the 8193-key error sweep among them. Causal past 2048 queries and keys
runs in float16 alone: the kernel's positions are tl.arange's int32 in every dtype, and float16 is
the type whose positions would stop being exact there (11 CPU-s a dtype under the interpreter).

Checks run on fewer cases (runs_for), each a law that holds for any shape, judged on cases that take
it through every path of the kernel's: the dropout moment tests (float32) on value-dim (full and
diagonal key blocks, a one-key tail, B = 2), gqa-causal and gqa-full, while the one-call mask law
(kept fraction, every kept weight P/(1 − p)) runs on every case in every dtype; in the half types
the attn_mask checks of the fixed cases (every broadcast form, bool and additive) on value-dim,
gqa-full, mqa-full (whole key blocks hidden before the visible keys, MQA, Dv > D) and one-query:
the kernel reads a mask through its four strides whatever the dtype, and the dtype enters only as an
additive mask's element type, which these cases load and round; float32 runs them on every case,
and the contract's mask checks and the drawn mask regimes run in every dtype.

Six test items, ordered so that xdist's two workers end close together (ITEMS): float32 as four (the
rest with the contract's cases and the drawn problems; the cases over many keys or of many calls,
FAR_CASES; each long case), float16, bfloat16.
The same from the command line: `TRITON_INTERPRET=1 attention-proofs verify kernels:flash_attention`.
"""
import pytest
import torch

from kernels import flash_attention, verify_attention
from kernels.harness import generate as gen
from kernels.harness.cases import CONTRACT, CONTRACT_CASES, DEFAULT_CASES, POSITIONS
from kernels.harness.invariants import ATTN_MASK, INVARIANTS

FLOAT32_ONLY_CASES = {"long-causal", "long-gqa"}
FLOAT32_ONLY_INVARIANTS = {"dropout-expectation", "dropout-variance"}
SAME_PATH = {"determinism", "backward-determinism", "default-scale", "zero-scale", "explicit-scale", "strided-inputs",
             "backward-scale-strided"}
SAME_PATH_CONTRACT = {"gradient-subsets", "mask-forms-backward", "attn-mask-untouched", "global-state-unchanged",
                      "dropout-forward-backward-masked"}
# The dropout moment tests (24 seeded calls a case) on the cases that take dropout through every
# path the kernel applies it in: full and diagonal key blocks, a one-key tail, B = 2 (value-dim),
# GQA causal and not (gqa-causal, gqa-full). The one-call mask law runs on every case.
MOMENT_CASES = {"value-dim", "gqa-causal", "gqa-full"}
MOMENT_INVARIANTS = FLOAT32_ONLY_INVARIANTS
# The attn_mask checks on the fixed cases (every broadcast form, bool and additive; not the
# contract's, which run in every dtype) in the half types: on these cases only.
MASK_INVARIANTS = {i.name for i in INVARIANTS
                   if ATTN_MASK in i.needs and not any(i.runs_on(c) for c in CONTRACT_CASES)}
HALF_MASK_CASES = {"value-dim", "gqa-full", "mqa-full", "one-query"}
GENERATE_SECONDS = 2.0
# The generator's regimes the kernel is drawn in: the masks whose leading dim equals B, q near
# float16's top, the mask's storage and non-finite entries (≈ 1-2 CPU-s each interpreted) and q, k, v
# of rank 3 or 5 with a 1-D mask, and rank 5 with is_causal (0.4-1.6 CPU-s a dtype each). Not the long ones, measured interpreted in float32: a
# decode over 131 071 keys 71 CPU-s, 2049 × 2100 causal 10.5 CPU-s; the kernel has one loop at any
# length (no split-K path; positions are tl.arange's int32 in every dtype), judged long by the fixed
# cases: decode-4097, the 8193-key error sweep and causal-2056 in float16. Nor long-queries (the grid
# has one program per query block at any Nq: no chunk of 4096 queries) and tiny-dropout (V = I over 2049+
# keys; dropout is judged by the fixed dropout cases).
# The covering array's paths it is drawn on: the short ones. For the same reason as the regimes: one loop at any length
# (no split-K decode, no query or batch chunks), judged long by the fixed cases; the longer paths' rows cost 10-70 CPU-s
# each interpreted (a decode over 2¹⁴ keys and more; whole tiles of 1024², a long prefill of 4096²).
KERNEL_PATHS = ("small", "many-batch", "batch-slices")
KERNEL_REGIMES = ("mask-collision (Nq, Nk)", "mask-collision (Hq, Nq, Nk)", "magnitude", "mask-storage",
                  "mask-nonfinite", "rank", "rank-causal")
FAR, REST = "long keys and draws", "other cases"  # with each long case's name: the float32 items' parts
# float32's cases besides the long ones, in two items of about equal time (FAR: the cases over
# many keys or of many calls); the drawn problems and the contract's cases run in REST.
FAR_CASES = {"decode-4097", "across-calls", "dropout-draws", "length-sweep", "mqa-decode", "causal-short-q",
             "causal-long-q"}
# xdist (-n 2) hands each worker two consecutive items, then each further item to the worker that
# finishes an item first. Measured CPU-s an item in this order (one process, load 2-5): 102, 101,
# 92, 75, 68, 18: the first worker runs float32's two (203), the second the half types (168) and,
# finishing first, long-gqa (235); long-causal goes to the first (221).
ITEMS = [(torch.float32, REST), (torch.float32, FAR), (torch.bfloat16, REST), (torch.float16, REST),
         (torch.float32, "long-gqa"), (torch.float32, "long-causal")]
IDS = ["float32-other", "float32-far", "bfloat16-other", "float16-other", "float32-long-gqa", "float32-long-causal"]


def part_of(case, dtype) -> str:
    if case.name in FLOAT32_ONLY_CASES:
        return case.name
    return FAR if dtype == torch.float32 and case.name in FAR_CASES else REST


def cases_for(dtype, part):
    chosen = [c for c in DEFAULT_CASES + CONTRACT_CASES if part_of(c, dtype) == part]
    # flash_attention has no split-K path: decoding over 4097 keys is its one-query loop, one code
    # path in every dtype, whose error growth in the half types the 8193-key sweep measures
    return [c for c in chosen if (dtype == torch.float32 or (c.name not in FLOAT32_ONLY_CASES
                                                             and c.name != "decode-4097"
                                                             and (c not in CONTRACT_CASES or c.kind == CONTRACT)))
            and (c.kind != POSITIONS or dtype == torch.float16)]


# Not interpreted: dropout-long-lags calls over 2¹⁷ keys and 16 385 queries (a decode over 131 071 keys
# costs 71 CPU-s interpreted). The kernel cannot wrap where it looks: its Philox counter is (key, query,
# b·H + h), three 32-bit words (flash/tiles.py dropout_keep). The CUDA run below judges it (every invariant).
# Nor, for their cost, dropout-seed-space (2¹⁴ calls, ~25 ms each interpreted: ~410 s; its 62-bit seed cannot
# repeat there), dropout-tiny-p and dropout-many-slices (2²⁰-weight calls and 69 632 slices, whose counters are
# the same three words), and concurrent-calls (128 calls of 2·8·128·256 scores at 0.75 CPU-s each interpreted,
# measured: 96 CPU-s; flash/api.py allocates every buffer per call, nothing is shared between callers).
# Nor dropout-axis-periods (17 decode calls over 4097 keys and one of 69 632 queries): the same three 32-bit words
# cannot wrap at 2¹⁶ rows, and the kernel has no split-K decode path whose offset could restart.
# Nor concurrent-calls-mixed and concurrent-training: Triton's interpreter keeps a launch's grid in process-wide
# state, so two threads' interpreted launches interfere (measured: InterpreterError "y >= grid_dim[1]" and "_semantic
# argument must be provided"): a property of the interpreter, not of the kernel; the CUDA run judges them.
# Nor many-calls-of-a-shape (2¹⁰ calls of the contract case, ~25 ms each interpreted: ~26 s a dtype): Triton's autotuner
# settles on a key's configuration at its first call (flash/runtime.py), and no state of the kernel counts calls; the
# CUDA run judges it.
# Nor fresh-process (a child importing Triton and interpreting four calls: seconds of the test's wall time): the
# kernel's dropout seed is a draw from torch's generator (flash/api.py) and no path of it reads the CPU capability;
# the CUDA run judges it.
NOT_INTERPRETED = {"dropout-long-lags", "dropout-seed-space", "dropout-tiny-p", "dropout-many-slices",
                   "concurrent-calls", "dropout-axis-periods", "concurrent-calls-mixed", "concurrent-training",
                   "many-calls-of-a-shape", "fresh-process"}


def invariants_for(dtype):
    float32_only = FLOAT32_ONLY_INVARIANTS | SAME_PATH | SAME_PATH_CONTRACT
    return [i.name for i in INVARIANTS if (dtype == torch.float32 or i.name not in float32_only)
            and i.name not in NOT_INTERPRETED]


def runs_for(dtype, part):
    """(cases, invariants, drawn problems' seconds) of each verify_attention run of one item: the
    moment tests and, in the half types, the attn_mask checks on their chosen cases only."""
    cases, invariants = cases_for(dtype, part), invariants_for(dtype)
    narrowed = MOMENT_INVARIANTS | (MASK_INVARIANTS if dtype != torch.float32 else set())
    chosen = MOMENT_CASES if dtype == torch.float32 else HALF_MASK_CASES
    runs = [(cases, [i for i in invariants if i not in narrowed], GENERATE_SECONDS * (part == REST))]
    few = [c for c in cases if c.name in chosen]
    narrowed_here = [i for i in invariants if i in narrowed]
    if few and narrowed_here:
        runs.append((few, narrowed_here, 0.0))
    return runs


@pytest.mark.parametrize("dtype, part", ITEMS, ids=IDS)
def test_flash_attention_passes_the_harness(dtype, part):
    judged = set()
    for cases, invariants, seconds in runs_for(dtype, part):
        report = verify_attention(flash_attention, dtypes=[dtype], cases=cases, invariants=invariants,
                                  generate_seconds=seconds, regimes=KERNEL_REGIMES, paths=KERNEL_PATHS)
        assert report.passed, "\n".join(report.failure_lines())
        assert not report.not_applicable, "flash_attention offers SDPA's whole contract"
        judged |= {(c.invariant, c.case_name) for c in report.judged}
    if part in FLOAT32_ONLY_CASES:  # causal over 257 keys, GQA over 385 with Nq = 129, with the backward
        assert ("backward-agreement", part) in judged and ("causal-alignment", part) in judged
        assert ("attn-mask", "long-gqa") in judged or part != "long-gqa"
        return
    if part == FAR:  # decoding over 4097 keys, the error sweep to 8193, the draws across calls
        assert ("online-softmax-merge", "decode-4097") in judged and ("error-growth", "length-sweep") in judged
        for invariant in ("dropout-cross-call-correlation", "dropout-keep-grid", "dropout-kept-fraction"):
            assert (invariant, "across-calls" if "kept" not in invariant else "dropout-draws") in judged, invariant
        return
    for case in ("gqa-causal", "gqa-full"):  # causal and full, GQA, with the backward
        assert ("backward-agreement", case) in judged and ("gqa-equals-repeated-mha", case) in judged
    for invariant in ("attn-mask-gradients", "dropout-forward-backward", "dropout-mask-law",
                      "backward-high-variance" if dtype != torch.float32 else "dropout-variance",
                      "nan-propagation", "empty-dims", "refused-inputs", "kv-lengths-refused", "double-backward",
                      *(("zero-scale", "mask-forms-backward") if dtype == torch.float32 else ("error-growth",))):
        assert any(inv == invariant for inv, _ in judged), invariant
    assert ("reference-agreement", "value-dim") in judged and ("attn-mask", "value-dim") in judged
    assert ("causal-alignment", "mqa-decode") in judged or dtype == torch.float32
    assert (("long-causal-positions", "causal-2056") in judged) == (dtype == torch.float16)
    drawn = {inv for inv, _ in judged if inv in gen.RELATIONS}
    assert drawn == set(gen.RELATIONS), drawn  # at least one drawn problem of each relation


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_flash_attention_passes_the_thorough_harness_on_cuda(dtype):
    report = verify_attention(flash_attention, device="cuda", dtypes=[dtype], thorough=True)
    assert report.passed, "\n".join(report.failure_lines())
