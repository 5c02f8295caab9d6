"""Rules of the checker that theorems lean on, each shown accepting a right use and refusing a wrong one."""
import sympy as sp

from proofs.engine import Proof

X, Y = sp.symbols("x y", nonnegative=True)
F = sp.Function("f")


def _rewritten(lhs, rhs):
    pf = Proof("checker-rule-case", statement=sp.Eq(lhs, rhs, evaluate=False))
    definition = pf.define(F(sp.Tuple(X, Y)), X + 2 * Y + 1, "f", forall=[X, Y])
    pf.rewrite(lhs, rhs, [definition])
    return pf.finish()


def test_a_forall_symbol_binds_zero_where_its_assumptions_allow_it():
    # SymPy's replace refuses, by default, a match binding a Wild to 0 when the pattern has several Wilds;
    # the identity state (−∞, 0, 0) of the online-softmax merge needs that instance.
    assert _rewritten(F(sp.Tuple(0, 0)), 1).verified
    assert _rewritten(F(sp.Tuple(3, 0)), 4).verified


def test_a_zero_binding_still_gives_only_the_true_instance():
    assert not _rewritten(F(sp.Tuple(0, 0)), 0).verified
    assert not _rewritten(F(sp.Tuple(3, 0)), 6).verified


def test_a_value_outside_the_forall_symbols_assumptions_is_not_rewritten():
    # y ≥ 0 in the definition: f((0, −1)) is not an instance, whatever it is claimed to equal.
    assert not _rewritten(F(sp.Tuple(0, -1)), -1).verified


Q = sp.IndexedBase("q", real=True)
K, M = sp.symbols("k m", integer=True, positive=True)
N = sp.Symbol("n", integer=True, positive=True)
T = sp.Symbol("T", real=True)


def _rewritten_by_a_sum_premise(lhs, rhs):
    pf = Proof("checker-rule-sum-case", statement=sp.Eq(lhs, rhs, evaluate=False))
    total = pf.assume(sp.Eq(sp.Sum(Q[K], (K, 1, N)), T, evaluate=False), "Σ_k q_k = T")
    pf.rewrite(lhs, rhs, [total])
    return pf.finish()


def test_a_sum_premise_rewrites_the_same_sum_under_another_index_name():
    # The checker renames bound indices canonically in the expression; the premise's are renamed the same way.
    assert _rewritten_by_a_sum_premise(2 * sp.Sum(Q[M], (M, 1, N)), 2 * T).verified
    assert _rewritten_by_a_sum_premise(sp.exp(sp.Sum(Q[K], (K, 1, N))), sp.exp(T)).verified


def test_a_sum_premise_does_not_rewrite_another_range_or_summand():
    assert not _rewritten_by_a_sum_premise(sp.Sum(Q[M], (M, 1, N + 1)), T).verified
    assert not _rewritten_by_a_sum_premise(sp.Sum(Q[M] ** 2, (M, 1, N)), T).verified
    assert not _rewritten_by_a_sum_premise(sp.Sum(Q[M], (M, 1, N)), 2 * T).verified


X_, Y_ = sp.IndexedBase("x", positive=True), sp.IndexedBase("y", positive=True)
L_ = sp.Symbol("l", integer=True, positive=True)


def _by_linearity(lhs, rhs):
    pf = Proof("checker-rule-linearity-case", statement=sp.Eq(lhs, rhs, evaluate=False))
    pf.linearity(lhs, rhs)
    return pf.finish()


def test_linearity_pulls_a_sum_out_of_another():
    inner = sp.Sum(Y_[L_], (L_, 1, N))
    d = _by_linearity(sp.Sum(X_[K] / inner, (K, 1, N)), sp.Sum(X_[K], (K, 1, N)) / inner)
    assert d.verified
    # The pulled-out sum's index is renamed as a sum no longer nested: both sides become identical.
    assert "sides identical" in d.check.outcomes[0].detail


def test_linearity_refuses_what_is_not_linearity():
    inner = sp.Sum(Y_[L_], (L_, 1, N))
    assert not _by_linearity(sp.Sum(X_[K] / inner, (K, 1, N)), sp.Sum(X_[K], (K, 1, N)) / sp.Sum(X_[L_], (L_, 1, N))).verified
    assert not _by_linearity(sp.Sum(X_[K] * Y_[K], (K, 1, N)), Y_[K] * sp.Sum(X_[K], (K, 1, N))).verified
    assert not _by_linearity(sp.Sum(X_[K] / inner, (K, 1, N)), sp.Sum(X_[K], (K, 1, N + 1)) / inner).verified
