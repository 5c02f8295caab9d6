"""Which function confirms which claim: registered by ``@confirms`` next to the function itself.

A registration also states the claim's *quick* parameters: the smaller sample the report's
``--quick`` run and the test suite use (one table for both, so the tests run what the report
runs). Without them, a quick run takes the function's own defaults.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from proofs.claims import claim as catalogued


@dataclass(frozen=True)
class Confirmer:
    claim_id: str
    run: Callable  # run(*, seed, alpha, n_samples or n_cases, ...) -> Confirmation
    quick: dict = field(default_factory=dict)


CONFIRMERS: dict[str, Confirmer] = {}


def confirms(claim_id: str, **quick):
    """Register the decorated function as the numeric confirmation of ``claim_id``."""
    catalogued(claim_id)  # a ValueError naming an id the catalogue does not hold, at import time

    def register(fn: Callable) -> Callable:
        if claim_id in CONFIRMERS:
            raise ValueError(f"claim_id {claim_id!r} already has a confirmation: "
                             f"{CONFIRMERS[claim_id].run.__module__}.{CONFIRMERS[claim_id].run.__name__}")
        CONFIRMERS[claim_id] = Confirmer(claim_id, fn, dict(quick))
        return fn

    return register
