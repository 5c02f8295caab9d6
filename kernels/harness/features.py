"""Which optional parts of SDPA's contract an implementation offers.

``attn_mask`` and ``dropout_p`` are read from the signature: an impl whose signature lacks them
(and has no ``**kwargs`` to pass them on) is still verifiable, and the invariants that need them
are reported "not applicable". A callable whose signature cannot be read (torch's builtin SDPA)
is taken to offer SDPA's whole contract. ``causal``, ``gqa`` and ``backward`` are the caller's
switches of ``verify_attention``.
"""
from __future__ import annotations

import inspect

from kernels.harness.invariants import ATTN_MASK, BACKWARD, CAUSAL, DROPOUT, GQA

SIGNATURE_FEATURES = (ATTN_MASK, DROPOUT)


def offered(impl, *, causal: bool = True, gqa: bool = True, backward: bool = True) -> frozenset:
    """The features ``impl`` offers: from the switches, and attn_mask/dropout_p from its signature."""
    features = {f for f, on in ((CAUSAL, causal), (GQA, gqa), (BACKWARD, backward)) if on}
    try:
        params = inspect.signature(impl).parameters
    except (TypeError, ValueError):  # a builtin without a signature: SDPA itself
        return frozenset(features | set(SIGNATURE_FEATURES))
    forwards_all = any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params.values())
    return frozenset(features | {f for f in SIGNATURE_FEATURES if forwards_all or f in params})
