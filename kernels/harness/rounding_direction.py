"""Whether a half-precision result was rounded to nearest: the bias of its error against float64.

Claim ``round-to-nearest-unbiased`` (proofs/theorems/rounding_bias.py): an exact value whose
position inside its rounding cell is uniform has round-to-nearest error of mean 0, while truncation
toward zero has mean -h/2 in the direction of the value's sign. A kernel that truncates (or rounds
up) its float16/bfloat16 store stays within the 2× magnitude rule, yet that bias, summed over a
training run, is what Qiu & Yao (arXiv 2510.04212) trace loss explosions to.

The statistic. Each element's error against float64 is expressed in units of its own rounding cell
(ulp of the golden value in the result's dtype), e = (out - gold) / ulp(gold), both as is (catches
rounding toward -∞ or +∞) and times sign(gold) (catches truncation toward zero). e is clipped to
±CLIP ulps: an error that large is the kernel's arithmetic, not its last rounding (a gradient whose
golden value nearly cancels to 0 has an error of thousands of its own ulps), and clipping a
distribution symmetric about 0 keeps its mean 0 while keeping the variance finite. Elements of one
row (the last dim) share the row's normaliser, so their errors are correlated; rows are
independent, so the unit is the row mean. H0: |E[row mean]| ≤ δ, δ one fifth of the derived
truncation bias (0.1 ulp); rejected when (|mean| - δ)/se > z at one-sided α = ALPHA per statistic
(se the rows' standard error; the CLT over ≥ MIN_ROWS rows).

Where it is applied: to every float16/bfloat16 output judged against its golden value
(``subject.against``) and every gradient judged against its golden value with the plain
same-precision reference beside it (``subject.gradients_against``, over the elements that have not
cancelled, the reference's own bias allowed), fixed cases and drawn problems alike, that has
MIN_ROWS rows; as well as by the rounding-bias invariants (bias.py) on shapes built for it.
Red team rt59: 7 kernels truncating or rounding up their half results on one path (gradients,
masked, strided, rank ≠ 4, long prefill, long causal) escaped a test that looked only at the
outputs of a few fixed cases. In float32 a result's last rounding is one of many of its size
inside the kernel, which the claim does not cover: float32 is not judged.
"""
from __future__ import annotations

import functools
import math

import torch

ALPHA = 1e-6
MIN_ROWS = 64
CLIP = 8.0  # ulps: past this, an element's error is the kernel's arithmetic (see above)
# Rows chained by differing by at most this many ulps in every element are one group (distinct_rows): their values
# sit at nearly the same places in their rounding cells. Measured: red team rt59's correct FlashAttention-2 design
# rounding P to float16 before P·V, at scale 1e-6 with a key-bias mask (every query of a head the same P), failed
# at z 15.8 when only rows that round alike were one (390 "distinct" rows of 1016: a row one ulp off in a single
# element of 100 counted apart), and at z 22 on cells of 4 ulps (69 of the 8 heads' rows).
SAME_ULPS = 0.5
# An element whose exact value is a small fraction of its terms' absolute sum has cancelled: its error is the
# arithmetic's on the terms (a few eps of the sum, thousands of its own ulps, signed by how the terms were
# rounded), not its last rounding. Measured on torch's SDPA math backend (correct): the float16 dq of the contract
# case (dropout and a mask), over every element, toward-zero mean +3.9 ulp ± 0.29 (z 13 at 4.75); gradients of
# whole random cases, elements at ≥ 2^-7 and ≥ 2^-4 of their size, within ±0.08 ulp.
CANCELLED_BITS = 6
BIASED_DTYPES = frozenset({torch.float16, torch.bfloat16})  # the dtypes whose rounding is judged
STATISTICS = ("signed", "toward zero")


@functools.lru_cache(maxsize=1)
def truncation_bias() -> float:
    """The derived mean error of truncation toward zero, in units of the rounding cell (-1/2)."""
    from proofs.claims import proved

    return float(proved("round-to-nearest-unbiased").result["truncation_mean"])


def margin() -> float:
    """δ of H0 |bias| ≤ δ: a fifth of the derived truncation bias, in ulps."""
    return abs(truncation_bias()) / 5


@functools.lru_cache(maxsize=1)
def z_critical() -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(1 - ALPHA)


def ulp(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The spacing of ``dtype`` at |x| (float64; subnormal spacing below the smallest normal)."""
    info = torch.finfo(dtype)
    mag = x.abs().clamp(min=info.tiny)
    return torch.exp2(torch.floor(torch.log2(mag))) * info.eps


def distinct_rows(gold: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Indices of the rows of ``gold`` (flattened to (rows, n)) that stand for their groups of near-equal rows:
    rows chained by differing by at most SAME_ULPS ulps of ``dtype`` (at the larger row's largest element) in every
    element, compared in the order of a fixed random projection, which keeps near-equal rows next to each other.

    Rows that close are one rounding repeated, not independent ones: a query broadcast across heads (stride 0), a
    tiny scale that makes every row of a head the same weighted mean of v, a one-hot row repeated (and a kernel
    rounding P to the half type before P·V then rounds one P for all of them). Counting each group once keeps the
    rows' standard error honest (an output of equal rows has se 0, and any nonzero mean is 'significant')."""
    flat = gold.reshape(-1, gold.shape[-1]).nan_to_num(nan=0.0, posinf=0.0, neginf=0.0)  # (rows, n)
    if flat.shape[0] == 0:
        return torch.zeros(0, dtype=torch.long)
    direction = torch.rand(flat.shape[-1], generator=torch.Generator().manual_seed(0), dtype=flat.dtype) + 0.5  # (n,)
    order = torch.argsort(flat @ direction)  # (rows,)
    ordered = flat[order]  # (rows, n)
    largest = ordered.abs().amax(dim=-1)  # (rows,)
    step = (ordered[1:] - ordered[:-1]).abs().amax(dim=-1) / ulp(torch.maximum(largest[1:], largest[:-1]), dtype)
    apart = torch.cat([torch.ones(1, dtype=torch.bool), step > SAME_ULPS])  # (rows,) where a new group starts
    return order[apart].sort().values


def bias_statistics(out: torch.Tensor, gold: torch.Tensor, dtype: torch.dtype, where=None) -> dict:
    """Row-mean errors in ulps (clipped to ±CLIP), signed and sign-adjusted, over the entries with a finite
    gold ≠ 0 and a finite ``out`` (and ``where`` True, if given; rows with none are left out):
    {name: (mean, standard error, rows)}."""
    gold, out = gold.double(), out.detach().cpu().double()
    use = (gold != 0) & torch.isfinite(gold) & torch.isfinite(out)
    if where is not None:
        use &= where.cpu()
    gold, out, use = (t.reshape(-1, gold.shape[-1])[distinct_rows(gold, dtype)] for t in (gold, out, use))  # (rows, n)
    err = torch.where(use, ((out - gold) / ulp(gold, dtype)).clamp(-CLIP, CLIP), torch.zeros_like(gold))  # (..., n)
    count = use.sum(dim=-1)  # (...,)
    stats = {}
    for name, e in zip(STATISTICS, (err, err * torch.sign(gold))):
        rows = (e.sum(dim=-1) / count.clamp(min=1))[count > 0]  # (rows,)
        n = rows.numel()
        mean = float(rows.mean()) if n else 0.0
        stats[name] = (mean, float(rows.std() / math.sqrt(n)) if n > 1 else math.inf, n)
    return stats


def bias_test(out: torch.Tensor, gold: torch.Tensor, dtype: torch.dtype, where=None,
              plain: torch.Tensor | None = None) -> tuple[float, float, str]:
    """The one-sided z-tests of H0 |E[row-mean error]| ≤ δ, both statistics: (worst z, z_critical, what was seen).
    Fewer than MIN_ROWS distinct rows with an entry judged: z 0 (too few for the CLT the test rests on).
    With ``plain`` (the same-precision reference's result), δ grows by |its own mean| on the same entries: the
    low-precision rule's yardstick, applied to bias (torch's math backend rounds P and dS in the half type, and its
    gradients of structured inputs carry a bias of their own)."""
    allowed = {name: 0.0 for name in STATISTICS} if plain is None else {
        name: abs(mean) if math.isfinite(mean) else 0.0
        for name, (mean, _, _) in bias_statistics(plain, gold, dtype, where).items()}
    worst_z, details = 0.0, []
    for name, (mean, se, n) in bias_statistics(out, gold, dtype, where).items():
        if n < MIN_ROWS:
            return 0.0, z_critical(), f"{n} distinct rows judged: fewer than {MIN_ROWS}, not tested"
        excess = abs(mean) - margin() - allowed[name]
        z = (excess / se if se > 0 else (math.inf if excess > 0 else 0.0)) if math.isfinite(mean) else math.inf
        worst_z = max(worst_z, z)
        details.append(f"{name}: mean {mean:+.3f} ulp ± {se:.3f} over {n} rows"
                       + (f" (plain reference {allowed[name]:.3f})" if plain is not None else ""))
    return max(worst_z, 0.0), z_critical(), "; ".join(details) + f" (H0 |bias| ≤ {margin():g} ulp, α = {ALPHA:g})"


def uncancelled(gold: torch.Tensor, size) -> torch.Tensor | None:
    """Where ``gold`` is at least 2^-CANCELLED_BITS of ``size`` (its terms' absolute sum, the floor's size): the
    elements whose error a correct kernel's last rounding dominates (None: all, where ``size`` is no tensor of
    gold's shape)."""
    if not isinstance(size, torch.Tensor):
        return None
    try:
        size = size.cpu().double().expand_as(gold)
    except RuntimeError:
        return None
    return gold.abs() >= size * 2.0 ** -CANCELLED_BITS


def judged(out: torch.Tensor) -> bool:
    """Whether a result judged against its golden value may also be judged for its rounding's bias: a half
    type and MIN_ROWS rows (of which bias_test counts the distinct ones)."""
    return (out.dtype in BIASED_DTYPES and out.dim() > 0 and out.shape[-1] > 0
            and out.numel() // out.shape[-1] >= MIN_ROWS)
