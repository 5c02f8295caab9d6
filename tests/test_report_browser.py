"""The HTML report in a real browser: headless Chromium, driven over its DevTools protocol."""
from __future__ import annotations

import json
import os
import shutil

import pytest

import _chromium

# Everything the page shows must have been laid out with a size: every inline SVG figure and
# <img> (loaded, non-zero), every <math> element, and the summary table.
_LAYOUT = r"""(() => {
  const box = e => { const r = e.getBoundingClientRect(); return [r.width, r.height]; };
  const svgs = [...document.querySelectorAll('figure > svg')].map(e => ({id: e.parentElement.id, size: box(e)}));
  const imgs = [...document.images].map(e => ({src: e.src.slice(0, 80), complete: e.complete,
                                              natural: [e.naturalWidth, e.naturalHeight], size: box(e)}));
  const maths = [...document.querySelectorAll('math')];
  const empty = maths.filter(e => { const [w, h] = box(e); return !(w > 0 && h > 0); })
                     .map(e => e.outerHTML.slice(0, 200));
  const table = document.querySelector('table#summary');
  return {svgs, imgs, maths: maths.length, empty_maths: empty,
          mathml_supported: maths.length > 0 && getComputedStyle(maths[0]).display.includes('math'),
          summary_rows: table ? table.tBodies[0].rows.length : -1,
          summary_size: table ? box(table) : [0, 0], scripts: document.scripts.length};
})()"""


# What a reader sees must be typeset: no TeX source or SymPy text in the page's rendered text (innerText leaves
# out MathML's <annotation>, which carries each formula's TeX for copying). Every in-page link (the table of
# contents, the summary) must land on an element, and a formula wider than its column must sit in a box that
# scrolls, neither cut off by one that clips nor running off the page.
RAW = ("$", "\\frac", "\\", "Eq(", "Sum(", "_{", "^{")
# SymPy's program text of a product or a power (``4*N**2``, ``(w*y + z)*e``), which its printer writes and no
# typeset formula or sentence does
SYMPY_TEXT = r"[\w)\]]\*{1,2}[\w(]"
_TEXT = r"""((raw, sympy) => {
  const text = document.body.innerText;
  const at = (p, i) => p + ' in ' + JSON.stringify(text.slice(Math.max(0, i - 60), i + 60));
  const product = text.search(new RegExp(sympy, 'u'));
  const found = raw.map(p => [p, text.indexOf(p)]).filter(([p, i]) => i >= 0).map(([p, i]) => at(p, i))
                   .concat(product >= 0 ? [at(sympy, product)] : []);
  const links = [...document.querySelectorAll('a[href^="#"]')].map(a => decodeURIComponent(a.getAttribute('href').slice(1)));
  const width = document.documentElement.clientWidth;
  const holder = m => { for (let p = m.parentElement; p; p = p.parentElement) { const o = getComputedStyle(p).overflowX;
      if (o === 'auto' || o === 'scroll') return 'scrolls'; if (o === 'hidden' || o === 'clip') return 'clips'; }
    return 'page'; };
  const cut = [...document.querySelectorAll('math')].filter(m => {
      const where = holder(m);
      return where === 'clips' || (where === 'page' && m.getBoundingClientRect().right > width + 1); })
    .map(m => m.textContent.slice(0, 80));
  return {raw: found, links: links.length, dangling: links.filter(id => !document.getElementById(id)),
          contents: document.querySelectorAll('nav#contents a').length, cut,
          page_overflow: document.documentElement.scrollWidth - width};
})(%s, %s)""" % (json.dumps(RAW), json.dumps(SYMPY_TEXT))


@pytest.fixture(scope="module")
def chromium():
    path = _chromium.find()
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("CI must run the browser test, but no Chromium is installed (.ci/run installs Debian's "
                        "'chromium')")
        pytest.skip("Chromium is not installed (apt-get install chromium); outside CI the browser test is skipped")
    return path


def _render(chromium, report_dir, shots):
    with _chromium.Browser(chromium) as browser:
        browser.open((report_dir / "index.html").resolve().as_uri())
        layout = dict(browser.evaluate(_LAYOUT), text=browser.evaluate(_TEXT))
        browser.screenshot(str(shots / "top.png"))
        browser.screenshot(str(shots / "page.png"), full_page=True)
        return layout, browser.console_errors(), browser.requested_urls()


def _check_text(text: dict, claims: int, figures: set[str]):
    assert text["raw"] == [], "raw TeX or SymPy text on the page"
    assert text["dangling"] == [], "links to nothing"
    # the contents link every section (at least six), every figure and every claim
    assert text["contents"] >= 6 + claims + len(figures) and text["links"] >= text["contents"]
    assert text["cut"] == [], "formulas clipped or off the page"
    assert text["page_overflow"] <= 0, "the page scrolls sideways"


def _check(layout, errors, urls, report_dir, claims: int, figures: set[str]):
    assert errors == []
    assert urls == [(report_dir / "index.html").resolve().as_uri()], "the page must fetch nothing else"
    assert layout["scripts"] == 0
    assert layout["summary_rows"] == claims and min(layout["summary_size"]) > 0
    assert {s["id"] for s in layout["svgs"]} == {f"figure-{f}" for f in figures}
    for s in layout["svgs"]:
        assert min(s["size"]) > 50, s
    for img in layout["imgs"]:
        assert img["complete"] and min(img["natural"]) > 0 and min(img["size"]) > 0, img
    assert layout["mathml_supported"], "this Chromium does not lay out MathML"
    assert layout["maths"] > 10 and layout["empty_maths"] == []
    _check_text(layout["text"], claims, figures)


def test_fake_layer_report_renders_in_chromium(chromium, fake_report, tmp_path):
    from conftest import FIGURE_CLAIMS

    layout, errors, urls = _render(chromium, fake_report, tmp_path)
    _check(layout, errors, urls, fake_report, len(FIGURE_CLAIMS),
           {"variance", "histograms", "saturation", "online-softmax", "kernel-error", "rounding-bounds"})
    keep = os.environ.get("REPORT_SCREENSHOTS")  # a folder to keep the screenshots in, for a human to look
    if keep:
        for name in ("top.png", "page.png"):
            shutil.copy(tmp_path / name, os.path.join(keep, f"fake-{name}"))


def test_real_report_renders_in_chromium(chromium, real_report, tmp_path):
    from conftest import FIGURE_CLAIMS, load_json

    out, done = real_report
    assert done.returncode in (0, 1), done.stderr
    doc = load_json(out)
    drawn = {name for name, f in doc["figures"].items() if f["status"] == "passed"}
    layout, errors, urls = _render(chromium, out, tmp_path)
    _check(layout, errors, urls, out, len(FIGURE_CLAIMS), drawn)
    keep = os.environ.get("REPORT_SCREENSHOTS")
    if keep:
        for name in ("top.png", "page.png"):
            shutil.copy(tmp_path / name, os.path.join(keep, f"real-{name}"))


def test_the_browser_checks_catch_a_broken_page(chromium, tmp_path):
    # A page with a missing image, an empty formula and a script error: each check must object.
    page = tmp_path / "index.html"
    page.write_text('<!DOCTYPE html><html><body><table id="summary"><tbody><tr><td>x</td></tr></tbody></table>'
                    '<figure id="figure-x"><svg width="0" height="0"></svg></figure><img src="missing.png">'
                    '<math><mrow></mrow></math><script>console.error("boom")</script></body></html>')
    layout, errors, urls = _render(chromium, tmp_path, tmp_path)
    assert any("boom" in e for e in errors)
    assert any("missing.png" in e for e in errors)
    assert layout["empty_maths"] and layout["scripts"] == 1
    with pytest.raises(AssertionError):
        _check(layout, errors, urls, tmp_path, 1, {"x"})
    quiet = {**layout, "scripts": 0, "svgs": [{"id": "figure-x", "size": [100, 100]}]}
    with pytest.raises(AssertionError, match="complete"):  # the image that did not load
        _check(quiet, [], urls[:1], tmp_path, 1, {"x"})
    with pytest.raises(AssertionError, match="<math><mrow></mrow></math>"):  # the formula laid out with no size
        _check({**quiet, "imgs": [], "maths": 11}, [], urls[:1], tmp_path, 1, {"x"})


def test_the_text_checks_catch_raw_tex_sympy_text_dangling_links_and_cut_formulas(chromium, tmp_path):
    wide = "<math><mi>x</mi>" + "<mo>+</mo><mi>x</mi>" * 400 + "</math>"
    page = tmp_path / "index.html"
    page.write_text('<!DOCTYPE html><html><body><nav id="contents"><a href="#nowhere">x</a></nav>'
                    "<p>Dividing by $\\sqrt{d_k}$ gives \\frac{1}{2}; verdict: Eq(S, Sum(k[i], (i, 1, n))), "
                    "S_{N+1} e^{-t}; weight nonnegative: (w*y + z)*e**2</p>"
                    f'<div style="overflow-x: hidden; width: 300px">{wide}</div><div>{wide}</div></body></html>')
    with _chromium.Browser(chromium) as browser:
        browser.open(page.resolve().as_uri())
        text = browser.evaluate(_TEXT)
    assert {r.split(" in ")[0] for r in text["raw"]} == {*RAW, SYMPY_TEXT}
    assert text["dangling"] == ["nowhere"]
    assert len(text["cut"]) == 2 and text["page_overflow"] > 0  # one clipped, one off the page
    for broken in ({"raw": text["raw"]}, {"dangling": text["dangling"]}, {"cut": text["cut"]},
                   {"page_overflow": text["page_overflow"]}, {"contents": 1}):
        good = {"raw": [], "dangling": [], "contents": 20, "links": 20, "cut": [], "page_overflow": 0}
        _check_text(good, 2, {"x"})  # the good page passes; each fault alone fails it
        with pytest.raises(AssertionError):
            _check_text({**good, **broken}, 2, {"x"})
