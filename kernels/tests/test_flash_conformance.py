"""flash_attention judged by the conformance harness (kernels.verify_attention).

The default run with every invariant: the fixed cases (attn_mask, dropout_p, Dv ≠ D, the training
path, determinism, error growth, rounding bias, causal past 2048 keys), the contract's cases
(cases.CONTRACT_CASES: empty dimensions, refused inputs, NaN, gradient subsets, double backward,
the output written into before backward, dO of stride 0, broadcast masks in the backward, state
across calls) and problems drawn from the whole input space (generate.py) for GENERATE_SECONDS an
item, at least one of each of its four relations and of KERNEL_REGIMES whatever the machine's speed. Budget: under 4
minutes on CI's 2 cores (`pytest kernels/tests/test_flash_conformance.py -n 2`).

What runs in float32 only, because it costs most under the interpreter and is one code path in
every dtype: the two long cases (long-causal, 257×257, B = 2; long-gqa, 129×385, B = 2, 4 heads),
decoding over 4097 keys, the two dropout moment tests (24 seeded calls per case each), the
across-calls draws, and the contract checks built of many backward calls (SAME_PATH_CONTRACT);
likewise determinism, the default and zero scale (SAME_PATH: the kernel's reduction order is fixed
by its program and grid, and the scale is resolved in Python before the launch, whatever the
dtype). The kernel's dropout is one code path in every dtype, and the half types keep its mask law,
the forward/backward mask identity and the same-seed check, and every other case, the 8193-key error
sweep among them. Causal past 2048 queries and keys runs in float16 alone: the kernel's positions
are tl.arange's int32 in every dtype, and float16 is the type whose positions would stop being exact
there (11 CPU-s a dtype under the interpreter). float32 runs as two test items (the long cases, the
rest), so that xdist's two workers share the four items about evenly. The same from the command
line: `TRITON_INTERPRET=1 attention-proofs verify kernels:flash_attention`.
"""
import pytest
import torch

from kernels import flash_attention, verify_attention
from kernels.harness import generate as gen
from kernels.harness.cases import CONTRACT, CONTRACT_CASES, DEFAULT_CASES, POSITIONS
from kernels.harness.invariants import INVARIANTS

FLOAT32_ONLY_CASES = {"long-causal", "long-gqa"}
FLOAT32_ONLY_INVARIANTS = {"dropout-expectation", "dropout-variance"}
SAME_PATH = {"determinism", "backward-determinism", "default-scale", "zero-scale"}
SAME_PATH_CONTRACT = {"gradient-subsets", "mask-forms-backward", "attn-mask-untouched", "global-state-unchanged",
                      "dropout-forward-backward-masked"}
GENERATE_SECONDS = 2.0
# The generator's regimes the kernel is drawn in: the masks whose leading dim equals B, q near
# float16's top and the mask's storage and non-finite entries (≈ 1-2 CPU-s each interpreted). Not the long ones, measured interpreted in float32: a
# decode over 131 071 keys 71 CPU-s, 2049 × 2100 causal 10.5 CPU-s; the kernel has one loop at any
# length (no split-K path; positions are tl.arange's int32 in every dtype), judged long by the fixed
# cases: decode-4097, the 8193-key error sweep and causal-2056 in float16.
KERNEL_REGIMES = ("mask-collision (Nq, Nk)", "mask-collision (Hq, Nq, Nk)", "magnitude", "mask-storage",
                  "mask-nonfinite")
LONG, REST = "long cases", "other cases"
ITEMS = [(torch.float32, LONG), (torch.float32, REST), (torch.float16, REST), (torch.bfloat16, REST)]


def cases_for(dtype, part):
    chosen = [c for c in DEFAULT_CASES if (c.name in FLOAT32_ONLY_CASES) == (part == LONG)]
    if part == REST:
        chosen += [c for c in CONTRACT_CASES if dtype == torch.float32 or c.kind == CONTRACT]
    # flash_attention has no split-K path: decoding over 4097 keys is its one-query loop, one code
    # path in every dtype, whose error growth in the half types the 8193-key sweep measures
    return [c for c in chosen if (dtype == torch.float32 or c.name != "decode-4097")
            and (c.kind != POSITIONS or dtype == torch.float16)]


def invariants_for(dtype):
    float32_only = FLOAT32_ONLY_INVARIANTS | SAME_PATH | SAME_PATH_CONTRACT
    return [i.name for i in INVARIANTS if dtype == torch.float32 or i.name not in float32_only]


@pytest.mark.parametrize("dtype, part", ITEMS, ids=["float32-long", "float32-other", "float16-other", "bfloat16-other"])
def test_flash_attention_passes_the_harness(dtype, part):
    report = verify_attention(flash_attention, dtypes=[dtype], cases=cases_for(dtype, part),
                              invariants=invariants_for(dtype), generate_seconds=GENERATE_SECONDS * (part == REST),
                              regimes=KERNEL_REGIMES)
    assert report.passed, "\n".join(report.failure_lines())
    assert not report.not_applicable, "flash_attention offers SDPA's whole contract"
    judged = {(c.invariant, c.case_name) for c in report.judged}
    if part == LONG:  # causal over 257 keys, GQA over 385 with Nq = 129, both with the backward and masks
        for case in FLOAT32_ONLY_CASES:
            assert ("backward-agreement", case) in judged and ("causal-alignment", case) in judged
        assert ("attn-mask", "long-gqa") in judged
        return
    for case in ("gqa-causal", "gqa-full"):  # causal and full, GQA, with the backward
        assert ("backward-agreement", case) in judged and ("gqa-equals-repeated-mha", case) in judged
    for invariant in ("attn-mask-gradients", "dropout-forward-backward", "dropout-mask-law", "error-growth",
                      "backward-high-variance" if dtype != torch.float32 else "dropout-variance",
                      "nan-propagation", "empty-dims", "refused-inputs", "kv-lengths-refused", "double-backward",
                      *(("zero-scale", "mask-forms-backward", "dropout-cross-call-correlation")
                        if dtype == torch.float32 else ())):
        assert any(inv == invariant for inv, _ in judged), invariant
    assert ("reference-agreement", "value-dim") in judged and ("causal-alignment", "mqa-decode") in judged
    assert (("long-causal-positions", "causal-2056") in judged) == (dtype == torch.float16)
    drawn = {inv for inv, _ in judged if inv in gen.RELATIONS}
    assert drawn == set(gen.RELATIONS), drawn  # at least one drawn problem of each relation


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_flash_attention_passes_the_thorough_harness_on_cuda(dtype):
    report = verify_attention(flash_attention, device="cuda", dtypes=[dtype], thorough=True)
    assert report.passed, "\n".join(report.failure_lines())
