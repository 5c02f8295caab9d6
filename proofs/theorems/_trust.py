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


def proof(claim_id: str, statement) -> Proof:
    """A Proof of a catalogued claim (its title and assumptions from the catalogue)."""
    c = claim(claim_id)
    if len(inspect.signature(Proof).parameters) == 1:  # the catalogue-driven engine
        return Proof(claim_id)
    return Proof(claim_id, c.title, statement, c.assumptions)


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
