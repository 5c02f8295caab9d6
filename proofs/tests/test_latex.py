"""The report's LaTeX printer reads symbol names as written: SymPy's own printer turns names that
stand for an expression ("|tau_j|", "s_1 - s_2") into a subscript that swallows the rest."""
import pytest
import sympy as sp

from proofs.latex import latex, name_latex


@pytest.mark.parametrize("name, expected", [
    ("|tau_j|", r"|\tau_{j}|"),
    ("s_1 - s_2", r"s_{1}\ -\ s_{2}"),
    ("gamma_{D+2}", r"\gamma_{D+2}"),
    ("|z_1 - z_2| <= t", r"|z_{1}\ -\ z_{2}|\ \le \ t"),
    ("fl(x^T y)", r"\mathrm{fl}(x^{T}\ y)"),
    ("|p̂_j - p_j| / p_j", r"|\hat{p}_{j}\ -\ p_{j}|\ /\ p_{j}"),
    ("n_l(T)", r"n_{l}(T)"),
])
def test_a_name_that_stands_for_an_expression_prints_as_written(name, expected):
    assert latex(sp.Symbol(name)) == expected
    assert sp.latex(sp.Symbol(name)) != expected  # SymPy's own printer gets it wrong


@pytest.mark.parametrize("name", ["x", "d_k", "sigma_q^2", "mu_q", "dQ", "x1", "Delta", "Delta_max", "scale"])
def test_a_name_sympy_reads_right_keeps_sympys_form(name):
    assert latex(sp.Symbol(name)) == sp.latex(sp.Symbol(name))


def test_function_names_with_modifiers_or_several_underscores():
    x = sp.Symbol("x")
    assert latex(sp.Function("hbm_flash")(x)).startswith(r"\mathrm{hbm}_{flash}")  # SymPy: a bold h
    assert latex(sp.Function("fa2_step")(x)).startswith(r"\mathrm{fa2}_{step}")  # SymPy: fa_{2 step}
    assert latex(sp.Function("K\u0302_b")(x)).startswith(r"\hat{K}_{b}")
    assert latex(sp.Function("kv_head")(x)) == sp.latex(sp.Function("kv_head")(x))
    assert latex(sp.Abs(sp.Symbol("|tau_j|")) + 1) == r"\left|{|\tau_{j}|}\right| + 1"


def test_every_rendered_name_converts_to_mathml():
    from latex2mathml.converter import convert

    for name in ("|fl(x^T y) - x^T y|", "Σ_j P(|z_j| > δ)", "c|q||k|", "P(some chain or sum fails)", "E[X] E[Y]"):
        assert "<math" in convert(name_latex(name)), name
