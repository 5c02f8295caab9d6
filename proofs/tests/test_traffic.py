"""proofs.traffic: the exact counts against their closed forms and against the loops read off the kernel."""
import pytest
import sympy as sp

from proofs import traffic as t


@pytest.mark.parametrize("n,block", [(64, 16), (128, 32), (96, 32)])
@pytest.mark.parametrize("causal", [False, True])
def test_the_sum_equals_the_closed_form_when_the_block_divides_n(n, block, causal):
    exact = t.flash_forward(n, n, 8, 8, block, block, causal=causal).evaluate().total
    closed = t.divisible_forward_closed_form(causal).subs({t.N: n, t.B_M: block, t.d: 8})
    assert exact == closed
    wrong = t.divisible_forward_closed_form(not causal).subs({t.N: n, t.B_M: block, t.d: 8})
    assert exact != wrong


def _simulated_forward_keys(n_q, n_k, bm, bn, causal):
    """The forward's key loop in plain Python (tiles.key_bounds), counting in-range key rows."""
    rows = 0
    for start_m in range(0, n_q, bm):
        hi = min(start_m + bm, n_k) if causal else n_k
        for start_n in range(0, hi, bn):
            rows += min(bn, n_k - start_n)
    return rows


@pytest.mark.parametrize("n_q,n_k,bm,bn", [(100, 100, 32, 64), (40, 150, 32, 16), (150, 40, 64, 32), (7, 9, 16, 16)])
@pytest.mark.parametrize("causal", [False, True])
def test_the_key_count_matches_a_simulation_of_the_loop(n_q, n_k, bm, bn, causal):
    counted = t.flash_forward(n_q, n_k, 1, 1, bm, bn, causal=causal).evaluate().reads["K"]
    assert counted == _simulated_forward_keys(n_q, n_k, bm, bn, causal)


def test_theta_form_standard_and_prescale():
    assert t.forward_theta_constant(False) == 10 and t.forward_theta_constant(True) == 5
    std = t.standard_forward()
    assert sp.expand(std.total - (4 * t.N**2 + 2 * t.N * t.d + 2 * t.N * t.d_v)) == 0
    saving = t.prescale_saving()
    assert saving["saving_in_fused_kernel"] == 0 and sp.expand(saving["scale_S_pass"] - 2 * t.N**2) == 0
    assert sp.degree(t.extra_memory()["flash_forward"], t.N) == 1


def test_bad_arguments():
    with pytest.raises(ValueError, match="n_q"):
        t.flash_forward(0)
    with pytest.raises(ValueError, match="unknown symbols"):
        t.flash_forward(8, 8, 4, 4, 4, 4).evaluate(X=3)
    with pytest.raises(ValueError, match="integer"):
        t.flash_forward().evaluate(N=8)
    with pytest.raises(ValueError, match="multiple"):
        t.flash_decode(1, 3, 2, 1, 8, 4, 4, 1, 16)
