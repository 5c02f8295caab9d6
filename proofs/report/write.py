"""Atomic writing of a report directory.

Every file is first written into a hidden staging directory beside the target, and only a
complete staging directory is renamed into place, so an interrupted run never leaves a
half-written report: the target holds either the earlier report or the new one.

A directory is written into only when it is missing, empty, or holds an earlier report
(its marker file or ``report.json`` says so); anything else needs ``force=True``, and then only the
report's own entries are replaced, each by an atomic rename, and nothing else is touched.
A report of a few claims (``--only``) never replaces a report of the whole catalogue without
``force=True``: the marker file records which claims a report covers.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from proofs.report.jsonout import FORMAT

MARKER = ".attention-proofs-report"  # written with every report, whatever its formats
# The entries a report directory holds; with these only, the directory is swapped whole.
REPORT_ENTRIES = frozenset({"index.html", "report.md", "report.json", "figures", MARKER})


class RefusedError(ValueError):
    """The target directory holds something other than an earlier report."""


def holds_report(directory: Path) -> bool:
    if (directory / MARKER).is_file():
        return True
    try:
        doc = json.loads((directory / "report.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and doc.get("format", "").split("/")[0] == FORMAT.split("/")[0]


WHOLE = "claims: all"  # the marker's second line for a report of the whole catalogue


def marker_text(only) -> str:
    return f"{FORMAT}\n" + (WHOLE if only is None else "claims: " + " ".join(only)) + "\n"


def holds_whole_report(directory: Path) -> bool:
    """Whether ``directory`` holds a report of every claim (a marker without a scope line is an older
    report, taken as whole: refusing to overwrite it costs a --force, overwriting it loses it)."""
    try:
        lines = (directory / MARKER).read_text(encoding="utf-8").splitlines()
    except OSError:
        try:
            doc = json.loads((directory / "report.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        return isinstance(doc, dict) and (doc.get("run") or {}).get("only") is None
    return len(lines) < 2 or lines[1] == WHOLE


def check_target(out: str | os.PathLike, *, force: bool = False, only=None) -> list[str]:
    """Raise RefusedError when ``out`` may not receive a report; else return what it holds now.

    ``only``: the claims the new report covers (None: all). Called before the long run as well as at
    writing time, so a refusal costs no waiting."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise RefusedError(f"--out {out} exists and is not a directory")
    existing = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
    if existing and not holds_report(out) and not force:
        shown = ", ".join(existing[:5]) + (", …" if len(existing) > 5 else "")
        raise RefusedError(f"--out {out} is not empty ({shown}) and holds no earlier report; "
                           "choose another directory or pass --force to write the report's files into it")
    if existing and only is not None and not force and holds_whole_report(out):
        raise RefusedError(f"--out {out} holds a report of every claim, and --only would replace it with a report of "
                           f"{len(only)}; choose another --out or pass --force to replace it")
    return existing


def write_report(out: str | os.PathLike, files: dict[str, str | bytes], *, force: bool = False, only=None) -> Path:
    """Write ``files`` (relative path → content) as the directory ``out``; returns its path.

    ``only``: the claims the report covers (None: the whole catalogue)."""
    out = Path(out)
    existing = check_target(out, force=force, only=only)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    try:
        for rel, content in {**files, MARKER: marker_text(only)}.items():
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            data = content.encode("utf-8") if isinstance(content, str) else content
            with open(path, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        staging.chmod(0o755)  # mkdtemp makes it private; a report is for reading
        if not existing:
            os.rename(staging, out)  # replaces a missing or empty directory in one step
        elif set(existing) <= REPORT_ENTRIES:
            _swap(staging, out)
        else:
            for entry in sorted(os.listdir(staging)):
                _swap(staging / entry, out / entry)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return out


def _swap(new: Path, target: Path) -> None:
    """Put ``new`` where ``target`` is. Files go in by one atomic rename; a directory by two
    (the old one aside, the new one in), so ``target`` is never a mixture of the two."""
    if new.is_file() or not target.exists():
        os.replace(new, target)
        return
    old = target.with_name(f".{target.name}.old-{os.getpid()}")
    os.rename(target, old)
    os.rename(new, target)
    shutil.rmtree(old, ignore_errors=True)
