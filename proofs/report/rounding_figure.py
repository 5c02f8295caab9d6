"""Figure: attention's rounding error against N per dtype, beside the proved and empirical bounds.

Drawn from ``kernels.rounding_confirmation.error_curve`` records (nothing computed here): the largest measured
error, the deterministic bound (claim rounding-attention-forward), the probabilistic bound
(rounding-attention-probabilistic, at its stated failure probability) and the empirical
same-precision rule of kernels/harness/tolerance.py.
"""
from __future__ import annotations

from proofs.report.plots import _COLORS, _pyplot, _svg


def rounding(data: dict, prefix: str = "rounding-bounds") -> str:
    plt = _pyplot()
    records = data["records"]
    dtypes = sorted({r["dtype"] for r in records}, key=lambda d: ("float32", "float16", "bfloat16").index(d))
    fig, axes = plt.subplots(1, len(dtypes), figsize=(3.2 * len(dtypes) + 1.2, 3.6), sharey=False)
    axes = axes if len(dtypes) > 1 else [axes]
    for ax, dtype in zip(axes, dtypes):
        rows = sorted((r for r in records if r["dtype"] == dtype), key=lambda r: r["n"])
        n = [r["n"] for r in rows]
        color = _COLORS.get(dtype, "#555")
        ax.plot(n, [r["deterministic"] for r in rows], "-", color="#222", lw=1.2, label="deterministic bound")
        ax.plot(n, [r["probabilistic"] for r in rows], "--", color="#222", lw=1, label=f"probabilistic (fails ≤ {data['failure']:g})")
        ax.plot(n, [r["empirical"] for r in rows], ":", color="#888", lw=1.2, label="empirical rule (2× ref + floor)")
        measured = [r for r in rows if r["error"] > 0]
        ax.plot([r["n"] for r in measured], [r["error"] for r in measured], "o", ms=4, color=color,
                label=f"error nearest its bound ({data['samples']} inputs)")
        bad = [r for r in rows if r["violations"]]
        if bad:
            ax.plot([r["n"] for r in bad], [r["error"] for r in bad], "x", ms=10, mew=2, color="black",
                    label="deterministic bound exceeded")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(dtype)
        ax.set_xlabel("keys N")
    axes[0].set_ylabel(f"max |error| vs float64 ({data['impl']})")
    axes[-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    return _svg(fig, prefix)
