"""The independent proof checker: replays a certificate and says whether it proves its statement.

"Proved" means exactly what :func:`check` returns. The checker reads only the certificate (a plain
JSON document; ``proofs/engine.py`` is how theorems write one) and uses only SymPy, the identity
engine (``proofs/identity.py``) and the expression reader (``proofs/srepr.py``). It imports no theorem,
catalogue, report or builder code.

A certificate lists *premises* (definitions, assumptions of the claim, cited theorems, induction
hypotheses) and *steps*. Each step is one application of a rule from the fixed set ``RULES``; its
conclusion is a relation, and the checker recomputes whether the rule yields that conclusion from
the step's premises. A statement conjunct is established only by a step that passed, whose
conclusion is that conjunct, and that depends on no undischarged induction hypothesis.

Every step's conclusion (a computation's and a citation's aside) is shown defined *as written*, before its rule
transforms it: the conditions it needs (a denominator non-zero, a log's argument positive, a limit's value stated by a
premise, …) are read off the text,
and a rewrite maps each through itself; each premise right side a rewrite puts in brings its own conditions, read off
the side as written at the values put in (built all at once). SymPy cancels as it builds (B·B⁻¹ is 1, 0·x is 0), so
a condition read off a transformed expression can be gone (f(B)·B = 1 from f(x) := 1/x, with B = 0 allowed).

A step that passed, rests on no hypothesis and on no premise that mentions a symbol x (other than as
that premise's own ∀-symbol) may be *generalised* over x (its ``forall``): a later rewrite then uses
it as a pattern, as it uses a premise over its ∀-symbols. Sound because every rule decides its
conclusion for every admissible value of its free symbols; refused for a symbol whose assumptions
the pattern cannot enforce.

Trust base (what a "proved" verdict still rests on):
  1. this module's rules, as written here;
  2. SymPy: parsing of the certificate's ``srepr`` expressions (``proofs/srepr.py``: a whitelisted,
     code-free parser; every node must build as written, so SymPy evaluates nothing as a certificate is read),
     structural equality, ``xreplace``/``replace``, the identity engine's simplifications (``proofs/identity.py``;
     never integrate, never the summation of an infinite series, never a term of a Σ whose index an inner binder
     binds again: ``identity.term_at``), and SymPy's assumption handlers only through one gate, ``identity.fact`` (every sign, zero,
     range or type fact a rule or the engine takes as evidence; it answers only for an expression built wholly from
     whitelisted classes; and SymPy itself, as it builds, learns no fact of a node outside them: identity._gated_ask);
     a Σ or Π only over limits shown integers, read with SymPy's (Karr's) convention for a reversed range:
     Σ_{k=lo}^{hi} f = −Σ_{k=hi+1}^{lo−1} f when hi < lo − 1, so Σ_{k=1}^{n} 1 = n holds for every integer n (the
     "empty sum" reading, 0 for n < 0, is not the checker's; a statement meant that way declares n ≥ 0); the algebra is commutative (the reader refuses a name declared noncommutative; matrices
     are MatrixSymbols, kept in order by MatMul);
  3. the premises the verdict lists: definitions that are not conservative (their head is not fresh: it occurs
     in the statement, another premise, any expression of a cited certificate, a computation's conclusion or a
     linearity step's names), assumptions, cited theorems, and named computations, which
     no rule covers and which the checker takes as recorded;
  4. that construction-time evaluation by SymPy in the theorem (x/x built as 1) is sound: no checker can see an
     expression before the theorem built it. What the checker reads is what the certificate's text shows: no Float
     (the writer writes its Rational), no node SymPy would rebuild, no Σ, Π or ∫ whose index is declared more than
     its range implies, no λ- or derivative variable declared anything, no name that reads as a number or may
     print like another name, and, within one relation, no two different symbols of one name;
  4a. that a symbol ranges over finite values unless it is declared extended_*/infinite: the engine and the
     rules decide for finite values, so the engine proves nothing about such a symbol, it is never generalised
     over and ∞ is never an instance of a finite one (one rule: identity._may_be_infinite); order relations
     compare only operands shown real; no certificate holds Subs (the reader refuses it); that a linearity step's random symbols are exactly those it names (matched by name);
  4b. the budget: a top-level check runs under CHECK_BUDGET_S s of CPU time (a timer on the main thread), the
     identities in their worker under theirs; where no such timer can run (off the main thread) nothing is checked;
  5. in-process use (``Derivation.verified``) trusts that theorem code does not patch this module;
     ``attention-proofs check FILE`` replays in a fresh process.
"""
from __future__ import annotations

import graphlib
import hashlib
import json
import math
import re
import signal
import threading
import unicodedata
from dataclasses import dataclass
from itertools import permutations
from typing import Any

import sympy as sp

from proofs.identity import _canonical as _engine_canonical
from proofs.identity import _WORKER, _conditions_of, _may_be_infinite, _undefined_somewhere, _unmet, cpu_seconds, identity  # one rule for what may be ∞
from proofs.identity import own_bound, term_at  # the one definition of binding, the one instantiation of a term
from proofs.identity import fact, same_order_of_facts, shown  # the one gate to SymPy's assumption facts
from proofs.identity import _KEYS, memo_key as _memo_key  # one key for a memo of a pure function of expressions
from proofs.srepr import UNEVALUATED, RESERVED, CertificateError, _declared, atoms_of, read, read_in, text, write  # noqa: F401

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
                 "one same range, and the limits of a Σ over independent finite ranges, are taken in a canonical "
                 "order (finite sums commute); then `identity`; if that "
                 "fails (or at once, if the step says `nest`), again with a Σ over independent ranges nested so that a "
                 "factor varying in one index leaves the sums over the others (finite sums commute)",
    "enumeration": "P(v) for each v = lo..hi (at most 4096 instances; each v occurring in P), each instance decided "
                   "by the rules only: an equation as `identity`, an order relation as `sign` (no premise), a "
                   "conjunction conjunct by conjunct, anything else refused; the conclusion is the explicit "
                   "conjunction, never a symbolic-size statement",
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
CHECK_BUDGET_S = 120.0  # CPU seconds for one certificate with everything it cites (the catalogue's largest: ~3 s)
MAX_CITATION_DEPTH = 32
CLAIM_ID = re.compile(r"[a-z0-9][a-z0-9._=\[\]-]*")  # ASCII, nothing invisible, nothing that mimics another id
_COMPUTATION_NAME = re.compile(r"<lambda>|[A-Za-z_][A-Za-z0-9_]*(\([a-z_]+\))?")  # equal(subject): the engine method
_COMPUTATION_SOURCE = re.compile(r"[A-Za-z0-9_./-]+\.py:[A-Za-z0-9_.<>]+( \(line [0-9]+\))?")


class _Refused(Exception):
    """A rule does not yield the step's conclusion (the step fails; the certificate is well formed)."""


def _need(condition: Any, why: Any) -> None:
    """Refuse the step unless ``condition``; ``why`` is the reason, or a function that writes it (printing is slow)."""
    if not condition:
        raise _Refused(why() if callable(why) else why)


def _memo(f):
    """Memoise ``f`` on its arguments and every symbol they hold, bound ones included, with its assumptions (SymPy's
    equality, which lru_cache uses, ignores the assumptions of a bound variable it compares up to renaming: Subs,
    Lambda). Printing the exact text would do too, at several times the cost. An argument that cannot be a key (a
    mutable matrix, a list) is not memoised: ``f`` runs."""
    table: dict = {}

    def memoised(*args):
        k = tuple(map(_memo_key, args))
        try:
            hit = table.get(k, _MISSING)
        except TypeError:  # unhashable
            return f(*args)
        if hit is _MISSING:
            hit = table[k] = f(*args)
        return hit

    memoised.cache_clear = table.clear
    _MEMOS.append(memoised)
    return memoised


_MISSING = object()
_MEMOS: list = []  # every _memo table (clear_memos empties them all)


def clear_memos() -> None:
    """Forget every memo of this module (each a pure function's results), as a fresh process has none."""
    for m in _MEMOS:
        m.cache_clear()
    _KEYS.clear()  # (the engine's, which it shares)


# --------------------------------------------------------------------------- relations

def _oriented(rel: Any) -> tuple[str, Any, Any]:
    """("=", a, b), ("≤", small, big) or ("<", small, big): ≥ and > turned around."""
    for cls, name, flip in ((sp.Eq, "=", False), (sp.Le, "≤", False), (sp.Lt, "<", False),
                            (sp.Ge, "≤", True), (sp.Gt, "<", True)):
        if isinstance(rel, cls):
            return (name, rel.rhs, rel.lhs) if flip else (name, rel.lhs, rel.rhs)
    raise CertificateError(f"not an equation or inequality: {sp.sstr(rel)[:80]}")


def _relations(statement: Any) -> list:
    """The equations and order relations a conclusion states (a conjunction's, each)."""
    return [c for c in (sp.And.make_args(statement) if isinstance(statement, sp.Basic) else ())
            if isinstance(c, (sp.Eq, sp.Le, sp.Lt, sp.Ge, sp.Gt))]


def _sides(statement: Any) -> list:
    return [side for c in _relations(statement) for side in c.args]


def _key(rel: Any) -> Any:
    """A relation up to renaming its bound indices, its mirror (a = b is b = a) and its direction (a ≥ b is
    b ≤ a), as one hashable value (statements of thousands of conjuncts compare in linear time)."""
    if not isinstance(rel, (sp.Eq, sp.Le, sp.Lt, sp.Ge, sp.Gt)):
        return rel
    r, a, b = _oriented(rel)
    return (r, frozenset((_canonical(a), _canonical(b)))) if r == "=" else (r, _canonical(a), _canonical(b))


def _same(a: Any, b: Any) -> bool:
    return a == b or _key(a) == _key(b)


def _same_all(a: Any, b: Any) -> bool:
    """Two statements with the same conjuncts, each matched as _same matches."""
    ca, cb = conjuncts(a), conjuncts(b)
    return len(ca) == len(cb) and {_key(x) for x in ca} == {_key(y) for y in cb}


def substitute(statement: Any, mapping: dict) -> Any:
    """``statement`` with ``mapping`` put in; relations and connectives stay unevaluated (P(1) of
    Σ_{i≤n} i = n(n + 1)/2 is the relation Σ_{i≤1} i = 1, not True). Capture-avoiding: a variable of Σ, Π, ∫
    or λ that is substituted for or occurs in a value is renamed first, in its bound occurrences only (its own
    limits are outside it), to a Dummy absent from the statement and the values; another binder (a limit, a
    derivative) of such a variable is refused."""
    if isinstance(statement, UNEVALUATED):
        return statement.func(*[substitute(a, mapping) for a in statement.args], evaluate=False)
    values = [sp.sympify(v) for v in mapping.values()]
    clash = set(mapping).union(*[v.free_symbols for v in values])
    def binds(e):
        return isinstance(e, sp.Basic) and not e.is_Atom and bool(_own(e) & clash)

    if isinstance(statement, sp.Basic) and any(binds(e) for e in sp.preorder_traversal(statement)):
        taken = statement.atoms(sp.Dummy).union(*[v.atoms(sp.Dummy) for v in values])

        def fresh(v):
            d = sp.Dummy(v.name, **_declared(v))
            while d in taken:
                d = sp.Dummy(v.name, **_declared(v))
            taken.add(d)
            return d

        def rename(e):
            if isinstance(e, sp.Lambda):
                new = {v: fresh(v) for v in e.variables if v in clash}
                return sp.Lambda(tuple(new.get(v, v) for v in e.variables), e.expr.xreplace(new))
            if not isinstance(e, sp.concrete.expr_with_limits.ExprWithLimits):
                raise CertificateError(f"{sp.sstr(e)[:80]}: its bound variable is substituted for or occurs in a "
                                       "value, and only a Σ, Π, ∫ or λ variable is renamed")
            return _renamed(e, lambda v: fresh(v) if v in clash else None)

        statement = statement.replace(binds, rename)
    return statement.xreplace(mapping)


def _renamed(e: Any, new: Any) -> Any:
    """The Σ, Π or ∫ ``e`` with each variable v for which new(v) is a symbol renamed to it, in its bound occurrences
    only: the summand and the limits listed before it (inner ones); its own limits and later ones are outside it."""
    function, limits = e.function, [tuple(lim) for lim in e.limits]
    for k, (var, *bounds) in enumerate(limits):
        if (d := new(var)) is not None:
            function = function.xreplace({var: d})
            limits = [(d, *bounds) if j == k else (lim[0],) + tuple(b.xreplace({var: d}) for b in lim[1:]) if j < k
                      else lim for j, lim in enumerate(limits)]
    return e.func(function, *limits)


_own = own_bound  # the variables a node itself binds: the engine's one definition


def _possibly_infinite(e: Any) -> bool:
    """e may be ±∞ or undefined: it holds oo, zoo or nan, or a name declared with facts that admit ∞
    (extended_*, infinite, finite=False). A name declared without them ranges over numbers (the engine's rule)."""
    if not isinstance(e, sp.Basic):
        return False
    return e.has(sp.oo, -sp.oo, sp.zoo, sp.nan) or e.is_finite is False or _may_be_infinite(e) is not None


@_memo  # deterministic; a pattern's Wild asks it of each candidate value, again at each rewrite
def _admissible(x: Any, v: Any) -> bool:
    """``v`` may stand for the ∀-symbol ``x`` (an instance, a pattern's match): every fact x was declared with,
    True or False alike (zero=False: v shown non-zero), is shown of v; and v may be infinite only where x may."""
    return all(fact(v, k) is t for k, t in _declared(x).items()) and \
        (_possibly_infinite(x) or not _possibly_infinite(v))


def conjuncts(statement: Any) -> tuple:
    return () if statement is None or statement is sp.true else tuple(sp.And.make_args(statement))


_IDENTITIES: dict[tuple, tuple[bool, str]] = {}


def decide_identity(lhs: Any, rhs: Any) -> tuple[bool, str]:
    """The engine's verdict, memoised per process on the exact expressions (with every symbol's assumptions, as _memo
    keys them; anything but two SymPy objects by its text): the engine is deterministic. The builder reads
    its expressions back from the certificate before it asks, so the memo only ever holds what certificates say."""
    key = (_memo_key(lhs), _memo_key(rhs)) if isinstance(lhs, sp.Basic) and isinstance(rhs, sp.Basic) else \
        (text(lhs), text(rhs))
    if key not in _IDENTITIES:
        _IDENTITIES[key] = identity(lhs, rhs)
    return _IDENTITIES[key]


# --------------------------------------------------------------------------- signs

def _facts(premises: list) -> list[tuple[Any, bool]]:
    """Each premise a < b / a ≤ b as (b − a, strict): a quantity known > 0 (or ≥ 0)."""
    _inequalities(premises)
    return [_fact(p) for p in premises]


def _inequalities(premises: list) -> None:
    """CertificateError unless every premise is an inequality (what _facts takes)."""
    rels = [_oriented(p) for p in premises]
    if any(rel == "=" for rel, _, _ in rels):
        raise CertificateError("sign and bound rules take inequalities as premises, not equations")


@_memo  # the same premises and assumptions serve many steps
def _fact(premise: Any) -> tuple[Any, bool]:
    rel, small, big = _oriented(premise)
    return sp.expand(big - small), rel == "<"


def _sign(f: Any, facts: list) -> str | None:
    """">" or "≥" when f is shown positive / non-negative, "<" or "≤" for −f; None when not shown.
    Shown: by SymPy's assumptions, or as f = X + (something ≥ 0) for a known X > 0 (≥ 0)."""
    return _signed(f, tuple(facts))


@_memo  # deterministic; one denominator is signed again for every step that holds it
def _signed(f: Any, facts: tuple) -> str | None:
    def signed(g):
        if shown(g, "positive"):
            return ">"
        found = "≥" if shown(g, "nonnegative") else None
        for x, strict in facts:
            rest = sp.expand(g - x)
            if shown(rest, "nonnegative"):
                if strict or shown(rest, "positive"):
                    return ">"
                found = "≥"
        return found

    return signed(sp.expand(f)) or {">": "<", "≥": "≤", None: None}[signed(sp.expand(-f))]


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
            if s is None and mult % 2 == 0 and not is_den and shown(f, "extended_real"):
                strict = False  # an even power of a real factor is ≥ 0
                continue
            if s is None or (is_den and s in ("≥", "≤")):
                return None  # a denominator must be shown non-zero
            sign *= 1 if s in (">", "≥") or mult % 2 == 0 else -1
            strict &= s in (">", "<")
    return None if sign < 0 else ">" if strict else "≥"


def _denominators(e: Any) -> list:
    """The bases of ``e``'s negative powers, as written."""
    return [p.base for p in sp.preorder_traversal(e) if isinstance(p, sp.Pow) and p.exp.is_negative]


def _denominators_nonzero(exprs: list, facts: list, assumed: list = (), used: list | None = None) -> None:
    """_Refused unless every denominator of ``exprs``, as written, is shown non-zero by the symbols' assumptions or
    the premises' ``facts``, or else by the claim's ``assumed`` facts (then ``used`` gets an entry: the caller lists
    the assumptions as premises of the step)."""
    zero = [d for e in exprs for d in _denominators(e) if _sign(d, facts) not in (">", "<")]
    if zero and assumed:
        zero = [d for d in zero if _sign(d, facts + _facts(list(assumed))) not in (">", "<")]
        if not zero and used is not None:
            used.append(True)
    _need(not zero, lambda: f"not shown defined: denominator {sp.sstr(zero[0])[:60]} is not shown non-zero under the "
          "assumptions")


def _scalars(e: Any) -> list:
    """The scalar expressions ``e`` is made of, for a definedness check: a tuple's and an explicit matrix's entries,
    a matrix expression's scalar parts (a MatrixSymbol is a value; an inverse, or a power that may be one, is not
    shown to exist)."""
    if isinstance(e, (sp.Tuple, tuple, list, sp.MatrixBase)):
        return [x for item in e for x in _scalars(item)]
    if isinstance(e, sp.MatrixExpr):
        if isinstance(e, sp.Inverse) or isinstance(e, sp.MatPow) and not shown(e.exp, "nonnegative"):
            raise _Refused(f"not shown defined: {sp.sstr(e)[:60]} (an inverse) is not shown to exist")
        return [x for a in e.args for x in _scalars(a)]
    if not isinstance(e, sp.Expr):  # a name's string, a boolean: no value to show defined
        return []
    return [e]


def _undefined_value(values: list) -> None:
    bad = [x for x in values if isinstance(x, sp.Basic) and x.has(sp.nan, sp.zoo)]
    _need(not bad, lambda: f"not shown defined: {sp.sstr(bad[0])[:80]} holds an undefined value (nan or zoo)")


def _conditions_as_written(exprs: list, placeholders: bool = False) -> list:
    """Every condition (kind, expression, what) the expressions need to have a value, read off them as written."""
    return list(_written_conditions(tuple(exprs), placeholders))


@_memo  # deterministic; a premise's right side is read again at each instance a rewrite puts in
def _written_conditions(exprs: tuple, placeholders: bool) -> tuple:
    values = [x for e in exprs for x in _scalars(e)]
    _undefined_value(values)
    conditions = _conditions_of(values, placeholders)
    _need(not isinstance(conditions, str), lambda: f"not shown defined: {conditions}")
    return tuple(conditions)


def _instance_conditions(side: Any, match: dict) -> list:
    """The conditions of a premise's right side as written, at the values ``match`` puts in for its ∀-symbols. An
    infinite value (−∞ for a running maximum) meets only a "real" condition (±∞ is an extended real; the side as
    built holds no nan there, checked by the caller); any other condition at an infinite value, or at a name that
    may be infinite, is not shown."""
    out = []
    for kind, d, what in _conditions_as_written([side], placeholders=True):
        d = tuple(x.xreplace(match) for x in d) if isinstance(d, tuple) else d.xreplace(match)
        _undefined_value(list(d) if isinstance(d, tuple) else [d])
        if kind == "real" and d in (sp.oo, -sp.oo):
            continue
        _need(not any(_possibly_infinite(x) for x in (d if isinstance(d, tuple) else (d,))),
              lambda: f"not shown defined: {what} {sp.sstr(d)[:60]} (a premise put in at a value that may be infinite)")
        out.append((kind, d, f"{what} (as a premise put it in)"))
    return out


MAX_INSTANCES = 512  # premise right sides put in by one step, each shown defined


def _shown_defined(exprs: list, orders: bool, facts: list = (), assumed: list = (), used: list | None = None,
                   through: Any = None, inserted: list | None = None) -> None:
    """_Refused unless the expressions, as written, are shown defined: every node in the identity engine's whitelist,
    every condition it needs (a denominator non-zero, a log's argument positive, …) shown. The conditions are read
    off the expressions as written, before any rule transforms them: SymPy cancels as it builds (B·B⁻¹ is 1, 0·x is
    0), so a condition not read off the expression as written can vanish from the transformed one. A rewrite then
    maps each condition's expression ``through`` itself (x ≠ 0 with x = y + 1 put in is y + 1 ≠ 0): sound, as the step
    holds under its premises. Each premise right side the rewrite put in (``inserted``: (side, match) pairs) brings
    the conditions of the side as written at the match, mapped likewise. An order relation's denominators may be
    shown non-zero by its premises' ``facts``, or by the claim's ``assumed`` facts (``used`` then gets an entry)."""
    def mapped(d):
        return d if through is None else tuple(map(through, d)) if isinstance(d, tuple) else through(d)

    out, seen, queue, done = [], set(), _conditions_as_written(exprs), 0
    while True:
        for kind, d, what in queue:
            if (kind, d) not in seen:
                seen.add((kind, d))
                if _unmet_one(kind, d, what):  # one met as written needs nothing more (and most are: exp(x) > 0)
                    out.append((kind, mapped(d), what))
        if inserted is None or done == len(inserted):
            break
        _need(len(inserted) <= MAX_INSTANCES, f"over {MAX_INSTANCES} premise instances put in: not shown defined")
        queue = []
        for built, side, match in inserted[done:]:
            _budget()
            _undefined_value(_scalars(built))
            queue += _instance_conditions(side, match)
        done = len(inserted)
    if orders:  # a denominator may be shown non-zero under the premises (1 − n·u with n·u < 1)
        dens = [d for kind, d, _ in out if kind == "nonzero" and _unmet_one("nonzero", d, "")]  # mapped, still unmet
        if dens:  # (facts may be the function that gives them, asked only here)
            _denominators_nonzero([sp.Pow(d, -1, evaluate=False) for d in dens], facts() if callable(facts) else facts,
                                  assumed, used)
        out = [c for c in out if c[0] != "nonzero" or c[1] not in dens]
    why = _unmet(out)
    _need(not why, lambda: f"not shown defined as written: {why}")


@_memo  # deterministic; one condition (a side's denominator) is met or not at every step that holds it
def _unmet_one(kind: str, d: Any, what: str) -> str | None:
    return _unmet([(kind, d, what)])


@_memo  # deterministic; the sides of an order relation are asked again by the steps that chain them
def _real(e: Any) -> bool:
    """Shown a real number (finite, or a quotient of such): what an order relation may compare (the gate does not
    take SymPy's word for Mod, Heaviside, or Max and Min of arguments not shown real, which it calls real)."""
    return isinstance(e, sp.Expr) and (shown(e, "real") or all(  # a quotient: where its denominator is not 0
        shown(part, "real") for part in sp.fraction(sp.together(e))))


def _orders_real(p: Any) -> bool:
    """Every order relation (<, ≤, >, ≥) in ``p`` compares two expressions shown real."""
    return not isinstance(p, sp.Basic) or all(_real(r.lhs) and _real(r.rhs) for r in p.atoms(sp.Le, sp.Lt, sp.Ge, sp.Gt))


def _decide_order(rel: str, small: Any, big: Any, premises: list, terms: list | None = None,
                  assumed: list = (), used: list | None = None) -> str:
    """Why small ≤ big (< when rel is "<") from the sign of big − small under the premises' facts; else _Refused.
    A denominator may be shown non-zero by the claim's ``assumed`` facts too (appending to ``used`` when it is: the
    caller then lists them as premises of the step)."""
    # SymPy calls polygamma(1, r) positive for every real r, its poles too: both sides must be shown defined, by
    # the identity engine's whitelist, before a sign decides anything; a denominator is shown non-zero below,
    # under the premises (1 − nu with nu < 1), which the whitelist does not see.
    undefined = _undefined_somewhere([small, big], skip=frozenset({"nonzero"}))
    _need(not undefined, lambda: f"not shown defined: {undefined}")
    _need(_real(small) and _real(big), lambda: f"{sp.sstr(small)[:60]} or {sp.sstr(big)[:60]} is not shown real: "
          "an order relation is between reals")
    facts = _facts(premises)
    # ... here: every denominator as written, before b − a is expanded ((x² − x)/x − (x − 1) expands to 0)
    _denominators_nonzero([small, big], facts, assumed, used)
    # Bound indices carry what their ranges imply, not what they were declared (a "positive" index over −5..−1).
    diff = _canonical(big - small)
    if terms is None:
        s = _shown_sign(diff, facts)
        _need(s == ">" or (s == "≥" and rel != "<"),
              lambda: f"{sp.sstr(diff)[:120]} not shown {'> 0' if rel == '<' else '≥ 0'} under the assumptions")
        return f"b − a {s} 0 under the assumptions" + (f" and {len(premises)} premise(s)" if premises else "")
    ok, why = decide_identity(sp.Add(*terms), diff)
    _need(ok, f"the stated terms do not sum to the difference: {why}")
    signs = [_shown_sign(t, facts) for t in terms]
    bad = [sp.sstr(t)[:60] for t, s in zip(terms, signs) if s not in (">", "≥")]
    _need(not bad, f"terms not shown ≥ 0: {', '.join(bad)}")
    _need(rel != "<" or ">" in signs, "no term shown > 0 for a strict inequality")
    return f"difference = sum of {len(terms)} terms, each ≥ 0"


# --------------------------------------------------------------------------- rewriting

@_memo  # deterministic; the same premises and sides are renamed again by many steps
def _canonical(expr: Any) -> Any:
    """Bound indices renamed by nesting height and position (alpha-renaming, with the facts each range
    implies), as the engine renames them, but to the checker's own Dummies: the engine refuses its own
    reserved Dummies as input, and a certificate cannot forge the checker's."""
    return _engine_canonical(expr, base=RESERVED.start) if isinstance(expr, sp.Basic) else expr


@_memo  # one premise's pattern serves every rewrite that uses it
def _pattern(eq: Any, forall: tuple, avoid: frozenset = frozenset()) -> tuple[Any, Any]:
    """An equation's sides with bound indices named as ``_canonical`` names an expression's (a premise's Σ_k meets
    the expression's Σ_k), the right side's made fresh (what it inserts cannot capture a renamed index around it),
    and its ∀-symbols turned into Wilds that match only admissible values."""
    lhs = _canonical(eq.lhs)
    bound = [b for e in sp.preorder_traversal(lhs) for b in getattr(e, "bound_symbols", ())]  # a match may not use them
    wilds = {s: sp.Wild(f"{s.name}_w", exclude=bound, properties=[lambda v, s=s: _admissible(s, v) and
                                                                  not (avoid and _heads(v) & avoid)]) for s in forall}
    return lhs.xreplace(wilds), _fresh(_canonical(eq.rhs)).xreplace(wilds)


def _binders(e: Any) -> frozenset:
    """The variables an expression binds outside Σ and Π (whose indices ``_canonical`` renames to the checker's
    own Dummies): those of ∫, λ, limits, Subs and derivatives, which ``xreplace``/``replace`` do not rename."""
    return _basic_binders(e) if isinstance(e, sp.Basic) else frozenset()


@_memo  # deterministic; a premise's sides are looked at again by every rewrite that uses it
def _basic_binders(e: sp.Basic) -> frozenset:
    out = set()
    for node in sp.preorder_traversal(e):
        if not isinstance(node, (sp.Sum, sp.Product)) and not node.is_Atom:
            out |= _own(node)
    return frozenset(out)


@_memo  # deterministic; a premise's sides are looked at again by every rewrite that uses it
def _free(e: sp.Basic) -> frozenset:
    return frozenset(e.free_symbols)


def _no_capture(expr: Any, equations: list) -> None:
    """Refuse a rewrite whose premises could be put under a binder of their own free variable: a premise
    d = t put into ∫ d dt would be captured (∫ t dt). Sound and simple: no free symbol of the expression or
    of a premise may be a variable bound (outside Σ/Π) in the expression or a premise."""
    sides = [expr] + [side for eq, forall, *_ in equations for side in (eq.lhs, eq.rhs)]
    bound = set().union(*map(_binders, sides))
    free = (_free(expr) if isinstance(expr, sp.Basic) else set()).union(
        *[(_free(eq.lhs) | _free(eq.rhs)) - set(forall) for eq, forall, *_ in equations])
    clash = bound & free
    _need(not clash, lambda: f"{', '.join(sorted(map(str, clash)))} is both free and bound (by ∫, λ, a limit or a "
          "derivative) in the expression or a premise: a rewrite could capture it; rename the bound variable")


def _rewrite(expr: Any, equations: list[tuple[Any, tuple]], inserted: list | None = None) -> Any:
    """Every premise equation applied left to right until nothing changes (at most 16 rounds). Each right side put
    in (at a pattern's match) is appended to ``inserted``: the caller shows each defined as it was put in."""
    if equations:
        _no_capture(expr, equations)
    out = _canonical(expr)
    patterns = [(_pattern(eq, forall, *avoid), forall) for eq, forall, *avoid in equations]
    for (lhs, rhs), _ in patterns:
        if isinstance(lhs, sp.Lambda) or isinstance(rhs, sp.Lambda):
            raise CertificateError("a rewrite premise may not be a Lambda: state it over ∀-symbols")
        if isinstance(lhs, sp.core.function.UndefinedFunction):
            raise CertificateError("define a function by an equation over ∀-symbols, f(x) = …")
    # A pattern applies only where its functions and indexed bases occur (a match is a subtree holding them):
    # skipping it elsewhere saves a match attempt at every node, and a rewrite left out is never unsound.
    needs = [_fixed_heads(lhs) for (lhs, _), _ in patterns]
    for _ in range(16):
        before, present = out, _fixed_heads(out)
        for ((lhs, rhs), forall), need, (eq, *_) in zip(patterns, needs, equations):
            if not need <= present:
                continue
            # exact=False: a value 0 for one of several ∀-symbols is an instance too (Q_{p,0}); each instance is kept
            if forall:
                wild = {str(w)[:-1]: w for w in lhs.atoms(sp.Wild)}  # replace() passes a match by the Wild's name
                symbol = {f"{x.name}_w": x for x in forall}  # _pattern names x's Wild x_w (printed "x_w_")
                # built by xreplace, all values at once: subs() puts them in one by one, and exp(a − Max(a, b)) at
                # b = −∞ is exp(0) before a = −∞ goes in (so g(−∞, −∞) = 1 from g(a, b) := exp(a − Max(a, b)))
                new = out.replace(lhs, lambda **m: _kept(rhs.xreplace({wild[k]: v for k, v in m.items()}), eq.rhs,
                                                         {symbol[k]: v for k, v in m.items()}, inserted), exact=False)
            else:
                new = out.xreplace({lhs: _kept(rhs, eq.rhs, {}, inserted)}) if out.has(lhs) else out
            if new != out:  # renamed at once, so the next premise meets canonical sums (fresh first: no capture)
                out = _canonical(_fresh(new))
                present = _fixed_heads(out)
        if out == before:
            break
    return out


def _kept(built: Any, side: Any, match: dict, inserted: list | None) -> Any:
    """``built``, the premise's right side ``side`` at ``match`` ({∀-symbol: value}) as the rewrite builds it; the
    pair (side, match) kept in ``inserted``, for its conditions to be read off the side as written."""
    if inserted is not None:
        inserted.append((built, side, match))
    return built


def _fixed_heads(e: Any) -> set:
    """The undefined functions and indexed bases ``e`` holds (a pattern's Wilds are neither)."""
    if not isinstance(e, sp.Basic):
        return set()
    applied, bases = atoms_of(e, sp.core.function.AppliedUndef, sp.IndexedBase)
    return {f.func for f in applied} | bases


def _sums(expr: Any, cut: Any, kinds: tuple = (sp.Sum, sp.Product)) -> Any:
    """``expr`` with ``cut`` applied to each one-index Σ (and Π) whose limits are integers (others kept)."""
    def apply(s):
        k, lo, hi = s.limits[0] if len(s.limits) == 1 else (None, None, None)
        return s if k is None or not all(shown(v, "integer") for v in (k, lo, hi)) else cut(s, k, lo, hi)

    return expr.replace(lambda e: isinstance(e, kinds), apply)


def _peel(expr: Any, top: Any) -> Any:
    """Every Σ or Π whose upper limit is ``top`` and whose range is shown non-empty (hi − lo ≥ 0), with its last
    term taken out: Σ_{k=lo}^{hi} f(k) = Σ_{k=lo}^{hi−1} f(k) + f(hi) (Π alike)."""
    def cut(s, k, lo, hi):
        if hi != top or not shown(hi - lo, "nonnegative"):
            return s
        rest, last = s.func(s.function, (k, lo, hi - 1)), term_at(s.function, k, hi)
        if last is None:
            return s
        return rest + last if isinstance(s, sp.Sum) else rest * last

    return expr if top is None else _sums(expr, cut)


def _empty(expr: Any) -> Any:
    """A Σ over lo..lo − 1 is 0, a Π over it 1 (one index, the range written so)."""
    return expr.replace(lambda e: isinstance(e, (sp.Sum, sp.Product)) and len(e.limits) == 1 and
                        sp.expand(e.limits[0][2] - e.limits[0][1] + 1) == 0,
                        lambda s: sp.Integer(0 if isinstance(s, sp.Sum) else 1))


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
        return m if shown(m, "integer") and not m.has(k) else None

    def cut(s, k, lo, hi):
        factors = sp.Mul.make_args(s.function)
        for n, f in enumerate(factors):
            if not (isinstance(f, sp.Piecewise) and len(f.args) == 2 and f.args[1].expr == 0
                    and f.args[1].cond is sp.true):
                continue
            m = bound(f.args[0].cond, k)
            if m is not None and shown(m - lo + 1, "nonnegative") and shown(hi - m, "nonnegative"):
                return sp.Sum(sp.Mul(*(factors[:n] + factors[n + 1:])) * f.args[0].expr, (k, lo, m))
        return s

    return _sums(expr, cut, (sp.Sum,))


_FRESH = iter(range(RESERVED.start + 10**6, RESERVED.stop))  # past _canonical's; a certificate cannot hold one


def _fresh(expr: Any) -> Any:
    """``expr`` with the bound index of every Sum and Product renamed to a new Dummy of the same assumptions,
    one from the checker's reserved range that nothing else holds (a predictable automatic index could be forged)."""
    def rename(s):
        return _renamed(s, lambda var: sp.Dummy(str(var), dummy_index=next(_FRESH),
                                                **{a: v for a, v in var.assumptions0.items() if v is not None}))

    return expr.replace(lambda e: isinstance(e, (sp.Sum, sp.Product)), rename) if expr.has(sp.Sum, sp.Product) else expr


# --------------------------------------------------------------------------- linearity

def _linear(expr: Any, randoms: set, operator: Any, pulled: set | None = None, nest: bool = False) -> Any:
    """Σ and E distributed over sums, constant factors pulled out; nothing else changes. The names of the factors
    pulled out of E as constants are added to ``pulled``. ``nest``: a factor that varies in one index of a Σ over
    several leaves the sums over the others (:func:`_nest`)."""
    def is_e(e):
        return operator is not None and isinstance(e, sp.core.function.AppliedUndef) and e.func == operator

    names = {str(r) for r in randoms}  # by name: a same-named symbol with other assumptions, X(ω) for a random X

    def random(e):
        return bool(_heads(e) & names) or (operator and e.has(operator))

    def pull(body, wrap, varies):  # wrap each term of a sum; factors that do not vary leave
        if isinstance(body, sp.Add):
            return sp.Add(*(split(wrap(t)) for t in body.args))
        const = [f for f in sp.Mul.make_args(body) if not varies(f)]
        if not const:
            return None
        if wrap is operator and pulled is not None:
            pulled.update(h for f in const for h in _heads(f))
        rest = sp.Mul(*(f for f in sp.Mul.make_args(body) if varies(f)))
        return sp.Mul(*const) * (1 if rest == 1 and wrap is operator else split(wrap(rest)))

    def split(node):
        if isinstance(node, sp.Sum) and not any(b.has(sp.oo, -sp.oo, sp.zoo) for lim in node.limits for b in lim[1:]):
            bound = {lim[0] for lim in node.limits}  # a finite sum only: splitting an infinite one may give ∞ − ∞
            out = pull(sp.expand(node.function), lambda t: sp.Sum(t, *node.limits), lambda f: f.free_symbols & bound)
            if out is None and nest:  # no factor free of every index: one free of all but one leaves the others'
                nested = _nest(node)
                return node if nested is None else split(nested)
            return node if out is None else out
        if is_e(node) and len(node.args) == 1:
            body = sp.expand(node.args[0])
            # A range that is random (Wald: E Σ_{k≤N} X_k is not Σ_{k≤N} E X_k) is refused: its bounds must be free
            # of the declared random names and of E itself.
            if isinstance(body, sp.Sum) and all(shown(hi - lo + 1, "nonnegative") and not (lo.has(sp.oo, -sp.oo) or
                                                hi.has(sp.oo, -sp.oo) or random(lo) or random(hi))
                                                for _, lo, hi in body.limits):
                return split(sp.Sum(operator(body.function), *body.limits))  # E of a finite sum: the sum of the E's
            out = pull(body, operator, random)
            return node if out is None else out
        return node

    for _ in range(8):
        new = expr.replace(lambda e: isinstance(e, sp.Sum) or is_e(e), split)
        if new == expr:
            return new
        expr = new
    return expr


def _nest(s: Any) -> Any:
    """Σ_{v, w} f(v) g(v, w) as Σ_v f(v) Σ_w g(v, w), for the first index v that some factor alone depends on: finite
    sums over ranges that do not depend on each other's indices commute (None when no index is such)."""
    bound = {lim[0] for lim in s.limits}
    if len(s.limits) < 2 or any(b.has(*bound) for lim in s.limits for b in lim[1:]):
        return None
    factors = sp.Mul.make_args(sp.expand(s.function))
    for v, lo, hi in s.limits:
        own = [f for f in factors if f.free_symbols & bound == {v}]
        if own and len(own) < len(factors):
            rest = [lim for lim in s.limits if lim[0] != v]
            return sp.Sum(sp.Mul(*own) * sp.Sum(sp.Mul(*(f for f in factors if f not in own)), *rest), (v, lo, hi))
    return None


def _fubini(expr: Any) -> Any:
    """Each Σ over several indices with one same range, free of the other indices, taken in a canonical order
    of its indices (the least srepr of the summand over their permutations; finite sums commute), then
    alpha-renamed. A Σ over 2 to 4 indices whose ranges differ but are each free of every index and finite
    (no ∞, no name that may be infinite): its limits in a canonical order (the least srepr over their
    permutations), Σ_j Σ_c f = Σ_c Σ_j f (finite signed sums commute, Karr's reversed ranges included)."""
    def order(s):
        limits, names = list(s.limits), [lim[0] for lim in s.limits]
        if not 2 <= len(limits) <= 4 or any(b.has(*names) for lim in limits for b in lim[1:]):
            return s
        if len({tuple(lim[1:]) for lim in limits}) != 1:
            if any(b.has(sp.oo, -sp.oo, sp.zoo) or _may_be_infinite(b) for lim in limits for b in lim[1:]):
                return s
            # fresh first: the canonical names are already the indices', and renaming one onto another would merge them
            return min((_canonical(_fresh(sp.Sum(s.function, *p))) for p in permutations(limits)), key=sp.srepr)
        return min((_canonical(sp.Sum(s.function.xreplace(dict(zip(names, perm))), *limits))
                    for perm in permutations(names)), key=sp.srepr)

    return _canonical(expr.replace(lambda e: isinstance(e, sp.Sum), order))


# --------------------------------------------------------------------------- definitions

def _heads(e: Any) -> frozenset[str]:
    """Names of the free symbols, undefined functions and indexed bases an expression uses."""
    if not isinstance(e, sp.Basic):
        return frozenset()
    return _basic_heads(e)


@_memo  # deterministic; a statement's names are asked again by many steps
def _basic_heads(e: sp.Basic) -> frozenset[str]:
    applied, indexed = atoms_of(e, sp.core.function.AppliedUndef, sp.Indexed)
    return frozenset({_name(s) for s in e.free_symbols} | {str(f.func) for f in applied} |
                     {_name(i.base.label) for i in indexed})


def _looks(name: str) -> str:
    """What a name looks like once printed: compatibility forms folded (₁ is 1, ϕ is φ) and subscript marks dropped
    (SymPy prints x1, x_1 and x₁ all as x with subscript 1)."""
    return unicodedata.normalize("NFKC", name).replace("_", "").replace("{", "").replace("}", "")


def _name(x: Any) -> str:
    """A symbol's name as definitions and heads compare it: str(x), without the printer for a plain Symbol (a
    Dummy prints as _name)."""
    return x.name if type(x) is sp.Symbol else str(x)


def _definition_head(rel: Any, forall: tuple, pid: str, check: bool = True) -> tuple[str, list]:
    """The name a definition introduces, and what it is declared that its body is not shown to be. Its head is a
    symbol, f(x, …) or a[i, …] whose ∀-symbols are its distinct arguments; it may not occur in its own body,
    and what the head is declared to be (positive, integer, …) must be shown of the body, or the definition
    would constrain its own name."""
    if not isinstance(rel, sp.Eq):
        raise CertificateError(f"premise {pid}: a definition is an equation head = body")
    head, body = rel.lhs, rel.rhs
    if isinstance(head, (sp.Symbol, sp.MatrixSymbol)):
        name, facts, args = _name(head), _declared(head), []
    elif isinstance(head, sp.core.function.AppliedUndef):
        name, facts, args = str(head.func), _declared(head.func), list(head.args)
    elif isinstance(head, sp.Indexed):  # an entry has its base's declared facts and its label's
        name, facts, args = _name(head.base.label), {**_declared(head.base.label), **_declared(head.base)}, \
            list(head.indices)
    else:
        raise CertificateError(f"premise {pid}: a definition's head must be a symbol, f(x) or a[i], "
                               f"got {sp.sstr(head)[:80]}")
    if not check:
        return name, []
    if name in _heads(body):
        raise CertificateError(f"premise {pid}: {name} occurs in its own definition")
    if forall:
        while any(isinstance(a, sp.Tuple) for a in args):  # f((m, l, o), …): a state's components
            args = [x for a in args for x in (a.args if isinstance(a, sp.Tuple) else (a,))]
        if len(set(args)) != len(args) or set(forall) != set(args) or not all(isinstance(a, sp.Symbol) for a in args):
            raise CertificateError(f"premise {pid}: a definition over ∀-symbols has them as its head's distinct "
                                   "arguments, and nothing else")
    forms = (lambda e: e, sp.expand, sp.together) if isinstance(body, sp.Expr) else (lambda e: e,)  # lazily
    unshown = sorted((k, v) for k, v in facts.items() if k != "commutative" and
                     not any(fact(f(body), k) is v for f in forms))
    # Listed as declared: a True fact by its name, a False one (a function's deduced facts hold many) as "not …".
    return name, [k for k, v in unshown if v] or [f"not {k}" for k, v in unshown]


def _random_names(cert: dict) -> set:
    """The names a certificate's linearity steps (and those it cites) declare random, and their operators."""
    out: set = set()
    for st in cert.get("steps", []):
        if st.get("rule") == "linearity" and st.get("operator"):
            out |= {str(read(r)) for r in st.get("random", [])} | {str(read(st["operator"]))}
        if st.get("rule") == "citation":
            out |= _random_names(st["certificate"])
    return out


def _context_names(cert: dict, seen: dict | None = None) -> set:
    """Every name that has a meaning beside this certificate's own definitions: all names of each certificate it
    cites (statement, premises, steps, recursively), what its computations conclude, and its linearity operators and
    random names. Each cited certificate is read once (citations may share one)."""
    seen = {} if seen is None else seen
    out: set = set()
    for st in cert.get("steps", []):
        _budget()
        if st.get("rule") == "citation" and isinstance(st.get("certificate"), dict):
            inner = st["certificate"]
            if id(inner) not in seen:
                names = set().union(*[_heads(read(x)) for x in [inner.get("statement")] +
                                      [p.get("statement") for p in inner.get("premises", [])] +
                                      [s.get("conclusion") for s in inner.get("steps", [])] if isinstance(x, str)])
                seen[id(inner)] = names | _context_names(inner, seen)
            out |= seen[id(inner)]
        elif st.get("rule") == "computation" and isinstance(st.get("conclusion"), str):
            out |= _heads(read(st["conclusion"]))
    return out | _random_names(cert)


def _premise_symbols(cert: dict) -> set:
    """The symbols a certificate's premises, and those of the certificates it cites, fix: their free symbols
    other than each premise's ∀-symbols."""
    out: set = set()
    for p in cert.get("premises", []):
        if p.get("kind") != "hypothesis":  # discharged in a proved certificate: it fixes nothing
            out |= read(p["statement"]).free_symbols - {read(x) for x in p.get("forall", [])}
    for st in cert.get("steps", []):
        if st.get("rule") == "citation":
            out |= _premise_symbols(st["certificate"])
        if st.get("rule") == "computation":  # taken on trust: what it concludes may fix them
            out |= read(st["conclusion"]).free_symbols
    return out


# --------------------------------------------------------------------------- verdicts

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
    # (operator name, names it took as random, names pulled out of it as constants), its citations' included: a citing
    # certificate takes the same operator with the same meaning
    operators: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = ()

    @property
    def trust_base(self) -> dict[str, list[str]]:
        out: dict[str, dict] = {}
        for kind, what in self.trust + tuple((k, w) for c in self.citations for k, ws in c.trust_base.items() for w in ws):
            out.setdefault(kind, {})[what] = None  # each once, in order
        return {kind: list(names) for kind, names in out.items()}

    @property
    def line(self) -> str:
        if not self.proved:
            return _printable("failed: " + "; ".join(self.reasons))
        base = self.trust_base
        # Each entry says what kind of trust it is, so that no reference or name can read as a check ("cited
        # checked by the engine: …" is still a citation, "unchecked computation identity (…)" still Python).
        given = [prefix + what for kind, prefix in (("definition", "definition "), ("assumption", "assumption "),
                                                    ("cited", "cited "), ("computation", "unchecked computation "))
                 for what in base.get(kind, [])]
        return _printable("proved" + (", given " + "; ".join(given) if given else ""))


def _printable(text: str) -> str:
    """Certificate text as it may reach a terminal: control and invisible characters escaped."""
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text)


class _OverBudget(CertificateError):
    """The certificate's CPU budget ran out: a failed verdict, never a hang."""


_VERDICTS: dict[str, Verdict] = {}
_CLOCK = {"deadline": None, "depth": 0}  # the budget and citation depth of the check() in progress


def _budget() -> None:
    if _CLOCK["deadline"] is not None and cpu_seconds() > _CLOCK["deadline"]:
        raise _OverBudget(f"over the budget of {CHECK_BUDGET_S:g} s of CPU time per certificate (citations included)")


class _OutOfCpu(BaseException):
    """The CPU timer of a top-level check fired. A BaseException: no ``except Exception`` in SymPy swallows it."""


def _expanded_size(doc: Any, memo: dict, limit: int) -> int:
    """How many JSON nodes ``doc`` has written out (a part shared by several citations counts each time), up to
    ``limit``: what json.dumps would write, found in time linear in the distinct parts."""
    if id(doc) in memo:
        return memo[id(doc)]
    children = doc.values() if isinstance(doc, dict) else doc if isinstance(doc, list) else ()
    size = 1
    for c in children:
        size += _expanded_size(c, memo, limit)
        if size > limit:
            break
    memo[id(doc)] = size
    return size


MAX_NODES = 2_000_000  # JSON nodes of a certificate written out (the catalogue's largest: see proofs.timing)


def check(cert: Any) -> Verdict:
    """Replay ``cert`` (a dict, or its JSON text) and return the verdict. Never raises on a bad proof;
    a malformed certificate gives a failed verdict that says why. A top-level check on the main thread runs under
    a timer of CHECK_BUDGET_S seconds of this process's CPU time (ITIMER_VIRTUAL), so no rule, expansion or
    definition check can run past it; the identities' worker keeps its own budget, and both count in _budget().
    Where that timer cannot run (off the main thread: a signal reaches only the main thread; no setitimer; a
    virtual timer of the caller's already running) nothing could stop one step's C calls, so the certificate is
    not checked: a failed verdict that says so (check it from the main thread, or with ``attention-proofs check``)."""
    if _CLOCK["deadline"] is not None:  # a citation inside a check: the caller's budget holds
        return _check(cert)
    unbudgeted = "off the main thread" if threading.current_thread() is not threading.main_thread() else \
        "without setitimer" if not hasattr(signal, "setitimer") else \
        "under a virtual-time timer already running" if signal.getitimer(signal.ITIMER_VIRTUAL)[0] else None
    if unbudgeted:
        return Verdict(_claim_text(cert), None, False, (f"not checked: the CPU budget of {CHECK_BUDGET_S:g} s is a "
                                                        f"signal timer, which cannot run {unbudgeted}",), (), ())

    def on_tick(signum, frame):
        raise _OutOfCpu()

    same_order_of_facts()
    previous = signal.signal(signal.SIGVTALRM, on_tick)
    signal.setitimer(signal.ITIMER_VIRTUAL, CHECK_BUDGET_S, 0.25)  # fires again if something swallowed it
    try:
        return _check(cert)
    except _OutOfCpu:
        while True:  # the timer repeats every 0.25 s: disarmed first, so stopping the worker cannot be interrupted
            try:
                signal.setitimer(signal.ITIMER_VIRTUAL, 0)
                break
            except _OutOfCpu:
                continue
        _WORKER.stop()  # it may have been stopped between a question and its answer
        _CLOCK["depth"], _CLOCK["deadline"] = 0, None
        return Verdict(_claim_text(cert), None, False, (f"over the budget of {CHECK_BUDGET_S:g} s of CPU time per certificate "
                                            "(citations included)",), (), ())
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)


def _claim_text(cert: Any) -> str:
    """The claim id as a verdict may print it: only a string is one (str() of a huge int raises)."""
    claim = cert.get("claim", "?") if isinstance(cert, dict) else "?"
    return _printable(claim[:200]) if isinstance(claim, str) else f"?({type(claim).__name__})"


def _check(cert: Any) -> Verdict:
    if isinstance(cert, str):
        try:
            cert = json.loads(cert)
        except (ValueError, RecursionError) as exc:  # JSONDecodeError, and an integer past Python's digit limit
            return Verdict("?", None, False, (f"not JSON (or nested too deep): {type(exc).__name__}: {exc}"[:300],), (), ())
    if not isinstance(cert, dict):
        return Verdict("?", None, False, (f"a certificate is a JSON object, got {type(cert).__name__}",), (), ())
    claim = _claim_text(cert)
    try:
        if _expanded_size(cert, {}, MAX_NODES) > MAX_NODES:  # json.dumps would write every shared part again
            return Verdict(claim, None, False, (f"cert written out has over {MAX_NODES} JSON nodes",), (), ())
        key = hashlib.sha256(json.dumps(cert, sort_keys=True).encode()).hexdigest()
    except (TypeError, ValueError, RecursionError) as exc:
        return Verdict(claim, None, False, (f"cert is not a JSON document (or nested too deep): {exc}",), (), ())
    if key in _VERDICTS:
        return _VERDICTS[key]
    top = _CLOCK["deadline"] is None
    _CLOCK["deadline"] = cpu_seconds() + CHECK_BUDGET_S if top else _CLOCK["deadline"]
    _CLOCK["depth"] += 1
    try:
        if _CLOCK["depth"] > MAX_CITATION_DEPTH:
            raise CertificateError(f"citations nested too deep (over {MAX_CITATION_DEPTH})")
        verdict = _Replay(cert).run()
    except (CertificateError, KeyError, TypeError, ValueError, AttributeError, RecursionError) as exc:
        why = f"not decided: {exc}" if isinstance(exc, _OverBudget) else \
            f"malformed certificate: {type(exc).__name__ + ': ' if not isinstance(exc, CertificateError) else ''}{exc}"
        verdict = Verdict(claim, None, False, (why[:2000],), (), ())
        if isinstance(exc, _OverBudget) or _CLOCK["depth"] > 1:  # the budget (or the depth) is the caller's
            return verdict
    finally:
        _CLOCK["depth"] -= 1
        _CLOCK["deadline"] = None if top else _CLOCK["deadline"]
    _VERDICTS[key] = verdict
    return verdict


# --------------------------------------------------------------------------- the replay

class _Replay:
    def __init__(self, cert: dict):
        if cert.get("format") != FORMAT or type(cert.get("version")) is not int or cert.get("version") != VERSION:
            raise CertificateError(f"format must be {FORMAT!r} version {VERSION}, got "
                                   f"{cert.get('format')!r} version {cert.get('version')!r}")
        self.cert = cert
        self.claim = cert.get("claim", "")
        if not isinstance(self.claim, str) or not CLAIM_ID.fullmatch(self.claim):
            raise CertificateError(f"claim id {_claim_text(cert)!r} is not a string of the form {CLAIM_ID.pattern}")
        self.statement = read(cert["statement"])
        self.facts: dict[str, Any] = {}      # id -> relation
        self.forall: dict[str, tuple] = {}   # id -> ∀-symbols of a premise or generalised step
        self.kind: dict[str, str] = {}       # id -> premise kind, or "step"
        self.text: dict[str, str] = {}       # id -> how a premise reads in a trust list
        self.hyps: dict[str, frozenset] = {}  # id -> undischarged hypotheses it rests on
        self.deps: dict[str, frozenset] = {}  # id -> premises and computations it rests on
        self.cites: dict[str, frozenset] = {}  # id -> citation steps it rests on (their premises are not listed here)
        self.rule: dict[str, str] = {}       # step id -> its rule
        self.cite_free: dict[str, set] = {}  # citation id -> symbols its certificate's premises fix (not ∀-bound)
        self.outcomes: list[StepOutcome] = []
        self.cited: list[Verdict] = []
        self.randoms: dict[str, frozenset] = {}  # id -> names a generalised step's ∀-symbols may not take (random)
        self.operators: dict[str, tuple[dict, dict]] = {}  # E's name -> (random name -> step, name pulled out -> step)
        self.unshown: dict[str, str] = {}  # definition id -> its head, declared something not shown of its body

    def _premises(self) -> None:
        entries = self.cert.get("premises", [])
        # A definition is conservative only if its name is fresh: absent from the statement, the other premises,
        # every expression of each cited certificate (a cited c = 0 gives c a meaning) and what computations state.
        used = _heads(self.statement).union(*[_heads(read(p["statement"])) for p in entries
                                             if p.get("kind") != "definition"], _context_names(self.cert))
        uses = {_definition_head(read(p["statement"]), (), str(p.get("id")), check=False)[0]:  # head -> names it uses
                _heads(read(p["statement"]).rhs) for p in entries if p.get("kind") == "definition"}
        try:  # a definition may not define a name through itself (c := d + 1, d := c)
            graphlib.TopologicalSorter({h: u & set(uses) for h, u in uses.items()}).prepare()
        except graphlib.CycleError as exc:
            raise CertificateError(f"definitions are circular: {' → '.join(reversed(exc.args[1]))}") from None
        defined: set[str] = set()
        for p in entries:
            pid, kind, rel = str(p["id"]), p.get("kind"), read(p["statement"])
            if kind not in PREMISE_KINDS:
                raise CertificateError(f"premise {pid}: kind must be one of {PREMISE_KINDS}, got {kind!r}")
            if pid in self.facts:
                raise CertificateError(f"id {pid} used twice")
            forall = tuple(read(s) for s in p.get("forall", []))
            if kind == "hypothesis" and forall:  # P(k − 1) for one k, never for every k
                raise CertificateError(f"premise {pid}: an induction hypothesis has no ∀-symbols")
            ref = str(p.get("reference") or "").strip()
            if kind == "cited" and not ref:
                raise CertificateError(f"premise {pid}: a cited theorem needs a reference")
            every = f" (for all {', '.join(map(str, forall))})" if forall else ""  # printed if used, whole
            self.text[pid] = lambda rel=rel, ref=ref, every=every: (f"{ref}: " if ref else "") + sp.sstr(rel) + every
            if kind == "definition":
                head, unshown = _definition_head(rel, forall, pid)
                if head in defined:
                    raise CertificateError(f"premise {pid}: {head} is defined twice")
                defined.add(head)
                # Conservative: a new name (in an acyclic system of definitions) that the statement and the other
                # premises do not use, declared nothing its body is not shown to be: it constrains nothing.
                note = f" ({head} declared {', '.join(unshown)}: not shown of its body)" if unshown else ""
                if unshown:
                    self.unshown[pid] = head
                self.text[pid] = None if head not in used and not unshown else lambda rel=rel, note=note, every=every: \
                    sp.sstr(rel) + every + note
            self.facts[pid], self.forall[pid], self.kind[pid] = rel, forall, kind
            self.hyps[pid] = frozenset({pid}) if kind == "hypothesis" else frozenset()
            self.deps[pid], self.cites[pid] = frozenset({pid}), frozenset()

    def _fixes(self, sid: str, symbols: set, induction_hyp: str | None = None) -> str:
        """Why what step ``sid`` rests on may fix ``symbols`` ("" when nothing does): a computation, a citation whose
        premises mention them, a premise that mentions them other than as its ∀-symbols. Under an induction every
        hypothesis but its own counts; otherwise only discharged ones can be left (an open one refuses at once)."""
        if any(self.rule.get(d) == "computation" for d in self.deps[sid]):
            return "it rests on a computation, which may fix them"
        for c in sorted(self.cites[sid]):  # a cited theorem holds for every x its own premises (and theirs) leave free
            if self.cite_free.get(c, set()) & symbols:
                return f"it rests on citation {c}, whose premises mention " + \
                    ", ".join(sorted(map(str, symbols & self.cite_free[c])))
        for d in sorted(self.deps[sid]):
            if d == induction_hyp or self.kind[d] == "step" or (induction_hyp is None and self.kind[d] == "hypothesis"):
                continue  # a discharged hypothesis; a declared expectation (E, not a value of these symbols)
            mentioned = self.facts[d].free_symbols - set(self.forall[d])
            if mentioned & symbols:
                return f"it rests on {d}, which mentions {', '.join(sorted(map(str, mentioned & symbols)))}"
        return ""

    def _one_symbol_per_name(self) -> None:
        """Refuse two different symbols (or undefined functions) of one name in one relation: the statement, a
        premise with its ∀-symbols, a step's conclusion with its ∀-symbols (x positive and x negative make "x < x"
        read as a false statement; a definition f(x) := 1/x with another x in its body reads as one it is not).
        What a reader sees is a name, so within what is read as one formula a name stands for one thing. Across
        relations a name may stand for two (an induction's n ≥ 0 and its step's n > 0). Dummies are the checker's."""
        def one(texts):
            seen: dict[str, Any] = {}
            for t in texts:
                e = read(t) if isinstance(t, str) else None
                if not isinstance(e, sp.Basic):
                    continue
                symbols, bases, applied = atoms_of(e, sp.Symbol, sp.IndexedBase, sp.core.function.AppliedUndef)
                for h in {a for a in symbols if not isinstance(a, sp.Dummy)} | bases | \
                        {f.func for f in applied}:  # an IndexedBase: its own facts
                    name = str(h.label) if isinstance(h, sp.IndexedBase) else getattr(h, "name", None) or str(h)
                    first = seen.setdefault((_looks(name), isinstance(h, sp.IndexedBase)), h)
                    if first != h and _name(first) != name:
                        raise CertificateError(f"the names {_printable(_name(first))!r} and {_printable(name)!r} print "
                                               "alike (x1, x_1 and x₁ are all x with subscript 1): two symbols in one "
                                               "relation must read as two")
                    if first != h:
                        facts = [", ".join(f"{k}={v}" for k, v in sorted(_declared(x).items()) if k != "commutative")
                                 for x in (first, h)]
                        raise CertificateError(f"the name {_printable(name)!r} stands for two different symbols "
                                               f"({facts[0] or 'no assumptions'}; {facts[1] or 'no assumptions'}) in "
                                               "one relation: a name is one symbol in what reads as one formula")

        one([self.cert.get("statement")])
        for entry in self.cert.get("premises", []) + self.cert.get("steps", []):
            forall = entry.get("forall")
            one([entry.get("statement"), entry.get("conclusion")] + (forall if isinstance(forall, list) else []))

    def run(self) -> Verdict:
        self._one_symbol_per_name()
        self._premises()
        for step in self.cert.get("steps", []):
            _budget()
            sid, rule = str(step["id"]), str(step.get("rule"))
            if sid in self.facts:
                raise CertificateError(f"id {sid} used twice")
            if rule not in RULES:
                raise CertificateError(f"step {sid}: unknown rule {rule!r} (rules: {', '.join(RULES)})")
            ids = [str(i) for i in step.get("premises", [])]
            for i in ids:
                if i not in self.facts:
                    raise CertificateError(f"step {sid} cites {i}, which is not an earlier step or a premise")
            conclusion = read(step["conclusion"])
            self.discharged: frozenset = frozenset()
            self.also: set = set()  # assumptions a rule used beside the step's premises (a denominator's sign)
            try:
                # Not for a computation (taken as recorded), nor a citation (the cited certificate showed its statement
                # defined under its own premises); the rewriting rules show theirs themselves (_rewrite).
                if rule not in ("computation", "citation", "identity", "rewrite", "truncation"):
                    self._defined(_sides(conclusion), any(_oriented(c)[0] != "=" for c in _relations(conclusion)),
                                  [self.facts[i] for i in ids if isinstance(self.facts[i], (sp.Le, sp.Lt, sp.Ge, sp.Gt))])
                ok, detail = True, getattr(self, "_" + rule)(step, conclusion, ids)
            except CertificateError:
                raise
            except _Refused as exc:
                ok, detail = False, str(exc)
            except Exception as exc:  # a rule that cannot run on these expressions does not pass
                ok, detail = False, f"{rule} raised {type(exc).__name__}: {str(exc)[:160]}"
            self.facts[sid], self.forall[sid], self.kind[sid], self.rule[sid] = conclusion, (), "step", rule
            self.hyps[sid] = frozenset().union(*[self.hyps[i] for i in ids]) - self.discharged
            self.deps[sid] = frozenset().union(*[self.deps[i] for i in ids + sorted(self.also)])
            self.cites[sid] = frozenset().union(*[self.cites[i] for i in ids]) | ({sid} if rule == "citation" else set())
            if step.get("forall") and ok:
                general = tuple(read(x) for x in step["forall"])
                why = "it rests on an induction hypothesis" if self.hyps[sid] else "only symbols generalise" if \
                    not all(isinstance(x, sp.Symbol) for x in general) else "a symbol that may be infinite" if \
                    any(map(_possibly_infinite, general)) else self._fixes(sid, set(general))
                if why:
                    ok, detail = False, f"not generalised over {', '.join(map(str, general))}: {why}"
                else:  # a linearity step took its other symbols as non-random: they never take a random value
                    self.forall[sid] = general
                    # (its own random names too: a linearity step generalised by its own forall, red team 13)
                    self.randoms[sid] = self.randoms.get(sid, frozenset()).union(
                        *[self.randoms.get(d, ()) for d in self.deps[sid] | self.cites[sid]])
            if rule == "computation":  # taken as recorded: listed
                self.deps[sid] |= {sid}
                self.text[sid] = _printable(f"{step.get('name', '?')} ({step.get('source', '?')})")
            elif rule == "linearity" and step.get("operator"):  # which operator is E, and what is random: assumed
                self.deps[sid] |= {sid}
                randoms = ", ".join(sorted(sp.sstr(read(r)) for r in step.get("random", []))) or "nothing"
                self.text[sid] = f"{sp.sstr(read(step['operator']))} is an expectation (linear; random: {randoms})"
            self.outcomes.append(StepOutcome(sid, rule, bool(ok), detail))
        return self._verdict()

    def _verdict(self) -> Verdict:
        reasons = [f"step {o.id} ({o.rule}) failed: {o.detail}" for o in self.outcomes if not o.passed]
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
        if not conjuncts(self.statement):  # `true`: a proof of it proves nothing, whatever its id suggests
            reasons.append("the statement has no conjunct: it states nothing")
        # A statement about a defined name is about the name as defined: a declaration not shown of the body (c := −1,
        # c declared positive) is a premise of the verdict even when no step cites the definition.
        stated = _heads(self.statement)
        used |= {pid for pid, head in self.unshown.items() if head in stated}
        trust = []
        for i in sorted(used, key=list(self.kind).index):
            kind = self.kind[i] if self.kind[i] != "step" else \
                ("computation" if self.rule.get(i) == "computation" else "assumption")
            if kind != "hypothesis" and self.text[i] is not None:  # a conservative definition assumes nothing
                trust.append((kind, self.text[i]() if callable(self.text[i]) else self.text[i]))
        return Verdict(self.claim, self.statement, not reasons, tuple(reasons), tuple(self.outcomes), tuple(trust),
                       tuple(self.cited), tuple((op, tuple(sorted(r)), tuple(sorted(c)))
                                                for op, (r, c) in sorted(self.operators.items())))

    # -- rules: each returns its detail, or raises _Refused saying why it does not yield the conclusion
    def _identity(self, step, conclusion, ids):
        _need(not ids, "identity takes no premises (use rewrite)")
        return self._rewrite(step, conclusion, ids)

    def _rewrite(self, step, conclusion, ids, transform=lambda e: e):
        eqs = [(self.facts[i], self.forall[i], self.randoms.get(i, frozenset())) for i in ids
               if isinstance(self.facts[i], sp.Eq)]
        orders = [self.facts[i] for i in ids if not isinstance(self.facts[i], sp.Eq)]
        rel, a, b = _oriented(conclusion)
        inserted: list = []
        a2, b2 = transform(_rewrite(a, eqs, inserted)), transform(_rewrite(b, eqs, inserted))
        # the conclusion and each premise side put in (f(x) := 1/x at x = B, then B·B⁻¹ built as 1) shown defined
        self._defined([a, b], rel != "=", orders, lambda d: transform(_rewrite(d, eqs, inserted)), inserted)
        if rel == "=":
            _need(not orders, "an equation is not decided from inequalities")
            ok, why = decide_identity(a2, b2)
            _need(ok, (f"after {len(eqs)} rewrite(s): " if eqs else "") + why)
        else:
            why = self._order(rel, a2, b2, orders)
        return (f"after {len(eqs)} rewrite(s): " if eqs else "") + why

    def _truncation(self, step, conclusion, ids):
        _need(_oriented(conclusion)[0] == "=", "truncation concludes an equation")
        peel = read(step["peel"]) if step.get("peel") else None
        return "truncating the sums, " + self._rewrite(step, conclusion, ids, lambda e: _empty(_truncate(_peel(e, peel))))

    def _instance(self, step, conclusion, ids):
        _need(len(ids) == 1 and self.forall[ids[0]], "instance takes one premise over ∀-symbols")
        general = self.forall[ids[0]]
        mapping = {read(x): read(v) for x, v in step.get("mapping", [])}
        _need(set(mapping) == set(general), f"give a value for each of {', '.join(map(str, general))}")
        for x, v in mapping.items():
            _need(_admissible(x, v), lambda: f"{sp.sstr(v)} is not shown {_declared(x)} (and finite) as {x} must be")
            _need(not _heads(v) & self.randoms.get(ids[0], set()), f"{x} was taken as non-random (linearity): not {v}")
        _need(_same(conclusion, substitute(self.facts[ids[0]], mapping)), "the conclusion is not the premise at these values")
        return "instance at " + ", ".join(f"{x} = {sp.sstr(v)}" for x, v in mapping.items())

    def _chain(self, step, conclusion, ids):
        _need(len(ids) >= 2, "a chain needs two or more links")
        links = [_oriented(self.facts[i]) for i in ids]
        rel, current, end = _oriented(conclusion)
        for k, (r, a, b) in enumerate(links):
            _need(a == current or (r == "=" and b == current),
                  lambda: f"link {k + 1} starts at {sp.sstr(a)[:60]}, not at {sp.sstr(current)[:60]}")
            current = b if a == current else a
        _need(current == end, lambda: f"the chain ends at {sp.sstr(current)[:60]}, not at {sp.sstr(end)[:60]}")
        kinds = {r for r, _, _ in links}
        want = "=" if kinds == {"="} else ("<" if "<" in kinds else "≤")
        _need(rel == want or (rel == "≤" and want == "<"), f"the links give {want}, the conclusion says {rel}")
        return f"chain of {len(links)} links"

    def _sign(self, step, conclusion, ids):
        rel, small, big = _oriented(conclusion)
        _need(rel != "=", "sign concludes an inequality")
        terms = [read(t) for t in step["terms"]] if step.get("terms") is not None else None
        return self._order(rel, small, big, [self.facts[i] for i in ids], terms)

    def _order(self, rel, small, big, premises, terms=None):
        """_decide_order, where the claim's assumptions may show a denominator non-zero; if they do, the step rests
        on every assumption (listed in the verdict as its premises)."""
        assumptions = [i for i in self.kind if self.kind[i] == "assumption" and not self.forall[i]]
        used: list = []
        why = _decide_order(rel, small, big, premises, terms, [self.facts[i] for i in assumptions], used)
        if used:
            self.also |= set(assumptions)
        return why

    def _defined(self, exprs, orders, premises=(), through=None, inserted=None):
        """_shown_defined, where the claim's assumptions may show a denominator non-zero (as in _order)."""
        assumptions = [i for i in self.kind if self.kind[i] == "assumption" and not self.forall[i]]
        used: list = []
        if orders:
            _inequalities(list(premises))  # at once; their expansions (_facts) only where a denominator needs them
        _shown_defined(exprs, orders, (lambda: _facts(list(premises))) if orders else (),
                       [self.facts[i] for i in assumptions] if orders else (), used, through, inserted)
        if used:
            self.also |= set(assumptions)

    def _bound(self, step, conclusion, ids):
        rel, small, big = _oriented(conclusion)
        extra_ids = [str(i) for i in step.get("nonnegative", [])]
        _need(set(extra_ids) <= set(ids), "its nonnegative facts must be premises of the step")
        links = [_oriented(self.facts[i]) for i in ids if i not in extra_ids]
        op, strict = step.get("op"), any(r == "<" for r, _, _ in links)
        _need(rel != "=" and all(r != "=" for r, _, _ in links) and op in ("add", "mul"),
              "bound combines inequalities by op 'add' or 'mul'")
        _need(rel != "<" or (op == "add" and strict), "a strict bound needs a strict link (and op 'add')")
        combine = sp.Add if op == "add" else sp.Mul
        _need(small == combine(*[a for _, a, _ in links]) and big == combine(*[b for _, _, b in links]),
              f"the sides are not the {op} of the premises' sides")
        known = [(sp.expand(b - a), False) for _, a, b in (_oriented(self.facts[i]) for i in extra_ids)]
        for low in ([a for _, a, _ in links] if op == "mul" else []):
            _need(_shown_sign(low, known) in (">", "≥"), lambda: f"{sp.sstr(low)[:60]} is not shown ≥ 0")
        return f"{op} of bounds"

    def _induction(self, step, conclusion, ids):
        n, n0 = read(step["var"]), read(step["base"])
        k = read(step["step_var"]) if step.get("step_var") else n
        _need(len(ids) == 3, "induction cites [base step, inductive step, hypothesis]")
        base, ind, hyp = ids
        _need(self.kind[hyp] == "hypothesis", f"{hyp} is not a hypothesis premise")
        _need(shown(n0, "integer") and shown(n0, "finite"), f"the base value {n0} must be an integer")
        bound = {v for b in conclusion.atoms(sp.Sum, sp.Product, sp.Integral, sp.Lambda) for v in b.variables}
        _need(not {n, k} & bound, f"{n} or {k} is bound inside P: substituting it would capture")
        _need(n.is_Symbol and shown(n, "integer") and shown(n - n0, "nonnegative"),
              f"{n} must be an integer symbol whose assumptions give {n} ≥ {n0}")
        # The step must cover every integer ≥ n₀ + 1: k declared exactly an integer (≥ 0, > 0 at most) reaching down
        # to n₀ + 1 (an even k, or a positive k under a base below 0, skips values), and not a symbol of P or n₀.
        facts = {f: v for f, v in _declared(k).items() if f != "commutative"} if k.is_Symbol else {}
        low = {(): -sp.oo, ("nonnegative",): 0, ("positive",): 1}.get(tuple(sorted(set(facts) - {"integer"})))
        _need(facts.get("integer") is True and all(v is True for v in facts.values()) and low is not None and
              (low == -sp.oo or shown(n0 + 1 - low, "nonnegative")), f"{k} must be declared an integer (≥ 0 or > 0 at most) "
              f"whose range reaches down to {n0} + 1")
        _need(k == n or not ({k} & (conclusion.free_symbols | n0.free_symbols)), f"{k} occurs in P or in {n0}")
        _need(_same_all(self.facts[base], substitute(conclusion, {n: n0})), f"the base step does not conclude P({n0})")
        _need(_same_all(self.facts[hyp], substitute(conclusion, {n: k - 1})), f"the hypothesis is not P({k} − 1)")
        _need(_same_all(self.facts[ind], substitute(conclusion, {n: k})), f"the inductive step does not conclude P({k})")
        for s in (base, ind):  # P(n₀) and the step must hold for every n (k): nothing they rest on may fix it
            why = self._fixes(s, {n, k}, induction_hyp=hyp)
            _need(not why, f"{s}: {why}: it cannot be generalised")
        _need(not self.hyps[base], "the base step rests on a hypothesis")
        self.discharged = frozenset({hyp})
        return f"base {n} = {n0}, step {k} − 1 → {k}"

    def _linearity(self, step, conclusion, ids):
        _need(not ids, "linearity takes no premises")
        rel, a, b = _oriented(conclusion)
        _need(rel == "=", "linearity concludes an equation")
        randoms = {read(r) for r in step.get("random", [])}
        operator = read(step["operator"]) if step.get("operator") else None
        self.randoms[str(step["id"])] = frozenset(_random_names({"steps": [step]}))
        _need(operator is None or isinstance(operator, sp.core.function.UndefinedFunction),
              "the expectation operator must be an undefined function")
        # Renamed again after distributing (fresh first: no capture): a sum pulled out of another is no longer nested.
        pulled: set = set()
        _need(step.get("nest", False) in (True, False), "nest is true or false")
        ok, why, a2, b2 = False, "", None, None
        if step.get("nest") is not True:
            a2, b2 = (_fubini(_canonical(_fresh(_linear(_canonical(x), randoms, operator, pulled)))) for x in (a, b))
            ok, why = decide_identity(a2, b2)  # always: the engine also shows both sides defined
        if not ok:  # Σ_{v,w} f(v) g(v, w) as Σ_v f(v) Σ_w g(v, w): the same sums, nested the other way
            nested = tuple(_fubini(_canonical(_fresh(_linear(_canonical(x), randoms, operator, pulled, nest=True))))
                           for x in (a, b))
            if nested != (a2, b2):
                ok, why = decide_identity(*nested)
        # One operator, one meaning of random: E(XY) = X·E(Y) (Y random) and E(X + 1) = E(X) + 1 (X random) each hold
        # of some E, but not of one E, and the verdict would list both as if they could.
        if operator is not None:
            self._one_meaning(str(operator), {str(r) for r in randoms}, pulled, f"step {step['id']}")
        _need(ok, "after distributing Σ/E: " + why)
        return "after distributing Σ/E: " + why

    def _one_meaning(self, operator: str, randoms: set, constants: set, where: str) -> None:
        """One operator, one meaning of random: E(XY) = X·E(Y) (Y random) and E(X + 1) = E(X) + 1 (X random) each hold
        of some E, but not of one E, and the verdict would list both as if they could; so across citations too."""
        random_in, constant_in = self.operators.setdefault(operator, ({}, {}))
        for names, mine, theirs, was, now in ((constants, constant_in, random_in, "random", "a constant"),
                                              (randoms, random_in, constant_in, "a constant", "random")):
            clash = sorted(n for n in names if n in theirs)
            _need(not clash, lambda: f"{', '.join(clash)} is {now} for {operator} in {where} but {was} in "
                  f"{theirs[clash[0]]}: one operator, one set of random symbols")
            for n in names:
                mine.setdefault(n, where)

    def _enumeration(self, step, conclusion, ids):
        _need(not ids, "enumeration takes no premises")
        variables = [(read(v), int(lo), int(hi)) for v, lo, hi in step["ranges"]]
        total = math.prod(max(0, hi - lo + 1) for _, lo, hi in variables)
        _need(total <= MAX_ENUMERATION, f"{total} instances, more than {MAX_ENUMERATION}")
        _need(total > 0, "an empty range: no instance")  # before any range is written out (0 × 10^8 is 0)
        instances = [read(step["predicate"])]
        unused = [str(v) for v, _, _ in variables if v not in getattr(instances[0], "free_symbols", set())]
        _need(not unused, f"the range variable(s) {', '.join(unused)} do not occur in the predicate: an enumeration is "
              "over explicit instances of it")
        for v, lo, hi in variables:
            instances = [substitute(p, {v: sp.Integer(x)}) for p in instances for x in range(lo, hi + 1)]
        _need(_same_all(conclusion, sp.And(*instances, evaluate=False) if len(instances) > 1 else instances[0]),
              "the conclusion is not the conjunction of the enumerated instances")
        for p in instances:
            _budget()
            self._decide_instance(p)
        return f"{len(instances)} instances checked"

    @staticmethod
    def _decide_instance(p):
        """One instance, decided by the rules only: an equation by the engine, an order relation by the sign of
        its difference (under no premise), a conjunction conjunct by conjunct; anything else is refused."""
        if isinstance(p, sp.And):
            for part in p.args:
                _Replay._decide_instance(part)
            return None
        if isinstance(p, sp.Eq):
            ok, why = decide_identity(p.lhs, p.rhs)
            _need(ok, lambda: f"instance {sp.sstr(p)[:120]}: {why}")
            return None
        _need(isinstance(p, (sp.Le, sp.Lt, sp.Ge, sp.Gt)), lambda: f"instance {sp.sstr(p)[:120]}: an enumeration "
              "decides equations, order relations and their conjunctions only")
        rel, small, big = _oriented(p)
        try:
            _decide_order(rel, small, big, [])
        except _Refused as exc:
            raise _Refused(f"instance {sp.sstr(p)[:120]}: {exc}") from None
        return None

    def _generalisation(self, step, conclusion, ids):
        """An earlier step restated; run() then generalises it over its `forall` (see _fixes)."""
        _need(len(ids) == 1 and step.get("forall"), "generalisation takes one earlier step and one or more symbols")
        _need(self.kind[ids[0]] == "step" and _same(conclusion, self.facts[ids[0]]),
              "the conclusion is not the earlier step's relation")
        _need(isinstance(conclusion, sp.Eq), "only an equation generalises (it is used to rewrite)")
        return "for every value of its symbols within their assumptions"

    def _citation(self, step, conclusion, ids):
        _need(not ids, "a citation takes no premises")
        verdict = check(step["certificate"])
        self.cited.append(verdict)
        self.cite_free[str(step["id"])] = _premise_symbols(step["certificate"]) if verdict.proved else set()
        _need(verdict.proved, lambda: f"the cited certificate ({verdict.claim}) is not proved: {verdict.line}")
        self.randoms[str(step["id"])] = frozenset(_random_names(step["certificate"]))
        for operator, randoms, constants in verdict.operators:
            self._one_meaning(operator, set(randoms), set(constants), f"citation {step['id']} ({verdict.claim})")
        _need(any(_same(conclusion, c) for c in conjuncts(verdict.statement)) or _same_all(conclusion, verdict.statement),
              lambda: f"{verdict.claim} does not state {sp.sstr(conclusion)[:120]}")
        return f"{verdict.claim}: {verdict.line}"

    def _computation(self, step, conclusion, ids):
        # The verdict prints the name and source as the trust base's entry: they must read as a function and where it
        # is, not as prose ("identity (checked by the identity engine)") or invisible characters.
        _need(_COMPUTATION_NAME.fullmatch(str(step.get("name", ""))) and _COMPUTATION_SOURCE.fullmatch(
            str(step.get("source", ""))), "a computation needs a name (a Python identifier) and a source "
            "(file.py:function)")
        # Nor as the checker itself: a rule's name, or a source inside the trust base's own files.
        _need(step["name"] not in RULES and step["source"].split(":")[0].rsplit("/", 1)[-1] not in (
            "checker.py", "identity.py", "srepr.py"), "a computation is not named as a rule, nor sourced in the "
              "checker's own files (checker.py, identity.py, srepr.py)")
        _need(step.get("outcome") is True, str(step.get("detail", ""))[:300])  # JSON true: "False" is a truthy string
        return str(step.get("detail", ""))[:300]
