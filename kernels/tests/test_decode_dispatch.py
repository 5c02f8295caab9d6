"""flash_attention hands forward-only decoding shapes to flash_decode when should_split says so.

On CPU should_split is always False (interpreted programs run one after another), so the
routing is forced here to see that it happens, gives the same answer, and never happens
when a gradient is needed.
"""
import torch

import kernels.decode
from kernels import flash_attention


def _inputs(requires_grad=False):
    g = torch.Generator().manual_seed(0)
    q = torch.randn(1, 4, 1, 32, generator=g, requires_grad=requires_grad)  # (B, Hq, Nq, D)
    k = torch.randn(1, 2, 150, 32, generator=g, requires_grad=requires_grad)  # (B, Hkv, Nk, D)
    v = torch.randn(1, 2, 150, 32, generator=g, requires_grad=requires_grad)  # (B, Hkv, Nk, D)
    return q, k, v


def _spy(monkeypatch, split):
    calls = []
    real = kernels.decode.flash_decode

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(kernels.decode, "should_split", lambda *a, **kw: split)
    monkeypatch.setattr(kernels.decode, "flash_decode", spy)
    return calls


def test_routes_decoding_to_split_kv_and_agrees(monkeypatch):
    q, k, v = _inputs()
    unsplit, lse_unsplit = flash_attention(q, k, v, enable_gqa=True, return_lse=True)
    calls = _spy(monkeypatch, True)
    routed, lse_routed = flash_attention(q, k, v, enable_gqa=True, return_lse=True)
    assert len(calls) == 1 and calls[0]["enable_gqa"] is True
    # One split on CPU: the same key loop, so the same numbers.
    torch.testing.assert_close(routed, unsplit, rtol=0, atol=0)
    torch.testing.assert_close(lse_routed, lse_unsplit, rtol=0, atol=0)


def test_never_routes_when_a_gradient_is_needed(monkeypatch):
    q, k, v = _inputs(requires_grad=True)
    calls = _spy(monkeypatch, True)
    out = flash_attention(q, k, v, enable_gqa=True)
    out.sum().backward()
    assert calls == [] and q.grad is not None


def test_does_not_route_when_should_split_declines(monkeypatch):
    q, k, v = _inputs()
    calls = _spy(monkeypatch, False)
    flash_attention(q, k, v, enable_gqa=True)
    assert calls == []


def test_never_routes_a_mask_or_dropout(monkeypatch):
    """Split-KV decoding has neither: calls with an attn_mask or dropout stay on flash_attention."""
    q, k, v = _inputs()
    calls = _spy(monkeypatch, True)
    flash_attention(q, k, v, attn_mask=torch.ones(q.shape[2], k.shape[2], dtype=torch.bool), enable_gqa=True)
    flash_attention(q, k, v, dropout_p=0.1, enable_gqa=True)
    assert calls == []
    flash_attention(q, k, v, dropout_p=0.0, enable_gqa=True)  # p = 0 is no dropout: routed
    assert len(calls) == 1
