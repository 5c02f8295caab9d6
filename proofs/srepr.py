"""Certificate expressions: SymPy objects written as ``srepr`` text, and read back without running code.

Part of the checker's trust base (``proofs/checker.py`` reads every expression of a certificate through
:func:`read`): a whitelisted parser that builds only SymPy classes from literals; a string is only the name
of a Symbol, Dummy, Function, Str or Wild, or the digits of a Float. Relations and connectives are kept
unevaluated; everything else is built as SymPy builds it, so the tree read is the tree the theorem built.
"""
from __future__ import annotations

import ast
from functools import lru_cache
from typing import Any

import sympy as sp
from sympy.printing.repr import ReprPrinter

# Dummy indices the checker renames bound indices to: a certificate may not hold one (read refuses it).
RESERVED = range(5_210_000_000, 5_210_000_000 + 10**6)


class CertificateError(ValueError):
    """The certificate is not a well-formed certificate (not: its proof is wrong)."""



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
    return out


_CALLABLE = _classes()
# The names srepr writes bare (singletons); nothing else may stand alone.
_CONSTANTS = {name: getattr(sp, name) for name in ("pi", "oo", "zoo", "nan", "E", "I", "true", "false", "EmptySet",
                                                    "EulerGamma", "Naturals0", "Naturals", "Reals", "Integers")}
# Relations and connectives are read as written (0 = 0 stays a relation); everything else is built
# as SymPy builds it, so the tree read is the tree the theorem built (srepr's round trip).
UNEVALUATED = (sp.core.relational.Relational, sp.And, sp.Or, sp.Not, sp.Equivalent, sp.Implies)
_NAMED = ("Symbol", "Dummy", "Function", "Str", "Wild", "Float")  # constructors whose first argument is a string


def _node(n: ast.AST) -> Any:
    if isinstance(n, ast.Constant) and isinstance(n.value, (int, float, str, bool, type(None))):
        return n.value
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
        return -_node(n.operand)
    if isinstance(n, (ast.List, ast.Tuple)):
        return [_node(e) for e in n.elts]
    if isinstance(n, ast.Name) and (n.id in _CONSTANTS or n.id in _CALLABLE):  # a class: a function's head
        return _CONSTANTS.get(n.id, _CALLABLE.get(n.id))
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in _CALLABLE:
        f = _CALLABLE[n.func.id]
        args = [_node(a) for a in n.args]
        kwargs = {k.arg: _node(k.value) for k in n.keywords}
        if any(isinstance(a, str) for a in args[1:] + list(kwargs.values())) or \
                (args and isinstance(args[0], str) and n.func.id not in _NAMED):
            # SymPy would parse (run) a string anywhere else: sin("...") evaluates Python code
            raise CertificateError(f"a string is only a name or a Float's digits, not an argument of {n.func.id}")
        return f(*args, **kwargs, evaluate=False) if issubclass(f, UNEVALUATED) else f(*args, **kwargs)
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Call):  # Function('f')(x): an applied function
        return _node(n.func)(*[_node(a) for a in n.args])
    raise CertificateError(f"expression holds something that is not a SymPy constructor: {ast.dump(n)[:120]}")


@lru_cache(maxsize=None)
def read(text: str) -> Any:
    """The SymPy object a ``srepr`` string writes (no code is run: only SymPy constructors and literals,
    and a string only as the name of a Symbol, Dummy, Function, Str or Wild, or the digits of a Float)."""
    if not isinstance(text, str):
        raise CertificateError(f"an expression must be an srepr string, got {type(text).__name__}")
    try:
        out = _node(ast.parse(text, mode="eval").body)
    except SyntaxError as exc:
        raise CertificateError(f"unreadable expression {text[:80]!r}: {exc.msg}") from None
    except CertificateError:
        raise
    except Exception as exc:
        raise CertificateError(f"expression {text[:80]!r} does not build: {type(exc).__name__}: {exc}") from None
    if isinstance(out, sp.Basic) and any(d.dummy_index in RESERVED for d in out.atoms(sp.Dummy)):
        raise CertificateError("a Dummy in the checker's reserved index range (its bound-index renaming)")
    return out


def read_in(cert: dict, text: str) -> Any:
    """An expression of ``cert`` (every expression carries its own assumptions: the same as :func:`read`)."""
    return read(text)


class _Writer(ReprPrinter):
    """srepr, with each undefined function's assumptions written where it is used (srepr drops them)."""

    def _print_FunctionClass(self, expr):
        if issubclass(expr, sp.core.function.AppliedUndef):
            facts = getattr(expr, "_kwargs", {})
            return f"Function({expr.__name__!r}" + "".join(f", {k}={v!r}" for k, v in sorted(facts.items())) + ")"
        return expr.__name__


def write(expr: Any) -> str:
    """The srepr a certificate stores for ``expr``."""
    return _Writer().doprint(expr)
