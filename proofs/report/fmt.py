"""Words and number formats shared by the HTML and Markdown renderers (formatting only)."""
from __future__ import annotations

import re

from proofs.report.model import FAILED, NOT_A_CHECKOUT, NOT_CHECKED, NOT_CHECKED_TEXT, PASSED, VERDICT_WORDS


def number(x, digits: int = 4) -> str:
    """A measured number, short: ints with separators, floats to ``digits`` significant figures."""
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        return f"{x:.{digits}g}"
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(number(v, digits) for v in x) + "]"
    return str(x)


# Beyond this much LaTeX a formula (e.g. a 6×6 symbolic Jacobian) says nothing a reader can
# take in, and its MathML runs to tens of kilobytes; the JSON keeps every formula whole.
LONG_LATEX = 1500


def too_long(latex: str) -> str:
    """Empty when ``latex`` is short enough to show; otherwise the note shown in its place."""
    if len(latex) <= LONG_LATEX:
        return ""
    return f"(formula of {len(latex):,} LaTeX characters, too long to show; it is in report.json)"


def plan(plan: dict) -> str:
    """What a mode runs, one ``key=value`` per setting (dicts shortened to ``k: v`` lists)."""
    def value(v):
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k}: {number(x)}" for k, x in v.items()) + "}" if v else "layer defaults"
        return "layer default" if v is None else number(v)

    return "; ".join(f"{k}={value(v)}" for k, v in plan.items() if k not in ("mode", "summary"))


def seconds(timings: dict) -> str:
    out = ", ".join(f"{k} {v:.1f} s" for k, v in timings.get("seconds", {}).items())
    if timings.get("proofs_in_parallel"):
        out += " (the derivations ran in a worker process beside the other layers)"
    return out


def interval(ci) -> str:
    return "—" if not ci else f"[{number(ci[0])}, {number(ci[1])}]"


def word(layer: str, status: str) -> str:
    """What a layer's status is called in that layer's terms: proved, confirmed, conforms, ..."""
    if status == NOT_CHECKED:
        return NOT_CHECKED
    return VERDICT_WORDS[layer].get(status, status)


def evidence_word(layer: str, ev) -> str:
    """A claim's layer verdict in words: the evidence's own where it states one (numeric's power-aware
    "confirmed" / "consistent (power p against e)"), else the layer's word for its status; a layer with no
    evidence says why in short where its reason starts with the why ("not run in --quick", "not applicable")."""
    if ev.status == NOT_CHECKED:
        short = re.match(r"(not run in --\w+|not applicable)\b", ev.reason or "")
        return short.group(1) if short else NOT_CHECKED
    return getattr(ev, "word", "") or word(layer, ev.status)


def overall(status: str) -> str:
    return {PASSED: "holds", FAILED: "FAILS", NOT_CHECKED: NOT_CHECKED}[status]


def not_checked(reason: str) -> str:
    return f"{NOT_CHECKED_TEXT}: {reason}" if reason else NOT_CHECKED_TEXT


def check_line(c, *, invariant: bool = True) -> str:
    """A kernel check (``kernels.harness.Check``) as one phrase: invariant, case, dtype, discrepancy against bound."""
    parts = [c.invariant if invariant else "", c.case, c.dtype]
    text = ", ".join(str(p) for p in parts if p)
    if c.error:
        return f"{text}: raised {c.error}"
    return f"{text}: {number(c.discrepancy)} against bound {number(c.bound)}"


def numeric_facts(n) -> list[tuple[str, str]]:
    """A confirmation's numbers as (label, text) pairs; a floating-point check shows its tolerance."""
    facts = [("what", n.description or "—"), ("estimate", number(n.estimate)),
             ("derived value", number(n.claimed))]
    if n.p_value is not None:  # a statistical test; a floating-point check has a bound instead
        facts += [("confidence interval", interval(n.ci)), ("p-value", number(n.p_value, 3))]
    if n.tolerance is not None:
        facts.append(("tolerance (rounding bound)", number(n.tolerance)))
    facts += [("α", number(n.alpha)), ("samples", number(n.n_samples))]
    if n.effect_power is not None:
        facts.append((f"power against a {n.effect:.0%} error (the stated effect)", number(n.effect_power, 3)))
    if n.power is not None:
        facts.append((f"power against a {n.power_error:.0%} error", number(n.power, 3)))
    return facts


PART_HEADERS = ("parameter point", "estimate", "derived", "CI", "p / tolerance", "verdict")


def part_row(p: dict) -> tuple[str, ...]:
    test = number(p["p_value"], 3) if p.get("p_value") is not None else f"≤ {number(p.get('tolerance'))}"
    return (p["description"], number(p["estimate"]), number(p.get("claimed")), interval(p.get("ci")), test,
            "confirmed" if p["confirmed"] else "REJECTED")


def overview(report) -> list[str]:
    """One line each on what the kernel layer and the seed audit did, for the top of the report."""
    k, a = report.kernels, report.audit
    if k.status == NOT_CHECKED:
        kernel = f"Kernel: {not_checked(k.reason)}."
    else:
        kernel = (f"Kernel: {k.implementation} on {k.device}, {k.mode}: {k.checks_run} conformance checks, "
                  f"{len(k.failures)} failed" + (f" ({k.reason})" if k.reason else "") + ".")
    if a.status == PASSED:
        audit = (f"Seed audit: {len(a.records)} numbers and statements: "
                 + ", ".join(f"{n} {v}" for v, n in a.counts.items()) + ".")
    else:
        audit = f"Seed audit: {not_checked(a.reason) if a.status == NOT_CHECKED else a.reason}."
    return [kernel, audit]


def seed_title(file: str) -> str:
    """A seed document's own title, for people (its file name is a hash)."""
    from proofs.seed_data import SEED_TITLES

    return SEED_TITLES.get(file, "untitled seed")


def seed_name(file: str) -> str:
    """A seed as "title (file)"."""
    return f"{seed_title(file)} ({file})"


def source(environment: dict) -> str:
    """Where the report's code came from: its git commit, or that it was not run from a git checkout."""
    commit = environment.get("commit") or NOT_A_CHECKOUT
    return commit if commit == NOT_A_CHECKOUT else f"git commit {commit}"
