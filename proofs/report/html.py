"""The report as one self-contained HTML file: no network, no JavaScript.

Math is presentation MathML (``mathml.to_mathml``), the figures are inline SVG, the styles
inline CSS. This module lays out finished evidence; it computes nothing.
"""
from __future__ import annotations

from html import escape

from proofs.render import SUB, SUP, TEXT, prose_parts
from proofs.report import fmt
from proofs.report.mathml import to_mathml
from proofs.report.model import FAILED, LAYER_TITLES, LAYERS, NOT_CHECKED, PASSED, Report

_CSS = """
:root { --ok: #1a7f37; --bad: #cf222e; --none: #6e7781; --ink: #1f2328; --line: #d0d7de; --soft: #f6f8fa; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: var(--ink);
       max-width: 72rem; margin: 0 auto; padding: 1.5rem 1.25rem 4rem; }
h1 { font-size: 1.7rem; margin: 0 0 .25rem; } h2 { margin-top: 2.5rem; border-bottom: 1px solid var(--line); }
h3 { margin: 0 0 .5rem; } h4 { margin: 1.2rem 0 .4rem; }
code { font: .9em ui-monospace, "DejaVu Sans Mono", monospace; background: var(--soft); padding: .05em .3em;
       border-radius: 4px; }
table { border-collapse: collapse; margin: .5rem 0 1rem; width: 100%; }
th, td { border: 1px solid var(--line); padding: .3rem .5rem; text-align: left; vertical-align: top; }
th { background: var(--soft); }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.badge { display: inline-block; padding: 0 .5em; border-radius: 1em; font-size: .85em; font-weight: 600;
         white-space: nowrap; color: #fff; }
.badge.passed { background: var(--ok); } .badge.failed { background: var(--bad); }
.badge.precision { background: #0969da; }
.badge.not-checked { background: #fff; color: var(--none); border: 1px solid var(--none); font-weight: 400; }
.banner { padding: .8rem 1rem; border-radius: 8px; margin: 1rem 0; font-size: 1.1rem; }
.banner.passed { background: #dafbe1; border: 1px solid var(--ok); }
.banner.failed { background: #ffebe9; border: 1px solid var(--bad); }
.claim { border: 1px solid var(--line); border-radius: 8px; padding: 1rem 1.25rem; margin: 1.25rem 0; }
.claim.failed { border-color: var(--bad); border-width: 2px; }
.statement { font-size: 1.05rem; }
blockquote { margin: .5rem 0; padding: .25rem .9rem; border-left: 4px solid var(--line); color: #444; }
blockquote cite { display: block; font-size: .85em; color: var(--none); }
.math-block { overflow-x: auto; max-width: 100%; padding: .4rem 0; }
nav.contents { border: 1px solid var(--line); border-radius: 8px; padding: .5rem 1.25rem; margin: 1rem 0;
               background: var(--soft); }
nav.contents h2 { margin: .25rem 0; border: 0; } nav.contents ol { margin: .2rem 0; }
nav.contents ol ol { columns: 2 22rem; font-size: .92em; } nav.contents li { break-inside: avoid; }
nav.contents .topic { color: var(--none); font-style: italic; }
table.steps { table-layout: fixed; }
.steps th:nth-child(1) { width: 2.5rem; } .steps th:nth-child(2) { width: 11rem; }
.steps th:nth-child(4) { width: 15rem; }
.steps div.math { overflow-x: auto; max-width: 100%; padding: .2rem 0; }
.steps td, .detail { overflow-wrap: anywhere; }
.claim p.detail, .claim ul.detail li, .claim p.statement, div.scroll { overflow-x: auto; max-width: 100%; }
table.audit td { overflow-wrap: anywhere; }
/* A formula wider than its column scrolls in its own box, with a scroll bar that shows (not an overlay one). */
.math-block, .steps div.math, ul.results li, .claim .detail { scrollbar-width: thin; scrollbar-color: #8c959f var(--soft); }
.math-block::-webkit-scrollbar, .steps div.math::-webkit-scrollbar, ul.results li::-webkit-scrollbar,
.claim .detail::-webkit-scrollbar { height: 8px; }
.math-block::-webkit-scrollbar-thumb, .steps div.math::-webkit-scrollbar-thumb, ul.results li::-webkit-scrollbar-thumb,
.claim .detail::-webkit-scrollbar-thumb { background: #8c959f; border-radius: 4px; }
@media print { .math-block, .steps div.math, ul.results li, .claim .detail { overflow: visible; } }
table.audit td:first-child code, table.parts td:last-child { white-space: nowrap; }
.steps tr.premise td { background: #fbfbfc; color: #444; }
.steps tr.failed td { background: #ffebe9; }
ul.results li { overflow-x: auto; max-width: 100%; padding: .15rem 0; }
.detail { color: var(--none); font-size: .85em; }
.none { color: var(--none); font-style: italic; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; margin: .25rem 0; }
dl.facts dt { color: var(--none); } dl.facts dd { margin: 0; }
figure { margin: 1.25rem 0; } figure svg { max-width: 100%; height: auto; }
figcaption { font-size: .9rem; color: #444; max-width: 48rem; }
.failing li { color: var(--bad); font-weight: 600; }
math { font-size: 1.05em; }
"""

_AUDIT_CLASS = {"holds": PASSED, "holds to printed precision": "precision", "rounding carried forward": "precision",
                "arithmetic slip": FAILED, "does not hold": FAILED}


def _badge(status: str, text: str, title: str = "") -> str:
    cls = status.replace(" ", "-")
    tip = f' title="{escape(title)}"' if title else ""
    return f'<span class="badge {cls}"{tip}>{escape(text)}</span>'


def _layer_badge(layer: str, ev) -> str:
    return _badge(ev.status, fmt.evidence_word(layer, ev), ev.reason)


def _facts(pairs) -> str:
    items = "".join(f"<dt>{escape(k)}</dt><dd>{v}</dd>" for k, v in pairs)
    return f'<dl class="facts">{items}</dl>'


def _math(latex: str, display: bool = False) -> str:
    note = fmt.too_long(latex)
    return f'<span class="detail">{escape(note)}</span>' if note else to_mathml(latex, display=display)


def prose(text: str, formulas: dict[str, str] | None = None) -> str:
    """Prose as HTML: index and power groups (``S_{N+1}``, ``e^{−t}``) as sub- and superscripts, the seeds' TeX
    and the checker's SymPy text (``formulas``) as MathML, so neither raw TeX nor SymPy's text reaches the page."""
    tags = {TEXT: "{}", SUB: "<sub>{}</sub>", SUP: "<sup>{}</sup>"}
    return "".join(tags[kind].format(escape(t)) if kind in tags else _math(t)
                   for kind, t in prose_parts(text, formulas))


def _none(reason: str) -> str:
    return f'<p class="none">{escape(fmt.not_checked(reason))}</p>'


def summary_table(report: Report) -> str:
    head = "".join(f"<th>{escape(LAYER_TITLES[x])}</th>" for x in LAYERS)
    rows = []
    for c in report.claims:
        cells = "".join(f"<td>{_layer_badge(x, c.layer(x))}</td>" for x in LAYERS)
        rows.append(f'<tr><td><a href="#{escape(c.id)}"><code>{escape(c.id)}</code></a><br>{prose(c.title)}</td>'
                    f"{cells}<td>{_badge(c.verdict, fmt.overall(c.verdict))}</td></tr>")
    return (f'<table id="summary" class="summary"><thead><tr><th>Claim</th>{head}<th>Verdict</th></tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>")


def _proof(c) -> str:
    p = c.proofs
    out = [f"<h4>{escape(LAYER_TITLES['proofs'])} {_layer_badge('proofs', p)}</h4>"]
    if p.status == NOT_CHECKED:
        return "".join(out) + _none(p.reason)
    if p.reason:
        out.append(f'<p class="detail">{prose(p.reason, p.formulas)}</p>')
    # A statement of several conjuncts shows one per line, so it wraps instead of running off the page.
    for latex in p.conjuncts_latex or ([p.statement_latex] if p.statement_latex else []):
        out.append(f'<div class="math-block">{_math(latex, display=True)}</div>')
    rows = []
    for s in p.steps:
        check = "premise" if s.status == "premise" else ("✓ checked" if s.status == PASSED else "✗ FAILED")
        rows.append(f'<tr class="{s.status}"><td class="num">{s.number}</td><td>{prose(s.rule)}</td>'
                    f'<td>{prose(s.description, p.formulas)}<div class="math">{_math(s.latex)}</div></td>'
                    f'<td>{escape(check)}<div class="detail">{prose(s.detail if s.status != "premise" else "", p.formulas)}'
                    "</div></td></tr>")
    if rows:
        out.append('<table class="steps"><thead><tr><th>#</th><th>rule</th><th>step</th><th>check</th></tr>'
                   f"</thead><tbody>{''.join(rows)}</tbody></table>")
    out.append(f'<p class="detail">{p.checked_steps} checked steps, {p.premises} premises. '
               f'Verdict: {prose(p.verdict_line or p.status, p.formulas)}.</p>')
    trusted = "".join(f"<li>{prose(t, p.formulas)}</li>" for t in p.trusted) or "<li>nothing</li>"
    out.append(f'<p class="detail">Trusted, not checked:</p><ul class="detail">{trusted}</ul>')
    if p.results:
        res = "".join(f"<li><code>{escape(name)}</code> = {_math(tex) if tex else prose(''.join(text))}</li>"
                      for name, tex, *text in p.results)
        out.append(f'<p>Result:</p><ul class="results">{res}</ul>')
    return "".join(out)


def _numeric(c) -> str:
    n = c.numeric
    out = [f"<h4>{escape(LAYER_TITLES['numeric'])} {_layer_badge('numeric', n)}</h4>"]
    if n.status == NOT_CHECKED:
        return "".join(out) + _none(n.reason)
    if n.reason:
        out.append(f'<p class="detail">{prose(n.reason)}</p>')
    out.append(_facts([(k, prose(v)) for k, v in fmt.numeric_facts(n)]))
    if n.parts:
        head = "".join(f"<th>{escape(h)}</th>" for h in fmt.PART_HEADERS)
        rows = "".join("<tr>" + "".join(f"<td>{prose(x)}</td>" for x in fmt.part_row(p)) + "</tr>" for p in n.parts)
        out.append(f'<div class="scroll"><table class="parts"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody>'
                   "</table></div>")
    return "".join(out)


def _kernel(c, report: Report) -> str:
    k, s = c.kernels, report.kernels
    out = [f"<h4>{escape(LAYER_TITLES['kernels'])} {_layer_badge('kernels', k)}</h4>"]
    if k.status == NOT_CHECKED:
        return "".join(out) + _none(k.reason)
    facts = [("implementation", f"<code>{escape(s.implementation)}</code>"), ("device", escape(s.device)),
             ("mode", escape(s.mode)), ("dtypes", escape(", ".join(k.dtypes))),
             ("invariants", escape(", ".join(k.invariants))), ("checks", escape(str(len(k.checks))))]
    if k.worst is not None:
        facts.append(("closest to its bound" if k.status == PASSED else "first failure", escape(fmt.check_line(k.worst))))
    out.append(_facts(facts))
    bad = [x for x in k.checks if not x.passed]
    if bad:
        out.append("<ul>" + "".join(f'<li class="detail">✗ {escape(fmt.check_line(x))}</li>' for x in bad) + "</ul>")
    return "".join(out)


def seed_quote(seed: dict) -> str:
    """A seed passage: the quote (its TeX as MathML), then the seed's title and its file."""
    return (f"<blockquote>“{prose(seed['quote'])}”<cite>{escape(seed.get('title', ''))} "
            f"(<code>{escape(seed['file'])}</code>)</cite></blockquote>")


def claim_section(c, report: Report) -> str:
    seeds = "".join(seed_quote(s) for s in c.seeds)
    assumptions = "".join(f"<li>{prose(a)}</li>" for a in c.assumptions)
    theorem = f'<p class="detail">Theorem: <code>{escape(c.theorem)}</code></p>' if c.theorem else ""
    return (f'<section class="claim {c.verdict.replace(" ", "-")}" id="{escape(c.id)}">'
            f"<h3>{prose(c.title)} <code>{escape(c.id)}</code> {_badge(c.verdict, fmt.overall(c.verdict))}</h3>"
            f'<p class="statement">{prose(c.statement)}</p>' + theorem
            + (f"<p>Assumptions:</p><ul>{assumptions}</ul>" if assumptions else "")
            + (f"<p>Seed passage:</p>{seeds}" if seeds else "")
            + "".join(f"<p>Reference: <cite>{prose(r)}</cite></p>" for r in c.references)
            + _proof(c) + _numeric(c) + _kernel(c, report) + "</section>")


def figures_section(report: Report, svgs: dict, problems: dict) -> str:
    out = []
    for f in report.figures:
        if f.name in svgs:
            out.append(f'<figure id="figure-{escape(f.name)}">{svgs[f.name]}<figcaption><b>{prose(f.title)}.</b> '
                       f"{prose(f.caption)}</figcaption></figure>")
        else:
            out.append(f'<figure id="figure-{escape(f.name)}"><figcaption><b>{prose(f.title)}.</b></figcaption>'
                       f'<p class="none">not drawn: {escape(problems.get(f.name, f.reason))}</p></figure>')
    return "".join(out)


def kernels_section(report: Report) -> str:
    s = report.kernels
    if s.status == NOT_CHECKED:
        return _none(s.reason)
    out = [_facts([("implementation", f"<code>{escape(s.implementation)}</code>"), ("device", escape(s.device)),
                   ("mode", escape(s.mode)), ("dtypes", escape(", ".join(s.dtypes) or "—")),
                   ("settings", escape(", ".join(f"{k}={v}" for k, v in sorted(s.settings.items())))),
                   ("checks run", escape(str(s.checks_run))), ("verdict", _badge(s.status, fmt.word("kernels", s.status)))])]
    if s.reason:
        out.append(f'<p class="detail">{escape(s.reason)}</p>')
    if s.per_invariant:
        rows = "".join(
            f"<tr><td>{escape(r['invariant'])}</td><td>{escape(', '.join(x for x in r['claim_ids'] if x) or '—')}</td>"
            f'<td class="num">{r["checks"]}</td><td class="num">{r["failed"]}</td>'
            f'<td class="num">{r.get("not_applicable", 0)}</td>'
            f"<td>{escape(fmt.check_line(r['worst'], invariant=False) if r['worst'] else '—')}</td></tr>"
            for r in s.per_invariant)
        out.append("<div class='scroll'><table><thead><tr><th>invariant</th><th>claim</th><th>checks run</th><th>failed</th>"
                   "<th>not applicable</th>"
                   f"<th>worst case: discrepancy against bound</th></tr></thead><tbody>{rows}</tbody></table></div>")
    if s.error_vs_length:
        rows = "".join(f'<tr><td>{escape(r["dtype"])}</td><td class="num">{r["n"]}</td>'
                       f'<td class="num">{escape(fmt.number(r["error"]))}</td>'
                       f'<td class="num">{escape(fmt.number(r["bound"]))}</td>'
                       f"<td>{_badge(PASSED if r['passed'] else FAILED, 'within' if r['passed'] else 'OVER')}</td></tr>"
                       for r in s.error_vs_length)
        out.append("<p>Error against a float64 reference by sequence length:</p><table><thead><tr><th>dtype</th>"
                   f"<th>N</th><th>max error</th><th>bound</th><th></th></tr></thead><tbody>{rows}</tbody></table>")
    return "".join(out)


def audit_section(report: Report) -> str:
    a = report.audit
    if a.status != PASSED:
        return _none(a.reason) if a.status == NOT_CHECKED else f'<p class="detail">{escape(a.reason)}</p>'
    counts = ", ".join(f"{n} {verdict}" for verdict, n in a.counts.items())
    rows = "".join(
        f"<tr><td><code>{escape(r.id)}</code></td><td>“{prose(r.quote)}”<div class='detail'>{escape(fmt.seed_name(r.seed))}"
        f"</div></td><td>{prose(r.checked)}</td>"
        f"<td>{_badge(_AUDIT_CLASS.get(r.verdict, NOT_CHECKED), r.verdict)}</td><td>{prose(r.value)}</td></tr>"
        for r in a.records)
    return (f"<p>{len(a.records)} numbers and statements in the seeds: {escape(counts)}.</p>"
            "<div class='scroll'><table class='audit'><thead><tr><th>id</th><th>the seed says</th><th>checked</th><th>verdict</th>"
            f"<th>true value or reason</th></tr></thead><tbody>{rows}</tbody></table></div>")


def environment_section(report: Report) -> str:
    env, t = report.environment, report.timings
    packages = ", ".join(f"{k} {v}" for k, v in env["packages"].items())
    plan = fmt.plan(report.run["plan"])
    return _facts([
        ("mode", escape(f"--{report.run['mode']}: {report.run['summary']}")), ("settings", escape(plan)), ("seed", escape(str(report.run["seed"]))),
        ("seeds used", escape("; ".join(f"{k}: {v}" for k, v in env["seeds"].items() if k != "seed"))),
        ("source", escape(fmt.source(env))),
        ("python", escape(f"{env['python']} on {env['platform']}, {env['cpus']} CPUs")),
        ("packages", escape(packages)), ("kernel device", escape(f"{env['kernel_device']}, {env['kernel_mode']}")),
        ("times", escape(fmt.seconds(t))), ("generated", escape(t.get("generated_at", ""))),
    ])


def contents(report: Report) -> str:
    """The table of contents: every section, every figure and every claim (grouped by topic), each a link."""
    def link(target: str, text: str) -> str:
        return f'<a href="#{escape(target)}">{text}</a>'

    figures = "".join(f"<li>{link(f'figure-{f.name}', prose(f.title))}</li>" for f in report.figures)
    topics: dict[str, list] = {}
    for c in report.claims:
        topics.setdefault(c.topic, []).append(c)
    claims = "".join(
        f'<li><span class="topic">{escape(topic)}</span><ol>'
        + "".join(f"<li>{link(c.id, prose(c.title))} {_badge(c.verdict, fmt.overall(c.verdict))}</li>" for c in cs)
        + "</ol></li>" for topic, cs in topics.items())
    sections = [link("summary-heading", "Summary"), *( [link("failing", "Failing claims")] if report.failing else []),
                link("figures", "Figures") + f"<ol>{figures}</ol>", link("claims", "Claims") + f"<ol>{claims}</ol>",
                link("kernel", "Kernel conformance"), link("audit", "Audit of the seeds' numbers"),
                *([link("ecosystem-survey", "Ecosystem conformance survey")] if report.survey.get("html") else []),
                link("environment", "Environment")]
    return ('<nav class="contents" id="contents"><h2>Contents</h2><ol>'
            + "".join(f"<li>{x}</li>" for x in sections) + "</ol></nav>")


def render(report: Report, svgs: dict, problems: dict) -> str:
    summary = report.summary()
    verdict = summary["verdict"]
    failing = summary["failing"]
    banner = (f"All {summary['claims']} claims hold." if verdict == PASSED
              else f"{len(failing)} of {summary['claims']} claims fail: {', '.join(failing)}.")
    failing_list = ("<h2 id='failing'>Failing claims</h2><ul class='failing'>"
                    + "".join(f"<li><a href='#{escape(f)}'>{escape(f)}</a></li>" for f in failing) + "</ul>"
                    if failing else "")
    claims = "".join(claim_section(c, report) for c in report.claims)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>attention-proofs report</title>
<style>{_CSS}</style></head>
<body>
<h1>attention-proofs: the mathematics of scaled dot-product attention, checked</h1>
<p>Every claim below is derived symbolically (SymPy), confirmed by Monte Carlo (NumPy) and, where it applies,
checked on a real attention kernel (Triton). A layer that has nothing to say about a claim says
“{escape(fmt.not_checked(''))}”. Mode <code>--{escape(report.run['mode'])}</code>, seed {report.run['seed']}:
{escape(report.run['summary'])}</p>
<div class="banner {verdict}">{escape(banner)}</div>
{"".join(f"<p>{escape(line)}</p>" for line in fmt.overview(report))}
<p class="detail">Source: {escape(fmt.source(report.environment))}.</p>
{contents(report)}
<h2 id="summary-heading">Summary</h2>
{summary_table(report)}
{failing_list}
<h2 id="figures">Figures</h2>
{figures_section(report, svgs, problems)}
<h2 id="claims">Claims</h2>
{claims}
<h2 id="kernel">Kernel conformance</h2>
{kernels_section(report)}
<h2 id="audit">Audit of the seeds' numbers</h2>
{audit_section(report)}
{report.survey.get("html", "")}
<h2 id="environment">Environment</h2>
{environment_section(report)}
{failing_list.replace("id='failing'", "id='failing-end'")}
</body></html>
"""
