"""Monte Carlo confirmations of the real-attention score claims and of the scale-trap limits.

Real self-attention: q = W_Qᵀx and k = W_Kᵀx come from the same token x ~ N(0, I_n), so q·k is
the quadratic form xᵀMx (M = W_Q W_Kᵀ), not a sum of independent products. The claimed moments
are the derivations' SymPy results: at the derivation's explicit n (entries of M) and, for
larger n, the general-n index forms.
"""
from __future__ import annotations

import time

import numpy as np

from numeric import arguments, derived, sampling
from numeric.evidence import Confirmation, from_test, sweep
from numeric.registry import confirms
from numeric.statistics import Moments, binomial_upper, mean_test, variance_test

WEIGHT_CASES = ("independent", "tied")  # W_Q, W_K drawn apart, or W_Q = W_K (the symmetry trap)


def _weights(rng, n, d_k, tied):
    w_q = rng.normal(size=(n, d_k)) / np.sqrt(n)  # (n, d_k)
    w_k = w_q if tied else rng.normal(size=(n, d_k)) / np.sqrt(n)  # (n, d_k)
    return w_q, w_k


def _score_chunk(w_q, w_k, same_token):
    comp = sampling.Components()
    n = w_q.shape[0]

    def work(rng, rows):
        x = comp.draw(rng, (rows, n)).astype(np.float64)  # (rows, n)
        y = x if same_token else comp.draw(rng, (rows, n)).astype(np.float64)  # (rows, n)
        q, k = x @ w_q, y @ w_k  # (rows, d_k) each
        return Moments.of(np.einsum("rd,rd->r", q, k)[None])  # fields (1,)
    return work


def _claimed(claim_id, M, key):
    """The derived value at M: the explicit-size result when M has that size, else the index form."""
    mean, variance, n_explicit, index_forms = derived.real_score_moment_functions(claim_id)
    if M.shape[0] == n_explicit:
        return float((mean if key == "mean" else variance)(*M.ravel()))
    form = index_forms.get(f"{key}_index_form")
    if form is None:  # a mean the derivation states as the constant 0 for every n
        return float(mean(*np.zeros(n_explicit * n_explicit)))
    return derived.index_form_value(form, M)


def _score_claim(claim_id, same_token, *, n_samples, seed, alpha, sizes, claimed_variance, threads):
    started = time.perf_counter()
    n_samples, seed, alpha = arguments.n_samples(n_samples), arguments.seed(seed), arguments.alpha(alpha)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 1]))
    details = []
    n_tests = 2 * len(sizes) * len(WEIGHT_CASES)
    for i, (n, d_k) in enumerate(sizes):
        for tied in (False, True):
            w_q, w_k = _weights(rng, n, d_k, tied)
            M = w_q @ w_k.T  # (n, n)
            m = Moments.combine(sampling.map_chunks(_score_chunk(w_q, w_k, same_token), n_samples, 2 * n, seed + i,
                                                    threads=threads))[0]
            label = f"n = {n}, d_k = {d_k}, {'W_Q = W_K' if tied else 'independent W_Q, W_K'}"
            want_var = claimed_variance(M) if claimed_variance else _claimed(claim_id, M, "variance")
            v = variance_test(m, want_var, alpha)
            details.append(from_test(claim_id, f"Var(q·k) at {label}", v, alpha, power_alpha=alpha / n_tests))
            details.append(from_test(claim_id, f"E[q·k] at {label}", mean_test(m, _claimed(claim_id, M, "mean"), alpha),
                                     alpha))
    token = "one token x" if same_token else "two independent tokens x, y"
    return sweep(claim_id, f"q·k for q = W_Qᵀx, k = W_Kᵀ{'x' if same_token else 'y'}, {token} ~ N(0, I_n), "
                 f"random and tied weights", details, alpha, started, n_samples)


SIZES = ((3, 2), (8, 4), (16, 8))  # (n, d_k): the derivation's explicit n = 3, then index forms


@confirms("self-attention-score-moments", n_samples=20_000)
def self_attention_score_moments(*, n_samples=200_000, seed=0, alpha=0.001, sizes=SIZES, claimed_variance=None,
                                 threads=None) -> Confirmation:
    """``claimed_variance(M)`` may replace the derived tr(MMᵀ) + tr(M²) to see a wrong one refused."""
    return _score_claim("self-attention-score-moments", True, n_samples=n_samples, seed=seed, alpha=alpha,
                        sizes=sizes, claimed_variance=claimed_variance, threads=threads)


@confirms("distinct-token-score-moments", n_samples=20_000)
def distinct_token_score_moments(*, n_samples=200_000, seed=0, alpha=0.001, sizes=SIZES, claimed_variance=None,
                                 threads=None) -> Confirmation:
    return _score_claim("distinct-token-score-moments", False, n_samples=n_samples, seed=seed, alpha=alpha,
                        sizes=sizes, claimed_variance=claimed_variance, threads=threads)


# --------------------------------------------------------------------------- scale-trap limits


def _keys_chunk(d_k, n_keys, delta):
    comp = sampling.Components()

    def work(rng, rows):
        q = comp.draw(rng, (rows, 1, d_k)).astype(np.float64)  # (rows, 1, d_k)
        k = comp.draw(rng, (rows, n_keys, d_k)).astype(np.float64)  # (rows, n_keys, d_k)
        s = np.einsum("rid,rjd->rj", q, k)  # (rows, n_keys)
        gap = Moments.of((s[:, 0] - s[:, 1])[None])  # unscaled gap z_1 − z_2
        exceed = int((np.abs(s / d_k).max(axis=1) > delta).sum())  # max_j |s_j/d_k| > δ
        return gap, exceed
    return work


@confirms("scale-trap-limits", n_samples=10_000)
def scale_trap_limits(*, n_samples=100_000, seed=0, alpha=0.001, d_ks=(64, 256, 1024), n_keys=8, delta=0.5,
                      gap_std=None, threads=None) -> Confirmation:
    """The two halves of the limit, at finite d_k, from the derivation's own expressions:
    the unscaled gap z_1 − z_2 has standard deviation √(2 d_k) (variance test), and the
    Chebyshev bound P(max_j |z_j| > δ) ≤ n·Var(z)/δ² holds for z = q·k/d_k (one-sided binomial
    test of "the frequency is at most the bound"). ``gap_std(d_k)`` may replace the derived one."""
    started = time.perf_counter()
    n_samples, seed, alpha = arguments.n_samples(n_samples), arguments.seed(seed), arguments.alpha(alpha)
    d_ks = arguments.dimensions(d_ks, "d_ks")
    n_keys = arguments.positive_int(n_keys, "n_keys", minimum=2)
    delta = arguments.real(delta, "delta")
    std_of, tail_of = derived.scale_trap_limits()
    std_of = gap_std or std_of
    details = []
    for i, d in enumerate(d_ks):
        parts = sampling.map_chunks(_keys_chunk(d, n_keys, delta), n_samples, d * (n_keys + 1),
                                    seed + 7919 * i, threads=threads)
        gap = Moments.combine([p[0] for p in parts])[0]
        exceed = sum(p[1] for p in parts)
        v = variance_test(gap, float(std_of(d)) ** 2, alpha)
        details.append(from_test("scale-trap-limits", f"Var(z_1 − z_2) unscaled = (√(2d_k))² at d_k = {d}", v, alpha,
                                 power_alpha=alpha / (2 * len(d_ks))))
        bound = min(1.0, float(tail_of(d, n_keys, delta)))
        freq = exceed / n_samples
        p = binomial_upper(exceed, n_samples, bound) if bound < 1 else 1.0
        z = float(np.sqrt(freq * (1 - freq) / n_samples)) * 3.29
        details.append(Confirmation("scale-trap-limits", f"P(max_j |q·k_j/d_k| > {delta}) ≤ n·Var/δ² = {bound:.4g} at "
                                    f"d_k = {d} (one-sided binomial test)", freq, (max(0.0, freq - z), freq + z), p,
                                    p >= alpha, n_samples, 0.0, alpha, bound))
    return sweep("scale-trap-limits", f"scale trap at finite d_k: unscaled gaps grow as √(2d_k), d_k-scaled logits "
                 f"obey the Chebyshev collapse bound ({n_keys} keys, δ = {delta})", details, alpha, started, n_samples)
