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
