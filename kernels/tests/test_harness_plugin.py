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


def _pytest(tmp_path, *args, python=()):
    (tmp_path / "test_nothing.py").write_text("")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    load = [] if _installed() else ["-p", "kernels.pytest_plugin"]
    return subprocess.run([sys.executable, *python, "-m", "pytest", *load, "-p", "no:cacheprovider", "-q", "-rs",
                           *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


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


# --------------------------------------------------------------------------- selecting items

MUTANT = "kernels.mutants:causal_bottom_right"


def _ran(text: str) -> dict[str, str]:
    """node id -> PASSED/FAILED/SKIPPED from a -v run's lines."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[1] in ("PASSED", "FAILED", "SKIPPED") and "verify-attention[" in parts[0]:
            out[parts[0]] = parts[1]
    return out


def test_k_selects_among_the_items(tmp_path):
    out = _pytest(tmp_path, "--verify-attention", MUTANT, "--verify-attention-dtype", "float32",
                  "--verify-attention-invariant", "causal-alignment", "-k", "short-q or square", "-vv")
    text = out.stdout
    assert out.returncode == 1, text + out.stderr
    prefix = f"verify-attention[{MUTANT}]::causal-alignment"
    assert _ran(text) == {f"{prefix}[causal-short-q-float32]": "FAILED", f"{prefix}[causal-square-float32]": "PASSED"}
    assert "10 deselected" in text  # the other ten causal cases


def test_a_copied_node_id_runs_that_check_alone_and_finds_a_module_in_the_current_directory(tmp_path):
    """``python -P``: the current directory is not put on sys.path, as under the pytest console
    script; and with only node ids given, test_nothing.py is not collected (which would put it there)."""
    (tmp_path / "attn_here_xyz.py").write_text(
        "import torch.nn.functional as F\n"
        "def sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):\n"
        "    return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p,\n"
        "                                          is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)\n")
    one = "verify-attention[attn_here_xyz:sdpa]::rows-sum-to-one[tiny-float32]"
    whole = "::verify-attention[attn_here_xyz:sdpa]::causal-alignment"  # pytest 9 prints ids with a leading ::
    out = _pytest(tmp_path, one, whole, "--verify-attention-dtype", "float32", "-vv", python=("-P",))
    ran = _ran(out.stdout)
    assert out.returncode == 0, out.stdout + out.stderr
    assert ran[one] == "PASSED" and len(ran) == 1 + 12, ran  # one check, and the invariant's twelve cases
    assert all(i == one or i.startswith(whole[2:] + "[") for i in ran)
    missing = _pytest(tmp_path, "verify-attention[attn_here_xyz:sdpa]::rows-sum-to-one[no-such-case-float32]",
                      python=("-P",))
    assert missing.returncode == 4 and "not found: verify-attention[attn_here_xyz:sdpa]::rows-sum-to-one[no-such" \
        in missing.stderr


def test_the_case_filter_option(tmp_path):
    out = _pytest(tmp_path, "--verify-attention", "kernels.harness.reference:float64_reference",
                  "--verify-attention-dtype", "float32", "--verify-attention-invariant", "rows-sum-to-one",
                  "--verify-attention-case", "tiny,fa-113x203", "-vv")  # fa-113x203 is a thorough case
    prefix = "verify-attention[kernels.harness.reference:float64_reference]::rows-sum-to-one"
    assert _ran(out.stdout) == {f"{prefix}[tiny-float32]": "PASSED", f"{prefix}[fa-113x203-float32]": "PASSED"}, \
        out.stdout + out.stderr


def test_a_wrong_signature_is_a_usage_error(tmp_path):
    bad = _pytest(tmp_path, "--verify-attention", "kernels.harness.reference:default_scale")
    assert bad.returncode == 4
    assert "is not SDPA-compatible: it takes 1 positional argument(s), not query, key, value" in bad.stderr


def test_attention_checks_filters_cases_by_name():
    checks = attention_checks(ref.float64_reference, dtypes=["float32"], invariants=["rows-sum-to-one"],
                              cases=["one-key", "tiny"])
    assert [c.id for c in checks] == ["rows-sum-to-one[one-key-float32]", "rows-sum-to-one[tiny-float32]"]
    with pytest.raises(ValueError, match="case 'nope' unknown"):
        attention_checks(ref.float64_reference, cases=["nope"])
