"""Shared fixtures of the report's end-to-end tests."""
from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import _fake_layers

# Claims that carry every figure (rounding-attention-forward: the kernel's error sweeps), the kernel-checked softmax laws, and one claim the numeric
# layer has no side of: small enough to derive in seconds, broad enough to show each part.
FIGURE_CLAIMS = ("dot-product-variance", "scaled-score-unit-variance", "softmax-saturation",
                 "online-softmax-unnormalised", "softmax-normalisation", "softmax-shift-invariance",
                 "prescaled-query", "rounding-attention-forward")
REPO = Path(__file__).resolve().parents[1]


def checkout_env() -> dict[str, str]:
    """The environment for a subprocess that must run this checkout's code from any working directory: a
    relative PYTHONPATH (``PYTHONPATH=.``) or an editable install of another checkout would otherwise
    decide which ``proofs`` a run in a temporary directory imports."""
    rest = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), *([rest] if rest else [])])}


def run_cli(*args: str, cwd=None, timeout: float = 300) -> subprocess.CompletedProcess:
    # The CLI chooses Triton's interpreter itself (kernels.interpreter, through proofs.cli).
    return subprocess.run([sys.executable, "-m", "proofs", *args], cwd=cwd or REPO, capture_output=True, text=True,
                          timeout=timeout, env=checkout_env())


@pytest.fixture(scope="session")
def fake_report(tmp_path_factory) -> Path:
    """A full report (all five figures) from the real proofs layer and fake numeric and kernel layers."""
    from proofs import cli

    out = tmp_path_factory.mktemp("fake") / "report"
    with pytest.MonkeyPatch.context() as mp:
        _fake_layers.install(mp, _fake_layers.numeric_module(), _fake_layers.kernel_modules())
        status = cli.main(["report", "--out", str(out), "--only", *FIGURE_CLAIMS])
    assert status == 0
    return out


@pytest.fixture(scope="session")
def real_report(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """The report as a user runs it (every real layer, --quick), on the claims that carry the figures.

    Made once per test run even under pytest-xdist: the workers share a directory and a lock,
    and the first to arrive runs the report for all of them."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    out, record = root / "real-report" / "report", root / "real-report.json"
    with open(root / "real-report.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not record.exists():
            out.parent.mkdir(exist_ok=True)
            done = run_cli("report", "--out", str(out), "--only", *FIGURE_CLAIMS)
            record.write_text(json.dumps([done.args, done.returncode, done.stdout, done.stderr]))
    args, code, stdout, stderr = json.loads(record.read_text())
    return out, subprocess.CompletedProcess(args, code, stdout, stderr)


def load_json(out: Path) -> dict:
    return json.loads((out / "report.json").read_text(encoding="utf-8"))
