"""SDPA's ``dropout_p``, judged by the laws derived in proofs/theorems/dropout.py.

The dropout mask is invisible, but O = (P∘M/(1-p)) V is linear in V: with V the one-hot columns
(V = I, Dv = Nk) one call returns its effective matrix W = P∘M/(1-p) itself. From W the kept
fraction (claim dropout-kept-fraction: E[M] = 1 - p, binomial test) and the 1/(1-p) rescale (every
nonzero W entry equals P/(1-p) by the low-precision rule) are read directly; the same call's dV
must be Wᵀ dO (the backward used the forward's mask). With the case's own V, R calls under
different seeds give the moments of the output: mean the no-dropout output (claim
dropout-unbiased) and per-element variance p/(1-p) Σ_j P_ij² v_jd² (claim dropout-variance), both
lambdified from the derivations. Every statistical verdict is a two-sided test at α = 1e-6.

The RNG: SDPA draws from torch's global generator, so calls are seeded with torch.manual_seed under
torch.random.fork_rng (the caller's RNG state is left as it was).
"""
from __future__ import annotations

import contextlib
import functools
import math

import torch

from kernels.harness import bias, rounding_direction
from kernels.harness import reference as ref
from kernels.harness import tolerance as tol
from kernels.harness.cases import DEFAULT_CASES, KEPT, RANDOM, THOROUGH_CASES, Case
from kernels.harness.invariants import ATTN_MASK, BACKWARD, DROPOUT, Invariant, _proved, register
from kernels.harness.subject import Outcome, Subject, checked_output, measured, worst

P_DROP = 0.25
ALPHA = 1e-6
DRAWS = 24  # calls for the moment tests; each row of each call is one unit of the t-tests
P_FLOOR = 1e-5  # entries of P below this are left out of the kept-fraction count (they may underflow)


@functools.lru_cache(maxsize=1)
def laws():
    """(keep(p), rescale(p), variance(p, Σ P² v²)) as derived and proved, lambdified."""
    import sympy as sp

    kept = _proved("dropout-kept-fraction").result
    var = _proved("dropout-variance").result
    _proved("dropout-unbiased")
    return (sp.lambdify(kept["p"], kept["keep"]), sp.lambdify(kept["p"], kept["rescale"]),
            sp.lambdify((var["p"], var["sum_sq"]), var["variance_of_sum"]))


def _z(two_sided_alpha: float = ALPHA) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(1 - two_sided_alpha / 2)


@contextlib.contextmanager
def seeded(s: Subject, draw: int):
    """torch's global RNG seeded for one call, restored afterwards."""
    devices = [torch.device(s.device).index or 0] if s.device.startswith("cuda") else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(s.seed * 1000 + draw)
        yield


def one_hot_values(s: Subject) -> torch.Tensor:
    n_k = s.case.n_k
    # (contiguous: a float64 cast copies nothing, and an expanded V is refused where it would be written through)
    return s.cast(torch.eye(n_k, dtype=torch.float64).expand(s.k.shape[0], s.k.shape[1], n_k, n_k)).contiguous()  # (B, Hkv, Nk, Nk)


def same_keep_mask(a: torch.Tensor, b: torch.Tensor, counted: torch.Tensor, what: str) -> Outcome:
    """Two dropout outputs read through V = I, (B, Hq, Nq, Nk) each, whose keep masks must be the same: their zero
    patterns compared where the float64 weight is past P_FLOOR (``counted``; a weight rounding to 0 in the dtype is
    0 in both). A kept weight's value may differ by rounding (another mode may take another kernel); its mask may not."""
    kept_a, kept_b = (x.detach().cpu() != 0 for x in (a, b))
    differ = int(((kept_a != kept_b) & counted.to(kept_a.device)).sum())
    return Outcome(float(differ), 0.0, f"{what}: {differ} of {int(counted.sum())} weights kept in one call, dropped in "
                                       f"the other" if differ else f"{what}: the same keep mask")




def _probabilities(s: Subject, attn_mask=None) -> torch.Tensor:
    q, k = s.q.cpu().double(), s.k.cpu().double()
    kw = s.kwargs() if attn_mask is None else s.kwargs(attn_mask=attn_mask.cpu(), is_causal=False)
    return ref.probabilities(q, k, **kw)  # (B, Hq, Nq, Nk)


def binomial_z(k: int, n: int, rate: float) -> float:
    """The normal deviate of k successes in n at ``rate`` by the exact binomial tail (two-sided, signed): the normal
    approximation fails for rare events (a survey of drawn problems: one drop among 192 weights at p = 1.9e-4, an
    event of probability 3.6%, read as z = -5.0 past the bound)."""
    from scipy import stats

    if n == 0 or rate in (0.0, 1.0):
        return 0.0 if k == round(n * rate) else math.inf
    tail = min(stats.binom.cdf(k, n, rate), stats.binom.sf(k - 1, n, rate))  # the side k falls on
    z = float(stats.norm.isf(min(1.0, 2 * tail) / 2))
    return math.copysign(z, k - n * rate)


def _z_outcome(name: str, z: float) -> tuple[Outcome, str]:
    return Outcome(abs(z) if math.isfinite(z) else math.inf, _z()), f"{name}: z = {z:+.2f}"


def _effective_matrix(s: Subject, draw: int = 0, p: float = P_DROP, **overrides) -> torch.Tensor:
    """W = P∘M/(1-p) of one seeded call with V = I (the output is W itself), in float64."""
    with seeded(s, draw):
        return s.run(v=one_hot_values(s), dropout_p=p, **overrides).cpu().double()  # (B, Hq, Nq, Nk)


def _mask_law(s: Subject, w: torch.Tensor, attn_mask=None, p: float = P_DROP, with_bias: bool = True) -> Outcome:
    """W's kept fraction is 1 - p (binomial), its kept entries P/(1-p), the others 0."""
    keep, rescale, _ = laws()
    kw = s.kwargs() if attn_mask is None else s.kwargs(attn_mask=attn_mask, is_causal=False)
    p64 = _probabilities(s, attn_mask)  # (B, Hq, Nq, Nk)
    kept = w != 0
    counted = p64 > P_FLOOR
    n, k = int(counted.sum()), int((kept & counted).sum())
    rate = float(keep(p))
    fraction, d1 = _z_outcome(f"kept {k} of {n} (expected {rate:g})", binomial_z(k, n, rate))
    # Kept entries against P/(1-p); the plain reference rounds P in the dtype, then rescales it.
    c = float(rescale(p))
    expected = torch.where(kept, p64 * c, torch.zeros_like(p64))
    plain = (ref.probabilities(s.q, s.k, **kw) * c).cpu().double()
    plain_err = tol.max_abs_error(torch.where(kept, plain, torch.zeros_like(plain)), expected)
    scaled = Outcome(tol.max_abs_error(w, expected), tol.bound(s.dtype, plain_err, expected,
                                                               _kept_score_sensitivity(s, kw, kept, c)))
    outcomes = [fraction, scaled]
    details = [d1, f"rescale 1/(1-p) = {c:g}: {scaled.figures}"]
    # A rescale off by a fraction of an ulp (1/(1-p) rounded to bfloat16 is 0.2% high) stays inside
    # the 2× rule but biases every kept weight the same way: the rounding-bias test on kept entries.
    # (``with_bias`` False: on drawn problems P may be uniform, all kept entries one value and their
    # roundings one rounding repeated, not the independent ones the test counts)
    if with_bias and s.dtype in rounding_direction.BIASED_DTYPES and kept[..., 0].numel() >= rounding_direction.MIN_ROWS:
        outcomes.append(bias.bias_outcome(w, expected, s.dtype, where=kept & counted))
        details.append(f"kept entries' bias: {outcomes[-1].detail}")
    return worst(outcomes, details)


def _kept_score_sensitivity(s: Subject, kw: dict, kept: torch.Tensor, c: float) -> torch.Tensor:
    """W's sensitivity to rounding the scores, as tolerance.floor's score term takes it for any
    forward output: W is the output for V = I, so its R is golden_and_sensitivity's with V = I,
    times the rescale c, on the kept entries (a dropped one is exactly 0 whatever the scores).
    R_ij = c·sqrt((P_ij S_ij (1 - P_ij))² + Σ_{l≠j} (P_il S_il P_ij)²); where scores reach 10
    (drawn scales of 2 with head dims of 100) its 4 float32 roundings outweigh twice the plain
    reference's error, which at p = 0.9 is a maximum over the tenth of the entries kept."""
    q64, k64 = s.q.cpu().double(), s.k.cpu().double()
    kw64 = {**kw, "attn_mask": None if kw.get("attn_mask") is None else kw["attn_mask"].cpu()}
    _, r = ref.golden_and_sensitivity(q64, k64, one_hot_values(s).cpu().double(), **kw64)  # (B, Hq, Nq, Nk)
    return torch.where(kept, r * c, torch.zeros_like(r))


def _base_effective_matrix(s: Subject) -> torch.Tensor:
    """W of the case's first seeded call (draw 0), shared by the checks that read one; cached on s."""
    if "_dropout_w" not in s.__dict__:
        s.__dict__["_dropout_w"] = _effective_matrix(s)
    return s.__dict__["_dropout_w"]


def dropout_mask_law(s: Subject) -> Outcome:
    """V = I reveals W = P∘M/(1-p): kept fraction 1 - p (binomial), kept entries P/(1-p), others 0."""
    return _mask_law(s, _base_effective_matrix(s))


def dropout_with_attn_mask(s: Subject) -> Outcome:
    """attn_mask and dropout_p together: W = P_mask∘M/(1-p), the mask law on the masked weights
    (a kernel that takes a 'masked' path without dropout keeps every weight)."""
    from kernels.harness.masks import bool_mask

    m = bool_mask(s, (s.q.shape[0], 1, s.case.n_q, s.case.n_k), "mask with dropout")
    return _mask_law(s, _effective_matrix(s, attn_mask=m, is_causal=False), attn_mask=m)


def _agreement_z(a: torch.Tensor, b: torch.Tensor, counted: torch.Tensor, p: float = P_DROP) -> tuple[float, int, int]:
    """z of the number of counted entries where the zero patterns of a and b agree, against
    independent masks: each entry agrees with probability (1-p)² + p² (both kept or both dropped),
    independently of the others, so the count is binomial. A shared mask agrees everywhere."""
    agree = ((a != 0) == (b != 0)) & counted
    n, k = int(counted.sum()), int(agree.sum())
    rate = (1 - p) ** 2 + p ** 2
    z = (k - n * rate) / math.sqrt(n * rate * (1 - rate)) if n else 0.0
    return z, k, n


# Lags at which tile-periodic RNG offsets show: every power-of-two tile width kernels use.
TILE_LAGS = (16, 32, 64, 128)
MIN_PAIRS = 1000  # a lag test runs only with this many pairs (the binomial's normal approximation)


def _lag_pairs(w: torch.Tensor, counted: torch.Tensor, axis: int, lag: int):
    """Disjoint pairs (i, i + lag) along ``axis``, i in the even lag-blocks [0, lag), [2·lag, 3·lag), …:
    no entry is in two pairs, so the pairs' agreements are independent under independent masks."""
    n = w.shape[axis]
    first = torch.tensor([i for i in range(n - lag) if (i // lag) % 2 == 0], dtype=torch.long)
    second = first + lag
    pick = lambda t, idx: t.index_select(axis, idx)
    return pick(w, first), pick(w, second), pick(counted, first) & pick(counted, second)


def dropout_independence(s: Subject) -> Outcome:
    """Every weight draws its own keep/drop. In the V = I call, two entries' zero patterns agree
    with probability (1-p)² + p² when their draws are independent, and always when a kernel's RNG
    offsets make them share one. Binomial z-tests of the agreement count on:
    every pair of (batch, head) slices (a head or batch entry repeating another's mask, as an
    offset b·Hkv + h does under GQA), and disjoint entry pairs lag 16, 32, 64 and 128 apart along
    the keys and along the queries (a mask that repeats every tile: an offset from the column or
    row modulo the tile width). Each test at α / (number of tests): Bonferroni keeps the
    invariant's false-alarm rate ≤ α."""
    w = _base_effective_matrix(s)  # (B, Hq, Nq, Nk)
    counted = _probabilities(s) > P_FLOOR
    tests = _slice_pairs(w, counted)
    for axis, along in ((-1, "keys"), (-2, "queries")):
        for lag in TILE_LAGS:
            a, b, both = _lag_pairs(w, counted, axis, lag)
            if int(both.sum()) >= MIN_PAIRS:
                tests.append((f"{along} {lag} apart", a, b, both))
    return agreement_outcome(tests, P_DROP)


def _slice_pairs(w: torch.Tensor, counted: torch.Tensor) -> list:
    """Every pair of W's (batch, head) slices: (name, a, b, counted in both)."""
    slices, live = w.flatten(0, 1), counted.flatten(0, 1)  # (B·Hq, Nq, Nk)
    heads = w.shape[1]
    return [(f"(b{i // heads},h{i % heads})~(b{j // heads},h{j % heads})", slices[i], slices[j], live[i] & live[j])
            for i in range(len(slices)) for j in range(i + 1, len(slices))]


def agreement_outcome(tests: list, p: float, more_only: bool = False) -> Outcome:
    """The largest |z| of the pairings' agreement tests against z at α / (number of tests) (Bonferroni);
    ``more_only``: only agreement above independence counts (shared or shifted masks; the normal approximation's
    upper tail of agreement, the lower of the rare disagreements, errs towards passing at tiny p, where one
    disagreement more than expected would give a large |z|)."""
    results = []  # (|z| or z, detail)
    for name, a, b, both in tests:
        z, k, n = _agreement_z(a, b, both, p)
        results.append((max(z, 0.0) if more_only else abs(z), f"{name}: {k} of {n} agree, z = {z:+.2f}"))
    results.sort(reverse=True)
    detail = (f"{len(tests)} pairings, expected agreement {(1 - p) ** 2 + p ** 2:g}; worst: "
              + "; ".join(d for _, d in results[:2]))
    return Outcome(results[0][0], _z(ALPHA / len(tests)), detail)


def slices_independent(w: torch.Tensor, counted: torch.Tensor, p: float) -> Outcome | None:
    """W's (batch, head) slices draw masks of their own (a mask shared across heads, batch entries, a broadcast
    k's batch or a mask's broadcast dims agrees everywhere); None for a single slice."""
    tests = _slice_pairs(w, counted)
    return agreement_outcome(tests, p, more_only=True) if tests else None


def _rng_states(s: Subject) -> list[torch.Tensor]:
    states = [torch.get_rng_state()]
    if s.device.startswith("cuda"):
        states.append(torch.cuda.get_rng_state(torch.device(s.device)))
    return states


def dropout_rng_advances(s: Subject) -> Outcome:
    """Two calls in a row after one manual_seed draw different masks (binomial agreement z-test,
    as for independence), and a call moves torch's generator state (the next draw of the caller's
    own code must not repeat the kernel's). A call with dropout_p = 0 draws nothing: it leaves the
    state as it was (as SDPA does), or evaluation would shift every random stream after it."""
    v1 = one_hot_values(s)
    with seeded(s, 0):
        before = _rng_states(s)
        w1 = s.run(v=v1, dropout_p=P_DROP).cpu().double()
        after = _rng_states(s)
        w2 = s.run(v=v1, dropout_p=P_DROP).cpu().double()
        idle = _rng_states(s)
        s.run(dropout_p=0.0)
        drew_at_zero = any(not torch.equal(x, y) for x, y in zip(idle, _rng_states(s)))
    moved = any(not torch.equal(x, y) for x, y in zip(before, after))
    z, k, n = _agreement_z(w1, w2, _probabilities(s) > P_FLOOR)
    detail = (f"second call agrees with the first on {k} of {n} entries, z = {z:+.2f}; "
              f"generator state {'moved' if moved else 'NOT moved'}; "
              f"at dropout_p = 0 it {'MOVED' if drew_at_zero else 'stayed'}")
    return Outcome(abs(z) if moved and not drew_at_zero else math.inf, _z(), detail)


# The kept-fraction power test: the smallest bias it must see is 0.5% of the keep probability
# (a uint8 threshold keeping 191/256 ≈ 0.746 instead of 0.75 is 0.52% off). With q = 0 every
# weight is 1/Nk, so every entry of W counts; each call gives B·H·Nq·Nk independent Bernoulli
# draws. Two p, each test at α/2 (Bonferroni), each with power ≥ POWER against that bias.
# (p = 0.5 would need 2.2 million draws, three times the others together: too slow interpreted.)
KEPT_PS = (0.1, 0.25)
RELATIVE_BIAS = 0.005
POWER = 0.99


def draws_for_power(p: float, alpha: float = ALPHA / len(KEPT_PS), power: float = POWER,
                    relative_bias: float = RELATIVE_BIAS) -> int:
    """Bernoulli draws n for which a two-sided z-test at level alpha of keep = 1 - p rejects a
    keep probability of (1 - p)(1 - relative_bias) with probability ≥ power (normal approximation):
    n = ((z_{α/2} σ0 + z_power σ1) / δ)²."""
    from statistics import NormalDist

    keep0 = 1 - p
    keep1 = keep0 * (1 - relative_bias)
    z_a, z_b = _z(alpha), NormalDist().inv_cdf(power)
    s0, s1 = math.sqrt(keep0 * (1 - keep0)), math.sqrt(keep1 * (1 - keep1))
    return math.ceil(((z_a * s0 + z_b * s1) / (keep0 - keep1)) ** 2)


def dropout_kept_fraction(s: Subject) -> Outcome:
    """The kept fraction is 1 - p, to 0.5%: binomial z-tests over enough calls (q = 0, so every
    weight is 1/Nk and counts; V = I) that a 0.5% bias is rejected with power POWER at each p."""
    keep, _, _ = laws()
    q0 = torch.zeros_like(s.q)
    v1 = one_hot_values(s)  # (B, H, Nk, Nk)
    per_call = s.q.shape[0] * s.q.shape[1] * s.case.n_q * s.case.n_k
    outcomes, details = [], []
    for i, p in enumerate(KEPT_PS):
        calls = math.ceil(draws_for_power(p) / per_call)
        kept = 0
        for call in range(calls):
            with seeded(s, 100 + 1000 * i + call):
                kept += int((s.run(q=q0, v=v1, dropout_p=p) != 0).sum())
        n = calls * per_call
        rate = float(keep(p))
        z = (kept - n * rate) / math.sqrt(n * rate * (1 - rate))
        outcomes.append(Outcome(abs(z), _z(ALPHA / len(KEPT_PS))))
        details.append(f"p={p:g}: kept {kept / n:.5f} of {n} (expected {rate:g}), z = {z:+.2f}")
    return worst(outcomes, details)


def _t(units: torch.Tensor, claimed: float) -> float:
    units = units.flatten()
    se = float(units.std()) / math.sqrt(units.numel())
    diff = float(units.mean()) - claimed
    return diff / se if se > 0 else (0.0 if diff == 0 else math.inf)


def _standardised_draws(s: Subject):
    """Over DRAWS seeded calls, per (draw, row): the mean of z = (o - E o)/sd and of z²/1, where
    E o is the no-dropout output and sd² = p/(1-p) Σ_j P_ij² v_jd² (the derived variance).
    Elements of a row share its dropout mask, so the row is the independent unit. Cached on s."""
    if "_dropout_draws" in s.__dict__:
        return s.__dict__["_dropout_draws"]
    _, _, variance = laws()
    gold = s.base.value
    p64 = _probabilities(s)  # (B, Hq, Nq, Nk)
    v64 = s.v.cpu().double()
    if s.case.gqa:
        v64 = ref.repeat_kv(v64, s.q.shape[1])
    sd = torch.as_tensor(variance(P_DROP, (p64 ** 2) @ (v64 ** 2))).sqrt()  # (B, Hq, Nq, Dv)
    live = sd > 0
    z_mean, z_sq = [], []
    for draw in range(DRAWS):
        with seeded(s, 1 + draw):
            out = s.run(dropout_p=P_DROP).cpu().double()
        z = torch.where(live, (out - gold) / sd.clamp(min=1e-300), torch.zeros_like(out))
        z_mean.append(z.sum(-1) / live.sum(-1).clamp(min=1))
        z_sq.append((z ** 2).sum(-1) / live.sum(-1).clamp(min=1))
    s.__dict__["_dropout_draws"] = (torch.stack(z_mean), torch.stack(z_sq))
    return s.__dict__["_dropout_draws"]


def dropout_expectation(s: Subject) -> Outcome:
    """E over the dropout randomness of the output = the no-dropout output (t-test on z, claimed 0)."""
    o, d = _z_outcome("mean of (o - E o)/sd over draws and rows", _t(_standardised_draws(s)[0], 0.0))
    return Outcome(o.discrepancy, o.bound, d)


def dropout_variance(s: Subject) -> Outcome:
    """Per-element variance p/(1-p) Σ_j P_ij² v_jd² (t-test on z², claimed 1)."""
    o, d = _z_outcome("mean of (o - E o)²/Var over draws and rows, claimed 1", _t(_standardised_draws(s)[1], 1.0))
    return Outcome(o.discrepancy, o.bound, d)


def _dropped_attention(keep: torch.Tensor, c: float, kw: dict):
    """(q, k, v) ↦ (P∘keep·c) V: attention with the dropout mask ``keep`` fixed (autograd-able)."""
    def fn(q, k, v, **_):
        w = ref.probabilities(q, k, **kw) * (keep.to(q.dtype) * c)  # (B, Hq, Nq, Nk)
        return w @ (ref.repeat_kv(v, q.shape[1]) if kw.get("enable_gqa") else v)
    return fn


def dropout_forward_backward(s: Subject, attn_mask=None) -> Outcome:
    """One seeded call with V = I: its output is W = P∘M/(1-p), which reveals the mask M = (W ≠ 0);
    its dq, dk, dv must be float64 autograd of (P∘M/(1-p)) V with that M (the backward used the
    forward's mask, and rescaled dP by 1/(1-p) as the forward rescaled P)."""
    v1 = one_hot_values(s)
    d_o = s.randn("dropout dO", *s.q.shape[:-1], s.case.n_k)
    leaves = ref.leaves((s.q, s.k, v1))
    kw = s.kwargs() if attn_mask is None else s.kwargs(attn_mask=attn_mask, is_causal=False)
    with seeded(s, 0):
        w = s.impl(*leaves, **{**kw, "dropout_p": P_DROP})
        checked_output(w, s.q, v1)
        # (no score-rounding term: the dropout checks run on scores of size 1, where it is negligible)
        return worst(*dropped_gradients(s, w, leaves, None, kw, P_DROP, d_o))


def dropped_gradients(s: Subject, w: torch.Tensor, tensors, mask_leaf, kw: dict, p: float, d_o: torch.Tensor):
    """(outcomes, details) of the gradients of one dropout call with V = I, whose output ``w`` =
    P∘M/(1-p) reveals its mask M = (w ≠ 0): for each of ``tensors`` (q, k, V = I) that requires grad, and
    the additive ``mask_leaf`` when it does (a learned bias), the impl's gradient for upstream ``d_o``
    against float64 autograd of (P∘M/(1-p)) V with that same M (the backward reused the forward's mask
    and rescaled dP by 1/(1-p) on every path: a subset of q, k, v, or the mask alone), by the
    low-precision rule. Sizes: every factor absolute, |dS| ≤ P∘(|dP|∘M·c + rowsum(P∘|dP|∘M·c)); dv from
    |W|; dmask is dS summed to the mask's shape."""
    c = float(laws()[1](p))
    asked = [t for t in tensors if t.requires_grad] + ([mask_leaf] if mask_leaf is not None else [])
    if not asked:
        return [], []
    # the caller's generator between the forward and the backward: draws of its own (a model's other layers'), then
    # the backward, which must leave it where it was: SDPA's backward reuses the forward's keep mask and draws nothing
    # (red team rt53: a backward rewinding the generator to the forward's state to regenerate the mask, never putting
    # it back, so the caller's later draws repeated earlier ones, escaped every check of the gradients' values)
    torch.rand(3)
    stream = _generator_states(s.device)
    got = torch.autograd.grad(w, asked, d_o, allow_unused=True)
    moved = [name for name, state in _generator_states(s.device).items() if not torch.equal(state, stream[name])]
    keep = (w.detach() != 0).cpu()  # (B, Hq, Nq, Nk)
    mask = kw.get("attn_mask")

    def autograd_of(dtype, device):
        leaves = [ref.copy(t.detach().to(device), dtype).requires_grad_(t.requires_grad) for t in tensors]
        m = None if mask is None else ref.copy(mask.detach().to(device), dtype if dtype else None)
        m = m.requires_grad_(mask_leaf is not None) if m is not None else None
        out = _dropped_attention(keep.to(device), c, {**kw, "attn_mask": m})(*leaves)
        wanted = [t for t in leaves if t.requires_grad] + ([m] if mask_leaf is not None else [])
        return [g.detach().cpu() for g in torch.autograd.grad(out, wanted, d_o.to(device, out.dtype))]

    gold, plain = autograd_of(torch.float64, "cpu"), autograd_of(None, s.device)
    q64, k64, v64, do64 = (t.detach().cpu().double() for t in (*tensors, d_o))
    m64 = None if mask is None else mask.detach().cpu()
    m64 = m64 if m64 is None or m64.dtype == torch.bool else m64.double()  # (a boolean mask stays one: not 0/1 added)
    p64 = ref.probabilities(q64, k64, **{**kw, "attn_mask": m64})  # (B, Hq, Nq, Nk)
    mc = keep.double() * c
    dropped_ds = lambda _, dp: p64 * (dp * mc + (p64 * dp * mc).sum(-1, keepdim=True))  # noqa: E731
    sizes = list(ref.chain_rule_gradients(
        q64.abs(), k64.abs(), v64.abs(), do64.abs(), p64 * mc, dropped_ds,
        scale=abs(ref.default_scale(q64.shape[-1]) if kw.get("scale") is None else kw["scale"]),
        enable_gqa=kw.get("enable_gqa", False)))
    # the score-rounding term of a backward that recomputes P, as generated-gradients has it (red team rt37h: an
    # exp2 forward with a natural-log backward passed generated-gradients and failed here at 1.14x without it)
    sensitivities = ref.gradient_score_sensitivities(q64, k64, v64, do64, **{**kw, "attn_mask": m64}, dropped=mc)
    names = [n for n, t in zip(("dq", "dk", "dv"), tensors) if t.requires_grad]
    sensitivities = [x for x, t in zip(sensitivities, tensors) if t.requires_grad]
    sizes = [size for size, t in zip(sizes, tensors) if t.requires_grad]
    if mask_leaf is not None:
        v_rep = ref.repeat_kv(v64, q64.shape[1]) if kw.get("enable_gqa") else v64
        sizes.append(dropped_ds(None, do64.abs() @ v_rep.abs().transpose(-2, -1)).sum_to_size(mask.shape))
        sensitivities.append(0.0)
        names.append("dmask")
    outcomes, details = [], []
    for name, g, g64, gp, size, sensitivity in zip(names, got, gold, plain, sizes, sensitivities):
        if g is None or tuple(g.shape) != tuple(g64.shape):
            outcomes.append(Outcome(math.inf, 0.0))
            details.append(f"{name} {'missing' if g is None else f'of shape {tuple(g.shape)}'}")
            continue
        o = measured(s, g.detach().cpu(), g64, tol.max_abs_error(gp, g64), size, sensitivity)
        outcomes.append(o)
        details.append(f"{name} {o.figures}")
    if moved:
        outcomes.append(Outcome(math.inf, 0.0))
        details.append(f"the backward moved the caller's generator ({', '.join(moved)}): it drew from it or rewound it")
    return outcomes, details


def _generator_states(device: str) -> dict[str, torch.Tensor]:
    """torch's global generators a call on ``device`` draws from: the CPU's, and the device's own on CUDA."""
    states = {"CPU": torch.get_rng_state()}
    if str(device).startswith("cuda"):
        states[str(device)] = torch.cuda.get_rng_state(torch.device(device))
    return states


def dropout_same_seed(s: Subject) -> Outcome:
    """Two calls under the same RNG state give bit-identical outputs."""
    outs = []
    for _ in range(2):
        with seeded(s, 0):
            outs.append(s.run(dropout_p=P_DROP).cpu())
    a, b = outs
    differing = int((a.contiguous().view(torch.uint8) != b.contiguous().view(torch.uint8)).sum())
    return Outcome(float(differing), 0.0, f"{differing} bytes differ")


def _droppable(c: Case) -> bool:
    return c.kind == RANDOM and c.n_k >= 8 and c.n_q >= 8 and c.batch * c.q_heads * c.n_q * c.n_k <= 2 ** 17


_THOROUGH_ONLY = THOROUGH_CASES[len(DEFAULT_CASES):]


def _moments_case(c: Case) -> bool:
    """The moment tests draw DRAWS calls per case, and their law holds for any shape: they skip the
    cases thorough adds (which add shapes; the one-call mask law runs there), not a caller's own."""
    return _droppable(c) and c not in _THOROUGH_ONLY


def _droppable_or_decode(c: Case) -> bool:
    """The mask law also on one query (a decode path that skips dropout), V = I up to 256 keys."""
    return _droppable(c) or (c.kind == RANDOM and c.n_q == 1 and 8 <= c.n_k <= 256)


_DROP = frozenset({DROPOUT})
register(Invariant("dropout-mask-law", "dropout-kept-fraction", dropout_mask_law, _droppable_or_decode, _DROP,
                   bug_classes="p read as the keep probability; missing or wrong 1/(1-p) rescale, or one "
                               "rounded to the input dtype (biased); no dropout on the one-query (decode) path"))
register(Invariant("dropout-expectation", "dropout-unbiased", dropout_expectation, _moments_case, _DROP,
                   bug_classes="dropout that biases the output (rescale missing)"))
register(Invariant("dropout-variance", "dropout-variance", dropout_variance, _moments_case, _DROP,
                   bug_classes="dropout of the wrong variance (p taken as the keep probability)"))
register(Invariant("dropout-forward-backward", None, dropout_forward_backward, _droppable,
                   _DROP | {BACKWARD}, bug_classes="backward drawing a different mask than the forward; "
                   "dP not masked or not rescaled by 1/(1-p) in dS (dq, dk wrong, dv right)"))
register(Invariant("dropout-with-attn-mask", "dropout-kept-fraction", dropout_with_attn_mask, _droppable,
                   _DROP | {ATTN_MASK}, bug_classes="dropout skipped on the attn_mask path"))
register(Invariant("dropout-independence", None, dropout_independence,
                   lambda c: _droppable(c) and (c.batch >= 2 or c.q_heads >= 2), _DROP,
                   bug_classes="one dropout mask shared across heads or batch entries; RNG offsets that "
                               "repeat a mask every key or query tile, or across batches (b·Hkv + h under GQA)"))
register(Invariant("dropout-rng-advances", None, dropout_rng_advances, _droppable, _DROP,
                   bug_classes="RNG offset not advanced (consecutive calls repeat the mask); RNG drawn "
                               "at dropout_p = 0"))
register(Invariant("dropout-kept-fraction", "dropout-kept-fraction", dropout_kept_fraction,
                   lambda c: c.kind == KEPT, _DROP,
                   bug_classes="biased keep probability (uint8 threshold: 191/256 instead of 3/4)"))
register(Invariant("dropout-same-seed", None, dropout_same_seed, _droppable, _DROP,
                   bug_classes="dropout RNG not drawn from torch's generator (same seed, different output)"))
