"""The attn_mask's storage, dtype and values (generate.MASK_STORAGES, float32 beside half q, a NaN
entry): the correct float32-inside reference not flagged on the draws every run makes first
(mask-storage, mask-nonfinite), which test_regime_mutants shows catching each bug of the family."""
import pytest
import torch

from kernels.harness import generate as gen
from kernels.harness import verify_attention
from kernels.harness.references import FullAttention

_full = FullAttention()


def full_attention_with_mask(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    return _full(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def test_the_same_draws_pass_a_correct_implementation():
    report = verify_attention(full_attention_with_mask, backward=False, invariants=[gen.AGREEMENT],
                              generate_seconds=1e-9)
    assert report.judged and not report.failures, report.failure_lines()


@pytest.mark.parametrize("storage", gen.MASK_STORAGES)
def test_each_storage_holds_the_values_sdpa_reads(storage):
    """The stored mask is what torch's SDPA (math) accepts, and a transposed/expanded/offset one is
    not contiguous or not at offset 0 (so a reader that assumes either is exercised)."""
    p = gen.Problem(2, 2, 2, 5, 7, 8, 8, False, "bfloat16", mask="(B, Hq, Nq, Nk)", mask_kind="additive",
                    mask_storage=storage, mask_dtype="float32", relation=gen.AGREEMENT)
    from kernels.harness.subject import Subject

    s = Subject(full_attention_with_mask, p.case(), torch.bfloat16, "cpu", p.seed)
    m = gen._mask(s, p)
    assert m.dtype == torch.float32
    assert (storage == "contiguous") == (m.is_contiguous() and m.storage_offset() == 0)
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
        torch.nn.functional.scaled_dot_product_attention(s.q, s.k, s.v, attn_mask=m)
