"""Text, Markdown and LaTeX renderings of a Derivation. Rendering computes nothing."""
from __future__ import annotations

import re

import sympy as sp

from proofs.latex import latex


def _latex(x) -> str:
    if x is None:
        return ""
    try:
        return latex(x)
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
    lines = [f"[{d.verdict.upper()}] {d.claim_id}: {plain_prose(d.title)}", "  statement:", _pretty(d.statement)]
    lines += [f"  assume: {plain_prose(a)}" for a in d.assumptions]
    for n, s in enumerate(d.steps, 1):
        lines.append(f"  {n:>2}. [{_mark(s)}] {s.rule}: {plain_prose(s.description)}")
        lines.append(step_text(s))
        if s.passed is False:
            lines.append(f"      -> {s.detail}")
    lines += ["  trusted, not checked:"] + [f"    {t}" for t in trust_lines(d)] if d.trusted else \
        ["  trusted, not checked: nothing"]
    lines.append(f"  verdict: {d.verdict_line} ({len(d.checked_steps)} checked steps, "
                 f"{len(d.trusted)} premises, {d.seconds:.2f} s)")
    return "\n".join(lines)


def _pretty(x, indent: str = "      ") -> str:
    """SymPy's pretty-printed Unicode text of ``x``, every line indented (never its ``repr``, ``Eq(…)``)."""
    try:
        text = sp.pretty(x, use_unicode=True, wrap_line=False)
    except Exception:
        text = _plain(x)
    return "\n".join(indent + line for line in text.splitlines())


def step_text(step, indent: str = "      ") -> str:
    """One step's formula as SymPy's pretty-printed Unicode text, every line indented: ``lhs = rhs`` on one
    line where both sides fit on one, else lhs, the relation and rhs as blocks one under the other."""
    parts = [_pretty(step.lhs, "")] + ([step.relation, _pretty(step.rhs, "")] if step.rhs is not None else [])
    if all("\n" not in p for p in parts):
        return indent + " ".join(parts)
    return "\n".join(indent + line for p in parts for line in p.splitlines())


# The relations a step can state, as SymPy builds them (proofs.engine.relation's table, by symbol), so that
# SymPy prints the whole relation and no LaTeX is written here by hand.
_RELATIONS = {"=": sp.Eq, "≤": sp.Le, "<=": sp.Le, "≥": sp.Ge, ">=": sp.Ge, "<": sp.Lt, ">": sp.Gt,
              "≠": sp.Ne, "!=": sp.Ne}


def step_latex(step) -> str:
    """One step as LaTeX printed by SymPy: the relation ``lhs rel rhs``, or a bare expression if it has no rhs.
    A relation SymPy cannot build between the two sides (``~``, ``⟺``) joins the sides' LaTeX with its symbol."""
    if step.rhs is None:
        return _latex(step.lhs)
    rel = _RELATIONS.get(step.relation)
    if rel is not None:
        try:
            return latex(rel(step.lhs, step.rhs, evaluate=False))
        except Exception:  # e.g. a Python tuple on one side; printed side by side below
            pass
    return f"{_latex(step.lhs)} {step.relation} {_latex(step.rhs)}"


def to_markdown(d) -> str:
    out = [f"### `{d.claim_id}` — {markdown_prose(d.title)}", "", f"**Verdict: {d.verdict_line}**", "",
           f"$$ {_latex(d.statement)} $$", ""]
    if d.assumptions:
        out += ["Assumptions:", ""] + [f"- {markdown_prose(a)}" for a in d.assumptions] + [""]
    out += ["Trusted, not checked:", ""] + ([f"- {t}" for t in trust_lines(d)] or ["- nothing"]) + [""]
    out += ["| # | rule | step | formula | check |", "|---|---|---|---|---|"]
    for n, s in enumerate(d.steps, 1):
        check = f"premise ({s.kind})" if s.is_premise else ("✓ " if s.passed else "✗ ") + s.detail.replace("|", "\\|")
        desc = markdown_prose(s.description).replace("|", "\\|")
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


# --------------------------------------------------------------------------- prose

# Prose (claims, assumptions, step descriptions) writes indices and powers as TeX-style groups
# (``S_{N+1}``, ``e^{−t}``), and seed quotes carry the seeds' own TeX (``$\sqrt{d_k}$``,
# ``\frac{∂ …}{∂ z_j}``). A page shows neither raw: ``prose_parts`` splits the text once and each
# renderer shows the parts in its own way (HTML sub/sup and MathML, Markdown math, Unicode text).
TEXT, SUB, SUP, TEX = "text", "sub", "sup", "tex"

_TEX_COMMAND = re.compile(r"\\[A-Za-z]+")
_WORD = re.compile(r"[A-Za-z]{3,}")  # an English word; TeX's own words follow a backslash


def _group_end(text: str, open_at: int) -> int:
    """The index just past the brace group that opens at ``open_at`` (or -1 when it never closes)."""
    depth = 0
    for i in range(open_at, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return i + 1
    return -1


def _tokens(text: str) -> list[tuple[int, int]]:
    """(start, end) of each whitespace-separated token, braces kept whole."""
    out, i = [], 0
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        start, depth = i, 0
        while i < len(text) and (depth or not text[i].isspace()):
            depth = max(0, depth + {"{": 1, "}": -1}.get(text[i], 0))
            i += 1
        out.append((start, i))
    return out


def _tex_spans(text: str) -> list[tuple[int, int]]:
    """Runs of TeX written without ``$`` (``\\mathrm{Var}(S) = \\sum_{i=1}^{d_k} …``, ``Q K^\\top``): maximal
    runs of tokens that are TeX or hold no word (``=``, ``1``, ``Q``, ``k_i)``), holding at least one TeX token."""
    spans, run, has_tex = [], [], False
    for start, end in _tokens(text) + [(len(text), len(text))]:
        token = text[start:end]
        tex = bool(_TEX_COMMAND.search(token))
        if token and (tex or not _WORD.search(token)):
            run.append((start, end))
            has_tex |= tex
            continue
        if has_tex:
            spans.append((run[0][0], run[-1][1]))
        run, has_tex = [], False
    return spans


def _script_parts(text: str) -> list[tuple[str, str]]:
    """Plain prose with ``_{…}`` and ``^{…}`` groups (and a one-character ``^n`` after a group) split out."""
    parts, plain, i = [], [], 0
    while i < len(text):
        ch = text[i]
        if ch in "_^" and i + 1 < len(text):
            kind = SUB if ch == "_" else SUP
            if text[i + 1] == "{" and (end := _group_end(text, i + 1)) > 0:
                parts += [(TEXT, "".join(plain)), (kind, text[i + 2:end - 1])]
                plain, i = [], end
                continue
            # a one-character power (e^H, (1 + u)^n, K^T): after a group, or not followed by more of a word
            if ch == "^" and text[i + 1].isalnum() and (
                    (not plain and parts and parts[-1][0] in (SUB, SUP))
                    or (i > 0 and not text[i - 1].isspace() and not (i + 2 < len(text) and text[i + 2].isalnum()))):
                parts += [(TEXT, "".join(plain)), (SUP, text[i + 1])]
                plain, i = [], i + 2
                continue
        plain.append(ch)
        i += 1
    parts.append((TEXT, "".join(plain)))
    return [p for p in parts if p[1]]


def prose_parts(text: str, formulas: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """``text`` as (kind, text) parts: TEXT, SUB (``x_{…}``), SUP (``x^{…}``) and TEX (``$…$``, or TeX commands
    written without dollars). ``formulas`` maps SymPy's text of an expression (``Eq(a[x], …)``) to its LaTeX:
    each occurrence becomes that TEX part."""
    if formulas:
        # whole tokens only: "2*T" is a part of some expression, but not of "2*Theta"
        known = re.compile(r"(?<![A-Za-z0-9_])(?:" + "|".join(re.escape(k) for k in sorted(formulas, key=len, reverse=True))
                           + r")(?![A-Za-z0-9_])")
        parts, i = [], 0
        for m in known.finditer(text):
            parts += prose_parts(text[i:m.start()]) + [(TEX, formulas[m.group()])]
            i = m.end()
        return parts + prose_parts(text[i:])
    parts, i = [], 0
    for m in re.finditer(r"\$\$(.+?)\$\$|\$(.+?)\$", text):
        parts += _outside_dollars(text[i:m.start()])
        parts.append((TEX, m.group(1) or m.group(2)))
        i = m.end()
    return [p for p in parts + _outside_dollars(text[i:]) if p[1]]


def _outside_dollars(text: str) -> list[tuple[str, str]]:
    parts, i = [], 0
    for start, end in _tex_spans(text):
        parts += _script_parts(text[i:start]) + [(TEX, text[start:end])]
        i = end
    return parts + _script_parts(text[i:])


_SUBSCRIPTS = dict(zip("0123456789+-−=()aehijklmnoprstuvxβγρφχ", "₀₁₂₃₄₅₆₇₈₉₊₋₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓᵦᵧᵨᵩᵪ"))
_SUPERSCRIPTS = dict(zip("0123456789+-−=()abcdefghijklmnoprstuvwxyzABDEGHIJKLMNOPRTUVW",
                         "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁻⁼⁽⁾ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻᴬᴮᴰᴱᴳᴴᴵᴶᴷᴸᴹᴺᴼᴾᴿᵀᵁⱽᵂ"))


def _scripted(kind: str, text: str) -> str:
    table, mark = (_SUBSCRIPTS, "_") if kind == SUB else (_SUPERSCRIPTS, "^")
    if all(ch in table for ch in text):
        return "".join(table[ch] for ch in text)
    return f"{mark}({text})"


def plain_prose(text: str) -> str:
    """``text`` for a terminal: groups as Unicode sub- and superscripts where every character has one
    (``e^{−t}`` → ``e⁻ᵗ``), else as ``S_(N+1)``; TeX is left as written (a terminal cannot typeset it)."""
    return "".join(_scripted(kind, t) if kind in (SUB, SUP) else t for kind, t in prose_parts(text))


def markdown_prose(text: str, formulas: dict[str, str] | None = None, math=lambda tex: f"$`{tex}`$") -> str:
    """``text`` for GitHub Markdown: groups as ``<sub>``/``<sup>``, TeX as inline math (``math(tex)``)."""
    tags = {SUB: "<sub>{}</sub>", SUP: "<sup>{}</sup>", TEXT: "{}"}
    return "".join(tags[kind].format(t) if kind in tags else math(t) for kind, t in prose_parts(text, formulas))
