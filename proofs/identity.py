"""The identity engine: decide ``lhs == rhs`` for every admissible value of the free symbols.

This is the one place where SymPy's simplification is trusted; the checker's ``identity``
rule (and every rule that ends in an identity) calls :func:`identity`.

Trust base. A "True" from :func:`identity` is as sound as:
  * SymPy's construction of the expressions it is given. SymPy evaluates while it builds: x/x is
    built as 1, |k| as k for k declared positive, Sum(..., evaluate) and diff() as their results,
    and a certificate read back from ``srepr`` is rebuilt the same way. What was evaluated away
    before the engine (or any checker) sees the expression cannot be seen by it: a 0/0 that SymPy
    cancelled on construction is a 1 here. The engine refuses what it can see of this (a bound
    variable whose declared assumptions its range does not imply), nothing more.
  * SymPy's exact rewrites (expand, together, cancel, powsimp, expand_trig, rewrite(floor), and
    Derivative.doit(deep=False) where the domain check showed the expression differentiable),
    which are valid wherever the expression is defined, and the engine's own evaluation of finite
    sums (``_finite_sums``: written out, counted, or sifted by a δ whose index is shown in range),
    exact for every integer range under Karr's convention;
  * simplify, trusted only where random probes decided and its 0 then survives 12 fresh probes
    (it applies rewrites that hold only generically), and never where a sum's range may be reversed
    or a binomial's first argument may be a negative integer;
  * the domain whitelist below (which functions are defined where, which are smooth where) and
    SymPy's assumption handlers (is_positive, is_zero, is_integer, ...) that decide its conditions, asked only
    through :func:`fact`, which trusts a whitelist of classes (below) and answers "not shown" for the rest;
  * never SymPy's integrate: an Integral is reduced only by the exact rewrites (never by doit or simplify), and
    a probe evaluates it by evalf's quadrature (mpmath), independent of any antiderivative;
  * undefined functions f(x) stand for arbitrary total functions, differentiable under a
    Derivative: an identity containing them is claimed for every such function;
  * evalf at 40 digits for the probes, which can only refute (a refutation is at a stated point);
  * the worker process: the arguments travel pickled and are compared by hash with what the caller
    built (a mismatch runs in a process forked for the call instead); a worker past its CPU budget
    (or its wall-clock backstop) is stopped, so "False, undecided" is the answer, never a late "True".
"""
from __future__ import annotations

import random
from typing import Any

import sympy as sp

# --------------------------------------------------------------------------- checks
#
# identity() proves lhs = rhs for every value of the free symbols allowed by their assumptions:
#   1. the two sides have the same shape (scalar, list, tuple, Matrix, array);
#   2. random probes refute a false identity fast (probes where a side is undefined decide nothing);
#   3. both sides are shown defined everywhere: every denominator and every other singularity the
#      engine recognises (log at 0, gamma at 0, −1, …, a symbolic exponent that may be negative,
#      atan2 at the origin, infinities and names declared to admit them (extended_*), an infinite sum
#      not shown convergent) is shown absent;
#   4. the difference reduces to 0 symbolically, within a budget of CPU time.
# A pass needs all four. Stages 3 and 4 are the proof; the probes refute fast and guard against a
# simplification that wrongly returns 0 (simplify is trusted only where probes decided: it has rewrites,
# binomial(n, m) = binomial(n, n − m) among them, that are false for some values).
#
# Domain policy: an identity is claimed for every admissible value of its symbols, so a side with a
# singularity anywhere in that domain fails with "not shown defined", even when the two sides agree
# wherever both are defined: (y + 1) log x − y log x − log x = 0 fails for real x, as x/x = 1 does,
# because at x = 0 neither side has a value. State the assumption that excludes it (x positive).
import fractions  # noqa: E402
import functools  # noqa: E402
import hashlib  # noqa: E402
import importlib  # noqa: E402
import io  # noqa: E402
import itertools  # noqa: E402
import math  # noqa: E402
import multiprocessing  # noqa: E402
import multiprocessing.connection  # noqa: E402
import numbers  # noqa: E402
import os  # noqa: E402
import pickle  # noqa: E402
import resource  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import struct  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from contextlib import contextmanager  # noqa: E402
import sympy.core.random as sympy_random  # noqa: E402

# Probes are evaluated with 40 significant digits; the two sides agree at a probe when they differ
# by at most 1e-25 of the larger side (relative, so e^1000 (cosh² − sinh²) = e^1000 agrees while
# 10^-30 x = 0 is refuted). The 15 spare digits absorb evalf's loss of working precision.
_PROBE_DIGITS = 40
_PROBE_RTOL = sp.Float("1e-25", _PROBE_DIGITS)
_RESOLVED_BITS = 20  # an evalf result with fewer bits could not be told from 0
# ... when it is that small; a larger one of few bits is a value evalf knows roughly, which decides nothing (red team:
# ∫₋₁¹ |t| dt came back as 1.0000 with 19 bits and counted as agreeing with 0)
_UNRESOLVED_ZERO = sp.Float(f"1e-{_PROBE_DIGITS // 2}")
_PROBE_TRIES = 4  # probe points tried per wanted probe before the probes give up
# Instantiation limits: a probe that would expand a sum or product of more terms, or build an exact
# power, factorial or gamma of a larger argument, is skipped (those are seconds to hours of exact
# arithmetic that no interrupt can stop).
_CONFIRM_PROBES = 12  # fresh probes a 0 reached by simplify must survive
_EDGE_PROBES = 2  # probes at the edge of every symbol's domain (0 or its nearest allowed integers), before the random ones
_MAX_TERMS = 10**4
_MAX_EXACT = 10**4
# CPU seconds one identity may take; past it the identity fails as undecided. Every claim in the
# catalogue needs well under a second, so this only stops a runaway simplification.
BUDGET_S = 10.0

_MatrixElement = sp.matrices.expressions.matexpr.MatrixElement  # A[i, j] of a MatrixSymbol A


# --------------------------------------------------------------------------- the one gate to SymPy's facts
#
# SymPy's assumption handlers are wrong for some functions (atan(n) "positive" for an integer n ≥ 0 although
# atan 0 = 0; asin(n), atan(n) "non-zero"; binomial(n, k) "negative" for every odd literal k ≥ 3). Every sign,
# zero, range or type fact the engine and the checker's rules take as evidence is asked through fact(), which
# answers only for an expression built wholly from the classes below, and None ("not shown") otherwise. Each is
# trusted because its handlers only combine its arguments' facts by a rule that holds for every value:
#   numbers, π, e, i, ∞ (their facts are computed from their values); Symbol, Dummy, an undefined function f(x),
#   an IndexedBase and its entries (their facts are what they were declared: the statement is about every such
#   value); Tuple (a range's limits);
#   Add, Mul, Pow (SymPy's core: sums and products of signed terms, powers of signed bases to real exponents);
#   exp (positive for a real argument), log (real for a positive argument, its sign that of argument − 1);
#   Abs (non-negative, zero exactly where its argument is); Max, Min (of real arguments: a fact of all of them);
#   floor, ceiling (of a real argument: an integer, the argument's sign where that decides it);
#   KroneckerDelta (0 or 1); Sum (facts of the summand over a range shown not reversed; an empty range is 0),
#   Product (only over ranges shown non-empty: SymPy's handlers take the empty product for its factor);
#   matrix expressions, their entries and names (Str): no scalar fact but "not a number".
# What is left out is not shown by fact(): trigonometric and special functions, binomial, factorial, Mod,
# Piecewise, Integral, Derivative. A rule that needs a fact of them states it as a premise instead.
# Facts used only to refuse (a possibly infinite side) may still ask SymPy directly: a wrong answer there
# refuses more, never less.
_TRUSTED = (sp.Number, sp.NumberSymbol, sp.core.numbers.ImaginaryUnit, sp.Symbol, sp.core.function.AppliedUndef,
            sp.IndexedBase, sp.Indexed, sp.Idx, sp.Tuple, sp.Add, sp.Mul, sp.Pow, sp.exp, sp.log, sp.Abs, sp.Max,
            sp.Min, sp.floor, sp.ceiling, sp.KroneckerDelta, sp.Sum, sp.Product, sp.MatrixExpr, _MatrixElement, sp.sin, sp.cos,
            sp.core.symbol.Str)


@functools.lru_cache(maxsize=1 << 16)
def _trusted(e: sp.Basic) -> bool:
    """Every node of ``e`` is of a whitelisted class; Max and Min only of arguments shown real (SymPy calls Max(z, 1)
    real and positive for every z, a non-real one too)."""
    return all(map(_trusted_node, sp.preorder_traversal(e)))


def _trusted_node(n: sp.Basic) -> bool:
    """A node whose handlers combine its arguments' facts soundly: Max, Min, floor and ceiling only of arguments
    shown real (SymPy calls floor(x + iy) not real, but floor(1/2 + i/2) = 0), a power only to an exponent shown
    real (SymPy calls x^i not real for x < 0, but (−1)^i = e^(−π))."""
    return isinstance(n, _TRUSTED) and \
        not (isinstance(n, (sp.Max, sp.Min, sp.floor, sp.ceiling)) and not all(a.is_real for a in n.args)) and \
        not (isinstance(n, sp.Pow) and n.exp.is_real is not True) and \
        not (isinstance(n, sp.Product) and not _nonempty(n))


# SymPy asks its handlers as it builds, too: sign(atan(k)) is built as 1 for an integer k ≥ 0 (atan's handlers call
# atan(k) positive; atan(0) = 0), δ(asin(k), 0) as 0. The checker and the engine build such nodes themselves, when an
# index is renamed to one that carries its range's facts or a value is put for a variable, so a gate on the rules'
# questions alone (fact) is not enough: in this process SymPy learns no fact of a node outside the whitelist at all.
# Facts a class declares outright (re(z) is real) are kept; only the handlers, which combine arguments' facts, are not
# asked. A process that imports proofs sees SymPy answer None for those facts (README, "The checker").
sympy_assumptions = importlib.import_module("sympy.core.assumptions")  # sympy.core.assumptions is a function
_sympy_ask = sympy_assumptions._ask


def _gated_ask(fact_name: str, obj: Any) -> bool | None:
    # commutative is structure, not a value's fact: an Add of a term whose commutativity is unknown is built as
    # noncommutative, and then "not complex", "not nonnegative", … follow for it
    if fact_name != "commutative" and isinstance(obj, sp.Basic) and \
            not isinstance(obj, (sp.Atom, sp.Add, sp.Mul)) and not _trusted_node(obj):
        return None
    return _sympy_ask(fact_name, obj)


sympy_assumptions._ask = _gated_ask


# Within the whitelist, SymPy's number-kind handlers of a product and a power are wrong where a value is an integer
# or rational by coincidence: (3/2)^t "not an integer" (it is 2 at t = log 2 / log(3/2)), x² "irrational" for an
# irrational x (√2² = 2), n/3 "not an integer" for an even n (6/3 = 2). From such a fact SymPy derives non-zero, and
# builds δ(x², 2) as 0 (red team 12). Closure facts stay (a product of integers is an integer: True answers of
# integer, rational, algebraic); every other answer of those, and irrational, even, odd, prime, composite, is "not
# known" for Mul and Pow.
def _only_true(handler):
    def closure(obj):
        return True if handler(obj) is True else None
    return closure


for _cls in (sp.Mul, sp.Pow):
    _cls._prop_handler = dict(_cls._prop_handler)
    for _key in ("integer", "rational", "algebraic"):
        if _key in _cls._prop_handler:
            _cls._prop_handler[_key] = _only_true(_cls._prop_handler[_key])
    for _key in ("irrational", "even", "odd", "prime", "composite"):
        _cls._prop_handler.pop(_key, None)


def _nonempty(p: sp.Product) -> bool:
    """Every range of ``p`` is shown to hold a term (hi ≥ lo). SymPy's Product handlers ignore an empty range: they
    call Π_{k=1}^{n} 0 zero and a product of positive terms over 1..0 non-positive, where the empty product is 1."""
    return all(shown(hi - lo, "nonnegative") for _, lo, hi in p.limits)


def same_order_of_facts() -> None:
    """SymPy asks the facts a question needs in a random order (``sympy.core.random._assumptions_rng``, seeded from
    the OS at start), so two handlers that contradict each other answer either way from run to run. Seeded before
    every check and every identity, a certificate gets the same verdict in every fresh process."""
    sympy_random._assumptions_rng.seed(0)


def fact(e: Any, key: str) -> bool | None:
    """SymPy's ``e.is_<key>`` where every node of ``e`` has trusted assumption handlers, else None (not shown)."""
    if not isinstance(e, sp.Basic) or not _trusted(e):
        return None
    return getattr(e, f"is_{key}")


def shown(e: Any, key: str) -> bool:
    """``e`` is shown to have the fact ``key`` (through :func:`fact`)."""
    return fact(e, key) is True


class _Undefined(Exception):
    """A side has no value at a probe point (a pole, 0/0, an index form that stays symbolic)."""


class _NotInstantiable(_Undefined):
    """An index stays symbolic at every point (an infinite sum, an unevaluated range)."""


class _OutOfTime(BaseException):
    """The budget ran out. A BaseException, so no ``except Exception`` inside SymPy swallows it."""


@contextmanager
def _deadline(seconds: float):
    """Raise _OutOfTime in this thread once the process has used ``seconds`` more CPU time.

    Uses ITIMER_PROF, so it works only in the main thread and when no other profiling timer is armed
    (in the worker both hold); elsewhere the identity runs unbudgeted here (_cpu_limit still holds).
    """
    usable = (seconds and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
              and signal.getitimer(signal.ITIMER_PROF)[0] == 0)
    if not usable:
        yield
        return
    armed = [True]

    def on_alarm(signum, frame):
        if armed[0]:
            raise _OutOfTime()

    previous = signal.signal(signal.SIGPROF, on_alarm)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        armed[0] = False
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def _message(exc: BaseException) -> str:
    """An exception's message, even when its __str__ itself raises."""
    try:
        return str(exc)[:200]
    except Exception:
        return "(its message cannot be printed)"


def _shape(x: Any) -> tuple:
    if isinstance(x, (sp.MatrixBase, sp.NDimArray, sp.MatrixExpr)):
        return tuple(x.shape)
    if isinstance(x, (list, tuple, sp.Tuple)):
        inner = [_shape(item) for item in x]
        if len(set(inner)) > 1:
            return ("ragged",) + tuple(inner)
        return (len(inner),) + (inner[0] if inner else ())
    return ()


def _has_infinity(e: sp.Basic) -> bool:
    """An infinity or nan anywhere but in the limits of a sum, product or integral."""
    if e in (sp.oo, -sp.oo, sp.zoo, sp.nan):
        return True
    if isinstance(e, (sp.Sum, sp.Product, sp.Integral)):
        return _has_infinity(e.function)
    return any(_has_infinity(a) for a in e.args)


def _entries(x: Any) -> list[sp.Expr]:
    if isinstance(x, sp.MatrixExpr) and not isinstance(x, sp.MatrixBase):
        # A·B with A, B MatrixSymbols: entrywise in A[i, j], B[i, j]
        if not all(d.is_Integer for d in x.shape):
            raise ValueError(f"{sp.sstr(x)[:80]} has a symbolic shape {x.shape}: give explicit sizes")
        x = x.as_explicit()
    if isinstance(x, sp.MatrixBase):
        return [e for item in x for e in _entries(item)]
    if isinstance(x, sp.NDimArray):
        return [e for item in sp.flatten(x) for e in _entries(item)]
    if isinstance(x, (list, tuple, sp.Tuple)):
        return [e for item in x for e in _entries(item)]
    if not isinstance(x, (sp.Basic, int, float)):
        raise ValueError(f"{type(x).__name__} is not an expression, list, tuple, Matrix or array")
    e = sp.sympify(x, strict=True)
    if not isinstance(e, sp.Expr):
        raise ValueError(f"{sp.sstr(e)[:80]} is a {type(e).__name__}, not an expression")
    if _has_infinity(e):
        raise ValueError(f"{sp.sstr(e)[:80]} is not shown defined: it contains an infinity or nan")
    return [_exact(e)]


def _exact(e: sp.Expr) -> sp.Expr:
    """Floats replaced by the exact rationals they hold, so simplification cannot round them away
    (1e-60 added to a polynomial stays 1e-60, 0.1 + 0.2 stays apart from 0.3)."""
    floats = e.atoms(sp.Float) if isinstance(e, sp.Basic) else ()
    return e.xreplace({f: sp.Rational(f) for f in floats}) if floats else e


def _sample_value(sym: sp.Expr, rng: random.Random, lean: int = 0, wide: bool = False) -> sp.Expr:
    """A random number over the whole domain the symbol's (or indexed entry's) assumptions allow.

    ``lean`` −1 or +1 picks the negative or positive part of that domain when it has both (the first
    probes take one of each, so a rewrite that fails only for negative integers is caught).
    A symbol not known to be real is complex half the time, so that branch cuts get probed.
    """
    sign = lean or rng.choice((-1, 1))
    if sym.is_integer:
        if wide:  # log-uniform magnitude up to 1000: past any small set of roots a factor could vanish on
            k = int(10 ** rng.uniform(0, 3))
        else:
            k = rng.randint(1, 9) if rng.random() < 0.75 else rng.randint(10, 40)
        if sym.is_negative:
            return sp.Integer(-k)
        if sym.is_nonpositive:
            return sp.Integer(1 - k)
        if sym.is_positive:
            return sp.Integer(k)
        if sym.is_nonnegative:
            return sp.Integer(k - 1)
        return sp.Integer(sign * k if rng.random() < 0.9 else 0)
    value = sp.Rational(rng.randint(1, 40), rng.randint(1, 13))
    if sym.is_positive or sym.is_nonnegative:
        return value
    if sym.is_negative or sym.is_nonpositive:
        return -value
    value = sign * value
    if sym.is_extended_real or rng.random() < 0.5:
        return value
    return value + sp.I * sp.Rational(rng.randint(-40, 40), rng.randint(1, 13))


def _edge_value(sym: sp.Expr, step: int) -> sp.Expr:
    """The ``step``-th value from the edge of the symbol's domain: 0, 1, −1, 2, −2, … (the first ones its
    assumptions allow). A closed form SymPy gets wrong only at a range's first value (Σ_{k=0}^m (−1)^k C(m, k) = 0,
    false at m = 0) or a rewrite wrong only at 0 escapes random probes that seldom land there (red team)."""
    signs = ("positive", "negative", "nonnegative", "nonpositive", "nonzero", "zero", "even", "odd")
    allowed = [v for v in itertools.chain((0,), *((k, -k) for k in range(1, 21)))
               if not any(getattr(sp.Integer(v), f"is_{a}") is (not t) for a, t in sym.assumptions0.items() if a in signs)]
    return sp.Integer(allowed[min(step, len(allowed) - 1)] if allowed else 0)  # (none: the probe loop skips the point)


def _probe_symbols(exprs: list[sp.Expr]) -> tuple[list[sp.Symbol], set[sp.Symbol]]:
    """The plain symbols to instantiate, and the limits among them that carry no assumption at all.

    A sum only has a value when hi − lo is an integer, so a bare limit symbol is probed as an
    integer (of either sign); a limit with stated assumptions is probed by those.
    """
    labels = {b.label for e in exprs for b in e.atoms(sp.IndexedBase)}
    free = set().union(*(e.free_symbols for e in exprs)) - labels
    syms = sorted((s for s in free if isinstance(s, sp.Symbol)), key=str)
    bare: set = set()
    for e in exprs:
        for s in e.atoms(sp.Sum, sp.Product):
            for limit in s.limits:
                bare.update(t for b in limit[1:] for t in b.free_symbols
                            if t.is_integer is None and t.is_real is None and t.is_positive is None)
    return syms, bare & set(syms)


def _number(expr: sp.Expr) -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """(real part, imaginary part, error bound) of a closed number, at _PROBE_DIGITS digits.

    evalf returns a value it could not tell from zero as a Float of a few bits ("0.e-171"):
    such a part counts as 0 with its magnitude as the error bound.
    """
    if expr.free_symbols or expr.has(sp.Derivative, sp.Subs, sp.core.function.AppliedUndef):
        raise _Undefined("symbols or unevaluated calculus remain")  # evalf differentiates numerically, or recurses
    try:
        value = sp.N(expr, _PROBE_DIGITS)
    except Exception as exc:  # evalf gave up: this point decides nothing
        raise _Undefined(f"evalf raised {type(exc).__name__}") from None
    if not value.is_number or value.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
        raise _Undefined("no finite value")
    parts, bound = [], sp.Integer(0)
    for part in value.as_real_imag():
        if not part.is_Number:
            raise _Undefined("no finite value")
        if part.is_Float and part._prec < _RESOLVED_BITS:
            if abs(part) > _UNRESOLVED_ZERO:  # a value of some size known to a few bits (a quadrature gone rough)
                raise _Undefined(f"evalf resolved {part._prec} bits of a value near {sp.N(part, 3)}")
            bound += abs(part)
            part = sp.Integer(0)
        parts.append(part)
    return parts[0], parts[1], bound


_BINDERS = (sp.Sum, sp.Product, sp.Integral, sp.Derivative, sp.Lambda)
# Functions whose value at a large integer argument is computed exactly on construction.
_EXACT_GROWTH = (sp.factorial, sp.factorial2, sp.gamma, sp.binomial, sp.RisingFactorial, sp.FallingFactorial,
                 sp.subfactorial, sp.fibonacci, sp.lucas, sp.harmonic, sp.bell, sp.catalan)


def _indices(entry: sp.Expr) -> tuple:
    return entry.indices if isinstance(entry, sp.Indexed) else (entry.i, entry.j)


def _too_large(exprs: list[sp.Expr], point: dict) -> str | None:
    """Why instantiating at ``point`` would be a runaway exact computation, or None."""
    def big(v):
        v = v.xreplace(point)
        return v.is_number and v.is_extended_real is not False and bool(abs(sp.N(v, 5)) > _MAX_EXACT)

    for e in exprs:
        for s in e.atoms(sp.Sum, sp.Product):
            for _, lo, hi in s.limits:
                # An infinite range is never expanded term by term: doit finds a closed form or evalf sums it.
                if not (lo.has(sp.oo, -sp.oo) or hi.has(sp.oo, -sp.oo)) and big(hi - lo):
                    return f"a sum or product of more than {_MAX_TERMS} terms"
        for p in e.atoms(sp.Pow):
            if big(p.exp):
                return f"an exact power with exponent over {_MAX_EXACT}"
        for f in e.atoms(*_EXACT_GROWTH):
            if any(big(arg) for arg in f.args):
                return f"{f.func.__name__} of an argument over {_MAX_EXACT}"
    return None


def _instantiate(exprs: list[sp.Expr], point: dict, rng: random.Random, calls: dict) -> list[sp.Expr]:
    """Substitute the point, expand finite sums, give every indexed entry (q[1], q[2], …) a value and
    every undefined function a value per argument tuple (the same in every entry and on both sides)."""
    # subs keeps bound variables bound; xreplace is far cheaper where there are none.
    out = [e.subs(point) if e.has(*_BINDERS) else e.xreplace(point) for e in exprs]
    # Entries and calls that are already at numbers get their values before doit, so that a range such as
    # 1..N[1] or 1..g(2) is numeric when its sum is evaluated: Sum.doit on a symbolic range ignores the
    # reversed-range convention. Entries and calls that expansion makes numeric get theirs after.
    values: dict = {}
    # An ∫ is kept for evalf's quadrature: SymPy's antiderivatives are not trusted (∫₀^{2π} |sin ax| dx is wrong).
    out = [e.doit(integrals=False) for e in _give_values(out, rng, values, calls, final=False)]
    return _give_values(out, rng, values, calls, final=True)


def _give_values(out: list[sp.Expr], rng: random.Random, values: dict, calls: dict, final: bool) -> list[sp.Expr]:
    """Replace every indexed entry and undefined-function call at numeric arguments by its value (drawn
    once per entry or call, the same in every entry and on both sides). ``final``: an entry whose index
    stays symbolic means no point gives the expression a value."""
    entries = sorted(set().union(*(e.atoms(sp.Indexed, _MatrixElement) for e in out)), key=sp.default_sort_key)
    if final and any(not i.is_number for ix in entries for i in _indices(ix)):
        raise _NotInstantiable("an index stays symbolic")
    # An entry something is differentiated by keeps its name until doit has differentiated.
    wrt = set() if final else {v for e in out for d in e.atoms(sp.Derivative) for v in d.variables}
    for ix in entries:
        if ix not in values and ix not in wrt and all(i.is_number for i in _indices(ix)):
            values[ix] = _sample_value(ix, rng)
    out = [e.xreplace(values) for e in out] if values else out
    # Only calls at numbers: f(_x) under a Derivative or Subs is not a value (replacing it there would
    # make every derivative 0).
    applied = sorted((f for e in out for f in e.atoms(sp.core.function.AppliedUndef)
                      if all(a.is_number for a in f.args)), key=sp.default_sort_key)
    for f in applied:
        if f not in calls:
            calls[f] = _sample_value(f, rng)
    return [e.xreplace(calls) for e in out] if applied else out


def _agree(lhs: sp.Expr, rhs: sp.Expr) -> bool:
    """|lhs − rhs| within _PROBE_RTOL of the larger side, plus evalf's own error bounds."""
    lr, li, lb = _number(lhs)
    rr, ri, rb = _number(rhs)
    gap = sp.sqrt((lr - rr) ** 2 + (li - ri) ** 2)
    scale = max(sp.sqrt(lr**2 + li**2), sp.sqrt(rr**2 + ri**2))
    return bool(gap <= lb + rb + _PROBE_RTOL * scale)


def _probe(lhs: list[sp.Expr], rhs: list[sp.Expr], probes: int, salt: bytes = b"") -> tuple[str | None, int, str]:
    """(refutation or None, probes that decided, how many probes decided in words).

    A probe decides when every entry has a value on both sides there; one entry that has
    values and disagrees refutes the identity whatever the other entries do.
    """
    syms, bare = _probe_symbols(lhs + rhs)
    indexed = sorted({str(ix.args[0]) for e in lhs + rhs for ix in e.atoms(sp.Indexed, _MatrixElement)})
    wanted = probes if syms or indexed else 1
    # Seeded by the identity itself: reproducible, yet no fixed set of points an expression could be
    # built to vanish on (a polynomial with roots at every probe point would make a false rewrite agree).
    rng = random.Random(hashlib.sha256(salt + sp.sstr(lhs + rhs, order="none").encode()).digest())  # "none": ordering evaluates sums
    calls: dict = {}
    decided = tried = 0
    skipped = ""
    edges = [{s: _edge_value(sp.Dummy(integer=True) if s in bare else s, step) for s in syms}
             for step in range(_EDGE_PROBES if syms else 0)]
    while decided < wanted + len(edges) and tried < (wanted + len(edges)) * _PROBE_TRIES:
        lean = (-1, 1)[tried - len(edges)] if len(edges) <= tried < len(edges) + 2 and not salt else 0
        tried += 1
        point = edges[tried - 1] if tried <= len(edges) else {
            s: _sample_value(sp.Dummy(integer=True) if s in bare else s, rng, lean, wide=bool(salt)) for s in syms}
        if any(getattr(v, f"is_{k}", None) is (not t) for s, v in point.items() for k, t in s.assumptions0.items()):
            continue  # a point the assumptions exclude (18 for a non-integer x) can refute nothing
        skipped = _too_large(lhs + rhs, point) or ""
        if skipped:
            continue
        try:
            both = _instantiate(lhs + rhs, point, rng, calls)
        except _NotInstantiable:
            break  # no point gives it a value: more random points cannot help
        except _Undefined:
            continue
        undefined = False
        for k, (a, b) in enumerate(zip(both[:len(lhs)], both[len(lhs):])):
            try:
                if _agree(a, b):
                    continue
            except _Undefined:
                undefined = True
                continue
            where = ", ".join(f"{s}={v}" for s, v in list(point.items())[:6]) or "a constant"
            where += f" (random entries of {', '.join(indexed)})" if indexed else ""
            entry = f", entry {k}" if len(lhs) > 1 else ""
            for digits in (6, 15, 30):  # enough digits to show the two sides differ
                shown = str(sp.N(a, digits)), str(sp.N(b, digits))
                if shown[0] != shown[1]:
                    break
            return (f"refuted at {where}{entry}: lhs {shown[0]}, rhs {shown[1]}", decided + 1,
                    f"{decided + 1} of {tried} probes decided")
        decided += not undefined
    if decided == 0:
        why = f" (instantiating needs {skipped})" if skipped else ""
        return None, 0, f"not probed: 0 of {tried} probe points gave both sides a value{why}"
    return None, decided, f"{decided} of {tried} probes decided"


def _positive(e: sp.Expr) -> bool:
    """e > 0 from the assumptions, including finite sums of positive terms."""
    if shown(e, "positive"):
        return True
    if isinstance(e, (sp.Add, sp.Mul)):
        return all(_positive(a) for a in e.args)
    if isinstance(e, sp.Pow):
        return _positive(e.base) and shown(e.exp, "extended_real")
    if isinstance(e, (sp.exp, sp.cosh)):  # e^x > 0 and cosh x ≥ 1 for real x (cosh's own handler is not trusted)
        return shown(e.args[0], "real")
    if isinstance(e, sp.Sum):  # a non-empty sum of positive terms: every range has hi ≥ lo
        return _positive(e.function) and all(shown(hi - lo, "nonnegative") or (
            shown(hi - lo, "integer") and shown(hi - lo + 1, "positive")) for _, lo, hi in e.limits)
    return False


def _nonzero(d: sp.Expr) -> bool:
    if fact(d, "zero") is False or _positive(d) or _positive(-d):
        return True
    if isinstance(d, sp.Mul):
        return all(_nonzero(f) for f in d.args)
    if isinstance(d, sp.Pow) and shown(d.exp, "extended_real"):
        return _nonzero(d.base) and shown(d.base, "finite")
    return False


# Bound indices are renamed to Dummies with these fixed indices, so the same position in the same
# nesting gives the same symbol on both sides; no user symbol can be equal to one (a Dummy equals
# only a Dummy with its name, index and assumptions).
_BOUND_BASE = 7_340_000_000
_BOUND_SPAN = 10**6  # indices _BOUND_BASE .. + _BOUND_SPAN are the engine's; an input Dummy there is refused


def _index_facts(lo: sp.Expr, hi: sp.Expr) -> dict:
    """What the range implies for its index. Under SymPy's (Karr's) convention a reversed range
    Σ_{lo..hi} with hi < lo − 1 runs over hi + 1 .. lo − 1, so a bound holds only when the range
    is shown not reversed; the index is an integer only when lo is."""
    facts = {}
    upward = hi == sp.oo  # k = lo, lo + 1, …: bounded below by lo only
    if shown(lo, "integer") and (shown(hi, "integer") or upward):
        facts["integer"] = True
        if upward:
            if shown(lo, "positive"):
                facts["positive"] = True
            elif shown(lo, "nonnegative"):
                facts["nonnegative"] = True
        elif shown(hi - lo + 1, "nonnegative"):
            if shown(lo, "positive"):
                facts["positive"] = True
            elif shown(lo, "nonnegative"):
                facts["nonnegative"] = True
            elif shown(hi, "negative"):
                facts["negative"] = True
            elif shown(hi, "nonpositive"):
                facts["nonpositive"] = True
    return facts


def _canonical(expr: sp.Expr, base: int = _BOUND_BASE) -> sp.Expr:
    """Alpha-rename every bound index of a Sum or Product to a Dummy fixed by its nesting height and
    position, carrying what its range implies (k in 1..n, n ≥ 0, is a positive integer), so
    Σ_i q_i and Σ_m q_m coincide. Only the summand (and inner limits) are renamed, never the sum's
    own limits: Σ_{i=1..i} f(i) keeps its free upper limit i. ``base``: the first Dummy index (the
    checker renames into a range of its own, which the engine does not refuse as input)."""
    if not expr.has(sp.Sum, sp.Product):
        return expr

    def rename(s):
        height = _sum_height(s.function)
        function, limits = s.function, [tuple(lim) for lim in s.limits]
        for k, (var, lo, hi) in enumerate(limits):
            # An index that a binder inside also binds or differentiates in (Σ_t ∫ dt, Σ_t d/dt) keeps its own
            # declared facts, not its range's: d/dt sin(πt) with t made an integer is built as d/dt 0 = 0.
            inner = _binds_inside(function, var)
            facts = {a: v for a, v in var.assumptions0.items() if v is not None} if inner else _index_facts(lo, hi)
            new = _index_dummy(f"b{height}_{k}", base + 100 * height + k + (50 if inner else 0),
                               tuple(sorted(facts.items())))
            function = function.xreplace({var: new})
            limits = [(new, lo, hi) if j == k else
                      (lim[0],) + tuple(b.xreplace({var: new}) for b in lim[1:]) if j < k else lim
                      for j, lim in enumerate(limits)]
        return s.func(function, *limits)

    return expr.replace(lambda e: isinstance(e, (sp.Sum, sp.Product)), rename)


@functools.lru_cache(maxsize=4096)
def _index_dummy(name: str, index: int, facts: tuple) -> sp.Dummy:
    # A Dummy equals any other of its name, index and facts: one object serves them all, built (and its facts
    # deduced, SymPy's costly part) once.
    return sp.Dummy(name, dummy_index=index, **dict(facts))


def _sum_height(e: sp.Basic) -> int:
    return max((1 + _sum_height(s.function) for s in e.atoms(sp.Sum, sp.Product)), default=0)


# ------------------------------------------------------------------ domains: a whitelist
#
# A side is "shown defined" only when every node of it is one the engine knows the domain of, and every
# condition that domain states is shown under the assumptions. Anything else (a function the engine has
# no entry for, however harmless) makes the side "not shown defined". The entries:
#   values:             numbers, symbols, Add, Mul, indexed entries q[i], matrix entries A[i, j], and
#                       undefined functions f(x) (see below);
#   defined everywhere: exp, sin, cos, sinh, cosh, asin, acos, asinh, acosh, erf, erfc, erfi, re, im,
#                       conjugate, Abs, sign, floor, ceiling, frac, KroneckerDelta, and a Piecewise whose
#                       last condition is True (conditions compare real expressions);
#   with a condition:   x^e (base ≠ 0 unless e ≥ 0; a fractional power of a negative or non-real base is
#                       its principal value, a finite complex number, and counts as defined: the probes
#                       take complex points so that a rewrite that is false off the principal branch is
#                       refuted), log (argument ≠ 0), tan/sec (cos ≠ 0), cot/csc (sin ≠ 0), tanh/sech
#                       (cosh ≠ 0), coth/csch (sinh ≠ 0), atan/acot (1 + z² ≠ 0), atanh/acoth (1 − z² ≠ 0),
#                       asec/acsc/asech/acsch (z ≠ 0), atan2 (real arguments, not both 0), gamma, loggamma,
#                       digamma, polygamma(k ≥ 0, z), factorial, harmonic (argument off 0, −1, −2, … after
#                       the shift), binomial(n, k) with k an integer, rising and falling factorials with a
#                       non-negative integer count, Max and Min (real arguments), Heaviside (a real
#                       argument), Mod(p, q) (real, q ≠ 0);
#   Limit:              never by itself (a limit need not exist): only where a rewrite's premise states its value,
#                       which the rewrite puts in for it (the condition "stated", met once no Limit is left);
#   binders:            Sum and Product (the summand's conditions under what the range implies for its
#                       index; an infinite range must be shown convergent), a definite Integral with finite
#                       limits, Derivative (below), Subs.
# Undefined functions f(x) are opaque values, total and (under a Derivative) differentiable: a theorem
# states an uninterpreted quantity that way, and the identity is then claimed for every such function
# (the probes give f an independent random value per argument tuple, which is how they refute a claim
# that holds only for some f). A reader must know that f ranges over total, differentiable functions.
#
# A Derivative is defined where its expression is differentiable in each of its variables. Nodes that do
# not depend on the variable are only checked for their domain; the others must be smooth there:
# polynomials, exp and the functions above that are analytic where defined, an undefined function, a
# power with an integer exponent, a power with a real non-zero base (or a positive base when the exponent
# depends on the variable), log of a real argument, Abs, sign and Heaviside of a real argument shown
# non-zero, Max and Min whose arguments are shown pairwise different, a Piecewise whose conditions do not
# involve the variable. Everything else (floor, frac, Mod, δ, a jump or kink not shown absent) is "not
# shown differentiable".


class _Unknown(Exception):
    """A node whose domain the engine does not know (or cannot show): the side is not shown defined."""


_EVERYWHERE = (sp.exp, sp.sin, sp.cos, sp.sinh, sp.cosh, sp.erf, sp.erfc, sp.erfi)
_EVERYWHERE_ROUGH = (sp.asin, sp.acos, sp.asinh, sp.acosh)  # finite on all of C, not smooth at ±1 (±i)
_JUMPS = (sp.floor, sp.ceiling, sp.frac, sp.KroneckerDelta)  # defined everywhere, nowhere shown smooth
_KINKS = (sp.Abs, sp.sign, sp.re, sp.im, sp.conjugate)  # defined everywhere; smooth where the argument is real and ≠ 0
# Poles where a factor vanishes: tan z = sin z / cos z, atanh z = log((1 + z)/(1 − z))/2, and so on.
_VANISHING = {sp.tan: sp.cos, sp.sec: sp.cos, sp.cot: sp.sin, sp.csc: sp.sin,
              sp.tanh: sp.cosh, sp.sech: sp.cosh, sp.coth: sp.sinh, sp.csch: sp.sinh,
              sp.atan: lambda z: 1 + z**2, sp.acot: lambda z: 1 + z**2,
              sp.atanh: lambda z: 1 - z**2, sp.acoth: lambda z: 1 - z**2,
              sp.asec: lambda z: z, sp.acsc: lambda z: z, sp.asech: lambda z: z, sp.acsch: lambda z: z}
_MEROMORPHIC = (sp.tan, sp.sec, sp.cot, sp.csc, sp.tanh, sp.sech, sp.coth, sp.csch)  # smooth where defined
# Functions undefined where an argument is a non-positive integer, and which argument (shifted so the
# poles are at 0, −1, −2, …): gamma(z), factorial(k) at k = −1, −2, …, harmonic(n) at n = −1, −2, ….
_GAMMA_POLES = {sp.gamma: lambda f: f.args[0], sp.loggamma: lambda f: f.args[0], sp.digamma: lambda f: f.args[0],
                sp.polygamma: lambda f: f.args[1], sp.factorial: lambda f: f.args[0] + 1,
                sp.harmonic: lambda f: f.args[0] + 1}
_BOOLEANS = (sp.And, sp.Or, sp.Not, sp.logic.boolalg.BooleanAtom)


def _name(e: sp.Basic) -> str:
    return sp.sstr(e)[:100]


def _flat(args: tuple) -> list:
    """Arguments with tuples written out: f((m, l, o)) takes three values."""
    return [x for a in args for x in (_flat(a.args) if isinstance(a, sp.Tuple) else (a,))]


def _conditions(e: sp.Basic, out: list, smooth_in: frozenset = frozenset()) -> None:
    """Append to ``out`` every condition ``e`` needs to have a value (and to be differentiable in the
    symbols of ``smooth_in``): (kind, expression, what), kind one of "nonzero", "poles", "real",
    "positive", "atan2", "convergent", "stated". Raise _Unknown for a node outside the whitelist."""
    if isinstance(e, (sp.Indexed, _MatrixElement)):  # an entry is a value; only its indices are expressions
        index_symbols = set().union(*(i.free_symbols for i in e.args[1:]))
        if smooth_in & index_symbols:
            raise _Unknown(f"{_name(e)} is not shown differentiable: its index varies")
        for i in e.args[1:]:
            _conditions(i, out, smooth_in)
        return None
    if e.is_Atom:
        if isinstance(e, (sp.Symbol, sp.Number, sp.NumberSymbol, sp.core.numbers.ImaginaryUnit, sp.IndexedBase,
                          sp.core.symbol.Str, sp.logic.boolalg.BooleanAtom)):
            return
        raise _Unknown(f"{type(e).__name__} {_name(e)} is not a value the engine knows")
    vary = smooth_in & e.free_symbols  # the variables this node must be differentiable in

    def walk(*args, smooth=smooth_in):
        for arg in args:
            _conditions(arg, out, smooth)

    def rough(why):
        if vary:
            raise _Unknown(f"{_name(e)} is not shown differentiable in {', '.join(sorted(map(str, vary)))}: {why}")

    if isinstance(e, (sp.Add, sp.Mul)):
        return walk(*e.args)
    if isinstance(e, sp.Pow):
        base, exponent = e.args
        if not shown(exponent, "nonnegative"):
            out.append(("nonzero", base, "denominator"))
        if vary & exponent.free_symbols:
            out.append(("positive", base, f"base of the power {_name(e)} with a varying exponent:"))
        elif vary and not shown(exponent, "integer"):
            out.append(("real", base, f"base of the fractional power {_name(e)}"))
            out.append(("nonzero", base, f"branch point of {_name(e)}:"))
        return walk(base, exponent)
    if isinstance(e, sp.core.function.AppliedUndef):  # any function: a value wherever its arguments are values
        return walk(*_flat(e.args))
    if isinstance(e, sp.Derivative):
        if not all(isinstance(v, (sp.Symbol, sp.Indexed, _MatrixElement)) for v in e.variables):
            raise _Unknown(f"{_name(e)} differentiates by something other than a symbol or an entry")
        if len(set(e.variables)) > 1 and e.expr.has(sp.core.function.AppliedUndef):
            # SymPy orders the variables on construction: that assumes the mixed partials commute (Schwarz)
            raise _Unknown(f"{_name(e)}: mixed partials of an undefined function are not assumed to commute")
        return walk(e.expr, smooth=smooth_in | frozenset(e.variables))
    if isinstance(e, sp.Subs):  # its point may be one its variables' assumptions exclude (Subs(H'(t), t, 0), t ≠ 0)
        raise _Unknown(f"{_name(e)}: an expression at a point (Subs) is not in the whitelist")
    if isinstance(e, (sp.Sum, sp.Product, sp.Integral)):
        if isinstance(e, sp.Integral):
            rough("differentiating an integral is not in the whitelist")
            if e.function.has(sp.core.function.AppliedUndef):
                raise _Unknown(f"{_name(e)}: an undefined function is not assumed integrable")
        for limit in e.limits:
            if len(limit) != 3:
                raise _Unknown(f"{_name(e)} has no range for {limit[0]}")
            walk(*limit[1:])
            infinite = any(b.has(sp.oo, -sp.oo, sp.zoo) for b in limit[1:])
            if infinite and isinstance(e, sp.Integral):
                raise _Unknown(f"improper integral {_name(e)}")
            if infinite:
                rough("an infinite sum or product is not differentiated term by term")
                out.append(("convergent", e, ""))
            if isinstance(e, sp.Integral) and not all(shown(b, "extended_real") for b in limit[1:]):
                raise _Unknown(f"{_name(e)} has a limit not shown real")
            if not isinstance(e, sp.Integral) and not all(b in (sp.oo, -sp.oo) or shown(b, "integer")
                                                          for b in limit[1:]):
                # Σ_{k=1}^{5/2} 1 has the terms k = 1, 2; SymPy's closed form gives 5/2
                raise _Unknown(f"{_name(e)} has a limit not shown an integer: a sum or product runs over integers")
        return walk(e.function)
    if isinstance(e, sp.Piecewise):
        if e.args[-1].cond != sp.true:
            raise _Unknown(f"a Piecewise with no otherwise branch, {_name(e)}, has no value where no condition holds")
        for expr, cond in e.args:
            if vary & cond.free_symbols:
                rough("a condition of the Piecewise involves the variable (a jump or a kink)")
            walk(expr, cond)
        return None
    if isinstance(e, sp.core.relational.Relational):
        if not isinstance(e, (sp.Eq, sp.Ne)):
            out.extend(("real", side, "compared") for side in e.args)
        return walk(*e.args)
    if isinstance(e, _BOOLEANS):
        return walk(*e.args)
    if isinstance(e, _EVERYWHERE):
        return walk(*e.args)
    if isinstance(e, _EVERYWHERE_ROUGH):
        rough(f"{type(e).__name__} has branch points")
        return walk(*e.args)
    if isinstance(e, _JUMPS):
        rough(f"{type(e).__name__} jumps")
        return walk(*e.args)
    if isinstance(e, _KINKS):
        if vary:
            out.append(("real", e.args[0], f"argument of {type(e).__name__} under a derivative"))
            out.append(("nonzero", e.args[0], f"kink of {type(e).__name__}:"))
        return walk(*e.args)
    if isinstance(e, sp.Heaviside):
        out.append(("real", e.args[0], "argument of Heaviside"))
        if vary:
            out.append(("nonzero", e.args[0], "jump of Heaviside:"))
        return walk(*e.args)
    if isinstance(e, (sp.Max, sp.Min)):
        out.extend(("real", arg, f"argument of {type(e).__name__}") for arg in e.args)
        if vary:
            out.extend(("nonzero", s - t, f"kink of {type(e).__name__}:") for s, t in itertools.combinations(e.args, 2))
        return walk(*e.args)
    if isinstance(e, sp.Mod):
        rough("Mod jumps")
        out.extend(("real", arg, "argument of Mod") for arg in e.args)
        out.append(("nonzero", e.args[1], "modulus"))
        return walk(*e.args)
    if isinstance(e, sp.log):
        out.append(("nonzero", e.args[0], "argument of log"))
        if vary:
            out.append(("real", e.args[0], "argument of log under a derivative (a complex one may cross the cut)"))
        return walk(*e.args)
    if type(e) in _VANISHING:
        z = e.args[0]
        out.append(("nonzero", _VANISHING[type(e)](z), f"pole of {type(e).__name__}:"))
        if not isinstance(e, _MEROMORPHIC):
            if vary and type(e) in (sp.atan, sp.acot):
                out.append(("real", z, f"argument of {type(e).__name__} under a derivative"))
            else:
                rough(f"{type(e).__name__} has branch points")
        return walk(*e.args)
    if isinstance(e, sp.atan2):
        rough("atan2 has a cut")
        out.extend(("real", arg, "argument of atan2") for arg in e.args)
        out.append(("atan2", sp.Tuple(*e.args), "atan2(y, x) needs y or x non-zero:"))
        return walk(*e.args)
    if type(e) in _GAMMA_POLES:
        if isinstance(e, sp.polygamma) and not (shown(e.args[0], "integer") and shown(e.args[0], "nonnegative")):
            raise _Unknown(f"{_name(e)}: polygamma's order is not shown a non-negative integer")
        if isinstance(e, sp.harmonic) and len(e.args) != 1:
            raise _Unknown(f"{_name(e)}: generalised harmonic numbers are not in the whitelist")
        if isinstance(e, sp.loggamma) and vary:
            out.append(("positive", e.args[0], "argument of loggamma under a derivative (a cut on the negative reals):"))
        out.append(("poles", _GAMMA_POLES[type(e)](e), f"{type(e).__name__} pole"))
        return walk(*e.args)
    if isinstance(e, sp.binomial):
        if not shown(e.args[1], "integer"):
            raise _Unknown(f"{_name(e)}: binomial with a second argument not shown an integer has gamma poles")
        return walk(*e.args)
    if isinstance(e, (sp.RisingFactorial, sp.FallingFactorial)):
        if not (shown(e.args[1], "integer") and shown(e.args[1], "nonnegative")):
            raise _Unknown(f"{_name(e)}: a count not shown a non-negative integer makes it a gamma quotient")
        return walk(*e.args)
    if isinstance(e, sp.Limit):  # it need not exist: it has a value only where a premise states it (a rewrite puts it in)
        rough("a limit is not differentiated")
        out.append(("stated", e, "limit, its value stated by no premise:"))
        return None
    raise _Unknown(f"{type(e).__name__} ({_name(e)}) has a domain the engine does not know")


def _gamma_safe(z: sp.Expr) -> bool:
    """z is not 0, −1, −2, …"""
    return bool(shown(z, "positive") or fact(z, "integer") is False or fact(z, "extended_real") is False)


def _convergent(s: sp.Expr) -> bool:
    """An infinite sum or product shown convergent by SymPy's tests (which may give up by raising)."""
    if not isinstance(s, (sp.Sum, sp.Product)) or len(s.limits) != 1:
        return False
    try:
        return s.is_convergent() is sp.true
    except Exception:
        return False


def _declared_against_range(e: sp.Basic) -> str | None:
    """A bound variable whose declared assumptions its range does not imply, or None.

    SymPy uses a symbol's assumptions when the summand is built (|k| becomes k for k declared
    positive), so Σ_{k=−3..3} |k| over such a k is built as Σ k = 0: the declared assumptions must
    follow from the range, or the expression states something other than it shows."""
    for s in e.atoms(sp.Sum, sp.Product, sp.Integral):
        for limit in s.limits:
            var = limit[0]
            if len(limit) != 3:
                continue  # the domain whitelist refuses it
            facts = _index_facts(*limit[1:]) if isinstance(s, (sp.Sum, sp.Product)) else \
                ({"real": True} if all(shown(b, "extended_real") for b in limit[1:]) else {})
            implied = sp.Dummy(**facts).assumptions0
            declared = var.assumptions0
            if any(implied.get(key) != value for key, value in declared.items()):
                stated = getattr(var, "_assumptions_orig", None) or declared
                listed = ", ".join(f"{key}={value}" for key, value in sorted(stated.items()) if key != "commutative")
                return (f"the bound variable {var} of {_name(s)} is declared {listed}, "
                        f"which its range {sp.sstr(limit[1])}..{sp.sstr(limit[2])} does not imply")
    for b in e.atoms(sp.Lambda, sp.Derivative):
        why = declared_without_range(type(b), b.variables)
        if why:
            return why
    return None


def declared_without_range(binder: type, variables) -> str | None:
    """Why a λ's or a derivative's variables are declared what no range implies, or None. SymPy builds the body on
    them first: t declared positive builds λt.|t| as λt.t, n declared an integer builds d/dn sin(πn) on sin(πn) = 0.
    So a λ's variable may carry no facts and a derivative's may not be an integer. (The reader asks this before it
    builds the node, since λt.t is then SymPy's identity function with a fresh variable.)"""
    for var in variables:
        if not isinstance(var, sp.Symbol):
            continue
        if issubclass(binder, sp.Lambda) and any(key != "commutative" for key in var._assumptions_orig):
            return f"the λ-variable {var} is declared something: a λ's variable may carry no facts"
        if issubclass(binder, sp.Derivative) and var.is_integer:
            return f"a derivative in {var}, declared an integer: a derivative needs a real variable"
    return None


def _reserved_dummies(e: sp.Basic) -> str | None:
    """A Dummy in the index range the engine renames bound variables to (it could be captured), or None."""
    for d in e.atoms(sp.Dummy):
        if _BOUND_BASE <= d.dummy_index < _BOUND_BASE + _BOUND_SPAN:
            return f"the Dummy {d} has index {d.dummy_index}, reserved for the engine's bound-variable renaming"
    return None


def _may_be_infinite(e: sp.Basic) -> str | None:
    """A name whose declared facts admit ±∞ (extended_*, infinite, finite=False). The engine refuses
    infinities on entry and probes finite values only, so it cannot show a side defined at ∞: y/(y + 1) is
    oo/oo there while 1 − 1/(y + 1) is 1. A name declared without such facts ranges over numbers."""
    heads = [(h, h) for h in e.atoms(sp.Symbol)] + [(h, h.func) for h in e.atoms(sp.core.function.AppliedUndef)] + \
        [(h, h.base) for h in e.atoms(sp.Indexed)]
    for h, head in sorted(heads, key=lambda p: sp.default_sort_key(p[0])):
        facts = dict(getattr(head, "_assumptions_orig", None) or getattr(head, "_kwargs", None)
                     or getattr(getattr(head, "_assumptions", None), "_generator", None) or {})
        if h.is_finite is not True and any(k.startswith("extended_") or k == "infinite" or (k == "finite" and v is False)
                                           for k, v in facts.items()):
            return f"{_name(h)} may be infinite (declared {', '.join(sorted(facts))}): not shown defined at ±∞"
    return None


def _undefined_somewhere(exprs: list[sp.Expr], skip: frozenset = frozenset()) -> str | None:
    """A reason naming the first node or condition not shown, or None when both sides are defined
    (and differentiable where differentiated) everywhere; infinities were refused on entry. ``skip``: kinds of
    condition the caller shows itself (the checker's sign rule shows a denominator non-zero under premises)."""
    out = _conditions_of(exprs)
    return out if isinstance(out, str) else _unmet(out, skip)


def _conditions_of(exprs: list[sp.Expr], placeholders: bool = False) -> list | str:
    """Every condition (kind, expression, what) the expressions need to have a value (see _conditions), bound indices
    renamed with what their ranges imply; or the reason, a string, when a node is outside the whitelist.
    ``placeholders``: the expressions' names stand for values put in later (a premise's ∀-symbols), which the caller
    shows finite or puts in, so a name that may be infinite is not refused here."""
    out: list = []
    for e in exprs:
        got = _expr_conditions(e, placeholders)
        if isinstance(got, str):
            return got
        out.extend(got)
    return out


def _expr_conditions(e: sp.Expr, placeholders: bool) -> tuple | str:
    """_conditions_of([e], placeholders), as a tuple; memoised per process on e with its symbols' assumptions (a side
    or a premise's right side is looked at again by many steps)."""
    try:
        key = (memo_key(e), placeholders)
        hit = _CONDITIONS.get(key)
    except TypeError:  # unhashable
        key = hit = None
    if hit is not None:
        return hit
    why = _declared_against_range(e) or (None if placeholders else _may_be_infinite(e))
    if why:
        out = why
    else:
        found: list = []
        try:
            _conditions(_canonical(e), found)
            out = tuple(found)
        except _Unknown as exc:
            out = str(exc)
    if key is not None:
        _CONDITIONS[key] = out
    return out


_CONDITIONS: dict = {}  # (memo_key(e), placeholders) -> _expr_conditions(e, placeholders)
_KEYS: dict[int, tuple[Any, Any]] = {}  # id(expression) -> (expression, its memo_key): immutable, so computed once


def memo_key(a: Any) -> Any:
    """A key for memoising a pure function of ``a``: an expression with every symbol it holds, bound ones included,
    with its assumptions (SymPy's equality, which a dict uses, ignores the assumptions of a bound variable it compares
    up to renaming: Subs, Lambda); a tuple as the tuple of its items' keys; anything else as itself. Computed once per
    SymPy object (held in _KEYS, so that its id is not reused)."""
    if isinstance(a, sp.Basic):
        hit = _KEYS.get(id(a))
        if hit is not None and hit[0] is a:
            return hit[1]
        k = a, frozenset((type(v), v.name, tuple(sorted(v.assumptions0.items()))) for v in a.atoms(sp.Symbol))
        _KEYS[id(a)] = (a, k)
        return k
    return tuple(map(memo_key, a)) if isinstance(a, tuple) else a


def clear_memos() -> None:
    """Forget this module's memos of pure functions (and SymPy's expression keys), as a fresh process has none."""
    _CONDITIONS.clear()
    _KEYS.clear()
    for memo in (_index_dummy, _plain_free_symbols, _trusted):
        memo.cache_clear()


def _unmet(out: list, skip: frozenset = frozenset()) -> str | None:
    """The first condition of ``out`` not shown (its reason), or None; ``skip``: kinds the caller shows itself."""
    seen = set()
    for kind, d, what in sorted(out, key=lambda c: (c[0] != "convergent", sp.default_sort_key(c[1]))):
        key = (kind, d)
        if key in seen or kind in skip:
            continue
        seen.add(key)
        if kind == "convergent":
            if not _convergent(d):
                return f"infinite {type(d).__name__.lower()} {_name(d)} not shown convergent"
        elif kind == "poles":
            if not _gamma_safe(d):
                return f"{what}: {_name(d)} not shown off 0, −1, −2, …"
        elif kind == "real":
            if not shown(d, "extended_real"):
                return f"{what} {_name(d)} is not shown real"
        elif kind == "positive":
            if not _positive(d):
                return f"{what} {_name(d)} is not shown positive"
        elif kind == "stated":
            if d.has(sp.Limit):
                return f"{what} {_name(d)}"
        elif kind == "atan2":
            y, x = d
            if not (_nonzero(y) or _nonzero(x)):
                return f"{what} {_name(x)} is not shown non-zero"
        elif not _nonzero(d):
            zero = d.is_number and d.is_zero or _reduces_to_zero(d, trust_simplify=False)
            return (f"{what} {_name(d)} is " +
                    ("identically 0" if zero else "not shown non-zero under the symbols' assumptions"))
    return None


def _forward_ranges(expr: sp.Expr) -> bool:
    """Every range in ``expr`` is finite, and every sum range is shown not reversed (hi ≥ lo − 1), or sums a
    polynomial in its index (a closed form of a polynomial sum is a polynomial identity in hi, so it holds for
    reversed ranges too); every product range is shown non-empty (simplify takes Π_{k=1}^{n} 0 for 0)."""
    infinite = (sp.oo, -sp.oo, sp.zoo)  # SymPy's summation of a series is not trusted (red team 13: −258 for −256)
    return all(not (lo.has(*infinite) or hi.has(*infinite)) and
               (shown(hi - lo + 1, "nonnegative") or isinstance(s, sp.Sum) and s.function.is_polynomial(var))
               for s in expr.atoms(sp.Sum, sp.Product) for var, lo, hi in s.limits) and \
        all(map(_nonempty, expr.atoms(sp.Product)))


def _gamma_rewrites_hold(expr: sp.Expr) -> bool:
    """simplify rewrites binomials and rising/falling factorials through gamma, which is exact only
    where no gamma pole is met: binomial(n, m) = binomial(n, n − m) is false for negative integer n.
    So simplify may see them only with a first argument shown non-negative (or not an integer)."""
    return all(shown(f.args[0], "nonnegative") or fact(f.args[0], "integer") is False
               for f in expr.atoms(sp.binomial, sp.RisingFactorial, sp.FallingFactorial))


_WRITTEN_OUT = 64  # a sum or product over at most this many numeric indices is written out term by term


def own_bound(e: Any) -> set:
    """The variables the node ``e`` itself binds (not those of binders inside it): a Σ's, Π's or ∫'s, a λ's, a
    derivative's (∂/∂x holds the other symbols fixed, and x is also its point), a limit's or Subs's."""
    if isinstance(e, sp.concrete.expr_with_limits.ExprWithLimits):
        return {lim[0] for lim in e.limits}
    if isinstance(e, sp.Lambda):
        return set(e.variables)
    if isinstance(e, sp.Derivative):  # (an entry S[a, b] binds nothing)
        return {v for v in e.variables if isinstance(v, sp.Symbol)}
    if _plain_free_symbols(type(e)) and all(isinstance(a, sp.Basic) for a in e.args):
        # Its free symbols are Basic's: the union of its arguments' (below, that union minus itself), so it binds
        # nothing. Said without computing both sets, which costs a walk of the subtree at every node of a walk.
        return set()
    return set().union(*[a.free_symbols for a in e.args if isinstance(a, sp.Basic)]) - e.free_symbols


@functools.lru_cache(maxsize=None)
def _plain_free_symbols(cls: type) -> bool:
    """Instances of ``cls`` take their free symbols from Basic.free_symbols (the union of their arguments')."""
    return next((k for k in cls.__mro__ if "free_symbols" in vars(k)), None) is sp.Basic


def _binds_inside(body: Any, var: Any) -> bool:
    """A binder inside ``body`` other than a Σ or Π binds (or differentiates in) ``var``."""
    return any(var in own_bound(n) for n in sp.preorder_traversal(body)
               if isinstance(n, sp.Basic) and not n.is_Atom and not isinstance(n, (sp.Sum, sp.Product)))


def _bound_inside(expr: Any) -> bool:
    """Some Σ or Π index of ``expr`` is bound again inside its term (Σ_t d/dt f(t), Σ_t ∫ dt): SymPy's doit takes
    the term at t by substitution into the inner binder (Σ_{t=1}^{1} d/dt sin(πt) is built as 0, not −π)."""
    return any(_binds_inside(s.function, lim[0]) for s in expr.atoms(sp.Sum, sp.Product) for lim in s.limits)


def term_at(body: Any, var: Any, value: Any) -> Any:
    """A Σ's or Π's term at ``var`` = ``value``, or None where a binder inside ``body`` other than a Σ or Π binds
    ``var`` (xreplace would put the value into d/dvar, ∫ dvar, λ var: d/dt sin(πt) at t = 1 is not d/d1 sin(π)).
    Every rule that takes a term out of a Σ or Π (written out, sifted, peeled) asks this one function."""
    return None if _binds_inside(body, var) else body.xreplace({var: value})


def _finite_sums(expr: sp.Expr) -> sp.Expr:
    """Sums and products evaluated where the evaluation holds under Karr's convention for every integer
    range (Sum.doit on a symbolic range does not), innermost first:
      Σ or Π over one numeric range lo..hi of 0 to 64 terms: written out (an empty Σ is 0, an empty Π 1);
      Σ over integer ranges of a summand c free of the indices (ranges free of them too) = c·Π(hi − lo + 1)
      (Karr: for hi < lo too);
      Σ_{k=lo}^{hi} δ(k, j)·g(k) = g(j) for integer lo, hi, j, j free of k, lo ≤ j ≤ hi shown;
      and a δ whose other index is an enclosing Σ's (``_sift_enclosed``): in Σ_{j=lo}^{hi} F(j), a
      Σ_{k=lo'}^{hi'} δ(k, j)·g(k) = g(j) when the range lo..hi is shown not reversed (hi − lo + 1 ≥ 0) and
      shown inside lo'..hi' (lo' ≤ lo, hi ≤ hi', lo' and hi' free of j and k): each j the sum runs over is in
      range of the inner one (and an empty Σ_{j=lo}^{lo−1} is 0 whatever its terms)."""
    def one(s):
        indices = {lim[0] for lim in s.limits}
        if not all(shown(lo, "integer") and shown(hi, "integer") and not (lo.has(*indices) or hi.has(*indices))
                   for _, lo, hi in s.limits):
            return s
        if isinstance(s, sp.Sum) and not s.function.has(*indices):
            return s.function * sp.Mul(*(hi - lo + 1 for _, lo, hi in s.limits))
        if len(s.limits) != 1:
            return s
        k, lo, hi = s.limits[0]
        if isinstance(s, sp.Sum) and shown(hi - lo + 1, "nonnegative"):
            inner = _sift_enclosed(s.function, k, lo, hi)
            if inner != s.function:
                s = s.func(inner, *s.limits)  # (then as any other Σ: written out, or sifted itself)
        if (hi - lo + 1).is_Integer and 0 <= hi - lo + 1 <= _WRITTEN_OUT:
            parts = [term_at(s.function, k, lo + t) for t in range(int(hi - lo + 1))]
            if any(p is None for p in parts):
                return s
            return sp.Add(*parts) if isinstance(s, sp.Sum) else sp.Mul(*parts)
        factors = sp.Mul.make_args(s.function) if isinstance(s, sp.Sum) else ()
        for n, f in enumerate(factors):
            if isinstance(f, sp.KroneckerDelta) and k in f.args:
                j = f.args[1] if f.args[0] == k else f.args[0]
                if not j.has(k) and shown(j, "integer") and shown(j - lo, "nonnegative") and shown(hi - j, "nonnegative"):
                    sifted = term_at(sp.Mul(*(factors[:n] + factors[n + 1:])), k, j)
                    return s if sifted is None else sifted
        return s

    return expr.replace(lambda e: isinstance(e, (sp.Sum, sp.Product)), one)


def _sift_enclosed(e: Any, j: Any, lo: Any, hi: Any) -> Any:
    """``e`` (the term of a Σ over j = lo..hi, that range shown not reversed) with each Σ_{k=lo'}^{hi'} δ(k, j)·g(k)
    in it (j free there: no binder between binds j again) taken as g(j), where lo' ≤ lo and hi ≤ hi' are shown and
    lo', hi' are integers free of j and k: every j the outer Σ runs over is then in the inner range."""
    if not isinstance(e, sp.Basic) or e.is_Atom or not e.has(j):
        return e
    if isinstance(e, sp.Sum) and len(e.limits) == 1:
        k, lo2, hi2 = e.limits[0]
        if k != j and not (lo2.has(j, k) or hi2.has(j, k)) and shown(lo2, "integer") and shown(hi2, "integer") \
                and shown(lo - lo2, "nonnegative") and shown(hi2 - hi, "nonnegative"):
            factors = sp.Mul.make_args(e.function)
            for n, f in enumerate(factors):
                if isinstance(f, sp.KroneckerDelta) and set(f.args) == {j, k}:
                    sifted = term_at(sp.Mul(*(factors[:n] + factors[n + 1:])), k, j)
                    if sifted is not None:
                        return sifted
    if j in own_bound(e):  # bound again here: below, j is another variable
        return e
    args = [_sift_enclosed(a, j, lo, hi) for a in e.args]
    return e if all(x is y for x, y in zip(args, e.args)) else e.func(*args)


def _reduces_to_zero(expr: sp.Expr, trust_simplify: bool, exact_tried: bool = False) -> str:
    """"exact" or "simplify" (which kind of reduction reached 0), or "" when none did. ``exact_tried``:
    the exact reductions are known to fail, only simplify's are tried."""
    # Cheapest first: most identities here are polynomial or rational in exponentials.
    # Each reduction is valid wherever the expression is defined; the singularities are checked apart.
    # expand, together, cancel and powsimp rewrite by field axioms and power laws with their
    # conditions; simplify also applies rewrites that hold only generically, so it needs probes.
    expr = _canonical(expr)
    reductions = [
        sp.expand,
        lambda e: sp.expand(sp.numer(sp.together(e))),
        lambda e: sp.cancel(sp.expand(e, power_exp=True)),
        lambda e: sp.cancel(sp.powsimp(sp.expand(e))),
    ]
    if expr.has(sp.Sum, sp.Product):  # exact for every range, reversed ones included (see _finite_sums)
        reductions.append(lambda e: sp.cancel(sp.expand(_canonical(_finite_sums(e)))))  # renamed again: a sum
        # sifted out of another is no longer nested (its index's height changed)
    if expr.has(sp.Derivative):  # differentiation rules are exact where the domain check showed smoothness
        # deep=False: a deep doit would also evaluate every Sum inside on its symbolic range (below).
        reductions.append(lambda e: sp.expand(e.xreplace({d: d.doit(deep=False) for d in e.atoms(sp.Derivative)})))
    if expr.has(sp.sin, sp.cos, sp.tan, sp.sinh, sp.cosh, sp.tanh):
        reductions.append(lambda e: sp.expand(sp.expand_trig(e)))
    # Sum.doit on a symbolic range ignores the reversed-range convention (it makes
    # Σ_{i=1..n} δ(i, m) = [1 ≤ m ≤ n] for every n), and simplify may call it, so neither is used
    # where a range can be reversed.
    if expr.has(sp.ceiling, sp.frac):
        reductions.append(lambda e: sp.expand(e.rewrite(sp.floor)))
    exact = len(reductions)
    # SymPy's integrate (through doit or simplify) is not trusted: an ∫ is reduced only by the exact rewrites above.
    if trust_simplify and _forward_ranges(expr) and _gamma_rewrites_hold(expr) and not expr.has(sp.Integral) and \
            not _bound_inside(expr):
        reductions.append(sp.simplify)
        if expr.has(sp.Sum, sp.Product):
            reductions.append(lambda e: sp.simplify(e.doit()))
        if expr.has(sp.Piecewise, sp.Max, sp.Min, sp.Abs, sp.sign, sp.Heaviside):
            reductions.append(lambda e: sp.simplify(sp.piecewise_fold(e.rewrite(sp.Piecewise))))
    for k, reduce in enumerate(reductions):
        if exact_tried and k < exact:
            continue
        try:
            if reduce(expr) == 0:
                return "exact" if k < exact else "simplify"
        except Exception:
            continue
    return ""


def identity(lhs: Any, rhs: Any, *, probes: int = 3, budget: float = BUDGET_S) -> tuple[bool, str]:
    """Decide ``lhs == rhs`` for all values of the free symbols; never raises, never uses more than
    ``budget`` seconds of CPU time (plus _HANDOVER_S for a C call), in any thread, whatever the machine's
    load. Calls from several threads are served one at a time; a call's budget starts when its turn comes.

    True only when the shapes match, no probe refutes it, both sides are shown defined everywhere
    and the difference reduces to zero. The detail says which stage decided. The work runs in a
    worker process that is killed at the budget (see the module docstring).
    """
    try:
        return _isolated(lhs, rhs, probes, budget)
    except Exception as exc:  # a check that cannot run is a failed check, never a crash
        return False, f"check raised {type(exc).__name__}: {_message(exc)}"


def _guarded(lhs: Any, rhs: Any, probes: int, budget: float) -> tuple[bool, str]:
    """The decision itself, in the process that runs it; SIGPROF stops Python-level overruns politely
    (the worker survives); _cpu_limit and the caller's backstop stop the rest."""
    try:
        try:
            with _deadline(budget):
                return _identity(lhs, rhs, probes)
        except _OutOfTime:
            return False, f"undecided within the budget of {budget:g} s of CPU time"
    except _OutOfTime:  # the alarm landed while the deadline was being disarmed
        return False, f"undecided within the budget of {budget:g} s of CPU time"
    except Exception as exc:
        return False, f"check raised {type(exc).__name__}: {_message(exc)}"


# --------------------------------------------------------------------------- the worker process
#
# The budget is CPU time, not wall-clock time, so a verdict does not depend on how loaded the machine is.
# Each identity runs in a worker process, reused across calls (its SymPy cache stays warm). Inside it,
# ITIMER_PROF raises _OutOfTime when the call has used its budget (a Python-level overrun: the worker
# answers "undecided" and survives), and at the budget plus _HANDOVER_S ITIMER_VIRTUAL (and RLIMIT_CPU
# behind it) ends the worker by a signal left to its default action, inside a C call that no Python handler
# can interrupt (math.gcd on huge integers, an exact power). A worker that stops computing without answering (blocked, stopped, deadlocked) is killed by the
# caller after a wall-clock backstop of _BACKSTOP_FACTOR times the budget: a computing worker meets its CPU
# budget long before that unless it gets under 1/_BACKSTOP_FACTOR of a core. A killed worker is replaced
# on the next call.
#
# Forking. Workers are forked by a zygote: a process forked when this module is imported, which then only
# ever forks, so it stays single-threaded and a worker never inherits a lock that another thread held at
# the fork (the deadlock os.fork warns of in a process running JAX or torch thread pools). The zygote is
# as safe as the importer was at import time: import proofs before starting threads. A process that is
# itself a fork of the importer gets a zygote of its own, forked from it on its first identity.
#
# Transport. The arguments travel pickled; unpickling rebuilds SymPy objects through their constructors,
# which evaluate (an unevaluated x·x⁻¹ would arrive as 1), so each SymPy object with arguments is sent as
# its class and arguments and rebuilt unevaluated, and the worker compares a fingerprint (the objects'
# hashes, which a fork shares) with the one the caller took, refusing a mismatch. An input that still
# cannot travel faithfully (a list subclass, a mutable array) runs in a process forked from the caller for
# that one call, which inherits it as it is; that fork is the one not made by the zygote: its child runs
# only SymPy, pickle and os.write, and one that deadlocks on an inherited lock meets the wall-clock
# backstop and answers "undecided", never "True".
_HANDOVER_S = 0.5  # CPU seconds past the budget before a worker stuck in a C call is ended
_BACKSTOP_FACTOR = 30  # the wall-clock backstop, in budgets


def _backstop(budget: float) -> float | None:
    return _BACKSTOP_FACTOR * budget + _HANDOVER_S if budget else None


class _Opaque(Exception):
    """An input the fingerprint does not cover: it runs in a process forked for the call."""


def _fingerprint(x: Any) -> Any:
    if isinstance(x, sp.Basic):
        return "b", type(x).__name__, hash(x)
    if isinstance(x, sp.MatrixBase):
        return "m", type(x).__name__, x.shape, tuple(_fingerprint(e) for e in x)
    if type(x) in (list, tuple):
        return type(x).__name__, tuple(_fingerprint(e) for e in x)
    if type(x) in (int, float, complex, bool, fractions.Fraction):
        return "n", type(x).__name__, repr(x)
    raise _Opaque(type(x).__name__)


def _unevaluated(cls: type, args: tuple) -> sp.Basic:
    with sp.evaluate(False):
        return cls(*args)


def _with_limits(cls: type, args: tuple) -> sp.Basic:
    # Sum, Product and Integral built unevaluated would wrap their summand as Mul(1, f) (their orientation
    # factor), and built evaluated would denest and fold Piecewise: either way not the object sent, and the
    # fingerprint would send the call to a forked process. Their constructor, for arguments it already
    # made, stores exactly these two attributes (sympy.concrete.expr_with_limits).
    obj = sp.Expr.__new__(cls)
    obj._args = args
    obj.is_commutative = args[0].is_commutative
    return obj


class _AsBuilt(pickle.Pickler):
    """Pickles a SymPy object with arguments as its class and arguments, rebuilt unevaluated."""

    def reducer_override(self, obj):
        if isinstance(obj, sp.Basic) and not isinstance(obj, type) and obj.args and \
                not isinstance(obj, sp.MatrixBase):
            if isinstance(obj, sp.concrete.expr_with_limits.ExprWithLimits):
                return _with_limits, (type(obj), obj.args)
            return _unevaluated, (type(obj), obj.args)
        return NotImplemented


def _dumps(x: Any) -> bytes:
    out = io.BytesIO()
    _AsBuilt(out, protocol=pickle.HIGHEST_PROTOCOL).dump(x)
    return out.getvalue()


@contextmanager
def _cpu_limit(budget: float):
    """End this process once it has used ``budget`` + _HANDOVER_S more CPU seconds, however it is occupied:
    SIGVTALRM, left to its default action (terminate), when its user time has (to a clock tick), and
    SIGXCPU from RLIMIT_CPU (whole seconds, user and system time) as a second line; no core file."""
    if not budget:
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    limit = math.ceil(time.process_time() + budget + _HANDOVER_S)
    resource.setrlimit(resource.RLIMIT_CPU, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
    previous = signal.signal(signal.SIGVTALRM, signal.SIG_DFL)
    signal.setitimer(signal.ITIMER_VIRTUAL, budget + _HANDOVER_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


# Frames a worker may nest: SymPy compares and walks trees recursively, several frames a level, so two equal but
# distinct 300-deep expressions (rebuilt apart on the way in) met the default 1000 at a depth that depended on the
# process's stack at the call (a flaky RecursionError in the battery under xdist). Only workers and forked children
# raise it; a C stack that still overflows kills the worker, which answers "undecided", never "True".
_WORKER_RECURSION = 6000


def _run(lhs: Any, rhs: Any, probes: int, budget: float) -> tuple[bool, str]:
    """The decision inside a worker or a forked child."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), _WORKER_RECURSION))
    with _cpu_limit(budget):
        return _guarded(lhs, rhs, probes, budget)


def _died(budget: float, status: int, cpu: float) -> str:
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGVTALRM, signal.SIGXCPU):
        return f"undecided within the budget of {budget:g} s of CPU time (its process was stopped after {cpu:.1f} s)"
    return f"the identity's process ended without an answer (status {status}, after {cpu:.1f} s of CPU time)"


def _late(budget: float, cpu: float) -> str:
    return (f"undecided: no answer within the wall-clock backstop of {_backstop(budget):g} s "
            f"(its process was stopped after {cpu:.1f} s of its budget of {budget:g} s of CPU time)")


class _Zygote:
    """The single-threaded process that forks the workers and reaps them (see above)."""

    def __init__(self):
        self.pid, self.sock, self.owner = 0, None, 0

    def _start(self) -> None:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                mine.close()
                signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's to handle
                _zygote(theirs)
                code = 0
            finally:
                os._exit(code)
        theirs.close()
        self.pid, self.sock, self.owner = pid, mine, os.getpid()

    def fork(self) -> tuple[int, multiprocessing.connection.Connection]:
        """A new worker: its pid and the caller's end of its pipe."""
        if self.owner != os.getpid():  # inherited from the process this one is a fork of: not ours
            if self.sock is not None:
                self.sock.close()
            self._start()
        self.sock.send(b"F")
        msg, fds, _, _ = socket.recv_fds(self.sock, 16, 1)
        if len(msg) != 8 or len(fds) != 1:
            raise OSError("the zygote did not hand over a worker")
        return struct.unpack("<q", msg)[0], multiprocessing.connection.Connection(fds[0])

    def reap(self, pid: int) -> tuple[int, float]:
        """A worker's exit status and CPU seconds, once it has ended (the zygote waits for it)."""
        self.sock.send(b"R" + struct.pack("<q", pid))
        return struct.unpack("<qd", self.sock.recv(16))


def _zygote(sock: socket.socket) -> None:
    """The zygote's loop: fork a worker ("F") or reap one ("R" + pid) until the caller's end closes."""
    while True:
        req = sock.recv(9)
        if not req:
            return
        if req[:1] == b"F":
            ours, theirs = socket.socketpair()
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    sock.close()
                    ours.close()
                    _serve(multiprocessing.connection.Connection(theirs.detach()))
                    code = 0
                finally:
                    os._exit(code)
            theirs.close()
            socket.send_fds(sock, [struct.pack("<q", pid)], [ours.fileno()])
            ours.close()
        elif req[:1] == b"R":
            try:
                _, status, usage = os.wait4(struct.unpack("<q", req[1:9])[0], 0)
                cpu = usage.ru_utime + usage.ru_stime
            except ChildProcessError:
                status, cpu = -1, 0.0
            sock.send(struct.pack("<qd", status, cpu))


class _Worker:
    def __init__(self):
        self.lock = threading.Lock()
        self.pid = 0
        self.conn = None
        self.owner = 0  # the process the worker answers to
        self.forks = 0  # how many workers were started (a restart after a kill counts)
        self.cpu = 0.0  # the worker's CPU seconds up to its last answer
        self.last_cpu = 0.0  # the CPU seconds of the last call (answered or stopped), hand-over included
        self.spent = 0.0  # CPU seconds of every call by every worker and forked child of this process

    def stop(self, kill: bool = True) -> tuple[int, float]:
        """End the worker; its exit status and the CPU seconds of its last call."""
        status, cpu = -1, 0.0
        if self.pid and self.owner == os.getpid():
            try:
                if kill:
                    os.kill(self.pid, signal.SIGKILL)
                status, cpu = _ZYGOTE.reap(self.pid)
            except OSError:
                pass
            self.conn.close()
        self.pid, self.conn = 0, None
        return status, max(cpu - self.cpu, 0.0)

    def ask(self, payload: bytes, budget: float) -> tuple[bool, str] | None:
        """The worker's answer, None when the inputs did not arrive faithfully."""
        with self.lock:
            if self.pid and self.owner != os.getpid():  # a fork of the caller: the worker is not ours
                self.conn.close()
                self.pid, self.conn = 0, None
            if not self.pid:
                self.pid, self.conn = _ZYGOTE.fork()
                self.owner, self.cpu = os.getpid(), 0.0
                self.forks += 1
            try:
                self.conn.send_bytes(payload)
                if self.conn.poll(_backstop(budget)):
                    answer, cpu = pickle.loads(self.conn.recv_bytes())
                    self.cpu, self.last_cpu = cpu, cpu - self.cpu
                    self.spent += self.last_cpu
                    return answer
            except (EOFError, OSError):  # the worker ended: its CPU limit, a crash, a kill from outside
                status, self.last_cpu = self.stop(kill=False)
                self.spent += self.last_cpu
                return False, _died(budget, status, self.last_cpu)
            _, self.last_cpu = self.stop()
            self.spent += self.last_cpu
            return False, _late(budget, self.last_cpu)


_ZYGOTE = _Zygote()
_WORKER = _Worker()


def _serve(conn) -> None:
    """The worker's loop: answer each identity until the caller's end of the pipe closes."""
    while True:
        try:
            data = conn.recv_bytes()
        except (EOFError, OSError):
            return
        try:
            lhs, rhs, probes, budget, want = pickle.loads(data)
            same_order_of_facts()
            answer = _run(lhs, rhs, probes, budget) if _fingerprint((lhs, rhs)) == want else None
        except Exception:
            answer = None
        conn.send_bytes(pickle.dumps((answer, time.process_time())))


def cpu_seconds() -> float:
    """CPU seconds used by this process and by the identities it asked: a clock that load does not speed up."""
    return time.process_time() + _WORKER.spent


def _isolated(lhs: Any, rhs: Any, probes: int, budget: float) -> tuple[bool, str]:
    try:
        payload = _dumps((lhs, rhs, probes, budget, _fingerprint((lhs, rhs))))
    except Exception:  # _Opaque, or an object pickle refuses
        payload = None
    if payload is not None:
        answer = _WORKER.ask(payload, budget)
        if answer is not None:
            return answer
    return _forked(lhs, rhs, probes, budget)


def _forked(lhs: Any, rhs: Any, probes: int, budget: float) -> tuple[bool, str]:
    """The identity in a process forked from the caller for this call alone (see above)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            data = pickle.dumps(_run(lhs, rhs, probes, budget))
            while data:
                data = data[os.write(write, data):]
        finally:
            os._exit(0)
    os.close(write)
    backstop = _backstop(budget)
    deadline = None if backstop is None else time.monotonic() + backstop
    chunks, late = [], False
    try:
        while True:
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0 or not select.select([read], [], [], wait)[0]:
                os.kill(pid, signal.SIGKILL)
                late = True
                break
            chunk = os.read(read, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read)
        _, status, usage = os.wait4(pid, 0)
    cpu = usage.ru_utime + usage.ru_stime
    _WORKER.spent += cpu
    if late:
        return False, _late(budget, cpu)
    try:
        return pickle.loads(b"".join(chunks))
    except Exception:
        return False, _died(budget, status, cpu)


def _plain(x: Any) -> Any:
    """Python and array-library numbers and arrays as SymPy sees them (1j, Fraction(1, 2), an
    ndarray via its ``tolist``), without importing any array library."""
    if isinstance(x, (sp.Basic, sp.MatrixBase, sp.NDimArray, list, tuple)):
        return x
    if isinstance(x, numbers.Number):
        return sp.sympify(x)
    if hasattr(x, "tolist") and hasattr(x, "shape"):
        shape = tuple(int(d) for d in x.shape)
        return sp.ImmutableDenseNDimArray(x.tolist(), shape) if shape else x.tolist()
    return x


def _identity(lhs: Any, rhs: Any, probes: int) -> tuple[bool, str]:
    lhs, rhs = _plain(lhs), _plain(rhs)
    try:
        a_shape, b_shape = _shape(lhs), _shape(rhs)
        if a_shape != b_shape:
            return False, f"shapes differ: {a_shape or 'scalar'} against {b_shape or 'scalar'}"
        a, b = _entries(lhs), _entries(rhs)
    except ValueError as exc:
        return False, _message(exc)
    for e in a + b:
        why = _reserved_dummies(e)
        if why:
            return False, f"not shown defined: {why}"
    differ = [k for k, (x, y) in enumerate(zip(a, b)) if x != y]  # identical entries cannot be refuted
    # Exact reductions first: each is valid wherever both sides are defined, so with the domain check they
    # are a proof, and probes (which refute fast, and are what lets simplify be trusted) add nothing to it.
    # Probes run only when some entry does not reduce exactly; the exact reductions are not tried twice.
    exact = set()
    for k in differ:
        if not _reduces_to_zero(a[k] - b[k], trust_simplify=False):
            break
        exact.add(k)
    failed = differ[len(exact)] if len(exact) < len(differ) else None  # its exact reductions were tried
    if failed is None:
        refuted, decided, probed = None, 0, ("sides identical, not probed" if not differ
                                             else "reduced exactly, so not probed")
    else:
        refuted, decided, probed = _probe([a[k] for k in differ], [b[k] for k in differ], probes)
    if refuted:
        return False, refuted
    why = _undefined_somewhere(list({id(e): e for e in a + b}.values()))  # an entry that is the other side: once
    if why:
        return False, f"not shown defined: {why} ({probed})"
    generic = False
    for k, (x, y) in enumerate(zip(a, b)):
        how = "exact" if x == y or k in exact else \
            _reduces_to_zero(x - y, trust_simplify=decided > 0, exact_tried=k == failed)
        if not how:
            entry = f" (entry {k})" if len(a) > 1 else ""
            unprobed = "; simplify is not trusted without probes" if not decided else ""
            return False, f"difference does not simplify to 0{entry}: {sp.sstr(x - y)[:200]} ({probed}{unprobed})"
        generic |= how == "simplify"
    if generic:
        # simplify applies rewrites that fail for some values (binomial symmetry at negative n):
        # its 0 must survive a second, larger round of probes at fresh points.
        refuted, _, more = _probe([a[k] for k in differ], [b[k] for k in differ], _CONFIRM_PROBES, salt=b"confirm")
        if refuted:
            return False, f"simplify reached 0, but {refuted}"
        probed += f"; simplify's 0 confirmed: {more}"
    return True, (f"identity ({len(a)} entr{'y' if len(a) == 1 else 'ies'}; {probed}; "
                  "defined everywhere; difference simplified to 0)")


_ZYGOTE._start()  # now, while the importer is (ideally) still single-threaded
