"""The rounding-attention-forward invariant: proved bound, declared recipes, lower precision caught."""
import pytest
import torch
import torch.nn.functional as F

from kernels import mutants, verify_attention
from kernels.harness import rounding_bound as rb
from kernels.harness.cases import DEFAULT_CASES

INVARIANT = "rounding-attention-forward"
RANDOM_CASES = [c for c in DEFAULT_CASES if c.kind == "random" and c.n_q * c.n_k >= 37 * 37]


def _checks(report):
    return [c for c in report.checks if c.invariant == INVARIANT]


@pytest.mark.parametrize("impl", [F.scaled_dot_product_attention, mutants.blocked_attention], ids=lambda f: f.__name__)
def test_correct_implementations_stay_within_the_proved_bound(impl):
    report = verify_attention(impl, backward=False)
    checks = _checks(report)
    assert len(checks) == len(DEFAULT_CASES) * 3
    assert all(c.passed for c in checks), [c.describe() for c in checks if not c.passed]


def test_float16_inside_a_float32_kernel_is_caught():
    report = verify_attention(mutants.low_internal_precision, dtypes=["float32"], backward=False,
                              cases=RANDOM_CASES)
    assert not any(c.passed for c in _checks(report))


def test_a_kernel_computing_below_its_declared_recipe_is_caught():
    """float16 accumulators while declaring FlashAttention-2's float32 ones, on float16 inputs."""
    def half_accumulators(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
        return mutants.blocked_attention(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa,
                                         work_dtype=torch.float16)

    honest = verify_attention(rb.declare_recipe(half_accumulators, "loosest"), dtypes=["float16"],
                              backward=False, cases=RANDOM_CASES)
    assert all(c.passed for c in _checks(honest))
    lying = verify_attention(rb.declare_recipe(half_accumulators, "flash-attention-2"), dtypes=["float16"],
                             backward=False, cases=RANDOM_CASES)
    assert sum(not c.passed for c in _checks(lying)) >= len(RANDOM_CASES) // 2


def test_recipes_are_declared_or_default_to_the_loosest():
    assert rb.recipe_for(F.scaled_dot_product_attention, torch.float16).name == "torch-cpu-sdpa"
    assert rb.recipe_for(lambda q, k, v, **kw: q, torch.bfloat16).name == "loosest"
    f = rb.declare_recipe(lambda q, k, v, **kw: q, "float32-blocked")
    assert rb.recipe_for(f, torch.float32).name == "float32-blocked"
    with pytest.raises(ValueError, match="recipe must be one of"):
        rb.declare_recipe(f, "fast-and-loose")
