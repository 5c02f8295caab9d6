"""The invariant table of the README, generated from the registry (one source of truth).

    python -m kernels.harness.catalogue     # prints the Markdown table the README holds
"""
from __future__ import annotations

from kernels.harness.cases import DEFAULT_CASES, THOROUGH_CASES, standard_cases
from kernels.harness.generate import RELATIONS
from kernels.harness.invariants import INVARIANTS

_NAMES = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}


def _cases(inv, cases) -> str:
    if inv.name in RELATIONS:
        return "drawn problems"
    names = [c.name for c in cases if inv.runs_on(c)]
    return ", ".join(names) if len(names) <= 4 else f"{len(names)} cases"


def markdown_table() -> str:
    lines = ["| invariant | claim | bug classes it targets | default cases | thorough adds | needs |",
             "|---|---|---|---|---|---|"]
    extra = THOROUGH_CASES[len(DEFAULT_CASES):]
    for inv in INVARIANTS:
        needs = sorted(inv.needs)
        if inv.dtypes is not None:
            needs.append(" ".join(sorted(_NAMES[str(d).removeprefix("torch.")] for d in inv.dtypes)) + " only")
        lines.append(f"| `{inv.name}` | {inv.claim_id or '—'} | {inv.bug_classes} | {_cases(inv, standard_cases())} | "
                     f"{_cases(inv, extra)} | {', '.join(needs) or '—'} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown_table())
