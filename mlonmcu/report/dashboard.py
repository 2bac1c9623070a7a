"""The HTML dashboard: the report, its figures, history and comparison on one page.

The page is a single self-contained file because it travels: attached to a CI run, mailed, archived
and opened offline months later. Figures are inline SVG, styles and the little script are inline,
and a Content-Security-Policy tells the browser to load nothing else, so a page that would need
the network fails visibly instead of silently showing less. Markup lives in
templates/report/dashboard.html.j2; this module decides what goes on the page.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
import numpy as np
import pandas as pd
from markupsafe import Markup, escape

from mlonmcu.atomic import write_text
from mlonmcu.data import templates_dir
from mlonmcu.report import columns as col
from mlonmcu.report.plots import Figure, figures, slug, truthy

TEMPLATE = "report/dashboard.html.j2"
MODEL_KINDS = ("bars", "pareto")  # in the model's own section; trends and profiles have theirs
STATUS_COLUMNS = ("Status", "Kind")
ROW_CLASSES = {"regressed": "bad", "new failure": "bad", "improved": "good", "fixed": "good"}


@dataclass(frozen=True)
class Plot:
    id: str
    title: str
    kind: str
    svg: Markup
    regressions: tuple[str, ...]


@dataclass(frozen=True)
class Section:
    id: str
    title: str
    plots: list[Plot] = field(default_factory=list)


@dataclass(frozen=True)
class Table:
    id: str
    columns: list[str]
    rows: list[tuple[str, list[str]]]  # (CSS class, cells)


def render(
    current: pd.DataFrame,
    *,
    history: pd.DataFrame | None = None,
    comparison: pd.DataFrame | None = None,
    profiles: Mapping[str, pd.DataFrame] | None = None,
    title: str = "mlonmcu report",
    figs: list[Figure] | None = None,
) -> str:
    """The page's HTML. Pass `figs` when the caller already has them (e.g. also writes them as files)."""
    figs = figures(current, history, profiles) if figs is None else figs
    plots = {fig.name: _plot(fig) for fig in figs}
    models: dict[str, Section] = {}
    for fig in figs:
        if fig.kind in MODEL_KINDS:
            section = models.setdefault(fig.model, Section(f"model-{slug(fig.model)}", fig.model or "(no model)"))
            section.plots.append(plots[fig.name])
    history_plots = [plots[f.name] for f in figs if f.kind == "trend"]
    profile_plots = [plots[f.name] for f in figs if f.kind == "profile"]
    compared = None
    if comparison is not None and not comparison.empty:
        compared = _table("comparison", comparison, list(comparison.columns), _status_class)
    values = {
        "title": title,
        "overview": _overview(current),
        "summary": _table("summary", current, _summary_columns(current), _run_class) if not current.empty else None,
        "models": list(models.values()),
        "history": history_plots,
        "regressions": [(p, mark) for p in history_plots for mark in p.regressions],
        "profiles": profile_plots,
        "mix": _mix_table(current),
        "comparison": compared,
        "empty": current.empty and not figs and compared is None,
    }
    return _environment().get_template(TEMPLATE).render(**values)


def write_dashboard(out: Path, current: pd.DataFrame, **options: Any) -> Path:
    """Render (same keywords as :func:`render`) and write atomically; creates the directory."""
    return write_text(out, render(current, **options))


def inline_svg(svg: str, prefix: str, label: str = "") -> str:
    """Matplotlib's SVG file as an element of an HTML page.

    Drops the XML prolog and the metadata (it names URLs), and prefixes every id and reference
    with `prefix`, so that many figures on one page do not share ids ("figure_1", clip paths).
    """
    svg = svg[svg.find("<svg") :]
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, count=1, flags=re.DOTALL)
    svg = re.sub(r'(<[^<>]*?\s)id="', rf'\1id="{prefix}--', svg)
    svg = re.sub(r'(<[^<>]*?\s)xlink:href="#', rf'\1xlink:href="#{prefix}--', svg)
    svg = svg.replace("url(#", f"url(#{prefix}--")
    return svg.replace("<svg ", f'<svg role="img" aria-label="{escape(label)}" ', 1)


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(templates_dir()),
        undefined=jinja2.StrictUndefined,
        autoescape=True,  # every name and cell comes from users' models and configs
    )


def _plot(fig: Figure) -> Plot:
    svg = inline_svg(fig.render("svg").decode("utf-8"), fig.name, fig.title)
    return Plot(fig.name, fig.title, fig.kind, Markup(svg), fig.regressions)


def _overview(current: pd.DataFrame) -> str:
    if current.empty:
        return ""
    failing = int(current[col.FAILING].map(truthy).sum()) if col.FAILING in current else 0
    sessions = sorted({_cell(s) for s in current.get(col.SESSION, pd.Series(dtype=object)) if _cell(s)})
    text = f"{len(current)} runs, {failing} failing"
    return text + (f"; session {', '.join(sessions)}" if sessions else "")


def _summary_columns(current: pd.DataFrame) -> list[str]:
    """The terminal table's columns that have at least one value (Frontend only where it varies)."""
    shown = [c for c in col.SUMMARY if c in current and current[c].map(_cell).astype(bool).any()]
    return [c for c in shown if c != col.FRONTEND or current[c].nunique() > 1]


def _mix_table(current: pd.DataFrame) -> Table | None:
    """Feature instruction_mix: executed instructions per class, one row per run that counted them."""
    groups = [c for c in col.MIX if c in current and current[c].notna().any()]
    if not groups:
        return None
    counted = current[current[groups].notna().any(axis=1)]
    ids = [c for c in (col.RUN, col.MODEL, col.BACKEND, col.TARGET, col.CONFIG, col.RUN_INSTRUCTIONS) if c in current]
    return _table("mix", counted, [*ids, *groups], _run_class)


def _table(name: str, frame: pd.DataFrame, columns: list[str], row_class: Any) -> Table:
    rows = [(row_class(record), [_cell(record.get(c)) for c in columns]) for record in frame.to_dict("records")]
    return Table(name, [str(c) for c in columns], rows)


def _run_class(record: Mapping[str, Any]) -> str:
    if truthy(record.get(col.FAILING)):
        return "bad"
    return "bad" if _cell(record.get(col.VALIDATION)) == "fail" else ""


def _status_class(record: Mapping[str, Any]) -> str:
    """Highlight by the comparison's "Status" (metrics) or "Kind" (events such as a new failure)."""
    statuses = (_cell(record.get(column)).lower() for column in STATUS_COLUMNS)
    return next((ROW_CLASSES[s] for s in statuses if s in ROW_CLASSES), "")


def _cell(value: Any) -> str:
    """A cell as people read it: no "nan", integers without ".0", ratios to four digits."""
    if value is None or value is pd.NA or value is pd.NaT:
        return ""
    if isinstance(value, bool | np.bool_):
        return "yes" if value else ""
    if isinstance(value, float | np.floating):
        number = float(value)
        if np.isnan(number):
            return ""
        return f"{int(number):,}" if number.is_integer() and abs(number) >= 1000 else f"{number:.4g}"
    if isinstance(value, int | np.integer):
        return f"{int(value):,}"
    if isinstance(value, pd.Timestamp):
        return f"{value:%Y-%m-%d %H:%M}"
    return str(value)
