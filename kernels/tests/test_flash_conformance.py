"""flash_attention judged by the conformance harness (kernels.verify_attention).

The whole default run, one test per dtype (about 12-20 s of CPU each under the interpreter);
the same from the command line: `TRITON_INTERPRET=1 attention-proofs verify kernels:flash_attention`.
"""
import pytest
import torch

from kernels import flash_attention, verify_attention


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_flash_attention_passes_the_harness(dtype):
    report = verify_attention(flash_attention, dtypes=[dtype])
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
