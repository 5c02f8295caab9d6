"""flash_attention judged by the conformance harness (kernels.verify_attention).

Under the interpreter a full default run costs about 12 s of CPU per dtype, so here each dtype
runs the harness's cases that together cover causal and full, GQA, the backward invariants and
the robustness kinds. All of them: `TRITON_INTERPRET=1 attention-proofs verify kernels:flash_attention`.
"""
import pytest
import torch

from kernels import flash_attention, verify_attention
from kernels.harness.cases import DEFAULT_CASES

CHOSEN = ("gqa-causal", "gqa-full", "one-key", "extreme-far", "negative-rows")
CASES = [c for c in DEFAULT_CASES if c.name in CHOSEN]


def test_the_chosen_cases_exist_and_cover_the_features():
    assert [c.name for c in CASES] == [n for n in (c.name for c in DEFAULT_CASES) if n in CHOSEN]
    assert len(CASES) == len(CHOSEN)
    assert {c.causal for c in CASES} == {True, False} and any(c.gqa for c in CASES)
    assert any(c.gqa and c.causal for c in CASES) and any(c.gqa and not c.causal for c in CASES)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_flash_attention_passes_the_harness(dtype):
    report = verify_attention(flash_attention, dtypes=[dtype], cases=CASES)
    assert report.passed, "\n".join(c.describe() for c in report.failures)
    judged = {(c.invariant, c.case_name) for c in report.checks}
    for case in ("gqa-causal", "gqa-full"):  # causal and full, GQA, with the backward
        assert ("backward-agreement", case) in judged and ("gqa-equals-repeated-mha", case) in judged
    assert ("causality", "gqa-causal") in judged


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_flash_attention_passes_the_thorough_harness_on_cuda(dtype):
    report = verify_attention(flash_attention, device="cuda", dtypes=[dtype], thorough=True)
    assert report.passed, "\n".join(c.describe() for c in report.failures)
