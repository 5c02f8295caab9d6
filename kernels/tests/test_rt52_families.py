"""Red team rt52's escaped families, each answered by a design rather than a value added to a list (the mutants each
design alone catches are in kernels/mutants.py, judged by test_mutants.py): group sizes dealt over each relation's
grouped rows, explicit scales dealt by kind and drawn continuously, head dims by octaves past 512, additive masks'
magnitudes spread over six decades, zero tails, and the (Nq, Nk) plane's line of octave cells."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from kernels import mutants
from kernels.harness import generate as gen
from kernels.harness import paths
from kernels.harness.features import offered
from kernels.harness.peers import sdpa_math
from kernels.harness.subject import Subject

SDPA = offered(F.scaled_dot_product_attention)
DTYPES = ("float32", "float16", "bfloat16")


@pytest.fixture(scope="module")
def rows():
    return paths.rows(0, SDPA)


def _problems(rows, wanted):
    return [(row, paths.problem(row, 0, i)) for i, row in enumerate(rows) if wanted(row)]


def test_each_relations_grouped_rows_meet_every_group_size(rows):
    for relation, groups in (("forward", paths.GROUPS), ("gradients", paths.COSTLY_GROUPS)):
        met = {p.q_heads // p.kv_heads for _, p in _problems(rows, lambda r: r["heads"] == paths.GROUPED
                                                              and r["relation"] == relation)}
        assert met >= set(groups), (relation, met)
    # the forward rows meet groups of 5 to 7 over two KV heads on paths past 2^13 keys too
    long = _problems(rows, lambda r: r["heads"] == paths.GROUPED and paths.ALL_PATHS[r["path"]][2][0] >= 2 ** 13)
    assert {p.q_heads // p.kv_heads for _, p in long} >= {5, 6, 7} and {p.kv_heads for _, p in long} == {2}


def test_each_relations_explicit_scales_meet_one_values_near_one_and_near_the_default_and_broad_ones(rows):
    for relation in ("forward", "gradients"):
        scaled = [p for _, p in _problems(rows, lambda r: r["scale"] == "explicit" and r["relation"] == relation)]
        scales = [p.scale for p in scaled]
        assert 1.0 in scales, relation
        assert any(s != 1.0 and abs(s - 1.0) < 0.05 for s in scales), relation
        assert any(s != 1 / math.sqrt(p.head_dim) and abs(s * math.sqrt(p.head_dim) - 1.0) < 0.1
                   for s, p in zip(scales, scaled)), relation
        assert any(s < 0 for s in scales) and len(set(scales)) > len(scales) // 2, relation  # (continuous, not a list)


def test_the_huge_head_dims_meet_each_octave_past_512(rows):
    dims = [p.head_dim for _, p in _problems(rows, lambda r: r["head dim"] == "huge")]
    for lo, hi in paths.HUGE_OCTAVES:
        assert any(lo <= d <= hi for d in dims), (lo, hi, dims)


def test_each_dtypes_additive_masks_take_magnitudes_over_every_decade_of_the_range(rows):
    lo, hi = paths.MASK_EXPONENTS
    for dtype in ("float32", "float64"):
        masked = [p for r, p in _problems(rows, lambda r: r["dtype"] == dtype) if p.mask_kind == "additive"]
        exponents = [math.log10(p.mask_magnitude) for p in masked if p.mask_magnitude != 1.0]
        assert sum(p.mask_magnitude == 1.0 for p in masked) >= len(masked) // 2  # (every other one of size 1)
        assert {math.floor(e) for e in exponents} >= set(range(int(lo), int(hi))), (dtype, exponents)
    assert paths.mask_magnitude(None, 0) == paths.mask_magnitude(4, 0) == 1.0


def test_an_additive_masks_magnitude_scales_its_finite_values_and_keeps_its_minus_infinities():
    from kernels.harness.masks import additive_mask

    s = Subject(sdpa_math, gen.Problem(1, 1, 1, 8, 8, 4, 4, False, "float64").case(), torch.float64, "cpu", 0)
    unit, small = additive_mask(s, (8, 8), "m"), additive_mask(s, (8, 8), "m", magnitude=1e-4)
    finite = unit.isfinite()
    assert torch.equal(finite, small.isfinite()) and torch.allclose(small[finite], 1e-4 * unit[finite])


def _zero_tail_problem(causal=False, **fields):
    return gen.Problem(2, 2, 2, 9, 13, 8, 8, causal, "float32", zero_tails=True, **fields)


def test_zero_tails_zero_the_last_quarter_of_the_keys_and_the_queries_and_sdpa_passes_them():
    s = Subject(sdpa_math, _zero_tail_problem().case(), torch.float32, "cpu", 0)
    gen._zero_tails(s)
    for x, n in ((s.q, 9), (s.k, 13), (s.v, 13)):
        tail = max(1, n // 4)
        assert bool((x[..., n - tail:, :] == 0).all()) and bool((x[..., : n - tail, :] != 0).any())
    for fields in ({}, {"causal": True}, {"relation": gen.GRADIENTS, "grads": "qkv"}):
        outcome, refused = gen.check_problem(sdpa_math, _zero_tail_problem(**fields))
        assert refused is None and not gen.failed(outcome), (fields, outcome.detail)


@pytest.mark.parametrize("name", ["trailing_zero_keys_dropped", "trailing_zero_queries_answered_zero"])
def test_zero_tails_reject_a_kernel_unpadding_by_value(name):
    impl = getattr(mutants, name)
    assert gen.failed(gen.check_problem(impl, _zero_tail_problem())[0])
    assert not gen.failed(gen.check_problem(impl, gen.Problem(2, 2, 2, 9, 13, 8, 8, False, "float32"))[0])


def test_the_plane_holds_each_cell_of_its_line_causal_in_one_dtype_and_masked_in_the_next():
    line, = paths.PLANE_LINES[False]
    least, most = paths.PLANE_QUERY_OCTAVES[False]
    judged = [p for d in DTYPES for p in paths.plane(0, d, DTYPES, SDPA)]
    cells = {}
    for p in judged:
        a, b = (math.ceil(math.log2(n)) - 1 for n in (p.n_q, p.n_k))  # (Nq in (2^a, 2^a + 2^a/4])
        assert a + b == line and least <= a <= most and p.n_q <= 1.25 * 2 ** a and p.n_k <= 1.25 * 2 ** b
        cells.setdefault((a, b), []).append(p)
    assert sorted(cells) == [(a, line - a) for a in range(least, most + 1)]
    for (a, b), ps in cells.items():
        kinds = {("causal" if p.causal else "mask" if p.mask else "plain"): p.dtype for p in ps}
        assert set(kinds) == {"causal", "mask"} and kinds["causal"] != kinds["mask"], (a, b, kinds)
    # a run of one dtype judges every cell both ways in it; an impl with neither feature a plain problem a cell
    assert len(paths.plane(0, "float16", ("float16",), SDPA)) == len(judged)
    assert all(not p.causal and p.mask is None for p in paths.plane(0, "float32", DTYPES, frozenset()))
    # a thorough run's lines
    assert {round(math.log2(p.n_q * p.n_k)) for p in paths.plane(0, "float32", ("float32",), SDPA, thorough=True)} \
        >= set(paths.PLANE_LINES[True])


@pytest.mark.parametrize("name", ["chunked_prefill_causal_bottom_right", "chunked_prefill_drops_the_mask"])
def test_the_planes_cell_past_256_queries_and_2_to_the_14_keys_rejects_a_chunked_prefill_path_there(name):
    impl = getattr(mutants, name)
    cell = [p for d in DTYPES for p in paths.plane(0, d, DTYPES, SDPA)
            if mutants._chunked_prefill(torch.empty(p.n_q, 1), torch.empty(p.n_k, 1))]
    assert cell and all(not gen.failed(gen.check_problem(sdpa_math, p)[0]) for p in cell)
    assert any(gen.failed(gen.check_problem(impl, p)[0]) for p in cell)


def test_the_plane_is_a_path_a_run_may_keep_alone():
    assert paths.chosen_paths(["plane"]) == ("plane",)
    alone = list(paths.problems(0, "float32", ("float32",), SDPA, kept=("plane",)))
    assert alone and {p.path for p in alone} == {paths.PLANE}
    assert paths.PLANE not in {p.path for p in paths.problems(0, "float32", ("float32",), SDPA, kept=("small",))}
    with pytest.raises(ValueError, match="paths: 'planes'"):
        paths.chosen_paths(["planes"])
