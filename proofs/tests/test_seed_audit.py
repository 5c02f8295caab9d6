import pytest
import sympy as sp

from proofs import CLAIMS, seed_audit
from proofs.claims import SEED_SELF_ATTENTION, SEED_WITH_WEIGHTS
from proofs.seed_audit import FLOAT_MAX, AuditRecord, overflows, summary
from proofs.theorems.worked_examples import FAILS, HOLDS, OUT_OF_SCOPE, VERDICTS


@pytest.fixture(scope="module")
def records():
    return {r.id: r for r in seed_audit()}


def test_records_are_complete_and_well_formed(records):
    ids = {c.id for c in CLAIMS}
    for r in records.values():
        assert r.verdict in VERDICTS
        assert r.seed in (SEED_SELF_ATTENTION, SEED_WITH_WEIGHTS)
        assert r.quote and r.checked and r.value
        assert r.claim is None or r.claim in ids
    counts = summary(list(records.values()))
    assert sum(counts.values()) == len(records)
    assert all(counts[v] > 0 for v in VERDICTS)


def test_seed_errors_are_reported_with_their_true_values(records):
    assert records["s2-e16"].verdict == FAILS and "8886110" in records["s2-e16"].value
    assert records["s2-z1-1"].verdict == FAILS and records["s2-z1-2"].verdict == FAILS
    assert records["s2-z1-from-printed-weights"].verdict == HOLDS
    overflow = records["s2-e64-overflow"]
    assert overflow.verdict == FAILS and "float16" in overflow.value and "float32" in overflow.value
    assert records["s2-sigma-512"].verdict == "holds to printed precision"
    assert records["s2-fused-speedup"].verdict == OUT_OF_SCOPE


def test_overflow_thresholds():
    assert FLOAT_MAX["float16"] == 65504
    assert overflows(sp.exp(64), "float16") and not overflows(sp.exp(64), "bfloat16")
    assert not overflows(sp.exp(64), "float32") and overflows(sp.exp(89), "float32")
    assert overflows(sp.exp(12), "float16") and not overflows(sp.exp(11), "float16")
    with pytest.raises(ValueError, match="dtype"):
        overflows(1, "float8")


def test_a_failed_claim_turns_its_records_into_does_not_hold():
    records = {r.id: r for r in seed_audit(proved={c.id: False for c in CLAIMS})}
    assert records["s0-softmax-jacobian"].verdict == FAILS
    assert records["s2-fused-qkv"].verdict == FAILS


def test_bad_arguments():
    with pytest.raises(ValueError, match="proved"):
        seed_audit(proved={"softmax-jacobian": "yes"})
    with pytest.raises(ValueError, match="verdict"):
        AuditRecord("x", SEED_SELF_ATTENTION, "q", "c", "probably", "v")
