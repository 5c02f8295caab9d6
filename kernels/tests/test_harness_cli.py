"""The `verify` command: a table, exit 0/1 on pass/fail, exit 2 and a named cause on bad input."""
from __future__ import annotations

import pytest
import torch

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
    assert main(["kernels.mutants:causal_bottom_right", "--dtype", "fp32", "--no-backward"]) == 1
    out = capsys.readouterr().out
    assert "FAILED" in out and "causal-alignment [causal-mask-top-left]" in out and "discrepancy" in out


def test_flags_narrow_the_run(capsys):
    assert main(["kernels.mutants:gqa_modulo_heads", "--dtype", "float32,float16", "--no-gqa", "--no-backward"]) == 0
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
