"""The `verify` command: a table, exit 0/1 on pass/fail, exit 2 and a named cause on bad input."""
from __future__ import annotations

import io
import sys

import pytest
import torch

from kernels.harness import reference as ref
from kernels.harness.cli import load_target, main

SDPA = "torch.nn.functional:scaled_dot_product_attention"


def test_correct_implementation_exits_zero_with_a_table(capsys):
    # (torch's own SDPA fails zero-scale under is_causal on this CPU: see test_harness.py)
    target = "kernels.harness.reference:float64_reference"
    assert main([target, "--dtype", "float32", "--no-backward"]) == 0
    out = capsys.readouterr().out
    assert "PASSED" in out and "invariant" in out and "causal-alignment" in out and "c1 = square" in out
    assert out.startswith(f"Conformance of {target} on cpu (float32)")


def test_mutant_exits_one_and_names_the_law(capsys):
    assert main(["kernels.mutants:causal_bottom_right", "--dtype", "fp32", "--no-backward",
                 "--invariant", "causal-alignment"]) == 1
    out = capsys.readouterr().out
    assert "FAILED" in out and "causal-alignment [causal-mask-top-left]" in out and "discrepancy" in out


def test_flags_narrow_the_run(capsys):
    # the invariant GQA's bug fails, and the one that would fail on every GQA case were GQA not switched off
    assert main(["kernels.mutants:gqa_modulo_heads", "--dtype", "float32,float16", "--no-gqa", "--no-backward",
                 "--invariant", "gqa-equals-repeated-mha", "--invariant", "reference-agreement"]) == 0
    out = capsys.readouterr().out
    assert "float32, float16" in out
    row = next(line for line in out.splitlines() if line.startswith("gqa-equals-repeated-mha"))
    assert "n/a" in row and "✓" not in row and "✗" not in row  # reported not applicable, never judged


@pytest.mark.parametrize("argv, words", [
    (["no_such_module_xyz:f"], "module 'no_such_module_xyz' does not import"),
    (["torch:no_such_function"], "has no attribute 'no_such_function'"),
    (["torch:float32"], "not a callable"),
    (["scaled_dot_product_attention"], "MODULE:FUNCTION"),
    ([SDPA, "--dtype", "int8"], "unknown dtype 'int8'"),
    ([SDPA, "--device", "tpu"], "device 'tpu'"),
])
def test_bad_input_exits_two_and_says_why(argv, words, capsys):
    assert main(argv) == 2
    assert words in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA, so --device cuda is valid")
def test_absent_device_exits_two(capsys):
    assert main([SDPA, "--device", "cuda"]) == 2
    assert "'cuda' is not available" in capsys.readouterr().err


def test_help_and_argparse_errors_return_codes(capsys):
    assert main(["--help"]) == 0
    assert main([]) == 2


def test_load_target_walks_attributes():
    assert load_target("torch.nn.functional:scaled_dot_product_attention") is \
        torch.nn.functional.scaled_dot_product_attention
    assert callable(load_target("kernels.harness.reference:float64_reference"))


# --------------------------------------------------------------------------- reading the result

GOOD = '''import torch.nn.functional as F
def sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                                          scale=scale, enable_gqa=enable_gqa)
def no_scale(q, k, v, is_causal=False):
    return q
'''


@pytest.fixture
def module_in_cwd(tmp_path, monkeypatch):
    """A module in the current directory, which is not on sys.path (as under a console script)."""
    (tmp_path / "attn_in_cwd_xyz.py").write_text(GOOD)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".", str(tmp_path))])
    monkeypatch.delitem(sys.modules, "attn_in_cwd_xyz", raising=False)
    return "attn_in_cwd_xyz"


def test_a_module_in_the_current_directory_is_found(module_in_cwd, capsys):
    assert main([f"{module_in_cwd}:sdpa", "--dtype", "float32", "--invariant", "reference-agreement",
                 "--case", "tiny"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Conformance of {module_in_cwd}:sdpa on cpu (float32): PASSED — 1 of 1 checks")


def test_a_wrong_signature_is_refused_up_front_with_one_message(module_in_cwd, capsys):
    assert main([f"{module_in_cwd}:no_scale", "--dtype", "float32"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # no table of a hundred identical TypeErrors
    assert captured.err.count("\n") == 1 and "no_scale(q, k, v, is_causal=False) is not SDPA-compatible: it " \
        "does not accept scale, enable_gqa by keyword" in captured.err and "attn_mask and dropout_p may be left out" \
        in captured.err


@pytest.mark.parametrize("signature, words", [
    ("q, k, v", "does not accept is_causal, scale, enable_gqa by keyword"),
    ("q, k, is_causal=False, scale=None, enable_gqa=False", "takes is_causal among its first three arguments"),
    ("q, k, v, mask, is_causal=False, scale=None, enable_gqa=False", "requires mask"),
    ("q, k, v, attn_mask, *, is_causal=False, scale=None, enable_gqa=False", "requires attn_mask"),
    ("q, k, v, is_causal=False, scale=None, /, enable_gqa=False", "is_causal, scale are positional-only"),
])
def test_each_way_a_signature_can_be_wrong_is_named(signature, words):
    from kernels.harness.features import check_signature

    scope: dict = {}
    exec(f"def impl({signature}): return q", scope)
    with pytest.raises(TypeError, match=words):
        check_signature(scope["impl"])


def test_compatible_signatures_are_accepted_and_lacking_optional_parts_is_not_an_error():
    from kernels.harness.features import signature_problems
    from kernels.harness.peers import PEERS
    from kernels.mutants import MUTANTS

    def only_required(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
        return q

    def forwards(*args, **kwargs):
        return args[0]

    impls = [m.fn for m in MUTANTS] + [impl for impl, _ in PEERS.values()] + [
        only_required, forwards, torch.nn.functional.scaled_dot_product_attention]
    assert {getattr(f, "__name__", f): signature_problems(f) for f in impls if signature_problems(f)} == {}


def test_invariant_and_case_options_narrow_the_run(capsys):
    assert main(["kernels.mutants:causal_bottom_right", "--dtype", "float32", "--no-backward",
                 "--invariant", "causal-alignment", "--invariant", "rows-sum-to-one",
                 "--case", "causal-short-q,causal-square"]) == 1
    out = capsys.readouterr().out
    assert "3 of 4 checks passed" in out
    assert {line.split()[0] for line in out.split("\n\n")[2].splitlines()[1:]} == {"causal-alignment",
                                                                                   "rows-sum-to-one"}
    assert main([SDPA, "--invariant", "no-such-invariant"]) == 2
    assert main([SDPA, "--case", "no-such-case"]) == 2
    assert "case 'no-such-case' unknown" in capsys.readouterr().err


def test_the_summary_names_the_root_cause_before_the_full_list(capsys):
    """Bottom-right alignment differs from SDPA's top-left only where Nq ≠ Nk: the summary says so,
    and names the smallest failing case with the command that reruns it."""
    assert main(["kernels.mutants:causal_bottom_right", "--dtype", "float32", "--no-backward",
                 "--invariant", "causal-alignment"]) == 1
    out = capsys.readouterr().out
    summary = out[out.index("Summary:"):out.index("\ninvariant ")]
    assert "causal-alignment: 9 of 12 checks failed" in summary and "only with Nq ≠ Nk" in summary
    assert ("smallest failing case: causal-alignment [causal-mask-top-left] on one-key: B=1 Hq=2 Hkv=2 Nq=37 Nk=1"
            in summary)
    assert ("rerun it alone: attention-proofs verify kernels.mutants:causal_bottom_right --invariant "
            "causal-alignment --case one-key --dtype float32") in summary
    assert out.index("Summary:") < out.index("Failures:")


def test_a_passing_run_has_no_summary(capsys):
    assert main(["kernels.harness.reference:float64_reference", "--dtype", "float32", "--invariant",
                 "causal-alignment"]) == 0
    assert "Summary:" not in capsys.readouterr().out


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_is_shown_on_a_terminal_only(monkeypatch):
    from kernels.harness import report as rp
    from kernels.harness.verify import verify_attention

    monkeypatch.setattr(rp.Progress, "update", _every_update(rp.Progress.update))
    for stream, shown in ((_Terminal(), True), (io.StringIO(), False)):
        with rp.progress_shown(stream):
            report = verify_attention(ref.float64_reference, dtypes=["float32"], invariants=["rows-sum-to-one"])
        text = stream.getvalue()
        assert (f"{len(report.checks)} checks, 0 failed" in text) is shown, text
        assert (text.endswith("\r\033[K")) is shown  # the line is cleared when the run ends
    assert type(verify_attention(ref.float64_reference, dtypes=["float32"],
                                 invariants=["rows-sum-to-one"]).checks) is list  # no progress outside


def _every_update(update):
    """Progress.update with its ten-a-second limit lifted, so a fast run still writes each line."""
    def each(self, check):
        self.last = -1e9
        return update(self, check)
    return each


def _check(case, dtype="float32", passed=True, invariant="reference-agreement"):
    from kernels.harness.report import Check

    return Check(invariant=invariant, claim_id=None, case=case.describe(), case_name=case.name, dtype=dtype,
                 device="cpu", discrepancy=0.0 if passed else 1.0, bound=0.5, passed=passed)


def test_case_shapes_are_read_from_every_case_description():
    from kernels.harness.cases import THOROUGH_CASES
    from kernels.harness.report import case_shape

    for c in THOROUGH_CASES:
        shape = case_shape(c.describe())
        assert (shape["B"], shape["Hq"], shape["Hkv"], shape["Nq"], shape["Nk"], shape["D"], shape["Dv"],
                shape["causal"], shape["scaled"]) == (c.batch, c.q_heads, c.kv_heads, c.n_q, c.n_k, c.head_dim,
                                                      c.dv, c.causal, c.scale is not None), c.name
    assert case_shape("not a case") is None


@pytest.mark.parametrize("fails, expected", [
    (lambda c, dt: c.n_k > 64, "only past one key block of 64 (Nk > 64)"),
    (lambda c, dt: dt == "float16", "only in float16"),
    (lambda c, dt: c.causal and c.n_q != c.n_k, "only with is_causal and with Nq ≠ Nk"),
    (lambda c, dt: c.n_k % 16 != 0 and dt != "float32",
     "only in float16 or bfloat16 and with a partial last key block of 16 (Nk % 16 ≠ 0)"),
    (lambda c, dt: c.name in ("square", "long-gqa", "tiny"), None),  # nothing says it: the two best are given
])
def test_what_the_failures_need_is_read_from_the_pass_fail_pattern(fails, expected):
    from kernels.harness.cases import DEFAULT_CASES, RANDOM
    from kernels.harness.report import conditions

    checks = [_check(c, dt, not fails(c, dt)) for c in DEFAULT_CASES if c.kind == RANDOM
              for dt in ("float32", "float16", "bfloat16")]
    found = conditions([c for c in checks if not c.passed], [c for c in checks if c.passed])
    if expected is None:
        assert len(found) == 2, found
    else:
        assert found[0] == expected, found
    assert conditions([c for c in checks if not c.passed], []) == []  # nothing passed: it fails everywhere


def test_the_summary_groups_invariants_failing_on_the_same_checks_and_says_what_all_failures_share():
    from kernels.harness.cases import DEFAULT_CASES
    from kernels.harness.report import ConformanceReport

    tiny, square = (next(c for c in DEFAULT_CASES if c.name == n) for n in ("tiny", "square"))
    report = ConformanceReport("m:f", "cpu", ("float32", "float16"))
    for inv in ("attn-mask", "attn-mask-row-shift", "reference-agreement"):
        for case in (tiny, square):
            for dt in ("float32", "float16"):
                report.checks.append(_check(case, dt, passed=inv == "reference-agreement" or dt == "float32",
                                            invariant=inv))
    lines = report.summary_lines()
    assert lines[0] == ("attn-mask, attn-mask-row-shift: 4 of 8 checks failed (worst 2× its bound) — only in "
                        "float16")
    assert lines[1] == "every failure: only in float16 and in checks that use attn_mask"
    assert lines[2].startswith("smallest failing case: attn-mask on tiny:")


def test_the_timing_split_adds_up_each_checks_cpu_seconds(capsys):
    """python -m kernels.harness.timing: every check carries its CPU seconds, and the split's parts are
    those seconds (fixed cases by invariant and by case, drawn problems with the regimes apart)."""
    from kernels.harness import generate as gen
    from kernels.harness import references, timing
    from kernels.harness.verify import verify_attention

    report = verify_attention(references.PlainAttention(), dtypes=["float32"], backward=False,
                              invariants=["default-scale", "generated-agreement"], generate_problems=len(gen.REGIMES) + 4)
    assert report.checks and all(c.seconds > 0 for c in report.judged)
    parts = timing.split(report)
    fixed = [c.seconds for c in report.judged if c.invariant == "default-scale"]
    drawn = [c.seconds for c in report.judged if c.invariant == "generated-agreement"]
    assert sum(parts["invariant"].values()) == pytest.approx(sum(fixed)) == pytest.approx(sum(parts["case"].values()))
    assert sum(parts["generated"].values()) == pytest.approx(sum(drawn)) and "regimes (first draws)" in parts["generated"]


def test_first_failure_flag_reaches_the_run(monkeypatch):
    """`verify --first-failure` asks verify_attention for first_failure=True; without it, False."""
    from kernels.harness import cli, verify

    asked = []

    def spy(impl, **kwargs):
        asked.append(kwargs["first_failure"])
        raise ValueError("stopped by the test")

    monkeypatch.setattr(verify, "verify_attention", spy)
    target = "kernels.harness.peers:sdpa_math"
    assert cli.main([target, "--first-failure"]) == 2 and cli.main([target]) == 2
    assert asked == [True, False]
