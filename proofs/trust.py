"""The trust base of every claim, as a Markdown table: ``python -m proofs.trust``.

One row per claim: its verdict line and what it takes on trust rather than checks, by kind
(definitions, assumptions of the claim, cited theorems, induction hypotheses).
"""
from __future__ import annotations

from proofs import CLAIMS
from proofs.engine import PREMISE_KINDS


def rows() -> list[tuple[str, str, dict[str, list[str]]]]:
    return [(c.id, d.verdict_line, d.trust_base) for c in CLAIMS for d in (c.derive(),)]


def table(data=None) -> str:
    data = rows() if data is None else data
    head = "| claim | verdict | " + " | ".join(PREMISE_KINDS) + " |"
    out = [head, "|" + "---|" * (2 + len(PREMISE_KINDS))]
    for cid, verdict, base in data:
        cells = [str(len(base.get(k, []))) + (": " + "; ".join(base[k]) if k == "cited" and base.get(k) else "")
                 for k in PREMISE_KINDS]
        out.append(f"| `{cid}` | {verdict} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main() -> int:
    data = rows()
    print(table(data))
    print()
    for cid, _, base in data:
        for kind, names in base.items():
            for name in names:
                print(f"- `{cid}` {kind}: {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
