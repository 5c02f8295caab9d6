"""The written contract (kernels.harness.contract) and the invariant registry agree both ways."""
from __future__ import annotations

import subprocess
import sys

from kernels.harness import contract
from kernels.harness.invariants import INVARIANTS


def test_every_item_has_a_registered_invariant_and_every_invariant_serves_an_item():
    assert contract.check_mapping() == []


def test_the_mapping_check_names_an_unserved_invariant_and_an_unregistered_one():
    names = [i.name for i in INVARIANTS]
    problems = contract.check_mapping(names[1:] + ["made-up"])
    assert any(names[0] in p and "not registered" in p for p in problems)
    assert any("made-up" in p and "serves no contract item" in p for p in problems)


def test_every_item_cites_the_docs_or_a_measurement():
    assert all(contract.DOC in it.source or contract.MEASURED in it.source for it in contract.ITEMS)


def test_the_registry_is_the_same_whatever_is_imported_first():
    code = ("import kernels.harness.{} as m; from kernels.harness.invariants import INVARIANTS; "
            "print(','.join(i.name for i in INVARIANTS))")
    lists = {subprocess.run([sys.executable, "-c", code.format(first)], capture_output=True, text=True,
                            check=True).stdout for first in ("generate", "masks", "invariants")}
    assert len(lists) == 1 and lists.pop().strip() == ",".join(i.name for i in INVARIANTS)


def test_an_invariant_may_serve_several_claims():
    both = [i for i in INVARIANTS if i.claim_id]
    assert all(i.claims[0] == i.claim_id for i in both)
    from dataclasses import replace
    assert replace(both[0], also_claims=("softmax-jacobian",)).claims == (both[0].claim_id, "softmax-jacobian")


def test_python_m_prints_items_invariants_and_families():
    out = subprocess.run([sys.executable, "-m", "kernels.harness.contract"], capture_output=True, text=True,
                         check=True).stdout
    assert "MAPPING PROBLEM" not in out
    for it in contract.ITEMS:
        assert out.count(f"\n{it.name}: ") + out.startswith(f"{it.name}: ") == 1
    assert "-> nan-propagation: NaN or an infinity in an input hidden" in out


def test_state_left_changed_by_an_earlier_call_of_the_run_is_seen():
    # global_ftz: an impl that turns flush-to-zero on at every call once escaped, because the
    # global-state check's own before/after snapshots both came after earlier checks' calls had turned it on.
    import torch

    from kernels.harness.verify import verify_attention
    from kernels.mutants import flush_to_zero_left_on

    was = torch.get_default_dtype()
    report = verify_attention(flush_to_zero_left_on, dtypes=(torch.float32,),
                              invariants=("reference-agreement", "global-state-unchanged"), generate_seconds=0)
    failed = {c.invariant for c in report.checks if c.passed is False}
    assert "global-state-unchanged" in failed
    assert torch.get_default_dtype() == was and torch.tensor(1e-40).item() != 0.0  # the run put it back


def test_the_harness_own_thread_count_is_not_counted_as_a_leak():
    # CI (stop 26) failed 7 tests: the baseline was taken before verify_attention switched to one
    # intra-op thread, so every correct impl "left intra-op threads changed" on a many-thread process.
    import torch
    import torch.nn.functional as F

    from kernels.harness.verify import verify_attention

    was = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        report = verify_attention(F.scaled_dot_product_attention, dtypes=(torch.float32,),
                                  invariants=("global-state-unchanged",), generate_seconds=0)
        assert torch.get_num_threads() == 2  # the run put the caller's count back
    finally:
        torch.set_num_threads(was)
    assert report.passed, str(report)
