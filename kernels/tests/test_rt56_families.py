"""Red team rt56's escaped families, each answered by a design (the mutants each alone catches are in kernels/mutants.py,
judged by test_mutants.py): lengths divisible by the tiles and split sizes a kernel picks (paths.smooth_length), k and v
expanded apart and the gradients of expanded k, v (generate.STRIDE_ZERO, paths.EXPANSIONS); and the harness's own
autocast rule for designs in PyTorch ops, now SDPA's (references.autocast_as_sdpa)."""
from __future__ import annotations

import random
from dataclasses import replace

import torch
import torch.nn.functional as F

from kernels import mutants
from kernels.harness import generate as gen
from kernels.harness import paths
from kernels.harness.features import offered
from kernels.harness.peers import sdpa_math
from kernels.harness.references import autocast_as_sdpa, full_attention

SDPA = offered(F.scaled_dot_product_attention)


def _problems(seed=0):
    return [paths.problem(r, seed, i) for i, r in enumerate(paths.rows(seed, SDPA))]


def _divides(tile, n):
    return n % tile == 0 and n >= 2 * tile


def test_smooth_lengths_are_multiples_of_a_tile_twice_over_within_the_range():
    r = random.Random(0)
    for lo, hi, multiple in ((1, 64, 1), (16385, 32768, 1), (1024, 1536, 128), (65, 16384, 1), (2, 8, 1)):
        for _ in range(50):
            n = paths.smooth_length(lo, hi, multiple, r)
            if hi < 2 * paths.SMOOTH_TILES[0]:
                assert n is None  # (no tile fits twice)
                continue
            assert lo <= n <= hi and n % multiple == 0
            assert any(_divides(t, n) for t in paths.SMOOTH_TILES)


def test_a_run_meets_lengths_divisible_by_each_tile_and_each_divisibility_escape():
    probs = _problems()
    kinds = {r.get(paths.LENGTHS) for r in paths.rows(0, SDPA)}
    assert kinds == set(paths.LENGTH_KINDS)
    for tile in paths.SMOOTH_TILES:
        if tile != 1000:  # (1000's multiples are the least divisible by the others; met on some seeds)
            assert any(_divides(tile, p.n_k) for p in probs), tile
    # rt56's three: 768 | Nk on a split-K decode's shapes, 80 | Nk past 128 channels, 96 | Nq at 65-96 channels
    assert any(p.n_q <= 8 and p.n_k >= 2048 and _divides(768, p.n_k) and p.mask is None and not p.causal for p in probs)
    assert any(p.head_dim > 128 and _divides(80, p.n_k) for p in probs)
    assert any(64 < p.head_dim <= 96 and _divides(96, p.n_q) for p in probs)


def test_divisible_lengths_reject_whole_tile_and_split_paths_that_drawn_lengths_miss():
    cases = {  # mutant: (a problem at a divisible length, the same one a key or query off)
        "split_k_with_an_empty_last_split": gen.Problem(1, 2, 1, 1, 23040, 8, 8, False, "float32", seed=1),
        "wide_head_key_tile_of_80_stops_early": gen.Problem(1, 1, 1, 3, 1120, 173, 173, False, "float32", seed=2),
        "query_tile_of_96_last_tile_unwritten": gen.Problem(1, 2, 2, 192, 40, 96, 96, False, "float32", seed=3),
    }
    for name, p in cases.items():
        impl = getattr(mutants, name)
        assert not gen.failed(gen.check_problem(sdpa_math, p)[0])
        assert gen.failed(gen.check_problem(impl, p)[0]), name
        off = replace(p, n_k=p.n_k + 1) if "query" not in name else replace(p, n_q=p.n_q + 1)
        assert not gen.failed(gen.check_problem(impl, off)[0]), name


def test_k_and_v_are_expanded_apart_and_with_gradients():
    probs = [p for p in _problems() if "expanded" in p.layout]
    layouts = {p.layout for p in probs}
    assert layouts == {f"{w} expanded over {a}" for w in paths.EXPANSIONS for a in ("heads", "batch")}
    assert {p.layout for p in probs if p.relation == gen.GRADIENTS} >= {"k expanded over heads", "v expanded over batch"}
    p = gen.Problem(2, 2, 2, 5, 9, 4, 4, False, "float32", layout="k expanded over batch", seed=4)
    impl = mutants.k_expanded_over_the_batch_taken_as_a_shared_prompt
    assert not gen.failed(gen.check_problem(sdpa_math, p)[0]) and gen.failed(gen.check_problem(impl, p)[0])
    both = replace(p, layout="k, v expanded over batch")  # (k and v expanded together: the same values, escaped)
    assert not gen.failed(gen.check_problem(impl, both)[0])
    grads = replace(p, layout="v expanded over heads", relation=gen.GRADIENTS, grads="qkv")
    impl = mutants.expanded_kv_gradients_written_through_their_strides
    assert not gen.failed(gen.check_problem(sdpa_math, grads)[0]) and gen.failed(gen.check_problem(impl, grads)[0])
    assert not gen.failed(gen.check_problem(impl, replace(grads, relation=gen.AGREEMENT, grads=""))[0])


def test_autocast_casts_every_floating_input_but_float64_as_sdpa_does():
    q = torch.randn(1, 2, 5, 8, dtype=torch.float16)
    wrapped = autocast_as_sdpa(full_attention)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert F.scaled_dot_product_attention(q, q, q).dtype == torch.bfloat16  # (measured: SDPA's own rule)
        assert wrapped(q, q, q).dtype == torch.bfloat16
        assert wrapped(q.double(), q.double(), q.double()).dtype == torch.float64
