"""The seeds' worked examples in exact arithmetic, and every number they print against it.

The derivations prove the exact values (integers, √2, e) and carry them in ``.result``;
``printed_comparisons`` sets each printed decimal beside the exact value at the precision
the seed prints it. The seed audit builds its worked-example records from those.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import sympy as sp

from proofs.engine import Derivation, Proof, Result

SEED_2_TOKEN = "000_6dc9c20305ca48b8.txt"
SEED_3_TOKEN = "002_84043d61bb2cf99b.txt"

HOLDS = "holds"
HOLDS_PRINTED = "holds to printed precision"
FAILS = "does not hold"
OUT_OF_SCOPE = "out of scope"
VERDICTS = (HOLDS, HOLDS_PRINTED, FAILS, OUT_OF_SCOPE)

# The N = 2 example: X (2×4), W_Q, W_K, W_V (4×2), d_k = 2.
SEED_X = sp.Matrix([[1, 0, 1, 0], [0, 2, 0, 2]])
SEED_W_Q = sp.Matrix([[1, 0], [0, 1], [0, 1], [1, 0]])
SEED_W_K = sp.Matrix([[1, 1], [0, 0], [1, 0], [0, 1]])
SEED_W_V = sp.Matrix([[0, 2], [1, 0], [1, 1], [0, 1]])
PRINTED_Q = sp.Matrix([[1, 1], [2, 2]])
PRINTED_K = sp.Matrix([[2, 1], [0, 2]])
PRINTED_V = sp.Matrix([[1, 3], [2, 2]])
PRINTED_S = sp.Matrix([[3, 2], [6, 4]])

# The 3-token example: raw scores QKᵀ, d_k = 4, and the 2-D values of the z₁ example.
SEED_SCORES_3 = sp.Matrix([[4, 2, 0], [1, 3, -1], [2, 0, 4]])
SEED_DK_3 = 4
PRINTED_SCALED_3 = sp.Matrix([[2, 1, 0], [sp.Rational(1, 2), sp.Rational(3, 2), -sp.Rational(1, 2)], [1, 0, 2]])
SEED_VALUES_3 = sp.Matrix([[1, 2], [3, 0], [0, 4]])  # rows v₁, v₂, v₃


@dataclass(frozen=True)
class Comparison:
    """A printed number beside its exact value, decided at the printed precision."""

    label: str
    seed: str
    quote: str
    printed: str
    exact: sp.Expr
    verdict: str
    exact_decimal: str
    half_unit: sp.Rational
    from_printed: sp.Expr | None = None  # the same quantity from the seed's rounded intermediates

    @property
    def holds(self) -> bool:
        return self.verdict in (HOLDS, HOLDS_PRINTED)


_NUMBER = re.compile(r"^(-?)([0-9][0-9,]*)(?:\.([0-9]+))?(?:e(-?[0-9]+))?$")


def printed_value(printed: str) -> tuple[sp.Rational, sp.Rational]:
    """The value a printed decimal names and half a unit in its last printed place.

    "0.805" → (161/200, 1/2000); "6.235e27" → (6235·10^24, 10^24/2). An integer with
    trailing zeros ("8,800,000") counts its trailing zeros as not significant.
    """
    if not isinstance(printed, str):
        raise ValueError(f"printed must be a decimal string such as '0.805', got {printed!r}")
    m = _NUMBER.match(printed.strip())
    if not m:
        raise ValueError(f"printed must be a decimal string such as '0.805', got {printed!r}")
    sign, whole, frac, exp10 = m.groups()
    whole = whole.replace(",", "")
    exponent = int(exp10 or 0)
    if frac is not None:
        unit_exp = exponent - len(frac)
        digits = whole + frac
    else:
        stripped = whole.rstrip("0") or "0"
        unit_exp = exponent + (len(whole) - len(stripped) if stripped != "0" else 0)
        digits = whole
    value = sp.Integer(int(sign + digits)) * sp.Rational(10) ** (exponent - (len(frac) if frac else 0))
    return value, sp.Rational(10) ** unit_exp / 2


def compare(exact, printed: str, *, label: str = "", seed: str = "", quote: str = "",
            from_printed=None) -> Comparison:
    """Decide a printed number: equal to the exact value ("holds"), equal after rounding
    the exact value to the printed place ("holds to printed precision"), or neither."""
    try:
        exact = sp.sympify(exact, strict=True)
    except (sp.SympifyError, TypeError):
        raise ValueError(f"exact must be a number or SymPy expression, got {exact!r}") from None
    if not (isinstance(exact, sp.Expr) and exact.is_number and exact.is_real):
        raise ValueError(f"exact must be a real number, got {exact!r}")
    value, half = printed_value(printed)
    gap = sp.N(abs(exact - value), 50)
    # Only a numerically negligible gap is worth proving zero symbolically.
    if gap < sp.Float("1e-40") and sp.cancel(sp.together(exact - value)) == 0:
        verdict = HOLDS
    elif gap <= half:
        verdict = HOLDS_PRINTED
    else:
        verdict = FAILS
    return Comparison(label, seed, quote, printed, exact, verdict, _decimal(exact), half, from_printed)


def _decimal(x: sp.Expr) -> str:
    return str(sp.N(x, 8))


def row_softmax(S: sp.Matrix) -> sp.Matrix:
    return sp.Matrix(S.rows, S.cols, lambda i, j: sp.exp(S[i, j]) / sum(sp.exp(x) for x in S.row(i)))


def two_token_values() -> Result:
    """Exact Q, K, V, S, S/√2, A, Z of the N = 2 example."""
    Q, K, V = SEED_X * SEED_W_Q, SEED_X * SEED_W_K, SEED_X * SEED_W_V
    S = Q * K.T
    scaled = S / sp.sqrt(Q.cols)
    A = row_softmax(scaled)
    return Result(Q=Q, K=K, V=V, S=S, scaled=scaled, A=A, Z=A * V,
                  exps=scaled.applyfunc(sp.exp), sums=[sum(sp.exp(x) for x in scaled.row(i)) for i in range(2)])


def three_token_values() -> Result:
    """Exact scaled scores, weights A and z₁ of the 3-token example."""
    scaled = SEED_SCORES_3 / sp.sqrt(SEED_DK_3)
    A = row_softmax(scaled)
    return Result(scaled=scaled, A=A, z1=(A.row(0) * SEED_VALUES_3).T, exps=[sp.exp(x) for x in scaled.row(0)],
                  sum1=sum(sp.exp(x) for x in scaled.row(0)))


def _d(text: str) -> sp.Rational:
    return sp.Rational(text)


def printed_comparisons() -> list[Comparison]:
    """Every decimal the two worked examples print, beside its exact value.

    ``from_printed`` is what the seed's own arithmetic gives from its rounded intermediates,
    so a record can say whether an error is propagated rounding or a slip.
    """
    t, h = two_token_values(), three_token_values()
    e = sp.exp
    rows = [
        ("sqrt2", SEED_2_TOKEN, "√d_k = √2 ≈ 1.4142", sp.sqrt(2), "1.4142", None),
        ("s-scaled-11", SEED_2_TOKEN, "3.0/1.4142 ≈ 2.121", t.scaled[0, 0], "2.121", 3 / _d("1.4142")),
        ("s-scaled-12", SEED_2_TOKEN, "2.0/1.4142 ≈ 1.414", t.scaled[0, 1], "1.414", 2 / _d("1.4142")),
        ("s-scaled-21", SEED_2_TOKEN, "6.0/1.4142 ≈ 4.243", t.scaled[1, 0], "4.243", 6 / _d("1.4142")),
        ("s-scaled-22", SEED_2_TOKEN, "4.0/1.4142 ≈ 2.828", t.scaled[1, 1], "2.828", 4 / _d("1.4142")),
        ("exp-11", SEED_2_TOKEN, "exp(2.121) ≈ 8.339", t.exps[0, 0], "8.339", e(_d("2.121"))),
        ("exp-12", SEED_2_TOKEN, "exp(1.414) ≈ 4.112", t.exps[0, 1], "4.112", e(_d("1.414"))),
        ("exp-21", SEED_2_TOKEN, "exp(4.243) ≈ 69.617", t.exps[1, 0], "69.617", e(_d("4.243"))),
        ("exp-22", SEED_2_TOKEN, "exp(2.828) ≈ 16.912", t.exps[1, 1], "16.912", e(_d("2.828"))),
        ("sum-1", SEED_2_TOKEN, "Sum_1 = 8.339 + 4.112 = 12.451", t.sums[0], "12.451", _d("8.339") + _d("4.112")),
        ("sum-2", SEED_2_TOKEN, "Sum_2 = 69.617 + 16.912 = 86.529", t.sums[1], "86.529",
         _d("69.617") + _d("16.912")),
        ("a-11", SEED_2_TOKEN, "A_{1,1} = 8.339/12.451 ≈ 0.670", t.A[0, 0], "0.670", _d("8.339") / _d("12.451")),
        ("a-12", SEED_2_TOKEN, "A_{1,2} = 4.112/12.451 ≈ 0.330", t.A[0, 1], "0.330", _d("4.112") / _d("12.451")),
        ("a-21", SEED_2_TOKEN, "A_{2,1} = 69.617/86.529 ≈ 0.805", t.A[1, 0], "0.805", _d("69.617") / _d("86.529")),
        ("a-22", SEED_2_TOKEN, "A_{2,2} = 16.912/86.529 ≈ 0.195", t.A[1, 1], "0.195", _d("16.912") / _d("86.529")),
        ("z-11", SEED_2_TOKEN, "Z_11 = 0.670·1.0 + 0.330·2.0 ≈ 1.330", t.Z[0, 0], "1.330",
         _d("0.670") + 2 * _d("0.330")),
        ("z-12", SEED_2_TOKEN, "Z_12 = 0.670·3.0 + 0.330·2.0 ≈ 2.670", t.Z[0, 1], "2.670",
         3 * _d("0.670") + 2 * _d("0.330")),
        ("z-21", SEED_2_TOKEN, "Z_21 = 0.805·1.0 + 0.195·2.0 ≈ 1.195", t.Z[1, 0], "1.195",
         _d("0.805") + 2 * _d("0.195")),
        ("z-22", SEED_2_TOKEN, "Z_22 = 0.805·3.0 + 0.195·2.0 ≈ 2.805", t.Z[1, 1], "2.805",
         3 * _d("0.805") + 2 * _d("0.195")),
        ("sqrt-dk-4", SEED_3_TOKEN, "dₖ = 4, so sqrt(dₖ) = 2", sp.sqrt(SEED_DK_3), "2", None),
        ("exp-2", SEED_3_TOKEN, "e^(2.0) ≈ 7.389", h.exps[0], "7.389", None),
        ("exp-1", SEED_3_TOKEN, "e^(1.0) ≈ 2.718", h.exps[1], "2.718", None),
        ("exp-0", SEED_3_TOKEN, "e^(0.0) = 1.000", h.exps[2], "1.000", None),
        ("row-sum", SEED_3_TOKEN, "∑ = 7.389 + 2.718 + 1.000 = 11.107", h.sum1, "11.107",
         _d("7.389") + _d("2.718") + 1),
        ("alpha-11", SEED_3_TOKEN, "α_(11) = 7.389/11.107 ≈ 0.665", h.A[0, 0], "0.665", _d("7.389") / _d("11.107")),
        ("alpha-12", SEED_3_TOKEN, "α_(12) = 2.718/11.107 ≈ 0.245", h.A[0, 1], "0.245", _d("2.718") / _d("11.107")),
        ("alpha-13", SEED_3_TOKEN, "α_(13) = 1.000/11.107 ≈ 0.090", h.A[0, 2], "0.090", 1 / _d("11.107")),
        ("row-1-total", SEED_3_TOKEN, "Row 1 sums to 0.665 + 0.245 + 0.090 = 1.000", sum(h.A.row(0)), "1.000",
         _d("0.665") + _d("0.245") + _d("0.090")),
        ("z1-term-12", SEED_3_TOKEN, "z₁: 0.245·3.0 = 0.735", 3 * h.A[0, 1], "0.735", 3 * _d("0.245")),
        ("z1-term-21", SEED_3_TOKEN, "z₁: 0.665·2.0 = 1.330", 2 * h.A[0, 0], "1.330", 2 * _d("0.665")),
        ("z1-term-23", SEED_3_TOKEN, "z₁: 0.090·4.0 = 0.360", 4 * h.A[0, 2], "0.360", 4 * _d("0.090")),
        ("z1-1", SEED_3_TOKEN, "z₁ = [0.665 + 0.735 + 0.000, …] = [1.400, 1.690] (first component)", h.z1[0],
         "1.400", _d("0.665") + 3 * _d("0.245")),
        ("z1-2", SEED_3_TOKEN, "z₁ = [1.400, 1.330 + 0.000 + 0.360] = [1.400, 1.690] (second component)", h.z1[1],
         "1.690", 2 * _d("0.665") + 4 * _d("0.090")),
    ]
    return [compare(exact, printed, label=label, seed=seed, quote=quote, from_printed=fp)
            for label, seed, quote, exact, printed, fp in rows]


def _matrix_symbol(name: str, m: sp.Matrix) -> sp.MatrixSymbol:
    return sp.MatrixSymbol(name, *m.shape)


def seed_worked_example_2_token() -> Derivation:
    """The N = 2 example of the first seed: exact Q, K, V, S as printed; exact S/√2, A and Z."""
    pf = Proof("seed-worked-example-2-token")
    t = two_token_values()
    stated = lambda name, m: pf.claimed(_matrix_symbol(name, m))  # noqa: E731
    for name, rule in (("Q", "X W_Q"), ("K", "X W_K"), ("V", "X W_V"), ("S", "QKᵀ")):
        pf.equal("matrix product", f"{name} = {rule} is the printed {stated(name, t[name]).tolist()}", t[name],
                 stated(name, t[name]), subject=_matrix_symbol(name, t[name]))
    pf.equal("division by √2", "S/√2 in exact form", t.scaled, stated("S/√2", t.scaled),
             subject=_matrix_symbol("S/√2", t.scaled))
    # Two keys: a_1 = 1/(1 + e^{s_2 − s_1}), so every weight is a logistic of a score gap.
    pf.equal("softmax of two logits", "A: each weight a logistic σ(g) = 1/(1 + e^{−g}) of a scaled-score gap",
             t.A, stated("A", t.A), subject=_matrix_symbol("A", t.A))
    pf.equal("softmax normalisation", "each row of A sums to 1", t.A * sp.ones(2, 1), sp.ones(2, 1))
    pf.equal("matrix product, rows sum to 1", "Z = AV = [[1 + A_12, 3 − A_12], [1 + A_22, 3 − A_22]]", t.Z,
             stated("Z", t.Z), subject=_matrix_symbol("Z", t.Z))
    return pf.finish(t)


def seed_worked_example_3_token() -> Derivation:
    """The 3-token example of the second seed: exact scaled scores, row-1 weights and z₁."""
    pf = Proof("seed-worked-example-3-token")
    h = three_token_values()
    for name, value, rule, what in (("S/√d_k", h.scaled, "division by √4 = 2", "the scaled scores are as printed"),
                                    ("α_1", h.A.row(0), "softmax", "row 1: α₁ = (e², e, 1)/(e² + e + 1)"),
                                    ("z_1", h.z1, "z₁ = Σ_j α_1j v_j", "z₁ = ((e² + 3e), (2e² + 4))/(e² + e + 1)")):
        subject = _matrix_symbol(name, value)
        pf.equal(rule, what, value, pf.claimed(subject), subject=subject)
    pf.equal("softmax normalisation", "every row of A sums to 1", h.A * sp.ones(3, 1), sp.ones(3, 1))
    return pf.finish(h)
