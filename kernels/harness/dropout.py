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

from kernels.harness import reference as ref
from kernels.harness import tolerance as tol
from kernels.harness.cases import RANDOM, Case
from kernels.harness.invariants import BACKWARD, DROPOUT, Invariant, _proved, register
from kernels.harness.subject import Outcome, Subject, checked_output, worst

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
    return s.cast(torch.eye(n_k, dtype=torch.float64).expand(s.k.shape[0], s.k.shape[1], n_k, n_k))  # (B, Hkv, Nk, Nk)


def _probabilities(s: Subject) -> torch.Tensor:
    q, k = s.q.cpu().double(), s.k.cpu().double()
    return ref.probabilities(q, k, **s.kwargs())  # (B, Hq, Nq, Nk)


def _z_outcome(name: str, z: float) -> tuple[Outcome, str]:
    return Outcome(abs(z) if math.isfinite(z) else math.inf, _z()), f"{name}: z = {z:+.2f}"


def dropout_mask_law(s: Subject) -> Outcome:
    """V = I reveals W = P∘M/(1-p): kept fraction 1 - p (binomial), kept entries P/(1-p), others 0."""
    keep, rescale, _ = laws()
    with seeded(s, 0):
        w = s.run(v=one_hot_values(s), dropout_p=P_DROP).cpu().double()  # (B, Hq, Nq, Nk)
    p64 = _probabilities(s)
    kept = w != 0
    counted = p64 > P_FLOOR
    n, k = int(counted.sum()), int((kept & counted).sum())
    rate = float(keep(P_DROP))
    z = (k - n * rate) / math.sqrt(n * rate * (1 - rate)) if n else 0.0
    fraction, d1 = _z_outcome(f"kept {k} of {n} (expected {rate:g})", z)
    # Kept entries against P/(1-p); the plain reference rounds P in the dtype, then rescales it.
    c = float(rescale(P_DROP))
    expected = torch.where(kept, p64 * c, torch.zeros_like(p64))
    plain = (ref.probabilities(s.q, s.k, **s.kwargs()) * c).cpu().double()
    plain_err = tol.max_abs_error(torch.where(kept, plain, torch.zeros_like(plain)), expected)
    scaled = Outcome(tol.max_abs_error(w, expected), tol.bound(s.dtype, plain_err, expected))
    return worst([fraction, scaled], [d1, f"rescale 1/(1-p) = {c:g}: {scaled.discrepancy:.3g}/{scaled.bound:.3g}"])


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
    gold, _ = s.base
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


def dropout_forward_backward(s: Subject) -> Outcome:
    """One seeded call with V = I: its output is W, and its dV must be Wᵀ dO (the same mask)."""
    v1 = one_hot_values(s)
    d_o = s.cast(torch.randn(s.q.shape[:-1] + (s.case.n_k,), generator=s.rng("dropout dO"), dtype=torch.float64))
    leaves = ref.leaves((s.q, s.k, v1))
    with seeded(s, 0):
        w = s.impl(*leaves, **s.kwargs(dropout_p=P_DROP))
        checked_output(w, s.q, v1)
        dv = torch.autograd.grad(w, leaves[2], d_o)[0]
    w64, do64 = w.detach().cpu().double(), d_o.cpu().double()
    expected = w64.transpose(-2, -1) @ do64  # (B, Hq, Nk, Nk)
    size = w64.abs().transpose(-2, -1) @ do64.abs()
    plain = (w.detach().transpose(-2, -1) @ d_o).cpu().double()
    if s.case.gqa:
        b, hkv, g = s.k.shape[0], s.k.shape[1], s.q.shape[1] // s.k.shape[1]
        expected, size, plain = (x.reshape(b, hkv, g, *x.shape[2:]).sum(2) for x in (expected, size, plain))
    return Outcome(tol.max_abs_error(dv.cpu(), expected),
                   tol.bound(s.dtype, tol.max_abs_error(plain, expected), size))


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


_DROP = frozenset({DROPOUT})
register(Invariant("dropout-mask-law", "dropout-kept-fraction", dropout_mask_law, _droppable, _DROP,
                   bug_classes="p read as the keep probability; missing or wrong 1/(1-p) rescale"))
register(Invariant("dropout-expectation", "dropout-unbiased", dropout_expectation, _droppable, _DROP,
                   bug_classes="dropout that biases the output (rescale missing)"))
register(Invariant("dropout-variance", "dropout-variance", dropout_variance, _droppable, _DROP,
                   bug_classes="dropout of the wrong variance (p taken as the keep probability)"))
register(Invariant("dropout-forward-backward", None, dropout_forward_backward, _droppable,
                   _DROP | {BACKWARD}, bug_classes="backward drawing a different mask than the forward"))
register(Invariant("dropout-same-seed", None, dropout_same_seed, _droppable, _DROP,
                   bug_classes="dropout RNG not drawn from torch's generator (same seed, different output)"))
