"""Argument checks for the public numeric helpers: a ValueError that names the argument."""
from __future__ import annotations

import math
import numbers

DISTRIBUTIONS = ("normal", "uniform", "rademacher", "student-t")


def positive_int(value, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if int(value) < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def n_samples(value, name: str = "n_samples") -> int:
    return positive_int(value, name, minimum=2)


def seed(value, name: str = "seed") -> int:
    return positive_int(value, name, minimum=0)


def real(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
        raise ValueError(f"{name} must be a finite real number, got {value!r}")
    return float(value)


def variance(value, name: str) -> float:
    v = real(value, name)
    if v < 0:
        raise ValueError(f"{name} must be a non-negative variance, got {value!r}")
    return v


def alpha(value, name: str = "alpha") -> float:
    a = real(value, name)
    if not 0 < a < 1:
        raise ValueError(f"{name} must lie strictly between 0 and 1, got {value!r}")
    return a


def distribution(value, name: str = "distribution") -> str:
    if value not in DISTRIBUTIONS:
        raise ValueError(f"{name} must be one of {', '.join(DISTRIBUTIONS)}; got {value!r}")
    return value


def nu(value, name: str = "nu") -> float:
    v = real(value, name)
    if v <= 4:  # the variance of a sample variance needs a finite fourth moment: ν > 4
        raise ValueError(f"{name} must exceed 4 for Student-t components (finite fourth moment), got {value!r}")
    return v


def dimensions(values, name: str) -> tuple[int, ...]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise ValueError(f"{name} must be a non-empty sequence of positive integers, got {values!r}")
    out = tuple(positive_int(v, name) for v in values)
    if not out:
        raise ValueError(f"{name} must be a non-empty sequence of positive integers, got {values!r}")
    return out
