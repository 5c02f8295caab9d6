"""The families the generator's regimes target (generate.REGIMES), each shown caught by the default
run: a mutant of kernels.mutants per family, judged by verify_attention's default draws (seed 0)
with generated-agreement, the relation that names it. The regimes come first in every run, whatever
its budget, so the problems judged here (the budget spent after the first draw) are judged by the
default run too, and the catch does not depend on the machine's speed."""
import pytest

from kernels import mutants
from kernels.harness import generate as gen
from kernels.harness import verify_attention

FAMILIES = [mutants.split_kv_decode_16_splits, mutants.rectangular_causal_positions_in_float16,
            mutants.two_dim_mask_as_key_padding, mutants.query_scaled_in_input_dtype,
            # the attn_mask's storage, dtype and values (mask-storage, mask-nonfinite)
            mutants.mask_strides_ignored, mutants.mask_nonfinite_sanitised, mutants.mask_cast_to_query_dtype,
            mutants.mask_must_be_contiguous,
            # SDPA's contract axes: head dim 129..255, big GQA groups and B·Hq > 256, KV-cache slices, rows
            # masked below -1e20, the mask-free decode path
            mutants.head_dim_floor_chunks, mutants.gqa_big_groups_tiled, mutants.batch_heads_tail_chunk_dropped,
            mutants.kv_cache_batch_stride_from_shape, mutants.finite_max_start,
            mutants.split_kv_overlapping_without_mask,
            # SDPA takes q, k, v of any rank >= 3: refusing it is a failure (a (Nk,) mask may be refused: SDPA's
            # default CPU dispatch refuses it, test_generate)
            mutants.refuses_rank_other_than_4]
BY_FN = {m.fn: m for m in mutants.MUTANTS}
# The default tier keeps one family (≈ 7 CPU-s); the others (long decodes and lengths past 2048 in
# float64, then shrinking) are the long tier's mutant sweep: all 16 took 194 CPU-s in one process.
KEPT = mutants.query_scaled_in_input_dtype
TIERED = [pytest.param(fn, marks=() if fn is KEPT else pytest.mark.long("mutant sweep"), id=fn.__name__)
          for fn in FAMILIES]


@pytest.mark.parametrize("fn", TIERED)
def test_the_default_run_catches_the_family(fn):
    m = BY_FN[fn]
    report = verify_attention(fn, backward=False, invariants=[gen.AGREEMENT], generate_seconds=1e-9,
                              first_failure=True)
    caught = {c.dtype for c in report.failures if c.invariant == gen.AGREEMENT}
    assert caught >= {str(d).removeprefix("torch.") for d in m.dtypes}, (fn.__name__, caught, report.failure_lines())
