"""The command line: report's options and exit statuses, the progress display, verify's delegation."""
from __future__ import annotations

import os
import pty
import select
import shutil
import subprocess
import sys
import types

import pytest

from conftest import REPO, run_cli
from proofs import cli


def test_help_lists_the_three_commands_and_report_options():
    done = run_cli("--help")
    assert done.returncode == 0
    for command in ("report", "derive", "verify"):
        assert command in done.stdout
    done = run_cli("report", "--help")
    for option in ("--out", "--format", "--quick", "--full", "--seed", "--only", "--force", "--layers"):
        assert option in done.stdout


@pytest.mark.parametrize("args, message", [
    (["--format", "html,pdf"], "unknown format pdf"),
    (["--format", "html,,md"], "empty format in 'html,,md'"),
    (["--format", ","], "empty format"),
    (["--layers", "proofs,"], "empty layer"),
    (["--layers", "proofs,gpu"], "unknown layer gpu"),
    (["--quick", "--full"], "not allowed with argument"),
    (["--seed", "-1"], "seed must be a non-negative integer"),
    (["--seed", "one"], "invalid int value"),
])
def test_bad_report_arguments_exit_2_with_a_message_and_write_nothing(tmp_path, args, message):
    done = run_cli("report", "--out", str(tmp_path / "r"), *args, cwd=tmp_path)
    assert done.returncode == 2
    assert message in done.stderr
    assert not (tmp_path / "r").exists()


def test_format_selects_the_files_written(tmp_path, capsys):
    out = tmp_path / "r"
    status = cli.main(["report", "--out", str(out), "--format", "md", "--only", "softmax-normalisation",
                       "--layers", "proofs"])
    assert status == 0
    assert sorted(p.name for p in out.iterdir()) == [".attention-proofs-report", "report.md"]
    assert f"wrote {out / 'report.md'}" in capsys.readouterr().out


def test_the_console_script_is_installed_and_runs():
    script = shutil.which("attention-proofs") or os.path.join(os.path.dirname(sys.executable), "attention-proofs")
    assert os.path.exists(script), "pip install -e . must install the attention-proofs script"
    done = subprocess.run([script, "derive", "--only", "prescaled-query"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "1 of 1 claims proved" in done.stdout


def test_progress_shows_on_a_terminal_only(tmp_path):
    args = ["report", "--out", str(tmp_path / "tty"), "--only", "softmax-normalisation", "--layers", "proofs",
            "--format", "json"]
    piped = run_cli(*args[:2], str(tmp_path / "piped"), *args[3:])
    assert piped.returncode == 0 and "\x1b[" not in piped.stdout, "no control codes when stdout is not a terminal"

    main, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "proofs", *args], cwd=REPO, stdin=subprocess.DEVNULL,
                            stdout=child, stderr=child, env={**os.environ, "COLUMNS": "100", "TERM": "xterm"})
    os.close(child)
    seen = b""
    while True:
        ready, _, _ = select.select([main], [], [], 120)
        if not ready:
            proc.kill()
            break
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the terminal closes when the child exits
            break
        if not chunk:
            break
        seen += chunk
    assert proc.wait(timeout=60) == 0
    os.close(main)
    text = seen.decode(errors="replace")
    assert "\x1b[" in text and "proofs:" in text, "a live progress line on a terminal"


def test_verify_hands_its_arguments_to_the_harness_cli(monkeypatch):
    seen = []
    fake = types.ModuleType("kernels.harness.cli")
    fake.main = lambda argv: seen.append(argv) or 3
    monkeypatch.setitem(sys.modules, "kernels.harness.cli", fake)
    argv = ["torch.nn.functional:scaled_dot_product_attention", "--device", "cuda", "--dtype", "float16",
            "--no-backward", "--no-gqa", "--thorough"]
    assert cli.main(["verify", *argv]) == 3
    assert seen == [argv]
    assert cli.main(["verify", "--help"]) == 3 and seen[-1] == ["--help"], "verify's --help is the harness's"


def test_verify_through_the_real_harness_names_a_module_that_does_not_import():
    done = run_cli("verify", "no_such_module_xyz:attention", timeout=120)
    assert done.returncode != 0
    assert "no_such_module_xyz" in done.stderr + done.stdout


def test_check_hands_its_files_to_the_certificate_checker(monkeypatch, tmp_path):
    seen = []
    fake = types.ModuleType("proofs.check_cli")
    fake.main = lambda paths: seen.append(paths) or 7
    monkeypatch.setitem(sys.modules, "proofs.check_cli", fake)
    assert cli.main(["check", "a.json", "b.json"]) == 7
    assert seen == [["a.json", "b.json"]]


def test_check_without_the_checker_says_so(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "proofs.check_cli", None)  # import raises ImportError
    assert cli.main(["check", "a.json"]) == 2
    assert "proofs.check_cli" in capsys.readouterr().err
