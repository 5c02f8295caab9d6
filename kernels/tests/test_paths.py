"""The covering array over paths and features (covering.py, paths.py): every allowed pair of factor values in every
run, each row a problem of its path's sizes; a feature wrong on one path only (red team rt44h's largest family) is
rejected by the row that pairs them, and the drawn dropout problems' keep masks are judged at every lag along the keys
and the queries."""
from __future__ import annotations

import collections
import math
import random
import re

import pytest
import torch

from kernels import mutants
from kernels.harness import covering, masks, paths
from kernels.harness import generate as gen
from kernels.harness.dropout_lags import axis_periods
from kernels.harness.invariants import ATTN_MASK, BACKWARD, CAUSAL, DROPOUT, GQA
from kernels.harness.peers import sdpa_math
from kernels.harness.references import full_attention

ALL = frozenset({ATTN_MASK, BACKWARD, CAUSAL, DROPOUT, GQA})
DTYPES = ("float32", "float16", "bfloat16")


@pytest.mark.parametrize("features", [ALL, frozenset(), frozenset({CAUSAL, GQA}), frozenset({ATTN_MASK, DROPOUT})])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_array_covers_every_pair_some_allowed_row_holds(features, seed):
    rows = paths.rows(seed, features)
    factors = paths.factors(features)
    assert all(paths.allowed(r) and set(r) - set(paths.ROW_KEYS) == set(factors) for r in rows)
    assert covering.uncovered_pairs(list(rows), factors, paths.allowed) == set()
    pairwise = [r for r in rows if not r.get(paths.TRIPLE_ROW)]
    # (the plain rows and about the largest pair of factors' levels, the least any pairwise array holds: path × mask)
    levels = sorted((len(v) for v in factors.values()), reverse=True)
    assert len(pairwise) < len(paths.plain_rows(features)) + 1.5 * levels[0] * levels[1]
    # and every (path, a, b) triple of the default run's triple factors
    assert covering.not_held(rows, paths.triples(features)) == set()


def test_each_feature_level_meets_each_path_in_a_forward_row_of_plain_forms():
    """A path's own code is often taken only for the input forms it serves: each level of each structural feature
    meets each path (the small one aside) in a forward row whose forms (rank, layout, k, v's batch, finite inputs, no
    earlier call) are all plain."""
    rows = paths.rows(0, ALL)
    for path in paths.PATHS:
        if path == "small":
            continue
        for feature in paths.FEATURE_FACTORS:
            for value in paths.factors(ALL)[feature]:
                wanted = {"path": path, "relation": "forward", feature: value}
                if not paths.allowed({**wanted, **{f: paths.factors(ALL)[f][0] for f in paths.FORM_FACTORS}}):
                    continue
                assert any(all(r[f] == v for f, v in wanted.items())
                           and all(r[f] == paths.factors(ALL)[f][0] for f in paths.FORM_FACTORS) for r in rows), wanted


def test_each_path_meets_a_mask_after_a_call_on_the_buffers_then_written():
    """A path caching its conversion of the mask by pointer goes stale only with both a mask and that earlier call,
    a triple no pair holds: every path (the small one aside) meets it, in a forward row of otherwise plain forms."""
    for features in (ALL, ALL - {BACKWARD}):
        rows = paths.rows(0, features)
        plain = {f: paths.factors(features)[f][0] for f in paths.FORM_FACTORS if f != "earlier call"}
        for path in set(paths.PATHS) - {"small"}:
            assert any(r["path"] == path and r["relation"] == "forward" and r["mask"] != "none"
                       and r["earlier call"] == paths.STALE and all(r[f] == v for f, v in plain.items())
                       for r in rows), (path, features)


def test_the_plain_rows_meet_each_path_forward_in_every_dtype_and_each_other_relation():
    """Whatever relations the impl offers: with two (forward, dropout) taking turns over the dtypes, float64 met the
    decodes only with dropout, and a float64-in-float32 decode of the plain form escaped."""
    for features in (ALL, ALL - {BACKWARD}, frozenset()):
        rows = paths.plain_rows(features)
        for path in set(paths.PATHS) - {"small"}:
            relations = {r["relation"] for r in rows if r["path"] == path}
            assert relations == {r for r in paths.factors(features)["relation"]
                                 if paths.allowed({"path": path, "relation": r})}, (path, features)
            forward = {r["dtype"] for r in rows if r["path"] == path and r["relation"] == "forward"}
            assert forward == set(paths.COSTLY_PLAIN_DTYPES if path in paths.COSTLY else paths.DTYPES), path


def test_each_path_with_dropout_meets_every_band_of_p():
    """Red team rt49: a long decode's dropout uniforms of few bits drop 3.9x too often at p = 1e-3 and within 2^-8 of p
    in the middle band, where the paths' dropout rows all drew p; every path meets both bands now."""
    for thorough in (False, True):
        problems = [paths.problem(r, 0, i) for i, r in enumerate(paths.rows(0, ALL, 0, thorough))]
        for path in set(paths.factors(ALL, thorough)["path"]) - {"small"}:  # (its p: the drawn problems' DROPOUT_PS)
            ps = [p.dropout_p for p in problems if p.path == path and p.relation == gen.DROPOUT_LAW]
            if not paths.allowed({"path": path, "relation": "dropout"}):
                assert not ps, path
                continue
            small, middle = paths.P_BANDS["small"], paths.P_BANDS["middle"]
            assert any(10 ** small[0] <= p <= 10 ** small[1] for p in ps), (path, ps)
            assert any(middle[0] <= p <= middle[1] for p in ps), (path, ps)


def test_a_thorough_array_covers_every_triple_of_every_triple_factor():
    rows = paths.rows(0, ALL, 0, thorough=True)
    wanted = paths.triples(ALL, thorough=True)
    assert len(wanted) > len(paths.triples(ALL)) and covering.not_held(rows, wanted) == set()
    assert covering.not_held(rows, covering.allowed_pairs(paths.factors(ALL), paths.allowed)) == set()


def test_mixed_strength_arrays_cover_the_triples_asked_for():
    factors = {"a": (0, 1, 2), "b": (0, 1), "c": (0, 1, 2), "d": (0, 1)}
    allowed = lambda row: not (row.get("b") == 1 and row.get("d") == 1)  # noqa: E731
    wanted = covering.allowed_triples(factors, allowed, [("a", "b", "c"), ("a", "c", "d")])
    assert len(wanted) == 3 * 2 * 3 + 3 * 3 * 2
    pairwise = covering.covering_array(factors, allowed, random.Random(0))
    assert covering.not_held(pairwise, wanted)  # (pairs alone leave some: 9 rows cannot hold 18 (a, b, c) triples)
    rows = covering.covering_array(factors, allowed, random.Random(0), targets=wanted)
    assert all(allowed(r) for r in rows) and covering.not_held(rows, wanted) == set()


def test_pairs_the_constraints_exclude_are_not_asked_for():
    factors = {"a": (0, 1), "b": (0, 1), "c": (0, 1)}
    allowed = lambda row: not (row.get("a") == 1 and row.get("b") == 1)  # noqa: E731
    rows = covering.covering_array(factors, allowed, random.Random(0))
    assert all(allowed(r) for r in rows)
    assert covering.uncovered_pairs(rows, factors, allowed) == set()
    assert not any(r["a"] == 1 and r["b"] == 1 for r in rows)
    # a pair two constraints exclude together (a=1 forces c=0, b=1 forces c=1) is not required either
    both = lambda row: not (row.get("a") == 1 and row.get("c") == 1 or row.get("b") == 1 and row.get("c") == 0)  # noqa: E731
    assert ((("a", 1), ("b", 1))) not in covering.allowed_pairs(factors, both)


def test_an_empty_factor_is_refused_by_name():
    with pytest.raises(ValueError, match="factors: b has no values"):
        covering.covering_array({"a": (1,), "b": ()}, lambda r: True, random.Random(0))


def test_every_row_is_a_problem_of_its_paths_sizes():
    rows = paths.rows(0, ALL)
    problems = [paths.problem(r, 0, i) for i, r in enumerate(rows)]
    for row, p in zip(rows, problems):
        (_, _), (q_lo, q_hi), (k_lo, k_hi), d_cap = paths.PATHS[row["path"]]
        assert k_lo <= p.n_k <= k_hi, (row, p.describe())
        expected = {"wide": lambda d: paths.WIDE[0] <= d <= paths.WIDE[1], "medium": lambda d: d in paths.MEDIUM,
                    "wider": lambda d: paths.WIDER[0] <= d <= paths.WIDER[1],
                    "MLA": lambda d: d == paths.MLA[0], "narrow": lambda d: d <= d_cap,
                    "huge": lambda d: paths.HUGE[0] <= d <= paths.HUGE[1]}[row["head dim"]]
        assert expected(p.head_dim), (row, p.describe())
        if row["path"] in paths.MULTIPLE_OF:
            assert p.n_q % paths.MULTIPLE_OF[row["path"]] == 0 == p.n_k % paths.MULTIPLE_OF[row["path"]], p.describe()
        assert q_lo <= p.n_q <= q_hi and p.dtype == row["dtype"] and p.path == row["path"]
        assert (p.mask is not None) == (row["mask"] != "none") and p.causal == row["causal"]
        assert p.kv_broadcast == (row["kv batch"] == "broadcast") and p.rank in (
            *(range(5, paths.MAX_RANK + 1) if row["rank"] == 5 else (row["rank"],)), 4)
        # a mask of its own per entry meets two entries, on the paths of one entry too
        assert p.batch >= 2 or not (p.mask or "").startswith("(B,") or p.path in paths.COSTLY, p.describe()
    assert any(p.path == "prefill" and p.batch >= 2 and p.mask == "(B, 1, 1, Nk)" for p in problems)
    # rank 6, rank 5 of two batch dims with k, v broadcast along the middle one, a group of 8, heads of 257-512
    assert any(p.rank == 6 for p in problems) and any(p.head_dim > 256 and p.n_k >= 1024 for p in problems)
    assert any(p.rank >= 5 and gen._split_batch(p) and p.kv_broadcast for p in problems)
    assert any(p.q_heads // p.kv_heads == 8 and p.kv_heads == 2 for p in problems)
    # past each path's threshold: a split-K decode, a speculative one, a split-KV prefill, query chunks, batch chunks
    assert any(p.path == "decode" and p.n_q == 1 and p.n_k > 2 ** 14 and p.mask for p in problems)
    assert any(p.path == "prefill" and p.n_q >= 16 and p.n_k > 8192 and p.mask for p in problems)
    assert any(p.path == "many-batch" and p.batch > 32 and p.relation == gen.DROPOUT_LAW for p in problems)
    assert any(p.path == "longest-decode" and p.n_k > 2 ** 17 and p.dtype == "float64" for p in problems)
    # and the size classes of serving and training shapes (red team rt46h), with the head dims of real models
    assert any(p.path == "tiles" and p.n_q * p.n_k >= 2 ** 20 and p.causal for p in problems)
    assert any(p.path == "long-prefill" and min(p.n_q, p.n_k) >= 4096 and gen.sampled_rows(p) is not None
               for p in problems)
    assert any(p.path == "batched-decode" and p.batch * p.q_heads >= 32 and p.n_k >= 1024 and p.mask for p in problems)
    assert any(p.path == "batch-slices" and p.batch >= 8 and min(p.n_q, p.n_k) >= 64 for p in problems)
    assert any(p.head_dim == 576 and p.value_dim == 512 for p in problems)
    assert any(64 < p.head_dim <= 128 and p.n_k > 8192 for p in problems)
    # and each axis past a threshold (red team rt47): batch, queries (causal too), keys, heads, head dim
    assert any(p.path == "huge-batch" and p.batch > 64 and p.kv_broadcast for p in problems)
    assert any(p.path == "huge-queries" and p.n_q > 32768 and p.causal for p in problems)
    assert any(p.path == "million-keys" and p.n_k > 2 ** 19 and p.mask for p in problems)
    assert any(p.q_heads > 512 for p in problems) and any(p.head_dim > 640 for p in problems)
    assert {p.mask_near for p in problems} >= set(masks.NEAR_STRUCTURES)
    # each dtype's pass takes its rows, and float64's in turn (no two passes' counts of them more than one apart)
    passes = {d: list(paths.problems(0, d, DTYPES, ALL)) for d in DTYPES}
    plane = {d: [p for p in ps if p.path in (paths.PLANE, paths.TRAINING)] for d, ps in passes.items()}  # (not rows)
    assert sum(map(len, passes.values())) - sum(map(len, plane.values())) == len(rows)
    assert all({p.dtype for p in passes[d]} == {d, "float64"} for d in DTYPES)
    wide = [sum(p.dtype == "float64" for p in passes[d]) for d in DTYPES]
    assert max(wide) - min(wide) <= 1 and sum(wide) == sum(r["dtype"] == "float64" for r in rows)
    # a run of one dtype judges the same rows, those of the other dtypes in its own, and every cell of the plane
    alone = list(paths.problems(0, "float16", ("float16",), ALL))
    assert len(alone) == len(rows) + sum(map(len, plane.values())) and {p.dtype for p in alone} == {"float16", "float64"}


@pytest.mark.parametrize("name", ["prefill_splits_read_mask_from_column_zero", "decode_float64_in_float32",
                                  "broadcast_kv_folds_batch_into_queries"])
def test_a_feature_wrong_on_one_path_is_rejected_by_a_covering_row_and_no_regime(name):
    """The regimes' first draws pass it (they pin the other features); the covering rows of the same run do not."""
    impl = getattr(mutants, name)
    mutant = next(m for m in mutants.MUTANTS if m.name == name)
    features = frozenset(ALL if mutant.backward else ALL - {BACKWARD})
    judged = list(gen.generated_checks(impl, [torch.float32], "cpu", 0, 0, features, only={mutant.caught_by},
                                       covering=paths.after_regimes(0, [torch.float32], features),
                                       problems=len(gen.REGIMES), shrink_seconds=0))
    failing = [p for p, o, refused, _ in judged if refused is None and gen.failed(o)]
    assert failing and all(p.path for p in failing), [p.describe() for p in failing]


@pytest.mark.parametrize("name", ["plain_decode_float64_in_float32", "plain_decode_dropout_shared_over_batch"])
def test_a_path_taken_only_in_the_plain_form_is_rejected_by_a_plain_row_and_no_pairwise_one(name):
    """Its path is guarded by every other feature being plain: the plain rows (each path forward in each dtype) reject it;
    of the pairwise rows of the same seed (their spare factors drawn to cover pairs) only one of plain forms could."""
    impl = getattr(mutants, name)
    relation = next(m for m in mutants.MUTANTS if m.name == name).caught_by
    judged = list(gen.generated_checks(impl, [torch.float32], "cpu", 0, 0, ALL, only={relation},
                                       covering=paths.after_regimes(0, [torch.float32], ALL),
                                       problems=len(gen.REGIMES), shrink_seconds=0))
    failing = [p for p, o, refused, _ in judged if refused is None and gen.failed(o)]
    assert failing, name
    assert all(p.path and p.rank == 4 and p.mask is None and not p.causal and p.layout == "contiguous"
               and not p.kv_broadcast and p.scale is None for p in failing), [p.describe() for p in failing]
    if relation == gen.DROPOUT_LAW:
        return  # (a decode's dropout rows are judged with no mask and no causal, path_key_lags: pairwise ones meet it too)
    pairwise = covering.covering_array(paths.factors(ALL), paths.allowed, gen._rng(0, "covering", sorted(ALL), 0))
    plain = {"mask": "none", "causal": False, "rank": 4, "layout": "contiguous", "kv batch": "own", "scale": "default"}
    for index, row in enumerate(pairwise):
        o, refused = gen.check_problem(impl, paths.problem(row, 0, index))
        assert refused is None and (not gen.failed(o) or row.items() >= plain.items()), (row, o)


def test_a_keep_mask_repeating_along_the_keys_on_one_path_is_rejected_by_its_lags():
    """A speculative decode (2-8 queries) restarting its dropout offset every 1024 keys: the slice-pair and kept-fraction
    tests pass it in p's middle band, the lag test along the keys of the drawn dropout problems does not."""
    judged = gen.generated_checks(mutants.speculative_decode_dropout_restarts_per_split, [torch.float32], "cpu", 0, 0,
                                  ALL, only={gen.DROPOUT_LAW}, problems=len(gen.REGIMES), shrink_seconds=0,
                                  covering=paths.after_regimes(0, [torch.float32], ALL))
    failing = [o for p, o, refused, _ in judged if refused is None and gen.failed(o)]
    # (and at small p, where lags are not judged, the kept count: a mask repeated 1024 keys on multiplies its variance)
    assert any("worst lag 1024" in o.detail for o in failing) and all(
        "worst lag 1024" in o.detail or "key lags not judged" in o.detail for o in failing), [o.detail for o in failing]


def test_the_covering_rows_pass_the_correct_designs():
    for impl in (sdpa_math, full_attention):
        for dtype in DTYPES:
            for p in paths.problems(1, dtype, DTYPES, ALL):
                o, refused = gen.check_problem(impl, p)
                assert refused is None and not gen.failed(o), (impl.__name__, p.describe(), o)


def test_axis_periods_rejects_a_mask_repeating_along_the_keys_and_passes_independent_ones():
    g = torch.Generator().manual_seed(0)
    p, shape = 0.3, (2, 2, 3, 3000)
    counted = torch.ones(shape, dtype=torch.bool)
    fresh = (torch.rand(shape, generator=g, dtype=torch.float64) >= p).double()  # (B, H, Nq, Nk)
    assert not gen.failed(axis_periods(fresh, counted, p))
    repeating = fresh[..., torch.arange(shape[-1]) % 1024]  # a split of 1024 keys restarting the offset
    o = axis_periods(repeating, counted, p)
    assert gen.failed(o) and "worst lag 1024" in o.detail
    rows = fresh[:, :, torch.arange(3) % 1]  # every query the same mask
    assert gen.failed(axis_periods(rows.expand(2, 2, 3, 3000).contiguous(), counted, p))
    # entries the law does not count (P underflowed, masked) are left out, not read as dropped
    hidden = counted.clone()
    hidden[..., ::7] = False
    assert not gen.failed(axis_periods(fresh * hidden, hidden, p))


def test_axis_periods_rejects_masks_repeating_along_a_diagonal_of_slices_queries_and_keys():
    """Red team rt45h: a counter of i + j (the row stride forgotten) and a slice offset of s·Nk (slice s's row i is
    slice s - 1's row i + 1): no axis alone and no slice pair at equal positions repeats."""
    g = torch.Generator().manual_seed(1)
    p, (s, n_q, n_k) = 0.4, (4, 16, 64)
    counted = torch.ones(1, s, n_q, n_k, dtype=torch.bool)
    u = torch.rand(1, s, n_q + n_k, generator=g, dtype=torch.float64)
    antidiagonal = (u[..., torch.arange(n_q)[:, None] + torch.arange(n_k)] >= p).double()  # (1, S, Nq, Nk)
    o = axis_periods(antidiagonal, counted, p)
    assert gen.failed(o) and "(Δslice +0, Δquery +1, Δkey -1)" in o.detail, o.detail
    stream = torch.rand((s + n_q) * n_k, generator=g, dtype=torch.float64)
    shifted = torch.stack([stream[i * n_k:(i + n_q) * n_k] for i in range(s)]).reshape(1, s, n_q, n_k)
    o = axis_periods((shifted >= p).double(), counted, p)
    assert gen.failed(o) and "(Δslice +1, Δquery -1, Δkey +0)" in o.detail, o.detail
    assert not gen.failed(axis_periods((torch.rand(counted.shape, generator=g, dtype=torch.float64) >= p).double(),
                                       counted, p))


def test_a_row_of_minus_inf_scores_from_an_infinite_input_under_causal_may_be_nan_or_zero():
    """-inf in q with a negative scale over the one key causal leaves row 0: SDPA math gives NaN, a safe softmax 0;
    both pass, an output hiding the NaN in the other rows does not."""
    p = gen.Problem(batch=2, q_heads=1, kv_heads=1, n_q=4, n_k=48, head_dim=16, value_dim=16, causal=True,
                    dtype="float64", scale=-0.5, seed=1946363592, input_nan="q", input_value="-inf")
    for impl in (sdpa_math, full_attention):
        o, refused = gen.check_problem(impl, p)
        assert refused is None and not gen.failed(o), (impl.__name__, o)

    def hiding(q, k, v, **kwargs):
        return torch.nan_to_num(sdpa_math(q, k, v, **kwargs), nan=0.0)

    o, _ = gen.check_problem(hiding, gen.Problem(**{**p.__dict__, "causal": False}))
    assert gen.failed(o)


def test_a_non_finite_query_in_a_row_of_no_visible_key_may_give_nan_or_the_rows_answer():
    """NaN in q in a row causal-like masking leaves without keys (CI of 9c2906d: the Triton kernel gave 0, SDPA math
    NaN): both pass; a row of any other value, or the NaN hidden where the row sees keys, does not."""
    p = gen.Problem(batch=1, q_heads=1, kv_heads=1, n_q=3, n_k=2, head_dim=4, value_dim=4, causal=False,
                    dtype="float64", mask="(Nq, Nk)", mask_kind="bool", mask_near="bottom-right causal, exact",
                    seed=4157428696, input_nan="q", input_value="NaN")

    def selecting(q, k, v, attn_mask=None, **kwargs):  # scores selected by the mask: the NaN row masked out
        s = torch.where(attn_mask, q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5, -math.inf)  # (B, H, Nq, Nk)
        w = torch.softmax(s, -1).nan_to_num(0.0) * attn_mask.any(-1, keepdim=True)
        return w @ v

    def empty_row_set_to(value):
        def impl(q, k, v, attn_mask=None, **kwargs):
            return torch.where(attn_mask.any(-1, keepdim=True), selecting(q, k, v, attn_mask), value)
        return impl

    for impl in (sdpa_math, selecting):
        o, refused = gen.check_problem(impl, p)
        assert refused is None and not gen.failed(o), (getattr(impl, "__name__", impl), o)
    assert gen.failed(gen.check_problem(empty_row_set_to(1.0), p)[0])
    unmasked = gen.Problem(**{**p.__dict__, "mask": None, "mask_near": None})
    assert gen.failed(gen.check_problem(lambda q, k, v, **kw: sdpa_math(q, k, v, **kw).nan_to_num(0.0), unmasked)[0])


def test_the_root_causes_name_a_drawn_problems_mask_form_path_and_layout():
    """Red team rt44h: six failures of one (Nk,) mask form were blamed on "D > 128" and a partial key block."""
    from kernels.harness.report import Check, conditions

    def check(p, passed):
        return Check(invariant=gen.AGREEMENT, claim_id=None, case=p.describe(), case_name=f"generated-{p.seed}",
                     dtype=p.dtype, device="cpu", discrepancy=0.0 if passed else 1.0, bound=0.5, passed=passed)

    drawn = [gen.draw(0, i, "float32", ALL) for i in range(len(gen.REGIMES), len(gen.REGIMES) + 200)]
    drawn = [p for p in drawn if p.relation == gen.AGREEMENT]
    form = collections.Counter(p.mask for p in drawn if p.mask and p.mask_kind == "additive").most_common(1)[0][0]
    for wrong, expected in ((lambda p: p.mask == form, f"with a {form} mask"),
                            (lambda p: p.mask == form and p.mask_kind == "additive", f"with an additive mask {form}"),
                            (lambda p: p.layout == "slice", "only with slice inputs"),
                            (lambda p: p.rank == 5, "only with rank-5 inputs"),
                            # (rt45h: impls built on torch's CPU flash SDPA, NaN under is_causal at scale ≤ 0, were
                            # blamed on "is_causal" and "a partial last key block")
                            (lambda p: p.scale is not None and p.scale <= 0, "only with a scale ≤ 0")):
        checks = [check(p, not wrong(p)) for p in drawn]
        assert any(not c.passed for c in checks)
        found = conditions([c for c in checks if not c.passed], [c for c in checks if c.passed])
        assert any(expected in f for f in found), (expected, found)
    rows = [paths.problem(r, 0, i) for i, r in enumerate(paths.rows(0, ALL))]
    checks = [check(p, p.path != "prefill") for p in rows]
    assert "only with the prefill path" in conditions([c for c in checks if not c.passed],
                                                      [c for c in checks if c.passed])


def test_the_kept_fraction_is_judged_by_the_exact_binomial_tail():
    """One drop among 192 weights at p = 1.92e-4 (probability 3.6%) passes; the normal approximation read it as
    z = -5.0. A kept fraction 5 points low over 10 000 weights still fails, as under the normal approximation."""
    from kernels.harness.dropout import _z, binomial_z

    assert abs(binomial_z(191, 192, 1 - 1.92e-4)) < 2.0
    assert abs(binomial_z(7000, 10000, 0.75)) > _z() and abs(binomial_z(8000, 10000, 0.75)) > _z()
    assert binomial_z(10000, 10000, 1.0) == 0.0 and binomial_z(9999, 10000, 1.0) == float("inf")


def test_degenerate_dropout_problems_are_judged_not_refused():
    """D = 0 (every score an empty sum: SDPA's mean of v) and B = 0 went through the harness's own division by zero
    and an FFT of length 0, each reported as the impl's refusal."""
    base = dict(q_heads=4, kv_heads=1, n_q=8, n_k=100, value_dim=100, causal=False, dtype="float32", dropout_p=0.1,
                grads="", relation=gen.DROPOUT_LAW, seed=1125024622)
    for p in (gen.Problem(batch=3, head_dim=0, **base), gen.Problem(batch=0, head_dim=8, **base)):
        for impl in (sdpa_math, full_attention):
            o, refused = gen.check_problem(impl, p)
            assert refused is None and not gen.failed(o), (impl.__name__, p.describe(), o, refused)
    assert axis_periods(torch.zeros(0, 1, 8, 100), torch.zeros(0, 1, 8, 100, dtype=torch.bool), 0.1) is None


def _first_failure(impl, relation: str, dtype=torch.float32, features=ALL):
    """The first of a run's problems (regimes, then covering rows) failing ``impl``, or None."""
    judged = gen.generated_checks(impl, [dtype], "cpu", 0, 0, features, only={relation}, problems=len(gen.REGIMES),
                                  covering=paths.after_regimes(0, [dtype], features), shrink_seconds=0)
    return next((p for p, o, refused, _ in judged if refused is None and gen.failed(o)), None)


@pytest.mark.parametrize("name, path", [
    ("tiles_causal_diagonal_whole", ("tiles", "long-prefill")), ("long_prefill_causal_from_each_split", "long-prefill"),
    # (a serving batch's sizes, B·Hq ≥ 32 over 1024+ keys: a mid-length decode of 16 query heads too)
    ("batched_decode_mask_of_entry_zero", ("batched-decode", "mid-decode")), ("batch_slices_floor", "batch-slices"),
    ("mla_scale_from_value_dim", None), ("medium_head_partials_in_half", None),
    ("q_stride_zero_one_row", None), ("kv_stride_zero_returns_v", None),
    ("decode_gqa_head_mask_transposed", ("decode", "longest-decode")),
    ("tiles_mask_cached_by_pointer", ("tiles", "long-prefill")),  # (4096 and more: whole tiles too)
])
def test_a_size_class_a_stride_zero_path_or_a_path_with_two_features_is_rejected_by_a_covering_row(name, path):
    """Red team rt46h's family (a path at sizes no draw reached: whole tiles past 2²⁰ scores, a long prefill, a
    serving batch, batch slices, MLA's head dims, a 128-channel template over many keys), rt45h's stride-0 fast paths
    and a decode's per-head mask under GQA (a path with two features): no regime reaches them, a covering row does."""
    failing = _first_failure(getattr(mutants, name), gen.AGREEMENT)
    assert failing is not None and failing.path, name
    assert path is None or failing.path in ((path,) if isinstance(path, str) else path), failing.describe()


def test_the_long_prefill_is_judged_on_sampled_rows_of_its_own_query_order():
    p = gen.Problem(1, 1, 1, 4096, 4100, 8, 8, True, "float32", path="long-prefill", seed=5)
    rows = gen.sampled_rows(p)
    assert rows is not None and len(rows) == gen.SAMPLED_ROWS and rows[0] == 0 and rows[-1] == p.n_q - 1
    assert bool((rows[1:] > rows[:-1]).all())
    assert gen.sampled_rows(gen.Problem(1, 1, 1, 256, 256, 8, 8, True, "float32")) is None
    o, refused = gen.check_problem(sdpa_math, p)
    assert refused is None and not gen.failed(o) and "sampled query rows" in o.detail
    o, _ = gen.check_problem(mutants.long_prefill_causal_from_each_split, p)
    assert gen.failed(o)


def test_a_copy_of_an_expanded_view_keeps_stride_zero():
    from kernels.harness import reference as ref

    x = torch.randn(2, 3, 1, 4).expand(2, 3, 5, 4)
    c = ref.copy(x)
    assert c.stride() == x.stride() and torch.equal(c, x) and c.untyped_storage().data_ptr() != x.data_ptr()


def test_an_unknown_path_is_refused_by_name():
    with pytest.raises(ValueError, match="paths: 'nope'"):
        paths.chosen_paths(["nope"])
    assert paths.chosen_paths(["small", "tiles"]) == ("small", "tiles") and paths.chosen_paths(None) is None


# A thorough run's ladder paths, one step past the default paths' largest axis each, against red team rt48's bugs at
# those sizes (the batch chunks' at rank 4, where the mask's entries are dim 0; the others at any rank).
def _at_rank_4(bug):
    """bug on q, k, v of rank 3-5 seen as (B, H, N, D), leading dims flattened (none of these bugs takes a mask)."""
    def called(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        if attn_mask is not None or q.dim() == 4:
            return bug(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
        flat = [x.reshape(-1, *x.shape[-3:]) for x in (q, k, v)]  # (B, H, N, D)
        out = bug(*flat, None, dropout_p, is_causal, scale, enable_gqa)
        return out.reshape(*q.shape[:-1], v.shape[-1])
    return called


def _gqa(q, k):
    return k.repeat_interleave(q.shape[-3] // k.shape[-3], -3)  # (B, Hq, Nk, D)


def _second_merge_level_unscaled(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """A split-K decode past 2²¹ keys merging groups of 2²¹ keys by their sums, each in its own max."""
    if q.dim() != 4 or k.shape[-2] <= 2 ** 21 or attn_mask is not None or is_causal or dropout_p:
        return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    k, v = _gqa(q, k), _gqa(q, v)
    s = (q.double() @ k.double().transpose(-2, -1)) * (scale if scale is not None else q.shape[-1] ** -0.5)  # (B, H, 1, Nk)
    num = den = 0
    for j in range(0, k.shape[-2], 2 ** 21):
        e = torch.exp(s[..., j:j + 2 ** 21] - s[..., j:j + 2 ** 21].amax(-1, keepdim=True))
        num, den = num + e @ v[..., j:j + 2 ** 21, :].double(), den + e.sum(-1, keepdim=True)  # the bug: no exp(m_g - M)
    return (num / den).to(q.dtype)


def _batch_chunks_read_the_first_masks(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                       enable_gqa=False):
    """Batch chunks of 256 entries, each reading a per-entry mask from the chunk's own first entries."""
    b = q.shape[0]
    if q.dim() != 4 or b <= 256 or attn_mask is None or attn_mask.dim() != 4 or attn_mask.shape[0] != b:
        return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    kv = (lambda x, c: x[c] if x.shape[0] == b else x)  # noqa: E731
    return torch.cat([full_attention(q[c], kv(k, c), kv(v, c), attn_mask[:len(range(b)[c])], dropout_p, is_causal,
                                     scale, enable_gqa) for c in (slice(j, j + 256) for j in range(0, b, 256))])


def _packed_rows_chunked_causal(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                enable_gqa=False):
    """GQA's query rows packed query-major (i·g + h), launched in chunks of 65 536, causal positions chunk-local."""
    n_q, g = q.shape[-2], q.shape[-3] // k.shape[-3]
    if q.dim() != 4 or not is_causal or g < 4 or n_q * g <= 65536 or dropout_p:
        return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    packed = torch.arange(n_q)[None, :] * g + torch.arange(q.shape[-3])[:, None] % g  # (Hq, Nq)
    position = (packed % 65536) // g
    visible = torch.arange(k.shape[-2]) <= position[..., None]  # (Hq, Nq, Nk)
    return full_attention(q, k, v, visible[None], 0.0, False, scale, True)


def _query_chunks_causal_from_zero(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                   enable_gqa=False):
    """Past 2²⁶ scores a slice, chunks of 4096 queries, causal positions from 0 in each."""
    if q.dim() != 4 or not is_causal or q.shape[-2] * k.shape[-2] <= 2 ** 26 or dropout_p:
        return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    return torch.cat([full_attention(q[..., j:j + 4096, :], k, v, None, 0.0, True, scale, enable_gqa)
                      for j in range(0, q.shape[-2], 4096)], dim=-2)


class _RecomputeBackwardDkUnscaled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, scale, enable_gqa):
        ctx.save_for_backward(q, k, v)
        ctx.scale, ctx.enable_gqa = scale, enable_gqa
        return full_attention(q, k, v, scale=scale, enable_gqa=enable_gqa)

    @staticmethod
    def backward(ctx, d_o):
        leaves = [x.detach().requires_grad_() for x in ctx.saved_tensors]
        with torch.enable_grad():
            dq, dk, dv = torch.autograd.grad(full_attention(*leaves, scale=ctx.scale, enable_gqa=ctx.enable_gqa),
                                             leaves, d_o)
        scale = ctx.scale if ctx.scale is not None else leaves[0].shape[-1] ** -0.5
        return dq, dk / scale, dv, None, None  # the bug: dk without the softmax scale


def _long_backward_dk_unscaled(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                               enable_gqa=False):
    """A recompute backward taken past 4096 queries and keys, its dk missing the softmax scale."""
    if q.dim() != 4 or min(q.shape[-2], k.shape[-2]) < 4096 or attn_mask is not None or is_causal or dropout_p:
        return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    return _RecomputeBackwardDkUnscaled.apply(q, k, v, scale, enable_gqa)


class _RecomputeBackwardDOfTheOutput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, scale):
        ctx.scale = scale if scale is not None else q.shape[-1] ** -0.5
        p = torch.softmax((q @ k.transpose(-2, -1)) * ctx.scale, -1)  # (B, H, Nq, Nk)
        out = p @ v
        ctx.save_for_backward(q, k, v, p, out)
        return out

    @staticmethod
    def backward(ctx, d_o):
        q, k, v, p, out = ctx.saved_tensors
        d = (out * out).sum(-1, keepdim=True)  # the bug: rowsum(O∘O) for D = rowsum(dO∘O)
        ds = p * (d_o @ v.transpose(-2, -1) - d)  # (B, H, Nq, Nk)
        return ds @ k * ctx.scale, ds.transpose(-2, -1) @ q * ctx.scale, p.transpose(-2, -1) @ d_o, None


def _long_backward_d_of_the_output(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                   enable_gqa=False):
    """A recompute backward past 4096 queries and keys (MHA, no mask) whose D is rowsum(O∘O), not rowsum(dO∘O): dS,
    and so dq, is non-zero on the rows where dO is zero."""
    if (q.dim() != 4 or min(q.shape[-2], k.shape[-2]) < 4096 or attn_mask is not None or is_causal or dropout_p
            or q.shape[-3] != k.shape[-3]):
        return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    return _RecomputeBackwardDOfTheOutput.apply(q, k, v, scale)


def test_the_thorough_sampled_backward_judges_dq_on_the_rows_where_do_is_zero():
    """dO is zero but on the sampled rows, so dq must be 0 exactly on the others: a backward whose D does not vanish
    there (rowsum(O∘O) for rowsum(dO∘O)) fails that part of the verdict, and the correct design does not."""
    rows = paths.rows(0, ALL, 0, thorough=True)
    long = [paths.problem(r, 0, i) for i, r in enumerate(rows) if r["path"] == "long-backward"]
    judged = [(p, gen.check_problem(_long_backward_d_of_the_output, p)[0]) for p in long
              if p.mask is None and not p.causal and p.q_heads == p.kv_heads and p.rank == 4]
    assert judged, [p.describe() for p in long]
    for p, o in judged:
        stray, bound = map(float, re.search(r"dq off those rows \(0 exactly\) ([^/]+)/(\S+)", o.detail).groups())
        assert gen.failed(o) and stray > bound, o
        right, _ = gen.check_problem(full_attention, p)
        assert not gen.failed(right) and "dq off those rows (0 exactly) 0/" in right.detail, right


LADDER_BUGS = {"two-million-keys": _at_rank_4(_second_merge_level_unscaled),
               "batch-257": _batch_chunks_read_the_first_masks,
               "packed-queries": _at_rank_4(_packed_rows_chunked_causal),
               "big-slice": _at_rank_4(_query_chunks_causal_from_zero),
               "long-backward": _at_rank_4(_long_backward_dk_unscaled)}


@pytest.mark.parametrize("path", LADDER_BUGS)
def test_a_thorough_ladder_path_rejects_a_bug_past_every_default_size_and_passes_the_correct_design(path):
    rows = paths.rows(0, ALL, 0, thorough=True)
    problems = [paths.problem(r, 0, i) for i, r in enumerate(rows) if r["path"] == path]
    failing = None
    for p in problems:
        o, refused = gen.check_problem(LADDER_BUGS[path], p)
        if refused is None and gen.failed(o):
            failing = p
            break
    assert failing is not None, [p.describe() for p in problems]
    o, refused = gen.check_problem(full_attention, failing)
    assert refused is None and not gen.failed(o), (failing.describe(), o)
