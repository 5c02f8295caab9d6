"""HBM traffic of one attention forward, standard against this project's tiled kernel.

The counts are ``proofs.traffic``'s expressions: per tensor, the elements a loop reads from and
writes to slow memory (``kernels/traffic.py`` measures the same counts on the running kernel under
Triton's interpreter and finds them equal). Each is taken here as the definition of a traffic
function, so the checker connects the statement to the loop counts by rewriting, never by a label.

What follows (per batch and head, N queries and N keys, head dim d = d_v):

- standard attention moves 4N² + 4Nd elements, of which 4N² are S and P (written, then read);
- the tiled kernel with B × B tiles, B dividing N, moves 2N²d/B + 2Nd + N: it never writes S or
  P, yet it re-reads K and V once per query block, so its traffic is still quadratic in N;
- with the tile chosen from the fast memory, B = M/(5d) (``proofs.traffic.tiles_from_fast_memory``),
  that is 10N²d²/M + 2Nd + N: FlashAttention's Θ(N²d²/M) (its Theorem 2), which its Proposition 3
  says no exact algorithm beats for all M (cited in the statement's references, not proved);
- scaling S in its own pass costs 2N² more; scaling Q in its own pass costs 2Nd; so pre-scaling Q
  saves 2N² − 2Nd against a separate pass over S (and nothing inside a fused kernel, where S never
  reaches HBM).

The causal loop's counts (query block i visits i + 1 key blocks) are not derived here: the
checker has no rule for a Min inside a sum over blocks. ``kernels/traffic.py`` measures them.
"""
from __future__ import annotations

import sympy as sp

from proofs import traffic
from proofs.engine import Derivation, Proof, Result

# Symbols of the statement: sequence length, head dim, tile size, fast memory, query blocks.
N, D, B, T = sp.symbols("N d B T", positive=True, integer=True)
M = sp.Symbol("M", positive=True)

# Traffic functions (elements per batch and head): the definitions below give their bodies.
hbm_standard = sp.Function("hbm_standard")
hbm_standard_SP = sp.Function("hbm_standard_SP")
hbm_standard_scale_pass = sp.Function("hbm_standard_scale_pass")
hbm_q_scale_pass = sp.Function("hbm_Q_scale_pass")
hbm_flash = sp.Function("hbm_flash")

_n, _d, _b = sp.symbols("n e b", positive=True, integer=True)  # the definitions' ∀-arguments


def statement() -> sp.Basic:
    """The claim's formal statement (the catalogue's ``formal`` builds it from here)."""
    eq = lambda a, b: sp.Eq(a, b, evaluate=False)  # noqa: E731  stated, not decided on construction
    return sp.And(eq(hbm_standard(N, D), 4 * N**2 + 4 * N * D),
                  eq(hbm_standard_SP(N), 4 * N**2),
                  eq(hbm_flash(N, D, B), 2 * N**2 * D / B + 2 * N * D + N),
                  eq(hbm_flash(N, D, M / (5 * D)), 10 * N**2 * D**2 / M + 2 * N * D + N),
                  eq(hbm_standard_scale_pass(N, D) - hbm_standard(N, D) - hbm_q_scale_pass(N, D),
                     2 * N**2 - 2 * N * D))


def memory_traffic() -> Derivation:
    """The statement above, from the loop counts of ``proofs.traffic``."""
    pf = Proof("memory-traffic")
    std = traffic.standard_forward(_n, _d, _d)
    standard = pf.define(hbm_standard(_n, _d), std.total, "standard attention (FlashAttention's Algorithm 0): "
                         "read Q, K; write S; read S, write P; read P, V; write O", forall=[_n, _d])
    standard_sp = pf.define(hbm_standard_SP(_n), sp.Add(*(part[name] for part in (std.reads, std.writes)
                                                          for name in ("S", "P"))),
                            "its S and P traffic: each N × N matrix written once and read once", forall=[_n])
    scale_pass = pf.define(hbm_standard_scale_pass(_n, _d),
                           traffic.standard_forward(_n, _d, _d, separate_scale_pass=True).total,
                           "standard attention with S scaled in its own pass (S read and written once more)",
                           forall=[_n, _d])
    q_pass = pf.define(hbm_q_scale_pass(_n, _d), 2 * _n * _d, "Q scaled in its own pass: Q read and written "
                       "once (N × d each)", forall=[_n, _d])
    flash = pf.define(hbm_flash(_n, _d, _b), traffic.flash_forward(_n, _n, _d, _d, _b, _b).total,
                      "this kernel's forward with B × B tiles: each query block's Q rows once, K and V rows of every "
                      "key block (tails masked), O and lse written (proofs.traffic.flash_forward)",
                      forall=[_n, _d, _b])
    blocks = pf.assume(sp.Eq(N, T * B, evaluate=False), "the tile B divides N: N = T·B query blocks")
    fits = pf.assume(sp.Eq(M, 5 * D * B, evaluate=False),
                     "the tile is chosen from the fast memory M: B = M/(5d) (proofs.traffic.tiles_from_fast_memory; "
                     "M a multiple of 5d)")
    definitions = [standard, standard_sp, scale_pass, q_pass, flash]
    standard_total, standard_quadratic = pf.stated(hbm_standard(N, D)), pf.stated(hbm_standard_SP(N))
    tiled, theta = pf.stated(hbm_flash(N, D, B)), pf.stated(hbm_flash(N, D, M / (5 * D)))
    prescale = pf.stated(hbm_standard_scale_pass(N, D) - hbm_standard(N, D) - hbm_q_scale_pass(N, D))
    pf.rewrite(standard_total.lhs, standard_total.rhs, definitions, "2Nd (Q, K) + 4N² (S, P) + 2Nd (V, O)",
               label="standard attention")
    pf.rewrite(standard_quadratic.lhs, standard_quadratic.rhs, definitions, "S and P: written once, read once",
               label="S and P traffic")
    pf.rewrite(tiled.lhs, tiled.rhs, [*definitions, blocks], "Nd (Q) + 2d·N·T (K and V once per query block) + "
               "Nd (O) + N (lse), with T = N/B: quadratic in N for fixed d and B", label="tiled forward")
    pf.rewrite(theta.lhs, theta.rhs, [*definitions, blocks, fits], "B = M/(5d): 2N²d/B = 10N²d²/M, "
               "FlashAttention's Θ(N²d²/M)", label="tiles from fast memory")
    pf.rewrite(prescale.lhs, prescale.rhs, definitions, "a pass over S costs 2N², one over Q costs 2Nd",
               label="pre-scaling Q")
    return pf.finish(Result(standard=std.total, tiled=traffic.flash_forward(N, N, D, D, B, B).total,
                            lower_bound=traffic.LOWER_BOUND_PREMISE))
