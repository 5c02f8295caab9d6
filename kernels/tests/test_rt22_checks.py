"""The contract checks added for the red team rt22b's escapes: each passes torch's math SDPA (the
contract's measured source) and refuses the mutant cut for it."""
from __future__ import annotations

import pytest
import torch

from kernels import mutants
from kernels.harness import verify_attention
from kernels.harness.peers import sdpa_math

CHECKS = {
    "global-state-unchanged": mutants.flash_sdp_switched_off,
    "attn-mask-shape-refused": mutants.attn_mask_sliced_to_fit,
    "attn-mask-one-key": mutants.one_key_skips_mask,
    "attn-mask-bias-gradient": mutants.mask_gradient_needs_qkv_gradient,
    "input-inplace-before-backward": mutants.query_kept_by_reference,
}


def test_math_sdpa_passes_the_new_checks():
    report = verify_attention(sdpa_math, dtypes=(torch.float32, torch.bfloat16), invariants=list(CHECKS))
    assert {c.invariant for c in report.checks} == set(CHECKS)
    assert report.passed, "\n".join(report.failure_lines())


@pytest.mark.parametrize("check", list(CHECKS))
def test_the_new_check_refuses_its_mutant(check):
    report = verify_attention(CHECKS[check], dtypes=(torch.float32,), invariants=[check])
    assert check in {c.invariant for c in report.failures}, str(report)


def test_global_state_check_leaves_the_sdpa_switches_as_it_found_them():
    before = torch.backends.cuda.flash_sdp_enabled()
    verify_attention(mutants.flash_sdp_switched_off, dtypes=(torch.float32,), invariants=["global-state-unchanged"])
    assert torch.backends.cuda.flash_sdp_enabled() == before
