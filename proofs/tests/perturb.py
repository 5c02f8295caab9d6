"""Perturbed statements: each claim's formal statement with one conjunct made false.

``python -m proofs.tests.perturb`` derives every claim under every perturbation of one of its
conjuncts and prints the kill rate (perturbations whose derivation fails / all). The
perturbation is generated from the formal statement, never written by hand: an equation loses
a term of its right side when that is a sum, else has a factor changed (×2; 0 becomes 1); an
inequality is strengthened so that it no longer holds; an equivalence is negated.
"""
from __future__ import annotations

import dataclasses
import sys
import time
from contextlib import contextmanager

import sympy as sp

from proofs import claims
from proofs.engine import conjuncts


def perturb_expr(e):
    """A different expression: a term dropped from a sum, else a factor changed."""
    if isinstance(e, sp.MatrixBase):
        m = sp.Matrix(e)
        m[0] = perturb_expr(m[0])
        return sp.ImmutableMatrix(m)
    if isinstance(e, sp.Tuple):
        return sp.Tuple(perturb_expr(e[0]), *e[1:])
    if isinstance(e, sp.Piecewise):
        (first, cond), *rest = e.args
        return sp.Piecewise((perturb_expr(first), cond), *rest)
    if isinstance(e, sp.Add) and len(e.args) > 1:
        return sp.Add(*e.args[:-1])
    return sp.Integer(1) if e == 0 else 2 * e


def perturb_relation(rel):
    """The relation made false (or at least different), from its own terms."""
    if isinstance(rel, sp.Equivalent):
        a, b = rel.args
        return sp.Equivalent(a, sp.Not(b), evaluate=False)
    if isinstance(rel, sp.Ne):
        return sp.Eq(rel.lhs, rel.rhs, evaluate=False)
    if isinstance(rel, (sp.Le, sp.Lt, sp.Ge, sp.Gt)):
        lhs, rhs = rel.lhs, rel.rhs
        # Strengthen: move the numeric bound towards the bounded side.
        upper = isinstance(rel, (sp.Le, sp.Lt))
        if rhs.is_number:
            new = (rhs / 2 if rhs.is_positive else rhs - 1) if upper else (2 * rhs if rhs.is_positive else rhs + 1)
            return type(rel)(lhs, new, evaluate=False)
        if lhs.is_number:
            new = (lhs + 1) if upper else (lhs - 1)
            return type(rel)(new, rhs, evaluate=False)
        return type(rel)(lhs, perturb_expr(rhs), evaluate=False)
    return sp.Eq(rel.lhs, perturb_expr(rel.rhs), evaluate=False)


def perturbations(statement) -> list:
    """One perturbed statement per conjunct."""
    parts = list(conjuncts(statement))
    out = []
    for k, part in enumerate(parts):
        changed = perturb_relation(part)
        assert changed != part, f"perturbation left {part} unchanged"
        out.append(sp.And(*parts[:k], changed, *parts[k + 1:], evaluate=False) if len(parts) > 1 else changed)
    return out


@contextmanager
def stated_as(claim_id: str, statement):
    """The catalogue with ``claim_id``'s statement replaced, for the duration of the block."""
    original = claims._BY_ID[claim_id]
    claims._BY_ID[claim_id] = dataclasses.replace(original, formal=lambda: statement)
    try:
        yield
    finally:
        claims._BY_ID[claim_id] = original


def derive_perturbed(claim_id: str, statement):
    with stated_as(claim_id, statement):
        return claims.claim(claim_id).derive()


def main() -> int:
    rows, start = [], time.perf_counter()
    for c in claims.CLAIMS:
        variants = perturbations(c.statement)
        killed = sum(not derive_perturbed(c.id, p).verified for p in variants)
        rows.append((c.id, killed, len(variants)))
    width = max(len(r[0]) for r in rows)
    print(f"{'claim':<{width}}  killed / perturbations")
    for cid, k, n in rows:
        print(f"{cid:<{width}}  {k:>6} / {n}")
    claims_killed = sum(k == n for _, k, n in rows)
    print(f"claims whose every perturbation fails: {claims_killed} / {len(rows)}; "
          f"perturbations killed: {sum(r[1] for r in rows)} / {sum(r[2] for r in rows)} "
          f"({time.perf_counter() - start:.1f} s)")
    return 0 if claims_killed == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
