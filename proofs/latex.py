"""The one LaTeX printer of the project: SymPy's, with symbol names read as written.

Some symbols are named by what they stand for ("|tau_j|", "s_1 - s_2", "fl(x^T y)", "gamma_{D+2}",
"hbm_standard_SP"). SymPy's printer reads a name as base_sub^sup with modifiers, so it prints those
as ``|tau_{j|}``, ``s_{1 - s 2}`` or a bold h. A name SymPy reads correctly (letters or a Greek
name, with one subscript and superscript: x, d_k, dQ, sigma_q^2) keeps SymPy's form; any other is
printed token by token: each word with its own subscript, operators as they are, spaces kept.
"""
from __future__ import annotations

import re
from functools import lru_cache

import sympy as sp
from sympy.printing.latex import LatexPrinter, greek_letters_set

# What SymPy prints right: letters (a Greek name, or a base SymPy reads no modifier into: "hbm" is a bold h), digits or
# one subscript, and one superscript, of word characters.
_NAME = re.compile(r"([A-Za-z]+)(\d*)(_[A-Za-z0-9]+)?(\^[A-Za-z0-9]+)?")


@lru_cache(maxsize=None)
def _simple(name: str) -> bool:
    m = _NAME.fullmatch(name)
    if not m or (m.group(2) and m.group(3)):  # fa2_step: SymPy would read 2 as a subscript too
        return False
    return m.group(1).lower() in greek_letters_set or "\\" not in LatexPrinter()._print_Symbol(sp.Symbol(m.group(1)))


_CH = r"(?:[^\W_]|[\u0300-\u036f])"  # a letter or digit, or a combining accent on one (p̂)
_SCRIPT = r"(?:\{[^{}]*\}|(?:" + _CH + r"|_)+)"
_TOKEN = re.compile(r"(?:(?P<word>" + _CH + r"+)|(?P<op><=|>=|.))(?:_(?P<sub>" + _SCRIPT + r"))?(?:\^(?P<sup>"
                    + _SCRIPT + r"))?", re.UNICODE)
_OPS = {"<=": r"\le ", ">=": r"\ge ", " ": r"\ ", "{": r"\{", "}": r"\}", "_": r"\_", "^": r"\hat{}",
        "#": r"\#", "%": r"\%", "&": r"\&", "$": r"\$", "\\": r"\backslash "}


def _word(w: str) -> str:
    if w.lower() in greek_letters_set or w.isascii() and w.isupper():  # Δ as SymPy prints it; XY a product
        return LatexPrinter()._print_Symbol(sp.Symbol(w))
    if len(w) == 2 and w[1] == "\u0302":  # p̂: a letter with a combining circumflex
        return rf"\hat{{{w[0]}}}"
    return w if len(w) == 1 or w.isdigit() else rf"\mathrm{{{w}}}"


def _script(s: str) -> str:
    if s.startswith("{"):
        return s[1:-1]
    return rf"\mathrm{{{s.replace('_', chr(92) + ' ')}}}" if "_" in s else name_latex(s)


def name_latex(name: str) -> str:
    """A symbol's or function's name as LaTeX, read as written (see the module's docstring)."""
    if _simple(name):
        return sp.latex(sp.Symbol(name))
    out = []
    for m in _TOKEN.finditer(name):
        out.append(_word(m.group("word")) if m.group("word") else _OPS.get(m.group("op"), m.group("op")))
        if m.group("sub"):
            out.append("_{" + _script(m.group("sub")) + "}")
        if m.group("sup"):
            out.append("^{" + _script(m.group("sup")) + "}")
    return "".join(out)


class _Printer(LatexPrinter):
    def _print_Symbol(self, expr, style="plain"):
        if expr in self._settings["symbol_names"]:
            return self._settings["symbol_names"][expr]
        return super()._print_Symbol(expr, style) if _simple(expr.name) else name_latex(expr.name)

    def _print_Function(self, expr, exp=None):
        if isinstance(expr, sp.core.function.AppliedUndef) and not _simple(expr.func.__name__):
            head = name_latex(expr.func.__name__)
            args = ", ".join(self._print(a) for a in expr.args)
            return rf"{head}{'^{' + exp + '}' if exp else ''}{{\left({args} \right)}}"
        return super()._print_Function(expr, exp)


def latex(expr, **settings) -> str:
    """``expr`` as LaTeX (SymPy's printer and settings; names as written)."""
    return _Printer(settings).doprint(sp.sympify(expr))
