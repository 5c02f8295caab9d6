"""The report as GitHub-flavoured Markdown: math in ``$…$`` / ``$$…$$``, figures as SVG files beside it.

Inline math uses GitHub's ``$`…`$`` form, which keeps Markdown from reading ``_`` or ``*``
inside a formula. Computes nothing.
"""
from __future__ import annotations

from proofs.render import markdown_prose
from proofs.report import fmt
from proofs.report.model import LAYER_TITLES, LAYERS, NOT_CHECKED, PASSED, Report

FIGURE_DIR = "figures"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _math(latex: str) -> str:
    """Inline math safe inside a table cell: a bare | would split the cell."""
    if not latex:
        return ""
    if fmt.too_long(latex):
        return f"_{fmt.too_long(latex)}_"
    tex = latex.replace(r"\|", r"\Vert ").replace("|", r"\vert ").replace("\n", " ")
    return f"$`{tex}`$"


def prose(text: str, formulas: dict[str, str] | None = None) -> str:
    """Prose with its index groups as <sub>/<sup>, and the seeds' TeX and the checker's SymPy text (``formulas``)
    as inline math, safe in a table cell."""
    return markdown_prose(text, formulas, math=_math)


def _display(latex: str) -> list[str]:
    if fmt.too_long(latex):
        return [f"_{fmt.too_long(latex)}_", ""]
    return ["$$", latex.replace("\n", " "), "$$", ""] if latex else []


def _layer(layer: str, ev) -> str:
    word = fmt.evidence_word(layer, ev)
    return f"**{word.upper()}**" if ev.status not in (PASSED, NOT_CHECKED) else word


def summary(report: Report) -> list[str]:
    head = " | ".join(LAYER_TITLES[x] for x in LAYERS)
    out = [f"| claim | {head} | verdict |", "|---|" + "---|" * (len(LAYERS) + 1)]
    for c in report.claims:
        cells = " | ".join(_layer(x, c.layer(x)) for x in LAYERS)
        verdict = fmt.overall(c.verdict)
        out.append(f"| [`{c.id}`](#{c.id}) {_cell(prose(c.title))} | {cells} | {'**' + verdict + '**' if c.verdict != PASSED else verdict} |")
    return out + ["", f"_{fmt.not_checked('')}_ is written where a layer has no evidence for a claim.", ""]


def _proof(c) -> list[str]:
    p = c.proofs
    out = [f"#### {LAYER_TITLES['proofs']}: {_layer('proofs', p)}", ""]
    if p.status == NOT_CHECKED:
        return out + [f"_{fmt.not_checked(p.reason)}_", ""]
    if p.reason:
        out += [f"> {prose(p.reason, p.formulas)}", ""]
    for latex in p.conjuncts_latex or [p.statement_latex]:
        out += _display(latex)
    if p.steps:
        out += ["| # | rule | step | check |", "|---|---|---|---|"]
        for s in p.steps:
            check = ("premise" if s.status == "premise"
                     else ("✓ " if s.status == PASSED else "✗ **FAILED** ") + prose(s.detail, p.formulas))
            out.append(f"| {s.number} | {_cell(prose(s.rule))} | {_cell(prose(s.description, p.formulas))}: {_math(s.latex)} | "
                       f"{_cell(check)} |")
        out.append("")
    out += [f"{p.checked_steps} checked steps, {p.premises} premises. "
            f"Verdict: {prose(p.verdict_line or p.status, p.formulas)}.", ""]
    out += ["Trusted, not checked:", ""] + ([f"- {_cell(prose(t, p.formulas))}" for t in p.trusted] or ["- nothing"])
    out += [""]
    if p.results:
        out += ["Result: " + "; ".join(f"`{name}` = {_math(tex) if tex else prose(''.join(text))}"
                                       for name, tex, *text in p.results), ""]
    return out


def _numeric(c) -> list[str]:
    n = c.numeric
    out = [f"#### {LAYER_TITLES['numeric']}: {_layer('numeric', n)}", ""]
    if n.status == NOT_CHECKED:
        return out + [f"_{fmt.not_checked(n.reason)}_", ""]
    if n.reason:
        out += [f"> {prose(n.reason)}", ""]
    out += [f"- {k}: {_cell(prose(v))}" for k, v in fmt.numeric_facts(n)] + [""]
    if n.parts:
        out += ["| " + " | ".join(fmt.PART_HEADERS) + " |", "|---" * len(fmt.PART_HEADERS) + "|"]
        out += ["| " + " | ".join(_cell(prose(x)) for x in fmt.part_row(p)) + " |" for p in n.parts] + [""]
    return out


def _kernel(c, report: Report) -> list[str]:
    k, s = c.kernels, report.kernels
    out = [f"#### {LAYER_TITLES['kernels']}: {_layer('kernels', k)}", ""]
    if k.status == NOT_CHECKED:
        return out + [f"_{fmt.not_checked(k.reason)}_", ""]
    out += [f"- implementation: `{s.implementation}` on {s.device}, {s.mode}",
            f"- dtypes: {', '.join(k.dtypes)}; invariants: {', '.join(k.invariants)}; {len(k.checks)} checks"]
    if k.worst is not None:
        label = "closest to its bound" if k.status == PASSED else "first failure"
        out.append(f"- {label}: {fmt.check_line(k.worst)}")
    out += [f"- ✗ {fmt.check_line(x)}" for x in k.checks if not x.passed]
    return out + [""]


def claim_section(c, report: Report) -> list[str]:
    out = [f'<a id="{c.id}"></a>', "", f"### {prose(c.title)} (`{c.id}`): {fmt.overall(c.verdict)}", "",
           prose(c.statement), ""]
    if c.theorem:
        out += [f"Theorem: `{c.theorem}`", ""]
    if c.assumptions:
        out += ["Assumptions: " + "; ".join(prose(a) for a in c.assumptions) + ".", ""]
    for s in c.seeds:
        out += [f"> “{prose(s['quote'])}”", ">", f"> — {s.get('title', '')} (`{s['file']}`)", ""]
    for r in c.references:
        out += [f"Reference: {prose(r)}", ""]
    return out + _proof(c) + _numeric(c) + _kernel(c, report)


def kernels_section(report: Report) -> list[str]:
    s = report.kernels
    if s.status == NOT_CHECKED:
        return [f"_{fmt.not_checked(s.reason)}_", ""]
    out = [f"- implementation: `{s.implementation}`", f"- device: {s.device}, {s.mode}",
           f"- dtypes: {', '.join(s.dtypes) or '—'}",
           f"- settings: {', '.join(f'{k}={v}' for k, v in sorted(s.settings.items()))}",
           f"- checks run: {s.checks_run}; verdict: **{fmt.word('kernels', s.status)}**", ""]
    if s.reason:
        out += [f"> {s.reason}", ""]
    if s.per_invariant:
        out += ["| invariant | claim | checks run | failed | not applicable | worst case: discrepancy against bound |",
                "|---|---|---|---|---|---|"]
        out += [f"| {_cell(r['invariant'])} | {', '.join(x for x in r['claim_ids'] if x) or '—'} | {r['checks']} | "
                f"{r['failed']} | {r.get('not_applicable', 0)} | {_cell(fmt.check_line(r['worst'], invariant=False) if r['worst'] else '—')} |"
                for r in s.per_invariant]
        out.append("")
    if s.error_vs_length:
        out += ["| dtype | N | max error | bound | |", "|---|---|---|---|---|"]
        out += [f"| {r['dtype']} | {r['n']} | {fmt.number(r['error'])} | {fmt.number(r['bound'])} | "
                f"{'within' if r['passed'] else '**OVER**'} |" for r in s.error_vs_length]
        out.append("")
    return out


def audit_section(report: Report) -> list[str]:
    a = report.audit
    if a.status != PASSED:
        return [f"_{fmt.not_checked(a.reason)}_" if a.status == NOT_CHECKED else f"> {a.reason}", ""]
    counts = ", ".join(f"{n} {verdict}" for verdict, n in a.counts.items())
    out = [f"{len(a.records)} numbers and statements in the seeds: {counts}.", "",
           "| id | the seed says | checked | verdict | true value or reason |", "|---|---|---|---|---|"]
    out += [f"| `{r.id}` | “{_cell(prose(r.quote))}” ({fmt.seed_name(r.seed)}) | {_cell(prose(r.checked))} | "
            f"{_cell(r.verdict)} | {_cell(prose(r.value))} |" for r in a.records]
    return out + [""]


def environment_section(report: Report) -> list[str]:
    env, t = report.environment, report.timings
    return [
        f"- mode: `--{report.run['mode']}`: {report.run['summary']}", f"- settings: {fmt.plan(report.run['plan'])}",
        f"- seed: {report.run['seed']}", f"- source: {fmt.source(env)}",
        *[f"- seed use, {k}: {v}" for k, v in env["seeds"].items() if k != "seed"],
        f"- python {env['python']} on {env['platform']}, {env['cpus']} CPUs",
        "- packages: " + ", ".join(f"{k} {v}" for k, v in env["packages"].items()),
        f"- kernel device: {env['kernel_device']}, {env['kernel_mode']}",
        f"- times: {fmt.seconds(t)}",
        f"- generated: {t.get('generated_at', '')}", "",
    ]


# The report's sections: (anchor, heading); each heading carries its anchor, so a link does not depend on how a
# Markdown viewer makes anchors of headings.
SECTIONS = (("summary", "Summary"), ("figures", "Figures"), ("claims", "Claims"), ("kernel", "Kernel conformance"),
            ("audit", "Audit of the seeds' numbers"), ("environment", "Environment"))


def _heading(anchor: str, title: str) -> list[str]:
    return [f'<a id="{anchor}"></a>', "", f"## {title}", ""]


def contents(report: Report) -> list[str]:
    """The table of contents: every section, figure and claim (grouped by topic) as a link to its anchor."""
    topics: dict[str, list] = {}
    for c in report.claims:
        topics.setdefault(c.topic, []).append(c)
    out = ["## Contents", ""]
    for anchor, title in SECTIONS:
        out.append(f"- [{title}](#{anchor})")
        if anchor == "figures":
            out += [f"  - [{_cell(f.title)}](#figure-{f.name})" for f in report.figures]
        if anchor == "claims":
            for topic, claims in topics.items():
                out += [f"  - _{topic}_"] + [f"    - [{_cell(prose(c.title))}](#{c.id}): {fmt.overall(c.verdict)}"
                                             for c in claims]
    if report.summary()["failing"]:
        out.append("- [Failing claims](#failing)")
    return out + [""]


def render(report: Report, figure_files: dict[str, str], problems: dict[str, str]) -> str:
    """``figure_files`` maps a figure's name to its path relative to the Markdown file."""
    s = report.summary()
    banner = (f"**All {s['claims']} claims hold.**" if s["verdict"] == PASSED
              else f"**{len(s['failing'])} of {s['claims']} claims fail:** {', '.join(s['failing'])}.")
    out = ["# attention-proofs report", "",
           "Every claim is derived symbolically (SymPy), confirmed by Monte Carlo (NumPy) and, where it applies, "
           f"checked on a real attention kernel (Triton). Mode `--{report.run['mode']}`, seed {report.run['seed']}: "
           f"{report.run['summary']}",
           "", banner, ""] + [x for line in fmt.overview(report) for x in (line, "")]
    out += [f"Source: {fmt.source(report.environment)}.", ""] + contents(report)
    title = dict(SECTIONS)
    out += _heading("summary", title["summary"]) + summary(report) + _heading("figures", title["figures"])
    for f in report.figures:
        out += [f'<a id="figure-{f.name}"></a>', ""]
        if f.name in figure_files:
            out += [f"![{f.title}]({figure_files[f.name]})", "", f"**{prose(f.title)}.** {prose(f.caption)}", ""]
        else:
            out += [f"**{prose(f.title)}.** _not drawn: {problems.get(f.name, f.reason)}_", ""]
    out += _heading("claims", title["claims"])
    for c in report.claims:
        out += claim_section(c, report)
    out += _heading("kernel", title["kernel"]) + kernels_section(report)
    out += _heading("audit", title["audit"]) + audit_section(report)
    out += report.survey.get("markdown", [])  # "## Ecosystem conformance survey", when the survey was given
    out += _heading("environment", title["environment"]) + environment_section(report)
    if s["failing"]:
        out += _heading("failing", "Failing claims") + [f"- **{f}**" for f in s["failing"]] + [""]
    return "\n".join(out)
