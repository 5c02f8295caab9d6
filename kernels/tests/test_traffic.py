"""The kernels' HBM traffic, counted on the running kernel, equals proofs.traffic's formulas exactly."""
import pytest
import sympy as sp
import torch

from kernels import traffic
from proofs import traffic as derived


@pytest.mark.parametrize("case", traffic.FORWARD_GRID[::2] + traffic.FORWARD_GRID[-2:])
def test_forward_traffic_matches_the_formula(case):
    nq, nk, d, bm, bn, causal = case
    c = traffic.compare_forward(nq, nk, d, bm, bn, causal=causal)
    assert c.agrees, c.differences()


@pytest.mark.parametrize("case", traffic.BACKWARD_GRID[1::2])
def test_backward_traffic_matches_the_formula(case):
    nq, nk, d, bm, bn, causal = case
    c = traffic.compare_backward(nq, nk, d, bm, bn, causal=causal)
    assert c.agrees, c.differences()


def test_backward_with_gqa_shares_the_kv_reads():
    c = traffic.compare_backward(48, 80, 16, 16, 32, causal=True, batch=2, heads_q=4, heads_kv=2)
    assert c.agrees, c.differences()


@pytest.mark.parametrize("case", traffic.DECODE_GRID[1:4])
def test_decode_traffic_matches_the_formula(case):
    nq, nk, d, splits, causal = case
    c = traffic.compare_decode(nq, nk, d, splits, causal=causal, heads_q=2, heads_kv=1)
    assert c.agrees, c.differences()


def test_bytes_follow_each_tensors_element_size():
    c = traffic.compare_forward(40, 70, 16, 16, 32, causal=False, dtype=torch.float16)
    assert c.agrees, c.differences()
    assert c.measured.read_bytes["K"] == 2 * c.measured.reads["K"]
    assert c.measured.write_bytes["LSE"] == 4 * c.measured.writes["LSE"]


def _full_tiles_forward(n_q, n_k, head_dim, head_dim_v, block_m, block_n, *, causal):
    """A wrong formula: tail tiles counted whole (as if the loads were unmasked)."""
    right = derived.flash_forward(n_q, n_k, head_dim, head_dim_v, block_m, block_n, causal=causal)
    padded_q = derived.cdiv(n_q, block_m) * block_m
    return derived.Traffic({**right.reads, "Q": padded_q * head_dim}, right.writes)


def _halved_causal_forward(n_q, n_k, head_dim, head_dim_v, block_m, block_n, *, causal):
    """A wrong formula: causal loads exactly the lower triangle's N(N+1)/2 key rows."""
    right = derived.flash_forward(n_q, n_k, head_dim, head_dim_v, block_m, block_n, causal=causal)
    keys = sp.Integer(n_q) * (n_q + 1) / 2
    return derived.Traffic({**right.reads, "K": head_dim * keys, "V": head_dim_v * keys}, right.writes)


@pytest.mark.parametrize("wrong", [_full_tiles_forward, _halved_causal_forward])
def test_a_wrong_formula_is_caught(wrong):
    c = traffic.compare_forward(100, 100, 32, 32, 64, causal=True, formula=wrong)
    assert not c.agrees and c.differences()


def test_a_load_outside_the_named_tensors_is_refused():
    from triton.runtime.errors import InterpreterError

    from kernels.flash.forward import attention_forward

    q = torch.zeros(4)
    # The interpreter re-raises a kernel's exception as its InterpreterError, message kept.
    with pytest.raises(InterpreterError, match="outside every named tensor"):
        k, v = torch.zeros(1, 1, 8, 16), torch.zeros(1, 1, 8, 16)
        qq, out, lse = torch.zeros(1, 1, 8, 16), torch.zeros(1, 1, 8, 16), torch.zeros(1, 1, 8)
        with traffic.count_traffic({"Q": qq, "K": k, "V": v, "O": out, "q": q}):  # LSE left unnamed
            attention_forward(qq, k, v, out, lse, scale=0.25, is_causal=False, tiles=(16, 16))


def test_overlapping_tensors_are_refused():
    x = torch.zeros(10)
    with pytest.raises(ValueError, match="share storage"):
        with traffic.count_traffic({"a": x, "b": x[2:]}):
            pass


def test_the_theta_form_and_the_sp_traffic():
    assert derived.forward_theta_constant(False) == 10 and derived.forward_theta_constant(True) == 5
    sp_counts = derived.sp_traffic()
    assert sp_counts["flash_SP"] == 0 and sp.expand(sp_counts["standard_SP"] - 4 * derived.N**2) == 0


@pytest.mark.parametrize("n, block", [(64, 32), (96, 16)])
def test_the_measured_causal_forward_is_the_closed_form_when_the_block_divides_n(n, block):
    # The causal closed form N²d/B + 3Nd + N (B_M = B_N = B dividing N) set straight against the kernel's lane
    # count, not only against the loop sum it was checked on (the checker cannot prove the Min inside that sum).
    c = traffic.compare_forward(n, n, 16, block, block, causal=True)
    measured = sum(c.measured.reads.values()) + sum(c.measured.writes.values())
    closed = derived.divisible_forward_closed_form(True).subs({derived.N: n, derived.B_M: block, derived.d: 16})
    assert measured == closed == n * n * 16 // block + 3 * n * 16 + n
    assert measured != derived.divisible_forward_closed_form(False).subs({derived.N: n, derived.B_M: block,
                                                                           derived.d: 16})
