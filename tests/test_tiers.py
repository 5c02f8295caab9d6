"""The test tiers (conftest.py): the default run leaves the long tier out, says so, and counts it."""
from __future__ import annotations

import os
import subprocess
import sys

from conftest import REPO

STATS = "numeric/tests/test_power_and_false_alarms.py"  # the slow statistics, placed by LONG_TIER's pattern


def _collect(*args: str, env_long: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "ATTENTION_PROOFS_LONG"}
    if env_long is not None:
        env["ATTENTION_PROOFS_LONG"] = env_long
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-p", "no:cacheprovider", *args],
                          cwd=REPO, capture_output=True, text=True, timeout=300, env=env)


def test_the_default_run_deselects_the_long_tier_and_names_it():
    done = _collect(STATS)
    assert done.returncode == 5, done.stdout[-2000:]  # 5: nothing left to run, every item deselected
    assert "tiers: default only; the long tier (interpreted kernel sweeps, thorough harness, mutant sweep, " \
           "slow statistics, perturbation sweep, whole-catalogue report, peer libraries, fresh-process runs)" in done.stdout
    assert "run it too with --long or ATTENTION_PROOFS_LONG=1" in done.stdout
    summary = [line for line in done.stdout.splitlines() if line.startswith("long tier left out (deselected)")]
    assert summary and " slow statistics" in summary[0], done.stdout[-2000:]
    assert "deselected" in done.stdout.splitlines()[-1]


def test_long_and_its_variable_run_everything():
    for args, env_long in (((STATS, "--long"), None), ((STATS,), "1")):
        done = _collect(*args, env_long=env_long)
        assert done.returncode == 0, done.stdout[-2000:]
        assert "deselected" not in done.stdout and "tiers: default and long" in done.stdout


def test_a_bad_value_of_the_variable_is_refused_by_name():
    done = _collect(STATS, env_long="yes")
    assert done.returncode != 0 and "ATTENTION_PROOFS_LONG must be 0 or 1" in done.stdout + done.stderr


def test_the_rule_places_tests_by_marker_then_pattern():
    import types

    import pytest

    sys.path.insert(0, str(REPO))
    try:
        import importlib.util

        spec = importlib.util.spec_from_file_location("root_conftest", REPO / "conftest.py")
        root = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(root)
    finally:
        sys.path.pop(0)

    def item(nodeid, *marks):
        found = {m.name: m for m in marks}
        return types.SimpleNamespace(nodeid=nodeid, get_closest_marker=found.get)

    assert root.long_part(item("kernels/tests/test_flash.py::test_x[torch.bfloat16]")) == "interpreted kernel sweeps"
    assert root.long_part(item("kernels/tests/test_flash.py::test_x[torch.float32]")) is None
    assert root.long_part(item("kernels/tests/test_harness.py::test_thorough_run")) == "thorough harness"
    assert root.long_part(item("proofs/tests/test_a.py::test_b", pytest.mark.long("slow statistics").mark)) \
        == "slow statistics"
    assert root.long_part(item("proofs/tests/test_a.py::test_b", pytest.mark.slow.mark)) == root.MARKED
    assert root.long_part(item("proofs/tests/test_a.py::test_b")) is None
    # the upstream ports: the FA2 pairs and the tutorial's larger batch and head counts go, the small cases stay
    fa = "kernels/tests/test_peer_flash_attn.py::test_flash_attn_output"
    for moved in ("113x203-bottom-right-d64-dv256-bfloat16-gqa-dropout0.17", "128x217-none-d256-dv256-float16-mqa",
                  "108x256-none-d128-dv128-float16-gqa", "113x128-top-left-d192-dv128-float16-gqa"):
        assert root.long_part(item(f"{fa}[{moved}]")) == "interpreted kernel sweeps", moved
    for kept in ("1x1-none-d64-dv256-float16-mqa", "128x192-none-d192-dv192-float16-gqa",
                 "239x1-top-left-d64-dv64-float16-mqa", "64x128-top-left-d128-dv128-float16-mha"):
        assert root.long_part(item(f"{fa}[{kept}]")) is None, kept
    tutorial = "kernels/tests/test_peer_triton_tutorial.py::test_op"
    assert root.long_part(item(f"{tutorial}[Z4-H2-N128-D64-full]")) == "interpreted kernel sweeps"
    assert root.long_part(item(f"{tutorial}[Z1-H48-N128-D64-causal]")) == "interpreted kernel sweeps"
    assert root.long_part(item(f"{tutorial}[Z1-H2-N128-D128-causal]")) is None


def _root_conftest():
    import importlib.util

    sys.path.insert(0, str(REPO))
    try:
        spec = importlib.util.spec_from_file_location("root_conftest_workers", REPO / "conftest.py")
        root = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(root)
    finally:
        sys.path.pop(0)
    return root


def test_a_run_a_person_starts_uses_every_core_unless_told_otherwise(monkeypatch):
    import types

    root = _root_conftest()

    def config(collectonly=False, **option):
        return types.SimpleNamespace(option=types.SimpleNamespace(collectonly=collectonly, **option))

    for name in ("PYTEST_CURRENT_TEST", "PYTEST_XDIST_WORKER"):
        monkeypatch.delenv(name, raising=False)
    assert root.default_workers(config(numprocesses=None))  # xdist installed, no -n: -n auto
    assert not root.default_workers(config(numprocesses=0))  # -n 0: one process, as asked
    assert not root.default_workers(config(numprocesses=3))
    assert not root.default_workers(config())  # -p no:xdist, or xdist not installed: no -n option at all
    assert not root.default_workers(config(collectonly=True, numprocesses=None))
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")  # a worker never starts workers of its own
    assert not root.default_workers(config(numprocesses=None))
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "a/test.py::t (call)")  # a pytest that a test started
    assert not root.default_workers(config(numprocesses=None))
