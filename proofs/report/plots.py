"""The report's figures as SVG, drawn from finished data (``FigureData.data``); nothing is computed here.

Matplotlib runs on its Agg backend (no display needed). The SVGs keep text as text and carry
no date, and their element ids are prefixed per figure, so several can sit inline in one page.
"""
from __future__ import annotations

import io
import re

_COLORS = {"float32": "#1f77b4", "float16": "#d62728", "bfloat16": "#2ca02c", "float64": "#7f7f7f"}
_SCALINGS = (("none", "no scaling", "#d62728"), ("sqrt_dk", "÷ √d_k", "#1f77b4"), ("dk", "÷ d_k", "#2ca02c"))


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "attention-proofs", "font.size": 9,
                         "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True,
                         "grid.alpha": 0.3, "figure.dpi": 100})
    return plt


def _svg(fig, prefix: str) -> str:
    plt = _pyplot()
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]  # drop the XML declaration and DOCTYPE: the SVG goes inline
    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg, flags=re.S)  # RDF boilerplate, nothing to show
    # Matplotlib's ids repeat across figures; one page holds several, so make them unique.
    svg = re.sub(r'id="([^"]+)"', rf'id="{prefix}-\1"', svg)
    svg = re.sub(r'(href="#|url\(#)([^")]+)', rf"\1{prefix}-\2", svg)
    return svg


def variance(data: dict, prefix: str = "variance") -> str:
    plt = _pyplot()
    rows = data["rows"]
    d = [r["d_k"] for r in rows]
    est = [r["estimate"] for r in rows]
    low = [r["estimate"] - r["ci"][0] for r in rows]
    high = [r["ci"][1] - r["estimate"] for r in rows]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.plot(d, [r["derived"] for r in rows], color="#444", lw=1, label="derived: Var(q·k) = d_k")
    ax.errorbar(d, est, yerr=[low, high], fmt="o", ms=4, capsize=3, color="#1f77b4",
                label=f"sample variance, CI ({data['n_samples']:,} samples each)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("d_k")
    ax.set_ylabel("Var(q·k)")
    ax.legend(loc="upper left")
    return _svg(fig, prefix)


def histograms(data: dict, prefix: str = "histograms") -> str:
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(7.6, 3.2))
    for ax, panel, color in zip(axes, data["panels"], ("#d62728", "#1f77b4")):
        ax.stairs(panel["counts"], panel["edges"], fill=True, color=color, alpha=0.6)
        ax.set_title(f"{panel['label']}  (sample std {panel['std']:.3g})")
        ax.set_xlabel("score")
    axes[0].set_ylabel(f"count of {data['n_samples']:,}")
    return _svg(fig, prefix)


def saturation(data: dict, prefix: str = "saturation") -> str:
    plt = _pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(9.6, 3.2))
    quantities = (("max_weight", "mean max weight"), ("entropy", "mean entropy (nats)"),
                  ("jacobian_fro", "mean ‖J‖_F"))
    for ax, (key, label) in zip(axes, quantities):
        for scaling, name, color in _SCALINGS:
            curve = data["curves"].get(scaling)
            if curve is not None:
                ax.plot(data["d_ks"], curve[key], "o-", ms=3, color=color, label=name)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("d_k")
        ax.set_title(label)
    axes[0].legend()
    return _svg(fig, prefix)


def kernel_error(data: dict, prefix: str = "kernel-error") -> str:
    plt = _pyplot()
    records = data["records"]
    fig, ax = plt.subplots(figsize=(7.6, 4.0))
    # An exact result (error 0, e.g. N = 1 where the output is the one value row) has no place on a
    # log axis: it is drawn as a triangle on the bottom edge instead.
    positive = [r["error"] for r in records if isinstance(r["error"], float) and r["error"] > 0]
    floor = min(positive + [r["bound"] for r in records]) / 10
    for dtype in sorted({r["dtype"] for r in records}):
        rows = sorted((r for r in records if r["dtype"] == dtype), key=lambda r: r["n"])
        color = _COLORS.get(dtype, "#555")
        ax.plot([r["n"] for r in rows], [r["bound"] for r in rows], "--", color=color, lw=1, label=f"{dtype} bound")
        measured = [r for r in rows if r["error"] != 0]
        ax.plot([r["n"] for r in measured], [r["error"] for r in measured], "o-", ms=4, color=color,
                label=f"{dtype} error")
        exact = [r["n"] for r in rows if r["error"] == 0]
        if exact:
            ax.plot(exact, [floor] * len(exact), "v", ms=7, color=color, clip_on=False,
                    label=f"{dtype} error exactly 0")
        bad = [r for r in rows if not r["passed"]]
        if bad:
            ax.plot([r["n"] for r in bad], [r["error"] for r in bad], "x", ms=10, mew=2, color="black")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_ylim(bottom=floor)
    ax.set_xlabel("sequence length N (Nq = Nk)")
    ax.set_ylabel("max |error| against float64")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return _svg(fig, prefix)


def online_softmax(data: dict, prefix: str = "online-softmax") -> str:
    plt = _pyplot()
    fig, (ax_m, ax_l) = plt.subplots(1, 2, figsize=(7.6, 3.2))
    blocks = list(range(1, len(data["running_max"]) + 1))
    ax_m.step(blocks, data["running_max"], where="post", color="#1f77b4", marker="o", ms=3)
    ax_m.axhline(data["direct_max"], ls="--", color="#444", lw=1)
    ax_m.set_title("running max m")
    ax_l.step(blocks, data["running_sum"], where="post", color="#d62728", marker="o", ms=3)
    ax_l.axhline(data["direct_sum"], ls="--", color="#444", lw=1)
    ax_l.set_title("running sum l = Σ exp(s − m)")
    for ax in (ax_m, ax_l):
        ax.set_xlabel(f"key blocks seen (block size {data['block_size']})")
    return _svg(fig, prefix)


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


def traffic(data: dict, prefix: str = "traffic") -> str:
    """Measured (markers) against derived (lines) HBM elements per kernel. A point whose counts differ is drawn
    as a cross and counted in its panel's title; a point that says it agrees while its totals differ is
    refused (the figure would show a disagreement as agreement)."""
    plt = _pyplot()
    kernels = list(dict.fromkeys(s["kernel"] for s in data["series"]))
    fig, axes = plt.subplots(1, len(kernels), figsize=(3.3 * len(kernels) + 1.4, 3.4))
    axes = axes if len(kernels) > 1 else [axes]
    for ax, kernel in zip(axes, kernels):
        disagreements = 0
        for s in (s for s in data["series"] if s["kernel"] == kernel):
            pts = s["points"]
            for p in pts:
                if p["agrees"] and p["measured"] != p["derived"]:
                    raise ValueError(f"{kernel} N = {p['n']} is marked as agreeing, but measured {p['measured']} "
                                     f"!= derived {p['derived']}")
            color, style = ("#ff7f0e", "--") if s["causal"] else ("#1f77b4", "-")
            name = "causal" if s["causal"] else "non-causal"
            ns = [p["n"] for p in pts]
            ax.plot(ns, [p["derived"] for p in pts], style, color=color, lw=1, label=f"{name}, derived")
            good = [p for p in pts if p["agrees"]]
            ax.plot([p["n"] for p in good], [p["measured"] for p in good], "o", ms=4, mfc="none", color=color,
                    label=f"{name}, measured")
            bad = [p for p in pts if not p["agrees"]]
            disagreements += len(bad)
            if bad:
                ax.plot([p["n"] for p in bad], [p["measured"] for p in bad], "x", ms=10, mew=2, color="black",
                        label=f"{name}, measured ≠ derived")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("keys N" if kernel == "decode" else "N (queries = keys)")
        ax.set_title(kernel + (f" — {disagreements} DISAGREE" if disagreements else ""),
                     color="#b00" if disagreements else "black")
    axes[0].set_ylabel("HBM elements read + written")
    # one legend for all panels, so a disagreement in any panel is in it
    entries = {label: handle for ax in axes for handle, label in zip(*ax.get_legend_handles_labels())}
    axes[-1].legend(entries.values(), entries.keys(), fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                    frameon=False)
    return _svg(fig, prefix)


def memory(data: dict, prefix: str = "memory") -> str:
    """Peak extra bytes against N, log–log, with the fitted slopes the data carries and the derived lines."""
    plt = _pyplot()
    n = data["n"]
    for key in ("flash_bytes", "math_bytes", "derived_flash_bytes", "derived_math_bytes"):
        if len(data[key]) != len(n) or min(data[key]) <= 0:
            raise ValueError(f"{key} must hold one positive byte count per N ({len(n)}), got {data[key]!r}")
    fig, ax = plt.subplots(figsize=(6.0, 4.0))
    for impl, name, color in (("flash", "this kernel", "#1f77b4"), ("math", "SDPA math backend", "#d62728")):
        ax.plot(n, data[f"{impl}_bytes"], "o-", ms=4, color=color,
                label=f"{name}, measured (slope {data[f'{impl}_slope']:.2f})")
        ax.plot(n, data[f"derived_{impl}_bytes"], ":", lw=1, color=color, label=f"{name}, derived")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("N (queries = keys)")
    ax.set_ylabel("peak bytes beyond the output")
    ax.legend(fontsize=7, loc="upper left")
    return _svg(fig, prefix)


_TRAINING_COLORS = {"sqrt": "#1f77b4", "none": "#d62728", "inverse": "#2ca02c", "t5": "#9467bd"}


def training(data: dict, prefix: str = "training") -> str:
    """Eval loss per step, one panel per d_k: each seed thin, the mean thick, a circle where a seed solved."""
    plt = _pyplot()
    settings = data["settings"]
    d_ks = sorted({x["d_k"] for x in settings})
    fig, axes = plt.subplots(1, len(d_ks), figsize=(3.3 * len(d_ks) + 1.6, 3.4), sharey=True)
    axes = axes if len(d_ks) > 1 else [axes]
    for ax, dk in zip(axes, d_ks):
        for x in (x for x in settings if x["d_k"] == dk):
            steps, color = x["steps"], _TRAINING_COLORS.get(x["scaling"], "#555")
            if any(len(loss) != len(steps) for loss in x["loss"]) or len(x["mean_loss"]) != len(steps):
                raise ValueError(f"d_k = {dk} {x['scaling']}: a loss curve is not one value per eval step")
            for loss in x["loss"]:
                ax.plot(steps, loss, "-", lw=0.6, alpha=0.35, color=color)
            ax.plot(steps, x["mean_loss"], "-", lw=2, color=color, label=x["scaling"])
            for loss, solved in zip(x["loss"], x["solved_steps"]):
                if solved is None:
                    continue
                if solved not in steps:
                    raise ValueError(f"d_k = {dk} {x['scaling']}: solved at step {solved}, which was not evaluated")
                ax.plot([solved], [loss[steps.index(solved)]], "o", ms=6, mfc="none", mew=1.5, color=color)
        ax.axhline(data["chance_loss"], ls=":", color="#444", lw=1)
        ax.set_title(f"d_k = {dk}")
        ax.set_xlabel("step")
    axes[0].set_ylabel("eval cross-entropy (nats)")
    axes[-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    return _svg(fig, prefix)


DRAW = {"variance": variance, "histograms": histograms, "saturation": saturation,
        "kernel-error": kernel_error, "online-softmax": online_softmax, "rounding-bounds": rounding,
        "traffic": traffic, "memory": memory, "training": training}


def draw_all(figures) -> tuple[dict[str, str], dict[str, str]]:
    """SVG text for every figure whose data is there, and why any other could not be drawn."""
    from proofs.report.model import PASSED

    svgs, problems = {}, {}
    for f in figures:
        if f.status != PASSED:
            problems[f.name] = f.reason
            continue
        try:
            svgs[f.name] = DRAW[f.name](f.data, prefix=f"fig-{f.name}")
        except Exception as exc:  # malformed data from a layer must not sink the whole report
            problems[f.name] = f"could not draw the figure: {type(exc).__name__}: {exc}"
    return svgs, problems
