"""SDPA's contract, item by item, each with its source and the invariants that check it.

    python -m kernels.harness.contract      # items -> invariants -> the bug families they target

Sources: torch's documentation of torch.nn.functional.scaled_dot_product_attention ("DOC", quoted),
or the behaviour of torch 2.13's CPU math backend measured here (``sdpa_kernel(SDPBackend.MATH)``,
"MEASURED", with what was seen). An invariant's bug families are its ``bug_classes`` (one source).
"""
from __future__ import annotations

from dataclasses import dataclass

DOC = "torch docs, F.scaled_dot_product_attention"
MEASURED = "measured, torch 2.13 CPU math backend"


@dataclass(frozen=True)
class Item:
    name: str
    statement: str
    source: str
    invariants: tuple[str, ...]


ITEMS: tuple[Item, ...] = (
    Item("output", "returns a tensor of q's dtype (whatever the mask's: judged on every call) and device, shape "
                   "(..., Nq, Dv), sharing no memory with q, k, v; "
                   "the same dtype and values with inputs requiring grad; a normal tensor (not an inference "
                   "tensor) unless called under inference_mode",
         f"{DOC}: 'Output: (N, ..., L, Ev)'; {MEASURED}: under no_grad the output's is_inference() is False; a "
         "float32 additive mask beside float16 q gives a float16 output",
         ("output-dtype-shape", "generated-gradients", "generated-agreement")),
    Item("value", "out = softmax(scale · q kᵀ + mask) v, within the low-precision rule of a float64 golden value and "
                  "the derived rounding bound; at every size, view, mask form and scale drawn, and at every scale of v "
                  "(outputs of 1e-6 in float16 are its subnormals, stored to the nearest one)",
         f"{DOC} (its reference implementation in the docstring)",
         ("reference-agreement", "rounding-attention-forward", "generated-agreement", "rows-sum-to-one", "convex-hull",
          "key-shift-invariance", "key-permutation-invariance", "query-permutation-equivariance",
          "online-softmax-merge", "generated-metamorphic")),
    Item("scale", "scale=None means 1/√D; an explicit scale (0, negative, tiny) is used as given",
         f"{DOC}: 'scale: Scaling factor applied prior to softmax. If None, the default value is set to 1/√E'",
         ("default-scale", "explicit-scale", "zero-scale")),
    Item("argument-types", "scale given as an int or a NumPy float is that number; is_causal that is not a Python "
                           "bool (numpy.bool_, int, a tensor), true or false, is refused or applied as its truth value; every drawn "
                           "problem's arguments in one of the forms SDPA accepts: keywords, attn_mask, dropout_p and "
                           "is_causal by position (nn.MultiheadAttention's call), dropout_p as numpy.float32 and "
                           "scale as numpy.float64, or both as 0-d float64 tensors",
         f"{MEASURED}: scale=2 and numpy.float64(0.5) give the float's output (math and default dispatch); "
         "numpy.bool_, int and tensor forms of True and of False for is_causal raise \"argument 'is_causal' must be "
         "bool\"; "
         "dropout_p as numpy.float32, numpy.float64 or a 0-d tensor, scale as numpy.float32 or a 0-d tensor, and "
         "(q, k, v, attn_mask, dropout_p, is_causal) by position are accepted and give the keyword call's output; "
         "scale by position is refused (keyword-only)",
         ("argument-types", "generated-agreement", "generated-gradients", "generated-dropout",
          "generated-metamorphic")),
    Item("causal", "is_causal: top-left aligned lower-triangular mask (query i sees keys j ≤ i), also for Nq ≠ Nk "
                   "and past 2048 queries and keys (positions exact where float16's are not)",
         f"{DOC}: 'attn_mask = torch.ones(L, S).tril(diagonal=0)'",
         ("causality", "causal-alignment", "long-causal-positions")),
    Item("gqa", "enable_gqa: query head h reads KV head h // (Hq/Hkv); Hkv must divide Hq; without enable_gqa heads "
                "broadcast as matmul does (1 < Hkv < Hq raises)",
         f"{DOC}: 'enable_gqa: If set to True, Grouped Query Attention (GQA) is enabled'; {MEASURED}: 'Number of "
         "heads in key and value must divide the number of heads in query'",
         ("gqa-equals-repeated-mha", "mismatched-heads-refused", "refused-inputs", "generated-agreement")),
    Item("ranks-and-broadcast", "q, k, v of any rank ≥ 2 (rank 2: (N, D), one head of one entry, with a mask of "
                                "at most two dims; rank 3: (H, N, D), grouped under "
                                "enable_gqa); k and v with batch or leading dims of 1 broadcast against q's as "
                                "matmul does (along any of them: at rank 5, (B1, 1) against q's (B1, B2)); the "
                                "gradients at ranks 2, 3 and 5 too (GQA's summed over the group)",
         f"{DOC}: 'query: (N, ..., Hq, L, E)'; {MEASURED}: rank 1 raises 'Expected query, key, and value to all be at "
         "least 2 dimensional', ranks 2 to 9 are taken (measured) (with is_causal, a (Nq, Nk) mask and dropout), a 4-D mask "
         "beside rank-2 inputs raises; q (4, 16, 8) with k, v (2, 16, 8) and enable_gqa: head h "
         "reads KV head h // 2; q (2, 2, 8, 16) with k, v (1, 2, 8, 16): the output of k, v expanded to batch 2 "
         "(also under enable_gqa, and rank 5 with a leading dim of 1); without enable_gqa a rank-3 k of 2 heads "
         "against 4 raises 'The size of tensor a (4) must match the size of tensor b (2) at non-singleton dimension 0'",
         ("generated-agreement", "generated-gradients")),
    Item("float64", "float64 inputs are accepted and computed at float64's precision (within the rule at "
                    "u = 2^-53 of a longdouble golden value), causal ones and the gradients too, or refused",
         f"{DOC}: the supported dtypes include torch.float64 on the CPU; {MEASURED}: errors of 3e-16 to 8e-15 "
         "against longdouble on the contract case, masked, scale 4, 400-key and causal problems; gradients 1e-16 "
         "to 3e-13 (scale 4 dq) against the derived backward in longdouble",
         ("float64-agreement", "float64-causal", "float64-gradients")),
    Item("refused", "q, k, v of different dtypes, k with another head dim than q and an attn_mask that does not "
                    "broadcast to (B, Hq, Nq, Nk) are refused",
         f"{MEASURED}: 'Expected query, key, and value to have the same dtype'; 'The size of tensor a (Nk) must "
         "match the size of tensor b (Nk + 3) at non-singleton dimension 3'", ("refused-inputs",
                                                                              "attn-mask-shape-refused",
                                                                              "shape-contract")),
    Item("mask-dtype", "an attn_mask of a dtype other than bool, float32 and q's (every integer dtype, float64 "
                       "beside float32 q, the other half type) is refused; a float32 mask beside a q of another dtype "
                       "may be refused (the documentation asks for 'a float mask of the same type as query') and, "
                       "accepted, is added in the wider dtype",
         f"{MEASURED}: torch 2.13's math SDPA accepts exactly bool, float32 and q's dtype for each q dtype "
         "(float32, float16, bfloat16, float64) and raises 'Expected attn_mask dtype to be bool or float or to "
         "match query dtype' for uint8, int8, int16, int32, int64 and the rest", ("attn-mask-dtype-refused",)),
    Item("kv-lengths", "k and v of different lengths are refused (key and value share the length S; no answer is "
                       "right)",
         f"{DOC}: 'key: (N, ..., S, E)', 'value: (N, ..., S, Ev)'; {MEASURED}: 'Expected size for first two "
         "dimensions of batch2 tensor to be: [B·H, Nk] but got: [B·H, Nv]' (the default CPU dispatch's flash "
         "backend answers instead: kernels/ecosystem/FINDINGS.md)", ("kv-lengths-refused",)),
    Item("empty", "any of B, H, Nq, Nk, D, Dv = 0 is accepted: shape (B, Hq, Nq, Dv), zeros for Nk = 0, the mean "
                  "of v for D = 0, gradients of the inputs' shapes (a kernel may refuse instead)",
         f"{MEASURED}: Nk = 0 output 0, D = 0 output the mean of v, empty gradients", ("empty-dims",)),
    Item("strides", "inputs of any strides and storage offsets (transposed, packed QKV, permuted, offset views, k and "
                    "v interleaved in one KV cache longer than Nk; k or v alone, or both, expanded with stride 0 over "
                    "the heads or the batch, forward and gradients)",
         f"{MEASURED}: same values for every layout, and the gradients of a leaf of stride 0 each entry's own",
         ("strided-inputs", "generated-agreement", "generated-gradients")),
    Item("mask", "attn_mask boolean (True = attend) or additive (q's dtype, or float32 with half q), of any "
                 "storage, broadcast to (B, Hq, Nq, Nk) from every form; a NaN additive entry NaN in its rows; rows "
                 "with no visible key give 0, also with one key (Nk = 1); with is_causal applied together or refused; a mask "
                 "that does not broadcast (more key columns or query rows, another batch or head size) refused; a "
                 "boolean mask of a structure (causal top-left or bottom-right, a sliding window, key padding, all "
                 "visible) is read as any other",
         f"{DOC}: 'attn_mask: Attention mask; shape must be broadcastable'; {MEASURED}: empty rows 0, mask + "
         "is_causal raises on math; every pattern of (B, Hq, Nq, Nk) each full or 1, at ranks 4 to 1 (29), boolean and "
         "float, with rank-4 and rank-5 inputs, gives the output of the mask expanded on the math backend, while the "
         "default CPU dispatch raises IndexError 'Dimension out of range' for a (Nk,) mask without dropout (so a (Nk,) "
         "mask may be refused; accepted, it is read as (1, 1, 1, Nk)); Nk = 1 with the key hidden "
         "(False or -inf) output 0; a row with every key at -inf output 0; a mask of shape "
         "(B, Hq, Nq, Nk + 3) raises 'The size of tensor a (Nk) must match the size of tensor b (Nk + 3) at "
         "non-singleton dimension 3' (likewise Nq + 2, B + 1, Hq + 1: dimensions 2, 0, 1); the mask of any strides "
         "(transposed, stride-0 expanded, at a storage offset) and, with half q, float32, kept in float32 (a "
         "bias near 300 with bfloat16 q errs 0.009, cast to bfloat16 first 0.88; a float16 mask with bfloat16 q "
         "raises 'Expected attn_mask dtype to be bool or float or to match query dtype'); a NaN entry makes NaN "
         "exactly the rows it reaches (math and flash; +inf too on math, not on flash with Nq = 1: not contract)",
         ("attn-mask", "attn-mask-with-causal", "attn-mask-empty-rows", "attn-mask-causal-equivalence",
          "attn-mask-row-shift", "attn-mask-one-key", "attn-mask-shape-refused", "generated-metamorphic",
          "generated-agreement")),
    Item("robust", "no overflow or 0/0 at extreme logits, rows of mixed magnitude, hugely negative rows",
         f"{MEASURED}: finite output at |scores| up to 1e30 (float32)",
         ("extreme-logits", "mixed-magnitude-rows", "hugely-negative-rows")),
    Item("nan", "a NaN or infinite input element makes non-finite exactly the outputs float64 attention makes "
                "non-finite, of its kind, on every path (drawn problems too: a long decode's split-K path every run)",
         f"{MEASURED}: NaN in q row i: row i only; in k key j: every row seeing it; in v: its column; ±inf in q, "
         "k or v: NaN or ±inf in exactly float64's outputs, of float64's kind, in float32, float16 and bfloat16",
         ("nan-propagation", "generated-agreement")),
    Item("precision", "error does not grow with length beyond the reference's; every float16/bfloat16 output and "
                      "gradient rounded without bias (to nearest), on every path",
         f"{MEASURED}: math backend's error flat in Nk up to 8193; torch converts float32 to a half type to nearest, "
         "ties to even (kernels/tests/test_flash_rounding.py), and autocast casts SDPA's float32 inputs so",
         ("error-growth", "rounding-bias", "rounding-bias-decode", "generated-agreement", "generated-gradients",
          "backward-agreement", "thread-count")),
    Item("gradients", "dq, dk, dv (GQA: summed over the group) as autograd of the reference, for every subset of "
                      "q, k, v requiring grad, under every mask form (with is_causal too), any scale (0 included), "
                      "non-contiguous and stride-0 dO; also after a second forward of the same shape and as the "
                      "second backward through one graph (retain_graph=True)",
         f"{MEASURED}: autograd through the math graph",
         ("backward-agreement", "backward-key-gradient-sum", "softmax-jacobian", "backward-high-variance",
          "backward-scale-strided", "gradient-subsets", "stride-zero-dout", "attn-mask-gradients",
          "mask-forms-backward", "gradient-sequences", "generated-gradients")),
    Item("mask-gradient", "an additive attn_mask that requires grad gets dS summed over its broadcast dims (or is "
                          "refused), also when it is the only input requiring grad (q, k, v frozen)",
         f"{MEASURED}: mask.grad of the mask's shape; with q, k, v frozen the output still has a grad_fn",
         ("attn-mask-bias-gradient", "generated-gradients")),
    Item("double-backward", "gradients of gradients are right, or refused",
         f"{MEASURED}: the math backend differentiates its backward", ("double-backward",)),
    Item("in-place", "the output modified in place before backward: autograd raises (version counter) or the "
                     "gradients are those of the modified graph; likewise q, k, v (non-leaf, or frozen: any subset "
                     "requiring grad, any one written) or a frozen attn_mask (a reused buffer) modified in place "
                     "between forward and backward: raises, or the gradients of the graph recorded",
         f"{MEASURED}: math right for out.mul_(3); the default dispatch raises 'modified by an inplace operation' "
         "(for out.mul_(3) and for q.mul_(2) after the forward); math gives the recorded graph's gradients "
         "after q, k or v .mul_(2), for every subset requiring grad, frozen inputs written too (it raises only for v "
         "written while saved, in float32); and for a bool mask set all True or an additive one doubled after the "
         "forward",
         ("output-inplace-before-backward", "input-inplace-before-backward", "mask-inplace-before-backward")),
    Item("aliasing", "inputs, attn_mask and dO are never written into, and q, k, v keep their storage, strides and "
                     "offset (a view still aliases its base); the output is not a view of an input; q, k, v may be "
                     "one tensor (attn(x, x, x)): its gradient is dq + dk + dv",
         f"{MEASURED}: inputs bit-identical after forward and backward; attn(x, x, x)'s dx within the rule of float64 "
         "autograd through one leaf",
         ("inputs-untouched", "inputs-untouched-backward", "attn-mask-untouched", "output-dtype-shape",
          "generated-agreement", "aliased-inputs")),
    Item("determinism", "the same call twice gives bit-identical outputs and gradients",
         f"{MEASURED}: bit-identical on CPU", ("determinism", "backward-determinism")),
    Item("concurrency", "calls from several threads at once each get their own inputs' answer (an inference "
                        "server's worker threads), also when each passes other arguments (is_causal, scale, the "
                        "mask, the shape), and training threads each get their own gradients; a call's answer is "
                        "the same at any intra-op thread count (torch.set_num_threads)",
         f"{MEASURED}: 4 threads × 32 rounds of (4, 4, 128, 256) calls under no_grad, each output within the "
         "low-precision rule of its own float64 golden value (0 of 128 past it, 4 seeds; float32, float16 and "
         "bfloat16); the same with arguments of each thread's own and with forward and backward per thread (SDPA's "
         "math backend, float32, seeds 0-3); drawn problems at 2, 3 and 7 intra-op threads, and each covering path's "
         "plain row, and causal, at 6, 12 and 24 in turn, within the rule (SDPA's math backend)",
         ("concurrent-calls", "concurrent-calls-mixed", "concurrent-training", "thread-count")),
    Item("caller", "the answer does not depend on who calls or where: the main thread or another one (the same "
                   "seed's keep mask too), under any default dtype (torch.set_default_dtype(float16), bfloat16, "
                   "float64), on a machine of any CPU count (os.cpu_count), in another process (its own str hash "
                   "seed: torch.manual_seed reproduces dropout) and at another CPU capability (ATEN_CPU_CAPABILITY); "
                   "under torch.autocast to float16 or bfloat16 the call on float32 inputs is the call on them cast "
                   "to that dtype (SDPA is on autocast's lower-precision list), so an answer within that dtype's rule; "
                   "the other half dtype's inputs cast too (float16 under bfloat16 autocast answers bfloat16); "
                   "the same for a training step's gradients, the backward made from another thread than its forward "
                   "(CUDA's autograd runs it on a device thread) or under the forward's default dtype",
         f"{MEASURED}: the same bits for causal 3000 × 3000 float32 under each default dtype and from a worker thread; "
         "under torch.autocast('cpu', float16 or bfloat16) the same bits as the call on inputs (and a float mask) cast "
         "to that dtype, in that dtype, and the same gradients; bfloat16 for float16 inputs under bfloat16 autocast, "
         "float64 for float64 ones; the same gradients with the backward run from a "
         "worker thread and under each default dtype; "
         "the same keep mask for one manual_seed from a worker thread, under no_grad and with grad, and in a child "
         "process of another PYTHONHASHSEED; outputs within the rule in a child at ATEN_CPU_CAPABILITY=avx2",
         ("thread-count", "generated-dropout", "fresh-process")),
    Item("state", "no state kept between calls: buffers written in place between calls are read anew (also through "
                  ".data, which moves no version counter); the answer stays right over 2¹⁰ calls of one shape; a "
                  "call after one of the same shapes in another dtype gives "
                  "its own answer, or the refusal it gets alone; an output already returned is never written by a "
                  "later call; the process's "
                  "global state (flush-to-zero, every zero-argument torch.get_*/is_*/are_* reading and every "
                  "torch.backends property and getter, found rather than listed; autocast, saved-tensor hooks, "
                  "torch function and dispatch modes; torch's RNG without dropout, NumPy's and Python's global RNGs "
                  "always, NumPy's error handling, the garbage collector, the recursion limit, the working directory, "
                  "trace and profile functions, exception hooks, signal handlers; torch._C's zero-argument "
                  "readings such as TorchScript's fuser flags, the values of every loaded torch config module, the "
                  "identity of torch's, torch.nn.functional's, torch.nn.attention's and torch.Tensor's public "
                  "functions) unchanged, after a refused call too, and unchanged by importing the target module, "
                  "judged around every drawn problem's calls and around concurrent callers; the same call after "
                  "its earlier output was written into, after its storage was read through other strides, and a "
                  "training call after an inference_mode one give the call's own answer; no reference to the "
                  "arguments or the output kept after the call",
         f"{MEASURED}: no global state changed by a call; torch's RNG untouched at dropout_p = 0, NumPy's and "
         "Python's random module's untouched by a forward and backward; every argument and the output freed "
         "once the caller drops them",
         ("buffers-mutated-between-calls", "many-calls-of-a-shape", "mask-mutated-between-calls",
          "global-state-unchanged",
          "dropout-rng-advances", "arguments-released", "arguments-released-backward", "generated-agreement")),
    Item("dropout", "dropout_p: each weight kept with probability 1 - p, independently (of every other weight of "
                    "the call: no mask repeating along keys, queries, heads or batch), kept ones scaled 1/(1-p); "
                    "p = 1 gives 0, p > 1 raises, p < 0 (and NaN) raises or applies no dropout; the backward reuses the forward's mask (also with attn_mask), for every "
                    "subset of q, k, v requiring grad and for a learned additive mask's gradient; at every p in "
                    "(0, 1), below 0.01 too",
         f"{DOC}: 'dropout_p: Dropout probability; if greater than 0.0, dropout is applied'; {MEASURED}: p = 1 "
         "output 0, p = 1.5 'dropout probability has to be between 0 and 1', p = -0.1 and NaN the p = 0 output (math) "
         "or refused (default dispatch)",
         ("dropout-mask-law", "dropout-expectation", "dropout-variance", "dropout-forward-backward",
          "dropout-forward-backward-masked", "dropout-with-attn-mask", "dropout-independence", "dropout-long-lags",
          "dropout-kept-fraction",
          "dropout-keep-grid", "dropout-p-range", "generated-dropout",
          # p down to 1e-5 in every dtype; slices past 65 535; no per-call seed repeating in 2¹⁴ calls (24 bits)
          "dropout-tiny-p", "dropout-many-slices", "dropout-seed-space",
          # a row counter of 16 bits; a decode path restarting its RNG offset per key split
          "dropout-axis-periods")),
    Item("dropout-across-calls", "dropout draws from torch's generator: same seed same mask (whatever the grad "
                                 "mode: activation checkpointing recomputes the forward with grad under the RNG state "
                                 "its no_grad forward ran with), consecutive calls independent at every lag, the "
                                 "generator advanced, no mask repeated over thousands of calls; one keep mask for "
                                 "every output channel of a weight",
         f"{DOC}: dropout uses torch's RNG; {MEASURED}: consecutive masks uncorrelated at every lag",
         ("dropout-same-seed", "dropout-rng-advances", "dropout-cross-call-correlation", "dropout-distinct-masks",
          "generated-dropout", "fresh-process")),
)


def check_mapping(names=None) -> list[str]:
    """Problems with the mapping: items without a registered invariant, invariants serving no item."""
    from kernels.harness.invariants import INVARIANTS

    registered = {i.name for i in INVARIANTS} if names is None else set(names)
    problems = [f"item {it.name}: invariant {n} is not registered" for it in ITEMS for n in it.invariants
                if n not in registered]
    problems += [f"item {it.name} has no invariant" for it in ITEMS if not it.invariants]
    served = {n for it in ITEMS for n in it.invariants}
    problems += [f"invariant {n} serves no contract item" for n in sorted(registered - served)]
    return problems


def table() -> str:
    from kernels.harness.invariants import invariant_named

    lines = []
    for it in ITEMS:
        lines.append(f"{it.name}: {it.statement}\n  source: {it.source}")
        for n in it.invariants:
            lines.append(f"  -> {n}: {invariant_named(n).bug_classes}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
    for problem in check_mapping():
        print("MAPPING PROBLEM:", problem)
