"""The combine kernel against the merge that ``proofs`` derives (claims online-softmax-merge,
online-softmax-monoid, logsumexp-merge), evaluated as the lambdified SymPy expressions.

The workspace holds (m, l, acc) with acc = l·o unnormalised; the derived merge works on
(m, l, o). The reference folds the split states left to right with the derived merge in
float64; identity states (−∞, 0, 0) from key ranges with no visible key must drop out.
"""
import numpy as np
import pytest
import sympy as sp
import torch

import proofs
from proofs.theorems.online_softmax import IDENTITY_STATE, logsumexp_merge
from kernels.decode.api import combine

# float32 rounding of a sum of S terms is within S·eps·Σ|terms| (Higham's γ_S); the factor 2
# on the same-precision reference's error is FlashAttention's test rule.
EPS32 = float(np.finfo(np.float32).eps)


@pytest.fixture(scope="module")
def derived():
    merge = proofs.online_softmax_merge()
    lse = logsumexp_merge()
    assert merge.verified and lse.verified
    r = merge.result
    fold_step = sp.lambdify(r.symbols, (r.m, r.l, r.o), "numpy")
    to_lse = sp.lambdify(sp.symbols("m_1 l_1", real=True), lse.result.lse, "numpy")
    return fold_step, to_lse


def derived_fold(derived, m, l, acc):
    """Fold S states per row with the derived merge, in the arrays' precision."""
    step, to_lse = derived
    identity = tuple(float(x) for x in IDENTITY_STATE)
    with np.errstate(invalid="ignore", divide="ignore"):
        o = np.where(l[..., None] > 0, acc / np.where(l > 0, l, 1)[..., None], 0).astype(acc.dtype)
        state = (np.full(m.shape[0], identity[0], m.dtype), np.zeros_like(l[:, 0]), np.zeros_like(o[:, 0]))
        for s in range(m.shape[1]):
            nxt = (m[:, s], l[:, s], o[:, s])
            merged = step(state[0][:, None], state[1][:, None], state[2], nxt[0][:, None], nxt[1][:, None], nxt[2])
            # merge(I, I) = I (online-softmax-monoid); the expression itself would be 0/0 there.
            both_empty = (state[1] == 0) & (nxt[1] == 0)
            state = (np.where(both_empty, identity[0], merged[0][:, 0]), np.where(both_empty, 0, merged[1][:, 0]),
                     np.where(both_empty[:, None], 0, merged[2]))
        lse = to_lse(state[0], state[1])
    return state[2], lse


def random_states(rows=12, splits=7, dim=40, seed=0):
    """States as a key range leaves them: maxima spread over ±30, some ranges empty."""
    rng = np.random.default_rng(seed)
    m = rng.uniform(-30, 30, (rows, splits)).astype(np.float32)
    l = rng.uniform(1, 64, (rows, splits)).astype(np.float32)
    acc = (rng.standard_normal((rows, splits, dim)) * l[..., None]).astype(np.float32)
    empty = rng.random((rows, splits)) < 0.3
    empty[0, 1:] = True  # a row with a single non-empty range: the merge must return it unchanged
    empty[1, :-1] = True
    empty[:, 0] &= rng.random(rows) < 0.5  # keep most rows non-empty
    empty[np.all(empty, 1), 0] = False
    m[empty], l[empty], acc[empty] = -np.inf, 0, 0
    return m, l, acc


def triton_combine(m, l, acc):
    rows, splits, dim = acc.shape
    m_ws, l_ws, acc_ws = (torch.from_numpy(x.copy()) for x in (m, l, acc))
    out = torch.full((rows, dim), float("nan"))
    lse = torch.full((rows,), float("nan"))
    combine(m_ws, l_ws, acc_ws, out, lse)
    return out.numpy(), lse.numpy()


def combine_error(fn, derived, m, l, acc):
    """Max error of ``fn``'s (o, lse) against the float64 derived fold, and its bound."""
    o, lse = fn(m, l, acc)
    o64, lse64 = derived_fold(derived, m.astype(np.float64), l.astype(np.float64), acc.astype(np.float64))
    o32, lse32 = derived_fold(derived, m, l, acc)
    floor = m.shape[1] * EPS32
    err = max(np.max(np.abs(o - o64)) / np.max(np.abs(o64)), np.max(np.abs(lse - lse64)) / np.max(np.abs(lse64)))
    ref = max(np.max(np.abs(o32 - o64)) / np.max(np.abs(o64)), np.max(np.abs(lse32 - lse64)) / np.max(np.abs(lse64)))
    if not (np.all(np.isfinite(o)) and np.all(np.isfinite(lse))):
        return np.inf, 2 * max(ref, floor)
    return err, 2 * max(ref, floor)


@pytest.mark.parametrize("splits", [1, 2, 7, 33])
def test_combine_follows_the_derived_merge(derived, splits):
    m, l, acc = random_states(splits=splits, seed=splits)
    err, bound = combine_error(triton_combine, derived, m, l, acc)
    assert err <= bound, (err, bound)


def test_empty_ranges_are_the_identity(derived):
    m, l, acc = random_states(rows=4, splits=5)
    o, lse = triton_combine(m, l, acc)
    assert np.all(np.isfinite(o)) and np.all(np.isfinite(lse))
    # Row 0 has one non-empty range: the merge with identities hands back that state exactly.
    np.testing.assert_allclose(o[0], acc[0, 0] / l[0, 0], rtol=2 * EPS32)
    np.testing.assert_allclose(lse[0], m[0, 0] + np.log(l[0, 0]), rtol=2 * EPS32)
    # A row whose ranges are all empty (flash_decode never makes one) stays NaN-free.
    m[2], l[2], acc[2] = -np.inf, 0, 0
    o, lse = triton_combine(m, l, acc)
    assert np.all(o[2] == 0) and lse[2] == -np.inf and np.all(np.isfinite(o))


def test_checker_rejects_a_merge_without_the_rescale(derived):
    m, l, acc = random_states(splits=4, seed=3)

    def no_rescale(m, l, acc):  # forgets e^{m_s − M}: every range weighted as if it had the max
        return acc.sum(1) / l.sum(1)[:, None], np.log(l.sum(1)) + m.max(1)

    err, bound = combine_error(no_rescale, derived, m, l, acc)
    assert err > bound


def test_checker_rejects_nan_from_identity_states(derived):
    m, l, acc = random_states(splits=4, seed=4)

    def normalise_first(m, l, acc):  # o_s = acc_s / l_s is 0/0 for an empty range: NaN leaks in
        with np.errstate(invalid="ignore"):
            w = np.exp(m - m.max(1, keepdims=True)) * l
            return (w[..., None] * (acc / l[..., None])).sum(1) / w.sum(1)[:, None], m.max(1) + np.log(w.sum(1))

    err, bound = combine_error(normalise_first, derived, m, l, acc)
    assert err > bound
