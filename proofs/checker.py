"""The independent proof checker: replays a certificate and says whether it proves its statement.

"Proved" means exactly what :func:`check` returns. The checker reads only the certificate (a plain
JSON document, see ``proofs/certificate.py`` for how theorems write one) and uses only SymPy and the
identity engine (``proofs/identity.py``). It imports no theorem, catalogue, report or builder code.

A step that passed, rests on no hypothesis and on no premise that mentions a symbol x (other than as
that premise's own ∀-symbol) may be *generalised* over x (its ``forall``): a later rewrite then uses
it as a pattern, as it uses a premise over its ∀-symbols. Sound because every rule decides its
conclusion for every admissible value of its free symbols; refused for a symbol whose assumptions
the pattern cannot enforce.

A certificate lists *premises* (definitions, assumptions of the claim, cited theorems, induction
hypotheses) and *steps*. Each step is one application of a rule from the fixed set ``RULES``; its
conclusion is a relation, and the checker recomputes whether the rule yields that conclusion from
the step's premises. A statement conjunct is established only by a step that passed, whose
conclusion is that conjunct, and that depends on no undischarged induction hypothesis.

Trust base (what a "proved" verdict still rests on):
  1. this module's rules, as written here;
  2. SymPy: parsing of the certificate's ``srepr`` expressions (a whitelisted, code-free parser:
     only SymPy constructors and literals; relations and connectives are kept unevaluated, all else
     is built as SymPy builds it, so the tree read is the tree the theorem built), structural equality, ``xreplace``/``replace``, its assumptions system (``is_nonnegative``
     and friends, used by the ``sign`` rule), and the identity engine's simplifications;
  3. the premises the verdict lists: definitions that are not conservative (their head occurs in the
     statement or in another premise), assumptions, cited theorems, and named computations, which
     no rule covers and which the checker takes as recorded;
  4. that construction-time evaluation by SymPy in the theorem (x/x built as 1) is sound: no checker
     can see an expression before it was built;
  5. in-process use (``Derivation.verified``) trusts that theorem code does not patch this module;
     ``attention-proofs check FILE`` replays in a fresh process.
"""
from __future__ import annotations

import ast
import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import sympy as sp
from sympy.printing.repr import ReprPrinter

from proofs.identity import _BOUND_BASE, _BOUND_SPAN, identity
from proofs.identity import _canonical as _engine_canonical

FORMAT = "attention-proofs/certificate"
VERSION = 1

PREMISE_KINDS = ("definition", "assumption", "cited", "hypothesis")
RULES = {
    "identity": "lhs = rhs for every admissible value of the free symbols, decided by the identity engine",
    "rewrite": "substitute the premise equations (lhs → rhs, patterns over their `forall` symbols) into both "
               "sides, then decide the relation as `identity` (=) or `sign` (≤, <) does",
    "chain": "a = b, b ≤ c, c < d, … gives a < d: consecutive sides equal, one direction, strict if any step is",
    "sign": "a ≤ b (or <) because b − a is shown ≥ 0 (> 0): each factor of its numerator and denominator is signed "
            "by the symbols' assumptions (an even power only of a real factor) or as X + (something ≥ 0) for a premise "
            "X > 0 / X ≥ 0; or because b − a equals (identity) a stated sum of terms each so shown",
    "bound": "a + c ≤ b + d from a ≤ b and c ≤ d; a·c ≤ b·d from 0 ≤ a ≤ b and 0 ≤ c ≤ d",
    "induction": "P(n) for every integer n ≥ n₀ from P(n₀) and from P(k) under the hypothesis P(k − 1); the "
                 "checker builds P(n₀), P(k − 1) and P(k) from P itself",
    "linearity": "Σ (finite ranges) and a declared expectation E distribute over sums and pull out factors free of the "
                 "index (Σ) or of the declared random symbols (E, listed in the verdict as an assumption); indices of "
                 "one same range are taken in a canonical order (finite sums commute); then `identity`",
    "enumeration": "P(v) for each v = lo..hi (at most 4096 instances), each decided as `identity` or by "
                   "evaluation; the conclusion is the explicit conjunction, never a symbolic-size statement",
    "truncation": "substitute the premise equations as `rewrite` does, then Σ_{k=lo}^{hi} [k ≤ m]·f(k) = Σ_{k=lo}^{m} f(k) "
                  "wherever m is an integer with lo − 1 ≤ m ≤ hi shown under the symbols' assumptions, and a Σ or Π "
                  "whose upper limit is the step's `peel` gives its last term (hi − lo ≥ 0 shown), and a Σ (Π) over "
                  "lo..lo − 1 is 0 (1); then `identity`",
    "instance": "a premise (or generalised step) over ∀-symbols, at values that satisfy each symbol's assumptions",
    "citation": "a conjunct of another certificate's statement, that certificate being checked here too",
    "generalisation": "an earlier step's equation, which then rewrites as a pattern over the named symbols (∀ within "
                      "every assumption they were declared with): refused if it rests on an open hypothesis, a "
                      "computation, a premise that mentions them, or a citation whose premises do",
    "computation": "a named computation no rule covers (file:function): taken as recorded, and listed",
}
MAX_ENUMERATION = 4096
_STRICT = (sp.StrictLessThan, sp.StrictGreaterThan)


# --------------------------------------------------------------------------- reading expressions

def _classes(root: type) -> dict[str, type]:
    """Every SymPy class srepr may name (Basic's subclasses, by name; a name two classes share is left out)."""
    seen: dict[str, type] = {}
    clash: set[str] = set()
    todo = [root]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            todo.append(sub)
            if not (sub.__module__ or "").startswith("sympy."):
                continue  # a class defined outside SymPy (a theorem's own) is never constructed from a certificate
            if sub.__name__ in seen and seen[sub.__name__] is not sub:
                clash.add(sub.__name__)
            seen[sub.__name__] = sub
    return {k: v for k, v in seen.items() if k not in clash}


_ALLOWED: dict[str, Any] = _classes(sp.Basic)
_ALLOWED.update({name: getattr(sp, name) for name in dir(sp) if isinstance(getattr(sp, name, None), type)
                 and issubclass(getattr(sp, name), (sp.Basic, sp.MatrixBase))})
# Singletons srepr writes as calls (Zero(), Pi(), …); the classes above cover every other name.
_ALLOWED.update({name: (lambda value=value: value) for name, value in {
    "BooleanTrue": sp.true, "BooleanFalse": sp.false, "Infinity": sp.oo, "NegativeInfinity": -sp.oo,
    "ComplexInfinity": sp.zoo, "NaN": sp.nan, "Pi": sp.pi, "Exp1": sp.E, "ImaginaryUnit": sp.I, "Zero": sp.S.Zero,
    "One": sp.S.One, "NegativeOne": sp.S.NegativeOne, "Half": sp.S.Half, "EmptySet": sp.S.EmptySet,
    "EulerGamma": sp.EulerGamma, "Naturals0": sp.S.Naturals0, "Reals": sp.S.Reals, "Integers": sp.S.Integers,
    "Naturals": sp.S.Naturals}.items()})
_ALLOWED.update({"Function": sp.Function, "Str": sp.core.symbol.Str, "oo": sp.oo, "zoo": sp.zoo, "nan": sp.nan,
                 "pi": sp.pi, "E": sp.E, "I": sp.I, "true": sp.true, "false": sp.false})


# Relations and connectives are read as written (0 = 0 stays a relation); everything else is built
# as SymPy builds it, so the tree read is the tree the theorem built (srepr's round trip).
_UNEVALUATED = (sp.core.relational.Relational, sp.And, sp.Or, sp.Not, sp.Equivalent, sp.Implies)


_NAMED = ("Symbol", "Dummy", "Function", "Str", "Wild", "Float")  # constructors whose first argument is a string


class CertificateError(ValueError):
    """The certificate is not a well-formed certificate (not: its proof is wrong)."""


def _node(n: ast.AST) -> Any:
    if isinstance(n, ast.Constant) and isinstance(n.value, (int, float, str, bool, type(None))):
        return n.value
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
        return -_node(n.operand)
    if isinstance(n, (ast.List, ast.Tuple)):
        return [_node(e) for e in n.elts]
    if isinstance(n, ast.Name) and n.id in _ALLOWED:
        value = _ALLOWED[n.id]
        return value() if callable(value) and not isinstance(value, type) else value
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in _ALLOWED:
        f = _ALLOWED[n.func.id]
        args = [_node(a) for a in n.args]
        kwargs = {k.arg: _node(k.value) for k in n.keywords}
        strings = [a for a in args + list(kwargs.values()) if isinstance(a, str)]
        if strings and (n.func.id not in _NAMED or any(isinstance(v, str) for v in kwargs.values())
                        or any(isinstance(a, str) for a in args[1:])):
            # SymPy would parse (run) a string anywhere else: sin("...") evaluates Python code
            raise CertificateError(f"a string is only a name or a Float's digits, not an argument of {n.func.id}")
        if isinstance(f, type) and issubclass(f, _UNEVALUATED):
            return f(*args, **kwargs, evaluate=False)
        return f(*args, **kwargs)
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Call):  # Function('f')(x): an applied function
        return _node(n.func)(*[_node(a) for a in n.args])
    raise CertificateError(f"expression holds something that is not a SymPy constructor: {ast.dump(n)[:120]}")


@lru_cache(maxsize=None)
def read(text: str) -> Any:
    """The SymPy object a ``srepr`` string writes (no code is run: only SymPy constructors and literals,
    and a string only as the name of a Symbol, Dummy, Function, Str or Wild, or the digits of a Float)."""
    return _parse(text)


def _parse(text: str) -> Any:
    if not isinstance(text, str):
        raise CertificateError(f"an expression must be an srepr string, got {type(text).__name__}")
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError as exc:
        raise CertificateError(f"unreadable expression {text[:80]!r}: {exc.msg}") from None
    try:
        out = _node(tree)
        if isinstance(out, sp.Basic) and any(_RENAMED <= d.dummy_index < _RENAMED + 10**6 for d in out.atoms(sp.Dummy)):
            raise CertificateError("a Dummy in the checker's reserved index range (its bound-index renaming)")
        return out
    except CertificateError:
        raise
    except Exception as exc:
        raise CertificateError(f"expression {text[:80]!r} does not build: {type(exc).__name__}: {exc}") from None


def write(expr: Any) -> str:
    """The srepr a certificate stores for ``expr``."""
    return _Writer().doprint(expr)


class _Writer(ReprPrinter):
    """srepr, with each undefined function's assumptions written where it is used (srepr drops them)."""

    def _print_FunctionClass(self, expr):
        if issubclass(expr, sp.core.function.AppliedUndef):
            facts = getattr(expr, "_kwargs", {})
            return f"Function({expr.__name__!r}" + "".join(f", {k}={v!r}" for k, v in sorted(facts.items())) + ")"
        return expr.__name__


def read_in(cert: dict, text: str) -> Any:
    """An expression of ``cert`` (kept for callers: every expression now carries its own assumptions)."""
    return read(text)


# --------------------------------------------------------------------------- relations

def _relation(x: Any) -> bool:
    return isinstance(x, (sp.Eq, sp.Le, sp.Lt, sp.Ge, sp.Gt, sp.Ne))


def _oriented(rel: Any) -> tuple[str, Any, Any]:
    """("=", a, b), ("≤", small, big) or ("<", small, big): ≥ and > turned around."""
    if isinstance(rel, sp.Eq):
        return "=", rel.lhs, rel.rhs
    if isinstance(rel, sp.Le):
        return "≤", rel.lhs, rel.rhs
    if isinstance(rel, sp.Lt):
        return "<", rel.lhs, rel.rhs
    if isinstance(rel, sp.Ge):
        return "≤", rel.rhs, rel.lhs
    if isinstance(rel, sp.Gt):
        return "<", rel.rhs, rel.lhs
    raise CertificateError(f"not an equation or inequality: {sp.sstr(rel)[:80]}")


def _same(a: Any, b: Any) -> bool:
    """Structural equality; an equation also matches its mirror, a ≥ b matches b ≤ a."""
    if a == b:
        return True
    if _relation(a) and _relation(b) and not isinstance(a, sp.Ne) and not isinstance(b, sp.Ne):
        ra, rb = _oriented(a), _oriented(b)
        if ra == rb:
            return True
        return ra[0] == rb[0] == "=" and ra[1] == rb[2] and ra[2] == rb[1]
    return False


def substitute(statement: Any, mapping: dict) -> Any:
    """``statement`` with ``mapping`` put in; relations and connectives stay unevaluated (P(1) of
    Σ_{i≤n} i = n(n + 1)/2 is the relation Σ_{i≤1} i = 1, not True)."""
    if isinstance(statement, _UNEVALUATED):
        return statement.func(*[substitute(a, mapping) for a in statement.args], evaluate=False)
    return statement.xreplace(mapping)


def conjuncts(statement: Any) -> tuple:
    if statement is None or statement is sp.true:
        return ()
    return tuple(sp.And.make_args(statement)) if isinstance(statement, sp.And) else (statement,)


_IDENTITIES: dict[tuple, tuple[bool, str]] = {}


def decide_identity(lhs: Any, rhs: Any) -> tuple[bool, str]:
    """The engine's verdict, memoised per process on the exact expressions (as written, with the
    functions' assumptions): the engine is deterministic."""
    key = (write(lhs), write(rhs))
    if key not in _IDENTITIES:
        _IDENTITIES[key] = identity(lhs, rhs)
    return _IDENTITIES[key]


def _facts(premises: list) -> list[tuple[Any, bool]]:
    """Each premise a < b / a ≤ b as (b − a, strict): a quantity known > 0 (or ≥ 0)."""
    out = []
    for p in premises:
        rel, small, big = _oriented(p)
        if rel == "=":
            raise CertificateError("sign and bound rules take inequalities as premises, not equations")
        out.append((sp.expand(big - small), rel == "<"))
    return out


def _sign(f: Any, facts: list) -> str | None:
    """">" or "≥" when f is shown positive / non-negative, "<" or "≤" for −f; None when not shown.
    Shown: by SymPy's assumptions, or as f = X + (something ≥ 0) for a known X > 0 (≥ 0)."""
    for g, flipped in ((sp.expand(f), False), (sp.expand(-f), True)):
        found = ">" if g.is_positive else None
        for x, strict in ([] if found else facts):
            rest = sp.expand(g - x)
            if rest == 0 or rest.is_nonnegative:
                found = ">" if strict or rest.is_positive else "≥"
                if found == ">":
                    break
        if found is None and g.is_nonnegative:
            found = "≥"
        if found:
            return {">": "<", "≥": "≤"}[found] if flipped else found
    return None


def _shown_sign(e: Any, facts: list) -> str | None:
    """">" / "≥" when e is shown positive / non-negative: directly, or from the signs of the factors
    of its numerator and denominator (each factor shown by _sign; a denominator factor must be non-zero)."""
    direct = _sign(e, facts)
    if direct in (">", "≥"):
        return direct
    num, den = sp.fraction(sp.together(e))
    sign, strict = 1, True
    for part, is_den in ((num, False), (den, True)):
        coeff, factors = sp.factor_list(sp.expand(part))
        if coeff == 0:
            return None if is_den else "≥"
        if not coeff.is_number:
            return None
        sign *= 1 if coeff > 0 else -1
        for f, mult in factors:
            s = _sign(f, facts)
            if s is None:
                if mult % 2 == 0 and not is_den and f.is_extended_real:
                    strict = False  # an even power of a real factor is ≥ 0
                    continue
                return None
            if is_den and s in ("≥", "≤"):
                return None  # a denominator must be shown non-zero
            sign *= 1 if s in (">", "≥") or mult % 2 == 0 else -1
            strict &= s in (">", "<")
    if sign < 0:
        return None
    return ">" if strict else "≥"


def _decide_order(rel: str, small: Any, big: Any, premises: list, terms: list | None = None) -> tuple[bool, str]:
    """small ≤ big (< when rel is "<") from the sign of big − small, under the premises' facts."""
    strict = rel == "<"
    facts = _facts(premises)
    # Bound indices carry what their ranges imply, not what they were declared (a "positive" index over −5..−1).
    diff = _canonical(big - small)
    if terms is not None:
        ok, why = decide_identity(sp.Add(*terms), diff)
        if not ok:
            return False, f"the stated terms do not sum to the difference: {why}"
        signs = [_shown_sign(t, facts) for t in terms]
        if any(s not in (">", "≥") for s in signs):
            bad = [sp.sstr(t)[:60] for t, s in zip(terms, signs) if s not in (">", "≥")]
            return False, f"terms not shown ≥ 0: {', '.join(bad)}"
        if strict and ">" not in signs:
            return False, "no term shown > 0 for a strict inequality"
        return True, f"difference = sum of {len(terms)} terms, each ≥ 0"
    s = _shown_sign(diff, facts)
    if s == ">" or (s == "≥" and not strict):
        return True, f"b − a {s} 0 under the assumptions" + (f" and {len(premises)} premise(s)" if premises else "")
    return False, f"{sp.sstr(diff)[:120]} not shown {'> 0' if strict else '≥ 0'} under the assumptions"


# --------------------------------------------------------------------------- rewriting

_RENAMED = 5_210_000_000  # the checker's bound-index Dummies; a certificate may not hold one (read refuses it)


def _canonical(expr: Any) -> Any:
    """Bound indices renamed by nesting height and position (alpha-renaming, with the facts each range
    implies), as the engine renames them, but to the checker's own Dummies: the engine refuses its own
    reserved Dummies as input, and a certificate cannot forge the checker's."""
    if not isinstance(expr, sp.Basic):
        return expr
    out = _engine_canonical(expr)
    moved = {d: sp.Dummy(d.name, dummy_index=_RENAMED + d.dummy_index - _BOUND_BASE, **d.assumptions0)
             for d in out.atoms(sp.Dummy) if _BOUND_BASE <= d.dummy_index < _BOUND_BASE + _BOUND_SPAN}
    return out.xreplace(moved) if moved else out


_ENFORCED = ("integer", "positive", "nonnegative", "negative", "nonpositive", "real", "extended_real")


def _pattern(eq: Any, forall: tuple) -> tuple[Any, Any]:
    """An equation's sides with its ∀-symbols turned into Wilds that match only admissible values."""
    if not forall:
        return eq.lhs, eq.rhs
    wilds = {}
    for s in forall:
        facts = dict(getattr(s, "_assumptions_orig", s.assumptions0))  # every fact it was declared with must hold
        wilds[s] = sp.Wild(f"{s.name}_w", properties=[lambda x, facts=facts: all(
            getattr(x, f"is_{k}", None) is v for k, v in facts.items())])
    return eq.lhs.xreplace(wilds), eq.rhs.xreplace(wilds)


def _rewrite(expr: Any, equations: list[tuple[Any, tuple]]) -> Any:
    """Every premise equation applied left to right until nothing changes (at most 16 rounds)."""
    out = _canonical(expr)
    # Bound indices named as in ``out`` (alpha-renaming), so a premise's Σ_k meets the expression's Σ_k; built once.
    # The right side's bound indices are made fresh, so what it inserts cannot capture a renamed index around it.
    patterns = [(_pattern(sp.Eq(_canonical(eq.lhs), _fresh(_canonical(eq.rhs)), evaluate=False), forall), forall)
                for eq, forall in equations]
    for _ in range(16):
        before = out
        for (lhs, rhs), forall in patterns:
            if isinstance(lhs, sp.Lambda) or isinstance(rhs, sp.Lambda):
                raise CertificateError("a rewrite premise may not be a Lambda: state it over ∀-symbols")
            if isinstance(lhs, sp.core.function.UndefinedFunction):
                raise CertificateError("define a function by an equation over ∀-symbols, f(x) = …")
            # exact=False: a value 0 for one of several ∀-symbols is an instance too (Q_{p,0})
            new = out.replace(lhs, rhs, exact=False) if forall else out.xreplace({lhs: rhs}) if out.has(lhs) else out
            if new != out:  # renamed at once, so the next premise meets canonical sums (fresh first: no capture)
                out = _canonical(_fresh(new))
        if out == before:
            break
    return out


def _peel(expr: Any, hi: Any) -> Any:
    """Every one-index Σ or Π whose upper limit is ``hi`` and whose range is shown non-empty (hi − lo ≥ 0), with
    its last term taken out: Σ_{k=lo}^{hi} f(k) = Σ_{k=lo}^{hi−1} f(k) + f(hi) (Π alike)."""
    if hi is None:
        return expr

    def cut(s):
        if len(s.limits) != 1 or s.limits[0][2] != hi:
            return s
        k, lo, _ = s.limits[0]
        if not (k.is_integer and lo.is_integer and hi.is_integer and (hi - lo).is_nonnegative):
            return s
        rest, last = s.func(s.function, (k, lo, hi - 1)), s.function.xreplace({k: hi})
        return rest + last if isinstance(s, sp.Sum) else rest * last

    return expr.replace(lambda e: isinstance(e, (sp.Sum, sp.Product)), cut)


def _empty(expr: Any) -> Any:
    """A Σ over lo..lo − 1 is 0, a Π over it 1 (one index, the range written so)."""
    def cut(s):
        if len(s.limits) != 1 or sp.expand(s.limits[0][2] - s.limits[0][1] + 1) != 0:
            return s
        return sp.Integer(0) if isinstance(s, sp.Sum) else sp.Integer(1)

    return expr.replace(lambda e: isinstance(e, (sp.Sum, sp.Product)), cut)


def _truncate(expr: Any) -> Any:
    """Σ_{k=lo}^{hi} [k ≤ m]·f(k) → Σ_{k=lo}^{m} f(k) where m is an integer free of k and lo − 1 ≤ m ≤ hi is
    shown by the assumptions ([c] a Piecewise((x, c), (0, True)) factor, c linear in k with k's coefficient +1
    on its small side: k ≤ m, k < m + 1, m ≥ k, …). Exact under Karr's convention for those ranges."""
    def bound(cond, k):
        if not isinstance(cond, (sp.Le, sp.Lt, sp.Ge, sp.Gt)):
            return None
        rel, small, big = _oriented(cond)
        d = sp.expand(big - small)  # the condition is d ≥ 0 (d > 0 when strict)
        if sp.expand(d.diff(k)) != -1 or d.diff(k, 2) != 0:
            return None
        m = sp.expand(d + k) - (1 if rel == "<" else 0)
        return m if m.is_integer and not m.has(k) else None

    def cut(s):
        if len(s.limits) != 1:
            return s
        k, lo, hi = s.limits[0]
        if not (k.is_integer and lo.is_integer and hi.is_integer):
            return s
        factors = sp.Mul.make_args(s.function)
        for n, f in enumerate(factors):
            if not (isinstance(f, sp.Piecewise) and len(f.args) == 2 and f.args[1].expr == 0
                    and f.args[1].cond is sp.true):
                continue
            m = bound(f.args[0].cond, k)
            if m is None or not ((m - lo + 1).is_nonnegative and (hi - m).is_nonnegative):
                continue
            rest = sp.Mul(*(factors[:n] + factors[n + 1:])) * f.args[0].expr
            return sp.Sum(rest, (k, lo, m))
        return s

    return expr.replace(lambda e: isinstance(e, sp.Sum), cut)


def _fresh(expr: Any) -> Any:
    """``expr`` with the bound index of every Sum and Product renamed to a new Dummy of the same assumptions."""
    def rename(s):
        new = {lim[0]: sp.Dummy(str(lim[0]), **{k: v for k, v in lim[0].assumptions0.items() if v is not None})
               for lim in s.limits}
        return s.xreplace(new)

    return expr.replace(lambda e: isinstance(e, (sp.Sum, sp.Product)), rename)


# --------------------------------------------------------------------------- linearity

def _linear(expr: Any, randoms: set, operator: Any) -> Any:
    """Σ and E distributed over sums, constant factors pulled out; nothing else changes."""
    def random(e):
        return bool(e.free_symbols & randoms) or any(i.base.label in randoms or i.base in randoms
                                                     for i in e.atoms(sp.Indexed)) or (operator and e.has(operator))

    def split(node):
        if isinstance(node, sp.Sum) and not any(b.has(sp.oo, -sp.oo, sp.zoo) for lim in node.limits for b in lim[1:]):
            body = sp.expand(node.function)  # a finite sum only: splitting an infinite one may give ∞ − ∞
            bound = {lim[0] for lim in node.limits}
            if isinstance(body, sp.Add):
                return sp.Add(*(split(sp.Sum(t, *node.limits)) for t in body.args))
            const = [f for f in sp.Mul.make_args(body) if not (f.free_symbols & bound)]
            if const:
                rest = sp.Mul(*(f for f in sp.Mul.make_args(body) if f.free_symbols & bound))
                return sp.Mul(*const) * split(sp.Sum(rest, *node.limits))
            return node
        if operator is not None and isinstance(node, sp.core.function.AppliedUndef) and node.func == operator \
                and len(node.args) == 1:
            body = sp.expand(node.args[0])
            if isinstance(body, sp.Add):
                return sp.Add(*(split(operator(t)) for t in body.args))
            if isinstance(body, sp.Sum):  # E of a finite sum: the sum of the E's
                limits_ok = all((hi - lo + 1).is_nonnegative and not (lo.has(sp.oo, -sp.oo) or hi.has(sp.oo, -sp.oo))
                                for _, lo, hi in body.limits)
                if limits_ok:
                    return split(sp.Sum(operator(body.function), *body.limits))
            const = [f for f in sp.Mul.make_args(body) if not random(f)]
            if const:
                rest = sp.Mul(*(f for f in sp.Mul.make_args(body) if random(f)))
                return sp.Mul(*const) * (split(operator(rest)) if rest != 1 else 1)
            return node
        return node

    for _ in range(8):
        new = expr.replace(lambda e: isinstance(e, sp.Sum) or (operator is not None and isinstance(
            e, sp.core.function.AppliedUndef) and e.func == operator), split)
        if new == expr:
            return new
        expr = new
    return expr


def _fubini(expr: Any) -> Any:
    """Each Σ over several indices with one same range, free of the other indices, taken in a canonical order
    of its indices (the least srepr of the summand over their permutations; finite sums commute), then
    alpha-renamed."""
    from itertools import permutations

    def order(s):
        limits = list(s.limits)
        if len(limits) < 2 or len(limits) > 4 or len({tuple(lim[1:]) for lim in limits}) != 1:
            return s
        names = [lim[0] for lim in limits]
        if any(b.has(*names) for lim in limits for b in lim[1:]):
            return s
        forms = [_canonical(sp.Sum(s.function.xreplace(dict(zip(names, perm))), *limits))
                 for perm in permutations(names)]
        return min(forms, key=sp.srepr)

    return _canonical(expr.replace(lambda e: isinstance(e, sp.Sum), order))


# --------------------------------------------------------------------------- the checker

@dataclass(frozen=True)
class StepOutcome:
    id: str
    rule: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class Verdict:
    claim: str
    statement: Any
    proved: bool
    reasons: tuple[str, ...]
    outcomes: tuple[StepOutcome, ...]
    trust: tuple[tuple[str, str], ...]  # (kind, what) the verdict rests on: premises used, computations
    citations: tuple["Verdict", ...] = ()

    @property
    def trust_base(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        inherited = tuple((k, w) for c in self.citations for k, ws in c.trust_base.items() for w in ws)
        for kind, what in self.trust + inherited:
            names = out.setdefault(kind, [])
            if what not in names:
                names.append(what)
        return out

    @property
    def line(self) -> str:
        if not self.proved:
            return "failed: " + "; ".join(self.reasons)
        base = self.trust_base
        given = [f"definition {d}" for d in base.get("definition", [])]
        given += [f"assumption {a}" for a in base.get("assumption", [])]
        given += base.get("cited", [])
        given += [f"computation {c}" for c in base.get("computation", [])]
        return "proved" + (", given " + "; ".join(given) if given else "")


_VERDICTS: dict[str, Verdict] = {}


def check(cert: Any) -> Verdict:
    """Replay ``cert`` (a dict, or its JSON text) and return the verdict. Never raises on a bad proof;
    a malformed certificate gives a failed verdict that says why."""
    if isinstance(cert, str):
        try:
            cert = json.loads(cert)
        except json.JSONDecodeError as exc:
            return Verdict("?", None, False, (f"not JSON: {exc}",), (), ())
    if not isinstance(cert, dict):
        return Verdict("?", None, False, (f"a certificate is a JSON object, got {type(cert).__name__}",), (), ())
    key = hashlib.sha256(json.dumps(cert, sort_keys=True).encode()).hexdigest()
    if key not in _VERDICTS:
        try:
            _VERDICTS[key] = _Replay(cert).run()
        except (CertificateError, KeyError, TypeError, ValueError, AttributeError) as exc:  # a missing field
            why = f"malformed certificate: {type(exc).__name__ + ': ' if not isinstance(exc, CertificateError) else ''}{exc}"
            _VERDICTS[key] = Verdict(str(cert.get("claim", "?")), None, False, (why,), (), ())
    return _VERDICTS[key]


class _Replay:
    def __init__(self, cert: dict):
        if cert.get("format") != FORMAT or cert.get("version") != VERSION:
            raise CertificateError(f"format must be {FORMAT!r} version {VERSION}, got "
                                   f"{cert.get('format')!r} version {cert.get('version')!r}")
        self.cert = cert
        self.claim = str(cert.get("claim", ""))
        self.statement = self.read(cert["statement"])
        self.facts: dict[str, Any] = {}      # id -> relation
        self.forall: dict[str, tuple] = {}   # id -> ∀-symbols of a premise
        self.kind: dict[str, str] = {}       # id -> premise kind, or "step"
        self.text: dict[str, str] = {}       # id -> how a premise reads in a trust list
        self.hyps: dict[str, frozenset] = {}  # id -> undischarged hypotheses it rests on
        self.deps: dict[str, frozenset] = {}  # id -> premises and computations it rests on
        self.cites: dict[str, frozenset] = {}  # id -> citation steps it rests on (their premises are not listed here)
        self.rule: dict[str, str] = {}       # step id -> its rule
        self.cite_free: dict[str, set] = {}  # citation id -> symbols its certificate's premises fix (not ∀-bound)
        self.outcomes: list[StepOutcome] = []
        self.cited: list[Verdict] = []
        self.reasons: list[str] = []

    def read(self, text: str) -> Any:
        return read(text)

    # -- premises
    def _premises(self) -> None:
        statement_names = {str(s) for s in self.statement.free_symbols} | _heads(self.statement)
        entries = self.cert.get("premises", [])
        others = [self.read(p["statement"]) for p in entries if p.get("kind") != "definition"]
        other_names = set().union(*[{str(s) for s in o.free_symbols} | _heads(o) for o in others]) if others else set()
        defined: set[str] = set()
        uses = {}  # definition head -> the names its body uses: a cycle would define a name by itself
        for p in entries:
            if p.get("kind") == "definition":
                rel = self.read(p["statement"])
                uses[_definition_head(rel, (), str(p.get("id")), check=False)[0]] = \
                    {str(x) for x in rel.rhs.free_symbols} | _heads(rel.rhs)
        _acyclic({h: u & set(uses) for h, u in uses.items()})
        for p in entries:
            pid, kind = str(p["id"]), p.get("kind")
            if kind not in PREMISE_KINDS:
                raise CertificateError(f"premise {pid}: kind must be one of {PREMISE_KINDS}, got {kind!r}")
            if pid in self.facts:
                raise CertificateError(f"id {pid} used twice")
            rel = self.read(p["statement"])
            forall = tuple(self.read(s) for s in p.get("forall", []))
            if kind == "cited" and not str(p.get("reference", "")).strip():
                raise CertificateError(f"premise {pid}: a cited theorem needs a reference")
            if kind == "definition":
                head, unshown = _definition_head(rel, forall, pid)
                if head in defined:
                    raise CertificateError(f"premise {pid}: {head} is defined twice")
                defined.add(head)
                # Conservative: a new name (in an acyclic system of definitions) that the statement and the other
                # premises do not use, declared nothing its body is not shown to be: it constrains nothing.
                conservative = head not in statement_names | other_names and not unshown
                note = f" ({head} declared {', '.join(unshown)}: not shown of its body)" if unshown else ""
                self.text[pid] = "" if conservative else sp.sstr(rel)[:160] + note
            else:
                ref = str(p.get("reference") or "").strip()
                self.text[pid] = f"{ref}: {sp.sstr(rel)[:160]}" if ref else sp.sstr(rel)[:160]
            self.facts[pid], self.forall[pid], self.kind[pid] = rel, forall, kind
            self.hyps[pid] = frozenset({pid}) if kind == "hypothesis" else frozenset()
            self.deps[pid] = frozenset({pid})

    def _generalisable(self, sid: str, general: tuple) -> str:
        """Why step ``sid`` may not be generalised over ``general`` ("" when it may). A pattern then checks
        every assumption each symbol was declared with, so only what the step rests on can forbid it."""
        if self.hyps[sid]:
            return "it rests on an induction hypothesis"
        if not all(isinstance(x, sp.Symbol) for x in general):
            return "only symbols generalise"
        if any(self.rule.get(d) == "computation" for d in self.deps[sid]):
            return "it rests on a computation, which may fix them"
        for c in self.cites[sid]:  # a cited theorem holds for every x its own premises (and theirs) leave free
            if self.cite_free.get(c, {None}) & set(general):
                return f"it rests on citation {c}, whose premises mention {', '.join(map(str, set(general) & self.cite_free[c]))}"
        for d in self.deps[sid]:
            if self.kind[d] in ("hypothesis", "step"):
                continue  # a discharged hypothesis; a declared expectation (E, not a value of these symbols)
            mentioned = self.facts[d].free_symbols - set(self.forall[d])
            if mentioned & set(general):
                return f"it rests on {d}, which mentions {', '.join(sorted(map(str, mentioned & set(general))))}"
        return ""

    def _premise_facts(self, step: dict, sid: str) -> list[str]:
        ids = [str(i) for i in step.get("premises", [])]
        for i in ids:
            if i not in self.facts:
                raise CertificateError(f"step {sid} cites {i}, which is not an earlier step or a premise")
        return ids

    # -- the run
    def run(self) -> Verdict:
        self._premises()
        for step in self.cert.get("steps", []):
            sid, rule = str(step["id"]), str(step.get("rule"))
            if sid in self.facts:
                raise CertificateError(f"id {sid} used twice")
            if rule not in RULES:
                raise CertificateError(f"step {sid}: unknown rule {rule!r} (rules: {', '.join(RULES)})")
            ids = self._premise_facts(step, sid)
            conclusion = self.read(step["conclusion"])
            try:
                ok, detail, discharged = getattr(self, "_" + rule)(step, conclusion, ids)
            except CertificateError:
                raise
            except Exception as exc:  # a rule that cannot run on these expressions does not pass
                ok, detail, discharged = False, f"{rule} raised {type(exc).__name__}: {str(exc)[:160]}", frozenset()
            self.facts[sid], self.forall[sid], self.kind[sid] = conclusion, (), "step"
            self.rule[sid] = rule
            if rule == "generalisation" and ok:
                self.forall[sid] = tuple(self.read(x) for x in step.get("forall", []))
            self.hyps[sid] = frozenset().union(*[self.hyps[i] for i in ids]) - discharged if ids else frozenset()
            self.deps[sid] = frozenset().union(*[self.deps[i] for i in ids]) if ids else frozenset()
            self.cites[sid] = frozenset().union(*[self.cites.get(i, frozenset()) for i in ids]) | (
                {sid} if rule == "citation" else frozenset())
            if step.get("forall") and ok:
                general = tuple(self.read(x) for x in step["forall"])
                why = self._generalisable(sid, general)
                if why:
                    ok, detail = False, f"not generalised over {', '.join(map(str, general))}: {why}"
                else:
                    self.forall[sid] = general
            if rule == "computation":
                self.deps[sid] |= {sid}
                self.text[sid] = f"{step.get('name', '?')} ({step.get('source', '?')})"
            if rule == "linearity" and step.get("operator"):  # which operator is E, and what is random: assumed
                self.deps[sid] |= {sid}
                randoms = ", ".join(sorted(sp.sstr(self.read(r)) for r in step.get("random", []))) or "nothing"
                self.text[sid] = f"{sp.sstr(self.read(step['operator']))} is an expectation (linear; random: {randoms})"
            self.outcomes.append(StepOutcome(sid, rule, bool(ok), detail))
        return self._verdict()

    def _verdict(self) -> Verdict:
        failed = [o for o in self.outcomes if not o.passed]
        reasons = [f"step {o.id} ({o.rule}) failed: {o.detail}" for o in failed]
        passed = {o.id for o in self.outcomes if o.passed}
        used: set = set()
        for c in conjuncts(self.statement):
            if any(self.kind[i] in ("assumption", "cited") and _same(c, self.facts[i]) for i in self.kind):
                reasons.append(f"statement conjunct {sp.sstr(c)[:160]} is assumed, not proved")
                continue
            ways = [i for i in passed if not self.hyps[i] and any(_same(c, part) for part in conjuncts(self.facts[i]))]
            if not ways:
                reasons.append(f"statement conjunct {sp.sstr(c)[:160]} not established")
                continue
            used |= min((self.deps[i] for i in ways), key=len)
        if not self.outcomes:
            reasons.append("no step: premises alone prove nothing")
        trust = []
        for i in sorted(used, key=list(self.kind).index):
            kind = self.kind[i] if self.kind[i] != "step" else \
                ("computation" if self.rule.get(i) == "computation" else "assumption")
            if kind in ("definition",) and not self.text[i]:
                continue  # a conservative definition: a new name, nothing assumed
            if kind == "hypothesis":
                continue
            trust.append((kind, self.text[i]))
        return Verdict(self.claim, self.statement, not reasons, tuple(reasons), tuple(self.outcomes), tuple(trust),
                       tuple(self.cited))

    # -- rules: each returns (passed, detail, hypotheses discharged)
    def _equations(self, ids: list[str]) -> list[tuple[Any, tuple]]:
        out = []
        for i in ids:
            rel = self.facts[i]
            if not isinstance(rel, sp.Eq):
                raise CertificateError(f"{i} is not an equation, so it cannot rewrite")
            out.append((rel, self.forall[i]))
        return out

    def _identity(self, step, conclusion, ids):
        if ids:
            return False, "identity takes no premises (use rewrite)", frozenset()
        return self._rewrite(step, conclusion, ids)

    def _rewrite(self, step, conclusion, ids):
        equations, orders = [], []
        for i in ids:
            (equations if isinstance(self.facts[i], sp.Eq) else orders).append(i)
        eqs = self._equations(equations)
        rel, a, b = _oriented(conclusion)
        a2, b2 = _rewrite(a, eqs), _rewrite(b, eqs)
        if rel == "=":
            if orders:
                return False, "an equation is not decided from inequalities", frozenset()
            ok, why = decide_identity(a2, b2)
        else:
            ok, why = _decide_order(rel, a2, b2, [self.facts[i] for i in orders])
        return ok, (f"after {len(eqs)} rewrite(s): " if eqs else "") + why, frozenset()

    def _instance(self, step, conclusion, ids):
        if len(ids) != 1 or not self.forall[ids[0]]:
            return False, "instance takes one premise over ∀-symbols", frozenset()
        general = self.forall[ids[0]]
        mapping = {self.read(x): self.read(v) for x, v in step.get("mapping", [])}
        if set(mapping) != set(general):
            return False, f"give a value for each of {', '.join(map(str, general))}", frozenset()
        for x, v in mapping.items():
            needs = sorted(k for k, t in x.assumptions0.items() if t is True)  # every one, not only a pattern's
            if any(getattr(v, f"is_{k}") is not True for k in needs):
                return False, f"{sp.sstr(v)} is not shown {', '.join(needs)} as {x} must be", frozenset()
        if not _same(conclusion, substitute(self.facts[ids[0]], mapping)):
            return False, "the conclusion is not the premise at these values", frozenset()
        return True, "instance at " + ", ".join(f"{x} = {sp.sstr(v)}" for x, v in mapping.items()), frozenset()

    def _truncation(self, step, conclusion, ids):
        rel, a, b = _oriented(conclusion)
        if rel != "=":
            return False, "truncation concludes an equation", frozenset()
        eqs = self._equations(ids)
        peel = self.read(step["peel"]) if step.get("peel") else None
        a2, b2 = (_empty(_truncate(_peel(_rewrite(x, eqs), peel))) for x in (a, b))
        ok, why = decide_identity(a2, b2)
        return ok, (f"after {len(eqs)} rewrite(s) and truncating the sums: " if eqs else "after truncating: ") + why, \
            frozenset()

    def _chain(self, step, conclusion, ids):
        if len(ids) < 2:
            return False, "a chain needs two or more links", frozenset()
        links = [_oriented(self.facts[i]) for i in ids]
        rel, start, end = _oriented(conclusion)
        current = start
        strict = False
        for k, (r, a, b) in enumerate(links):
            if a == current:
                current = b
            elif r == "=" and b == current:
                current = a
            else:
                return False, f"link {k + 1} starts at {sp.sstr(a)[:60]}, not at {sp.sstr(current)[:60]}", frozenset()
            strict |= r == "<"
        if current != end:
            return False, f"the chain ends at {sp.sstr(current)[:60]}, not at {sp.sstr(end)[:60]}", frozenset()
        kinds = {r for r, _, _ in links}
        want = "=" if kinds == {"="} else ("<" if strict else "≤")
        if rel != want and not (rel == "≤" and want == "<"):
            return False, f"the links give {want}, the conclusion says {rel}", frozenset()
        return True, f"chain of {len(links)} links", frozenset()

    def _sign(self, step, conclusion, ids):
        rel, small, big = _oriented(conclusion)
        if rel == "=":
            return False, "sign concludes an inequality", frozenset()
        terms = [self.read(t) for t in step["terms"]] if step.get("terms") is not None else None
        ok, why = _decide_order(rel, small, big, [self.facts[i] for i in ids], terms)
        return ok, why, frozenset()

    def _bound(self, step, conclusion, ids):
        rel, small, big = _oriented(conclusion)
        extra_ids = [str(i) for i in step.get("nonnegative", [])]
        if not set(extra_ids) <= set(ids):
            return False, "its nonnegative facts must be premises of the step", frozenset()
        links = [_oriented(self.facts[i]) for i in ids if i not in extra_ids]
        op, strict = step.get("op"), any(r == "<" for r, _, _ in links)
        if rel == "=" or any(r == "=" for r, _, _ in links) or op not in ("add", "mul"):
            return False, "bound combines inequalities by op 'add' or 'mul'", frozenset()
        if rel == "<" and (op == "mul" or not strict):
            return False, "a strict bound needs a strict link (and op 'add')", frozenset()
        combine = sp.Add if op == "add" else sp.Mul
        if small != combine(*[a for _, a, _ in links]) or big != combine(*[b for _, _, b in links]):
            return False, f"the sides are not the {op} of the premises' sides", frozenset()
        known = [(sp.expand(_oriented(self.facts[i])[2] - _oriented(self.facts[i])[1]), False) for i in extra_ids]
        for low in ([a for _, a, _ in links] if op == "mul" else []):
            if _shown_sign(low, known) not in (">", "≥"):
                return False, f"{sp.sstr(low)[:60]} is not shown ≥ 0", frozenset()
        return True, f"{op} of bounds", frozenset()

    def _induction(self, step, conclusion, ids):
        n, n0 = self.read(step["var"]), self.read(step["base"])
        k = self.read(step["step_var"]) if step.get("step_var") else n
        if len(ids) != 3:
            return False, "induction cites [base step, inductive step, hypothesis]", frozenset()
        base, ind, hyp = ids
        if self.kind[hyp] != "hypothesis":
            return False, f"{hyp} is not a hypothesis premise", frozenset()
        if not (n0.is_integer and n0.is_finite):
            return False, f"the base value {n0} must be an integer", frozenset()
        bound = {v for b in conclusion.atoms(sp.Sum, sp.Product, sp.Integral, sp.Lambda) for v in b.variables}
        if {n, k} & bound:
            return False, f"{n} or {k} is bound inside P: substituting it would capture", frozenset()
        if not (n.is_Symbol and n.is_integer and (n - n0).is_nonnegative):
            return False, f"{n} must be an integer symbol whose assumptions give {n} ≥ {n0}", frozenset()
        if not (k.is_Symbol and k.is_integer and (k == n or (k - n0 - 1).is_nonnegative)):
            return False, f"{k} must be {n} or an integer symbol ≥ {n0} + 1", frozenset()
        p = conclusion
        if not _same_all(self.facts[base], substitute(p, {n: n0})):
            return False, f"the base step does not conclude P({n0})", frozenset()
        if not _same_all(self.facts[hyp], substitute(p, {n: k - 1})):
            return False, f"the hypothesis is not P({k} − 1)", frozenset()
        if not _same_all(self.facts[ind], substitute(p, {n: k})):
            return False, f"the inductive step does not conclude P({k})", frozenset()
        for s in (base, ind):
            for d in self.deps[s]:
                if d != hyp and self.kind[d] != "step" and ({n, k} & (self.facts[d].free_symbols - set(self.forall[d]))):
                    return False, f"{s} rests on premise {d}, which mentions {n}: it cannot be generalised", frozenset()
            for c in self.cites[s]:
                if self.cite_free.get(c, {None}) & {n, k}:
                    return False, f"{s} rests on citation {c}, whose premises mention {n} or {k}", frozenset()
        if self.hyps[base]:
            return False, "the base step rests on a hypothesis", frozenset()
        return True, f"base {n} = {n0}, step {k} − 1 → {k}", frozenset({hyp})

    def _linearity(self, step, conclusion, ids):
        if ids:
            return False, "linearity takes no premises", frozenset()
        rel, a, b = _oriented(conclusion)
        if rel != "=":
            return False, "linearity concludes an equation", frozenset()
        randoms = {self.read(r) for r in step.get("random", [])}
        operator = self.read(step["operator"]) if step.get("operator") else None
        if operator is not None and not isinstance(operator, sp.core.function.UndefinedFunction):
            return False, "the expectation operator must be an undefined function", frozenset()
        # Renamed again after distributing (fresh first: no capture): a sum pulled out of another is no longer nested.
        a2, b2 = (_fubini(_canonical(_fresh(_linear(_canonical(x), randoms, operator)))) for x in (a, b))
        ok, why = decide_identity(a2, b2)  # always: the engine also shows both sides defined
        return ok, "after distributing Σ/E: " + why, frozenset()

    def _enumeration(self, step, conclusion, ids):
        if ids:
            return False, "enumeration takes no premises", frozenset()
        variables = [(self.read(v), int(lo), int(hi)) for v, lo, hi in step["ranges"]]
        predicate = self.read(step["predicate"])
        total = 1
        for _, lo, hi in variables:
            total *= max(0, hi - lo + 1)
        if total > MAX_ENUMERATION:
            return False, f"{total} instances, more than {MAX_ENUMERATION}", frozenset()
        instances = [predicate]
        for v, lo, hi in variables:
            instances = [substitute(p, {v: sp.Integer(x)}) for p in instances for x in range(lo, hi + 1)]
        if not _same_all(conclusion, sp.And(*instances, evaluate=False) if len(instances) > 1 else instances[0]):
            return False, "the conclusion is not the conjunction of the enumerated instances", frozenset()
        for p in instances:
            if isinstance(p, sp.Eq):
                ok, why = decide_identity(p.lhs, p.rhs)
            else:
                with sp.evaluate(True):
                    value = sp.simplify(p.doit()) if isinstance(p, sp.Basic) else p
                ok, why = value is sp.true, f"evaluates to {value}"
            if not ok:
                return False, f"instance {sp.sstr(p)[:120]}: {why}", frozenset()
        return True, f"{len(instances)} instances checked", frozenset()

    def _generalisation(self, step, conclusion, ids):
        """An earlier step restated; run() then generalises it over its `forall` (see _generalisable)."""
        if len(ids) != 1 or not step.get("forall"):
            return False, "generalisation takes one earlier step and one or more symbols", frozenset()
        if self.kind[ids[0]] != "step" or not _same(conclusion, self.facts[ids[0]]):
            return False, "the conclusion is not the earlier step's relation", frozenset()
        if not isinstance(conclusion, sp.Eq):
            return False, "only an equation generalises (it is used to rewrite)", frozenset()
        return True, "for every value of its symbols within their assumptions", frozenset()

    def _citation(self, step, conclusion, ids):
        if ids:
            return False, "a citation takes no premises", frozenset()
        verdict = check(step["certificate"])
        self.cited.append(verdict)
        self.cite_free[step["id"]] = _premise_symbols(step["certificate"]) if verdict.proved else {None}
        if not verdict.proved:
            return False, f"the cited certificate ({verdict.claim}) is not proved: {verdict.line}", frozenset()
        if not (any(_same(conclusion, c) for c in conjuncts(verdict.statement)) or _same_all(conclusion, verdict.statement)):
            return False, f"{verdict.claim} does not state {sp.sstr(conclusion)[:120]}", frozenset()
        return True, f"{verdict.claim}: {verdict.line}", frozenset()

    def _computation(self, step, conclusion, ids):
        if not step.get("name") or not step.get("source"):
            return False, "a computation needs a name and a source (file:function)", frozenset()
        return bool(step.get("outcome")), str(step.get("detail", ""))[:300], frozenset()


def _premise_symbols(cert: dict) -> set:
    """The symbols a certificate's premises, and those of the certificates it cites, fix: their free symbols
    other than each premise's ∀-symbols."""
    out: set = set()
    for p in cert.get("premises", []):
        if p.get("kind") == "hypothesis":
            continue  # discharged in a proved certificate: it fixes nothing
        rel = read_in(cert, p["statement"])
        out |= rel.free_symbols - {read_in(cert, x) for x in p.get("forall", [])}
    for st in cert.get("steps", []):
        if st.get("rule") == "citation":
            out |= _premise_symbols(st["certificate"])
        if st.get("rule") == "computation":  # taken on trust: what it concludes may fix them
            out |= read_in(cert, st["conclusion"]).free_symbols
    return out


def _same_all(a: Any, b: Any) -> bool:
    """Two statements with the same conjuncts, each matched structurally."""
    ca, cb = conjuncts(a), conjuncts(b)
    return len(ca) == len(cb) and all(any(_same(x, y) for y in cb) for x in ca) and \
        all(any(_same(x, y) for x in ca) for y in cb)


def _heads(e: Any) -> set[str]:
    """Names of the undefined functions and indexed bases an expression uses."""
    if not isinstance(e, sp.Basic):
        return set()
    out = {str(f.func) for f in e.atoms(sp.core.function.AppliedUndef)}
    out |= {str(i.base.label) for i in e.atoms(sp.Indexed)}
    return out


def _definition_head(rel: Any, forall: tuple, pid: str, check: bool = True) -> tuple[str, list]:
    """The name a definition introduces. Its head is a symbol, f(x, …) or a[i, …] whose ∀-symbols are its
    distinct arguments; it may not occur in its own body, and what the head is declared to be (positive,
    integer, …) must be shown of the body, or the definition would constrain its own name."""
    if not isinstance(rel, sp.Eq):
        raise CertificateError(f"premise {pid}: a definition is an equation head = body")
    head, body = rel.lhs, rel.rhs
    if isinstance(head, (sp.Symbol, sp.MatrixSymbol)):
        name, declared = str(head.name), head
    elif isinstance(head, sp.core.function.AppliedUndef):
        name, declared = str(head.func), head.func
    elif isinstance(head, sp.Indexed):
        name, declared = str(head.base.label), head.base.label
    else:
        raise CertificateError(f"premise {pid}: a definition's head must be a symbol, f(x) or a[i], "
                               f"got {sp.sstr(head)[:80]}")
    if not check:
        return name, []
    if name in {str(s) for s in body.free_symbols} | _heads(body):
        raise CertificateError(f"premise {pid}: {name} occurs in its own definition")
    if forall:
        args = list(head.args if isinstance(head, sp.core.function.AppliedUndef) else
                    head.indices if isinstance(head, sp.Indexed) else ())
        while any(isinstance(a, sp.Tuple) for a in args):  # f((m, l, o), …): a state's components
            args = [x for a in args for x in (a.args if isinstance(a, sp.Tuple) else (a,))]
        if len(set(args)) != len(args) or set(forall) != set(args) or not all(isinstance(a, sp.Symbol) for a in args):
            raise CertificateError(f"premise {pid}: a definition over ∀-symbols has them as its head's distinct "
                                   "arguments, and nothing else")
    facts = getattr(declared, "_assumptions_orig", None) or getattr(declared, "_kwargs", None) or {}
    forms = (body, sp.expand(body), sp.together(body)) if isinstance(body, sp.Expr) else (body,)
    unshown = sorted(k for k, v in facts.items() if k != "commutative" and
                     not any(getattr(f, f"is_{k}", None) is v for f in forms))
    return name, unshown


def _acyclic(uses: dict) -> None:
    """Refuse definitions that define a name through itself (c := d + 1, d := c)."""
    state: dict = {}

    def visit(h, path):
        if state.get(h) == "done":
            return
        if state.get(h) == "open":
            raise CertificateError(f"definitions are circular: {' → '.join(path + [h])}")
        state[h] = "open"
        for u in sorted(uses.get(h, ())):
            visit(u, path + [h])
        state[h] = "done"

    for h in sorted(uses):
        visit(h, [])
