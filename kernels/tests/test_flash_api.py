"""flash_attention refuses bad input with a TypeError/ValueError naming the argument, before any launch."""
import pytest
import torch

from kernels import flash_attention


def _qkv(b=1, hq=2, hkv=2, nq=8, nk=8, d=16, dtype=torch.float32):
    return torch.randn(b, hq, nq, d).to(dtype), torch.randn(b, hkv, nk, d).to(dtype), torch.randn(b, hkv, nk, d).to(dtype)


def _call(q=None, k=None, v=None, **kwargs):
    dq, dk, dv = _qkv()
    return flash_attention(dq if q is None else q, dk if k is None else k, dv if v is None else v, **kwargs)


BAD = {
    # name: (call, exception, words the message must contain)
    "q-not-a-tensor": (lambda: _call(q=[[1.0]]), TypeError, ["q", "torch.Tensor"]),
    # q, k, v of one rank >= 2 (SDPA's (..., L, E)), leading dims that broadcast; a mask of at most q's rank
    "q-1d": (lambda: _call(*(t[0, 0, 0] for t in _qkv())), ValueError, ["q", "(16,)", "rank >= 2"]),
    "mask-over-rank-2": (lambda: _call(*(t[0, 0] for t in _qkv()), attn_mask=torch.ones(1, 8, 8, dtype=torch.bool)),
                         ValueError, ["attn_mask", "3 dims", "rank 2"]),
    "q-3d-beside-4d": (lambda: _call(q=torch.randn(2, 8, 16)), ValueError, ["q", "rank 3", "rank 4"]),
    "k-3d-beside-4d": (lambda: _call(k=torch.randn(2, 8, 16)), ValueError, ["k", "rank 3", "rank 4"]),
    # leading dims broadcast as SDPA's do (test_batch_dims_broadcast_as_sdpa_does); these do not
    "k-leading-dims-differ": (lambda: _call(torch.randn(2, 3, 2, 8, 16), torch.randn(2, 2, 2, 8, 16),
                                            torch.randn(2, 2, 2, 8, 16)), ValueError, ["k", "(2, 3)", "(2, 2)",
                                                                                       "do not broadcast"]),
    "mask-over-rank-3": (lambda: _call(*(t[0] for t in _qkv()), attn_mask=torch.ones(1, 2, 8, 8, dtype=torch.bool)),
                         ValueError, ["attn_mask", "4 dims", "rank 3"]),
    "mask-leading-dim-over-rank-5": (lambda: _call(*(t.unsqueeze(0).expand(3, -1, -1, -1, -1) for t in _qkv()),
                                                   attn_mask=torch.ones(2, 1, 1, 1, 8, dtype=torch.bool)),
                                     ValueError, ["attn_mask", "(2, 1)", "(3, 1)"]),
    "q-integer": (lambda: _call(q=torch.ones(1, 2, 8, 16, dtype=torch.int32)), TypeError, ["q", "int32"]),
    "v-integer": (lambda: _call(v=torch.ones(1, 2, 8, 16, dtype=torch.int64)), TypeError, ["v", "int64"]),
    "q-float64": (lambda: _call(*_qkv(dtype=torch.float64)), TypeError, ["q", "float64"]),
    "k-dtype-mismatch": (lambda: _call(k=_qkv(dtype=torch.float16)[1]), TypeError, ["k", "float16"]),
    "v-device-mismatch": (lambda: _call(v=_qkv()[2].to("meta")), ValueError, ["v", "meta"]),
    "q-on-meta": (lambda: _call(*(t.to("meta") for t in _qkv())), ValueError, ["q", "meta"]),
    "k-batch-mismatch": (lambda: _call(_qkv(b=2)[0], _qkv(b=3)[1], _qkv(b=3)[2]), ValueError, ["k", "batch", "(3,)"]),
    "k-head-dim-mismatch": (lambda: _call(k=_qkv(d=32)[1]), ValueError, ["k", "head dim"]),
    "v-head-dim-over-256": (lambda: _call(v=torch.randn(1, 2, 8, 288)), ValueError, ["v", "head dim", "256"]),
    "v-length-mismatch": (lambda: _call(v=_qkv(nk=9)[2]), ValueError, ["v", "seq_len"]),
    "head-dim-over-256": (lambda: _call(*_qkv(d=288)), ValueError, ["q", "head dim", "256"]),
    "heads-differ-without-gqa": (lambda: _call(*_qkv(hq=4, hkv=2)), ValueError, ["enable_gqa"]),
    "heads-not-a-multiple": (lambda: _call(*_qkv(hq=3, hkv=2), enable_gqa=True), ValueError, ["multiple"]),
    "empty-query-sequence": (lambda: _call(*_qkv(nq=0)), ValueError, ["q", "empty", "sequence length"]),
    "empty-key-sequence": (lambda: _call(*_qkv(nk=0)), ValueError, ["k", "empty", "sequence length"]),
    "empty-batch": (lambda: _call(*_qkv(b=0)), ValueError, ["q", "empty", "batch"]),
    "is-causal-not-bool": (lambda: _call(is_causal="yes"), TypeError, ["is_causal"]),
    "enable-gqa-not-bool": (lambda: _call(enable_gqa=1), TypeError, ["enable_gqa"]),
    "scale-not-a-number": (lambda: _call(scale="0.1"), TypeError, ["scale"]),
    "scale-infinite": (lambda: _call(scale=float("inf")), ValueError, ["scale"]),
    "return-lse-not-bool": (lambda: _call(return_lse=1), TypeError, ["return_lse"]),
    # attn_mask: SDPA's dtypes (bool, float32, q's), shapes that broadcast to (B, Hq, Nq, Nk)
    "mask-with-causal": (lambda: _call(attn_mask=torch.ones(8, 8, dtype=torch.bool), is_causal=True), ValueError,
                         ["attn_mask", "is_causal"]),
    "mask-not-a-tensor": (lambda: _call(attn_mask=[[True]]), TypeError, ["attn_mask", "list"]),
    "mask-integer": (lambda: _call(attn_mask=torch.ones(8, 8, dtype=torch.int32)), TypeError,
                     ["attn_mask", "int32"]),
    "mask-float64": (lambda: _call(attn_mask=torch.zeros(8, 8, dtype=torch.float64)), TypeError,
                     ["attn_mask", "float64"]),
    "mask-half-with-float32-q": (lambda: _call(attn_mask=torch.zeros(8, 8, dtype=torch.float16)), TypeError,
                                 ["attn_mask", "float16"]),
    "mask-wrong-key-length": (lambda: _call(attn_mask=torch.ones(8, 9, dtype=torch.bool)), ValueError,
                              ["attn_mask", "(8, 9)"]),
    "mask-wrong-heads": (lambda: _call(attn_mask=torch.ones(1, 3, 8, 8, dtype=torch.bool)), ValueError,
                         ["attn_mask", "broadcast"]),
    "mask-1d-wrong-key-length": (lambda: _call(attn_mask=torch.ones(9, dtype=torch.bool)), ValueError,
                                 ["attn_mask", "(9,)", "1 to 4"]),
    "mask-5d": (lambda: _call(attn_mask=torch.ones(1, 1, 1, 8, 8, dtype=torch.bool)), ValueError, ["attn_mask"]),
    "mask-on-meta": (lambda: _call(attn_mask=torch.ones(8, 8, dtype=torch.bool, device="meta")), ValueError,
                     ["attn_mask", "meta"]),
    "mask-requires-grad": (lambda: _call(attn_mask=torch.zeros(8, 8, requires_grad=True)), ValueError,
                           ["attn_mask", "grad"]),
    # dropout_p: a real number in [0, 1)
    "dropout-one": (lambda: _call(dropout_p=1.0), ValueError, ["dropout_p", "[0, 1)"]),
    "dropout-negative": (lambda: _call(dropout_p=-0.1), ValueError, ["dropout_p"]),
    "dropout-nan": (lambda: _call(dropout_p=float("nan")), ValueError, ["dropout_p"]),
    "dropout-string": (lambda: _call(dropout_p="0.1"), TypeError, ["dropout_p", "str"]),
    "dropout-bool": (lambda: _call(dropout_p=True), TypeError, ["dropout_p", "bool"]),
    "dropout-complex": (lambda: _call(dropout_p=0.1j), TypeError, ["dropout_p", "complex"]),
    # (a 0-d floating tensor is a number to SDPA and to flash_attention: test_zero_dim_tensor_numbers_are_taken)
    "dropout-tensor": (lambda: _call(dropout_p=torch.tensor([0.1])), TypeError, ["dropout_p", "Tensor"]),
}


def test_zero_dim_tensor_numbers_are_taken():
    """SDPA takes scale and dropout_p as 0-d tensors (measured, contract item argument-types); so does the kernel."""
    torch.manual_seed(0)
    a = _call(scale=torch.tensor(0.5, dtype=torch.float64), dropout_p=torch.tensor(0.25, dtype=torch.float64))
    torch.manual_seed(0)
    b = _call(scale=0.5, dropout_p=0.25)
    assert torch.equal(a, b)


@pytest.mark.parametrize("name", list(BAD))
def test_bad_input_names_the_argument(name):
    call, exc, words = BAD[name]
    with pytest.raises(exc) as info:
        call()
    message = str(info.value)
    for word in words:
        assert word in message, f"{name}: {word!r} not in {message!r}"


def test_good_input_passes_the_same_checks():
    """The table above is not refusing everything: the valid neighbours of its cases run."""
    q, k, v = _qkv(hq=4, hkv=2, nq=1, nk=1, d=256)
    assert flash_attention(q, k, v, enable_gqa=True, scale=0.5, is_causal=True).shape == q.shape
    q, k, v = _qkv()
    v_wide = torch.randn(1, 2, 8, 256)
    assert flash_attention(q, k, v_wide).shape == (1, 2, 8, 256)
    for mask in (torch.ones(8, 8, dtype=torch.bool), torch.zeros(8, 8), torch.zeros(8, 8).half(),
                 torch.ones(1, 2, 8, 8, dtype=torch.bool), torch.ones(1, 8, dtype=torch.bool),
                 torch.ones(2, 8, 1, dtype=torch.bool), torch.zeros(8, 8, requires_grad=True).detach()):
        if mask.dtype == torch.float16:
            assert flash_attention(q.half(), k.half(), v.half(), attn_mask=mask).shape == q.shape
        else:
            assert flash_attention(q, k, v, attn_mask=mask).shape == q.shape
    with torch.no_grad():  # a mask that requires grad is fine where no gradient is taken
        assert flash_attention(q, k, v, attn_mask=torch.zeros(8, 8, requires_grad=True)).shape == q.shape
    for p in (0.0, 0.5, 0.999, 0, torch.tensor(0.1).item()):
        assert flash_attention(q, k, v, dropout_p=p).shape == q.shape
    # SDPA's positional order: attn_mask, dropout_p, is_causal
    assert flash_attention(q, k, v, None, 0.0, True).equal(flash_attention(q, k, v, is_causal=True))


def test_rank_two_is_the_four_dim_call_of_one_head():
    """SDPA takes (N, D) q, k, v (measured, torch 2.13: rank 1 refused, 2 taken): one head of one entry, a mask of at
    most two dims; the output, lse and gradients equal the 4-D call's bit for bit."""
    torch.manual_seed(0)
    two = [torch.randn(n, d, requires_grad=True) for n, d in ((5, 8), (7, 8), (7, 6))]  # (N, D)
    four = [t.detach()[None, None].requires_grad_() for t in two]  # (1, 1, N, D)
    mask = torch.rand(5, 7) > 0.3
    out2, lse2 = flash_attention(*two, attn_mask=mask, return_lse=True)
    out4, lse4 = flash_attention(*four, attn_mask=mask, return_lse=True)
    assert out2.shape == (5, 6) and lse2.shape == (5,) and out2.equal(out4[0, 0]) and lse2.equal(lse4[0, 0])
    assert flash_attention(*two, is_causal=True).equal(flash_attention(*four, is_causal=True)[0, 0])
    dout = torch.randn_like(out2)
    out2.backward(dout)
    out4.backward(dout[None, None])
    for a, b in zip(two, four):
        assert a.grad.equal(b.grad[0, 0])


def test_ranks_three_and_five_are_the_four_dim_call():
    """SDPA takes q, k, v (..., L, E) of any rank >= 3: rank 3 is one batch entry (its dim -3 the heads
    enable_gqa groups), rank 5 flattens its two leading dims into the batch; the mask broadcasts to q's
    leading dims. Outputs, lse and gradients equal the 4-D call's bit for bit."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, h, n, d) for h, n, d in ((4, 5, 8), (2, 7, 8), (2, 7, 6)))  # (A, B, H, N, D)
    flat = [t.flatten(0, 1) for t in (q, k, v)]  # (A·B, H, N, D)
    masks = {"none": (None, None), "1-D": (torch.rand(7) > 0.3,) * 2,
             "5-D over A": (m := torch.randn(2, 1, 1, 5, 7), m.expand(2, 3, 1, 5, 7).flatten(0, 1))}
    for name, (mask, mask_flat) in masks.items():
        out, lse = flash_attention(q, k, v, attn_mask=mask, enable_gqa=True, return_lse=True)
        want, want_lse = flash_attention(*flat, attn_mask=mask_flat, enable_gqa=True, return_lse=True)
        assert out.shape == (2, 3, 4, 5, 6) and lse.shape == (2, 3, 4, 5), name
        assert out.flatten(0, 1).equal(want) and lse.flatten(0, 1).equal(want_lse), name
    three = [t[1, 2].requires_grad_() for t in (q, k, v)]  # (H, N, D)
    four = [t[1, 2].unsqueeze(0).detach().requires_grad_() for t in (q, k, v)]  # (1, H, N, D)
    out3 = flash_attention(*three, attn_mask=masks["1-D"][0], enable_gqa=True)
    out4 = flash_attention(*four, attn_mask=masks["1-D"][0], enable_gqa=True)
    assert out3.shape == (4, 5, 6) and out3.equal(out4[0])
    dout = torch.randn_like(out3)
    out3.backward(dout)
    out4.backward(dout.unsqueeze(0))
    for a, b in zip(three, four):
        assert a.grad.equal(b.grad[0])


def test_batch_dims_broadcast_as_sdpa_does():
    """k, v of batch 1 against q's batch 2 (and q of batch 1 against k, v of batch 2): SDPA's math backend
    broadcasts the leading dims as matmul does; outputs and gradients equal the expanded call's."""
    torch.manual_seed(0)
    for qb, kb in ((2, 1), (1, 2)):
        q = torch.randn(qb, 2, 5, 8, requires_grad=True)  # (B_q, H, Nq, D)
        k, v = (torch.randn(kb, 2, 7, 8, requires_grad=True) for _ in range(2))  # (B_kv, H, Nk, D)
        out = flash_attention(q, k, v)
        full = [t.detach().expand(2, -1, -1, -1).contiguous().requires_grad_() for t in (q, k, v)]
        want = flash_attention(*full)
        assert out.shape == (2, 2, 5, 8) and torch.allclose(out, want, atol=1e-6, rtol=0)
        dout = torch.randn_like(out)
        out.backward(dout)
        want.backward(dout)
        for t, f in zip((q, k, v), full):
            assert torch.allclose(t.grad, f.grad.sum(0, keepdim=True) if t.shape[0] == 1 else f.grad, atol=1e-5)
    with pytest.raises(ValueError, match="do not broadcast"):
        flash_attention(torch.randn(2, 2, 5, 8), torch.randn(3, 2, 7, 8), torch.randn(3, 2, 7, 8))
