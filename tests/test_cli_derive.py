import subprocess
import sys

from conftest import checkout_env


def test_python_m_proofs_derive_prints_derivations_and_exits_zero():
    out = subprocess.run([sys.executable, "-m", "proofs", "derive", "--only", "dot-product-variance",
                          "softmax-jacobian"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "[PROVED] dot-product-variance" in out.stdout
    assert "2 of 2 claims proved" in out.stdout


def test_derive_takes_claim_ids_as_arguments():
    from proofs import cli

    out = subprocess.run([sys.executable, "-m", "proofs", "derive", "prescaled-query", "softmax-jacobian"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "[PROVED] prescaled-query" in out.stdout and "[PROVED] softmax-jacobian" in out.stdout
    assert "2 of 2 claims proved" in out.stdout
    assert cli.main(["derive", "prescaled-query", "nope"]) == 2  # every id checked before anything prints


def test_version_and_help_name_every_claim(capsys):
    import pytest

    from proofs import CLAIMS, cli

    for argv in (["--version"], ["--help"], ["derive", "--help"]):
        with pytest.raises(SystemExit) as done:
            cli.main(argv)
        assert done.value.code == 0
        out = capsys.readouterr().out
        if argv == ["--version"]:
            assert out.startswith("attention-proofs ") and len(out.split()) >= 2
        else:
            assert all(c.id in out for c in CLAIMS), argv


def test_unknown_claim_is_reported_with_exit_status_2(tmp_path):
    for args in (["derive", "--only", "nope"], ["derive", "nope"], ["report", "--only", "nope"]):
        out = subprocess.run([sys.executable, "-m", "proofs", *args], cwd=tmp_path,
                             capture_output=True, text=True, timeout=60, env=checkout_env())
        assert out.returncode == 2, args
        assert "claim_id 'nope'" in out.stderr
        assert not any(tmp_path.iterdir()), "a refused run must write nothing"
