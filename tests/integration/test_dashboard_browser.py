"""The dashboard in a real headless Chromium with no network: every figure drawn, nothing broken.

Static checks (tests/unit/test_plots.py) cannot see what a browser does with the page: a
figure that renders 0 px tall, a script error, a resource the page still tries to fetch.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from browser import chromium, comparison_frame, current_frame, history_frame, profiles, severe_console_entries

from mlonmcu.report.dashboard import write_dashboard
from mlonmcu.report.plots import figures

pytestmark = pytest.mark.integration

PLOTS = """
return Array.from(document.querySelectorAll(".plot")).map(function (plot) {
  var svg = plot.querySelector("svg");
  var box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
  return {id: plot.id, kind: plot.dataset.kind, width: box.width, height: box.height};
});
"""
MARKS = """
return Array.from(document.querySelectorAll('[id*="--regression-"]')).map(function (mark) {
  var box = mark.getBoundingClientRect();
  return {id: mark.id, plot: mark.closest(".plot").id, width: box.width, height: box.height};
});
"""
VISIBLE_ROWS = 'return Array.from(document.querySelectorAll("#summary tbody tr")).filter(r => !r.hidden).length;'


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The page as Chromium shows it, with the figures it was made of."""
    figs = figures(current_frame(), history_frame(), profiles())
    page = write_dashboard(
        tmp_path_factory.mktemp("dashboard") / "report.html",
        current_frame(),
        history=history_frame(),
        comparison=comparison_frame(),
        figs=figs,
    )
    with chromium(offline=True) as driver:
        driver.get(Path(page).as_uri())
        yield driver, figs


def test_no_console_errors_and_nothing_fetched(loaded):
    driver, _figs = loaded
    assert severe_console_entries(driver) == []
    assert driver.execute_script("return performance.getEntriesByType('resource').length") == 0


def test_every_figure_is_drawn(loaded):
    driver, figs = loaded
    plots = driver.execute_script(PLOTS)
    assert [p["id"] for p in plots] == [f.name for f in figs]
    assert Counter(p["kind"] for p in plots) == Counter(f.kind for f in figs)
    small = [p for p in plots if p["width"] <= 50 or p["height"] <= 50]
    assert small == []


def test_regression_is_marked_in_red(loaded):
    driver, figs = loaded
    (trend,) = [f for f in figs if f.regressions]
    marks = driver.execute_script(MARKS)
    assert [(m["id"], m["plot"]) for m in marks] == [(f"{trend.name}--regression-Run_Cycles", trend.name)]
    assert marks[0]["width"] > 0 and marks[0]["height"] > 0
    listed = driver.find_elements("css selector", "li.regression")
    assert [li.text for li in listed] == [f"{trend.title}: {trend.regressions[0]}"]
    assert driver.execute_script("return getComputedStyle(arguments[0]).color", listed[0]) == "rgb(214, 39, 40)"


def test_summary_filter(loaded):
    driver, _figs = loaded
    box = driver.find_element("css selector", 'input[data-filter="summary"]')
    assert driver.execute_script(VISIBLE_ROWS) == 8
    box.send_keys("vww")
    assert driver.execute_script(VISIBLE_ROWS) == 4
    box.clear()
    box.send_keys(" ")  # clear() sends no input event
    assert driver.execute_script(VISIBLE_ROWS) == 8
    assert severe_console_entries(driver) == []
