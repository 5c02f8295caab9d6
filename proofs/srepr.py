"""Certificate expressions: SymPy objects written as ``srepr`` text, and read back without running code.

Part of the checker's trust base (``proofs/checker.py`` reads every expression of a certificate through
:func:`read`): a whitelisted parser that builds only SymPy classes from literals; a string is only the name
of a Symbol, Dummy, Function or Str. Relations and connectives are kept unevaluated; everything else is built as
SymPy builds it, and each node must come out as written (:func:`_as_written`): SymPy may not evaluate anything as a
certificate is read (|t| as t, w − w as 0), so the tree read is the tree the text shows. A Float is refused: the
writer writes the Rational it stands for.
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
from proofs.identity import _declared_against_range, declared_without_range

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
# No nan or zoo: a value with no value, which SymPy calls equal to itself (nan = nan would chain 1 = nan = 2).
_CONSTANTS = {name: getattr(sp, name) for name in ("pi", "oo", "E", "I", "true", "false", "EmptySet",
                                                    "EulerGamma", "Naturals0", "Naturals", "Reals", "Integers")}
# Relations and connectives are read as written (0 = 0 stays a relation); everything else is built
# as SymPy builds it, so the tree read is the tree the theorem built (srepr's round trip).
UNEVALUATED = (sp.core.relational.Relational, sp.And, sp.Or, sp.Not, sp.Equivalent, sp.Implies)
_NAMED = ("Symbol", "Dummy", "Function", "Str")  # constructors whose first argument is a string


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
        if name not in ("Function", "Str") and (_numberlike(args[0]) or _numeral(args[0])):
            raise CertificateError(f"the name {args[0]!r} reads as a number")
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


# The names' alphabet, a whitelist: printable ASCII; the Greek letters that look like no Latin one; combining accents
# over a letter (x̂, x̄, x̃, ẋ); sub- and superscript digits, ᵀ and primes; a few operator signs that a name for an
# expression uses (xᵀMx, P∘R, √n). Anything else (Cyrillic х, Latin ɑ, Roman ⅰ, the braille blank, fullwidth ｘ,
# precomposed â beside a + ◌̂) could print like another name or like nothing.
_GREEK_LIKE_LATIN = set("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧοϲϳνιυ")
_NAME_CHARS = (set(map(chr, range(0x20, 0x7F))) |
               {chr(c) for c in (*range(0x391, 0x3AA), *range(0x3B1, 0x3CA), 0x3D1, 0x3D5, 0x3F5)} - _GREEK_LIKE_LATIN |
               set("\u0302\u0303\u0304\u0305\u0307\u0308\u20d7") |  # ◌̂ ◌̃ ◌̄ ◌̅ ◌̇ ◌̈ ◌⃗
               set("⁰¹²³⁴⁵⁶⁷⁸⁹₀₁₂₃₄₅₆₇₈₉ᵀ′″") | set("∘√·∂∇⊙⊗×‖"))


def _confusable(name: str) -> str:
    """Why ``name`` could print like a different name ("" if it cannot): a space at either end, a character outside
    the names' alphabet, an accent over no letter, or accents in another order than Unicode's (NFD) one."""
    if name != name.strip():
        return "space at an end"
    for i, c in enumerate(name):
        if c not in _NAME_CHARS:
            return f"{unicodedata.name(c, hex(ord(c)))} is outside the names' alphabet (ASCII, Greek, accents, ᵀ, ², ₁)"
        if unicodedata.combining(c) and (i == 0 or not name[i - 1].isalpha() and not unicodedata.combining(name[i - 1])):
            return "an accent over no letter"
    return "" if unicodedata.normalize("NFD", name) == name else "accents written in another order than NFD's"


# A binder whose index is declared something its range does not imply (k positive over −5..3) is refused as it is
# read: SymPy trusts the declaration (Σ_{k=−5}^{3} k is "positive"; floor of such a sum is built as a wrong integer),
# so every rule and the statement matching would too. Its index may carry only what the range implies.
_BINDERS = (sp.Sum, sp.Product, sp.Integral)


def _node(n: ast.AST) -> Any:
    if isinstance(n, ast.Constant) and isinstance(n.value, float):
        # SymPy would build a Float from it (0.1 as the binary fraction nearest 0.1): srepr never writes one bare
        raise CertificateError(f"a bare decimal {n.value!r}: a certificate writes a number as the Integer or Rational it is")
    if isinstance(n, ast.Constant) and isinstance(n.value, (int, str, bool, type(None))):
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
        head = _node(n.func)
        if not isinstance(head, sp.core.function.UndefinedFunction):
            # λ(y, Σ_k y·k)(k) is built by putting k in for y, captured by the Σ: SymPy never keeps an applied λ,
            # so no certificate written from a built tree holds one
            raise CertificateError(f"only an undefined function is applied to arguments, not {type(head).__name__}")
        return head(*[_node(a) for a in n.args])
    raise CertificateError(f"expression holds something that is not a SymPy constructor: {ast.dump(n)[:120]}")


# A constructor call's UTF-8 text (ast's offsets count bytes) -> what it built; the text being read is _SOURCE[0].
_BUILT: dict[bytes, Any] = {}
_SOURCE = [b""]


def _call(n: ast.Call) -> Any:
    """A SymPy constructor's call, built after the checks on its arguments."""
    f = _CALLABLE[n.func.id]
    if f is sp.Float:
        # The writer writes a Float as the Rational it stands for; a Float's text (its digits at a precision) would be
        # read as a binary number ("0.1" at precision 4 is 13/128) that the text does not show.
        raise CertificateError("a Float: a certificate writes a number as the Integer or Rational it is")
    args = [_node(a) for a in n.args]
    kwargs = {k.arg: _node(k.value) for k in n.keywords}
    if any(isinstance(a, str) for a in args[1:] + list(kwargs.values())) or \
            (args and isinstance(args[0], str) and n.func.id not in _NAMED):
        # SymPy would parse (run) a string anywhere else: sin("...") evaluates Python code
        raise CertificateError(f"a string is only a name, not an argument of {n.func.id}")
    if f in (sp.Integer, sp.Rational) and not all(type(a) is int for a in args + list(kwargs.values())):
        # Integer(True) is 1, and a Python number of another type is built as a number the text does not show
        raise CertificateError(f"{n.func.id} of {', '.join(map(repr, args))[:60]}: a number's parts are integers")
    _bounded(n.func.id, f, args, kwargs)
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
    if isinstance(out, sp.Rational) and _bits(out) > _STR_BITS:
        raise CertificateError(_too_long())  # before any message prints it
    why = _as_written(f, args, out)
    if why:
        raise CertificateError(f"SymPy builds {n.func.id}({', '.join(map(sp.sstr, args))[:100]}) as {sp.sstr(out)[:60]}: "
                               f"{why}; a certificate holds the tree as SymPy built it")
    if isinstance(out, _BINDERS):  # before any enclosing node is built on SymPy's reading of its assumptions
        why = _declared_against_range(out)
        if why:
            raise CertificateError(why)
    return out


# SymPy evaluates as it builds, on facts and by its own rules: |t| is built as t for t declared positive, w − w as 0
# for an infinite w, sin(πn) as 0 for an integer n, x·x⁻¹ as 1 for an x that may be 0. A certificate's text is what
# the writer wrote, srepr of a tree already built, so each node reads back as itself: one that does not is refused,
# and no rule ever sees an expression other than the one the text shows.
def _as_written(f: type, args: list, out: Any) -> str:
    """Why ``out``, built by ``f(*args)``, is not the node written ("" when it is)."""
    if not isinstance(out, sp.Basic) or isinstance(out, sp.MatrixBase) or not args:
        return ""  # a function's head, a constant, or a matrix literal (its entries are nodes, each checked as written)
    if not isinstance(out, f):
        return f"a {type(out).__name__}, not the {f.__name__} written"
    if out.is_Atom:
        return ""  # a name or a number of the class written
    want = [sp.Tuple(*a) if isinstance(a, (list, tuple)) else sp.sympify(a) for a in args]
    if f in (sp.Add, sp.Mul):  # the arguments in any order, its numbers combined (srepr writes −½x as −1·½·x)
        combine = sp.Add if f is sp.Add else sp.Mul
        split = [[a for a in args_ if a.is_Number] for args_ in (want, out.args)]
        rest = [sorted((a for a in args_ if not a.is_Number), key=sp.default_sort_key) for args_ in (want, out.args)]
        same = rest[0] == rest[1] and combine(*split[0]) == combine(*split[1])
    else:  # pargs: the arguments as written, without those SymPy adds (Heaviside(x)'s value at 0, ½)
        same = tuple(getattr(out, "pargs", out.args)) == tuple(want)
    return "" if same else "its arguments are not the ones written"


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
    and a string only as the name of a Symbol, Dummy, Function or Str)."""
    if not isinstance(text, str):
        raise CertificateError(f"an expression must be an srepr string, got {type(text).__name__}")
    try:
        _SOURCE[0] = text.encode()
        out = _node(ast.parse(text, mode="eval").body)
    except SyntaxError as exc:
        raise CertificateError(f"unreadable expression {text[:80]!r}: {exc.msg}") from None
    except CertificateError:
        raise
    except Exception as exc:
        raise CertificateError(f"expression {text[:80]!r} does not build: {type(exc).__name__}: {exc}") from None
    if not isinstance(out, sp.Basic):
        return out
    # out.atoms(T) for each T below, in one walk of the tree
    rationals, dummies, symbols, bases, applied = atoms_of(out, sp.Rational, sp.Dummy, sp.Symbol, sp.IndexedBase,
                                                           sp.core.function.AppliedUndef)
    if any(_bits(q) > _STR_BITS for q in rationals):
        raise CertificateError(_too_long())
    if any(d.dummy_index in RESERVED for d in dummies):
        raise CertificateError("a Dummy in the checker's reserved index range (its bound-index renaming)")
    if any(_declared(a).get("commutative", True) is not True for a in symbols | bases | {f.func for f in applied}):
        # The checker's algebra is commutative (linearity pulls factors out of a Σ, E in any order): a symbol, indexed
        # base or function declared noncommutative is refused (matrices are MatrixSymbols, ordered by MatMul).
        raise CertificateError("a noncommutative symbol or function: the checker's algebra is commutative")
    labels = {b.label for b in bases}
    for s in symbols - labels:  # e[k] is an entry, not e
        if s.name in _CONSTANT_LETTERS and s.is_integer is not True:
            raise CertificateError(f"the name {s.name!r} reads as {_CONSTANT_LETTERS[s.name]} unless it is declared "
                                   "an integer (a count or an index, which that constant is not)")
    if dummies and any(isinstance(s, sp.Dummy) for s in out.free_symbols):  # (no Dummy at all: no free one)
        # A free Dummy prints as _name, like the Symbol _name, and may equal a Dummy the checker makes: a
        # certificate names its free variables by Symbols (a Dummy may only be bound).
        raise CertificateError("a free Dummy: a certificate's free variables are Symbols")
    return out


def atoms_of(e: sp.Basic, *types: type) -> list[set]:
    """[e.atoms(t) for t in types], in one walk of the tree (atoms walks it once per call)."""
    out: list[set] = [set() for _ in types]
    pairs = list(zip(types, out))
    for node in sp.preorder_traversal(e):
        for t, found in pairs:
            if isinstance(node, t):
                found.add(node)
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


def _signature(e: Any) -> frozenset:
    """Every name an expression uses, with what it was declared: equal for an expression and its re-reading
    exactly when no assumption was lost on the way."""
    if not isinstance(e, sp.Basic):
        return frozenset()
    hit = _SIGNATURES.get(id(e))
    if hit is not None and hit[0] is e:  # this very (immutable) object, held so that its id is not reused
        return hit[1]
    symbols, applied = atoms_of(e, (sp.Symbol, sp.IndexedBase), sp.core.function.AppliedUndef)
    heads = symbols | {f.func for f in applied}
    def facts(h):  # what follows from the declaration (a re-read IndexedBase declares its label's facts too)
        return _declared(h) if isinstance(h, sp.core.function.UndefinedFunction) else h.assumptions0 if \
            isinstance(h, sp.Symbol) else _base_facts(type(h), str(h), tuple(sorted(_declared(h).items())))

    out = frozenset((type(h).__name__, str(h), tuple(sorted(facts(h).items()))) for h in heads)
    _SIGNATURES[id(e)] = (e, out)
    return out


# id(expression) -> (expression, result): _signature's and write's, per object (SymPy objects are immutable)
_SIGNATURES: dict[int, tuple[Any, frozenset]] = {}
_WRITTEN: dict[int, tuple[Any, str]] = {}


def clear_memos() -> None:
    """Forget what this module remembers of the expressions it read and wrote, as a fresh process has nothing."""
    read.cache_clear()
    _BUILT.clear()
    _base_facts.cache_clear()
    _SIGNATURES.clear()
    _WRITTEN.clear()


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
    hit = _WRITTEN.get(id(expr))
    if hit is not None and hit[0] is expr:  # this very SymPy object, written before (a refusal is never remembered)
        return hit[1]
    try:
        text = _Writer().doprint(expr)
    except ValueError as exc:  # Python's int-to-text limit
        raise CertificateError(_too_long()) from exc
    if isinstance(expr, sp.Basic) and _signature(read(text)) != _signature(expr):
        raise CertificateError(f"{text[:80]} does not read back with the assumptions it was built with")
    if isinstance(expr, sp.Basic):  # immutable: its text is its text (a list, which may change, is written again)
        _WRITTEN[id(expr)] = (expr, text)
    return text
