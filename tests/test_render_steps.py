"""A derivation's text and Markdown carry each step's formula, as the HTML does."""
from __future__ import annotations

from proofs import derive
from proofs.render import step_latex, step_text


def test_text_and_markdown_include_every_steps_formula():
    d = derive("softmax-normalisation")
    text, md = d.to_text(), d.to_markdown()
    for s in d.steps:
        assert step_text(s) in text, s.description
        assert f"${step_latex(s)}$" in md, s.description
    assert "Eq(" not in "\n".join(step_text(s) for s in d.steps)  # pretty-printed, not SymPy's repr
