"""Certificate expressions: SymPy objects written as ``srepr`` text, and read back without running code.

Part of the checker's trust base (``proofs/checker.py`` reads every expression of a certificate through
:func:`read`): a whitelisted parser that builds only SymPy classes from literals; a string is only the name
of a Symbol, Dummy, Function, Str or Wild, or the digits of a Float. Relations and connectives are kept
unevaluated; everything else is built as SymPy builds it, so the tree read is the tree the theorem built.
A Σ, Π or ∫ whose bound variable is declared anything its range does not imply is refused as it is read
(:func:`_declared_against_range`, the engine's rule too): the writer reads back what it writes, so the builder
refuses it as well.
"""
from __future__ import annotations

import ast
import math
import re
import sys
import unicodedata
from functools import lru_cache
from typing import Any

import sympy as sp
from sympy.core.assumptions import _assume_defined
from sympy.printing.repr import ReprPrinter

# one rule for the reader, writer and engine
from proofs.identity import _TRUSTED, _declared_against_range, _trusted, declared_without_range

# Dummy indices the checker renames bound indices to (the first 10**6 canonical, the rest its fresh Dummies, one
# each): a certificate may not hold one (read refuses it).
RESERVED = range(5_210_000_000, 5_210_000_000 + 10**8)


class CertificateError(ValueError):
    """The certificate is not a well-formed certificate (not: its proof is wrong)."""


MAX_BITS = 1 << 20  # the largest integer (in bits) the reader lets SymPy build: 2^(2^20) takes ~10 ms
_CONSTANT_LETTERS = {"e": "Euler's number", "i": "the imaginary unit"}  # printed in TeX and prose as the constants
_CONSTANT_NAMES = {"oo", "zoo", "nan", "pi", "E", "I", "EulerGamma", "GoldenRatio", "Catalan", "inf", "infinity"}


def _numberlike(name: str) -> bool:
    """A name that prints as a number or a constant ("1", "-0.5", "1e3", "oo", "E")."""
    try:
        float(name)
        return True
    except ValueError:
        return bool(re.fullmatch(r"\s*[+-]?(\d[\d_]*\.?\d*|\.\d+)([eE][+-]?\d+)?\s*", name)) or \
            name.strip() in _CONSTANT_NAMES


# Characters that print as a minus sign (U+2212 and the dashes), folded to "-" before a name is judged numeral-like.
_MINUSES = dict.fromkeys(map(ord, "\u2212\u2010\u2011\u2012\u2013\u2014\u2015\ufe63\uff0d\u207b\u208b"), "-")
_DIRECTIONS = {"+", "-", "+-"}  # srepr writes a Limit's direction as Symbol('+'), Symbol('-') or Symbol('+-')


def _numeral(name: str) -> bool:
    """A name a reader would take for a number or arithmetic on numbers: after NFKC (½ → 1⁄2, ² → 2) and folding
    minus-like dashes, it reads as a number or a constant (−1, ∞, π), or holds no letter at all ("2 + 2 - 5")."""
    folded = unicodedata.normalize("NFKC", name).translate(_MINUSES).replace("\u2044", "/")
    return _numberlike(folded) or "∞" in folded or folded.strip() in ("π", "ℯ") or \
        (folded.strip() not in _DIRECTIONS and not any(c.isalpha() for c in folded))


def _classes() -> dict[str, type]:
    """Every SymPy class srepr may name, by name (a name two classes share is left out), and SymPy's
    exported matrix classes. A class defined outside SymPy (a theorem's own) is never constructed."""
    seen: dict[str, type] = {}
    clash: set[str] = set()
    todo = [sp.Basic]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            if (sub.__module__ or "").startswith("sympy."):
                clash |= {sub.__name__} if seen.get(sub.__name__, sub) is not sub else set()
                seen[sub.__name__] = sub
    out = {k: v for k, v in seen.items() if k not in clash}
    out.update({k: v for k, v in vars(sp).items() if isinstance(v, type) and issubclass(v, (sp.Basic, sp.MatrixBase))})
    out.update({"Function": sp.Function, "Str": sp.core.symbol.Str})
    # A pattern variable is not an expression; Subs evaluates at a point its variables' assumptions may exclude, and
    # commutes mixed partials through its doit: no rule needs it, so no certificate holds it.
    return {k: v for k, v in out.items() if "Wild" not in k and k != "Subs"}


_CALLABLE = _classes()
# The names srepr writes bare (singletons); nothing else may stand alone.
_CONSTANTS = {name: getattr(sp, name) for name in ("pi", "oo", "zoo", "nan", "E", "I", "true", "false", "EmptySet",
                                                    "EulerGamma", "Naturals0", "Naturals", "Reals", "Integers")}
# Relations and connectives are read as written (0 = 0 stays a relation); everything else is built
# as SymPy builds it, so the tree read is the tree the theorem built (srepr's round trip).
UNEVALUATED = (sp.core.relational.Relational, sp.And, sp.Or, sp.Not, sp.Equivalent, sp.Implies)
_NAMED = ("Symbol", "Dummy", "Function", "Str", "Float")  # constructors whose first argument is a string


# Python refuses to write an integer of more than sys.get_int_max_str_digits() digits as text (a ValueError from any
# str(), srepr or printer): the reader refuses such a number outright, so that no later message, verdict or written
# certificate can stop on it.
_STR_DIGITS = getattr(sys, "get_int_max_str_digits", lambda: 0)()
_STR_BITS = int(_STR_DIGITS * math.log2(10)) if _STR_DIGITS else MAX_BITS


def _too_long() -> str:
    return (f"an integer of more than {_STR_DIGITS} decimal digits (Python's int-to-text limit, "
            "sys.get_int_max_str_digits): it cannot be written, printed or compared as text")


def _bits(q: Any) -> int:
    return max(int(q.p).bit_length(), int(q.q).bit_length())


def _bounded(name: str, f: type, args: list, kwargs: dict) -> None:
    """Refuse what would build a name that impersonates a number or hides characters, or an integer
    over MAX_BITS (SymPy evaluates 3**30000000 or factorial(300000) as it builds them)."""
    if name in ("Symbol", "Dummy", "Function", "Str") and args and isinstance(args[0], str):
        if any(unicodedata.category(c)[0] in "CZ" and c != " " or _ignorable(c) for c in args[0]) or \
                (name not in ("Function", "Str") and (_numberlike(args[0]) or _numeral(args[0]))):
            raise CertificateError(f"the name {args[0]!r} reads as a number or holds a control/invisible character")
        if _confusable(args[0]):
            raise CertificateError(f"the name {args[0]!r} may print like another name: {_confusable(args[0])}")
    rationals = [a for a in args if isinstance(a, sp.Rational)]
    if any(_bits(q) > MAX_BITS for q in rationals):
        raise CertificateError(f"an integer of more than {MAX_BITS} bits in {name}")
    if f is sp.Pow and len(args) == 2 and all(isinstance(a, sp.Rational) for a in args) and \
            abs(args[1]) * _bits(args[0]) > MAX_BITS:
        raise CertificateError(f"{name} would build an integer of more than {MAX_BITS} bits")
    if issubclass(f, sp.Function) and any(abs(q) > 1 << 16 for q in rationals):  # factorial, binomial, gamma, …
        raise CertificateError(f"{name} of an argument over 2^16 would be evaluated as it is read")


# Unicode's Default_Ignorable_Code_Point ranges that are not format characters (Cf, refused above): they render as
# nothing (U+034F COMBINING GRAPHEME JOINER, the Hangul fillers, variation selectors), so "a͏" would print as "a".
_IGNORABLE = ((0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F), (0x3164, 0x3164),
              (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF))


def _ignorable(c: str) -> bool:
    return any(lo <= ord(c) <= hi for lo, hi in _IGNORABLE)


# Greek letters that print like Latin ones (Α, ο, ν, …): a name may mix Greek and Latin, but not through these.
_GREEK_LIKE_LATIN = set("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧοϲϳνιυ")


def _confusable(name: str) -> str:
    """Why ``name`` could print like a different name ("" if it cannot): space at either end, a letter of a script
    other than Latin and Greek (Cyrillic х is Latin x), a Greek letter that looks Latin, or a letter that NFKC
    folds to an ASCII one (fullwidth ｘ, bold 𝐱; modifier letters and sub/superscripts such as ᵀ stay allowed)."""
    if name != name.strip():
        return "space at an end"
    for c in name:
        if c.isascii() or not unicodedata.category(c).startswith("L"):
            continue
        uname = unicodedata.name(c, "")
        if unicodedata.category(c) != "Lm" and unicodedata.normalize("NFKC", c).isascii():
            return f"{uname} folds to {unicodedata.normalize('NFKC', c)!r}"
        if not uname.startswith(("LATIN", "GREEK", "MODIFIER LETTER")) or c in _GREEK_LIKE_LATIN:
            return f"{uname} looks like a letter of another script"
    return ""


# A binder whose index is declared something its range does not imply (k positive over −5..3) is refused as it is
# read: SymPy trusts the declaration (Σ_{k=−5}^{3} k is "positive"; floor of such a sum is built as a wrong integer),
# so every rule and the statement matching would too. Its index may carry only what the range implies.
_BINDERS = (sp.Sum, sp.Product, sp.Integral)


def _node(n: ast.AST) -> Any:
    if isinstance(n, ast.Constant) and isinstance(n.value, (int, float, str, bool, type(None))):
        if isinstance(n.value, int) and n.value.bit_length() > MAX_BITS:
            raise CertificateError(f"an integer literal of more than {MAX_BITS} bits")
        return n.value
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
        return -_node(n.operand)
    if isinstance(n, (ast.List, ast.Tuple)):
        return [_node(e) for e in n.elts]
    if isinstance(n, ast.Name) and (n.id in _CONSTANTS or n.id in _CALLABLE):  # a class: a function's head
        return _CONSTANTS.get(n.id, _CALLABLE.get(n.id))
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in _CALLABLE:
        # A call's result depends only on its own text: a subterm read before (Symbol('d_k', ...) in every step)
        # is taken as built. Only SymPy objects, which are immutable; a refusal is never remembered; never a text
        # holding a Dummy, which is a new one at each reading unless it has an index.
        key = _SOURCE[0][n.col_offset:n.end_col_offset] if n.lineno == n.end_lineno == 1 else None
        key = None if key is None or b"Dummy(" in key else key
        if key is not None and key in _BUILT:
            return _BUILT[key]
        out = _call(n)
        if key is not None and isinstance(out, sp.Basic):
            _BUILT[key] = out
        return out
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Call):  # Function('f')(x): an applied function
        return _node(n.func)(*[_node(a) for a in n.args])
    raise CertificateError(f"expression holds something that is not a SymPy constructor: {ast.dump(n)[:120]}")


# A constructor call's UTF-8 text (ast's offsets count bytes) -> what it built; the text being read is _SOURCE[0].
_BUILT: dict[bytes, Any] = {}
_SOURCE = [b""]


def _call(n: ast.Call) -> Any:
    """A SymPy constructor's call, built after the checks on its arguments."""
    f = _CALLABLE[n.func.id]
    args = [_node(a) for a in n.args]
    kwargs = {k.arg: _node(k.value) for k in n.keywords}
    if any(isinstance(a, str) for a in args[1:] + list(kwargs.values())) or \
            (args and isinstance(args[0], str) and n.func.id not in _NAMED):
        # SymPy would parse (run) a string anywhere else: sin("...") evaluates Python code
        raise CertificateError(f"a string is only a name or a Float's digits, not an argument of {n.func.id}")
    _bounded(n.func.id, f, args, kwargs)
    if f is sp.Float:  # exact: the Rational the Float stands for (SymPy would round arithmetic on it)
        digits = re.fullmatch(r"\s*[+-]?[\d_]*\.?[\d_]*(?:[eE]([+-]?\d+))?\s*", str(args[0])) if args else None
        if args and isinstance(args[0], str) and (not digits or len(args[0]) > 10_000 or
                                                  abs(int(digits.group(1) or 0)) > MAX_BITS // 3):
            raise CertificateError(f"a Float's digits must be a decimal of at most 10^4 characters and exponent "
                                   f"±{MAX_BITS // 3}, before SymPy builds it: {args[0][:40]!r}")
        if any(isinstance(a, int) and abs(a) > 10_000 for a in args[1:]) or \
                any(isinstance(a, int) and abs(a) > 10_000 for a in kwargs.values()):
            raise CertificateError("a Float's precision must be at most 10^4")
        value = sp.Float(*args, **kwargs)
        if not value.is_finite or abs(value._mpf_[2]) + value._mpf_[3] > MAX_BITS:
            raise CertificateError(f"a Float outside ±2^{MAX_BITS} or not finite: {value}")
        return sp.Rational(value)
    if f in (sp.Symbol, sp.Dummy, sp.Function, sp.IndexedBase) and _only_zero(
            {**(args[0].assumptions0 if f is sp.IndexedBase and args and isinstance(args[0], sp.Symbol) else {}),
             **kwargs}):
        raise CertificateError(f"{n.func.id} {args[0] if args else ''} is declared hermitian (or real) and "
                               "antihermitian, which only 0 is, yet not zero: SymPy would take it as non-zero")
    if f is sp.Lambda or f is sp.Derivative:  # before SymPy builds the body on their variables' facts
        variables = args[0] if f is sp.Lambda and args and isinstance(args[0], (list, tuple, sp.Tuple)) else \
            args[:1] if f is sp.Lambda else [v[0] if isinstance(v, (list, tuple, sp.Tuple)) else v for v in args[1:]]
        why = declared_without_range(f, variables)
        if why:
            raise CertificateError(why)
    out = f(*args, **kwargs, evaluate=False) if issubclass(f, UNEVALUATED) else f(*args, **kwargs)
    if not issubclass(f, UNEVALUATED) and any(isinstance(a, sp.Basic) and not _trusted(a) for a in args):
        _not_evaluated_on_untrusted_facts(f, args, kwargs, out)
    if isinstance(out, _BINDERS):  # before any enclosing node is built on SymPy's reading of its assumptions
        why = _declared_against_range(out)
        if why:
            raise CertificateError(why)
    return out


# SymPy evaluates as it builds, on its assumption facts: |C(n, 3)| is built as −C(n, 3), Piecewise((1, C(n, 3) < 0),
# (0, True)) as 1, since binomial's handler calls C(n, 3) negative. Facts of functions outside the gate's whitelist
# (identity.fact) are no evidence there either: a node is built again with each such subterm of its arguments put as
# a bare symbol, and must come out the same (x·sin x·sin x is x·sin²x either way; |C(n, 3)| is not −C(n, 3)).
_STRIPPED: dict = {}  # subterm -> what it is with each untrusted subterm a bare Dummy (one per subterm)


def _strip(e: Any) -> Any:
    if not isinstance(e, sp.Basic) or _trusted(e) or not e.args and not isinstance(e, sp.Expr):
        return e
    if e not in _STRIPPED:
        _STRIPPED[e] = sp.Dummy() if isinstance(e, sp.Expr) and not isinstance(e, _TRUSTED) else \
            e.func(*map(_strip, e.args), evaluate=False) if isinstance(e, UNEVALUATED) else e.func(*map(_strip, e.args))
    return _STRIPPED[e]


def _not_evaluated_on_untrusted_facts(f: type, args: list, kwargs: dict, out: Any) -> None:
    try:  # the node itself is compared by its class and stripped arguments (a Piecewise stays a Piecewise)
        bare = f(*map(_strip, args), **kwargs)
        same = bare == (out.func(*map(_strip, out.args)) if isinstance(out, sp.Basic) and out.args else out)
    except Exception:
        same = False
    if not same:
        raise CertificateError(f"SymPy builds {f.__name__}({', '.join(map(sp.sstr, args))[:100]}) as {sp.sstr(out)[:60]} "
                               "on a fact of a function whose assumption handlers are not trusted (identity.fact)")


def _only_zero(facts: dict) -> bool:
    """Facts only 0 has (hermitian, or real, and antihermitian), without zero: SymPy does not see it, and deduces
    real and non-zero from hermitian, antihermitian and nonzero: a statement about no number at all."""
    if facts.get("antihermitian") is not True:
        return False
    try:
        d = sp.Dummy(**facts)
    except Exception:  # SymPy's own inconsistency: refused as it builds
        return False
    return d.is_hermitian is True and d.is_zero is not True


@lru_cache(maxsize=None)
def read(text: str) -> Any:
    """The SymPy object a ``srepr`` string writes (no code is run: only SymPy constructors and literals,
    and a string only as the name of a Symbol, Dummy, Function or Str, or the digits of a Float)."""
    if not isinstance(text, str):
        raise CertificateError(f"an expression must be an srepr string, got {type(text).__name__}")
    try:
        _STRIPPED.clear()
        _SOURCE[0] = text.encode()
        out = _node(ast.parse(text, mode="eval").body)
    except SyntaxError as exc:
        raise CertificateError(f"unreadable expression {text[:80]!r}: {exc.msg}") from None
    except CertificateError:
        raise
    except Exception as exc:
        raise CertificateError(f"expression {text[:80]!r} does not build: {type(exc).__name__}: {exc}") from None
    if isinstance(out, sp.Basic) and any(_bits(q) > _STR_BITS for q in out.atoms(sp.Rational)):
        raise CertificateError(_too_long())
    if isinstance(out, sp.Basic) and any(d.dummy_index in RESERVED for d in out.atoms(sp.Dummy)):
        raise CertificateError("a Dummy in the checker's reserved index range (its bound-index renaming)")
    if isinstance(out, sp.Basic) and any(_declared(a).get("commutative", True) is not True for a in out.atoms(
            sp.Symbol, sp.IndexedBase) | {f.func for f in out.atoms(sp.core.function.AppliedUndef)}):
        # The checker's algebra is commutative (linearity pulls factors out of a Σ, E in any order): a symbol, indexed
        # base or function declared noncommutative is refused (matrices are MatrixSymbols, ordered by MatMul).
        raise CertificateError("a noncommutative symbol or function: the checker's algebra is commutative")
    labels = {b.label for b in out.atoms(sp.IndexedBase)} if isinstance(out, sp.Basic) else set()
    for s in out.atoms(sp.Symbol) - labels if isinstance(out, sp.Basic) else ():  # e[k] is an entry, not e
        if s.name in _CONSTANT_LETTERS and s.is_integer is not True:
            raise CertificateError(f"the name {s.name!r} reads as {_CONSTANT_LETTERS[s.name]} unless it is declared "
                                   "an integer (a count or an index, which that constant is not)")
    if isinstance(out, sp.Basic) and any(isinstance(s, sp.Dummy) for s in out.free_symbols):
        # A free Dummy prints as _name, like the Symbol _name, and may equal a Dummy the checker makes: a
        # certificate names its free variables by Symbols (a Dummy may only be bound).
        raise CertificateError("a free Dummy: a certificate's free variables are Symbols")
    return out


def read_in(cert: dict, text: str) -> Any:
    """An expression of ``cert`` (every expression carries its own assumptions: the same as :func:`read`)."""
    return read(text)


def _declared(e: Any) -> dict:
    """What a symbol, undefined function or indexed base was declared to be (srepr drops the last two's)."""
    if isinstance(e, sp.IndexedBase):
        return dict(getattr(e._assumptions, "_generator", {}))
    if isinstance(e, sp.core.function.UndefinedFunction):
        return dict(getattr(e, "_kwargs", {}))
    return dict(getattr(e, "_assumptions_orig", {}))


def _signature(e: Any) -> set:
    """Every name an expression uses, with what it was declared: equal for an expression and its re-reading
    exactly when no assumption was lost on the way."""
    if not isinstance(e, sp.Basic):
        return set()
    heads = e.atoms(sp.Symbol, sp.IndexedBase) | {f.func for f in e.atoms(sp.core.function.AppliedUndef)}
    def facts(h):  # what follows from the declaration (a re-read IndexedBase declares its label's facts too)
        return _declared(h) if isinstance(h, sp.core.function.UndefinedFunction) else h.assumptions0 if \
            isinstance(h, sp.Symbol) else _base_facts(type(h), str(h), tuple(sorted(_declared(h).items())))

    return {(type(h).__name__, str(h), tuple(sorted(facts(h).items()))) for h in heads}


@lru_cache(maxsize=None)
def _base_facts(cls: type, name: str, declared: tuple) -> dict:
    """Every fact an indexed base of this class, name and declaration has (SymPy derives them from the declaration
    alone: an IndexedBase has no fact handler of its own); asked of one such base once, not of each occurrence."""
    h = cls(sp.Symbol(name), **dict(declared))
    return {k: v for k in _assume_defined if (v := getattr(h, f"is_{k}", None)) is not None}


class _Writer(ReprPrinter):
    """srepr, with each undefined function's and indexed base's assumptions written where it is used (srepr
    drops them), and a Float as the exact Rational it stands for."""

    def _print_Float(self, expr):
        return self._print(sp.Rational(expr))

    def _print_IndexedBase(self, expr):
        facts = "".join(f", {k}={v!r}" for k, v in sorted(_declared(expr).items()) if k != "commutative")
        return f"IndexedBase({', '.join(self._print(a) for a in expr.args)}{facts})"

    def _print_FunctionClass(self, expr):
        if issubclass(expr, sp.core.function.AppliedUndef):
            facts = getattr(expr, "_kwargs", {})
            return f"Function({expr.__name__!r}" + "".join(f", {k}={v!r}" for k, v in sorted(facts.items())) + ")"
        return expr.__name__


def text(expr: Any) -> str:
    """The srepr of ``expr``, declared assumptions included (a key for what the checker built itself)."""
    return _Writer().doprint(expr)


def write(expr: Any) -> str:
    """The srepr a certificate stores for ``expr``; raises when reading it back would lose an assumption."""
    try:
        text = _Writer().doprint(expr)
    except ValueError as exc:  # Python's int-to-text limit
        raise CertificateError(_too_long()) from exc
    if isinstance(expr, sp.Basic) and _signature(read(text)) != _signature(expr):
        raise CertificateError(f"{text[:80]} does not read back with the assumptions it was built with")
    return text
