"""The training experiment's hand-derived gradients against finite differences, and its bookkeeping."""
import numpy as np
import pytest

from numeric import training

# Central differences in float64 with h = 1e-6: truncation error O(h²·f''') ≈ 1e-12 and rounding
# error ≈ ε·|f|/h ≈ 1e-10 relative to gradients of order 1e-2..1; 1e-5 leaves two orders of margin.
FD_TOLERANCE = 1e-5


def _setup(d_k, scaling, seed=0):
    task = training.Task(n_keys=8, n_values=8, pairs=4, d_model=16)
    rng = np.random.default_rng(seed)
    params = training.init_params(task, d_k, scaling, rng)
    emb = training.embeddings(task, rng)
    return params, training.batch(task, emb, 5, rng), training.scale_of(scaling, d_k)


@pytest.mark.parametrize("d_k,scaling", [(8, "sqrt"), (16, "none"), (4, "inverse"), (8, "t5")])
def test_gradients_match_finite_differences(d_k, scaling):
    params, data, scale = _setup(d_k, scaling)
    assert training.finite_difference_error(params, *data, scale) < FD_TOLERANCE


def test_a_gradient_without_d_is_refused():
    params, data, scale = _setup(8, "sqrt")
    assert training.finite_difference_error(params, *data, scale, subtract_d=False) > 1e-2


def test_step0_statistics_follow_the_scaling():
    stats = {}
    for sc in training.SCALINGS:
        params, data, scale = _setup(16, sc)
        stats[sc] = training.step0_stats(params, *data, scale)
    # Unscaled logits are √d_k = 4 times the 1/√d_k ones, at the same weights and data.
    params, data, _ = _setup(16, "sqrt")
    s_sqrt = training.step0_stats(params, *data, training.scale_of("sqrt", 16))["logit_std"]
    s_none = training.step0_stats(params, *data, training.scale_of("none", 16))["logit_std"]
    assert s_none == pytest.approx(4 * s_sqrt, rel=1e-12)
    assert stats["none"]["entropy"] < stats["sqrt"]["entropy"] < stats["inverse"]["entropy"]


def test_a_short_run_records_its_curve_and_rejects_bad_input():
    run = training.train(16, "sqrt", 0, schedule=training.Schedule(steps=20, eval_every=10, eval_size=32))
    assert [c[0] for c in run["curve"]] == [0, 10, 20]
    assert set(run["step0"]) == {"logit_std", "entropy", "max_weight", "grad_W_q", "grad_W_k"}
    with pytest.raises(ValueError, match="scaling"):
        training.scale_of("log", 16)


def test_audit_evidence_carries_the_unscaled_runs_at_the_seed_sizes():
    result = training.experiment(seeds=range(1), d_ks=(16, 64), scalings=("sqrt", "none"),
                                 schedule=training.Schedule(steps=4, eval_every=2, eval_size=16))
    ev = training.audit_evidence(result)
    assert [(r["d_k"], r["seed"]) for r in ev["runs"]] == [(64, 0)]  # d_k 16 and 1/√d_k are not the sentence's
    run = next(r for r in result["runs"] if (r["d_k"], r["scaling"]) == (64, "none"))
    assert (ev["runs"][0]["loss_start"], ev["runs"][0]["loss_next"]) == (run["curve"][0][1], run["curve"][1][1])
    assert ev["steps"] == 4 and ev["chance"] == 1 / 16
