"""The downloaded HTML report in a real browser (Debian's chromium through Playwright), opened from a file with
every network request blocked: the tables and the Plotly figures, the collision heat-map included, must show from
the file alone; hostile names show as text and run nothing."""

from __future__ import annotations

import copy
import json

import pytest
from playwright.sync_api import expect

from core.outputs.report_html import render_html
from tests.support.browser import SHOTS, UI_WAIT
from tests.support.data import ROOT

pytestmark = pytest.mark.slow

DEMO = ROOT / "docs" / "results" / "demo_reranked.json"
EVIL = "<script>alert(1)</script>"
HEATMAP_TITLE = "Top-1 collisions: questions whose first hit comes from another document"


def _open_offline(browser, path):
    """A fresh context that blocks everything but file: URLs; the page, the blocked URLs, the page's JS errors and
    any dialog it opened."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, offline=True)
    blocked: list[str] = []

    def route(r):
        if r.request.url.startswith("file:"):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    errors: list[str] = []
    dialogs: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(path.as_uri())
    return context, page, blocked, errors, dialogs


def test_the_report_shows_its_tables_and_figures_offline(browser, tmp_path):
    report = json.loads(DEMO.read_text(encoding="utf-8"))
    path = tmp_path / "demo.html"
    path.write_text(render_html(report), encoding="utf-8")
    context, page, blocked, errors, _ = _open_offline(browser, path)
    expect(page.locator(".js-plotly-plot")).to_have_count(7, timeout=UI_WAIT)
    expect(page.get_by_role("heading", name="What this shows")).to_be_visible()
    table = page.locator("table", has=page.get_by_role("columnheader", name="hit@1"))
    for spec in report["results"]:
        expect(table.get_by_role("cell", name=spec, exact=True)).to_be_visible()
    heat = page.locator(".js-plotly-plot", has=page.locator("g.heatmaplayer"))
    expect(heat).to_have_count(1)
    heat.scroll_into_view_if_needed()
    expect(heat.locator("g.heatmaplayer image")).to_have_count(1)  # the cells, drawn by plotly.js
    expect(heat.get_by_text(HEATMAP_TITLE)).to_be_visible()
    ticks = heat.locator("g.ytick text").all_text_contents()
    assert sorted(ticks) == sorted(report["results"])  # a row per chunker
    assert "fan-T12" in heat.locator("g.xtick text").all_text_contents()
    expect(page.locator(".js-plotly-plot g.scatterlayer .trace").first).to_be_visible()  # the metric-vs-k lines
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "report-file.png"), full_page=True)
    assert not errors, errors
    assert not blocked, f"the report tried to fetch {blocked}"
    context.close()


def test_hostile_names_show_as_text_and_run_nothing(browser, tmp_path):
    report = json.loads(DEMO.read_text(encoding="utf-8"))
    hostile = copy.deepcopy(report)
    hostile["dataset"] = EVIL
    hostile["results"] = {EVIL if spec == "chop" else spec: r for spec, r in hostile["results"].items()}
    path = tmp_path / "hostile.html"
    path.write_text(render_html(hostile), encoding="utf-8")
    context, page, blocked, errors, dialogs = _open_offline(browser, path)
    expect(page.locator(".js-plotly-plot")).to_have_count(7, timeout=UI_WAIT)
    expect(page.get_by_role("heading", level=1)).to_have_text(f"ChunkLens comparison: {EVIL}")
    expect(page.get_by_role("cell", name=EVIL, exact=True).first).to_be_visible()
    heat = page.locator(".js-plotly-plot", has=page.locator("g.heatmaplayer"))
    assert EVIL in heat.locator("g.ytick text").all_text_contents()  # plotly shows the name as it is
    assert not dialogs and not errors and not blocked
    context.close()
