"""The pytest plugin (pytest11 entry point) and the exported hypothesis strategies."""
from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from kernels.harness import reference as ref
from kernels.pytest_plugin import attention_checks
from kernels.harness.strategies import attention_problems, cases
from kernels.harness.subject import Subject
from kernels.harness.invariants import reference_agreement

ROOT = Path(__file__).resolve().parents[2]


def _installed() -> bool:
    """Whether pip registered the plugin's entry point (then pytest loads it itself; ``-p`` would load it twice)."""
    return any(ep.value == "kernels.pytest_plugin" for ep in entry_points(group="pytest11"))


def _pytest(tmp_path, *args):
    (tmp_path / "test_nothing.py").write_text("")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    load = [] if _installed() else ["-p", "kernels.pytest_plugin"]
    return subprocess.run([sys.executable, "-m", "pytest", *load, "-p", "no:cacheprovider", "-q", "-rs", *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


def test_loading_the_plugin_imports_neither_torch_nor_triton():
    # pytest loads entry-point plugins before any conftest: importing triton there would freeze
    # TRITON_INTERPRET before conftest.py could set it on a machine without a GPU.
    code = "import sys, kernels.pytest_plugin; print(sorted({'torch', 'triton'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr


def test_entry_point_is_registered():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["entry-points"]["pytest11"]["attention_proofs"] == "kernels.pytest_plugin"


def test_each_check_is_an_item_with_a_readable_id_and_failures_name_the_law(tmp_path):
    out = _pytest(tmp_path, "--verify-attention", "kernels.mutants:causal_bottom_right",
                  "--verify-attention-dtype", "float32", "--verify-attention-invariant", "causal-alignment",
                  "--verify-attention-invariant", "attn-mask", "-vv")
    text = out.stdout
    assert out.returncode == 1, text + out.stderr
    assert "causal-alignment[causal-short-q-float32] FAILED" in text  # Nq < Nk: the alignments differ
    assert "causal-alignment[causal-square-float32] PASSED" in text  # Nq = Nk: they agree
    assert "discrepancy" in text and "> bound" in text and "assert False" not in text
    assert "SKIPPED" in text and "not applicable: impl lacks attn_mask" in text  # its signature has none


def test_a_correct_impl_passes_and_a_bad_target_is_a_usage_error(tmp_path):
    out = _pytest(tmp_path, "--verify-attention", "kernels.harness.reference:float64_reference",
                  "--verify-attention-dtype", "bfloat16", "--verify-attention-invariant", "reference-agreement")
    assert out.returncode == 0 and " passed" in out.stdout, out.stdout + out.stderr
    bad = _pytest(tmp_path, "--verify-attention", "no_such_module_xyz:f")
    assert bad.returncode == 4 and "does not import" in bad.stderr


def test_without_the_option_the_plugin_adds_nothing(tmp_path):
    out = _pytest(tmp_path)
    assert "no tests ran" in out.stdout and "torch" not in sys.modules.get("kernels.pytest_plugin").__dict__


def test_attention_checks_for_parametrize():
    checks = attention_checks(ref.float64_reference, dtypes=["float32"], invariants=["rows-sum-to-one"])
    assert [c.id for c in checks][:2] == ["rows-sum-to-one[square-float32]", "rows-sum-to-one[causal-square-float32]"]
    assert all(c.run().passed for c in checks)


@settings(max_examples=15, deadline=None)
@given(attention_problems(dtypes=[torch.bfloat16], max_length=80, max_head_dim=40))
def test_strategies_feed_the_harness(problem):
    q, k, v, kwargs = problem.tensors()
    assert q.shape[:2] == (problem.case.batch, problem.case.q_heads) and v.shape[-1] == problem.case.dv
    assert problem.gradient().shape == q.shape[:-1] + (v.shape[-1],)
    o = reference_agreement(Subject(ref.float64_reference, problem.case, problem.dtype, "cpu", problem.seed))
    assert o.discrepancy <= o.bound


@given(cases(gqa=False, value_dim=False, causal=True), st.data())
@settings(max_examples=10, deadline=None)
def test_case_options_are_honoured(case, data):
    assert case.q_heads == case.kv_heads and case.value_dim is None and case.causal
