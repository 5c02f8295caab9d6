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
# torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
# is_causal=False, scale=None, enable_gqa=False): the harness passes q, k, v by position and the
# rest by keyword (drawn problems also in generate.ARGUMENT_FORMS: by position where takes_positional). attn_mask and dropout_p may be missing (their checks are not applicable); the
# harness passes the other three on every call.
SDPA_SIGNATURE = ("query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, "
                  "enable_gqa=False")
ALWAYS_PASSED = ("is_causal", "scale", "enable_gqa")


def offered(impl, *, causal: bool = True, gqa: bool = True, backward: bool = True) -> frozenset:
    """The features ``impl`` offers: from the switches, and attn_mask/dropout_p from its signature."""
    features = {f for f, on in ((CAUSAL, causal), (GQA, gqa), (BACKWARD, backward)) if on}
    try:
        params = inspect.signature(impl).parameters
    except (TypeError, ValueError):  # a builtin without a signature: SDPA itself
        return frozenset(features | set(SIGNATURE_FEATURES))
    forwards_all = any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params.values())
    return frozenset(features | {f for f in SIGNATURE_FEATURES if forwards_all or f in params})


# SDPA's positional order past value, as its positional callers use it (nn.MultiheadAttention calls
# scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)); scale and enable_gqa are keyword-only.
POSITIONAL = ("attn_mask", "dropout_p", "is_causal")


def takes_positional(impl) -> bool:
    """Whether ``impl`` offers SDPA's positional calling: six positional parameters with attn_mask and dropout_p
    fourth and fifth (or *args; a builtin is taken at its word). Then its sixth must be is_causal: a positional
    caller's is_causal lands there. One without them refuses a positional caller loudly (TypeError), or lacks
    the mask or dropout (their checks not applicable), and is called by keyword."""
    try:
        params = list(inspect.signature(impl).parameters.values())
    except (TypeError, ValueError):
        return True
    kinds = inspect.Parameter
    if any(p.kind == kinds.VAR_POSITIONAL for p in params):
        return True
    positional = [p.name for p in params if p.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 6 and tuple(positional[3:5]) == POSITIONAL[:2]


def signature_problems(impl) -> list[str]:
    """Why the harness cannot call ``impl`` as it calls SDPA (empty when it can, or when the
    signature cannot be read: a builtin is taken at its word)."""
    try:
        sig = inspect.signature(impl)
    except (TypeError, ValueError):
        return []
    params = list(sig.parameters.values())
    kinds = inspect.Parameter
    var_positional = any(p.kind == kinds.VAR_POSITIONAL for p in params)
    var_keyword = any(p.kind == kinds.VAR_KEYWORD for p in params)
    positional = [p for p in params if p.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD)]
    problems = []
    if len(positional) < 3 and not var_positional:
        problems.append(f"it takes {len(positional)} positional argument(s), not query, key, value")
    taken = [p.name for p in positional[:3] if p.name in ALWAYS_PASSED + SIGNATURE_FEATURES]
    if taken:
        problems.append(f"it takes {', '.join(taken)} among its first three arguments, where SDPA takes "
                        "query, key, value")
    rest = [p for p in params if p not in positional[:3]]
    names = {p.name for p in rest if p.kind in (kinds.POSITIONAL_OR_KEYWORD, kinds.KEYWORD_ONLY)}
    missing = [n for n in ALWAYS_PASSED if n not in names and not var_keyword and n not in taken]
    if missing:
        problems.append(f"it does not accept {', '.join(missing)} by keyword")
    positional_only = [p.name for p in rest if p.kind == kinds.POSITIONAL_ONLY and p.name in ALWAYS_PASSED]
    if positional_only:
        problems.append(f"{', '.join(positional_only)} are positional-only")
    required = [p.name for p in rest if p.default is kinds.empty
                and p.kind in (kinds.POSITIONAL_OR_KEYWORD, kinds.KEYWORD_ONLY)]
    if required:
        problems.append(f"it requires {', '.join(required)}, which SDPA's callers leave out")
    return problems


def check_signature(impl) -> None:
    """Refuse, with one message, an ``impl`` the harness cannot call as it calls SDPA; every check
    would otherwise fail with the same TypeError."""
    problems = signature_problems(impl)
    if problems:
        name = getattr(impl, "__qualname__", None) or getattr(impl, "__name__", None) or type(impl).__name__
        raise TypeError(f"impl {name}{inspect.signature(impl)} is not SDPA-compatible: {'; '.join(problems)}. "
                        f"SDPA's signature is ({SDPA_SIGNATURE}); attn_mask and dropout_p may be left out "
                        "(their checks are then not applicable)")
