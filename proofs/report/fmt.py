"""Words and number formats shared by the HTML and Markdown renderers (formatting only)."""
from __future__ import annotations

from proofs.report.model import FAILED, NOT_CHECKED, NOT_CHECKED_TEXT, PASSED, VERDICT_WORDS


def number(x, digits: int = 4) -> str:
    """A measured number, short: ints with separators, floats to ``digits`` significant figures."""
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        return f"{x:.{digits}g}"
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(number(v, digits) for v in x) + "]"
    return str(x)


# Beyond this much LaTeX a formula (e.g. a 6×6 symbolic Jacobian) says nothing a reader can
# take in, and its MathML runs to tens of kilobytes; the JSON keeps every formula whole.
LONG_LATEX = 1500


def too_long(latex: str) -> str:
    """Empty when ``latex`` is short enough to show; otherwise the note shown in its place."""
    if len(latex) <= LONG_LATEX:
        return ""
    return f"(formula of {len(latex):,} LaTeX characters, too long to show; it is in report.json)"


def interval(ci) -> str:
    return "—" if not ci else f"[{number(ci[0])}, {number(ci[1])}]"


def word(layer: str, status: str) -> str:
    """What a layer's status is called in that layer's terms: proved, confirmed, conforms, ..."""
    if status == NOT_CHECKED:
        return NOT_CHECKED
    return VERDICT_WORDS[layer].get(status, status)


def overall(status: str) -> str:
    return {PASSED: "holds", FAILED: "FAILS", NOT_CHECKED: NOT_CHECKED}[status]


def not_checked(reason: str) -> str:
    return f"{NOT_CHECKED_TEXT}: {reason}" if reason else NOT_CHECKED_TEXT


def check_line(c: dict | object) -> str:
    """A kernel check as one phrase: invariant, case, dtype, discrepancy against bound."""
    get = c.get if isinstance(c, dict) else (lambda k: getattr(c, k))
    parts = [get("invariant"), get("case"), get("dtype")]
    text = ", ".join(str(p) for p in parts if p)
    if get("error"):
        return f"{text}: raised {get('error')}"
    return f"{text}: {number(get('discrepancy'))} against bound {number(get('bound'))}"
