"""Covering arrays: rows of factor values in which every allowed pair of values of two factors appears in some row
(strength 2), and, where asked, every allowed triple of values of named factor triples (mixed strength).

Why: a kernel's dispatcher picks a code path from a region of sizes (one query over 2¹⁴ keys, 16 queries over
8192, 33 batch entries), and each path has its own copy of every feature (mask, causal, GQA, dropout, dtype,
NaN handling, gradients). Drawing each feature at random beside each size leaves most (path, feature) pairs out of
a run of a few dozen problems, and regimes that move one axis past a threshold pin the others (red team rt44h: 13
of 31 escapes were a feature wrong on one path only). A covering array meets every pair in a few dozen rows.

The construction is the greedy one of AETG (Cohen et al., IEEE TSE 1997): each row starts from an uncovered pair
and fixes the other factors one at a time, in a random order, to the value covering most uncovered pairs; of a
few such candidates the row covering most is kept. No library for it is installed here (allpairspy and pypict
are not in the package index of these machines), and the constraints below need only a few lines.
"""
from __future__ import annotations

import itertools
import random
from typing import Callable, Mapping

Row = dict


def allowed_pairs(factors: Mapping[str, tuple], allowed: Callable[[Row], bool]) -> set:
    """Every pair ((factor a, value), (factor b, value)), a before b in ``factors``' order, that some whole row
    ``allowed`` accepts holds (a constraint reads only the factors a partial row has)."""
    names, memo = list(factors), {}
    return {((a, x), (b, y)) for i, a in enumerate(names) for b in names[i + 1:]
            for x in factors[a] for y in factors[b]
            if allowed({a: x, b: y}) and _completable({a: x, b: y}, factors, allowed, memo)}


def allowed_triples(factors: Mapping[str, tuple], allowed: Callable[[Row], bool], triples,
                    wanted: Callable[[Row], bool] = lambda row: True) -> set:
    """Every value triple ((a, x), (b, y), (c, z)) of the factor triples ``triples`` (names in ``factors``' order)
    that ``wanted`` asks for and some whole row ``allowed`` accepts holds."""
    out, memo = set(), {}
    for shape in triples:
        for values in itertools.product(*(factors[n] for n in shape)):
            row = dict(zip(shape, values))
            if wanted(row) and allowed(row) and _completable(row, factors, allowed, memo):
                out.add(tuple(zip(shape, values)))
    return out


def _pairs_of(row: Row, names: list) -> set:
    present = [n for n in names if n in row]
    return {((a, row[a]), (b, row[b])) for i, a in enumerate(present) for b in present[i + 1:]}


def _held(row: Row, shapes) -> set:
    """The value tuples ``row`` holds of the factor tuples ``shapes`` whose factors it has."""
    return {tuple((n, row[n]) for n in shape) for shape in shapes if all(n in row for n in shape)}


def not_held(rows, targets: set) -> set:
    """The value tuples of ``targets`` no row of ``rows`` holds."""
    shapes = {tuple(n for n, _ in t) for t in targets}
    return set(targets) - set(itertools.chain.from_iterable(_held(r, shapes) for r in rows))


def _completable(row: Row, factors: Mapping[str, tuple], allowed: Callable[[Row], bool], memo: dict | None = None) -> bool:
    """Whether some whole row extends ``row`` (depth-first; the constraints are loose, so the first branches end);
    ``memo`` keeps the answers of one factors-and-allowed pair."""
    key = frozenset(row.items()) if memo is not None else None
    if key is not None and key in memo:
        return memo[key]
    rest = [n for n in factors if n not in row]
    answer = not rest or any(allowed(trial := {**row, rest[0]: value}) and _completable(trial, factors, allowed, memo)
                             for value in factors[rest[0]])
    if key is not None:
        memo[key] = answer
    return answer


def covering_array(factors: Mapping[str, tuple], allowed: Callable[[Row], bool], rng: random.Random,
                   candidates: int = 8, base: tuple[Row, ...] = (), plain: frozenset = frozenset(),
                   targets: set | None = None) -> list[Row]:
    """Rows (factor -> value), each accepted whole by ``allowed``, covering every pair some such row holds (or the
    value tuples ``targets``, of allowed_pairs or allowed_triples): the ``base`` rows first, then greedy ones for the
    tuples they leave. Each value is fixed only where the row can still
    be completed, so every started row ends whole. Where values tie on pairs covered, the first value of a factor
    named in ``plain`` (its plain level) is taken, of another a random one: a kernel's special path is often guarded
    by every other feature being plain (rank 4, contiguous, no mask), so rows whose spare features are plain meet such
    guards more often than random ones (a dtype or a path has no plain level)."""
    if not factors:
        raise ValueError("factors must name at least one factor")
    empty = [name for name, values in factors.items() if not values]
    if empty:
        raise ValueError(f"factors: {', '.join(empty)} has no values")
    names = list(factors)
    for row in base:
        if set(row) != set(names) or not allowed(row) or any(row[n] not in factors[n] for n in names):
            raise ValueError(f"base: {row} is not a whole allowed row of the factors")
    uncovered = set(allowed_pairs(factors, allowed) if targets is None else targets)
    shapes = {tuple(n for n, _ in t) for t in uncovered}
    # (a value's gain counts the tuples of the factor it sets: the others are the same for each of its values)
    shapes_of = {name: {shape for shape in shapes if name in shape} for name in names}
    memo: dict = {}
    rows: list[Row] = list(base)
    for row in base:
        uncovered -= _held(row, shapes)
    while uncovered:
        best, gain = None, set()
        pool = sorted(uncovered)
        for _ in range(candidates):
            row = dict(rng.choice(pool))
            for name in rng.sample([n for n in names if n not in row], len(names) - len(row)):
                present = [shape for shape in shapes_of[name] if all(n == name or n in row for n in shape)]
                scored = [(sum(tuple((n, value if n == name else row[n]) for n in shape) in uncovered
                               for shape in present),
                           name in plain and value == factors[name][0], rng.random(), value)
                          for value in factors[name] if allowed({**row, name: value})]
                # (the best value that leaves the row completable: the search asked of the best alone, mostly, not of
                # every value, which was half the construction's time)
                row[name] = next(value for *_, value in sorted(scored, reverse=True)
                                 if _completable({**row, name: value}, factors, allowed, memo))
            covered = _held(row, shapes) & uncovered
            if len(covered) > len(gain):
                best, gain = row, covered
        rows.append(best)
        uncovered -= gain
    return rows


def uncovered_pairs(rows: list[Row], factors: Mapping[str, tuple], allowed: Callable[[Row], bool]) -> set:
    """The allowed pairs no row holds (for tests and reports)."""
    return not_held(rows, allowed_pairs(factors, allowed))
