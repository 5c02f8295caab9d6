"""Every Triton kernel of kernels/ compiles for an H100/H200 (sm_90) on this GPU-less machine.

Triton's NVIDIA backend (LLVM and its bundled ptxas) builds cubins without a GPU, so this
catches what the interpreter accepts and the compiler does not (dtype mismatches in tl.where,
non-constexpr aranges, uint arithmetic, Philox). Compiling needs triton imported without the
interpreter, hence a fresh process. Every constexpr switch a call can select is compiled both
ways: the forward and both backward kernels causal or not, with no mask, a bool mask or an
additive mask, with and without dropout, Dv = D and Dv ≠ D, head dim 256, in the three
dtypes, at the GPU's tile sizes; the preprocess kernel with and without an lse gradient;
split-KV decoding's two kernels.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

_PTR = {"float32": "*fp32", "float16": "*fp16", "bfloat16": "*bf16"}


def _attention_variants():
    """(name, kernel, argument types, constexprs, launch options) of the forward and backward."""
    variants = []
    # Each switch both ways across the list (about 3.5 s of CPU per kernel compiled).
    cases = {  # name: (dtype, causal, mask kind, dropout, D, Dv)
        "causal": ("bfloat16", True, 0, False, 128, 128),
        "bool-mask-dv-ne-d": ("float16", False, 1, False, 64, 128),
        "additive-mask-dropout": ("bfloat16", False, 2, True, 128, 128),
        "dropout-causal": ("float32", True, 0, True, 64, 64),
        "d256": ("bfloat16", False, 0, False, 256, 256),
    }
    for name, (dtype, causal, mask_kind, dropout, d, dv) in cases.items():
        ptr = _PTR[dtype]
        mask_ptr = {0: ptr, 1: "*u8", 2: "*fp32"}[mask_kind]
        scalars = dict(qk_scale="fp32", sm_scale="fp32", seed="i64", p_drop="fp32", keep_scale="fp32")
        tensors = dict(Q=ptr, K=ptr, V=ptr, O=ptr, DO=ptr, DQ=ptr, DK=ptr, DV=ptr, LSE2="*fp32", DELTA="*fp32",
                       MASK=mask_ptr)
        consts = dict(IS_CAUSAL=causal, MASK_KIND=mask_kind, DROPOUT=dropout, UPCAST=False,
                      DOT_PRECISION="ieee" if dtype == "float32" else "tf32", BLOCK_D=d, BLOCK_DV=dv)
        small = d >= 256 or dv >= 256
        fwd_tiles = dict(BLOCK_M=64 if small else 128, BLOCK_N=64)
        variants.append((f"forward-{name}-{dtype}", ("kernels.flash.forward", "_forward_kernel"),
                         dict(tensors, **scalars), dict(consts, **fwd_tiles),
                         dict(num_warps=4 if small else 8, num_stages=2 if small else 3)))
        for kernel in ("_dkdv_kernel", "_dq_kernel"):
            variants.append((f"backward{kernel[:-7]}-{name}-{dtype}", ("kernels.flash.backward", kernel),
                             dict(tensors, **scalars), dict(consts, BLOCK_M=64, BLOCK_N=64),
                             dict(num_warps=8 if not small else 4, num_stages=2)))
    for has_dlse in (False, True):
        variants.append((f"preprocess-dlse={has_dlse}", ("kernels.flash.backward", "_preprocess_kernel"),
                         dict(O="*bf16", DO="*bf16", DLSE="*fp32", DELTA="*fp32"),
                         dict(HAS_DLSE=has_dlse, BLOCK_DV=128, BLOCK_M=64), dict(num_warps=4)))
    return variants


def _decode_variants():
    ws = {"M_ws": "*fp32", "L_ws": "*fp32", "Acc_ws": "*fp32"}
    return [
        ("decode-partials", ("kernels.decode.kernel", "split_kv_partials"),
         dict(ws, Q="*bf16", K="*bf16", V="*bf16", qk_scale="fp32"),
         dict(GROUP=4, HEAD_DIM=80, HEAD_DIM_V=80, IS_CAUSAL=True, UPCAST=False, DOT_PRECISION="tf32",
              BLOCK_M=16, BLOCK_N=64, BLOCK_D=128, BLOCK_DV=128), dict(num_warps=4, num_stages=2)),
        ("decode-partials-dv-ne-d", ("kernels.decode.kernel", "split_kv_partials"),
         dict(ws, Q="*fp16", K="*fp16", V="*fp16", qk_scale="fp32"),
         dict(GROUP=1, HEAD_DIM=64, HEAD_DIM_V=200, IS_CAUSAL=False, UPCAST=False, DOT_PRECISION="tf32",
              BLOCK_M=16, BLOCK_N=32, BLOCK_D=64, BLOCK_DV=256), dict(num_warps=4, num_stages=2)),
        ("decode-combine", ("kernels.decode.kernel", "combine_partials"),
         dict(ws, Out="*bf16", Lse="*fp32"),
         dict(HEAD_DIM=128, BLOCK_R=4, BLOCK_S=32, BLOCK_D=64), dict(num_warps=4)),
    ]


VARIANTS = _attention_variants() + _decode_variants()


def compile_all() -> None:
    """Compile every variant for sm_90, printing one line per success (run without the interpreter)."""
    import importlib

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from triton.runtime.autotuner import Autotuner

    for name, (module, attr), types, constexprs, options in VARIANTS:
        fn = getattr(importlib.import_module(module), attr)
        fn = fn.fn if isinstance(fn, Autotuner) else fn  # the jitted function inside
        # Arguments not named in `types` are the int32 sizes and strides.
        signature = {n: "constexpr" if n in constexprs else types.get(n, "i32") for n in fn.arg_names}
        src = ASTSource(fn, signature, constexprs=constexprs)
        triton.compile(src, target=GPUTarget("cuda", 90, 32), options=options)
        print("compiled", name, flush=True)


@pytest.mark.slow
def test_every_kernel_variant_compiles_for_sm90():
    pytest.importorskip("triton.backends.nvidia", reason="this Triton build has no NVIDIA backend")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    code = "from kernels.tests.test_flash_compile import compile_all\ncompile_all()\n"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=900,
                          cwd=Path(__file__).resolve().parents[2])
    compiled = {line.split(" ", 1)[1] for line in proc.stdout.splitlines() if line.startswith("compiled ")}
    missing = [name for name, *_ in VARIANTS if name not in compiled]
    assert proc.returncode == 0 and not missing, f"not compiled: {missing}\n{proc.stderr[-3000:]}"


def test_the_variant_list_covers_every_kernel_and_switch():
    """Every @triton.jit kernel launched by kernels/ is listed, and each constexpr switch is
    compiled both ways."""
    kernels = {(module, attr) for _, (module, attr), *_ in VARIANTS}
    assert kernels == {("kernels.flash.forward", "_forward_kernel"), ("kernels.flash.backward", "_dkdv_kernel"),
                       ("kernels.flash.backward", "_dq_kernel"), ("kernels.flash.backward", "_preprocess_kernel"),
                       ("kernels.decode.kernel", "split_kv_partials"), ("kernels.decode.kernel", "combine_partials")}
    forward = [c for _, (_, attr), _, c, _ in VARIANTS if attr == "_forward_kernel"]
    assert {c["MASK_KIND"] for c in forward} == {0, 1, 2}
    assert {c["DROPOUT"] for c in forward} == {False, True} and {c["IS_CAUSAL"] for c in forward} == {False, True}
    assert any(c["BLOCK_D"] != c["BLOCK_DV"] for c in forward)
