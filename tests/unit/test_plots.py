"""Figures and the HTML dashboard, without a browser (tests/integration/test_dashboard_browser.py has one)."""

from __future__ import annotations

import gc
import re
import xml.etree.ElementTree as ET
from collections import Counter

import pandas as pd
import pytest
from browser import comparison_frame, current_frame, history_frame, profiles
from matplotlib.figure import Figure as MplFigure

from mlonmcu.errors import ConfigError
from mlonmcu.report import columns as col
from mlonmcu.report.dashboard import inline_svg, render, write_dashboard
from mlonmcu.report.plots import Figure, figures, pareto_front, slug, write_figures

EXPECTED_KINDS = {"bars": 2, "pareto": 2, "trend": 2, "profile": 1}


@pytest.fixture(scope="module")
def figs() -> list[Figure]:
    return figures(current_frame(), history_frame(), profiles())


@pytest.fixture(scope="module")
def page(figs: list[Figure]) -> str:
    return render(current_frame(), history=history_frame(), comparison=comparison_frame(), figs=figs)


def by_name(figs: list[Figure], name: str) -> Figure:
    return next(f for f in figs if f.name == name)


def axes_titles(fig: Figure) -> list[str]:
    return [ax.get_title() for ax in fig.build().axes]


def test_figures_by_kind(figs):
    """Per model bars and Pareto, a trend per identity with history, and only the profile that measured."""
    assert Counter(f.kind for f in figs) == EXPECTED_KINDS
    assert [f.name for f in figs] == [
        "aww-bars",
        "aww-pareto",
        "vww-bars",
        "vww-pareto",
        "aww_tflmi_spike-trend",
        "aww_tvmaot_spike-trend",
        "aww_tvmaot_spike-profile",
    ]
    assert len({f.name for f in figs}) == len(figs)


def test_failing_rows_and_nan_cells_are_left_out(figs):
    cycles, _rom, ram = by_name(figs, "aww-bars").build().axes
    assert len(cycles.patches) == 4
    assert len(ram.patches) == 3  # aww tflmi etiss has no RAM figure
    assert [ax.get_title() for ax in by_name(figs, "vww-bars").build().axes] == [
        col.RUN_CYCLES,
        col.TOTAL_ROM,
        col.TOTAL_RAM,
    ]
    assert len(by_name(figs, "vww-bars").build().axes[0].patches) == 3  # vww tflmi etiss failed


def test_speed_falls_back_to_instructions():
    current = current_frame().drop(columns=[col.RUN_CYCLES])
    bars = by_name(figures(current), "aww-bars")
    assert axes_titles(bars)[0] == col.RUN_INSTRUCTIONS


def test_pareto_front():
    xs, ys = [1, 2, 2, 3, 4, 5], [9, 5, 7, 5, 1, 0.5]
    assert pareto_front(xs, ys) == [0, 1, 4, 5]
    assert pareto_front([], []) == []


def test_pareto_needs_two_runs_with_speed_and_size():
    current = current_frame()
    one = current[(current[col.MODEL] == "aww") & (current[col.BACKEND] == "tvmaot") & (current[col.TARGET] == "spike")]
    assert [f.kind for f in figures(one)] == ["bars"]


def test_regression_is_marked_only_where_it_happened(figs, page):
    regressed, steady = by_name(figs, "aww_tvmaot_spike-trend"), by_name(figs, "aww_tflmi_spike-trend")
    assert regressed.regressions == (f"{col.RUN_CYCLES} at 2024-05-03 02:00 UTC (session uid2)",)
    assert steady.regressions == ()
    assert re.findall(r'id="([^"]*--regression-[^"]*)"', page) == ["aww_tvmaot_spike-trend--regression-Run_Cycles"]


def test_a_failed_night_is_a_dashed_line_not_a_point(figs):
    axes = {ax.get_title(): ax for ax in by_name(figs, "aww_tflmi_spike-trend").build().axes}
    ram = axes[col.TOTAL_RAM]
    assert len(ram.lines[0].get_xdata()) == 3  # the failed run's stray RAM figure is not plotted
    assert len(ram.lines) == 2  # the trend and the failing night's dashed line


def test_a_regression_in_any_metric_gets_its_panel():
    history = history_frame().assign(**{col.SETUP_CYCLES: 500.0})
    last = history.index[(history[col.BACKEND] == "tvmaot") & (history[col.SESSION] == 4)]
    history.loc[last, [col.SETUP_CYCLES, "Regressed"]] = [900.0, col.SETUP_CYCLES]
    trend = by_name(figures(pd.DataFrame(), history), "aww_tvmaot_spike-trend")
    assert col.SETUP_CYCLES in axes_titles(trend)
    assert [r.split(" at ")[0] for r in trend.regressions] == [col.RUN_CYCLES, col.SETUP_CYCLES]


def test_trend_needs_two_points_in_time():
    history = history_frame()
    assert [f.kind for f in figures(pd.DataFrame(), history[history[col.SESSION] == 1])] == []


def test_write_svg_files(figs, tmp_path):
    paths = write_figures(figs, tmp_path / "plots")
    assert [p.name for p in paths] == [f"{f.name}.svg" for f in figs]
    for path in paths:
        assert ET.parse(path).getroot().tag == "{http://www.w3.org/2000/svg}svg"
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == sorted(p.name for p in paths)  # no temp files


@pytest.mark.parametrize(("fmt", "magic"), [("png", b"\x89PNG"), ("PDF", b"%PDF")])
def test_write_raster_and_pdf(figs, tmp_path, fmt, magic):
    (path,) = write_figures(figs[:1], tmp_path, fmt)
    assert path.suffix == f".{fmt.lower()}"
    assert path.read_bytes().startswith(magic)


def test_invalid_format_is_a_config_error_before_anything_is_written(figs, tmp_path):
    with pytest.raises(ConfigError, match="png, svg, pdf"):
        write_figures(figs, tmp_path / "out", "jpeg")
    assert not (tmp_path / "out").exists()


def test_names_are_sanitised_and_unique():
    current = current_frame()
    current[col.MODEL] = current[col.MODEL].map({"aww": "my model/v2", "vww": "my model:v2"})
    names = [f.name for f in figures(current)]
    assert names == ["my_model_v2-bars", "my_model_v2-pareto", "my_model_v2-bars-2", "my_model_v2-pareto-2"]
    assert len(slug("x" * 300)) == 80
    assert slug("x" * 300) != slug("x" * 301)


def test_empty_inputs_make_no_figures_and_say_so():
    empty = pd.DataFrame(columns=list(col.CORE))
    assert figures(pd.DataFrame()) == []
    assert figures(empty, empty.assign(Identity=[], Started=[], Regressed=[]), {}) == []
    html = render(empty, history=None, comparison=pd.DataFrame(), profiles={})
    assert "Nothing to show" in html
    assert 'class="plot"' not in html


def test_only_failing_runs_still_show_the_summary():
    current = current_frame()
    failing = current[current[col.FAILING]]
    assert figures(failing) == []
    html = render(failing)
    assert "Nothing to show" not in html
    assert "arena too small &lt;&amp;&gt;" in html


def test_page_has_every_figure_once(page, figs):
    kinds = Counter(re.findall(r'class="plot" id="[^"]+" data-kind="(\w+)"', page))
    assert kinds == EXPECTED_KINDS
    assert page.count("<svg ") == len(figs)
    assert "<?xml" not in page
    assert "<metadata>" not in page


def test_page_loads_nothing_from_elsewhere(page):
    urls = re.findall(r'(\S+)="?(https?://[^"\s]*)', page)
    assert urls
    assert {attribute for attribute, _url in urls} <= {"xmlns", "xmlns:xlink"}
    assert not re.search(r"<(script|link|img|iframe)[^>]*\s(src|href)=", page)
    assert "default-src 'none'" in page


def test_page_ids_are_unique(page):
    ids = re.findall(r'\sid="([^"]+)"', page)
    assert [i for i, n in Counter(ids).items() if n > 1] == []
    referenced = set(re.findall(r'(?:href="#|url\(#)([^")]+)', page))
    assert referenced <= set(ids)


def test_page_escapes_and_highlights(page):
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    rows = re.findall(r'<tr class="(\w+)"><td>([^<]*)</td><td>([^<]*)</td>', page)
    assert ("bad", "aww tvmaot spike", "regressed") in rows
    assert ("bad", "vww tflmi etiss", "new failure") in rows
    assert ("good", "aww tflmi spike", "improved") in rows
    assert 'class="regression"' in page
    assert "130,000" in page  # counts are shown as integers, not 130000.0
    assert ">nan<" not in page


def test_inline_svg_prefixes_ids_and_references():
    svg = (
        '<?xml version="1.0"?>\n<!DOCTYPE svg>\n<svg xmlns="http://www.w3.org/2000/svg">'
        '<metadata><a href="https://x"/></metadata><g id="a"><use xlink:href="#m1"/>'
        '<path clip-path="url(#p1)"/></g><text>id="b"</text></svg>'
    )
    out = inline_svg(svg, "fig", label="a <b>")
    assert out.startswith('<svg role="img" aria-label="a &lt;b&gt;" ')
    assert 'id="fig--a"' in out and 'href="#fig--m1"' in out and "url(#fig--p1)" in out
    assert "https://x" not in out
    assert '<text>id="b"</text>' in out  # text is not a tag


def test_write_dashboard_creates_the_directory(tmp_path):
    out = write_dashboard(tmp_path / "a" / "b" / "report.html", current_frame(), title="nightly <1>")
    assert out.read_text().count("<title>nightly &lt;1&gt;</title>") == 1
    assert [p.name for p in out.parent.iterdir()] == ["report.html"]


def live_figures() -> int:
    gc.collect()
    return sum(isinstance(o, MplFigure) for o in gc.get_objects())


def tiny() -> MplFigure:
    figure = MplFigure(figsize=(1, 1))
    figure.subplots().plot([0, 1])
    return figure


def test_rendering_keeps_no_figure_alive(figs):
    """A nightly page draws hundreds of figures: none may outlive its render."""
    before = live_figures()
    for fig in [*figs, *[Figure(f"f{i}", "f", "bars", "m", tiny) for i in range(100)]]:
        fig.render("svg")
    assert live_figures() <= before


def test_instruction_mix_is_a_table_of_the_runs_that_counted_it():
    current = current_frame().assign(**{col.MIX_LOAD: None, col.MIX_MAC: None})
    assert "mix-section" not in render(current, figs=[])
    current.loc[0, [col.MIX_LOAD, col.MIX_MAC]] = [123456, 789]
    html = render(current, figs=[])
    section = html[html.index('<section id="mix-section">') :]
    section = section[: section.index("</section>")]
    assert "<th>Mix Load</th>" in section and "123,456" in section and section.count("<tr") == 2  # header + 1 run
