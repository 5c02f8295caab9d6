"""Checked derivations.

A theorem is a plain function that builds a :class:`Derivation` with a :class:`Proof`:
every step names the rule it applies and carries a machine check over *computed*
SymPy expressions. A step without a check is a premise and says which kind of trust it
asks for: a definition, an assumption of the claim, a cited theorem (with its reference)
or an induction hypothesis. The verdict is "proved" only when every check passed and
every conjunct of the statement is exactly the relation some passed, checked step
established: steps that all pass but prove something else prove nothing.

Checks compare mathematics, not notation: an identity is first probed at random
rational points (a false identity is refuted in milliseconds there, where
``simplify`` can spend seconds), and only then reduced to zero symbolically.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import sympy as sp

PROVED = "proved"
FAILED = "failed"

# Relative size below which a probed difference counts as zero: the probes are
# evaluated with 40 significant digits, so genuine identities land near 1e-38.
_PROBE_DIGITS = 40
_PROBE_ZERO = sp.Float("1e-25")

DEFINITION = "definition"
ASSUMPTION = "assumption"
CITED = "cited"
HYPOTHESIS = "hypothesis"  # an induction hypothesis
PREMISE_KINDS = (DEFINITION, ASSUMPTION, CITED, HYPOTHESIS)

# Relations a step may establish, by the symbol a theorem writes.
_RELATIONS: dict[str, Callable[[Any, Any], Any]] = {
    "=": lambda a, b: sp.Eq(a, b, evaluate=False),
    "≤": lambda a, b: sp.Le(a, b, evaluate=False), "<=": lambda a, b: sp.Le(a, b, evaluate=False),
    "≥": lambda a, b: sp.Ge(a, b, evaluate=False), ">=": lambda a, b: sp.Ge(a, b, evaluate=False),
    "<": lambda a, b: sp.Lt(a, b, evaluate=False), ">": lambda a, b: sp.Gt(a, b, evaluate=False),
    "≠": lambda a, b: sp.Ne(a, b, evaluate=False), "!=": lambda a, b: sp.Ne(a, b, evaluate=False),
    "⟺": lambda a, b: sp.Equivalent(a, b, evaluate=False),
}


def relation(lhs: Any, rel: str, rhs: Any):
    """The SymPy relation ``lhs rel rhs``, unevaluated (so 0 = 0 stays a relation, not True)."""
    if rel not in _RELATIONS:
        raise ValueError(f"relation must be one of {sorted(_RELATIONS)}, got {rel!r}")
    return _RELATIONS[rel](_sympify(lhs), _sympify(rhs))


def _sympify(x: Any) -> Any:
    if isinstance(x, (list, tuple)):
        return sp.Tuple(*(_sympify(e) for e in x))
    if isinstance(x, sp.MatrixBase):
        return sp.ImmutableMatrix(x)
    return sp.sympify(x)


def conjuncts(statement: Any) -> tuple:
    """The parts of a statement a derivation must establish one by one (And splits)."""
    if statement is None or statement is sp.true:  # nothing left to establish
        return ()
    return sp.And.make_args(statement) if isinstance(statement, sp.And) else (statement,)


def _same(a: Any, b: Any) -> bool:
    """Structural equality of two relations; an equation also matches its mirror image."""
    if a == b:
        return True
    return isinstance(a, sp.Eq) and isinstance(b, sp.Eq) and a.lhs == b.rhs and a.rhs == b.lhs


@dataclass(frozen=True)
class Step:
    """One line of a derivation: ``lhs = rhs`` (or a predicate) by ``rule``.

    A premise has ``passed is None`` and a ``kind`` (see PREMISE_KINDS); a checked step
    has ``kind is None``. ``subject`` names what the computed ``lhs`` denotes: the step
    establishes ``subject relation rhs``.
    """

    rule: str
    description: str
    lhs: Any
    rhs: Any = None
    passed: bool | None = None  # None marks a premise: stated, not checked
    detail: str = ""
    relation: str = "="
    kind: str | None = None
    reference: str | None = None
    subject: Any = None
    claim: Any = None  # a whole relation the step establishes, when neither side is written as stated
    cites: Any = None  # the Derivation a "theorem ..." step relies on (see Proof.cite)

    @property
    def is_premise(self) -> bool:
        return self.passed is None

    @property
    def established(self) -> Any:
        """The relation this step states: ``subject relation rhs`` (None for a bare predicate)."""
        if self.claim is not None:
            return self.claim
        if self.rhs is None:
            return None
        try:
            return relation(self.lhs if self.subject is None else self.subject, self.relation, self.rhs)
        except Exception:  # an lhs SymPy cannot hold in a relation establishes nothing
            return None

    @property
    def trust(self) -> str:
        """How a premise reads in a trust list: its reference when cited, else its description."""
        return self.reference or self.description


class Result(dict):
    """A derivation's named results, readable as ``r["mean"]`` or ``r.mean``."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


@dataclass
class Derivation:
    claim_id: str
    title: str
    statement: Any
    assumptions: tuple[str, ...]
    steps: list[Step]
    result: Any
    seconds: float = 0.0
    unmatched: tuple = ()  # statement conjuncts no passed checked step established
    statement_source: str = "catalogue"  # or "instance": a helper's own statement= (see Proof)

    @property
    def checked_steps(self) -> list[Step]:
        return [s for s in self.steps if not s.is_premise]

    @property
    def failed_steps(self) -> list[Step]:
        return [s for s in self.steps if s.passed is False]

    @property
    def trusted(self) -> tuple[Step, ...]:
        """The premises, in order: what the verdict takes on trust rather than checks.

        A theorem this one cites brings its own premises along (after this one's), so the
        list is the whole trust base, not only the last layer of it.
        """
        out: list[Step] = []
        for s in self.steps:
            if s.is_premise:
                out.append(s)
        for s in self.steps:
            if s.cites is not None:
                out += [p for p in s.cites.trusted if not any(p is q for q in out)]
        return tuple(out)

    @property
    def trust_base(self) -> dict[str, list[str]]:
        """Premises by kind, each named once: {"cited": ["Chebyshev's inequality"], ...}."""
        out: dict[str, list[str]] = {}
        for s in self.trusted:
            names = out.setdefault(s.kind, [])
            if s.trust not in names:
                names.append(s.trust)
        return {k: out[k] for k in PREMISE_KINDS if k in out}

    @property
    def reasons(self) -> list[str]:
        """Why the verdict is not "proved" (empty when it is)."""
        why = [f"step {self.steps.index(s) + 1} ({s.rule}) failed: {s.detail}" for s in self.failed_steps]
        why += [f"statement conjunct {sp.sstr(c)} not established" for c in self.unmatched]
        if not self.checked_steps:
            why.append("no step is checked: a derivation of premises only proves nothing")
        return why

    @property
    def verified(self) -> bool:
        return not self.reasons

    @property
    def verdict(self) -> str:
        return PROVED if self.verified else FAILED

    @property
    def verdict_line(self) -> str:
        """One line: "proved", "proved, given Chebyshev's inequality", or "failed: <why>"."""
        if not self.verified:
            return f"{FAILED}: " + "; ".join(self.reasons)
        cited = self.trust_base.get(CITED, [])
        return PROVED + (", given " + ", ".join(cited) if cited else "")

    def to_latex(self) -> str:
        from proofs import render

        return render.to_latex(self)

    def to_markdown(self) -> str:
        from proofs import render

        return render.to_markdown(self)

    def to_text(self) -> str:
        from proofs import render

        return render.to_text(self)

    def __str__(self) -> str:
        return self.to_text()


class Proof:
    """Builder used inside a theorem function; ``finish`` returns the Derivation.

    ``Proof(claim_id)`` takes title, statement and assumptions from the catalogue entry of
    ``claim_id``: a theorem does not restate them. A helper deriving an instance that is
    not in the catalogue (``dot_product_moments(d=3)``) passes ``statement=`` (and may pass
    ``assumptions=``); an id outside the catalogue must pass ``statement=``.
    """

    def __init__(self, claim_id: str, title: str | None = None, statement: Any = None,
                 assumptions: Iterable[str] | None = None):
        from proofs import claims

        if not isinstance(claim_id, str) or not claim_id:
            raise ValueError(f"claim_id must be a non-empty string, got {claim_id!r}")
        entry = claims.catalogued(claim_id)
        if entry is None and statement is None:
            raise ValueError(f"claim_id {claim_id!r} is not in the catalogue: pass statement= (what the steps must "
                             "establish), or a derivation could prove nothing and be called proved")
        if entry is not None and statement is None and (title is not None or assumptions is not None):
            raise ValueError(f"claim_id {claim_id!r} is catalogued: its title and assumptions come from "
                             "proofs/claims.py, not from the theorem")
        self.claim_id = claim_id
        self.statement_source = "catalogue" if entry is not None and statement is None else "instance"
        self.title = title if title is not None else (entry.title if entry else claim_id)
        self.statement = statement if statement is not None else (entry.statement if entry else None)
        if assumptions is not None:
            self.assumptions = tuple(assumptions)
        else:
            self.assumptions = entry.assumptions if entry else ()
        self.steps: list[Step] = []
        self._start = time.perf_counter()

    def stated(self, subject: Any) -> Any:
        """The statement's conjunct about ``subject`` (the relation whose lhs it is)."""
        for c in conjuncts(self.statement):
            if isinstance(c, sp.core.relational.Relational) and c.lhs == subject:
                return c
        raise ValueError(f"the statement of {self.claim_id} has no conjunct about {subject}")

    def claimed(self, subject: Any) -> Any:
        """What the statement says ``subject`` equals (or is bounded by): the rhs of its conjunct.

        A theorem checks its computed value against this, so the claim is written once.
        """
        return self.stated(subject).rhs

    def premise(self, rule: str, description: str, lhs: Any, rhs: Any = None, relation: str = "=", *,
                kind: str, reference: str | None = None) -> None:
        """A stated, unchecked step; ``kind`` says what trust it asks for (PREMISE_KINDS)."""
        if kind not in PREMISE_KINDS:
            raise ValueError(f"kind must be one of {PREMISE_KINDS}, got {kind!r}")
        if kind == CITED and not (isinstance(reference, str) and reference.strip()):
            raise ValueError("reference must name the cited theorem (e.g. \"Chebyshev's inequality\") "
                             "when kind is 'cited'")
        self.steps.append(Step(rule, description, lhs, rhs, None, "premise", relation, kind, reference))

    def equal(self, rule: str, description: str, lhs: Any, rhs: Any, *, subject: Any = None,
              where: Callable[[Any], Any] | None = None, establishes: Any = None) -> bool:
        """Step ``lhs = rhs``, checked as an identity over every free symbol.

        ``subject`` names what the computed ``lhs`` denotes (the step establishes
        ``subject = rhs``); ``where`` rewrites both sides before the check, e.g. to unfold
        an abbreviation such as a_i = softmax(z)_i that ``rhs`` is written in;
        ``establishes`` names the whole relation the check denotes, when both sides are computed.
        """
        try:
            a, b = (lhs, rhs) if where is None else (where(lhs), where(rhs))
            ok, detail = identity(a, b)
        except Exception as exc:  # a check that cannot run is a failed check, never a crash
            ok, detail = False, f"check raised {type(exc).__name__}: {exc}"
        self.steps.append(Step(rule, description, lhs, rhs, bool(ok), detail, "=", subject=subject, claim=establishes))
        return bool(ok)

    def holds(self, rule: str, description: str, lhs: Any, rhs: Any, check: Callable[[], tuple[bool, str] | bool],
              relation: str = "=", *, subject: Any = None, establishes: Any = None) -> bool:
        """Step whose check is a custom computation (a limit, an inequality, a bound)."""
        try:
            out = check()
        except Exception as exc:  # a check that cannot run is a failed check, never a crash
            out = (False, f"check raised {type(exc).__name__}: {exc}")
        ok, detail = out if isinstance(out, tuple) else (bool(out), "")
        self.steps.append(Step(rule, description, lhs, rhs, bool(ok), detail or ("holds" if ok else "does not hold"),
                               relation, subject=subject, claim=establishes))
        return bool(ok)

    def cite(self, derivation: "Derivation", conjunct: Any = None) -> bool:
        """Use what another derivation proved: a checked step that holds when it is proved.

        Establishes ``conjunct``, which must be one of its statement's conjuncts (default: its whole
        statement, every conjunct). Its premises join this derivation's trust base.
        """
        stated = derivation.statement if conjunct is None else conjunct
        ok = derivation.verified and (conjunct is None or any(_same(conjunct, c) for c in conjuncts(derivation.statement)))
        why = derivation.verdict_line if ok else \
            f"{derivation.claim_id} does not establish {sp.sstr(stated)}: {derivation.verdict_line}"
        self.steps.append(Step(f"theorem {derivation.claim_id}", f"from {derivation.claim_id}: {sp.sstr(stated)}",
                               stated, None, bool(ok), why, claim=stated, cites=derivation))
        return bool(ok)

    def finish(self, result: Any) -> Derivation:
        # A step may establish a conjunction (a cited theorem's whole statement): each part counts.
        established = [part for s in self.steps if s.passed and s.established is not None
                       for part in conjuncts(s.established)]
        unmatched = tuple(c for c in conjuncts(self.statement) if not any(_same(c, e) for e in established))
        return Derivation(self.claim_id, self.title, self.statement, self.assumptions, self.steps, result,
                          time.perf_counter() - self._start, unmatched, self.statement_source)


# --------------------------------------------------------------------------- checks
#
# identity() proves lhs = rhs for every value of the free symbols allowed by their assumptions:
#   1. the two sides have the same shape (scalar, list, tuple, Matrix, array);
#   2. random probes refute a false identity fast (probes where a side is undefined decide nothing);
#   3. every denominator of either side is shown non-zero from the assumptions;
#   4. the difference reduces to 0 symbolically.
# A pass needs all four. Stages 3 and 4 are the proof; the probes refute fast and guard against a
# simplification that wrongly returns 0.

# Probes are evaluated with 40 significant digits; the two sides agree at a probe when they differ
# by at most 1e-25 of the larger side (relative, so e^1000 (cosh² − sinh²) = e^1000 agrees while
# 10^-30 x = 0 is refuted). The 15 spare digits absorb evalf's loss of working precision.
_PROBE_DIGITS = 40
_PROBE_RTOL = sp.Float("1e-25", _PROBE_DIGITS)
_RESOLVED_BITS = 20  # an evalf result with fewer bits could not be told from 0
_PROBE_TRIES = 4  # probe points tried per wanted probe before the probes give up

_MatrixElement = sp.matrices.expressions.matexpr.MatrixElement  # A[i, j] of a MatrixSymbol A


class _Undefined(Exception):
    """A side has no value at a probe point (a pole, 0/0, an index form that stays symbolic)."""


def _shape(x: Any) -> tuple:
    if isinstance(x, (sp.MatrixBase, sp.NDimArray, sp.MatrixExpr)):
        return tuple(x.shape)
    if isinstance(x, (list, tuple, sp.Tuple)):
        inner = [_shape(item) for item in x]
        if len(set(inner)) > 1:
            return ("ragged",) + tuple(inner)
        return (len(inner),) + (inner[0] if inner else ())
    return ()


def _entries(x: Any) -> list[sp.Expr]:
    if isinstance(x, sp.MatrixBase):
        return list(x)
    if isinstance(x, sp.MatrixExpr):  # A·B with A, B MatrixSymbols: entrywise in A[i, j], B[i, j]
        if not all(d.is_Integer for d in x.shape):
            raise ValueError(f"{sp.sstr(x)[:80]} has a symbolic shape {x.shape}: give explicit sizes")
        return list(x.as_explicit())
    if isinstance(x, sp.NDimArray):
        return list(sp.flatten(x))
    if isinstance(x, (list, tuple, sp.Tuple)):
        return [e for item in x for e in _entries(item)]
    if not isinstance(x, (sp.Basic, int, float)):
        raise ValueError(f"{type(x).__name__} is not an expression, list, tuple, Matrix or array")
    e = sp.sympify(x, strict=True)
    if not isinstance(e, sp.Expr):
        raise ValueError(f"{sp.sstr(e)[:80]} is a {type(e).__name__}, not an expression")
    if e.has(sp.nan, sp.zoo):
        raise ValueError(f"{sp.sstr(e)[:80]} is undefined (contains nan or zoo)")
    return [e]


def _sample_value(sym: sp.Expr, rng: random.Random, counting: bool = False) -> sp.Expr:
    """A random number that respects the symbol's (or indexed entry's) assumptions.

    ``counting`` marks a symbol used as a sum limit or an index: it gets a small integer, ≥ 1
    unless its assumptions allow 0. A symbol not known to be real is complex half the time,
    so that branch cuts get probed.
    """
    if counting or sym.is_integer:
        k = rng.randint(1, 6 if counting else 9)
        if sym.is_negative:
            return sp.Integer(-k)
        if sym.is_nonpositive:
            return sp.Integer(1 - k)
        if sym.is_positive or counting and not sym.is_nonnegative:
            return sp.Integer(k)
        if sym.is_nonnegative:
            return sp.Integer(k - 1)
        return sp.Integer(rng.randint(-6, 9))
    value = sp.Rational(rng.randint(1, 40), rng.randint(1, 13))
    if sym.is_positive or sym.is_nonnegative:
        return value
    if sym.is_negative or sym.is_nonpositive:
        return -value
    value = value if rng.random() < 0.5 else -value
    if sym.is_extended_real or rng.random() < 0.5:
        return value
    return value + sp.I * sp.Rational(rng.randint(-40, 40), rng.randint(1, 13))


def _probe_symbols(exprs: list[sp.Expr]) -> tuple[list[sp.Symbol], set[sp.Symbol]]:
    """The plain symbols to instantiate, and those among them that count (sum limits, indices)."""
    labels = {b.label for e in exprs for b in e.atoms(sp.IndexedBase)}
    free = set().union(*(e.free_symbols for e in exprs)) - labels
    syms = sorted((s for s in free if isinstance(s, sp.Symbol)), key=str)
    counting: set = set()
    for e in exprs:
        for s in e.atoms(sp.Sum, sp.Product):
            for limit in s.limits:
                counting.update(*(b.free_symbols for b in limit[1:]))
        for ix in e.atoms(sp.Indexed):
            counting.update(*(i.free_symbols for i in ix.indices))
    return syms, counting & set(syms)


def _number(expr: sp.Expr) -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """(real part, imaginary part, error bound) of a closed number, at _PROBE_DIGITS digits.

    evalf returns a value it could not tell from zero as a Float of a few bits ("0.e-171"):
    such a part counts as 0 with its magnitude as the error bound.
    """
    if expr.free_symbols:
        raise _Undefined("symbols remain")
    value = sp.N(expr, _PROBE_DIGITS)
    if not value.is_number or value.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
        raise _Undefined("no finite value")
    parts, bound = [], sp.Integer(0)
    for part in value.as_real_imag():
        if not part.is_Number:
            raise _Undefined("no finite value")
        if part.is_Float and part._prec < _RESOLVED_BITS:
            bound += abs(part)
            part = sp.Integer(0)
        parts.append(part)
    return parts[0], parts[1], bound


class _NotInstantiable(_Undefined):
    """An index stays symbolic at every point (an infinite sum, an unevaluated range)."""


_BINDERS = (sp.Sum, sp.Product, sp.Integral, sp.Derivative, sp.Lambda)


def _indices(entry: sp.Expr) -> tuple:
    return entry.indices if isinstance(entry, sp.Indexed) else (entry.i, entry.j)


def _instantiate(exprs: list[sp.Expr], point: dict, rng: random.Random) -> list[sp.Expr]:
    """Substitute the point, expand finite sums, give every indexed entry (q[1], q[2], …) a value."""
    # subs keeps bound variables bound; xreplace is far cheaper where there are none.
    out = [(e.subs(point) if e.has(*_BINDERS) else e.xreplace(point)).doit() for e in exprs]
    entries = sorted(set().union(*(e.atoms(sp.Indexed, _MatrixElement) for e in out)), key=sp.default_sort_key)
    if any(not i.is_number for ix in entries for i in _indices(ix)):
        raise _NotInstantiable("an index stays symbolic")
    values = {ix: _sample_value(ix, rng) for ix in entries}
    return [e.xreplace(values) for e in out] if values else out


def _agree(lhs: sp.Expr, rhs: sp.Expr) -> bool:
    """|lhs − rhs| within _PROBE_RTOL of the larger side, plus evalf's own error bounds."""
    lr, li, lb = _number(lhs)
    rr, ri, rb = _number(rhs)
    gap = sp.sqrt((lr - rr) ** 2 + (li - ri) ** 2)
    scale = max(sp.sqrt(lr**2 + li**2), sp.sqrt(rr**2 + ri**2))
    return bool(gap <= lb + rb + _PROBE_RTOL * scale)


def _probe(lhs: list[sp.Expr], rhs: list[sp.Expr], probes: int) -> tuple[str | None, str]:
    """(refutation or None, how many probes decided).

    A probe decides when every entry has a value on both sides there; one entry that has
    values and disagrees refutes the identity whatever the other entries do.
    """
    syms, counting = _probe_symbols(lhs + rhs)
    indexed = sorted({str(ix.args[0]) for e in lhs + rhs for ix in e.atoms(sp.Indexed, _MatrixElement)})
    wanted = probes if syms or indexed else 1
    rng = random.Random(0)
    decided = tried = 0
    while decided < wanted and tried < wanted * _PROBE_TRIES:
        tried += 1
        point = {s: _sample_value(s, rng, s in counting) for s in syms}
        try:
            both = _instantiate(lhs + rhs, point, rng)
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
            shown = ", ".join(f"{s}={v}" for s, v in list(point.items())[:6]) or "a constant"
            shown += f" (random entries of {', '.join(indexed)})" if indexed else ""
            entry = f", entry {k}" if len(lhs) > 1 else ""
            return (f"refuted at {shown}{entry}: lhs {sp.N(a, 6)}, rhs {sp.N(b, 6)}",
                    f"{decided + 1} of {tried} probes decided")
        decided += not undefined
    if decided == 0:
        return None, f"not probed: 0 of {tried} probe points gave both sides a value"
    return None, f"{decided} of {tried} probes decided"


def _positive(e: sp.Expr) -> bool:
    """e > 0 from the assumptions, including finite sums of positive terms."""
    if e.is_positive:
        return True
    if isinstance(e, (sp.Add, sp.Mul)):
        return all(_positive(a) for a in e.args)
    if isinstance(e, sp.Pow):
        return _positive(e.base) and bool(e.exp.is_extended_real)
    if isinstance(e, sp.exp):
        return bool(e.args[0].is_extended_real)
    if isinstance(e, sp.Sum):  # a non-empty sum of positive terms: every range has hi ≥ lo
        return _positive(e.function) and all(
            (hi - lo).is_nonnegative or ((hi - lo).is_integer and (hi - lo + 1).is_positive) for _, lo, hi in e.limits)
    return False


def _nonzero(d: sp.Expr) -> bool:
    if d.is_zero is False or _positive(d) or _positive(-d):
        return True
    if isinstance(d, sp.Mul):
        return all(_nonzero(f) for f in d.args)
    if isinstance(d, sp.Pow) and d.exp.is_extended_real:
        return _nonzero(d.base) and bool(d.base.is_finite)
    return False


# Functions with poles, and the factor that vanishes there: tan x = sin x / cos x, and so on.
_POLES = {sp.tan: sp.cos, sp.sec: sp.cos, sp.cot: sp.sin, sp.csc: sp.sin,
          sp.tanh: sp.cosh, sp.sech: sp.cosh, sp.coth: sp.sinh, sp.csch: sp.sinh}


def _with_ranges(expr: sp.Expr) -> sp.Expr:
    """Give every summation index the assumptions its range implies (k in 1..n is a positive integer)."""
    def restrict(s):
        new = {}
        for var, lo, hi in s.limits:
            facts = {"integer": bool(lo.is_integer)}
            if lo.is_integer and lo.is_positive:
                facts["positive"] = True
            elif lo.is_integer and lo.is_nonnegative:
                facts["nonnegative"] = True
            elif hi.is_negative:
                facts["negative"] = True
            new[var] = sp.Dummy(str(var), **{k: v for k, v in facts.items() if v})
        return s.xreplace(new)

    return expr.replace(lambda e: isinstance(e, (sp.Sum, sp.Product)), restrict) if expr.has(sp.Sum, sp.Product) \
        else expr


def _denominators(e: sp.Expr) -> set[sp.Expr]:
    """Every expression that must not vanish for ``e`` to be defined: bases of negative powers and
    the vanishing factor of each tan, cot, sec, csc (and hyperbolic) pole. Other singularities
    (log at 0, gamma's poles) are not covered."""
    e = _with_ranges(e)
    found = {p.base for p in e.atoms(sp.Pow) if p.exp.is_extended_negative}
    found.update(_POLES[f.func](f.args[0]) for f in e.atoms(*_POLES))
    return found


def _unsafe_denominator(exprs: list[sp.Expr]) -> str | None:
    """A reason naming the first denominator not shown non-zero, or None when all are."""
    bases = set().union(*(_denominators(e) for e in exprs))
    for d in sorted(bases, key=sp.default_sort_key):
        if _nonzero(d):
            continue
        zero = d.is_number and d.is_zero or _reduces_to_zero(d)
        return (f"denominator {sp.sstr(d)[:120]} is " +
                ("identically 0" if zero else "not shown non-zero under the symbols' assumptions"))
    return None


def _sum_height(e: sp.Basic) -> int:
    return max((1 + _sum_height(s.function) for s in e.atoms(sp.Sum, sp.Product)), default=0)


def _rename_bound(expr: sp.Expr) -> sp.Expr:
    """Name every bound index by its nesting height and position, so Σ_i q_i and Σ_m q_m coincide.

    Sums of equal height never nest, so a shared name cannot capture another sum's index.
    """
    def rename(s):
        height = _sum_height(s.function)
        return s.xreplace({lim[0]: sp.Symbol(f"_bound{height}_{k}", integer=True)
                           for k, lim in enumerate(s.limits)})

    return expr.replace(lambda e: isinstance(e, (sp.Sum, sp.Product)), rename)


def _reduces_to_zero(expr: sp.Expr) -> bool:
    # Cheapest first: most identities here are polynomial or rational in exponentials.
    # Each reduction is valid wherever the expression is defined; the denominators are checked apart.
    if expr.has(sp.Sum, sp.Product):
        expr = _rename_bound(expr)
    reductions = [
        sp.expand,
        lambda e: sp.expand(sp.numer(sp.together(e))),
        lambda e: sp.cancel(sp.expand(e, power_exp=True)),
        lambda e: sp.cancel(sp.powsimp(sp.expand(e))),
        sp.simplify,
    ]
    if expr.has(sp.Sum, sp.Product):
        reductions.append(lambda e: sp.simplify(e.doit()))
    if expr.has(sp.Piecewise, sp.Max, sp.Min, sp.Abs, sp.sign, sp.Heaviside):
        # Case by case: the pieces' conditions are kept, so this is exact.
        reductions.append(lambda e: sp.simplify(sp.piecewise_fold(e.rewrite(sp.Piecewise))))
    if expr.has(sp.ceiling, sp.frac):
        reductions.append(lambda e: sp.expand(e.rewrite(sp.floor)))
    for reduce in reductions:
        try:
            if reduce(expr) == 0:
                return True
        except Exception:
            continue
    return False


def identity(lhs: Any, rhs: Any, *, probes: int = 3) -> tuple[bool, str]:
    """Decide ``lhs == rhs`` for all values of the free symbols; never raises.

    True only when the shapes match, no probe refutes it, every denominator is shown
    non-zero and the difference reduces to zero. The detail says which stage decided.
    """
    try:
        return _identity(lhs, rhs, probes)
    except Exception as exc:  # a check that cannot run is a failed check, never a crash
        return False, f"check raised {type(exc).__name__}: {str(exc)[:200]}"


def _identity(lhs: Any, rhs: Any, probes: int) -> tuple[bool, str]:
    try:
        a_shape, b_shape = _shape(lhs), _shape(rhs)
        if a_shape != b_shape:
            return False, f"shapes differ: {a_shape or 'scalar'} against {b_shape or 'scalar'}"
        a, b = _entries(lhs), _entries(rhs)
    except ValueError as exc:
        return False, str(exc)
    refuted, probed = _probe(a, b, probes)
    if refuted:
        return False, refuted
    why = _unsafe_denominator(a + b)
    if why:
        return False, f"{why} ({probed})"
    for k, (x, y) in enumerate(zip(a, b)):
        if x != y and not _reduces_to_zero(x - y):
            entry = f" (entry {k})" if len(a) > 1 else ""
            return False, f"difference does not simplify to 0{entry}: {sp.sstr(x - y)[:200]} ({probed})"
    return True, (f"identity ({len(a)} entr{'y' if len(a) == 1 else 'ies'}; {probed}; "
                  "denominators non-zero; difference simplified to 0)")
