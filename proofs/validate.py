"""Argument checks shared by the public helpers: a clear ValueError naming the argument."""
from __future__ import annotations

import numbers

import sympy as sp


def _sympify(value, name: str) -> sp.Expr:
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number or a SymPy expression, got bool {value!r}")
    try:
        expr = sp.sympify(value, strict=True)
    except (sp.SympifyError, TypeError):
        raise ValueError(f"{name} must be a number or a SymPy expression, got {value!r}") from None
    if not isinstance(expr, sp.Expr):
        raise ValueError(f"{name} must be a scalar expression, got {value!r}")
    if expr.is_real is False:
        raise ValueError(f"{name} must be real, got {value!r}")
    return expr


def as_dimension(value, name: str) -> sp.Integer:
    """A positive integer dimension (int or SymPy Integer); floats like 2.0 are refused too."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, sp.Integer)):
        raise ValueError(f"{name} must be a positive integer or None, got {value!r}")
    if int(value) < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return sp.Integer(int(value))


def as_mean(value, name: str) -> sp.Expr:
    return _sympify(value, name)


def as_variance(value, name: str) -> sp.Expr:
    expr = _sympify(value, name)
    if expr.is_negative:
        raise ValueError(f"{name} must be a non-negative variance, got {value!r}")
    return expr
