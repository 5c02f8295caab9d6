"""Hypothesis strategies for the harness's inputs, for users who want their own property tests.

    from hypothesis import given
    from kernels.harness.strategies import attention_problems

    @given(attention_problems())
    def test_my_kernel(problem):
        q, k, v, kwargs = problem.tensors()
        ...

``cases()`` draws shapes of the kinds the harness's fixed cases are chosen for (lengths that are
multiples of no block size, Nq ≠ Nk, GQA/MQA, D not a multiple of 16, Dv ≠ D, explicit scales);
``attention_problems()`` adds a dtype and a seed, and builds the same inputs the harness would
(``cases.make_inputs``), so a failure found by hypothesis replays exactly.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from hypothesis import strategies as st

from kernels.harness.cases import Case, make_inputs

DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@st.composite
def cases(draw, max_length: int = 300, max_head_dim: int = 128, causal: bool | None = None,
          gqa: bool = True, value_dim: bool = True) -> Case:
    """A random Case. ``causal`` None draws both; ``gqa``/``value_dim`` False keep Hq = Hkv / Dv = D."""
    kv_heads = draw(st.integers(1, 3))
    group = draw(st.integers(1, 4)) if gqa else 1
    head_dim = draw(st.integers(1, max_head_dim))
    dv = draw(st.one_of(st.none(), st.integers(1, max_head_dim))) if value_dim else None
    return Case(name="hypothesis", batch=draw(st.integers(1, 3)), q_heads=kv_heads * group, kv_heads=kv_heads,
                n_q=draw(st.integers(1, max_length)), n_k=draw(st.integers(1, max_length)), head_dim=head_dim,
                causal=draw(st.booleans()) if causal is None else causal, value_dim=dv,
                scale=draw(st.one_of(st.none(), st.sampled_from([0.0, 0.3, 1.0, 1.7]))))


@dataclass(frozen=True)
class Problem:
    case: Case
    dtype: torch.dtype
    seed: int

    def tensors(self, device="cpu"):
        """(q, k, v, kwargs for an SDPA-compatible call); the upstream gradient is ``gradient()``."""
        q, k, v, _ = make_inputs(self.case, self.dtype, device, self.seed)
        return q, k, v, dict(is_causal=self.case.causal, scale=self.case.scale, enable_gqa=self.case.gqa)

    def gradient(self, device="cpu") -> torch.Tensor:
        return make_inputs(self.case, self.dtype, device, self.seed)[3]


@st.composite
def attention_problems(draw, dtypes=DTYPES, **case_options) -> Problem:
    return Problem(draw(cases(**case_options)), draw(st.sampled_from(list(dtypes))), draw(st.integers(0, 2**31 - 1)))
