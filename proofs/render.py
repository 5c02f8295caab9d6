"""Text, Markdown and LaTeX renderings of a Derivation. Rendering computes nothing."""
from __future__ import annotations

import sympy as sp


def _latex(x) -> str:
    if x is None:
        return ""
    try:
        return sp.latex(x)
    except Exception:
        return str(x)


def _plain(x) -> str:
    return "" if x is None else sp.sstr(x)


KIND_LABELS = {"definition": "definitions", "assumption": "assumptions of the claim",
               "cited": "cited theorems", "hypothesis": "induction hypotheses"}


def _mark(step) -> str:
    return f"{step.kind}" if step.is_premise else ("ok" if step.passed else "FAILED")


def trust_lines(d) -> list[str]:
    """What the verdict takes on trust, by kind: one line per kind."""
    return [f"{KIND_LABELS.get(kind, kind)}: " + "; ".join(names) for kind, names in d.trust_base.items()]


def to_text(d) -> str:
    lines = [f"[{d.verdict.upper()}] {d.claim_id}: {d.title}", f"  statement: {_plain(d.statement)}"]
    lines += [f"  assume: {a}" for a in d.assumptions]
    for n, s in enumerate(d.steps, 1):
        lines.append(f"  {n:>2}. [{_mark(s)}] {s.rule}: {s.description}")
        lines.append(step_text(s))
        if s.passed is False:
            lines.append(f"      -> {s.detail}")
    lines += ["  trusted, not checked:"] + [f"    {t}" for t in trust_lines(d)] if d.trusted else \
        ["  trusted, not checked: nothing"]
    lines.append(f"  verdict: {d.verdict_line} ({len(d.checked_steps)} checked steps, "
                 f"{len(d.trusted)} premises, {d.seconds:.2f} s)")
    return "\n".join(lines)


def step_text(step, indent: str = "      ") -> str:
    """One step's formula as SymPy's pretty-printed Unicode text, every line indented: ``lhs = rhs`` on one
    line where both sides fit on one, else lhs, the relation and rhs as blocks one under the other."""
    def pretty(x) -> str:
        try:
            return sp.pretty(x, use_unicode=True, wrap_line=False)
        except Exception:
            return _plain(x)
    parts = [pretty(step.lhs)] + ([step.relation, pretty(step.rhs)] if step.rhs is not None else [])
    if all("\n" not in p for p in parts):
        return indent + " ".join(parts)
    return "\n".join(indent + line for p in parts for line in p.splitlines())


def step_latex(step) -> str:
    """One step as a LaTeX relation, e.g. ``lhs = rhs``; a bare expression if it has no rhs."""
    rel = {"=": "=", "≥": r"\ge", "≤": r"\le", ">": ">", "<": "<"}.get(step.relation, step.relation)
    if step.rhs is None:
        return _latex(step.lhs)
    return f"{_latex(step.lhs)} {rel} {_latex(step.rhs)}"


def to_markdown(d) -> str:
    out = [f"### `{d.claim_id}` — {d.title}", "", f"**Verdict: {d.verdict_line}**", "",
           f"$$ {_latex(d.statement)} $$", ""]
    if d.assumptions:
        out += ["Assumptions:", ""] + [f"- {a}" for a in d.assumptions] + [""]
    out += ["Trusted, not checked:", ""] + ([f"- {t}" for t in trust_lines(d)] or ["- nothing"]) + [""]
    out += ["| # | rule | step | formula | check |", "|---|---|---|---|---|"]
    for n, s in enumerate(d.steps, 1):
        check = f"premise ({s.kind})" if s.is_premise else ("✓ " if s.passed else "✗ ") + s.detail.replace("|", "\\|")
        desc = s.description.replace("|", "\\|")
        formula = step_latex(s).replace("\n", " ").replace("|", "\\vert ")
        out.append(f"| {n} | {s.rule} | {desc} | ${formula}$ | {check} |")
    return "\n".join(out) + "\n"


def to_latex(d) -> str:
    out = [rf"\paragraph{{{d.claim_id}: {d.title}}} Verdict: \textbf{{{d.verdict_line}}}.",
           r"\[" + _latex(d.statement) + r"\]", r"\begin{enumerate}"]
    for s in d.steps:
        tag = f"premise, {s.kind}" if s.is_premise else ("checked" if s.passed else "FAILED")
        out.append(rf"  \item ({s.rule}; {tag}) {s.description}: \( {step_latex(s)} \)")
    out.append(r"\end{enumerate}")
    return "\n".join(out)
