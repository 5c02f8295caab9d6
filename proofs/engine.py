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

import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import sympy as sp

PROVED = "proved"
FAILED = "failed"

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


from proofs.identity import identity  # noqa: E402,F401  (re-exported: theorems import it from here)
