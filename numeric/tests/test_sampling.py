"""The sampling engine: reproducible from the seed alone, bounded memory, right distributions."""
import numpy as np
import pytest
from scipy import stats

from numeric import dot_product_samples, sampling
from numeric.statistics import Moments


def _moments(d_ks, n, seed, dist="normal", **kw):
    comp = sampling.Components(dist)
    return Moments.combine(sampling.dot_products(d_ks, n, seed, comp, comp, Moments.of, **kw))


def test_result_depends_on_the_seed_only_not_threads_or_memory_budget():
    # 3 chunks at d_k = 1024 (1024 rows each): thread count and budget change only what runs at once.
    ref = _moments((1, 32, 1024), 3000, 7, threads=1)
    for kw in ({"threads": 2}, {"threads": 3}, {"memory_budget": 17 * 2**20}):
        got = _moments((1, 32, 1024), 3000, 7, **kw)
        for field in ("mean", "m2", "m3", "m4"):
            np.testing.assert_array_equal(getattr(got, field), getattr(ref, field))
    assert not np.array_equal(_moments((1, 32, 1024), 3000, 8).m2, ref.m2)


def test_chunks_follow_seedsequence_spawn():
    # Chunk i is drawn from default_rng(SeedSequence(seed).spawn(n)[i]): recompute chunk 1 by hand.
    comp = sampling.Components()
    rows = sampling.chunk_rows(1024)
    chunks = sampling.dot_products((1024,), 2 * rows, 5, comp, comp, lambda s: s[0])
    rng = np.random.default_rng(np.random.SeedSequence(5).spawn(2)[1])
    q, k = comp.draw(rng, (rows, 1024)), comp.draw(rng, (rows, 1024))
    np.testing.assert_allclose(chunks[1], np.einsum("ij,ij->i", q.astype(np.float64), k.astype(np.float64)),
                               rtol=1e-12)


def test_memory_budget_is_enforced():
    comp = sampling.Components()
    with pytest.raises(ValueError, match="memory_budget"):
        sampling.dot_products((4096,), 100, 0, comp, comp, Moments.of, memory_budget=2**20)
    # However many threads are asked for, no more chunks are alive at once than the budget holds.
    import threading
    import time

    width = 1024
    chunk_bytes = sampling.chunk_rows(width) * width * sampling.BYTES_PER_ELEMENT
    alive, peak, lock = [0], [0], threading.Lock()

    def work(rng, rows):
        with lock:
            alive[0] += 1
            peak[0] = max(peak[0], alive[0])
        time.sleep(0.01)
        with lock:
            alive[0] -= 1
        return rows

    rows = sampling.map_chunks(work, 20 * sampling.chunk_rows(width), width, 0, threads=16,
                               memory_budget=3 * chunk_bytes)
    assert sum(rows) == 20 * sampling.chunk_rows(width)
    assert 1 < peak[0] <= 3


def test_nested_prefix_equals_direct_dot_product():
    comp = sampling.Components("uniform")
    rng = np.random.default_rng(0)
    s = sampling.prefix_dot_products(rng, 50, (1, 3, 8), comp, comp)
    rng = np.random.default_rng(0)
    q, k = comp.draw(rng, (50, 8)).astype(np.float64), comp.draw(rng, (50, 8)).astype(np.float64)
    for i, d in enumerate((1, 3, 8)):
        np.testing.assert_allclose(s[i], (q[:, :d] * k[:, :d]).sum(1), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("dist", ["normal", "uniform", "rademacher", "student-t"])
def test_components_have_the_requested_mean_and_variance(dist):
    comp = sampling.Components(dist, mean=1.5, variance=4.0, nu=9.0)
    x = comp.draw(np.random.default_rng(3), (400_000,)).astype(np.float64)
    m = Moments.of(x)
    from numeric.statistics import mean_test, variance_test

    assert not mean_test(m, 1.5, 0.001).rejects(0.001)
    assert not variance_test(m, 4.0, 0.001).rejects(0.001)
    assert variance_test(m, 4.0 * 1.05, 0.001).rejects(0.001)  # the check can fail


@pytest.mark.parametrize("dist, cdf", [
    ("normal", stats.norm.cdf),
    ("uniform", stats.uniform(-np.sqrt(3), 2 * np.sqrt(3)).cdf),
    ("student-t", stats.t(6.0, scale=np.sqrt(4 / 6)).cdf),
])
def test_component_shape_by_kolmogorov_smirnov(dist, cdf):
    x = sampling.standard(np.random.default_rng(11), dist, (100_000,), nu=6.0)
    assert stats.kstest(x, cdf).pvalue > 0.001
    assert stats.kstest(x * 1.03, cdf).pvalue < 0.001  # a 3% wider distribution is told apart


def test_rademacher_is_plus_minus_one_with_equal_odds():
    x = sampling.standard(np.random.default_rng(2), "rademacher", (100_001,))
    assert set(np.unique(x)) == {-1.0, 1.0}
    assert stats.binomtest(int((x > 0).sum()), x.size).pvalue > 0.001


def test_dot_product_samples_for_histograms():
    s = dot_product_samples(16, 5000, seed=1, distribution="uniform")
    assert s.shape == (5000,) and s.dtype == np.float64
    np.testing.assert_array_equal(s, dot_product_samples(16, 5000, seed=1, distribution="uniform"))


@pytest.mark.parametrize("kwargs, name", [
    ({"d_k": 0}, "d_k"), ({"d_k": 2.0}, "d_k"), ({"n_samples": 1}, "n_samples"),
    ({"distribution": "cauchy"}, "distribution"), ({"seed": -1}, "seed"),
    ({"distribution": "student-t", "nu": 4}, "nu"),
])
def test_bad_input_names_the_argument(kwargs, name):
    args = {"d_k": 4, "n_samples": 10, **kwargs}
    with pytest.raises(ValueError, match=name):
        dot_product_samples(**args)


def test_negative_variance_is_refused():
    with pytest.raises(ValueError, match="variance"):
        sampling.Components("normal", 0.0, -1.0)
