"""The ecosystem survey on the command line (`attention-proofs survey`) and as a section of the report."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from proofs import cli
from proofs.report import Options, gather, render_files

table = pytest.importorskip("kernels.ecosystem.table", reason="the survey's table needs the kernels extra (torch)")

ONE = ("softmax-normalisation",)


def _check(invariant, passed, ratio, dtype="float32"):
    return dict(invariant=invariant, claim_id=None, case="c: …", case_name="c", dtype=dtype, device="cpu",
                discrepancy=ratio, bound=1.0, passed=passed, error=None, detail="")


def _survey(tmp_path):
    """A survey document as `attention-proofs survey` writes it: one peer that passes, one that fails."""
    peers = [dict(name=name, library="torch", version="2.13.0+cpu", layout="(B, H, N, D)", causal="top-left",
                  backward=True, value_dim=True, dtypes=["float32"], scale="explicit", mask="is_causal", source="",
                  limits=[], status="ran", seconds=1.0, cpu_seconds=1.0, checks=checks)
             for name, checks in (("torch-sdpa-math", [_check("zero-scale", True, 0.19)]),
                                  ("torch-sdpa-flash", [_check("zero-scale", False, 7e5, "float16")]))]
    doc = dict(date="2026-11-30 16:00 UTC", seed=0, python="3.11.7", machine="x86_64, 2 CPUs", torch="2.13.0+cpu",
               seconds=2.0, cpu_seconds=2.0, peers=peers)
    out = tmp_path / "survey"
    table.write(doc, str(out))
    return out


def test_the_report_holds_the_survey_table_in_every_format(tmp_path):
    out = _survey(tmp_path)
    files = render_files(gather(Options(only=ONE, layers=("proofs",), survey=str(out))))
    md = files["report.md"]
    assert "## Ecosystem conformance survey" in md
    assert "| zero-scale |  | ✓ 0.19 | ✗ 7e+05 (fp16) |" in md
    assert '<section id="ecosystem-survey">' in files["index.html"]
    assert "<td>✗ 7e+05 (fp16)</td>" in files["index.html"]
    doc = json.loads(files["report.json"])["survey"]
    assert doc["header"][2:] == ["torch-sdpa-math", "torch-sdpa-flash"]
    assert ["zero-scale", "", "✓ 0.19", "✗ 7e+05 (fp16)"] in doc["rows"]
    assert doc["source"].endswith("survey.json") and doc["date"] == "2026-11-30 16:00 UTC"


def test_without_a_survey_the_report_has_no_such_section():
    files = render_files(gather(Options(only=ONE, layers=("proofs",))))
    assert "Ecosystem conformance survey" not in files["report.md"]
    assert "ecosystem-survey" not in files["index.html"]
    assert "survey" not in json.loads(files["report.json"])


def test_a_survey_directory_without_a_survey_is_refused_naming_the_option(tmp_path):
    with pytest.raises(ValueError, match="--survey .*no survey.json there"):
        gather(Options(only=ONE, layers=("proofs",), survey=str(tmp_path)))


def test_report_finds_the_survey_in_its_default_directory_unless_told_not_to(tmp_path, monkeypatch):
    _survey(tmp_path)
    monkeypatch.chdir(tmp_path)
    args = cli.build_parser().parse_args(["report"])
    assert cli._survey_dir(args) == table.DEFAULT_OUT
    assert cli._survey_dir(cli.build_parser().parse_args(["report", "--no-survey"])) is None
    assert cli._survey_dir(cli.build_parser().parse_args(["report", "--survey", "elsewhere"])) == "elsewhere"
    monkeypatch.chdir(tmp_path / "survey")  # no survey/survey.json below here
    assert cli._survey_dir(args) is None


def test_only_leaves_the_default_survey_out_without_importing_the_kernel_layer(tmp_path):
    """A one-claim report does no one's work but the claim's: torch (≈ 3.6 CPU-s) is not imported to find
    the survey's default directory, which --only leaves out; --survey DIR still puts it in."""
    _survey(tmp_path)
    code = ("import sys; from proofs import cli; p = cli.build_parser(); "
            "a = cli._survey_dir(p.parse_args(['report', '--only', 'softmax-normalisation'])); "
            "b = cli._survey_dir(p.parse_args(['report', '--only', 'softmax-normalisation', '--survey', 'there'])); "
            "torch = 'torch' in sys.modules; print(a, b, torch, cli._survey_dir(p.parse_args(['report'])))")
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["None", "there", "False", table.DEFAULT_OUT]


def test_survey_subcommand_writes_markdown_and_json_and_prints_the_table(tmp_path, capsys):
    earlier = _survey(tmp_path) / "survey.json"
    out = tmp_path / "joined"
    assert cli.main(["survey", "--merge", str(earlier), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "zero-scale" in printed and "✗ 7e+05 (fp16)" in printed
    assert "| zero-scale |  | ✓ 0.19 | ✗ 7e+05 (fp16) |" in (out / "survey.md").read_text()
    assert json.loads((out / "survey.json").read_text())["peers"][1]["name"] == "torch-sdpa-flash"


def test_survey_subcommand_refuses_an_unknown_implementation_by_name(capsys):
    assert cli.main(["survey", "--only", "no-such-library"]) == 2
    assert "unknown implementation 'no-such-library'" in capsys.readouterr().err
