"""``confirm(claim_id, ...)``: the numeric evidence for one catalogued claim.

The confirmations register themselves (``numeric.registry.confirms``) next to their code; this
module imports them and dispatches by claim id. Keyword parameters are passed on (``n_samples``
and ``seed`` are common to all; ``n_samples=None`` takes the claim's default, ``quick=True`` its
registered quick size). Unknown ids and unknown parameters are refused with a ValueError.
"""
from __future__ import annotations

import inspect

# Imported for their registrations.
from numeric import (backward_checks, curves, dot_product, dropout, merge_checks, real_scores, rope,  # noqa: F401
                     softmax_checks)
from numeric import arguments
from numeric.evidence import Confirmation
from numeric.registry import CONFIRMERS
from proofs.claims import claim as catalogued

CONFIRMABLE = tuple(CONFIRMERS)


def confirm(claim_id: str, *, n_samples=None, seed=0, quick: bool = False, **params) -> Confirmation:
    catalogued(claim_id)  # ValueError naming claim_id if it is not in the catalogue
    if claim_id not in CONFIRMERS:
        raise ValueError(f"claim_id {claim_id!r} has no numeric confirmation; confirmable: {', '.join(CONFIRMABLE)}")
    confirmer = CONFIRMERS[claim_id]
    fn = confirmer.run
    accepted = inspect.signature(fn).parameters
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(f"{claim_id!r} takes no parameter(s) {', '.join(unknown)}; it takes {', '.join(accepted)}")
    if quick:
        n_samples = confirmer.quick.get("n_samples") if n_samples is None else n_samples
        params = {**{k: v for k, v in confirmer.quick.items() if k != "n_samples"}, **params}
    seed = arguments.seed(seed)
    if "alpha" in params:  # refused before any sampling starts
        arguments.alpha(params["alpha"])
    if "n_samples" in accepted:
        if n_samples is not None:
            params["n_samples"] = arguments.n_samples(n_samples)
    elif "n_cases" in accepted and n_samples is not None:
        params["n_cases"] = arguments.positive_int(n_samples, "n_samples")
    return fn(seed=seed, **params)
