"""Stand-ins for what the numeric and kernels layers' entry points call, returning the layers' own records.

They let the report's tests drive every branch (a confirmation that rejects, a kernel check that
fails, a layer that raises) in milliseconds, through the layers' real entry points
(``numeric.report_evidence``, ``kernels.evidence``). The records are the real ones
(``numeric.Confirmation``, ``kernels.harness.Check`` and ``ConformanceReport``): only the numbers
in them are made up, and the report's real evidence always comes from the real layers.
"""
from __future__ import annotations

import types

from kernels.harness.report import Check, ConformanceReport  # also puts the real kernels.* in sys.modules
from numeric.evidence import Confirmation


def _confirmation(claim_id, estimate, p_value, confirmed, n, **kw) -> Confirmation:
    return Confirmation(claim_id=claim_id, description=kw.pop("description", "fake confirmation"), estimate=estimate,
                        ci=kw.pop("ci", (0.9, 1.1)), p_value=p_value, confirmed=confirmed, n_samples=n,
                        seconds=kw.pop("seconds", 0.123), alpha=0.001, claimed=kw.pop("claimed", 1.0), **kw)


def numeric_module(*, rejects: tuple[str, ...] = (), raises: tuple[str, ...] = (), std_errors=None,
                   confirmable=("dot-product-variance", "softmax-jacobian", "scaled-score-unit-variance",
                                "softmax-saturation", "online-softmax-unnormalised")) -> types.ModuleType:
    import numpy as np

    import numeric

    m = types.ModuleType("numeric")
    m.CONFIRMABLE = tuple(confirmable)

    def confirm(claim_id, *, quick=False, seed=0):
        if claim_id in raises:
            raise RuntimeError(f"fake failure for {claim_id}")
        ok = claim_id not in rejects
        n = 20_000 if quick else 10
        parts = [_confirmation(claim_id, d_k * 1.01, 0.5, True, n, ci=(d_k * 0.9, d_k * 1.1), claimed=float(d_k),
                               seconds=0.0, description=f"fake point d_k = {d_k}", point={"d_k": d_k,
                                                                                          "moment": "variance"},
                               # ``std_errors``: claim id -> its variance tests' standard error (log scale), for power
                               **({"std_error": std_errors[claim_id], "power_alpha": 0.001}
                                  if claim_id in (std_errors or {}) else {}))
                 for d_k in (1, 64)]
        return _confirmation(claim_id, 1.0 + seed / 1000, 0.5 if ok else 1e-9, ok, n, details=parts)

    def dot_product_samples(d_k, n_samples, seed=0):
        return np.random.default_rng(seed).standard_normal(n_samples) * np.sqrt(d_k)

    def saturation_curves(d_ks, n_samples, seed=0):
        d = np.asarray(d_ks, dtype=float)
        return {name: {"max_weight": 1 - 1 / (1 + d * f), "entropy": np.log(d) / (1 + f),
                       "jacobian_fro": 0.5 / (1 + f * np.sqrt(d))}
                for name, f in (("none", 1.0), ("sqrt_dk", 0.1), ("dk", 0.01))}

    for fn in (confirm, dot_product_samples, saturation_curves):
        setattr(m, fn.__name__, fn)
    m.online_softmax_trace = numeric.online_softmax_trace  # cheap and exact: the real one
    return m


def kernel_modules(*, failing_invariant: str | None = None, lacking: str | None = None) -> dict[str, types.ModuleType]:
    """Stand-ins for the functions of ``kernels``, ``kernels.harness``, ``kernels.flash.runtime`` and
    ``kernels.rounding_confirmation`` that the kernel layer's entry point calls (the harness's cases stay real)."""
    kernels = types.ModuleType("kernels")
    harness = types.ModuleType("kernels.harness")

    def flash_attention(q, k, v, **kw):  # never called by the fake harness
        raise AssertionError("fake kernel")

    def verify_attention(impl, *, device, dtypes, causal, gqa, seed, thorough, cases=None, invariants=None,
                         backward=True):
        verify_attention.asked = dict(backward=backward, invariants=invariants)
        rows = [("rows-sum-to-one", "softmax-normalisation"), ("key-shift-invariance", "softmax-shift-invariance"),
                ("output-dtype-shape", None)]
        # ``lacking``: the impl lacks the feature this invariant needs (the harness's "not applicable")
        return ConformanceReport(impl="fake", device=device, dtypes=("float32",), checks=[
            Check(invariant=inv, claim_id=claim, case="square: B=1 N=53", case_name="square", dtype="float32",
                  device=device, discrepancy=2e-7 if inv != failing_invariant else 5e-3, bound=1e-6,
                  passed=inv != failing_invariant,
                  **({"status": "not applicable", "detail": "impl lacks attn_mask"} if inv == lacking else {}))
            for inv, claim in rows])

    def error_vs_length(impl, lengths, dtypes, *, device="cpu", seed=0):
        bounds = {"float32": 1e-6, "float16": 3e-3, "bfloat16": 2e-2}
        return [{"dtype": d, "n": n, "error": bounds[d] * 0.3, "bound": bounds[d], "passed": True,
                 "reference_error": bounds[d] * 0.2} for d in dtypes for n in lengths]

    runtime = types.ModuleType("kernels.flash.runtime")
    runtime.interpreting = lambda: True
    kernels.flash_attention = flash_attention
    harness.verify_attention = verify_attention
    harness.error_vs_length = error_vs_length
    # the rounding-bounds figure's data (kernels.rounding_confirmation.error_curve's shape), made up
    rounding = types.ModuleType("kernels.rounding_confirmation")
    rounding.error_curve = lambda samples=8, seed=0: dict(
        records=[dict(dtype=d, n=n, error=1e-7 * n * f, deterministic=1e-6 * n * f, probabilistic=3e-7 * n * f,
                      empirical=2e-6 * f, violations=0)
                 for d, f in (("float32", 1.0), ("float16", 8e3), ("bfloat16", 6e4)) for n in (1, 16, 256)],
        impl="fake", samples=samples, failure=1e-3)
    return {"kernels": kernels, "kernels.harness": harness, "kernels.flash.runtime": runtime,
            "kernels.rounding_confirmation": rounding}


def install(monkeypatch, numeric=None, kernels=None) -> None:
    """Put the stand-ins' functions in place of the real modules' own for one test (monkeypatch undoes it).

    The layers' entry points (numeric.report_evidence, kernels.evidence) stay real and call them."""
    import importlib

    for name, fake in [("numeric", numeric)] + list((kernels or {}).items()):
        if fake is None:
            continue
        real = importlib.import_module(name)
        for attr, value in vars(fake).items():
            if not attr.startswith("__"):
                monkeypatch.setattr(real, attr, value)
