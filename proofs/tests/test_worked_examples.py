import sympy as sp

from proofs.theorems.worked_examples import seed_worked_example_2_token, seed_worked_example_3_token


def test_both_examples_are_proved_exactly():
    two, three = seed_worked_example_2_token(), seed_worked_example_3_token()
    assert two.verified and three.verified
    assert two.computations == [] and three.computations == []
    assert two.result.S == sp.Matrix([[3, 2], [6, 4]])
    e = sp.E
    assert sp.simplify(three.result.z1[0] - (e**2 + 3 * e) / (e**2 + e + 1)) == 0


def test_wrong_printed_matrix_is_refused():
    from proofs.claims import claim
    from proofs.tests.perturb import stated_as

    S = sp.MatrixSymbol("S", 2, 2)
    statement = claim("seed-worked-example-2-token").statement
    transposed = statement.xreplace({sp.Eq(S, sp.ImmutableMatrix([[3, 2], [6, 4]]), evaluate=False):
                                     sp.Eq(S, sp.ImmutableMatrix([[3, 6], [2, 4]]), evaluate=False)})
    assert transposed != statement
    with stated_as("seed-worked-example-2-token", transposed):  # the symmetric-trap mistake in the claim
        d = seed_worked_example_2_token()
    assert not d.verified and any("S = QKᵀ" in s.description for s in d.failed_steps)


def test_the_module_holds_the_theorems_and_not_the_audit():
    import proofs.theorems.worked_examples as we

    for moved in ("compare", "printed_comparisons", "printed_value", "VERDICTS", "Comparison"):
        assert not hasattr(we, moved), f"{moved} belongs to proofs.seed_audit"
