import pytest
import sympy as sp

from proofs.theorems.worked_examples import (FAILS, HOLDS, HOLDS_PRINTED, compare, printed_comparisons,
                                             printed_value, seed_worked_example_2_token, seed_worked_example_3_token)


def test_both_examples_are_proved_exactly():
    two, three = seed_worked_example_2_token(), seed_worked_example_3_token()
    assert two.verified and three.verified
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


@pytest.mark.parametrize("exact,printed,verdict", [
    (sp.sqrt(2), "1.4142", HOLDS_PRINTED),
    (3, "3.0", HOLDS),
    (sp.Rational(1, 2), "0.5", HOLDS),
    (sp.Rational(80443, 100000), "0.805", FAILS),
    (sp.exp(16), "8,800,000", FAILS),
    (sp.exp(16), "8,900,000", HOLDS_PRINTED),
    (sp.exp(64), "6.235e27", HOLDS_PRINTED),
    (sp.exp(64), "6.236e27", FAILS),
])
def test_compare_decides_at_the_printed_precision(exact, printed, verdict):
    assert compare(exact, printed).verdict == verdict


def test_printed_value_parses_the_seeds_formats():
    assert printed_value("2,980.96") == (sp.Rational(298096, 100), sp.Rational(1, 200))
    assert printed_value("8,800,000") == (8_800_000, 50_000)
    assert printed_value("1.77e6") == (1_770_000, 5_000)


@pytest.mark.parametrize("bad", ["≈0.8", "", 0.805, "1.2.3"])
def test_bad_printed_is_a_value_error(bad):
    with pytest.raises(ValueError, match="^printed "):
        compare(1, bad)


@pytest.mark.parametrize("bad", ["x", sp.Symbol("y"), sp.I])
def test_bad_exact_is_a_value_error(bad):
    with pytest.raises(ValueError, match="^exact "):
        compare(bad, "1.0")


def test_known_seed_errors_are_found():
    by_label = {c.label: c for c in printed_comparisons()}
    assert by_label["z1-1"].verdict == FAILS and by_label["z1-2"].verdict == FAILS  # exact z₁ = (1.399, 1.691)
    assert by_label["a-21"].verdict == FAILS  # exact 0.804
    assert by_label["alpha-11"].verdict == HOLDS_PRINTED
