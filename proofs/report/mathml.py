"""LaTeX (as SymPy prints it) to presentation MathML, which browsers render natively.

latex2mathml renders more of SymPy's LaTeX than SymPy's own MathML printer, whose default
is content MathML that browsers do not display. The TeX source rides along as an
annotation, so copying a formula out of the page gives its LaTeX.
"""
from __future__ import annotations

import html

_MATH_OPEN = '<math xmlns="http://www.w3.org/1998/Math/MathML"'


def to_mathml(latex: str, *, display: bool = False) -> str:
    """One formula as ``<math>``; a LaTeX string the converter cannot read comes back as code, marked so."""
    from latex2mathml.converter import convert

    if not latex.strip():
        return ""
    try:
        out = convert(latex, display="block" if display else "inline")
    except Exception:
        return f'<code class="tex" title="LaTeX that could not be converted to MathML">{html.escape(latex)}</code>'
    # Wrap the body in <semantics> with the TeX as annotation: rendered first child, source kept.
    head, _, rest = out.partition(">")
    body = rest[: rest.rfind("</math>")]
    annotation = f'<annotation encoding="application/x-tex">{html.escape(latex, quote=False)}</annotation>'
    return f"{head}><semantics>{body}{annotation}</semantics></math>"
