import sympy as sp

from proofs.theorems.worked_examples import seed_worked_example_2_token, seed_worked_example_3_token


def test_both_examples_are_proved_exactly():
    two, three = seed_worked_example_2_token(), seed_worked_example_3_token()
    assert two.verified and three.verified
    assert two.result.S == sp.Matrix([[3, 2], [6, 4]])
    e = sp.E
    assert sp.simplify(three.result.z1[0] - (e**2 + 3 * e) / (e**2 + e + 1)) == 0


def test_wrong_printed_matrix_is_refused():
    import proofs.theorems.worked_examples as we

    saved = we.PRINTED_S
    try:
        we.PRINTED_S = sp.Matrix([[3, 6], [2, 4]])  # transposed: the symmetric-trap mistake
        assert not we.seed_worked_example_2_token().verified
    finally:
        we.PRINTED_S = saved


def test_the_module_holds_the_theorems_and_not_the_audit():
    import proofs.theorems.worked_examples as we

    for moved in ("compare", "printed_comparisons", "printed_value", "VERDICTS", "Comparison"):
        assert not hasattr(we, moved), f"{moved} belongs to proofs.seed_audit"
