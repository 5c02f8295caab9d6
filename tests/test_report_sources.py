"""Where the report says its evidence came from: the git commit, each claim's theorem source, the seeds' titles."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from proofs import CLAIMS
from proofs.report.gather import REPO, describe, source_commit, theorem_source
from proofs.report.model import NOT_A_CHECKOUT
from proofs.seed_data import SEED_TITLES

SEEDS = REPO.parent / "shared" / "seeds"  # CI lays shared/ beside the clone, as a developer's checkout has it


@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(),
                    reason="needs git and a git checkout of the project (an unpacked tarball has no commit)")
def test_the_commit_is_the_checkouts_head():
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert source_commit().split(" ")[0] == head


def test_a_directory_outside_git_says_it_is_not_a_checkout(tmp_path):
    assert source_commit(tmp_path) == NOT_A_CHECKOUT


def test_a_directory_inside_another_repository_is_not_taken_for_the_checkout(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed: the nested case cannot be built")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "pkg").mkdir()
    assert source_commit(tmp_path / "pkg") == NOT_A_CHECKOUT


def test_every_theorem_source_is_a_file_and_a_function_in_it():
    for c in CLAIMS:
        path, function = theorem_source(c.theorem).split(":")
        text = (REPO / path).read_text(encoding="utf-8")
        assert f"def {function}(" in text, c.id
    assert theorem_source("proofs.no_such_module:f") == "proofs.no_such_module (not found):f"


def test_every_seed_a_claim_quotes_has_a_title():
    assert {s.file for c in CLAIMS for s in c.seeds} <= set(SEED_TITLES)


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the seed documents (../shared/seeds) are not beside this checkout")
def test_each_seed_title_is_the_seeds_first_line():
    for file, title in SEED_TITLES.items():
        assert (SEEDS / file).read_text(encoding="utf-8").splitlines()[0].strip() == title


def test_the_run_sentence_names_only_the_layers_that_ran():
    from proofs.report import PLANS

    everything = describe(PLANS["quick"])
    assert "Triton kernel checked in float32" in everything and "Monte Carlo confirmations" in everything
    assert "power ≥ 0.8 against a 5% error" in everything
    proofs_only = describe(PLANS["quick"], ("proofs",))
    assert "Triton" not in proofs_only and "Monte Carlo confirmations" not in proofs_only
    assert "kernel layer not run" in proofs_only and "Monte Carlo layer not run" in proofs_only
    idle = describe(PLANS["quick"], kernel_ran=False)  # e.g. --only of a claim no kernel check concerns
    assert "Triton kernel not run" in idle and "checked in" not in idle


def test_the_run_sentence_says_the_kernel_did_not_run_for_a_claim_it_does_not_concern():
    from proofs.report.gather import Options, gather

    report = gather(Options(only=("dot-product-variance",), layers=("proofs", "kernels")))
    assert "Triton kernel not run" in report.run["summary"], report.run["summary"]
