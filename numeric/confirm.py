"""``confirm(claim_id, ...)``: the numeric evidence for one catalogued claim.

Each supported claim id maps to the function that gathers its evidence; keyword parameters are
passed on (``n_samples`` and ``seed`` are common to all; ``n_samples=None`` takes the
claim's default). Unknown ids and unknown parameters are refused with a ValueError.
"""
from __future__ import annotations

import inspect

from numeric import arguments, curves, dot_product, real_scores, softmax_checks
from numeric.evidence import Confirmation
from proofs.claims import claim as catalogued

CONFIRMERS = {
    "dot-product-moments": dot_product.dot_product_moments,
    "dot-product-variance": dot_product.dot_product_variance,
    "dot-product-distribution-free": dot_product.distribution_free,
    "scaled-score-unit-variance": dot_product.scaled_score_unit_variance,
    "dk-scaling-trap": dot_product.dk_scaling_trap,
    "prescaled-query": dot_product.prescaled_query,
    "softmax-normalisation": softmax_checks.softmax_normalisation,
    "softmax-shift-invariance": softmax_checks.softmax_shift_invariance,
    "softmax-jacobian": softmax_checks.softmax_jacobian,
    "softmax-jacobian-spectrum": softmax_checks.softmax_jacobian_spectrum,
    "softmax-saturation": curves.confirm_saturation,
    "online-softmax-merge": softmax_checks.online_softmax_merge,
    "online-softmax-monoid": softmax_checks.online_softmax_monoid,
    "online-softmax-unnormalised": softmax_checks.online_softmax_unnormalised,
    "logsumexp-merge": softmax_checks.logsumexp_merge,
    "attention-backward": softmax_checks.attention_backward,
    "self-attention-score-moments": real_scores.self_attention_score_moments,
    "distinct-token-score-moments": real_scores.distinct_token_score_moments,
    "scale-trap-limits": real_scores.scale_trap_limits,
}
CONFIRMABLE = tuple(CONFIRMERS)


def confirm(claim_id: str, *, n_samples=None, seed=0, **params) -> Confirmation:
    catalogued(claim_id)  # ValueError naming claim_id if it is not in the catalogue
    if claim_id not in CONFIRMERS:
        raise ValueError(f"claim_id {claim_id!r} has no numeric confirmation; confirmable: {', '.join(CONFIRMABLE)}")
    fn = CONFIRMERS[claim_id]
    accepted = inspect.signature(fn).parameters
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(f"{claim_id!r} takes no parameter(s) {', '.join(unknown)}; it takes {', '.join(accepted)}")
    seed = arguments.seed(seed)
    if "alpha" in params:  # refused before any sampling starts
        arguments.alpha(params["alpha"])
    if "n_samples" in accepted:
        if n_samples is not None:
            params["n_samples"] = arguments.n_samples(n_samples)
    elif "n_cases" in accepted and n_samples is not None:
        params["n_cases"] = arguments.positive_int(n_samples, "n_samples")
    return fn(seed=seed, **params)
