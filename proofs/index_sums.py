"""Index-form sums for any size: reduce Σ-expressions by exact rules and compare them.

A general claim about matrices of symbolic size is checked entrywise in index form: the entry is
a finite sum over symbolic ranges. Three rules reduce such sums, each exact: linearity (a sum of
terms splits), nesting (Σ_i f Σ_j g = Σ_{i,j} f g when f does not involve j) and sifting
(Σ_y δ_xy f(y) = f(x) for x in y's range). Two sums are compared after renaming their bound
indices canonically, so Σ_a M_aa and Σ_b M_bb compare equal.
"""
from __future__ import annotations

from itertools import permutations

import sympy as sp

# Canonical bound indices: Dummies with fixed indices, so no free symbol of an expression (a user's
# Symbol("k0"), whatever its assumptions) can be equal to one and be captured by a renaming.
_CANON = tuple(sp.Dummy(f"k{p}", dummy_index=7_350_000_000 + p, integer=True) for p in range(6))


def _bound(s: sp.Sum) -> list:
    return [lim[0] for lim in s.limits]


def flatten(expr):
    """Nesting: a Sum whose summand holds another Sum as a factor becomes one Sum over both index sets."""
    def one(s: sp.Sum):
        body = sp.expand(s.function)
        if isinstance(body, sp.Add):
            return sp.Add(*(one(sp.Sum(t, *s.limits)) for t in body.args))
        inner = [f for f in sp.Mul.make_args(body) if isinstance(f, sp.Sum)]
        if not inner:
            return s
        first = inner[0]
        if set(_bound(first)) & set(_bound(s)):
            raise ValueError(f"nested sums must use distinct indices: {s}")
        rest = sp.Mul(*(f for f in sp.Mul.make_args(body) if f is not first))
        return one(sp.Sum(rest * first.function, *first.limits, *s.limits))
    return sp.sympify(expr).replace(lambda e: isinstance(e, sp.Sum), one)


def _delta_range(delta):
    return delta.args[2] if len(delta.args) == 3 else None


def _in_range(x, lo, hi, limits) -> bool:
    """Is every value x takes shown to lie in lo..hi? (x summed here: its own range inside; else x itself)."""
    if x in limits:
        x_lo, x_hi = limits[x]
        return bool((x_lo - lo).is_nonnegative) and bool((hi - x_hi).is_nonnegative)
    return bool(x.is_integer) and bool((x - lo).is_nonnegative) and bool((hi - x).is_nonnegative)


def sift(s):
    """Σ_y δ_xy f(y) = f(x): y leaves the sum, only where x is shown to lie in y's range (otherwise the
    sum may be 0, not f(x)); the delta's range, when it names one, is y's range."""
    if not isinstance(s, sp.Sum):
        return s
    limits = {lim[0]: lim[1:] for lim in s.limits}
    for delta in s.function.atoms(sp.KroneckerDelta):
        x, y = delta.args[:2]
        for keep, drop in ((x, y), (y, x)):
            rng = _delta_range(delta)
            if drop in limits and (rng is None or tuple(rng) == tuple(limits[drop])) \
                    and keep not in {drop} and _in_range(keep, *limits[drop], {k: v for k, v in limits.items() if k != drop}):
                rest = [lim for lim in s.limits if lim[0] != drop]
                body = s.function.xreplace({delta: 1}).xreplace({drop: keep})
                return sift(sp.Sum(body, *rest)) if rest else body
    return s


def reduce(expr):
    """Nesting, linearity and sifting applied until nothing changes."""
    expr = flatten(sp.expand(sp.sympify(expr)))
    terms = []
    for t in sp.Add.make_args(sp.expand(expr)):
        coeff = sp.Mul(*(f for f in sp.Mul.make_args(t) if not isinstance(f, sp.Sum)))
        sums = [f for f in sp.Mul.make_args(t) if isinstance(f, sp.Sum)]
        if len(sums) == 1:  # the factors outside move inside, so c·Σ f and Σ c·f compare equal
            body = sp.expand(coeff * sums[0].function)
            terms += [sift(sp.Sum(b, *sums[0].limits)) for b in sp.Add.make_args(body)]
        else:
            terms.append(t)
    return sp.Add(*(_inside(t) for t in terms))


def _inside(term):
    """c · Σ f → Σ c f for a term with one sum (after sifting a factor may be left outside again)."""
    sums = [f for f in sp.Mul.make_args(term) if isinstance(f, sp.Sum)]
    if len(sums) != 1:
        return term
    coeff = sp.Mul(*(f for f in sp.Mul.make_args(term) if f is not sums[0]))
    return sp.Sum(sp.expand(coeff * sums[0].function), *sums[0].limits)


def canonical(expr):
    """Rename each sum's indices canonically (the ordering that gives the smallest form)."""
    def one(s: sp.Sum) -> sp.Sum:
        bound = _bound(s)
        ranges = [lim[1:] for lim in s.limits]
        forms = []
        for order in permutations(range(len(bound))):
            rename = {bound[k]: _CANON[pos] for pos, k in enumerate(order)}
            limits = sorted(((rename[bound[k]], *ranges[k]) for k in range(len(bound))), key=lambda l: str(l[0]))
            forms.append(sp.Sum(s.function.xreplace(rename), *limits))
        best = min(forms, key=sp.srepr)
        # Factors free of the bound indices leave the sum, so Σ 2f and 2 Σ f compare equal.
        bound_now = set(_bound(best))
        outside = [f for f in sp.Mul.make_args(best.function) if not (f.free_symbols & bound_now)]
        inside = [f for f in sp.Mul.make_args(best.function) if f.free_symbols & bound_now]
        return sp.Mul(*outside) * sp.Sum(sp.Mul(*inside), *best.limits)
    return sp.sympify(expr).replace(lambda e: isinstance(e, sp.Sum), one)


def same(lhs, rhs) -> tuple[bool, str]:
    """Are two index-form expressions equal for every size? (after reducing both and renaming indices)"""
    taken = (sp.sympify(lhs).free_symbols | sp.sympify(rhs).free_symbols) & set(_CANON)
    if taken:
        return False, f"the expressions hold the reserved index names {sorted(map(str, taken))}"
    diff = sp.expand(canonical(reduce(lhs)) - canonical(reduce(rhs)))
    return diff == 0, ("equal for every size (index form, indices renamed canonically)" if diff == 0
                       else f"they differ by {sp.sstr(diff)[:200]}")
