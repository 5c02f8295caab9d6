"""The survey as an invariant × implementation table: text, Markdown, JSON, and the report's section.

A cell is "✓ r" (every check passed; r = the worst discrepancy / bound over cases and dtypes),
"✗ r" (some failed; r the worst ratio, with the dtypes that failed), "✗ raised" (the library raised
on a check it should run), or "n/a" (no check ran: the library lacks the feature, or the claim's
premise excludes every case it was run on).
"""
from __future__ import annotations

import html
import json
import math
import os

from kernels.ecosystem.adapters import Unsupported
from kernels.harness.report import NOT_APPLICABLE as NOT_APPLICABLE_STATUS

NOT_APPLICABLE = "n/a"
_UNSUPPORTED = f"{Unsupported.__name__}:"


def ratio(check: dict) -> float:
    if check.get("error"):
        return math.inf
    d, b = check["discrepancy"], check["bound"]
    if d is None or math.isnan(d):  # null in the JSON: non-finite
        return math.inf
    if b is None:  # null in the JSON: an infinite (vacuous) bound, as the rounding bound's can be
        b = math.inf
    return d / b if b > 0 else (0.0 if d == 0 else math.inf)


def not_applicable(check: dict) -> bool:
    """The harness found the feature missing (status "not applicable"), or the adapter refused an
    argument the library cannot express (Unsupported)."""
    if check.get("status") == NOT_APPLICABLE_STATUS:
        return True
    return bool(check.get("error")) and check["error"].startswith(_UNSUPPORTED)


def _short_dtype(d: str) -> str:
    return {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}.get(d, d)


def cell(checks: list[dict]) -> str:
    ran = [c for c in checks if not not_applicable(c)]
    if not ran:
        return NOT_APPLICABLE
    failed = [c for c in ran if not c["passed"]]
    if not failed:
        return f"✓ {_num(max(ratio(c) for c in ran))}"
    dtypes = ", ".join(_short_dtype(d) for d in dict.fromkeys(c["dtype"] for c in failed))
    if all(c.get("error") for c in failed):
        return f"✗ raised ({dtypes})"
    worst = max(ratio(c) for c in failed if not c.get("error"))
    return f"✗ {_num(worst)} ({dtypes})"


def _num(x: float) -> str:
    if math.isinf(x):
        return "inf"
    return f"{x:.2f}" if x < 10 else f"{x:.2g}"


def invariants(doc: dict) -> list[str]:
    return list(dict.fromkeys(c["invariant"] for p in doc["peers"] for c in p["checks"]))


def grid(doc: dict) -> tuple[list[str], list[list[str]]]:
    """(header, rows): one row per invariant, one column per implementation, then a totals row."""
    peers = doc["peers"]
    header = ["invariant", "claim"] + [p["name"] for p in peers]
    claims = {c["invariant"]: c["claim_id"] or "" for p in peers for c in p["checks"]}
    rows = []
    for inv in invariants(doc):
        row = [inv, claims[inv]]
        for p in peers:
            row.append(cell([c for c in p["checks"] if c["invariant"] == inv]) if p["status"] == "ran" else "—")
        rows.append(row)
    totals = ["checks passed", ""]
    for p in peers:
        ran = [c for c in p["checks"] if not not_applicable(c)]
        totals.append(f"{sum(c['passed'] for c in ran)}/{len(ran)}" if p["status"] == "ran" else p["status"])
    rows.append(totals)
    return header, rows


def text(doc: dict) -> str:
    header, rows = grid(doc)
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    lines = ["  ".join(x.ljust(w) for x, w in zip(r, widths)) for r in [header] + rows]
    return "\n".join(lines)


def _md_row(cells) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def markdown(doc: dict, heading: str = "##") -> str:
    header, rows = grid(doc)
    out = [f"{heading} Ecosystem conformance survey", "",
           f"`verify_attention`'s default cases (seed {doc['seed']}) on each library's attention, {doc['date']}, "
           f"{doc['machine']}, Python {doc['python']}, torch {doc['torch']}; {doc['seconds']} s in all "
           f"({doc.get('cpu_seconds', '?')} s of CPU). "
           "A cell is ✓/✗ with the worst discrepancy ÷ bound over the cases and dtypes (1 = at the bound), "
           "the dtypes that failed, or n/a where the library lacks the feature.", "",
           _md_row(header), _md_row(["---"] * len(header))] + [_md_row(r) for r in rows]
    out += ["", f"{heading}# Implementations", "",
            _md_row(["implementation", "version", "layout", "causal alignment", "dtypes", "scale", "mask", "time"]),
            _md_row(["---"] * 8)]
    for p in doc["peers"]:
        out.append(_md_row([p["name"], f"{p['library']} {p['version']}", p["layout"], p["causal"] or "none",
                            ", ".join(_short_dtype(d) for d in p["dtypes"]), p["scale"], p["mask"],
                            f"{p.get('process_seconds', p['seconds'])} s ({p.get('cpu_seconds', '?')} s CPU)"]))
    notes = [(p["name"], x) for p in doc["peers"] for x in p.get("limits", ())]
    notes += [(p["name"], p["error"]) for p in doc["peers"] if p.get("error")]
    if notes:
        out += ["", "Not applicable, or not run:", ""] + [f"- {name}: {why}" for name, why in notes]
    failures = _failures(doc)
    if failures:
        out += ["", f"{heading}# Failed checks", ""] + failures
    return "\n".join(out) + "\n"


def _failures(doc: dict, per_invariant: int = 3) -> list[str]:
    lines = []
    for p in doc["peers"]:
        failed = [c for c in p["checks"] if not c["passed"] and not not_applicable(c)]
        for inv in dict.fromkeys(c["invariant"] for c in failed):
            mine = sorted((c for c in failed if c["invariant"] == inv), key=ratio, reverse=True)
            lines.append(f"- **{p['name']}**, {inv}: {len(mine)} failed check(s); worst:")
            lines += [f"  - {_describe(c)}" for c in mine[:per_invariant]]
    return lines


def _describe(c: dict) -> str:
    head = f"{c['case']} ({c['dtype']})"
    if c.get("error"):
        return f"{head}: raised {c['error']}"
    extra = f"; {c['detail']}" if c.get("detail") else ""
    d = "non-finite" if c["discrepancy"] is None else f"{c['discrepancy']:.3g}"  # null in the JSON
    bound = "non-finite" if c["bound"] is None else f"{c['bound']:.3g}"
    return f"{head}: discrepancy {d} > bound {bound}{extra}"


def write(doc: dict, out_dir: str) -> tuple[str, str]:
    os.makedirs(out_dir, exist_ok=True)
    md, js = os.path.join(out_dir, "survey.md"), os.path.join(out_dir, "survey.json")
    with open(md, "w") as f:
        f.write(markdown(doc))
    with open(js, "w") as f:
        json.dump(_strict(doc), f, indent=1, sort_keys=True, allow_nan=False)
        f.write("\n")
    return md, js


def _strict(x):
    """Standard JSON: a non-finite discrepancy (a raised or non-finite output) becomes null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _strict(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_strict(v) for v in x]
    return x


def load(path: str) -> dict | None:
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def load_or_fail(path: str) -> dict:
    doc = load(path)
    if doc is None:
        raise ValueError(f"{path}: no such survey file")
    return doc


def merge(docs: list[dict]) -> dict:
    """One document from several runs: peers in catalogue order, a later run's record of a peer
    replacing an earlier one's; the seconds are summed, the date is the latest run's."""
    from kernels.ecosystem.adapters import PEERS

    seeds = {d["seed"] for d in docs}
    if len(seeds) != 1:
        raise ValueError(f"the runs used different seeds {sorted(seeds)}: their checks cannot share a table")
    by_name = {}
    for d in docs:
        by_name.update({p["name"]: p for p in d["peers"]})
    order = [p.name for p in PEERS if p.name in by_name]
    last = docs[-1]
    return dict(last, peers=[by_name[n] for n in order], seconds=round(sum(d["seconds"] for d in docs), 1),
                cpu_seconds=round(sum(by_name[n].get("cpu_seconds", 0) for n in order), 1))


DEFAULT_OUT = "survey"
FILE_NAME = "survey.json"


def report_data(out_dir: str) -> dict:
    """What the proof report shows of the survey written to ``out_dir``, rendered once here so the
    report's renderers only place it: the Markdown lines, the HTML fragment and the table itself."""
    path = os.path.join(out_dir, FILE_NAME)
    doc = load(path)
    if doc is None:
        raise ValueError(f"--survey {out_dir}: no {FILE_NAME} there (run `attention-proofs survey --out {out_dir}`)")
    header, rows = grid(doc)
    return dict(source=path, date=doc["date"], seed=doc["seed"], header=header, rows=rows,
                versions={p["name"]: f"{p['library']} {p['version']}" for p in doc["peers"]},
                markdown=report_section(path), html=report_html(path))


def report_section(path: str = os.path.join(DEFAULT_OUT, FILE_NAME), heading: str = "##") -> list[str]:
    """The proof report's section, as Markdown lines: empty where the survey has not been run."""
    doc = load(path)
    return markdown(doc, heading).splitlines() + [""] if doc else []


def report_html(path: str = os.path.join(DEFAULT_OUT, FILE_NAME)) -> str:
    """The same section as an HTML fragment (a heading and the table): empty where not run."""
    doc = load(path)
    if not doc:
        return ""
    header, rows = grid(doc)
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    versions = ", ".join(f"{p['name']} ({p['library']} {p['version']})" for p in doc["peers"])
    return (f'<section id="ecosystem-survey"><h2>Ecosystem conformance survey</h2>'
            f"<p>verify_attention's default cases on each library's attention, {html.escape(doc['date'])}: "
            f"{html.escape(versions)}. ✓/✗ with the worst discrepancy ÷ bound (1 = at the bound); n/a: the "
            f"library lacks the feature.</p><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
            "</section>")
