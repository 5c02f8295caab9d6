import ast
import importlib
import inspect

import pytest
import sympy as sp

from proofs import CLAIMS, seed_audit, traffic
from proofs.notation import inline
from proofs.claims import SEED_SELF_ATTENTION, SEED_WITH_WEIGHTS
from proofs.seed_audit import (FAILS, FLOAT_MAX, HOLDS, HOLDS_PRINTED, OUT_OF_SCOPE, PENDING_GPU, ROUNDING_CARRIED,
                               SLIP, VERDICTS, AuditRecord, compare, overflows, printed_comparisons, printed_value, summary)

# The module, not the function proofs re-exports under the same name.
audit_module = importlib.import_module("proofs.seed_audit")


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
    assert records["s2-z1-from-printed-weights"].verdict == HOLDS
    overflow = records["s2-e64-overflow"]
    assert overflow.verdict == FAILS and "float16" in overflow.value and "float32" in overflow.value
    assert records["s2-sigma-512"].verdict == HOLDS_PRINTED
    assert records["s2-fused-speedup"].verdict == PENDING_GPU and "kernels.bench_qkv" in records["s2-fused-speedup"].checked


def test_rounding_carried_forward_is_told_from_an_arithmetic_slip(records):
    # exp(2.121) ≈ 8.339 is right for the rounded 2.121 (exact e^{3/√2} = 8.342): not an error of that line.
    assert records["s0-exp-11"].verdict == ROUNDING_CARRIED and "8.339473" in records["s0-exp-11"].value
    # exp(4.243) is 69.6164, not 69.617: a slip whatever the inputs.
    assert records["s0-exp-21"].verdict == SLIP and "69.61639" in records["s0-exp-21"].value
    for rid in ("s0-sum-1", "s0-sum-2", "s0-a-21", "s0-z-21", "s2-z1-term-12", "s2-z1-1", "s2-z1-2"):
        assert records[rid].verdict == ROUNDING_CARRIED, rid
    # What the slip flows into says so.
    assert "s0-exp-21" in records["s0-sum-2"].value and "s0-exp-21" not in records["s0-sum-1"].value


@pytest.mark.parametrize("exact,printed,from_printed,verdict", [
    (sp.exp(3 / sp.sqrt(2)), "8.339", sp.exp(sp.Rational("2.121")), ROUNDING_CARRIED),
    (sp.exp(6 / sp.sqrt(2)), "69.617", sp.exp(sp.Rational("4.243")), SLIP),
    (sp.exp(6 / sp.sqrt(2)), "69.617", None, FAILS),
    (sp.exp(6 / sp.sqrt(2)), "69.591", sp.exp(sp.Rational("4.243")), HOLDS_PRINTED),
])
def test_compare_uses_the_seeds_own_intermediates_only_when_the_exact_value_disagrees(exact, printed, from_printed,
                                                                                      verdict):
    assert compare(exact, printed, from_printed=from_printed).verdict == verdict


def test_a21_follows_from_the_rounded_logits_even_with_the_right_exponential(records):
    logistic = lambda g: 1 / (1 + sp.exp(-g))  # noqa: E731
    gap = sp.Rational("4.243") - sp.Rational("2.828")  # the row-2 logits as printed
    assert compare(logistic(gap), "0.805").holds  # 0.80455: exact exponentials of the rounded logits
    assert not compare(logistic(sp.sqrt(2)), "0.805").holds  # 0.80443: the exact A₂₁
    assert "0.804553" in records["s0-a-21"].value and "rounded logits alone explain it" in records["s0-a-21"].value


def test_attention_is_not_intrinsically_asymmetric(records):
    r = records["s2-attention-asymmetric"]
    assert r.verdict == FAILS and "identical tokens" in r.value and "[[1/2, 1/2], [1/2, 1/2]]" in r.value


def test_memory_claims_are_decided_by_the_traffic_model(records):
    N = traffic.N
    # The N × N traffic is eliminated; the total is still quadratic in N (Θ(N²d²/M)).
    assert records["s0-flash-io"].verdict == HOLDS and inline(4 * N**2) in records["s0-flash-io"].value
    total = records["s0-flash-io-total"]
    assert total.verdict == FAILS and "N²d²/M" in total.value and "Proposition 3" in total.value
    assert records["s2-flash-memory"].verdict == HOLDS and inline(2 * N**2) in records["s2-flash-memory"].value
    # Pre-scaling Q saves nothing inside a fused kernel (S never reaches HBM), 2N² − 2Nd in standard attention.
    prescale = records["s2-prescale-hbm"]
    assert prescale.verdict == FAILS and inline(2 * N**2 - 2 * N * traffic.d) in prescale.value
    assert records["s2-flash-traffic-5-10x"].verdict == FAILS


def test_out_of_scope_is_left_for_attribution_and_history_only(records):
    out = [r for r in records.values() if r.verdict == OUT_OF_SCOPE]
    assert out and all("attribution" in r.checked for r in out)
    assert all(("attribution" in r.value) or ("history" in r.value) for r in out)
    assert {r.id for r in out} == {"s0-history", "s2-fused-history", "s2-history-2017", "s2-history-chebyshev",
                                   "s2-history-flash", "s2-history-nadaraya"}
    pending = [r for r in records.values() if r.verdict == PENDING_GPU]
    assert pending and all("python -m kernels." in r.checked for r in pending)


def test_model_facts_and_the_dice_are_decided(records):
    assert records["s0-llama-dk"].verdict == HOLDS and "4096/32 = 128" in records["s0-llama-dk"].value
    assert records["s2-dk-equals-dmodel"].verdict == FAILS and "d_k = d_v = 64" in records["s2-dk-equals-dmodel"].value
    dice = records["s2-dice-1024"]
    assert dice.verdict == FAILS and "0.068650" in dice.value
    train = records["s2-fail-to-train"]
    assert train.verdict == FAILS and "2.458" in train.value and "T5" in train.value


def test_a_model_fact_record_follows_its_source(monkeypatch):
    wrong = dict(audit_module.MODEL_CONFIGS)
    wrong["Llama 3.1 8B"] = {**wrong["Llama 3.1 8B"], "heads": 64}
    monkeypatch.setattr(audit_module, "MODEL_CONFIGS", wrong)
    assert audit_module._llama_dk_record().verdict == FAILS


def test_the_numbers_the_review_found_unrecorded_have_records(records):
    assert records["s2-inv-sqrt-dk-4"].verdict == HOLDS
    assert records["s2-pairwise-9"].verdict == HOLDS and "9 entries" in records["s2-pairwise-9"].value
    for row in (1, 2, 3):
        assert records[f"s2-scaled-row-{row}"].verdict == HOLDS
    assert "-0.5" in records["s2-scaled-row-2"].quote
    for rid, exact in (("s2-percent-11", "66.52"), ("s2-percent-12", "24.47"), ("s2-percent-13", "9.003")):
        assert records[rid].verdict == HOLDS_PRINTED and exact in records[rid].value


def test_a_printed_row_takes_its_worst_entry():
    r = audit_module._numbers("x", SEED_WITH_WEIGHTS, "q", [sp.Rational(1, 2), sp.Rational(3, 2)], ["0.5", "1.4"],
                              "a row")
    assert r.verdict == FAILS and "(holds)" in r.value


def test_verdicts_are_computed_not_typed():
    # Every AuditRecord's verdict is an expression of a check; only "out of scope" is a classification.
    constants = {"HOLDS", "HOLDS_PRINTED", "ROUNDING_CARRIED", "SLIP", "FAILS"}
    tree = ast.parse(inspect.getsource(audit_module))
    calls = 0
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            continue
        if node.func.id == "AuditRecord" and len(node.args) >= 5:
            calls += 1
            assert not (isinstance(node.args[4], ast.Name) and node.args[4].id in constants), ast.unparse(node)[:80]
        if node.func.id == "_fact" and len(node.args) >= 5:
            assert not isinstance(node.args[4], ast.Constant), ast.unparse(node)[:80]
    assert calls >= 5  # the whole module was read


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


# ---- printed decimals against exact values


@pytest.mark.parametrize("exact,printed,verdict", [
    (sp.sqrt(2), "1.4142", HOLDS_PRINTED),
    (3, "3.0", HOLDS),
    (sp.Rational(1, 2), "0.5", HOLDS),
    (sp.Rational(80443, 100000), "0.805", FAILS),
    (sp.exp(16), "8,800,000", FAILS),
    (sp.exp(16), "8,900,000", HOLDS_PRINTED),
    (sp.exp(64), "6.235e27", HOLDS_PRINTED),
    (sp.exp(64), "6.236e27", FAILS),
])
def test_compare_decides_at_the_printed_precision(exact, printed, verdict):
    assert compare(exact, printed).verdict == verdict


def test_printed_value_parses_the_seeds_formats():
    assert printed_value("2,980.96") == (sp.Rational(298096, 100), sp.Rational(1, 200))
    assert printed_value("8,800,000") == (8_800_000, 50_000)
    assert printed_value("1.77e6") == (1_770_000, 5_000)


@pytest.mark.parametrize("bad", ["≈0.8", "", 0.805, "1.2.3"])
def test_bad_printed_is_a_value_error(bad):
    with pytest.raises(ValueError, match="^printed "):
        compare(1, bad)


@pytest.mark.parametrize("bad", ["x", sp.Symbol("y"), sp.I])
def test_bad_exact_is_a_value_error(bad):
    with pytest.raises(ValueError, match="^exact "):
        compare(bad, "1.0")


def test_bad_from_printed_is_a_value_error():
    with pytest.raises(ValueError, match="^from_printed "):
        compare(1, "1.0", from_printed=sp.Symbol("y"))


def test_known_seed_errors_are_found():
    by_label = {c.label: c for c in printed_comparisons()}
    # exact z₁ = (1.399, 1.691); the printed (1.400, 1.690) is the seed's arithmetic on rounded weights
    assert by_label["z1-1"].verdict == ROUNDING_CARRIED and by_label["z1-2"].verdict == ROUNDING_CARRIED
    assert by_label["a-21"].verdict == ROUNDING_CARRIED  # exact 0.804
    assert by_label["alpha-11"].verdict == HOLDS_PRINTED


def _training(solved_step, loss_next):
    run = {"d_k": 64, "seed": 0, "solved_step": solved_step, "loss_start": 3.0, "step_next": 20,
           "loss_next": loss_next, "final_accuracy": 0.1}
    return {"steps": 300, "solved_accuracy": 0.9, "chance": 1 / 16, "seeds": 1, "runs": [run]}


def test_the_fail_to_train_verdict_follows_the_training_evidence():
    # A flat, unsolved run is what the sentence predicts: the verdict must turn with the data.
    flat = audit_module._fail_to_train_record(_training(None, 3.0))
    assert flat.verdict == HOLDS and "0 of 1 unscaled runs solved" in flat.value
    assert audit_module._fail_to_train_record(_training(120, 3.0)).verdict == FAILS  # solved: not "entirely"
    assert audit_module._fail_to_train_record(_training(None, 2.5)).verdict == FAILS  # no first-step plateau
    with pytest.raises(ValueError, match="training"):
        seed_audit(training={"runs": []})
