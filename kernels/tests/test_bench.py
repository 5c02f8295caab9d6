"""The benchmark script: its arithmetic, its timer's rotation, and a whole --tiny run.

The --tiny run is a subprocess started *without* TRITON_INTERPRET, as a user would type it:
the script must switch the interpreter on itself, run every section on CPU and print the
same tables the GPU run prints.
"""
import math
import re
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kernels import bench
from kernels.harness.reference import causal_mask

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("nq, nk", [(4, 4), (3, 5), (5, 3), (1, 7), (7, 1), (64, 80)])
def test_visible_pairs_count_the_causal_mask(nq, nk):
    assert bench.visible_pairs(nq, nk, True) == int(causal_mask(nq, nk).sum())
    assert bench.visible_pairs(nq, nk, False) == nq * nk


def test_flops_convention():
    fwd = bench.attention_flops(2, 3, 5, 7, 16, False, bench.FWD)
    assert fwd == 4 * 2 * 3 * 5 * 7 * 16
    assert bench.attention_flops(2, 3, 5, 7, 16, False, bench.FWD_BWD) == 3.5 * fwd
    assert bench.attention_flops(1, 1, 8, 8, 16, True, bench.FWD) == 4 * 16 * 36


def test_input_sets_overflow_l2():
    assert bench.input_sets(set_bytes=1 << 30, l2_bytes=60 << 20) == 2  # one set alone is far larger
    n = bench.input_sets(set_bytes=30 << 20, l2_bytes=60 << 20)
    assert n * (30 << 20) >= 2 * (60 << 20)
    assert bench.input_sets(set_bytes=1, l2_bytes=60 << 20) == 8  # capped


def test_clock_cycles_the_input_sets():
    seen = []
    sets = [("a",), ("b",), ("c",)]
    t = bench.Clock(cuda=False).median(seen.append, sets, warmup=2, repeats=5)
    assert seen == ["a", "b", "a", "b", "c", "a", "b"] and t >= 0


def test_sizes_must_be_positive():
    with pytest.raises(SystemExit, match="sizes"):
        bench.settings_from(bench.parse_args(["--tiny", "--lengths", "0"]))
    assert bench.settings_from(bench.parse_args(["--tiny", "--lengths", "32"])).lengths == (32,)


def table(text: str, heading: str) -> list[dict]:
    """Rows of the Markdown table under the `### ` heading that is `heading` or starts `heading:`."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line == f"### {heading}" or line.startswith(f"### {heading}:"))
    section = []
    for line in lines[start + 1:]:
        if line.startswith("### "):
            break
        if line.startswith("|"):
            section.append([c.strip() for c in line.strip("|").split("|")])
    return [dict(zip(section[0], row)) for row in section[2:]]


def check_report(text: str, s: bench.Settings) -> None:
    """Every section present, one row per configured shape, numbers finite and consistent."""
    assert f"torch {torch.__version__}" in text and "triton " in text and "- date: " in text
    assert float(text.split("matmul ceiling")[1].split(":")[1].split("TFLOP/s")[0]) > 0
    expected = {(d, c, str(h), str(n)) for d in s.dtypes for c in ("no", "yes") for h in s.head_dims for n in s.lengths}
    for mode in ("Forward", "Forward+backward"):
        rows = table(text, mode)
        assert {(r["dtype"], r["causal"], r["D"], r["N"]) for r in rows} == expected
        for r in rows:
            ours = float(r["flash_attention TFLOP/s"])
            assert math.isfinite(ours) and ours > 0
            for b in bench.BACKENDS:
                cell = r[f"sdpa-{b} TFLOP/s (ours ÷ it)"]
                if cell != "—":
                    theirs, ratio = float(cell.split()[0]), float(cell.split("(")[1].rstrip("×)"))
                    # Both rates are printed to 3 significant figures (each within 0.5% of its true value,
                    # so ours/theirs is within 1.005/0.995 - 1 of the true ratio) and the ratio to 2
                    # decimals (±0.005).  The two errors add; pytest.approx would take their max.
                    assert abs(ratio - ours / theirs) <= 0.005 + (1.005 / 0.995 - 1) * ours / theirs
    decode = table(text, "Decoding")
    assert [int(r["Nk"]) for r in decode] == list(s.decode_lengths)
    for r in decode:
        assert int(r["splits"]) == s.decode_splits
        assert all(float(r[f"{k} µs"]) > 0 for k in ("flash_decode", "unsplit", "flash_attention", "sdpa-math"))
    memory = table(text, "Peak memory of flash_attention (bfloat16, B = 1, not causal), beyond its inputs")
    assert [int(r["N"]) for r in memory] == list(s.lengths)


def test_tiny_run_end_to_end(tmp_path):
    out = tmp_path / "bench.md"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, "-m", "kernels.bench", "--tiny", "--out", str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout == out.read_text(encoding="utf-8")
    check_report(proc.stdout, bench.TINY)
    # The checker can fail: a report that lost a decoding row is refused.
    lost = f"| {bench.TINY.decode_lengths[0]} |"
    broken = "\n".join(line for line in proc.stdout.splitlines() if not line.startswith(lost))
    with pytest.raises(AssertionError):
        check_report(broken, bench.TINY)
    # ... and so is one whose first printed ratio is off by 0.05 (beyond the printing error for any ratio below 4).
    first = re.search(r"\((\d+\.\d\d)×\)", proc.stdout)
    off = f"({float(first.group(1)) + 0.05:.2f}×)"
    with pytest.raises(AssertionError):
        check_report(proc.stdout[:first.start()] + off + proc.stdout[first.end():], bench.TINY)
