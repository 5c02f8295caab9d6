"""Invariant rounding-attention-forward: every output element within the proved rounding-error bound.

The bound (claim ``rounding-attention-forward``, evaluated by ``numeric.rounding.forward_bound``)
holds for any kernel that computes the way its precision recipe says. A correct kernel cannot
exceed it, so a violation is a bug with certainty; the empirical rule of ``tolerance.py`` stays
beside it and says the weaker "worse than a plain reference".

An implementation declares its recipe with :func:`declare_recipe` (an attribute on the impl: a
recipe name, or a function of the dtype name returning a :class:`~proofs.theorems.rounding.Recipe`).
Known implementations have theirs here; anything else is judged by the loosest plausible recipe
(everything in the input format, any blocking), which still refuses a float32 kernel that computes
in float16 inside.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import torch

from kernels.harness import reference as ref
from kernels.harness.cases import POSITIONS
from kernels.harness.invariants import Invariant, Outcome, register
from kernels.harness.tolerance import WRAPPED
from proofs.theorems import rounding as R

ATTRIBUTE = "rounding_recipe"


def declare_recipe(impl, recipe):
    """Attach a recipe (a name from proofs.theorems.rounding.RECIPES, or dtype name -> Recipe) to impl."""
    if not (callable(recipe) or recipe in R.RECIPES):
        raise ValueError(f"recipe must be one of {', '.join(R.RECIPES)} or a function of the dtype name, "
                         f"got {recipe!r}")
    setattr(impl, ATTRIBUTE, recipe)
    return impl


def flash_recipe(dtype: str) -> R.Recipe:
    """This project's kernel: FlashAttention-2's recipe. Under the interpreter bfloat16 tiles are
    upcast after loading, so P meets a float32 V and is not rounded to bfloat16 before P·V."""
    from kernels.flash import runtime

    rec = R.recipe("flash-attention-2", dtype)
    if runtime.upcast_operands(getattr(torch, dtype)):
        rec = replace(rec, probabilities="float32", name="flash-attention-2 (interpreted)")
    return rec


def _known():
    """Recipes of implementations that cannot carry the attribute themselves (kernels.mutants declares its own)."""
    import torch.nn.functional as F

    from kernels.flash import flash_attention

    return {F.scaled_dot_product_attention: "torch-cpu-sdpa", flash_attention: flash_recipe}




def recipe_for(impl, dtype: torch.dtype) -> R.Recipe:
    name = str(dtype).removeprefix("torch.")
    impl = getattr(impl, WRAPPED, impl)
    declared = getattr(impl, ATTRIBUTE, None)
    if declared is None:
        try:
            declared = _known().get(impl)
        except TypeError:  # unhashable impl
            declared = None
    if declared is None:
        return R.recipe("loosest", name)
    return declared(name) if callable(declared) else R.recipe(declared, name)


def check(s):
    """The harness invariant: worst element's error against its own bound (passes iff err ≤ bound)."""
    # NumPy evaluation of the proved bound (numeric sits below kernels); imported here, not at the top,
    # so that importing kernels does not import the whole numeric layer
    from numeric.rounding import forward_bound

    rec = recipe_for(s.impl, s.dtype)
    q = s.q.cpu().double()
    k, v = s.k.cpu().double(), s.v.cpu().double()
    if s.case.gqa:
        k, v = ref.repeat_kv(k, q.shape[1]), ref.repeat_kv(v, q.shape[1])
    # the case's own scale: output and golden are computed with it (a case such as scaled-0.3 passes one)
    bound = forward_bound(q.numpy(), k.numpy(), v.numpy(), rec, scale=s.case.scale,
                          is_causal=s.case.causal).deterministic
    gold = s.base.value
    err = (s.output().cpu().double() - gold).abs().numpy()
    err = np.where(np.isnan(err), np.inf, err)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(err == 0, 0.0, err / bound)
    worst = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    vacuous = int(np.isinf(bound).sum())
    detail = (f"recipe {rec.name} ({rec.inputs} in, {rec.accumulator} accumulators, P in {rec.probabilities}, "
              f"B_N {rec.block_n}); worst element {tuple(int(i) for i in worst)}: error {err[worst]:.3g} "
              f"vs bound {bound[worst]:.3g}" + (f"; {vacuous} elements with a vacuous (infinite) bound" if vacuous else ""))
    e, b = float(err[worst]), float(bound[worst])
    if math.isinf(e):
        b = 0.0 if math.isinf(b) else b  # a non-finite output is never within a rounding bound
    elif math.isinf(b):
        e = 0.0  # a vacuous bound passes everything finite; the detail says so
    return Outcome(e, b, detail)


# Not on the long positions case: the derived bound over its 4.2 M scores costs 1.4-4.7 CPU-s a dtype
# (measured), and what the case is for (positions) the low-precision rule there judges.
register(Invariant("rounding-attention-forward", "rounding-attention-forward", check, lambda c: c.kind != POSITIONS,
                   bug_classes="computing in lower precision than declared (float16 accumulators in a float32 "
                               "kernel), and any error larger than rounding can explain"))
