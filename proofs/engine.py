"""Building derivations: a theorem proposes, the checker decides.

A theorem is a plain function that builds a :class:`Derivation` with a :class:`Proof`. Every step
is a *rule application* (see ``proofs.checker.RULES``) recorded in a proof certificate; the builder
checks nothing that counts. "Proved" is the verdict of :func:`proofs.checker.check` replaying the
certificate, recomputed on demand and never stored: a :class:`Derivation` is frozen, and its
certificate is a JSON string.

Premises say what trust they ask for: a definition (conservative when its name is new), an
assumption of the claim, a cited theorem (with its reference) or an induction hypothesis. A step no
rule covers is a named computation (``Proof.holds``, or a label bound by ``equal(subject=...)``): the
verdict then reads "proved, given unchecked computation NAME (file:function)".
"""
from __future__ import annotations

import inspect
import json
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import sympy as sp

from proofs import checker
from proofs.checker import FORMAT, VERSION, conjuncts, substitute, write

PROVED = "proved"
FAILED = "failed"

DEFINITION = "definition"
ASSUMPTION = "assumption"
CITED = "cited"
HYPOTHESIS = "hypothesis"  # an induction hypothesis
PREMISE_KINDS = (DEFINITION, ASSUMPTION, CITED, HYPOTHESIS)

_RELATIONS: dict[str, Callable[[Any, Any], Any]] = {
    "=": lambda a, b: sp.Eq(a, b, evaluate=False),
    "≤": lambda a, b: sp.Le(a, b, evaluate=False), "<=": lambda a, b: sp.Le(a, b, evaluate=False),
    "≥": lambda a, b: sp.Ge(a, b, evaluate=False), ">=": lambda a, b: sp.Ge(a, b, evaluate=False),
    "<": lambda a, b: sp.Lt(a, b, evaluate=False), ">": lambda a, b: sp.Gt(a, b, evaluate=False),
    "≠": lambda a, b: sp.Ne(a, b, evaluate=False), "!=": lambda a, b: sp.Ne(a, b, evaluate=False),
    "⟺": lambda a, b: sp.Equivalent(a, b, evaluate=False),
    "~": lambda a, b: sp.Function("Distributed")(a, b),  # a random variable and its law: a premise only
}
_SYMBOL_OF = {sp.Eq: "=", sp.Le: "≤", sp.Ge: "≥", sp.Lt: "<", sp.Gt: ">", sp.Ne: "≠"}


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


def _general(forall: Iterable) -> dict:
    symbols = list(forall)
    return {"forall": [write(x) for x in symbols]} if symbols else {}


def _source(fn: Any) -> str:
    """file:function of a callable, relative to the repository ("proofs/theorems/x.py:f")."""
    try:
        path = inspect.getsourcefile(fn) or "?"
        line = inspect.getsourcelines(fn)[1]
    except (TypeError, OSError):
        return f"?:{getattr(fn, '__qualname__', repr(fn))}"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rel = os.path.relpath(path, root) if path.startswith(root) else path
    name = getattr(fn, "__qualname__", "?")
    return f"{rel}:{name}" + (f" (line {line})" if "<lambda>" in name else "")


def _caller(depth: int = 2) -> str:
    frame = inspect.stack()[depth]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.relpath(frame.filename, root) if frame.filename.startswith(root) else frame.filename
    return f"{path}:{frame.function} (line {frame.lineno})"


@dataclass(frozen=True)
class Fact:
    """A premise or step of a proof under construction: its id and the relation it states."""

    id: str
    relation: Any
    ok: bool | None = None  # what the builder already knows (a citation of an unproved theorem: False)

    def __bool__(self) -> bool:
        return self.ok is not False

    @property
    def lhs(self):
        return self.relation.lhs

    @property
    def rhs(self):
        return self.relation.rhs


@dataclass(frozen=True)
class Step:
    """One line of a derivation as the report shows it (premise or rule application, and its outcome)."""

    rule: str
    description: str
    lhs: Any
    rhs: Any = None
    passed: bool | None = None  # None marks a premise: stated, not checked
    detail: str = ""
    relation: str = "="
    kind: str | None = None
    reference: str | None = None

    @property
    def is_premise(self) -> bool:
        return self.passed is None

    @property
    def trust(self) -> str:
        return self.reference or self.description


class Result(dict):
    """A derivation's named results, readable as ``r["mean"]`` or ``r.mean``."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


@dataclass(frozen=True)
class Derivation:
    """A finished proof: its certificate (JSON text) and results. Its verdict is the checker's."""

    claim_id: str
    title: str
    assumptions: tuple[str, ...]
    certificate_json: str
    result: Any = None
    seconds: float = 0.0

    @property
    def certificate(self) -> dict:
        return json.loads(self.certificate_json)

    @property
    def check(self) -> "checker.Verdict":
        return checker.check(self.certificate_json)

    @property
    def statement(self) -> Any:
        cert = self.certificate
        return checker.read_in(cert, cert["statement"])

    @property
    def verified(self) -> bool:
        return self.check.proved

    @property
    def verdict(self) -> str:
        return PROVED if self.verified else FAILED

    @property
    def verdict_line(self) -> str:
        return self.check.line

    @property
    def reasons(self) -> list[str]:
        return list(self.check.reasons)

    @property
    def trust_base(self) -> dict[str, list[str]]:
        return self.check.trust_base if self.verified else {}

    @property
    def computations(self) -> list[str]:
        return self.trust_base.get("computation", [])

    @property
    def steps(self) -> tuple[Step, ...]:
        cert, outcomes = self.certificate, {o.id: o for o in self.check.outcomes}
        out = []
        for p in cert.get("premises", []):
            rel = checker.read_in(cert, p["statement"])
            lhs, rhs, sym = (rel.lhs, rel.rhs, _SYMBOL_OF.get(type(rel), "=")) if hasattr(rel, "rhs") else (rel, None, "=")
            out.append(Step(p.get("label") or p["kind"], p.get("description", ""), lhs, rhs, None, "premise", sym,
                            p["kind"], p.get("reference")))
        for s in cert.get("steps", []):
            rel, o = checker.read_in(cert, s["conclusion"]), outcomes.get(s["id"])
            lhs, rhs, sym = (rel.lhs, rel.rhs, _SYMBOL_OF.get(type(rel), "=")) if hasattr(rel, "rhs") else (rel, None, "=")
            out.append(Step(s.get("label") or s["rule"], s.get("description", ""), lhs, rhs,
                            bool(o and o.passed), o.detail if o else "not replayed", sym))
        return tuple(out)

    @property
    def checked_steps(self) -> list[Step]:
        return [s for s in self.steps if not s.is_premise]

    @property
    def failed_steps(self) -> list[Step]:
        return [s for s in self.steps if s.passed is False]

    @property
    def trusted(self) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if s.is_premise)

    @property
    def unmatched(self) -> tuple:
        return tuple(r for r in self.check.reasons if "not established" in r)

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
    ``claim_id``: a theorem does not restate them, and a catalogued id with another statement is
    refused. A helper deriving an instance outside the catalogue (``dot_product_moments(d=3)``) uses
    its own id and passes ``statement=``.
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
        if entry is not None and (title is not None or assumptions is not None):
            raise ValueError(f"claim_id {claim_id!r} is catalogued: its title and assumptions come from "
                             "proofs/claims.py, not from the theorem")
        if entry is not None and statement is not None and not checker._same_all(statement, entry.statement):
            raise ValueError(f"claim_id {claim_id!r} is catalogued with another statement: derive an instance "
                             "under its own id")
        self._claim_id = claim_id
        self._title = title if title is not None else (entry.title if entry else claim_id)
        self._statement = _sympify(statement) if statement is not None else entry.statement
        self._assumptions = tuple(assumptions) if assumptions is not None else (entry.assumptions if entry else ())
        self._premises: list[dict] = []
        self._steps: list[dict] = []
        self._start = time.perf_counter()

    claim_id = property(lambda self: self._claim_id)
    statement = property(lambda self: self._statement)
    title = property(lambda self: self._title)
    assumptions = property(lambda self: self._assumptions)

    @property
    def steps(self) -> tuple[Step, ...]:
        """The steps so far, with the checker's outcomes (a replay of the certificate up to here)."""
        return self.finish().steps

    # ---------------------------------------------------------------- reading the statement
    def stated(self, subject: Any) -> Any:
        """The statement's conjunct about ``subject`` (the relation whose lhs it is)."""
        for c in conjuncts(self.statement):
            if isinstance(c, sp.core.relational.Relational) and c.lhs == subject:
                return c
        raise ValueError(f"the statement of {self.claim_id} has no conjunct about {subject}")

    def claimed(self, subject: Any) -> Any:
        """What the statement says ``subject`` equals (or is bounded by): the rhs of its conjunct."""
        return self.stated(subject).rhs

    # ---------------------------------------------------------------- recording
    def _id(self, prefix: str) -> str:
        return f"{prefix}{len(self._premises) + len(self._steps) + 1}"

    def _premise(self, kind: str, rel: Any, description: str, *, reference: str | None = None,
                 forall: Iterable = (), label: str | None = None) -> Fact:
        if kind not in PREMISE_KINDS:
            raise ValueError(f"kind must be one of {PREMISE_KINDS}, got {kind!r}")
        if kind == CITED and not (isinstance(reference, str) and reference.strip()):
            raise ValueError("reference must name the cited theorem (e.g. \"Chebyshev's inequality\") "
                             "when kind is 'cited'")
        fid = self._id("P")
        entry = {"id": fid, "kind": kind, "statement": write(rel), "description": description,
                 "forall": [write(s) for s in forall]}
        if reference:
            entry["reference"] = reference
        if label:
            entry["label"] = label
        self._premises.append(entry)
        return Fact(fid, rel)

    def _step(self, rule: str, conclusion: Any, description: str, premises: Iterable[Fact] = (),
              label: str | None = None, **data: Any) -> Fact:
        fid = self._id("S")
        entry = {"id": fid, "rule": rule, "conclusion": write(conclusion), "description": description,
                 "premises": [p.id for p in premises]}
        if label:
            entry["label"] = label
        entry.update(data)
        self._steps.append(entry)
        return Fact(fid, conclusion)

    # ---------------------------------------------------------------- premises
    def define(self, lhs: Any, rhs: Any, description: str = "", *, forall: Iterable = ()) -> Fact:
        """A definition lhs := rhs; ``forall`` lists the symbols it holds for every value of (f(x) := …)."""
        return self._premise(DEFINITION, relation(lhs, "=", rhs), description, forall=forall)

    def assume(self, rel: Any, description: str = "", *, forall: Iterable = ()) -> Fact:
        """An assumption of the claim, as a relation."""
        return self._premise(ASSUMPTION, rel, description, forall=forall)

    def cite_external(self, rel: Any, reference: str, description: str = "", *, forall: Iterable = ()) -> Fact:
        """A theorem from the literature, taken as given and named in the verdict."""
        return self._premise(CITED, rel, description, reference=reference, forall=forall)

    def hypothesis(self, rel: Any, description: str = "induction hypothesis") -> Fact:
        return self._premise(HYPOTHESIS, rel, description)

    # ---------------------------------------------------------------- rule applications
    def identity(self, lhs: Any, rhs: Any, description: str = "", *, label: str | None = None,
                 forall: Iterable = ()) -> Fact:
        """lhs = rhs; ``forall`` asks the checker to generalise it over those symbols (then usable as a pattern)."""
        return self._step("identity", relation(lhs, "=", rhs), description, label=label, **_general(forall))

    def rewrite(self, lhs: Any, rhs: Any, using: Iterable[Fact], description: str = "", *, relation_: str = "=",
                label: str | None = None, forall: Iterable = ()) -> Fact:
        """lhs rel rhs after substituting the ``using`` equations (and, for ≤/<, with their inequalities)."""
        return self._step("rewrite", relation(lhs, relation_, rhs), description, using, label=label,
                          **_general(forall))

    def truncation(self, lhs: Any, rhs: Any, using: Iterable[Fact] = (), description: str = "", *,
                   label: str | None = None, peel: Any = None) -> Fact:
        """lhs = rhs after the ``using`` equations, taking the last term out of the Σ/Π whose upper limit is
        ``peel``, and cutting Σ_{lo..hi} [k ≤ m] f(k) to Σ_{lo..m} f(k)."""
        data = {"peel": write(_sympify(peel))} if peel is not None else {}
        return self._step("truncation", relation(lhs, "=", rhs), description, using, label=label, **data)

    def instance(self, general: Fact, mapping: dict, description: str = "", *, label: str | None = None) -> Fact:
        """``general`` (a premise or generalised step over ∀-symbols) at ``mapping`` {symbol: value}."""
        conclusion = checker.substitute(general.relation, {k: _sympify(v) for k, v in mapping.items()})
        return self._step("instance", conclusion, description, [general], label=label,
                          mapping=[[write(k), write(_sympify(v))] for k, v in mapping.items()])

    def chain(self, links: Iterable[Fact], lhs: Any, rel: str, rhs: Any, description: str = "",
              label: str | None = None, forall: Iterable = ()) -> Fact:
        return self._step("chain", relation(lhs, rel, rhs), description, list(links), label=label, **_general(forall))

    def sign(self, small: Any, rel: str, big: Any, description: str = "", *, using: Iterable[Fact] = (),
             terms: Iterable | None = None, label: str | None = None) -> Fact:
        data = {"terms": [write(_sympify(t)) for t in terms]} if terms is not None else {}
        return self._step("sign", relation(small, rel, big), description, using, label=label, **data)

    def bound(self, links: Iterable[Fact], op: str, lhs: Any, rel: str, rhs: Any, description: str = "",
              nonnegative: Iterable[Fact] = (), label: str | None = None) -> Fact:
        links = list(links)
        return self._step("bound", relation(lhs, rel, rhs), description, links + list(nonnegative), label=label,
                          op=op, nonnegative=[f.id for f in nonnegative])

    def induction(self, predicate: Any, var: Any, base_value: Any, base: Fact, step: Fact, hypothesis: Fact,
                  description: str = "", *, step_var: Any = None, label: str | None = None, forall: Iterable = ()) -> Fact:
        data = {"var": write(var), "base": write(_sympify(base_value)), **_general(forall)}
        if step_var is not None:
            data["step_var"] = write(step_var)
        return self._step("induction", predicate, description, [base, step, hypothesis], label=label, **data)

    def linearity(self, lhs: Any, rhs: Any, description: str = "", *, operator: Any = None,
                  random: Iterable = (), label: str | None = None, nest: bool = False) -> Fact:
        """``nest``: the sums are nested (a factor varying in one index leaves the others) at once, not only after
        the plain distribution fails (it saves the checker that attempt)."""
        data = {"random": [write(r) for r in random], **({"nest": True} if nest else {})}
        if operator is not None:
            data["operator"] = write(operator)
        return self._step("linearity", relation(lhs, "=", rhs), description, label=label, **data)

    def generalisation(self, fact: Fact, symbols: Iterable, description: str = "", *,
                       label: str | None = None) -> Fact:
        """``fact`` for every value of ``symbols`` (within their assumptions): later rewrites use it as a pattern."""
        symbols = list(symbols)
        return self._step("generalisation", fact.relation, description, [fact], label=label,
                          forall=[write(x) for x in symbols])

    def enumeration(self, predicate: Any, ranges: Iterable[tuple], description: str = "",
                    label: str | None = None) -> Fact:
        """P(v) for each v in each (symbol, lo, hi): the conclusion is the explicit conjunction."""
        ranges = [(s, int(lo), int(hi)) for s, lo, hi in ranges]
        instances = [predicate]
        for s, lo, hi in ranges:
            instances = [checker.substitute(p, {s: sp.Integer(x)}) for p in instances for x in range(lo, hi + 1)]
        conclusion = sp.And(*instances, evaluate=False) if len(instances) > 1 else instances[0]
        return self._step("enumeration", conclusion, description, label=label,
                          ranges=[[write(s), lo, hi] for s, lo, hi in ranges], predicate=write(predicate))

    def cite(self, derivation: Derivation, conjunct: Any = None) -> Fact:
        """Use what another derivation proved: its certificate is embedded and checked with this one."""
        stated = derivation.statement if conjunct is None else conjunct
        fact = self._step("citation", stated, f"from {derivation.claim_id}: {sp.sstr(stated)[:200]}",
                          label=f"theorem {derivation.claim_id}", certificate=derivation.certificate)
        ok = derivation.verified and (conjunct is None or any(checker._same(conjunct, c)
                                                              for c in conjuncts(derivation.statement)))
        return Fact(fact.id, fact.relation, ok)

    def computation(self, rel: Any, check: Callable[[], Any], description: str = "", *, name: str | None = None,
                    label: str | None = None) -> Fact:
        """A step no rule covers: ``check()`` is run now, and the verdict names it as trusted."""
        try:
            out = check()
        except Exception as exc:
            out = (False, f"check raised {type(exc).__name__}: {exc}")
        truth = (bool, sp.logic.boolalg.BooleanAtom)
        if isinstance(out, tuple) and len(out) == 2 and isinstance(out[0], truth):
            ok, detail = bool(out[0]), str(out[1])
        elif isinstance(out, truth):
            ok, detail = bool(out), ""
        else:
            ok, detail = False, f"a check must return a bool or (bool, str), got {type(out).__name__}"
        # A callable may use anything stated before it: it rests on every premise and citation so far
        # (not on an induction hypothesis, which only the induction rule may discharge).
        before = [Fact(p["id"], None) for p in self._premises if p["kind"] != HYPOTHESIS]
        before += [Fact(s["id"], None) for s in self._steps if s["rule"] == "citation"]
        return self._step("computation", rel, description, before, label=label,
                          name=name or getattr(check, "__name__", "?"), source=_source(check), outcome=bool(ok),
                          detail=detail or ("holds" if ok else "does not hold"))

    # ---------------------------------------------------------------- the older vocabulary
    def premise(self, rule: str, description: str, lhs: Any, rhs: Any = None, relation_: str = "=", *,
                kind: str, reference: str | None = None, **kw: Any) -> Fact:
        """A stated, unchecked step of a kind (older form of define/assume/cite_external/hypothesis)."""
        rel_symbol = kw.pop("relation", relation_)
        rel = _sympify(lhs) if rhs is None else relation(lhs, rel_symbol, rhs)
        if kind == DEFINITION:
            try:
                checker._definition_head(rel, (), "?")
            except checker.CertificateError:
                # Not "name = body": it may constrain names already in use, so it is an assumption, and listed.
                kind = ASSUMPTION
        return self._premise(kind, rel, description, reference=reference, label=rule)

    def equal(self, rule: str, description: str, lhs: Any, rhs: Any, *, subject: Any = None,
              where: Callable[[Any], Any] | None = None, establishes: Any = None) -> bool:
        """An identity step lhs = rhs. A ``where`` rewrite or a ``subject``/``establishes`` label is no rule:
        it becomes a named computation on top of the checked identity, and the verdict says so."""
        try:
            a, b = (lhs, rhs) if where is None else (where(lhs), where(rhs))
            fact = self.identity(a, b, description, label=rule)
        except Exception as exc:
            return bool(self.computation(sp.Eq(sp.Symbol("step"), 0, evaluate=False),
                                         lambda: (False, f"step could not be built: {type(exc).__name__}: {exc}"),
                                         description, label=rule) and False)
        read_back = checker.read(write(fact.relation))  # as the checker will: the builder's objects never reach its memo
        ok, _ = checker.decide_identity(read_back.lhs, read_back.rhs)
        if subject is None and where is None and establishes is None:
            return ok
        target = establishes if establishes is not None else relation(subject if subject is not None else lhs, "=", rhs)
        source = _caller()
        self._steps.append({"id": self._id("S"), "rule": "computation", "conclusion": write(target),
                            "description": "label: " + description, "premises": [fact.id], "label": rule,
                            "name": "equal(" + ", ".join(k for k, v in (("subject", subject), ("where", where),
                                                                        ("establishes", establishes)) if v is not None)
                                    + ")",
                            "source": source, "outcome": bool(ok), "detail": "the identity above, read as this"})
        return ok

    def holds(self, rule: str, description: str, lhs: Any, rhs: Any, check: Callable[[], Any],
              relation_: str = "=", *, subject: Any = None, establishes: Any = None, **kw: Any) -> bool:
        """A custom check: a named computation, trusted and listed in the verdict."""
        rel_symbol = kw.pop("relation", relation_)
        target = establishes if establishes is not None else relation(subject if subject is not None else lhs,
                                                                      rel_symbol, rhs) if rhs is not None else lhs
        fact = self.computation(target, check, description, label=rule)
        return bool(self._steps[-1]["outcome"]) if fact else False

    # ---------------------------------------------------------------- finishing
    def finish(self, result: Any = None) -> Derivation:
        cert = {"format": FORMAT, "version": VERSION, "claim": self.claim_id, "title": self.title,
                "statement": write(self.statement), "assumptions": list(self.assumptions),
                "premises": self._premises, "steps": self._steps}
        return Derivation(self.claim_id, self.title, self.assumptions, json.dumps(cert, sort_keys=True, ensure_ascii=False),
                          result, time.perf_counter() - self._start)


from proofs.identity import identity  # noqa: E402,F401  (re-exported: theorems import it from here)
