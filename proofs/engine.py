"""Checked derivations.

A theorem is a plain function that builds a :class:`Derivation` with a :class:`Proof`:
every step names the rule it applies and carries a machine check over *computed*
SymPy expressions. A step without a check is a premise and says so. The verdict is
"proved" only when every check passed.

Checks compare mathematics, not notation: an identity is first probed at random
rational points (a false identity is refuted in milliseconds there, where
``simplify`` can spend seconds), and only then reduced to zero symbolically.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import sympy as sp

PROVED = "proved"
FAILED = "failed"

# Relative size below which a probed difference counts as zero: the probes are
# evaluated with 40 significant digits, so genuine identities land near 1e-38.
_PROBE_DIGITS = 40
_PROBE_ZERO = sp.Float("1e-25")


@dataclass(frozen=True)
class Step:
    """One line of a derivation: ``lhs = rhs`` (or a predicate) by ``rule``."""

    rule: str
    description: str
    lhs: Any
    rhs: Any = None
    passed: bool | None = None  # None marks a premise: stated, not checked
    detail: str = ""
    relation: str = "="

    @property
    def is_premise(self) -> bool:
        return self.passed is None


class Result(dict):
    """A derivation's named results, readable as ``r["mean"]`` or ``r.mean``."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


@dataclass
class Derivation:
    claim_id: str
    title: str
    statement: Any
    assumptions: tuple[str, ...]
    steps: list[Step]
    result: Any
    seconds: float = 0.0

    @property
    def checked_steps(self) -> list[Step]:
        return [s for s in self.steps if not s.is_premise]

    @property
    def failed_steps(self) -> list[Step]:
        return [s for s in self.steps if s.passed is False]

    @property
    def verified(self) -> bool:
        # A derivation made only of premises proves nothing.
        return bool(self.checked_steps) and not self.failed_steps

    @property
    def verdict(self) -> str:
        return PROVED if self.verified else FAILED

    def to_latex(self) -> str:
        from proofs import render

        return render.to_latex(self)

    def to_markdown(self) -> str:
        from proofs import render

        return render.to_markdown(self)

    def to_text(self) -> str:
        from proofs import render

        return render.to_text(self)

    def __str__(self) -> str:
        return self.to_text()


class Proof:
    """Builder used inside a theorem function; ``finish`` returns the Derivation."""

    def __init__(self, claim_id: str, title: str, statement: Any, assumptions: Iterable[str] = ()):
        self.claim_id = claim_id
        self.title = title
        self.statement = statement
        self.assumptions = tuple(assumptions)
        self.steps: list[Step] = []
        self._start = time.perf_counter()

    def premise(self, rule: str, description: str, lhs: Any, rhs: Any = None, relation: str = "=") -> None:
        self.steps.append(Step(rule, description, lhs, rhs, None, "premise", relation))

    def equal(self, rule: str, description: str, lhs: Any, rhs: Any) -> bool:
        """Step ``lhs = rhs``, checked as an identity over every free symbol."""
        ok, detail = identity(lhs, rhs)
        self.steps.append(Step(rule, description, lhs, rhs, ok, detail))
        return ok

    def holds(self, rule: str, description: str, lhs: Any, rhs: Any, check: Callable[[], tuple[bool, str] | bool],
              relation: str = "=") -> bool:
        """Step whose check is a custom computation (a limit, an inequality, a bound)."""
        try:
            out = check()
        except Exception as exc:  # a check that cannot run is a failed check, never a crash
            out = (False, f"check raised {type(exc).__name__}: {exc}")
        ok, detail = out if isinstance(out, tuple) else (bool(out), "")
        self.steps.append(Step(rule, description, lhs, rhs, bool(ok), detail or ("holds" if ok else "does not hold"), relation))
        return bool(ok)

    def finish(self, result: Any) -> Derivation:
        return Derivation(self.claim_id, self.title, self.statement, self.assumptions, self.steps, result,
                          time.perf_counter() - self._start)


# --------------------------------------------------------------------------- checks


def _entries(x: Any) -> list[sp.Expr]:
    if isinstance(x, (sp.MatrixBase, sp.NDimArray)):
        return list(x)
    if isinstance(x, (list, tuple)):
        return [e for item in x for e in _entries(item)]
    return [sp.sympify(x)]


def _differences(lhs: Any, rhs: Any) -> list[sp.Expr]:
    a, b = _entries(lhs), _entries(rhs)
    if len(a) != len(b):
        raise ValueError(f"shapes differ: {len(a)} entries against {len(b)}")
    if isinstance(lhs, sp.MatrixBase) and isinstance(rhs, sp.MatrixBase) and lhs.shape != rhs.shape:
        raise ValueError(f"shapes differ: {lhs.shape} against {rhs.shape}")
    return [x - y for x, y in zip(a, b)]


def _sample_value(sym: sp.Symbol, rng: random.Random) -> sp.Expr:
    """A random rational that respects the symbol's assumptions."""
    if sym.is_integer:
        lo = 1 if sym.is_positive else (0 if sym.is_nonnegative else -6)
        return sp.Integer(rng.randint(lo, 9))
    value = sp.Rational(rng.randint(1, 40), rng.randint(1, 13))
    if sym.is_positive or sym.is_nonnegative:
        return value
    return value if rng.random() < 0.5 else -value


def _is_zero_at(expr: sp.Expr, point: dict) -> bool | None:
    """True/False when the probe decides; None when the expression cannot be evaluated there."""
    try:
        # xreplace is far cheaper than subs and exact for plain-symbol keys.
        val = (expr.xreplace(point) if all(isinstance(k, sp.Symbol) for k in point) else expr.subs(point)).doit()
        num = sp.N(val, _PROBE_DIGITS)
    except Exception:
        return None
    if not num.is_number or num.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
        return None
    return bool(abs(num) <= _PROBE_ZERO)


def _reduces_to_zero(expr: sp.Expr) -> bool:
    # Cheapest first: most identities here are polynomial or rational in exponentials.
    reductions = (
        sp.expand,
        lambda e: sp.expand(sp.numer(sp.together(e))),
        lambda e: sp.cancel(sp.expand(e, power_exp=True)),
        lambda e: sp.cancel(sp.powsimp(sp.expand(e))),
        sp.simplify,
    )
    for reduce in reductions:
        try:
            if reduce(expr) == 0:
                return True
        except Exception:
            continue
    return False


def identity(lhs: Any, rhs: Any, *, probes: int = 3) -> tuple[bool, str]:
    """Decide ``lhs == rhs`` for all values of the free symbols.

    Random rational probes refute false identities fast; survivors must reduce to
    zero symbolically.
    """
    try:
        diffs = _differences(lhs, rhs)
    except ValueError as exc:
        return False, str(exc)
    rng = random.Random(0)
    for diff in diffs:
        syms = sorted(diff.free_symbols, key=str)
        for _ in range(probes if syms else 1):
            point = {s: _sample_value(s, rng) for s in syms}
            if _is_zero_at(diff, point) is False:
                shown = ", ".join(f"{k}={v}" for k, v in list(point.items())[:6])
                return False, f"refuted at {shown or 'a constant'}: difference {sp.N(diff.subs(point).doit(), 6)}"
    for diff in diffs:
        if not _reduces_to_zero(diff):
            return False, f"difference does not simplify to 0: {sp.sstr(diff)[:200]}"
    return True, f"identity ({len(diffs)} entr{'y' if len(diffs) == 1 else 'ies'}; probed, then simplified to 0)"

