"""Premises that carry their kind of trust, on either engine.

The engine API of branch proofs-core (see ENGINE_API.md) gives ``Proof.premise`` a ``kind`` (and
a ``reference`` for a cited theorem) and takes a claim's title, statement and assumptions from the
catalogue. Until that engine is merged, these two helpers build the same derivation on the
current one; once it is, they reduce to the plain calls and can be inlined.
"""
from __future__ import annotations

import inspect

from proofs.claims import claim
from proofs.engine import Proof

KINDS = ("definition", "assumption", "cited", "hypothesis")


def _new_engine() -> bool:
    return "subject" in inspect.signature(Proof.equal).parameters


def proof(claim_id: str, statement) -> Proof:
    """A Proof of a catalogued claim, its title and assumptions from the catalogue and ``statement``
    the SymPy relation (a conjunction) each of whose conjuncts a checked step must establish."""
    c = claim(claim_id)
    if _new_engine():
        return Proof(claim_id, statement=statement, assumptions=c.assumptions)
    return Proof(claim_id, c.title, statement, c.assumptions)


def equal(pf: Proof, rule: str, description: str, lhs, rhs, *, subject=None) -> bool:
    """A checked identity; on the new engine it establishes ``subject = rhs`` (a statement conjunct)."""
    if subject is not None and _new_engine():
        return pf.equal(rule, description, lhs, rhs, subject=subject)
    return pf.equal(rule, description, lhs, rhs)


def holds(pf: Proof, rule: str, description: str, lhs, rhs, check, relation: str = "=", *, subject=None) -> bool:
    if subject is not None and _new_engine():
        return pf.holds(rule, description, lhs, rhs, check, relation, subject=subject)
    return pf.holds(rule, description, lhs, rhs, check, relation)


def premise(pf: Proof, rule: str, description: str, lhs, rhs=None, relation: str = "=", *, kind: str,
            reference: str | None = None) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if kind == "cited" and not reference:
        raise ValueError("a cited premise needs a reference")
    if "kind" in inspect.signature(pf.premise).parameters:
        pf.premise(rule, description, lhs, rhs, relation, kind=kind, reference=reference)
    else:
        told = f" ({reference})" if reference else ""
        pf.premise(rule, f"[{kind}] {description}{told}", lhs, rhs, relation)
