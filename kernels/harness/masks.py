"""SDPA's ``attn_mask``: boolean (True = attend) and additive float masks, broadcast over batch and
heads, alone and with ``is_causal``.

What torch 2.13's CPU SDPA does, measured (math and flash backends, float32 and bfloat16, boolean
and additive masks): a row with no visible key has output 0 and zero gradients; with both
``attn_mask`` and ``is_causal=True`` the default dispatch applies both, while the math backend
raises "Explicit attn_mask should not be set when is_causal=True". The harness accepts either
refusing (any exception) or applying both, and rejects anything else.
"""
from __future__ import annotations

import functools
import itertools
import math

import torch

from kernels.harness import reference as ref
from kernels.harness import tolerance as tol
from kernels.harness.cases import CONTRACT, RANDOM, Case, randn
from kernels.harness.invariants import ATTN_MASK, BACKWARD, CAUSAL, Invariant, register
from kernels.harness.subject import (Outcome, Subject, against, checked_output, gradients_against, measured, relation,
                                     worst)


def _rows_see_a_key(visible: torch.Tensor, gen) -> torch.Tensor:
    """visible with one random key switched on in every row, so no row is empty unless meant to be."""
    pick = torch.randint(visible.shape[-1], visible.shape[:-1] + (1,), generator=gen)
    return visible.scatter(-1, pick, True)


def bool_mask(s: Subject, shape, label: str, keep: float = 0.6) -> torch.Tensor:
    gen = s.rng(label)
    visible = torch.rand(shape, generator=gen) < keep
    return _rows_see_a_key(visible, gen).to(s.device)


def additive_mask(s: Subject, shape, label: str, dtype: torch.dtype | None = None, shift: float = 0.0,
                  magnitude: float = 1.0) -> torch.Tensor:
    """Finite values of either sign (N(0, 2²) times ``magnitude``) plus ``shift`` with about a quarter -inf, in the
    inputs' dtype or ``dtype``. A shift leaves the softmax as it is; in a float32 mask beside half q it is a
    bias a half type cannot hold (a position bias of a few hundred), so casting it to q's dtype shows."""
    gen = s.rng(label)
    values = 2 * magnitude * randn(gen, *shape, dtype=dtype or s.dtype) + shift
    hidden = ~_rows_see_a_key(torch.rand(shape, generator=gen) < 0.75, gen)
    values = values.masked_fill(hidden, float("-inf"))
    return s.cast(values) if dtype is None else values.to(dtype=dtype, device=s.device)


KEY_PADDING = ("(B, 1, 1, Nk)", "(1, 1, 1, Nk)")  # the one-row forms of _shapes

_DIMS = ("B", "Hq", "Nq", "Nk")


def _broadcast_forms() -> tuple[str, ...]:
    """Every form SDPA broadcasts a mask from, by its pattern rather than by a list: at rank 4 each of (B, Hq, Nq,
    Nk) full or 1 (16), at rank 3 each of (Hq, Nq, Nk) (8), at rank 2 each of (Nq, Nk) (4), and (Nk,). torch 2.13's
    math SDPA takes each (measured, boolean and float32, rank-4 and rank-5 inputs: the output of the mask expanded to
    (B, Hq, Nq, Nk)); its default CPU dispatch refuses (Nk,) without dropout, so that refusal is allowed
    (generate._judged). Red team rt44h: a (1, Hq, 1, Nk) per-head key bias, in no hand list, read as key padding with
    head 0's row for every head escaped."""
    forms = []
    for rank in (4, 3, 2):
        for pattern in itertools.product((True, False), repeat=rank):
            names = [d if full else "1" for d, full in zip(_DIMS[4 - rank:], pattern)]
            forms.append(f"({', '.join(names)})")
    return tuple(forms) + ("(Nk,)",)


BROADCAST_FORMS = _broadcast_forms()


def form_shape(form: str, b: int, h: int, nq: int, nk: int) -> tuple[int, ...]:
    """The shape of a BROADCAST_FORMS form for a problem of (B, Hq, Nq, Nk)."""
    if form not in BROADCAST_FORMS:
        raise ValueError(f"form must be one of BROADCAST_FORMS, got {form!r}")
    sizes = {"B": b, "Hq": h, "Nq": nq, "Nk": nk, "1": 1}
    return tuple(sizes[name] for name in form.strip("(,)").split(", "))


# Additive mask values beside random ones (additive_mask): structures real callers pass, which a kernel may take a
# shortcut for. "alibi": -slope_h·|i - j| ≤ 0 (ALiBi's geometric slopes per head), 0 where query i sits at key j
# (query positions bottom-right aligned, as in a KV cache; a form broadcast over the queries is ALiBi's key bias of the last
# query, 0 at the last key); "alibi-padded": that plus -inf left padding (max exactly 0, min -inf, finite negatives
# between: red team rt44h's kernel sending such a mask to its boolean path as mask == 0 escaped random values);
# "zero-inf": 0 and -inf only; "far-finite": 0 and the mask dtype's most negative finite number (Hugging Face's
# padding value). Every row keeps a key at 0.
STRUCTURED_VALUES = ("alibi", "alibi-padded", "zero-inf", "far-finite")


def structured_mask(s: Subject, shape, values: str, label: str, dtype: torch.dtype | None = None) -> torch.Tensor:
    """An additive mask of ``shape`` (a BROADCAST_FORMS shape, any rank) with STRUCTURED_VALUES ``values``, in the
    inputs' dtype or ``dtype``."""
    if values not in STRUCTURED_VALUES:
        raise ValueError(f"values must be one of {STRUCTURED_VALUES}, got {values!r}")
    gen = s.rng(label)
    full = (1,) * (4 - len(shape)) + tuple(shape)  # (B|1, Hq|1, Nq|1, Nk|1)
    if values in ("alibi", "alibi-padded"):
        b, h, nq, nk = full
        slopes = 2.0 ** (-8.0 * torch.arange(1, h + 1, dtype=torch.float64) / h)  # (h,): ALiBi's, one per head
        query = torch.arange(nq, dtype=torch.float64) + (nk - nq)  # (nq,): positions bottom-right aligned
        distance = (query[:, None] - torch.arange(nk, dtype=torch.float64)).abs()  # (nq, nk)
        m = (0.0 - slopes.view(h, 1, 1) * distance).expand(full).clone()  # (B|1, Hq|1, Nq|1, Nk|1); +0, not -0
        if values == "alibi-padded" and nk > 1:
            # left padding (generation's batches): entry b hides its first pad_b ≤ Nk/2 keys, one entry at least one;
            # the last key, 0 for the last query, stays visible, and half the keys at least (finite biases to show)
            pads = torch.randint(0, nk // 2 + 1, (b,), generator=gen)
            pads[int(torch.randint(b, (), generator=gen))] = int(torch.randint(1, nk // 2 + 1, (), generator=gen))
            m = m.masked_fill(torch.arange(nk) < pads.view(b, 1, 1, 1), float("-inf"))
    else:
        visible = _rows_see_a_key(torch.rand(full, generator=gen) < 0.6, gen)
        hidden = float("-inf") if values == "zero-inf" else torch.finfo(dtype or s.dtype).min
        m = torch.zeros(full, dtype=torch.float64).masked_fill(~visible, hidden)
    m = m.reshape(shape)
    return s.cast(m) if dtype is None else m.to(dtype=dtype, device=s.device)


# Boolean masks of a structure a kernel may recognise and route to a path of its own: causal (top-left, as
# is_causal), causal aligned bottom-right (query i sees keys up to i + Nk - Nq, as a KV cache's new queries do), a
# sliding window (each query the last w keys up to its diagonal, top-left or bottom-right aligned), key padding (every
# row the same prefix of keys) and all visible; each exact or one row off (EXACT; near_structured_mask). One row off:
# red team rt47's boolean mask taken for the causal one when its first and last rows are tril's (the row is a middle
# one, not the first or last), and rt57's taken for key padding when its counts were equal (the row keeps its count). Exact: red team rt49's bottom-right tril routed to the top-left causal kernel, and
# a banded mask routed to a sliding-window kernel whose window it rounds. An exact structure's rows may see no key (a
# bottom-right one over fewer keys than queries): SDPA's empty rows, whose output is 0.
# And packed documents: causal within each of 2-4 documents that tile the keys (sequences packed into one training
# row, FlashAttention's varlen and FlexAttention's document masks), each (Nq, Nk) slice with documents of its own
# (red team rt53: packed documents taken for causal, and every entry given entry 0's documents, escaped masks whose
# slices all held one structure).
PACKED = "packed documents"
STRUCTURES = ("causal", "key padding", "all visible", "bottom-right causal", "sliding window", PACKED)
EXACT = ", exact"
NEAR_STRUCTURES = STRUCTURES + tuple(s + EXACT for s in STRUCTURES)


def _structure(structure: str, nq: int, nk: int, gen: torch.Generator) -> torch.Tensor:
    """The (Nq, Nk) boolean rows of ``structure`` (of STRUCTURES), True = visible."""
    i = torch.arange(nq)[:, None]  # (Nq, 1)
    j = torch.arange(nk)[None, :]  # (1, Nk)
    if structure == "causal":
        return ref.causal_mask(nq, nk)  # (Nq, Nk)
    if structure == "bottom-right causal":
        return j <= i + (nk - nq)  # (Nq, Nk)
    if structure == "sliding window":
        # 2 to min(Nq, Nk) - 1 keys, log-uniform (both edges move; real windows are a small part of the sequence)
        widest = max(2, min(nq, nk) - 1)
        window = min(widest, int(2 * (widest / 2) ** float(torch.rand((), generator=gen, dtype=torch.float64))))
        diagonal = i + (nk - nq if bool(torch.randint(2, (), generator=gen)) else 0)  # (Nq, 1)
        return (j <= diagonal) & (j > diagonal - window)  # (Nq, Nk)
    if structure == "key padding":
        return (j < int(torch.randint(1, nk, (), generator=gen))).expand(nq, nk)  # (Nq, Nk)
    if structure == PACKED:
        # 2-4 documents (fewer where the lengths are small), each starting past key 0 at a key some query sees (a key
        # past the last query is hidden from every row by causal anyway); a query past the last key is in the last
        seen = min(nq, nk)
        starts = torch.randperm(seen - 1, generator=gen)[:int(torch.randint(1, 4, (), generator=gen))] + 1  # (n,)
        document = (torch.arange(nk)[:, None] >= starts).sum(-1)  # (Nk,): the document of each key
        own = document[i.clamp(max=nk - 1)]  # (Nq, 1)
        return (j <= i) & (document[None, :] == own)  # (Nq, Nk)
    return torch.ones(nq, nk, dtype=torch.bool)


def near_structured_mask(shape, structure: str, gen: torch.Generator) -> torch.Tensor:
    """A boolean mask of ``shape`` (rank 2 or more, Nq ≥ 3, Nk ≥ 2), ``structure`` of NEAR_STRUCTURES in every
    (Nq, Nk) slice: exact, or one middle row of one slice off, with as many of its hidden keys shown as of its visible
    keys hidden (entry j and up to half the fewer of the two, at random), so its count of visible keys is the
    structure's (every row then still seeing a key); off by entry j alone where that row is all visible.
    - A kernel inferring the structure from a few rows and the counts (red team rt57: first and last rows equal and
      every count equal taken for key padding) meets a mask it is not; one flipped entry changed the count, and the
      inference then declined.
    - Half the row's keys moved change its output by about a value's size, where one key of thousands moved it by
      less than a half type's rounding (the one near key padding forward row at seed 0, 8800 keys in bfloat16)."""
    if structure not in NEAR_STRUCTURES:
        raise ValueError(f"structure must be one of {NEAR_STRUCTURES}, got {structure!r}")
    *lead, nq, nk = shape
    if nq < 3 or nk < 2:
        raise ValueError(f"shape: a mask of a structure needs Nq >= 3 and Nk >= 2, got {tuple(shape)}")
    base = structure.removesuffix(EXACT)
    if base == PACKED:  # (documents of its own in each slice)
        slices = [_structure(base, nq, nk, gen) for _ in range(math.prod(lead))]
        m = torch.stack(slices).reshape(*lead, nq, nk)  # (..., Nq, Nk)
    else:
        m = _structure(base, nq, nk, gen).expand(*lead, nq, nk).clone()  # (..., Nq, Nk)
    if structure.endswith(EXACT):
        return m
    slice_at = [int(torch.randint(n, (), generator=gen)) for n in lead]
    i = int(torch.randint(1, nq - 1, (), generator=gen))
    j = int(torch.randint(0, nk, (), generator=gen))
    if structure == "causal" and j == 0:  # (key 0 is each row's visible key under causal masking)
        j = min(i + 1, nk - 1) if i + 1 < nk else 1
    row = m[(*slice_at, i)]  # (Nk,): a view
    same = (row == row[j]).nonzero().flatten()  # (j among them)
    others = (row != row[j]).nonzero().flatten()
    moved = max(1, min(same.numel(), others.numel()) // 2) if others.numel() else 1
    picked = [same[same != j][torch.randperm(same.numel() - 1, generator=gen)[:moved - 1]],
              others[torch.randperm(others.numel(), generator=gen)[:moved]]] if others.numel() else []
    for index in [torch.tensor([j])] + picked:
        row[index] = ~row[index]
    return _rows_see_a_key(m, gen) if not row.any() else m


def _shapes(s: Subject) -> dict[str, tuple]:
    """SDPA broadcasts the mask over batch, heads and queries: every form a caller uses (the
    key-padding masks (B, 1, 1, Nk) and (1, 1, 1, Nk) have one row, which a kernel reading the
    mask with a row stride of Nk misreads)."""
    b, h, nq, nk = s.q.shape[0], s.q.shape[1], s.case.n_q, s.case.n_k
    # (Hq, Nq, Nk): three dims broadcast from the right, so per head, not per batch entry
    return {"(Nq, Nk)": (nq, nk), "(Hq, Nq, Nk)": (h, nq, nk), "(B, 1, Nq, Nk)": (b, 1, nq, nk),
            "(1, Hq, Nq, Nk)": (1, h, nq, nk), "(B, Hq, Nq, Nk)": (b, h, nq, nk), KEY_PADDING[0]: (b, 1, 1, nk),
            KEY_PADDING[1]: (1, 1, 1, nk)}


# Query masks: a key dim of 1, broadcast over the keys (SDPA takes them, measured); a row of the mask hides
# or shifts a whole query row, so the generator draws them without _rows_see_a_key (a hidden row gives 0)
QUERY_MASKS = {form: functools.partial(form_shape, form) for form in BROADCAST_FORMS if form.endswith(", 1)")}


def late_keys_mask(s: Subject) -> torch.Tensor:
    """(Nq, Nk) boolean: every row sees only the last 20 keys (all keys when Nk <= 20). An online
    softmax meets whole key blocks with every key hidden before the first visible one, where
    m = -inf and exp(-inf - (-inf)) is NaN without a guard (sliding-window masks do this)."""
    keys = torch.arange(s.case.n_k, device=s.device)
    return (keys >= s.case.n_k - 20).expand(s.case.n_q, s.case.n_k)


# Above half of float16's range: a hidden key at +HIDDEN_SCORE plus float16's most negative
# number, -65504, is still above a visible one at -HIDDEN_SCORE.
HIDDEN_SCORE = 40000.0


def hidden_keys_scoring_highest(s: Subject):
    """(q, k, mask) with every visible score about -HIDDEN_SCORE and every hidden one about
    +HIDDEN_SCORE: q constant, k = +1 on the hidden (odd) keys and -1 on the visible (even) ones,
    the (Nq, Nk) boolean mask showing the even keys. q's entries carry 8 significant bits, so q,
    every product q·k and every partial sum of one score are exact in each dtype here: all visible
    scores are bit-equal in any summation order, and the exact output is the mean of the visible
    values. A mask applied as a finite number (finfo(float16).min) lets the hidden keys win. None
    for a case whose scale is 0 (every score is 0)."""
    scale = ref.default_scale(s.case.head_dim) if s.case.scale is None else s.case.scale
    if scale == 0:
        return None
    entry = HIDDEN_SCORE / (abs(scale) * s.case.head_dim)
    step = 2.0 ** (math.floor(math.log2(entry)) - 7)
    entry = math.copysign(round(entry / step) * step, scale)  # score = scale·D·entry·k ≈ ±HIDDEN_SCORE
    hidden = torch.arange(s.case.n_k) % 2 == 1  # (Nk,)
    q = torch.full(s.q.shape, entry, dtype=torch.float64)
    k = torch.where(hidden, 1.0, -1.0).double()[:, None].expand(s.k.shape)  # (B, Hkv, Nk, D)
    return s.cast(q), s.cast(k), (~hidden).expand(s.case.n_q, s.case.n_k).to(s.device)


def attn_mask_agreement(s: Subject) -> Outcome:
    """Boolean and additive masks of every broadcast form, against float64 with the same mask."""
    outcomes, details = [], []
    for form, shape in _shapes(s).items():
        # key-padding masks (one row) are boolean in practice: the additive form there would add
        # two calls per case (a third of this check's time on an interpreted kernel) for no bug class
        kinds = (("bool", bool_mask),) if form in KEY_PADDING else (("bool", bool_mask), ("additive", additive_mask))
        for kind, make in kinds:
            m = make(s, shape, f"mask {kind} {form}")
            o = against(s, s.run(attn_mask=m, is_causal=False), s.reference(attn_mask=m, is_causal=False))
            outcomes.append(o)
            details.append(f"{kind} {form}: {o.figures}")
    m = late_keys_mask(s)
    o = against(s, s.run(attn_mask=m, is_causal=False), s.reference(attn_mask=m, is_causal=False))
    outcomes.append(o)
    details.append(f"late keys only: {o.figures}")
    highest = hidden_keys_scoring_highest(s)
    if highest is not None:
        q, k, m = highest
        o = against(s, s.run(q=q, k=k, attn_mask=m, is_causal=False), s.reference(q=q, k=k, attn_mask=m, is_causal=False))
        outcomes.append(o)
        details.append(f"hidden keys scoring ±{HIDDEN_SCORE:g}: {o.figures}")
    return worst(outcomes, details)


def attn_mask_with_causal(s: Subject) -> Outcome:
    """attn_mask with is_causal=True: refusing (raising) or applying both is right; nothing else."""
    m = bool_mask(s, _shapes(s)["(B, 1, Nq, Nk)"], "mask with causal")
    try:
        raw = s._call(s.q, s.k, s.v, attn_mask=m, is_causal=True)[0]
    except Exception as exc:  # refusing the combination is what SDPA's math backend does
        return Outcome(0.0, 0.0, f"refused: {type(exc).__name__}")
    out = checked_output(raw, s.q, s.v)  # what it returned must still be an output
    o = against(s, out, s.reference(attn_mask=m, is_causal=True))
    return Outcome(o.discrepancy, o.bound, "applied both")


def _with_empty_rows(s: Subject, label: str) -> torch.Tensor:
    """A (B, Hq, Nq, Nk) boolean mask in which every third row of every head sees no key."""
    m = bool_mask(s, _shapes(s)["(B, Hq, Nq, Nk)"], label)
    m[..., ::3, :] = False
    return m


def attn_mask_empty_rows(s: Subject) -> Outcome:
    """Rows with no visible key follow torch 2.13's CPU SDPA: output exactly 0 (not NaN)."""
    m = _with_empty_rows(s, "empty rows")
    return against(s, s.run(attn_mask=m, is_causal=False), s.reference(attn_mask=m, is_causal=False))


def attn_mask_one_key(s: Subject) -> Outcome:
    """One key (Nk = 1): the softmax of one score is 1 whatever the score, so a kernel may branch
    to out = v there; the mask still decides. Boolean and additive (finite N(0, 2²) or -inf) masks
    of shape (B, Hq, Nq, 1) hiding the key from every other row: hidden rows give 0 (the math
    backend, measured: output 0, no NaN, for a boolean False and for -inf), the others v."""
    k, v = s.k[..., :1, :], s.v[..., :1, :]  # (B, Hkv, 1, D), (B, Hkv, 1, Dv)
    shape = (s.q.shape[0], s.q.shape[1], s.case.n_q, 1)
    hidden = torch.zeros(shape, dtype=torch.bool)
    hidden[..., ::2, :] = True
    values = 2 * torch.randn(shape, generator=s.rng("one key additive"), dtype=torch.float64)
    masks = {"bool": (~hidden).to(s.device), "additive": s.cast(values.masked_fill(hidden, float("-inf")))}
    outcomes, details = [], []
    for kind, m in masks.items():
        o = against(s, s.run(k=k, v=v, attn_mask=m, is_causal=False),
                    s.reference(k=k, v=v, attn_mask=m, is_causal=False))
        outcomes.append(o)
        details.append(f"{kind}, key hidden from every other row: {o.figures}")
    return worst(outcomes, details)


def attn_mask_causal_equivalence(s: Subject) -> Outcome:
    """A boolean mask equal to the top-left causal mask gives the is_causal result."""
    m = ref.causal_mask(s.case.n_q, s.case.n_k, s.device)  # (Nq, Nk)
    a = s.run(attn_mask=m, is_causal=False), s.reference(attn_mask=m, is_causal=False)
    return relation(s, *a, s.run(attn_mask=None, is_causal=True), s.reference(attn_mask=None, is_causal=True))


def attn_mask_row_shift(s: Subject) -> Outcome:
    """Adding a constant per row to an additive mask changes nothing (softmax-shift-invariance)."""
    m = additive_mask(s, _shapes(s)["(B, Hq, Nq, Nk)"], "row shift")
    c = torch.randint(-8, 9, m.shape[:-1] + (1,), generator=s.rng("row constants")).to(torch.float64)
    m2 = s.cast(m.double().cpu() + c)  # integers keep -inf and are exact at these magnitudes in every dtype
    kw = dict(is_causal=False)
    return relation(s, s.run(attn_mask=m2, **kw), s.reference(attn_mask=m2, **kw),
                    s.run(attn_mask=m, **kw), s.reference(attn_mask=m, **kw))


def attn_mask_gradients(s: Subject) -> Outcome:
    """Gradients under a boolean mask and under an additive one (finite values of either sign
    and -inf), both with empty rows: masked pairs contribute nothing (zero gradient where no query
    sees a key, zero dq in an empty row), finite mask values shape P in the backward as in the
    forward, the rest as float64 autograd."""
    hidden = _with_empty_rows(s, "gradient mask")
    hidden[..., :, -1] = False  # the last key is seen by no query: its dk and dv must be exactly 0
    values = additive_mask(s, hidden.shape, "gradient additive mask")
    masks = {"bool": hidden, "additive": values.masked_fill(~hidden, float("-inf"))}
    outcomes, details = [], []
    for kind, m in masks.items():
        g = s.backward(attn_mask=m, is_causal=False)
        o = gradients_against(s, g.got, g.gold, g.plain, s.gradient_sizes_for(attn_mask=m, is_causal=False))
        outcomes.append(o)
        details.append(f"{kind}: {o.detail}")
    return worst(outcomes, details)


def _bias_gradient(fn, q, k, v, bias, dout, **kw) -> torch.Tensor:
    """d(loss)/d(bias) of fn(q, k, v, attn_mask=bias) for the upstream gradient dout, by autograd."""
    q, k, v, bias = ref.leaves((q, k, v, bias))
    out = fn(q, k, v, attn_mask=bias, **kw)
    return torch.autograd.grad(out, bias, dout.to(out.dtype))[0].detach()


def mask_gradient_outcome(s: Subject, got: torch.Tensor, bias: torch.Tensor, kw: dict) -> Outcome:
    """An additive mask's gradient ``got`` against float64 autograd by the low-precision rule, in
    whatever form ``bias`` broadcasts from: dS summed to its shape, whose terms made absolute,
    P∘(|dP| + rowsum(P∘|dP|)) with |dP| = |dO| |V|ᵀ, summed the same way, set the floor."""
    h = s.q.shape[1]
    cpu = [t.detach().cpu() for t in (s.q, s.k, s.v, bias, s.dout)]
    gold = _bias_gradient(ref.attention, *(t.double() for t in cpu), **kw)
    plain = _bias_gradient(ref.attention, s.q, s.k, s.v, bias.detach(), s.dout, **kw).cpu()
    q64, k64, v64, bias64, do64 = (t.double() for t in cpu)
    p64 = ref.probabilities(q64, k64, attn_mask=bias64, **kw)  # (B, Hq, Nq, Nk)
    v_rep = ref.repeat_kv(v64, h) if kw["enable_gqa"] else v64
    dp = do64.abs() @ v_rep.abs().transpose(-2, -1)  # (B, Hq, Nq, Nk)
    size = (p64 * (dp + (p64 * dp).sum(-1, keepdim=True))).sum_to_size(bias.shape)
    if tuple(got.shape) != tuple(bias.shape):
        raise ValueError(f"the mask's gradient has shape {tuple(got.shape)}, expected {tuple(bias.shape)}")
    return measured(s, got.detach().cpu(), gold, tol.max_abs_error(plain, gold), size)


def broadcast_gradient_relation(s: Subject, run, got: torch.Tensor, bias: torch.Tensor) -> Outcome | None:
    """A mask broadcast along some dims has the sum along them of its expansion's gradient: ``got`` (the impl's
    gradient for ``bias``) against the impl's own gradient for bias expanded to (B, Hq, Nq, Nk), contiguous,
    summed in float64 (``run(mask)``: the impl's output for that mask). One path computes the same dS terms
    in both calls, so they differ by the expansion's gradient rounded term by term to q's dtype, a float32 sum
    of n terms and the sum's own rounding: at most (eps + n·eps(float32))·Σ|terms| + eps·(|sum| + 0.3). The
    rule's floor on a sum of n terms grows as n (one rounding at the sum of their absolute sizes) while a wrong
    broadcast errs as √n: over 508 terms in bfloat16 it was 75.8 against the bug's 16. None where the mask is
    not broadcast or the impl refuses its expansion (a kernel with a key-bias path only)."""
    full = (s.q.shape[0], s.q.shape[1], s.q.shape[-2], s.k.shape[-2])  # (B, Hq, Nq, Nk)
    if tuple(bias.shape) == full or bias.dim() > 4:
        return None
    expanded = bias.detach().expand(full).contiguous().requires_grad_()
    try:
        out = run(expanded)
        terms = torch.autograd.grad(out, expanded, ref.copy(s.dout), allow_unused=True)[0]
    except Exception:  # (the broadcast form was accepted; refusing the full one is its business)
        return None
    if terms is None:
        return Outcome(math.inf, 0.0, "the expanded mask got no gradient")
    terms = terms.detach().cpu().double()
    summed = terms.sum_to_size(bias.shape)
    n = terms.numel() // max(summed.numel(), 1)
    size = float(terms.abs().sum_to_size(bias.shape).max()) if terms.numel() else 0.0
    allowed = ((tol.eps(s.dtype) + n * tol.eps(torch.float32)) * size
               + tol.eps(s.dtype) * (tol.max_abs_error(summed, torch.zeros_like(summed)) + tol.FLOOR_OFFSET))
    return Outcome(tol.max_abs_error(got.detach().cpu(), summed), allowed,
                   f"dmask against its expansion's summed over {n}")


def attn_mask_bias_gradient(s: Subject) -> Outcome:
    """A learned additive bias (ALiBi slopes, relative-position terms) passed as attn_mask with
    requires_grad: its gradient is the scores' gradient dS, summed over the batch it broadcasts
    over. Refusing such a mask (raising, as flash_attention does) is honest and passes; accepting
    it and giving no gradient (the mask detached inside) or a wrong one fails."""
    b, h, nq, nk = s.q.shape[0], s.q.shape[1], s.case.n_q, s.case.n_k
    bias = 2 * s.randn("learned bias", 1, h, nq, nk)  # (1, Hq, Nq, Nk)
    kw = s.kwargs(is_causal=False)
    gots = []
    # the mask alone requiring grad too (a bias learned over a frozen backbone): an impl that takes its
    # no-grad path whenever q, k, v need no gradient gives an output without grad_fn there
    for qkv in (ref.leaves((s.q, s.k, s.v)), (s.q, s.k, s.v)):
        m = ref.leaves((bias,))[0]
        try:
            out = s.impl(*qkv, attn_mask=m, **kw)
        except Exception as exc:  # a kernel without a mask gradient may say so
            return Outcome(0.0, 0.0, f"refused: {type(exc).__name__}")
        checked_output(out, s.q, s.v)
        alone = "" if qkv[0].requires_grad else " (the mask alone requiring grad)"
        if not out.requires_grad:
            return Outcome(math.inf, 0.0, f"the output has no grad_fn{alone}")
        got = torch.autograd.grad(out, m, s.dout.clone(), allow_unused=True)[0]
        if got is None:
            return Outcome(math.inf, 0.0, f"accepted a mask that requires grad but gave it no gradient{alone}")
        gots.append(got)
    outcomes = [mask_gradient_outcome(s, got, bias, kw) for got in gots]
    return worst(outcomes, [f"dmask (summed over B = {b}){alone}: {o.figures}"
                            for o, alone in zip(outcomes, ("", ", the mask alone requiring grad"))])


# The mask checks make about twenty calls per case. Above this many (query, key) tile pairs of 64
# (B·Hq·⌈Nq/64⌉·⌈Nk/64⌉) a case adds cost, not coverage: every kind of tile the mask code meets
# (first, interior, tail of one key or query, one query) is in cases below it. Every default case
# is below (long-gqa: 168); thorough's mqa-decode-long (1056 pairs; 109 of its 121 interpreted
# CPU-seconds in float32 were mask checks) is above.
MASK_TILE_PAIRS = 256


def _maskable(c: Case) -> bool:
    tile_pairs = c.batch * c.q_heads * -(-c.n_q // 64) * -(-c.n_k // 64)
    return c.kind == RANDOM and c.n_k >= 2 and c.n_q * c.n_k <= 2 ** 16 and tile_pairs <= MASK_TILE_PAIRS


_MASK = frozenset({ATTN_MASK})
register(Invariant("attn-mask", "softmax-shift-invariance", attn_mask_agreement, _maskable, _MASK,
                   bug_classes="boolean mask read as additive 0/1, or as a finite number (finfo(float16).min); mask "
                                 "broadcast over batch or heads wrong (3-D masks per batch); leading key blocks "
                                 "fully masked (NaN without a guard)"))
register(Invariant("attn-mask-with-causal", "causal-mask-top-left", attn_mask_with_causal,
                   lambda c: _maskable(c) and c.causal, _MASK | {CAUSAL},
                   bug_classes="attn_mask silently replacing is_causal (or the reverse)"))
register(Invariant("attn-mask-empty-rows", None, attn_mask_empty_rows, _maskable, _MASK,
                   bug_classes="0/0 = NaN in rows with no visible key"))
register(Invariant("attn-mask-causal-equivalence", "causal-mask-top-left", attn_mask_causal_equivalence,
                   lambda c: _maskable(c) and c.causal, _MASK | {CAUSAL},
                   bug_classes="attn_mask ignored"))
register(Invariant("attn-mask-row-shift", "softmax-shift-invariance", attn_mask_row_shift, _maskable, _MASK,
                   bug_classes="additive mask clamped or rescaled (assumes masks ≤ 0)"))
register(Invariant("attn-mask-one-key", None, attn_mask_one_key, lambda c: c.kind == CONTRACT, _MASK,
                   bug_classes="a one-key (Nk = 1) fast path (softmax of one score is 1) that skips attn_mask: a "
                               "hidden key gives v instead of 0"))
register(Invariant("attn-mask-gradients", "causal-mask-top-left", attn_mask_gradients, _maskable,
                   _MASK | {BACKWARD}, bug_classes="backward ignores the mask"))
register(Invariant("attn-mask-bias-gradient", None, attn_mask_bias_gradient, _maskable, _MASK | {BACKWARD},
                   bug_classes="a learned additive mask (ALiBi, relative-position bias) that requires grad "
                               "accepted but detached (no gradient), or its gradient not summed over the batch"))
