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


def test_prose_parts_split_index_groups_seed_tex_and_sympy_text():
    from proofs.render import SUB, SUP, TEX, TEXT, markdown_prose, plain_prose, prose_parts

    assert prose_parts("Σ_{i=1}^n a_i = 1") == [(TEXT, "Σ"), (SUB, "i=1"), (SUP, "n"), (TEXT, " a_i = 1")]
    assert prose_parts("e^{−t} and S_{N+1}(m′)") == [(TEXT, "e"), (SUP, "−t"), (TEXT, " and S"), (SUB, "N+1"),
                                                      (TEXT, "(m′)")]
    assert prose_parts("Dividing by $\\sqrt{d_k}$ rescales") == [(TEXT, "Dividing by "), (TEX, "\\sqrt{d_k}"),
                                                                 (TEXT, " rescales")]
    # TeX written without dollars: the run of TeX and word-free tokens around it, not the English beside it
    assert prose_parts("tiles the Q K^\\top product") == [(TEXT, "tiles the "), (TEX, "Q K^\\top"), (TEXT, " product")]
    whole = "\\mathrm{Var}(S) = \\sum_{i=1}^{d_k} \\mathrm{Var}(q_i k_i) = d_k \\cdot 1 = d_k"
    assert prose_parts(whole) == [(TEX, whole)]
    assert prose_parts("M_ij = -inf (j > i)") == [(TEXT, "M_ij = -inf (j > i)")]  # plain text stays text
    formulas = {"Eq(a[x], 1)": "{a}_{x} = 1"}
    assert prose_parts("given definition Eq(a[x], 1); done", formulas) == [
        (TEXT, "given definition "), (TEX, "{a}_{x} = 1"), (TEXT, "; done")]
    assert prose_parts("e^H(1 + Θ) and (1 + u)^n, not a^bc or x ^ y") == [
        (TEXT, "e"), (SUP, "H"), (TEXT, "(1 + Θ) and (1 + u)"), (SUP, "n"), (TEXT, ", not a^bc or x ^ y")]
    # a formula's text is replaced where it stands as a whole, not inside a longer name
    assert prose_parts("2*Theta and 2*T", {"2*T": "2 T"}) == [(TEXT, "2*Theta and "), (TEX, "2 T")]
    assert plain_prose("e^{−t}, S_{N+1}") == "e⁻ᵗ, S_(N+1)"
    assert markdown_prose("S_{N+1} by $G$") == "S<sub>N+1</sub> by $`G`$"


def test_step_latex_is_printed_by_sympy_whole():
    import sympy as sp

    from proofs.engine import Step
    from proofs.render import step_latex

    x, y = sp.symbols("x y")
    assert step_latex(Step("r", "d", x, y + 1, True, relation="≥")) == sp.latex(sp.Ge(x, y + 1, evaluate=False))
    assert step_latex(Step("r", "d", x, y, True, relation="=")) == sp.latex(sp.Eq(x, y, evaluate=False))
    assert step_latex(Step("r", "d", (x, y), y, True, relation="~")) == f"{sp.latex((x, y))} ~ {sp.latex(y)}"
