"""Thin adapters: each library's attention behind SDPA's signature, with what the library supports.

Every adapter is ``impl(q, k, v, *, is_causal=False, scale=None, enable_gqa=False)`` on torch tensors
laid out (B, H, N, D), the harness's calling convention. It maps those arguments to the library's own
convention (layout, scale, mask polarity, causal alignment) and nothing more: the attention itself,
the masking and the scaling are the library's. What the library cannot express the adapter refuses
with :class:`Unsupported`, which the survey reports as "not applicable", never as a failure.

Each :class:`Peer` states where its facts come from (the library's documentation or source) so a
reader can check the adapter against them.
"""
from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import math
import os
from dataclasses import dataclass, field
from typing import Callable

import torch

TOP_LEFT, BOTTOM_RIGHT = "top-left", "bottom-right"
ALL_DTYPES = ("float32", "float16", "bfloat16")


class Unsupported(NotImplementedError):
    """The library has no way to express this argument (e.g. no explicit scale): not applicable."""


def _refuse_mask_gradient(attn_mask) -> None:
    """The bridges below carry gradients for q, k and v only: a mask that asks for one is refused
    (a limit of the adapter; JAX's bias and tinygrad's mask are differentiable in their own library)."""
    if attn_mask is not None and attn_mask.requires_grad and torch.is_grad_enabled():
        raise Unsupported("this adapter bridges gradients for q, k and v only, not for an attn_mask that requires grad")


@dataclass(frozen=True)
class Peer:
    name: str
    library: str  # the distribution whose version the table quotes
    build: Callable[[], Callable]  # imports the library and returns the SDPA-shaped adapter
    layout: str  # the library's own tensor layout
    causal: str | None  # TOP_LEFT, BOTTOM_RIGHT (judged by causal-mask-bottom-right) or None (no causal)
    backward: bool
    value_dim: bool = True  # a value head dim Dv != D
    dtypes: tuple[str, ...] = ALL_DTYPES
    scale: str = "explicit"  # "explicit", or why not
    mask: str = ""  # how the adapter tells the library which keys are visible
    source: str = ""  # where the facts above are documented
    needs: tuple[str, ...] = ()  # import names that must be installed
    env: dict = field(default_factory=dict)  # environment the library reads at import (Keras' backend)
    limits: tuple[str, ...] = ()  # what the library lacks (its checks are not applicable), with the source
    # CPU seconds of the whole default run as measured on 2026-11-30 (x86_64, one thread): only the
    # order in which the survey starts the peers (longest first, so two workers finish together)
    cpu_s: float = 10.0

    def installed(self) -> bool:
        return all(importlib.util.find_spec(m) is not None for m in self.needs)

    def version(self) -> str:
        try:
            return importlib.metadata.version(self.library)
        except importlib.metadata.PackageNotFoundError:
            return "not installed"


def _check_heads(q, k, enable_gqa):
    if q.shape[1] != k.shape[1] and not enable_gqa:
        raise ValueError(f"q has {q.shape[1]} heads and k {k.shape[1]}: pass enable_gqa=True for GQA")


def _scale_or_default(scale, head_dim):
    return 1.0 / math.sqrt(head_dim) if scale is None else scale


# ============================================================== torch SDPA and FlexAttention
# wrapped once, in kernels.harness.peers (the harness's own false-alarm survey judges the same wrappers)


def _sdpa_backend(backend_name: str):
    from kernels.harness.peers import sdpa_backend

    return sdpa_backend(backend_name, dropout=False)  # surveyed without dropout, as every peer here


def _flex():
    from kernels.harness.peers import flex_eager

    return flex_eager


# ============================================================== JAX (and Keras on JAX): the bridge


def _to_jax(t: torch.Tensor):
    import jax.dlpack

    return jax.dlpack.from_dlpack(t.detach().contiguous())


def _to_torch(a) -> torch.Tensor:
    return torch.from_dlpack(a).clone()  # clone: own the memory, JAX may reuse its buffer


def _bthd(t: torch.Tensor) -> torch.Tensor:
    return t.transpose(1, 2)  # (B, H, N, D) <-> (B, N, H, D)


def _jax_autograd(fn, jit: bool = True):
    """A torch function of (q, k, v[, mask]) computed by ``fn(q, k, v, mask)`` on JAX arrays laid out
    (B, N, H, D); the mask (a JAX array or None) is passed through, never differentiated.

    Backward runs ``jax.vjp`` of the same fn, so the gradients are JAX's, not torch's. Both are
    jitted (op-by-op dispatch compiles every primitive for every new shape, ~10× slower here),
    except where ``jit`` is False: float16, which jax 0.10.2 cannot jit on CPU (FINDINGS.md, 6)."""
    import jax

    maybe_jit = jax.jit if jit else (lambda f: f)
    forward = maybe_jit(fn)
    backward = maybe_jit(lambda q, k, v, m, dout: jax.vjp(lambda q, k, v: fn(q, k, v, m), q, k, v)[1](dout))

    class Bridge(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v, m):  # (B, H, N, D) each
            ctx.inputs = tuple(_to_jax(_bthd(t)) for t in (q, k, v)) + (m,)
            return _bthd(_to_torch(forward(*ctx.inputs)))  # (B, Hq, Nq, D)

        @staticmethod
        def backward(ctx, dout):
            grads = backward(*ctx.inputs, _to_jax(_bthd(dout)))
            return tuple(_bthd(_to_torch(g)) for g in grads) + (None,)

    def call(q, k, v, m=None):
        if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
            return Bridge.apply(q, k, v, m)
        return _bthd(_to_torch(forward(*(_to_jax(_bthd(t)) for t in (q, k, v)), m)))

    return call


def _jittable(q: torch.Tensor) -> bool:
    """jax 0.10.2's dot_product_attention asks for the F16_F16_F32 dot algorithm, which XLA's CPU
    backend refuses; its try/except fallback to the default precision works op by op but not under
    jax.jit, where the refusal comes at lowering, outside the try (FINDINGS.md, 6). float16 therefore
    runs op by op: the library's own fallback path, which is what a user without jit gets."""
    return q.dtype != torch.float16


def _jax_mask(attn_mask, q):
    """SDPA's attn_mask for JAX: boolean (True = attend, as jax's ``mask``) or additive (``bias``),
    both broadcast to 4-D with heads on axis 1, as JAX asks ((B|1, N|1, T, S))."""
    if attn_mask is None:
        return None, None
    _refuse_mask_gradient(attn_mask)
    m = attn_mask
    while m.dim() < 4:
        m = m.unsqueeze(0)
    return ("mask" if m.dtype == torch.bool else "bias"), _to_jax(m)


def _jax():
    import jax

    jax.config.update("jax_platforms", "cpu")

    @functools.lru_cache(maxsize=None)
    def bridged(scale, is_causal, mask_kind, jit):  # one jitted function per static setting, compiled once per shape
        def fn(q, k, v, m=None):
            extra = {} if mask_kind is None else {mask_kind: m}
            return jax.nn.dot_product_attention(q, k, v, scale=scale, is_causal=is_causal, **extra)
        return _jax_autograd(fn, jit)

    def jax_sdpa(q, k, v, *, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
        _check_heads(q, k, enable_gqa)  # JAX infers GQA from the head counts; SDPA asks for the flag
        kind, m = _jax_mask(attn_mask, q)
        return bridged(scale, bool(is_causal), kind, _jittable(q))(q, k, v, m)

    return jax_sdpa


# ============================================================== Hugging Face transformers (Llama)


@functools.lru_cache(maxsize=32)
def _llama_module(q_heads: int, kv_heads: int, head_dim: int):
    """The LlamaAttention module the model passes as ``module`` (num_key_value_groups, scaling, ...)."""
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaAttention

    config = LlamaConfig(hidden_size=q_heads * head_dim, num_attention_heads=q_heads, num_key_value_heads=kv_heads,
                         head_dim=head_dim, attention_dropout=0.0)
    return LlamaAttention(config, layer_idx=0).eval()


def _hf_custom_mask(attn_mask: torch.Tensor, kind: str, dtype: torch.dtype, is_causal: bool) -> torch.Tensor:
    """SDPA's attn_mask as the model passes a custom 4-D mask to its attention function.

    masking_utils._preprocess_mask_arguments: a 4-D attention_mask "was already prepared, or it is
    custom" and is returned as-is, so the model adds no causal mask to it: is_causal with a mask has
    no counterpart (refused; the harness accepts a refusal of that combination). The sdpa path
    hands the mask to SDPA (boolean, True = attend, or additive); the eager path adds it to the
    scores, so a boolean mask becomes what masking_utils.eager_mask makes of sdpa_mask's boolean one:
    torch.where(mask, 0, torch.finfo(dtype).min)."""
    if is_causal:
        raise Unsupported("a custom 4-D mask is passed as-is: the model adds no causal mask to it")
    m = attn_mask
    while m.dim() < 4:  # the model's masks are 4-D: (B|1, H|1, Nq, Nk)
        m = m.unsqueeze(0)
    if kind == "eager" and m.dtype == torch.bool:
        m = torch.where(m, torch.zeros((), dtype=dtype), torch.finfo(dtype).min)
    return m


def _hf(kind: str):
    """transformers' eager or sdpa attention function, called as LlamaAttention.forward calls it.

    The mask is the one the model builds: transformers.masking_utils puts query i at cache position
    q_offset + i with q_offset = Nk - Nq (the keys of earlier steps are in the cache), so the model's
    causal alignment is bottom-right. eager gets an additive float mask (eager_mask); sdpa gets
    sdpa_mask's boolean mask, or None where sdpa_mask says is_causal may be used instead. An
    attn_mask goes in as the model passes a custom 4-D mask (_hf_custom_mask)."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward
    from transformers.masking_utils import eager_mask, sdpa_mask
    from transformers.models.llama.modeling_llama import eager_attention_forward

    def hf(q, k, v, *, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
        _check_heads(q, k, enable_gqa)
        module = _llama_module(q.shape[1], k.shape[1], q.shape[-1])
        b, n_q, n_k = q.shape[0], q.shape[-2], k.shape[-2]
        if n_q > n_k and is_causal:
            raise Unsupported("the model's queries are the last Nq of the Nk keys: Nq > Nk has no meaning")
        scaling = module.scaling if scale is None else scale  # the model passes scaling=self.scaling
        if attn_mask is not None:
            mask = _hf_custom_mask(attn_mask, kind, q.dtype, is_causal)
        elif kind == "eager":
            mask = eager_mask(b, n_q, n_k, q_offset=n_k - n_q, dtype=q.dtype) if is_causal else None
        else:
            mask = sdpa_mask(b, n_q, n_k, q_offset=n_k - n_q) if is_causal else None
        if kind == "eager":
            out, _ = eager_attention_forward(module, q, k, v, mask, scaling=scaling, dropout=0.0)
        else:
            # is_causal: the module's flag (a causal decoder); a bidirectional model's module says False.
            out, _ = sdpa_attention_forward(module, q, k, v, mask, scaling=scaling, dropout=0.0, is_causal=is_causal)
        return out.transpose(1, 2)  # the functions return (B, Nq, Hq, D)

    hf.__qualname__ = f"transformers-{kind}"
    return hf


# ============================================================== ONNX Runtime: the ONNX Attention op


def _onnx():
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    elem = {torch.float32: TensorProto.FLOAT, torch.float16: TensorProto.FLOAT16}

    @functools.lru_cache(maxsize=256)
    def session(dtype, q_shape, k_shape, v_shape, mask, is_causal, scale):
        """mask: None, or (its element type, its shape): the op's optional fourth input."""
        attrs = {"is_causal": int(is_causal)}
        if scale is not None:
            attrs["scale"] = float(scale)
        t = elem[dtype]
        inputs = [helper.make_tensor_value_info(name, t, list(shape))
                  for name, shape in zip("QKV", (q_shape, k_shape, v_shape))]
        if mask is not None:
            inputs.append(helper.make_tensor_value_info("M", TensorProto.BOOL if mask[0] == torch.bool else t,
                                                        list(mask[1])))
        node = helper.make_node("Attention", [i.name for i in inputs], ["Y"], **attrs)
        out_shape = list(q_shape[:-1]) + [v_shape[-1]]
        graph = helper.make_graph([node], "attention", inputs, [helper.make_tensor_value_info("Y", t, out_shape)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
        model.ir_version = 10
        onnx.checker.check_model(model)
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])

    def onnx_attention(q, k, v, *, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
        """attn_mask is the op's attn_mask input, as SDPA's: boolean True = attend, or a float mask of
        q's type added to the scores, broadcastable to (B, Hq, Nq, Nk); the spec composes it with
        is_causal by summing the two biases."""
        _check_heads(q, k, enable_gqa)  # the op infers GQA from the head counts
        if q.dtype not in elem:
            raise Unsupported(f"{q.dtype}: ONNX Runtime's CPU provider cannot build a session for it "
                              "(NOT_IMPLEMENTED: no implementation for Expand(13))")
        mask = None if attn_mask is None else (attn_mask.dtype, tuple(attn_mask.shape))
        s = session(q.dtype, tuple(q.shape), tuple(k.shape), tuple(v.shape), mask, bool(is_causal), scale)
        tensors = (q, k, v) if attn_mask is None else (q, k, v, attn_mask)
        feeds = {name: np.ascontiguousarray(t.detach().numpy()) for name, t in zip("QKVM", tensors)}
        return torch.from_numpy(s.run(["Y"], feeds)[0])

    return onnx_attention


# ============================================================== tinygrad


def _newest_clang() -> str | None:
    """tinygrad's CPU backend compiles C with $CC (default clang); bfloat16 needs clang >= 15
    (Debian 12's clang 14 rejects __bf16 on x86), so prefer the newest clang installed."""
    import shutil

    for name in ("clang-21", "clang-20", "clang-19", "clang-18", "clang-17", "clang-16", "clang-15", "clang"):
        if shutil.which(name):
            return name
    return None


def _tinygrad():
    if "CC" not in os.environ and _newest_clang():
        os.environ["CC"] = _newest_clang()
    import numpy as np
    from tinygrad import Tensor, dtypes

    torch_dtype = {dtypes.float32: torch.float32, dtypes.float16: torch.float16, dtypes.bfloat16: torch.bfloat16}

    def out_dtype(x):
        return torch_dtype[x.dtype]

    def to_tiny(t: torch.Tensor):
        if t.dtype == torch.bfloat16:  # NumPy has no bfloat16: carry the bits
            return Tensor(t.detach().view(torch.int16).numpy()).bitcast(dtypes.bfloat16)
        return Tensor(np.ascontiguousarray(t.detach().numpy()))

    def to_torch(x, dtype) -> torch.Tensor:
        if dtype == torch.bfloat16:
            return torch.from_numpy(x.bitcast(dtypes.int16).numpy().copy()).view(torch.bfloat16)
        return torch.from_numpy(x.numpy().copy())

    def forward(q, k, v, m, is_causal, enable_gqa):
        return q.scaled_dot_product_attention(k, v, attn_mask=m, is_causal=is_causal, enable_gqa=enable_gqa)

    def to_tiny_mask(m):
        if m is None:
            return None
        _refuse_mask_gradient(m)
        if m.dtype == torch.bool:  # tinygrad: boolean True = attend, as SDPA
            return Tensor(m.numpy()).cast(dtypes.bool)
        return to_tiny(m)

    class Bridge(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v, m, is_causal, enable_gqa):
            leaves = [to_tiny(t) for t in (q, k, v)]
            out = forward(*leaves, m, is_causal, enable_gqa)
            ctx.saved = (leaves, out)
            return to_torch(out, q.dtype)

        @staticmethod
        def backward(ctx, dout):
            leaves, out = ctx.saved
            grads = out.gradient(*leaves, gradient=to_tiny(dout.to(out_dtype(out)).contiguous()))
            return tuple(to_torch(g, dout.dtype) for g in grads) + (None, None, None)

    def tinygrad_sdpa(q, k, v, *, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
        _check_heads(q, k, enable_gqa)
        if scale is not None:
            raise Unsupported("Tensor.scaled_dot_product_attention has no scale argument: it divides by √D")
        m = to_tiny_mask(attn_mask)
        if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
            return Bridge.apply(q, k, v, m, is_causal, enable_gqa)
        return to_torch(forward(*(to_tiny(t) for t in (q, k, v)), m, is_causal, enable_gqa), q.dtype)

    return tinygrad_sdpa


# ============================================================== Keras 3: keras.ops.dot_product_attention


def _keras(backend: str):
    if os.environ.get("KERAS_BACKEND") != backend:
        raise RuntimeError(f"Keras reads its backend once, at import: run with KERAS_BACKEND={backend} "
                           "(the survey runs each peer in its own process)")
    import keras

    def call(q, k, v, m=None, *, scale, is_causal, mask_kind):  # (B, N, H, D) each, Keras' layout
        extra = {} if mask_kind is None else {mask_kind: m}  # mask: boolean, True = attend; bias: additive
        return keras.ops.dot_product_attention(q, k, v, scale=scale, is_causal=is_causal, **extra)

    if backend == "jax":
        @functools.lru_cache(maxsize=None)
        def bridged(scale, is_causal, mask_kind, jit):
            return _jax_autograd(functools.partial(call, scale=scale, is_causal=is_causal, mask_kind=mask_kind), jit)

        def keras_sdpa(q, k, v, *, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
            _check_heads(q, k, enable_gqa)
            kind, m = _jax_mask(attn_mask, q)
            return bridged(scale, bool(is_causal), kind, _jittable(q))(q, k, v, m)
    else:
        def keras_sdpa(q, k, v, *, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
            _check_heads(q, k, enable_gqa)
            kind = None if attn_mask is None else ("mask" if attn_mask.dtype == torch.bool else "bias")
            return _bthd(call(_bthd(q), _bthd(k), _bthd(v), attn_mask, scale=scale, is_causal=is_causal,
                              mask_kind=kind))

    keras_sdpa.__qualname__ = f"keras-{backend}"
    return keras_sdpa


# ============================================================== the catalogue

_SDPA_DOC = ("torch.nn.functional.scaled_dot_product_attention docs: is_causal is a lower-triangular mask "
             "torch.ones(L, S).tril(diagonal=0), top-left aligned when L != S")

_JAX_DV = ("Dv != D: jax.nn.dot_product_attention docs: 'value: value array, should have the same shape as "
           "the key array' (those cases run with Dv = D)")
_JAX_FP16 = ("float16: run op by op, not under jax.jit, which raises on CPU (FINDINGS.md, 6: a defect of "
             "jax 0.10.2)")
_HF_MASK = ("attn_mask with is_causal: a custom 4-D mask is passed as-is (masking_utils._preprocess_mask_arguments), "
            "the model adds no causal mask to it (the adapter refuses the combination)")
_HF_LIMIT = ("causal with Nq > Nk: the model's queries are the newest Nq of its Nk keys (bottom-right claim's "
             "premise Nq <= Nk)")

PEERS: tuple[Peer, ...] = (
    Peer("torch-sdpa-math", "torch", lambda: _sdpa_backend("MATH"), "(B, H, N, D)", TOP_LEFT, True,
         mask="is_causal", source=_SDPA_DOC, needs=("torch",)),
    Peer("torch-sdpa-flash", "torch", lambda: _sdpa_backend("FLASH_ATTENTION"), "(B, H, N, D)", TOP_LEFT, True,
         value_dim=False, mask="is_causal", source=_SDPA_DOC, needs=("torch",),
         limits=("Dv != D: the CPU flash backend raises 'No available kernel. Aborting execution.' (observed; those "
                 "cases run with Dv = D)",)),
    Peer("torch-flex-eager", "torch", _flex, "(B, H, N, D)", TOP_LEFT, False,
         mask="block_mask from mask_mod q_idx >= kv_idx; attn_mask: boolean as a mask_mod, additive as a score_mod",
         source="torch.nn.attention.flex_attention docs: the causal mask_mod example `return q_idx >= kv_idx`",
         needs=("torch",),
         limits=("backward: eager flex_attention raises 'FlexAttention does not support backward on CPU.'",),
         cpu_s=85),
    Peer("jax", "jax", _jax, "(B, N, H, D)", TOP_LEFT, True, value_dim=False,
         mask="is_causal; attn_mask: boolean as mask (True = attend), additive as bias",
         source="jax.nn.dot_product_attention docs (query BTNH; scale None = 1/sqrt(H)); "
                "is_causal: jax/_src/nn/functions.py _get_causal_mask = jnp.tril(jnp.ones((T, S)))",
         needs=("jax",), limits=(_JAX_DV, _JAX_FP16), cpu_s=350),
    Peer("transformers-eager", "transformers", lambda: _hf("eager"), "in (B, H, N, D), out (B, N, H, D)",
         BOTTOM_RIGHT, True, mask="additive float mask from masking_utils.eager_mask, q_offset = Nk - Nq; attn_mask: "
         "a custom 4-D mask, boolean turned additive with finfo.min as eager_mask does",
         source="transformers.models.llama.modeling_llama.eager_attention_forward; masking_utils."
                "causal_mask_function: kv_idx <= q_idx at cache positions",
         needs=("transformers",), limits=(_HF_LIMIT, _HF_MASK)),
    Peer("transformers-sdpa", "transformers", lambda: _hf("sdpa"), "in (B, H, N, D), out (B, N, H, D)",
         BOTTOM_RIGHT, True, mask="boolean mask from masking_utils.sdpa_mask (None: is_causal), q_offset = Nk - Nq; "
         "attn_mask: a custom 4-D mask, as-is",
         source="transformers.integrations.sdpa_attention.sdpa_attention_forward; masking_utils.sdpa_mask",
         needs=("transformers",), limits=(_HF_LIMIT, _HF_MASK)),
    Peer("onnxruntime-attention", "onnxruntime", _onnx, "(B, H, N, D)", TOP_LEFT, False,
         dtypes=("float32", "float16"), mask="is_causal attribute, no past_key; attn_mask: the op's attn_mask input",
         source="ONNX Attention (opset 23) spec: is_causal: query i attends key j iff j <= i + "
                "past_sequence_length; no past_key here, so j <= i (top-left)",
         needs=("onnxruntime", "onnx"),
         limits=("backward: an inference runtime (forward only)",
                 "bfloat16: not run; a bfloat16 Attention model fails at session creation: 'NOT_IMPLEMENTED : "
                 "Could not find an implementation for Expand(13) node'")),
    Peer("tinygrad", "tinygrad", _tinygrad, "(B, H, N, D)", TOP_LEFT, True,
         scale="none: the function always divides by sqrt(D)",
         mask="is_causal (ones.tril()); attn_mask: boolean (True = attend) or additive, as SDPA",
         source="tinygrad Tensor.scaled_dot_product_attention(key, value, attn_mask, dropout_p, is_causal, "
                "enable_gqa): no scale parameter",
         needs=("tinygrad",), limits=("explicit scale: the function has no scale parameter",), cpu_s=120),
    Peer("keras-jax", "keras", lambda: _keras("jax"), "(B, N, H, D)", TOP_LEFT, True, value_dim=False,
         mask="is_causal; attn_mask: boolean as mask (True = attend), additive as bias",
         source="keras.ops.dot_product_attention docs (query [batch, time, heads, depth]); JAX backend",
         needs=("keras", "jax"), env={"KERAS_BACKEND": "jax"},
         limits=("Dv != D: the JAX backend calls jax.nn.dot_product_attention (" + _JAX_DV + ")", _JAX_FP16),
         cpu_s=350),
    Peer("keras-torch", "keras", lambda: _keras("torch"), "(B, N, H, D)", TOP_LEFT, True,
         mask="is_causal; attn_mask: boolean as mask (True = attend), additive as bias",
         source="keras.ops.dot_product_attention docs (query [batch, time, heads, depth]); torch backend",
         needs=("keras",), env={"KERAS_BACKEND": "torch"}),
)

BY_NAME = {p.name: p for p in PEERS}


def peer(name: str) -> Peer:
    if name not in BY_NAME:
        raise ValueError(f"unknown implementation {name!r}; choose from {', '.join(BY_NAME)}")
    return BY_NAME[name]
