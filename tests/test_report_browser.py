"""The HTML report in a real browser: headless Chromium, driven over its DevTools protocol."""
from __future__ import annotations

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
        layout = browser.evaluate(_LAYOUT)
        browser.screenshot(str(shots / "top.png"))
        browser.screenshot(str(shots / "page.png"), full_page=True)
        return layout, browser.console_errors(), browser.requested_urls()


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


def test_fake_layer_report_renders_in_chromium(chromium, fake_report, tmp_path):
    from conftest import FIGURE_CLAIMS

    layout, errors, urls = _render(chromium, fake_report, tmp_path)
    _check(layout, errors, urls, fake_report, len(FIGURE_CLAIMS),
           {"variance", "histograms", "saturation", "online-softmax", "kernel-error"})
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
