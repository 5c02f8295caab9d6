"""The fifth red team's families against the checker (rt21e: capture under ∫, Dummy definition heads, predictable
fresh Dummies, the sign rule on sides not shown defined), each closed by a design rule. Its certificates are in
``redteam5/`` (replayed as written; each was "proved" on the checker before the change)."""
import json
from pathlib import Path

import pytest
import sympy as sp

from proofs import checker
from proofs.checker import check

HERE = Path(__file__).parent / "redteam5"


def _load(name):
    return json.loads((HERE / f"{name}.json").read_text(encoding="utf-8"))


# F1: a premise put under an ∫ whose variable is free in it (d = t into ∫ d dt) was captured.
@pytest.mark.parametrize("name", ["a23", "a24", "a25", "a51", "a79"])
def test_f1_capture_by_an_integral_variable_is_refused(name):
    verdict = check(_load(name))
    assert not verdict.proved, verdict.line
    assert "free and bound" in verdict.line


def test_f1_capture_through_a_forall_definition_is_refused():
    x, t, y = sp.symbols("x t y", real=True)
    g = sp.Function("g")
    equations = [(sp.Eq(g(x), t), (x,))]
    with pytest.raises(checker._Refused, match="free and bound"):
        checker._rewrite(sp.Integral(g(y), (t, 0, 1)), equations)


def test_f1_a_rewrite_under_an_integral_without_a_clash_still_applies():
    s, t, y = sp.symbols("s t y", real=True)
    assert checker._rewrite(sp.Integral(y, (t, 0, 1)), [(sp.Eq(y, s), ())]) == sp.Integral(s, (t, 0, 1))
