import subprocess
import sys


def test_python_m_proofs_derive_prints_derivations_and_exits_zero():
    out = subprocess.run([sys.executable, "-m", "proofs", "derive", "--only", "dot-product-variance",
                          "softmax-jacobian"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "[PROVED] dot-product-variance" in out.stdout
    assert "2 of 2 claims proved" in out.stdout


def test_unknown_claim_is_reported_with_exit_status_2(tmp_path):
    for command in ("derive", "report"):
        out = subprocess.run([sys.executable, "-m", "proofs", command, "--only", "nope"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 2, command
        assert "claim_id 'nope'" in out.stderr
        assert not any(tmp_path.iterdir()), "a refused run must write nothing"
