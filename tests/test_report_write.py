"""Atomic writing: a report directory holds the earlier report or the new one, never a half-written one."""
from __future__ import annotations

import os

import pytest

from proofs import cli
from proofs.report import write as write_mod
from proofs.report.write import MARKER, RefusedError, holds_report, write_report

FILES = {"index.html": "<html>new</html>", "report.md": "# new", "report.json": '{"format": "x"}',
         "figures/a.svg": "<svg/>"}


def _snapshot(directory):
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def test_writes_a_new_directory_with_its_marker(tmp_path):
    out = write_report(tmp_path / "r", FILES)
    assert _snapshot(out) == {**{k: v.encode() for k, v in FILES.items()}, MARKER: b"attention-proofs-report/1\nclaims: all\n"}
    assert holds_report(out)
    assert [p.name for p in tmp_path.iterdir()] == ["r"], "no staging directory is left behind"


def test_an_empty_directory_is_written_into(tmp_path):
    (tmp_path / "r").mkdir()
    write_report(tmp_path / "r", FILES)
    assert (tmp_path / "r" / "index.html").read_text() == "<html>new</html>"


def test_an_earlier_report_is_replaced_whole(tmp_path):
    out = write_report(tmp_path / "r", {**FILES, "figures/stale.svg": "<svg>old</svg>"})
    write_report(out, {"report.json": '{"format": "y"}'})
    assert sorted(_snapshot(out)) == [MARKER, "report.json"], "nothing stale from the earlier report survives"


def test_a_foreign_non_empty_directory_is_refused_without_force(tmp_path):
    foreign = tmp_path / "r"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(RefusedError, match="not empty .*notes.txt.*--force"):
        write_report(foreign, FILES)
    assert _snapshot(foreign) == {"notes.txt": b"mine"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]


def test_force_writes_the_report_beside_foreign_files_and_leaves_them_alone(tmp_path):
    foreign = tmp_path / "r"
    (foreign / "figures").mkdir(parents=True)
    (foreign / "notes.txt").write_text("mine")
    (foreign / "figures" / "old.svg").write_text("old")
    write_report(foreign, FILES, force=True)
    snap = _snapshot(foreign)
    assert snap["notes.txt"] == b"mine" and snap["index.html"] == b"<html>new</html>"
    assert "figures/old.svg" not in snap and snap["figures/a.svg"] == b"<svg/>"


def test_a_file_in_the_way_is_refused_even_with_force(tmp_path):
    (tmp_path / "r").write_text("a file")
    with pytest.raises(RefusedError, match="not a directory"):
        write_report(tmp_path / "r", FILES, force=True)


def test_an_interrupted_write_leaves_the_earlier_report_untouched(tmp_path, monkeypatch):
    out = write_report(tmp_path / "r", FILES)
    before = _snapshot(out)
    calls = []

    def dying_fsync(fd):  # the process "dies" while the third file is being written
        calls.append(fd)
        if len(calls) == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(write_mod.os, "fsync", dying_fsync)
    with pytest.raises(KeyboardInterrupt):
        write_report(out, {k: v.replace("new", "newer") for k, v in FILES.items()})
    assert _snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"], "the staging directory is cleaned up"


def test_an_interrupted_first_write_leaves_no_report_at_all(tmp_path, monkeypatch):
    monkeypatch.setattr(write_mod.os, "fsync", lambda fd: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError, match="disk full"):
        write_report(tmp_path / "r", FILES)
    assert list(tmp_path.iterdir()) == []


def test_cli_refuses_a_foreign_directory_with_exit_status_2_and_force_overrides(tmp_path, capsys):
    foreign = tmp_path / "r"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    args = ["report", "--out", str(foreign), "--only", "softmax-normalisation", "--layers", "proofs"]
    assert cli.main(args) == 2
    assert "--force" in capsys.readouterr().err
    assert os.listdir(foreign) == ["notes.txt"]
    assert cli.main(args + ["--force"]) == 0
    assert {"notes.txt", "index.html", "report.md", "report.json", "figures", MARKER} >= set(os.listdir(foreign))
    assert cli.main(args) == 0, "a directory holding an earlier report is written again without --force"


def test_a_report_of_a_few_claims_never_replaces_a_whole_one_without_force(tmp_path):
    whole = write_report(tmp_path / "r", FILES)
    before = _snapshot(whole)
    with pytest.raises(RefusedError, match="holds a report of every claim.*--force"):
        write_report(whole, {"report.md": "# one"}, only=("softmax-normalisation",))
    assert _snapshot(whole) == before
    write_report(whole, {"report.md": "# one"}, only=("softmax-normalisation",), force=True)
    assert (whole / "report.md").read_text() == "# one"
    # a report of a few claims is replaced by another, or by a whole one, without asking
    write_report(whole, {"report.md": "# two"}, only=("softmax-jacobian",))
    write_report(whole, {"report.md": "# all"})
    assert (whole / "report.md").read_text() == "# all"


def test_an_older_marker_without_its_scope_is_taken_as_a_whole_report(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / MARKER).write_text("attention-proofs-report/1\n")
    with pytest.raises(RefusedError, match="every claim"):
        write_report(tmp_path / "r", FILES, only=("softmax-normalisation",))


def test_cli_only_refuses_to_replace_a_whole_report_before_running(tmp_path, capsys):
    out = write_report(tmp_path / "r", FILES)
    status = cli.main(["report", "--out", str(out), "--only", "softmax-normalisation", "--layers", "proofs"])
    assert status == 2
    assert "--force" in capsys.readouterr().err
    assert (out / "index.html").read_text() == "<html>new</html>"
