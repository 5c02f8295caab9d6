"""Test doubles of the numeric and kernels layers, with the public API the report reads.

They let the report's own tests drive every branch (a confirmation that rejects, a kernel
check that fails, a layer that raises) in milliseconds. What they return is plainly
made up; the report's real evidence always comes from the real layers.
"""
from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field


@dataclass
class Confirmation:
    estimate: float
    ci: tuple
    p_value: float
    confirmed: bool
    n_samples: int
    seconds: float = 0.123
    alpha: float = 0.001
    description: str = "fake confirmation"
    claimed: float | None = 1.0
    power: float | None = None
    tolerance: float | None = None
    details: list = field(default_factory=list)


def numeric_module(*, rejects: tuple[str, ...] = (), raises: tuple[str, ...] = (),
                   confirmable=("dot-product-variance", "softmax-jacobian", "scaled-score-unit-variance",
                                "softmax-saturation", "online-softmax-unnormalised")) -> types.ModuleType:
    import numpy as np

    m = types.ModuleType("numeric")
    m.CONFIRMABLE = tuple(confirmable)

    def confirm(claim_id, *, n_samples=None, seed=0):
        if claim_id in raises:
            raise RuntimeError(f"fake failure for {claim_id}")
        ok = claim_id not in rejects
        part = Confirmation(1.0, (0.9, 1.1), 0.5, True, n_samples or 10, 0.0, description="fake point d_k = 64")
        return Confirmation(1.0 + seed / 1000, (0.9, 1.1), 0.5 if ok else 1e-9, ok, n_samples or 10, details=[part])

    def confirm_dot_product_variance(d_k, *, n_samples, seed=0):
        return Confirmation(d_k * 1.01, (d_k * 0.9, d_k * 1.1), 0.5, True, n_samples)

    def dot_product_samples(d_k, n_samples, seed=0):
        return np.random.default_rng(seed).standard_normal(n_samples) * np.sqrt(d_k)

    def saturation_curves(d_ks, n_samples, seed=0):
        d = np.asarray(d_ks, dtype=float)
        return {name: {"max_weight": 1 - 1 / (1 + d * f), "entropy": np.log(d) / (1 + f),
                       "jacobian_fro": 0.5 / (1 + f * np.sqrt(d))}
                for name, f in (("none", 1.0), ("sqrt_dk", 0.1), ("dk", 0.01))}

    def online_softmax_trace(scores, block_size):
        s = np.asarray(scores)
        ends = list(range(block_size, len(s), block_size)) + [len(s)]
        maxes = [float(s[:e].max()) for e in ends]
        return {"running_max": np.array(maxes),
                "running_sum": np.array([float(np.exp(s[:e] - m).sum()) for e, m in zip(ends, maxes)])}

    for fn in (confirm, confirm_dot_product_variance, dot_product_samples, saturation_curves, online_softmax_trace):
        setattr(m, fn.__name__, fn)
    return m


@dataclass
class Check:
    invariant: str
    claim_id: str | None
    case: str
    dtype: str
    device: str
    discrepancy: float
    bound: float
    passed: bool
    error: str | None = None
    detail: str = ""


@dataclass
class ConformanceReport:
    checks: list

    @property
    def passed(self):
        return all(c.passed for c in self.checks)


def kernel_modules(*, failing_invariant: str | None = None) -> dict[str, types.ModuleType]:
    """``kernels`` and ``kernels.harness`` (and ``kernels.harness.cases``) as sys.modules entries."""
    kernels = types.ModuleType("kernels")
    harness = types.ModuleType("kernels.harness")
    cases = types.ModuleType("kernels.harness.cases")

    def flash_attention(q, k, v, **kw):  # never called by the fake harness
        raise AssertionError("fake kernel")

    def verify_attention(impl, *, device, dtypes, causal, gqa, backward, seed, thorough, cases=None):
        rows = [("rows-sum-to-one", "softmax-normalisation"), ("key-shift-invariance", "softmax-shift-invariance"),
                ("output-dtype-shape", None)]
        return ConformanceReport([
            Check(inv, claim, "square: B=1 N=53", "float32", device, 2e-7 if inv != failing_invariant else 5e-3,
                  1e-6, inv != failing_invariant) for inv, claim in rows])

    def error_vs_length(impl, lengths, dtypes, *, device="cpu", seed=0):
        bounds = {"float32": 1e-6, "float16": 3e-3, "bfloat16": 2e-2}
        return [{"dtype": d, "n": n, "error": bounds[d] * 0.3, "bound": bounds[d], "passed": True,
                 "reference_error": bounds[d] * 0.2} for d in dtypes for n in lengths]

    @dataclass
    class Case:
        name: str

    cases.DEFAULT_CASES = tuple(Case(n) for n in ("square", "gqa-causal", "extreme", "negative-rows", "tiny"))
    kernels.flash_attention = flash_attention
    kernels.harness = harness
    harness.verify_attention = verify_attention
    harness.error_vs_length = error_vs_length
    harness.cases = cases
    return {"kernels": kernels, "kernels.harness": harness, "kernels.harness.cases": cases}


def install(monkeypatch, numeric=None, kernels=None) -> None:
    """Put the fakes in sys.modules for one test (monkeypatch undoes it)."""
    if numeric is not None:
        monkeypatch.setitem(sys.modules, "numeric", numeric)
    for name, module in (kernels or {}).items():
        monkeypatch.setitem(sys.modules, name, module)
    if kernels:
        # A CPU machine would otherwise try to import the real triton interpreter settings.
        monkeypatch.setitem(sys.modules, "torch", _fake_torch())


def _fake_torch() -> types.ModuleType:
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(is_available=lambda: False, get_device_name=lambda i: "none")
    return torch
