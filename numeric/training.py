"""Does unscaled attention fail to train? A one-layer attention model on associative recall.

The seed (002) says that without 1/√d_k, models with d_k = 64 to 128 "fail to train entirely; the
loss gets trapped in flat plateaus on the very first optimization step". This trains the smallest
model in which attention must do the work, for d_k ∈ {16, 64, 128} and four ways of scaling the
scores, over several seeds, and records what the claim is about: the state at step 0 (logit
spread, softmax entropy and max weight, gradient norms of W_q and W_k) and whether and when the
task is solved.

Task: associative recall. A sequence holds L (key, value) pairs with distinct keys, then a query
key; the target is the value paired with it. Chosen over copying because the answer depends only
on matching the query's content against the keys' content, which is exactly what q·k scores:
no positional shortcut exists, one attention layer can solve it, and a model whose attention does
not learn stays at chance (1/n_values). Each context token carries its pair, x_j = E_k[key_j] +
E_v[value_j]; the query token is E_k[query]. The embeddings are fixed Gaussian with unit-variance
components (what LayerNorm hands attention); W_q, W_k (d_model × d_k), W_v (d_model × d_k) and the
readout W_o (d_k × n_values) are trained with Adam on cross-entropy.

Scalings: "sqrt" (scores · 1/√d_k), "none", "inverse" (1/d_k, μP), "t5" (no scale; W_q initialised
with std (d_model·d_k)^(-1/2) instead of d_model^(-1/2), as T5 does, so that q·k has unit variance
at step 0).

Gradients are derived by hand, the attention part by the backward identity of claim
``attention-backward``: dS = P ∘ (dP − D), D = rowsum(P ∘ dP); ``check_gradients`` compares them
with central finite differences.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

SCALINGS = ("sqrt", "none", "inverse", "t5")
D_KS = (16, 64, 128)


@dataclass(frozen=True)
class Task:
    n_keys: int = 16
    n_values: int = 16
    pairs: int = 8  # L context tokens
    d_model: int = 128


@dataclass(frozen=True)
class Schedule:
    steps: int = 300
    batch: int = 32
    lr: float = 3e-3
    eval_every: int = 20
    eval_size: int = 128
    solved_accuracy: float = 0.9  # chance is 1/n_values


FULL = Schedule()
QUICK = Schedule(steps=10, eval_every=5, eval_size=64)  # the step-0 table and the first 10 steps, one seed
QUICK_SEEDS, FULL_SEEDS = range(1), range(5)


def scale_of(scaling: str, d_k: int) -> float:
    if scaling not in SCALINGS:
        raise ValueError(f"scaling must be one of {SCALINGS}, got {scaling!r}")
    return {"sqrt": d_k ** -0.5, "inverse": 1.0 / d_k}.get(scaling, 1.0)


def init_params(task: Task, d_k: int, scaling: str, rng: np.random.Generator) -> dict:
    """Gaussian weights, std d_model^(-1/2) (unit-variance q, k, v components), T5's W_q std (d_model·d_k)^(-1/2)."""
    dm = task.d_model
    q_std = (dm * d_k) ** -0.5 if scaling == "t5" else dm ** -0.5
    return {"W_q": rng.normal(0, q_std, (dm, d_k)), "W_k": rng.normal(0, dm ** -0.5, (dm, d_k)),
            "W_v": rng.normal(0, dm ** -0.5, (dm, d_k)), "W_o": rng.normal(0, d_k ** -0.5, (d_k, task.n_values))}


def embeddings(task: Task, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    return rng.normal(0, 1, (task.n_keys, task.d_model)), rng.normal(0, 1, (task.n_values, task.d_model))


def batch(task: Task, emb, size: int, rng: np.random.Generator):
    """(context x (B, L, d_model), query x (B, d_model), target value (B,))."""
    e_k, e_v = emb
    keys = np.argsort(rng.random((size, task.n_keys)), axis=1)[:, :task.pairs]  # (B, L) distinct keys
    values = rng.integers(0, task.n_values, (size, task.pairs))  # (B, L)
    which = rng.integers(0, task.pairs, size)  # (B,)
    ctx = e_k[keys] + e_v[values]  # (B, L, d_model)
    query = e_k[keys[np.arange(size), which]]  # (B, d_model)
    return ctx, query, values[np.arange(size), which]


def forward(params: dict, ctx, query, target, scale: float):
    """Loss, accuracy and the cache the backward needs."""
    b, n_ctx, dm = ctx.shape
    flat = ctx.reshape(b * n_ctx, dm)  # (B·L, d_model): one GEMM for all context tokens
    q = query @ params["W_q"]  # (B, d_k)
    k = (flat @ params["W_k"]).reshape(b, n_ctx, -1)  # (B, L, d_k)
    v = (flat @ params["W_v"]).reshape(b, n_ctx, -1)  # (B, L, d_k)
    s = scale * (k @ q[:, :, None])[:, :, 0]  # (B, L) scores of the one query row
    p = np.exp(s - s.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)  # (B, L)
    o = (p[:, None, :] @ v)[:, 0]  # (B, d_k)
    logits = o @ params["W_o"]  # (B, n_values)
    z = logits - logits.max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    n = len(target)
    loss = -logp[np.arange(n), target].mean()
    acc = float((logits.argmax(1) == target).mean())
    return loss, acc, dict(q=q, k=k, v=v, s=s, p=p, o=o, logp=logp)


def backward(params: dict, ctx, query, target, scale: float, cache: dict, *, subtract_d: bool = True) -> dict:
    """Gradients of the mean loss. ``subtract_d=False`` drops D from dS (a wrong gradient, for tests)."""
    n = len(target)
    dlogits = np.exp(cache["logp"])
    dlogits[np.arange(n), target] -= 1
    dlogits /= n  # (B, n_values)
    g = {"W_o": cache["o"].T @ dlogits}
    do = dlogits @ params["W_o"].T  # (B, d_k)
    p = cache["p"]
    dv = p[:, :, None] * do[:, None, :]  # (B, L, d_k)
    dp = (cache["v"] @ do[:, :, None])[:, :, 0]  # (B, L)
    big_d = (p * dp).sum(1, keepdims=True) if subtract_d else 0.0  # D = rowsum(P ∘ dP)
    ds = p * (dp - big_d)  # (B, L): dS = P ∘ (dP − D)
    dq = scale * (ds[:, None, :] @ cache["k"])[:, 0]  # (B, d_k)
    dk = scale * ds[:, :, None] * cache["q"][:, None, :]  # (B, L, d_k)
    flat = ctx.reshape(-1, ctx.shape[2])  # (B·L, d_model)
    g["W_q"] = query.T @ dq
    g["W_k"] = flat.T @ dk.reshape(flat.shape[0], -1)
    g["W_v"] = flat.T @ dv.reshape(flat.shape[0], -1)
    return g


def step0_stats(params, ctx, query, target, scale) -> dict:
    """What the seed's claim is about, at initialisation: the scaled logits' std, the softmax's
    mean entropy (nats; uniform over L is ln L) and mean max weight, and ‖∇W_q‖, ‖∇W_k‖."""
    _, _, cache = forward(params, ctx, query, target, scale)
    g = backward(params, ctx, query, target, scale, cache)
    p = cache["p"]
    entropy = -(p * np.log(np.where(p > 0, p, 1.0))).sum(1)
    return {"logit_std": float(cache["s"].std()), "entropy": float(entropy.mean()),
            "max_weight": float(p.max(1).mean()), "grad_W_q": float(np.linalg.norm(g["W_q"])),
            "grad_W_k": float(np.linalg.norm(g["W_k"]))}


def train(d_k: int, scaling: str, seed: int, task: Task = Task(), schedule: Schedule = FULL) -> dict:
    """One run: step-0 statistics, the eval loss/accuracy curve, the first eval step with accuracy
    >= schedule.solved_accuracy (None if never)."""
    if d_k not in D_KS and (not isinstance(d_k, int) or d_k < 1):
        raise ValueError(f"d_k must be a positive int, got {d_k!r}")
    scale = scale_of(scaling, d_k)
    rng = np.random.default_rng([seed, d_k, SCALINGS.index(scaling)])
    emb = embeddings(task, np.random.default_rng([seed, 0]))  # one task per seed, shared by every setting
    params = init_params(task, d_k, scaling, rng)
    eval_set = batch(task, emb, schedule.eval_size, np.random.default_rng([seed, 1]))
    stats = step0_stats(params, *eval_set, scale)
    m = {k: np.zeros_like(v) for k, v in params.items()}
    v2 = {k: np.zeros_like(v) for k, v in params.items()}
    b1, b2, eps = 0.9, 0.999, 1e-8
    curve, solved = [], None
    for step in range(schedule.steps + 1):
        if step % schedule.eval_every == 0:
            loss, acc, _ = forward(params, *eval_set, scale)
            curve.append((step, float(loss), acc))
            if solved is None and acc >= schedule.solved_accuracy:
                solved = step
        if step == schedule.steps:
            break
        ctx, query, target = batch(task, emb, schedule.batch, rng)
        _, _, cache = forward(params, ctx, query, target, scale)
        grads = backward(params, ctx, query, target, scale, cache)
        for name, gr in grads.items():  # Adam
            m[name] = b1 * m[name] + (1 - b1) * gr
            v2[name] = b2 * v2[name] + (1 - b2) * gr * gr
            m_hat, v_hat = m[name] / (1 - b1 ** (step + 1)), v2[name] / (1 - b2 ** (step + 1))
            params[name] -= schedule.lr * m_hat / (np.sqrt(v_hat) + eps)
    return {"d_k": d_k, "scaling": scaling, "seed": seed, "step0": stats, "curve": curve, "solved_step": solved}


def _one_blas_thread():
    """BLAS threads on these small products only contend: a run took 105 s with OpenBLAS's
    threads and 10 s with one on the shared 2-core machine. threadpoolctl is optional (cpu extra)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        import contextlib

        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def experiment(seeds=FULL_SEEDS, d_ks=D_KS, scalings=SCALINGS, schedule: Schedule = FULL,
               task: Task = Task()) -> dict:
    """Every run, and the wall time it took."""
    t = time.perf_counter()
    with _one_blas_thread():
        runs = [train(dk, sc, s, task, schedule) for dk in d_ks for sc in scalings for s in seeds]
    return {"runs": runs, "seconds": time.perf_counter() - t, "schedule": schedule, "task": task}


def quick_experiment() -> dict:
    return experiment(seeds=QUICK_SEEDS, schedule=QUICK)


def summary(result: dict) -> list[dict]:
    """Per (d_k, scaling): step-0 means over seeds (with the seeds' std of the logit std), how many
    seeds solved the task and the median solving step of those that did."""
    rows = []
    keys = sorted({(r["d_k"], r["scaling"]) for r in result["runs"]}, key=lambda k: (k[0], SCALINGS.index(k[1])))
    for dk, sc in keys:
        runs = [r for r in result["runs"] if (r["d_k"], r["scaling"]) == (dk, sc)]
        s0 = {k: float(np.mean([r["step0"][k] for r in runs])) for k in runs[0]["step0"]}
        solved = [r["solved_step"] for r in runs if r["solved_step"] is not None]
        rows.append({"d_k": dk, "scaling": sc, "seeds": len(runs), **s0,
                     "logit_std_sd": float(np.std([r["step0"]["logit_std"] for r in runs], ddof=1))
                     if len(runs) > 1 else float("nan"),
                     "solved": len(solved), "solved_steps": [r["solved_step"] for r in runs],
                     "median_solved_step": float(np.median(solved)) if solved else None,
                     "final_accuracy": float(np.mean([r["curve"][-1][2] for r in runs])),
                     "final_loss": float(np.mean([r["curve"][-1][1] for r in runs]))})
    return rows


SEED_D_KS = (64, 128)  # the seed's "standard embedding sizes (dₖ = 64 to 128)"


def audit_evidence(result: dict) -> dict:
    """What the seed audit's "unscaled attention fails to train" record decides on, as plain data (proofs
    cannot import numeric): per unscaled run at the seed's d_k, the step it solved the task at (None if
    never), and its eval loss at step 0 and at the first evaluation after it. The eval set is fixed per
    seed, so a loss change between two evaluations is an exact difference, not a sampling fluctuation."""
    schedule, task = result["schedule"], result["task"]
    runs = [r for r in result["runs"] if r["scaling"] == "none" and r["d_k"] in SEED_D_KS]
    return {"steps": schedule.steps, "solved_accuracy": schedule.solved_accuracy, "chance": 1 / task.n_values,
            "seeds": len({r["seed"] for r in runs}),
            "runs": [{"d_k": r["d_k"], "seed": r["seed"], "solved_step": r["solved_step"],
                      "loss_start": r["curve"][0][1], "step_next": r["curve"][1][0], "loss_next": r["curve"][1][1],
                      "final_accuracy": r["curve"][-1][2]} for r in runs]}


def figure_data(result: dict) -> dict:
    """The training figure's data: per (d_k, scaling) the eval steps, each seed's eval loss there and its
    mean over seeds, and each seed's solving step (None: never), with the schedule and the chance loss."""
    schedule, task = result["schedule"], result["task"]
    by_setting: dict = {}
    for r in result["runs"]:
        by_setting.setdefault((r["d_k"], r["scaling"]), []).append(r)
    settings = []
    for (dk, sc), runs in sorted(by_setting.items(), key=lambda kv: (kv[0][0], SCALINGS.index(kv[0][1]))):
        steps = [c[0] for c in runs[0]["curve"]]
        if any([c[0] for c in r["curve"]] != steps for r in runs):
            raise ValueError(f"the runs of d_k = {dk}, {sc} were evaluated at different steps")
        per_seed = [[c[1] for c in r["curve"]] for r in runs]
        settings.append({"d_k": dk, "scaling": sc, "steps": steps, "seeds": [r["seed"] for r in runs],
                         "loss": per_seed, "mean_loss": np.mean(per_seed, axis=0).tolist(),
                         "solved_steps": [r["solved_step"] for r in runs]})
    return {"settings": settings, "steps": schedule.steps, "batch": schedule.batch, "lr": schedule.lr,
            "eval_every": schedule.eval_every, "eval_size": schedule.eval_size,
            "solved_accuracy": schedule.solved_accuracy, "chance_loss": float(np.log(task.n_values)),
            "task": {"pairs": task.pairs, "n_keys": task.n_keys, "n_values": task.n_values,
                     "d_model": task.d_model}}


SCALING_WORDS = {"sqrt": "scores · 1/√d_k", "none": "no scaling", "inverse": "scores · 1/d_k",
                 "t5": "no scaling, T5's W_q initialisation"}


def figure_caption(data: dict) -> str:
    """The training figure's caption, from its data: task, schedule, seeds, what is drawn, who solved it."""
    t, settings = data["task"], data["settings"]
    seeds = sorted({s for x in settings for s in x["seeds"]})
    solved = "; ".join(f"d_k = {x['d_k']} {x['scaling']}: {sum(s is not None for s in x['solved_steps'])}/"
                       f"{len(x['solved_steps'])}" for x in settings)
    return (f"Eval loss (fixed eval set of {data['eval_size']} per seed) of a one-layer attention model on "
            f"associative recall ({t['pairs']} key–value pairs, {t['n_keys']} keys, {t['n_values']} values, "
            f"d_model {t['d_model']}; numeric.training), trained with Adam (lr {data['lr']:g}, batch {data['batch']}) "
            f"for {data['steps']} steps, evaluated every {data['eval_every']}, over seed{'s' if len(seeds) > 1 else ''} "
            f"{', '.join(map(str, seeds))}: one panel per d_k, one colour per scaling ("
            + ", ".join(f"{k}: {v}" for k, v in SCALING_WORDS.items())
            + "); thick line the mean over seeds, thin lines each seed, dotted the chance loss ln "
            f"{t['n_values']}. A circle marks the step each seed solved the task (eval accuracy ≥ "
            f"{data['solved_accuracy']:g}). Seeds solved: {solved}.")


def finite_difference_error(params, ctx, query, target, scale, *, h: float = 1e-6, entries: int = 6,
                            rng=None, subtract_d: bool = True) -> float:
    """Largest relative error between the analytic gradient and central differences over a few
    entries of each weight (float64)."""
    rng = rng or np.random.default_rng(0)
    _, _, cache = forward(params, ctx, query, target, scale)
    g = backward(params, ctx, query, target, scale, cache, subtract_d=subtract_d)
    worst = 0.0
    for name, w in params.items():
        for _ in range(entries):
            idx = tuple(rng.integers(0, n) for n in w.shape)
            old = w[idx]
            w[idx] = old + h
            up = forward(params, ctx, query, target, scale)[0]
            w[idx] = old - h
            down = forward(params, ctx, query, target, scale)[0]
            w[idx] = old
            numeric = (up - down) / (2 * h)
            worst = max(worst, abs(numeric - g[name][idx]) / max(abs(numeric), abs(g[name][idx]), 1e-8))
    return worst


if __name__ == "__main__":
    import sys

    res = quick_experiment() if "--quick" in sys.argv else experiment()
    for row in summary(res):
        print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()})
    print(f"{res['seconds']:.1f} s")
