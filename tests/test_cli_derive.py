import subprocess
import sys


def test_python_m_proofs_report_prints_derivations_and_exits_zero():
    out = subprocess.run([sys.executable, "-m", "proofs", "report", "--only", "dot-product-variance",
                          "softmax-jacobian"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "[PROVED] dot-product-variance" in out.stdout
    assert "2 of 2 claims proved" in out.stdout


def test_unknown_claim_is_reported_with_exit_status_2():
    out = subprocess.run([sys.executable, "-m", "proofs", "report", "--only", "nope"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "claim_id 'nope'" in out.stderr
