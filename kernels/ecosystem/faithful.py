"""Is an adapter faithful? The library's output against float64 attention under the adapter's declared
semantics (layout, scale, GQA, causal alignment), before the survey judges the library by it.

Two kinds of evidence, both in float32:
- exact: with one key every softmax weight is exactly 1, so the output must equal that key's value
  bit for bit, whatever the library's arithmetic. A wrong layout, head mapping or transpose moves
  values to other places and is caught exactly;
- within the harness's tolerance rule: non-causal, causal in the declared alignment, an explicit
  scale (where the library has one) and GQA, on shapes whose every dimension differs (B=2, H=4,
  Hkv=2, Nq=7, Nk=11, D=16), so a swapped axis cannot go unnoticed.

``python -m kernels.ecosystem.faithful NAME`` prints the problems (none: exit 0); the tests run it in
a process of its own for peers that need an environment (Keras' backend).
"""
from __future__ import annotations

import inspect
import sys

import torch

from kernels.ecosystem import bottom_right
from kernels.ecosystem.adapters import BOTTOM_RIGHT, Peer, Unsupported, peer
from kernels.harness import reference as ref
from kernels.harness import tolerance as tol

B, HQ, HKV, NQ, NK, D = 2, 4, 2, 7, 11, 16


def _inputs(n_k=NK, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, HQ, NQ, D, generator=g)
    k = torch.randn(B, HKV, n_k, D, generator=g)
    v = torch.randn(B, HKV, n_k, D, generator=g)
    return q, k, v


def _golden(alignment, q, k, v, *, is_causal, scale):
    if is_causal and alignment == BOTTOM_RIGHT:
        gold = bottom_right.attention(q.double(), k.double(), v.double(), scale=scale, enable_gqa=True)
        plain = bottom_right.attention(q, k, v, scale=scale, enable_gqa=True)
    else:
        kw = dict(is_causal=is_causal, scale=scale, enable_gqa=True)
        gold, plain = ref.attention64(q, k, v, **kw), ref.attention(q, k, v, **kw)
    return gold, tol.max_abs_error(plain, gold)


def problems(impl, alignment: str | None, *, explicit_scale: bool = True) -> list[str]:
    """What is wrong with ``impl`` as an SDPA-shaped adapter (empty: faithful)."""
    found = []
    q, k, v = _inputs(n_k=1)
    with torch.no_grad():
        out = impl(q, k, v, is_causal=False, scale=None, enable_gqa=True)
    expected = ref.repeat_kv(v, HQ).expand(B, HQ, NQ, D)  # the one value, for every query
    if tuple(out.shape) != (B, HQ, NQ, D):
        return [f"one key: output shape {tuple(out.shape)}, expected {(B, HQ, NQ, D)}"]
    if not torch.equal(out, expected):
        found.append(f"one key: output is not exactly the key's value (max diff {(out - expected).abs().max():.3g})")
    q, k, v = _inputs()
    settings = [dict(is_causal=False, scale=None)]
    if alignment is not None:
        settings.append(dict(is_causal=True, scale=None))
    if explicit_scale:
        settings.append(dict(is_causal=alignment is not None, scale=0.3))
    for kw in settings:
        with torch.no_grad():
            out = impl(q, k, v, enable_gqa=True, **kw)
        gold, err = _golden(alignment, q, k, v, **kw)
        disc, bound = tol.max_abs_error(out, gold), tol.bound(torch.float32, err, gold)
        if not disc <= bound:
            found.append(f"{kw}: error {disc:.3g} > bound {bound:.3g}")
    if "attn_mask" in inspect.signature(impl).parameters:
        found += _mask_problems(impl, q, k, v)
    return found


def _mask_problems(impl, q, k, v) -> list[str]:
    """SDPA's attn_mask: boolean True = attend (per batch and head) and additive float (broadcast
    over heads), against float64; a flipped polarity or a mask on the wrong axis fails."""
    g = torch.Generator().manual_seed(1)
    keep = torch.rand(B, HQ, NQ, NK, generator=g) < 0.6
    keep[..., 0] = True  # no empty row: the harness judges those on its own
    masks = (keep, 2 * torch.randn(B, 1, NQ, NK, generator=g))
    found = []
    for m in masks:
        with torch.no_grad():
            out = impl(q, k, v, attn_mask=m, enable_gqa=True)
        kw = dict(attn_mask=m, enable_gqa=True)
        gold, plain = ref.attention64(q, k, v, **kw), ref.attention(q, k, v, **kw)
        disc, bound = tol.max_abs_error(out, gold), tol.bound(torch.float32, tol.max_abs_error(plain, gold), gold)
        if not disc <= bound:
            found.append(f"attn_mask {m.dtype} {tuple(m.shape)}: error {disc:.3g} > bound {bound:.3g}")
    return found


def peer_problems(p: Peer) -> list[str]:
    impl = p.build()
    explicit = True
    try:
        impl(*_inputs(), scale=0.3, enable_gqa=True)
    except Unsupported:
        explicit = False
    return problems(impl, p.causal, explicit_scale=explicit)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    found = peer_problems(peer(argv[0]))
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    from kernels.ecosystem import exit_without_teardown

    exit_without_teardown(main())
