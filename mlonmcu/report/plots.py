"""Figures of a report: the pictures that answer what a table cannot at a glance.

Bars compare backends and targets of one model; a Pareto scatter shows which configurations are
worth keeping (nothing else is both faster and smaller); trends show when a metric moved and
mark the nights it regressed; per-kernel profiles show where the time goes.

A :class:`Figure` holds a builder, not a drawn matplotlib figure: a nightly page has hundreds of
figures and only one is alive at a time, drawn, saved and dropped. Figures use matplotlib's
object API (no pyplot, so no global figure registry and no GUI backend); raster output goes
through Agg. Every figure tolerates failing rows and NaN cells: they are left out, and a figure
without data is not made at all.
"""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
from matplotlib.figure import Figure as MplFigure
from matplotlib.ticker import EngFormatter

from mlonmcu.atomic import write_bytes
from mlonmcu.errors import ConfigError
from mlonmcu.features.profile import METRICS as PROFILE_METRICS
from mlonmcu.report import columns as col
from mlonmcu.report.report import missing, truthy
from mlonmcu.results.identity import IDENTITY, describe, identity_hash

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

KINDS = ("bars", "pareto", "trend", "profile")
FORMATS = ("png", "svg", "pdf")
STARTED = "Started"  # history columns besides the report's (see results store queries)
REGRESSED = "Regressed"
SESSION_UID = "Session UID"

# speed: cycles where the target counts them, else retired instructions, else wall-clock (host)
SPEED_METRICS = (col.RUN_CYCLES, col.RUN_INSTRUCTIONS, col.RUN_TIME)
SIZE_METRICS = (col.TOTAL_ROM, col.TOTAL_RAM)
TREND_METRICS = (*SPEED_METRICS, *SIZE_METRICS)
UNITS = {col.TOTAL_ROM: "B", col.TOTAL_RAM: "B", col.RUN_TIME: "s"}
REGRESSION_COLOR = "#d62728"
FRONT_COLOR = "#ff7f0e"
POINT_COLOR = "#1f77b4"
PROFILE_SEGMENTS = 12  # the largest kernels get their own segment; the rest are one "other"
PROFILE_MIN_SHARE = 0.01

# reproducible output (fixed ids, no date) and text as text, so the page stays small and searchable
_RC: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "mlonmcu",
    "font.size": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.axisbelow": True,
}
_METADATA: dict[str, dict[str, Any]] = {
    "svg": {"Date": None},
    "pdf": {"CreationDate": None, "ModDate": None},
    "png": {},
}


@dataclass(frozen=True)
class Figure:
    """One figure of the report, drawn on demand by :meth:`render`."""

    name: str  # unique, file-name safe: the file name and the HTML id
    title: str
    kind: str  # one of KINDS
    model: str  # the section of the page it belongs to
    build: Callable[[], MplFigure] = field(repr=False, compare=False)
    regressions: tuple[str, ...] = ()  # the red marks, for people: "Run Cycles at 2024-05-01 02:00 UTC (session …)"

    def render(self, fmt: str = "svg") -> bytes:
        """Draw, save and drop the figure: nothing of it stays alive after the call."""
        fmt = check_format(fmt)
        buffer = io.BytesIO()
        with matplotlib.rc_context(_RC):
            figure = self.build()
            try:
                figure.savefig(buffer, format=fmt, metadata=_METADATA[fmt])
            finally:
                figure.clear()  # break the artists' reference cycles now, not at the next gc pass
        return buffer.getvalue()


def check_format(fmt: str) -> str:
    normal = fmt.lower().lstrip(".")
    if normal not in FORMATS:
        raise ConfigError(f"unknown figure format '{fmt}': choose one of {', '.join(FORMATS)}")
    return normal


def figures(
    current: pd.DataFrame,
    history: pd.DataFrame | None = None,
    profiles: Mapping[str, pd.DataFrame] | None = None,
) -> list[Figure]:
    """Every figure the data supports: per model bars and Pareto, then trends, then profiles."""
    made: list[Figure] = []
    ok = _successful(current)
    for model, rows in _by_model(ok):
        made += [f for f in (_bars(model, rows), _pareto(model, rows)) if f is not None]
    if history is not None:
        made += _trends(history)
    for label, table in sorted((profiles or {}).items()):
        profile = _profile(label, table)
        if profile is not None:
            made.append(profile)
    return _unique_names(made)


def write_figures(figs: Iterable[Figure], out_dir: Path, fmt: str = "svg") -> list[Path]:
    """One file per figure, named after it; each written atomically."""
    fmt = check_format(fmt)
    out_dir.mkdir(parents=True, exist_ok=True)
    return [write_bytes(out_dir / f"{fig.name}.{fmt}", fig.render(fmt)) for fig in figs]


def slug(text: str, limit: int = 80) -> str:
    """A file-name and HTML-id safe form of `text`; long texts keep a hash so they stay distinct."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._-") or "figure"
    if len(safe) > limit:
        safe = f"{safe[: limit - 9]}-{identity_hash(text)[:8]}"
    return safe


def pareto_front(xs: Iterable[float], ys: Iterable[float]) -> list[int]:
    """Indices of the points no other point beats in both (smaller is better), in order of x."""
    points = sorted(enumerate(zip(xs, ys, strict=True)), key=lambda p: (p[1][0], p[1][1]))
    front, best = [], math.inf
    for index, (_x, y) in points:
        if y < best:
            front.append(index)
            best = y
    return front


# -- data helpers ---------------------------------------------------------------------------------


def _text(value: Any) -> str:
    return "" if missing(value) else str(value).strip()


def _numeric(frame: pd.DataFrame, column: str) -> pd.Series:
    if column not in frame:
        return pd.Series(np.nan, index=frame.index, dtype=float)
    return pd.to_numeric(frame[column], errors="coerce").astype(float)


def _failing(frame: pd.DataFrame) -> pd.Series:
    if col.FAILING not in frame:
        return pd.Series(False, index=frame.index, dtype=bool)
    return frame[col.FAILING].map(truthy).astype(bool)


def _successful(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.loc[~_failing(frame)] if not frame.empty else frame


def _by_model(frame: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    if frame.empty or col.MODEL not in frame:
        return []
    models = frame[col.MODEL].map(_text)
    return [(model, frame.loc[models == model]) for model in sorted(set(models)) if model]


def _speed_metric(frame: pd.DataFrame) -> str | None:
    return next((m for m in SPEED_METRICS if _numeric(frame, m).notna().any()), None)


def _variant(row: Mapping[Any, Any], with_session: bool) -> str:
    """How runs of one model and target differ: backend [features] {config} (session)."""
    parts = [_text(row.get(col.BACKEND)) or "?"]
    if features := _text(row.get(col.FEATURES)):
        parts.append(f"[{features}]")
    if config := _text(row.get(col.CONFIG)):
        parts.append(f"{{{config}}}")
    if with_session:
        parts.append(f"(session {_text(row.get(col.SESSION))})")
    return " ".join(parts)


def _labelled(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows with a target and variant label; a variant measured twice keeps its newest row."""
    with_session = col.SESSION in rows and rows[col.SESSION].map(_text).nunique() > 1
    records = rows.to_dict("records")
    frame = rows.assign(
        _target=[_text(r.get(col.TARGET)) or "?" for r in records],
        _variant=[_variant(r, with_session) for r in records],
    )
    return frame.drop_duplicates(["_target", "_variant"], keep="last")


def _identity_text(text: str) -> str:
    try:
        return describe(text)
    except (ValueError, TypeError):  # not an identity the store wrote: show it as it is
        return text


def _identity_model(text: str) -> str:
    try:
        return str(json.loads(text)[0])
    except (ValueError, TypeError, IndexError, KeyError):
        return ""


def _unique_names(figs: list[Figure]) -> list[Figure]:
    """Two models whose names sanitise alike must not overwrite each other's files."""
    used: set[str] = set()
    unique = []
    for fig in figs:
        name, count = fig.name, 1
        while name in used:
            count += 1
            name = f"{fig.name}-{count}"
        used.add(name)
        unique.append(fig if name == fig.name else replace(fig, name=name))
    return unique


# -- drawing helpers ------------------------------------------------------------------------------


def _canvas(width: float, height: float, panels: int = 1, per_row: int = 4) -> tuple[MplFigure, list[Axes]]:
    """A figure of `panels` axes, `per_row` of them a row; width and height are per panel."""
    columns = min(panels, per_row)
    rows = math.ceil(panels / columns)
    figure = MplFigure(figsize=(width * columns, height * rows), layout="constrained")
    FigureCanvasAgg(figure)
    axes = list(figure.subplots(rows, columns, squeeze=False).flat)
    for unused in axes[panels:]:
        unused.remove()
    return figure, axes[:panels]


def _format_axis(axis: Any, metric: str) -> None:
    axis.set_major_formatter(EngFormatter(unit=UNITS.get(metric, ""), sep=" "))


# -- bars -----------------------------------------------------------------------------------------


def _bars(model: str, rows: pd.DataFrame) -> Figure | None:
    """Grouped bars per metric: groups are targets, one bar per backend/config variant."""
    speed = _speed_metric(rows)
    metrics = [m for m in (speed, *SIZE_METRICS) if m is not None and _numeric(rows, m).notna().any()]
    if not metrics:
        return None
    labelled = _labelled(rows)
    tables = {
        m: labelled.assign(_value=_numeric(labelled, m)).pivot(index="_target", columns="_variant", values="_value")
        for m in metrics
    }

    def build() -> MplFigure:
        groups, series = next(iter(tables.values())).shape
        width = min(max(3.6, 0.9 + groups * (0.3 * series + 0.4)), 8.0)
        figure, axes = _canvas(width, 3.4, len(tables), per_row=3)
        for ax, (metric, table) in zip(axes, tables.items(), strict=True):
            _grouped_bars(ax, table)
            ax.set_title(metric)
            _format_axis(ax.yaxis, metric)
        handles, labels = axes[0].get_legend_handles_labels()
        figure.legend(handles, labels, loc="outside lower center", ncols=min(4, len(labels)), frameon=False)
        figure.suptitle(f"{model}: {', '.join(tables)}")
        return figure

    return Figure(f"{slug(model)}-bars", f"{model}: speed and size", "bars", model, build)


def _grouped_bars(ax: Axes, table: pd.DataFrame) -> None:
    positions = np.arange(len(table.index))
    width = 0.8 / max(1, len(table.columns))
    for i, variant in enumerate(table.columns):
        values = table[variant].to_numpy(dtype=float)
        present = ~np.isnan(values)
        ax.bar(positions[present] + (i - (len(table.columns) - 1) / 2) * width, values[present], width, label=variant)
    ax.set_xticks(positions, [str(t) for t in table.index])


# -- Pareto ---------------------------------------------------------------------------------------


def _pareto(model: str, rows: pd.DataFrame) -> Figure | None:
    """Speed against ROM and against RAM; a panel needs two points to have a front worth drawing."""
    speed = _speed_metric(rows)
    if speed is None:
        return None
    labelled = _labelled(rows)
    names = (labelled["_variant"] + " @ " + labelled["_target"]).to_numpy()
    panels = {}
    for size in SIZE_METRICS:
        xs, ys = _numeric(labelled, speed).to_numpy(), _numeric(labelled, size).to_numpy()
        keep = ~(np.isnan(xs) | np.isnan(ys))
        if keep.sum() >= 2:
            panels[size] = (xs[keep], ys[keep], names[keep])
    if not panels:
        return None

    def build() -> MplFigure:
        figure, axes = _canvas(5.2, 4.0, len(panels))
        for ax, (size, (xs, ys, labels)) in zip(axes, panels.items(), strict=True):
            front = pareto_front(xs, ys)
            ax.scatter(xs, ys, color=POINT_COLOR, label="run", zorder=2)
            ax.step(xs[front], ys[front], where="post", color=FRONT_COLOR, label="Pareto front", zorder=1)
            ax.scatter(xs[front], ys[front], color=FRONT_COLOR, zorder=3)
            for i in front:
                ax.annotate(labels[i], (xs[i], ys[i]), xytext=(4, 4), textcoords="offset points", fontsize=7)
            ax.set_xlabel(speed)
            ax.set_ylabel(size)
            _format_axis(ax.xaxis, speed)
            _format_axis(ax.yaxis, size)
            ax.legend(loc="best", fontsize=7)
        figure.suptitle(f"{model}: {speed} vs size (lower left is better)")
        return figure

    return Figure(f"{slug(model)}-pareto", f"{model}: Pareto front", "pareto", model, build)


# -- trends ---------------------------------------------------------------------------------------


def _regressed(value: Any) -> set[str]:
    return {m.strip() for m in _text(value).split(",") if m.strip()}


def _trends(history: pd.DataFrame) -> list[Figure]:
    if history.empty or IDENTITY not in history or STARTED not in history:
        return []
    frame = history.assign(
        _started=pd.to_datetime(history[STARTED], utc=True, errors="coerce").dt.tz_localize(None),
        _identity=history[IDENTITY].map(_text),
    )
    frame = frame.loc[frame["_started"].notna() & (frame["_identity"] != "")].sort_values("_started", kind="stable")
    made = []
    for identity in sorted(set(frame["_identity"])):
        rows = frame.loc[frame["_identity"] == identity]
        trend = _trend(identity, rows)
        if trend is not None:
            made.append(trend)
    return sorted(made, key=lambda f: (f.model, f.title))


def _trend(identity: str, rows: pd.DataFrame) -> Figure | None:
    """One panel per metric with two or more points in time (one point is not a trend).

    The usual metrics, and any other a regression was found in: a regression is never hidden.
    """
    times = rows["_started"].to_numpy()
    regressed = [_regressed(v) for v in rows.get(REGRESSED, pd.Series("", index=rows.index))]
    sessions = rows[SESSION_UID].map(_text).to_numpy() if SESSION_UID in rows else np.full(len(rows), "")
    failed = _failing(rows).to_numpy()
    failing = times[failed]
    others = sorted(set().union(*regressed) - set(TREND_METRICS))
    panels = {}
    for metric in (*TREND_METRICS, *others):
        values = np.where(failed, np.nan, _numeric(rows, metric).to_numpy())  # a failed run measured nothing
        if np.count_nonzero(~np.isnan(values)) >= 2:
            marks = np.array([metric in r for r in regressed], dtype=bool) & ~np.isnan(values)
            panels[metric] = (values, marks)
    if not panels:
        return None
    described = _identity_text(identity)
    models = rows[col.MODEL].map(_text) if col.MODEL in rows else pd.Series(dtype=str)
    model = next((m for m in models if m), "") or _identity_model(identity)
    regressions = tuple(
        f"{metric} at {pd.Timestamp(t):%Y-%m-%d %H:%M} UTC" + (f" (session {uid})" if uid else "")
        for metric, (_values, marks) in panels.items()
        for t, uid in zip(times[marks], sessions[marks], strict=True)
    )
    name = slug(f"{described}-trend")

    def build() -> MplFigure:
        figure, axes = _canvas(4.4, 2.8, len(panels), per_row=2)
        for ax, (metric, (values, marks)) in zip(axes, panels.items(), strict=True):
            present = ~np.isnan(values)
            ax.plot(times[present], values[present], marker="o", markersize=3, color=POINT_COLOR, label=metric)
            if marks.any():
                points = ax.scatter(times[marks], values[marks], s=60, color=REGRESSION_COLOR, zorder=3)
                points.set_label("regression")
                points.set_gid(f"regression-{slug(metric)}")  # the SVG group's id: how the page finds the marks
            for t in failing:
                ax.axvline(t, color="grey", linestyle="--", linewidth=0.8)
            ax.set_title(metric)
            _format_axis(ax.yaxis, metric)
            locator = AutoDateLocator()
            ax.xaxis.set_major_locator(locator)
            ax.xaxis.set_major_formatter(ConciseDateFormatter(locator))
            if marks.any():
                ax.legend(loc="best", fontsize=7)
        figure.suptitle(f"{described} (UTC)" + (", dashed: failing" if len(failing) else ""))
        return figure

    return Figure(name, f"{described}: history", "trend", model, build, regressions)


# -- profiles -------------------------------------------------------------------------------------


def _profile(label: str, table: pd.DataFrame) -> Figure | None:
    """The run's cost split by kernel, in execution order; small kernels share one segment."""
    metric = next((m for m in PROFILE_METRICS if _numeric(table, m).notna().any()), None)
    if metric is None:
        return None
    ordered = table.sort_values("Index", kind="stable") if "Index" in table else table
    costs = _numeric(ordered, metric).fillna(0.0).clip(lower=0.0)
    kernels = ordered["Kernel"].map(_text) if "Kernel" in ordered else pd.Series("", index=ordered.index)
    names = [n or f"kernel {i}" for i, n in enumerate(kernels)]
    total = float(costs.sum())
    if total <= 0:
        return None
    values = costs.to_numpy()
    largest = set(np.argsort(-values, kind="stable")[:PROFILE_SEGMENTS])
    own = [i for i in range(len(values)) if i in largest and values[i] >= PROFILE_MIN_SHARE * total]
    segments = [(names[i], float(values[i])) for i in own]
    rest = [i for i in range(len(values)) if i not in own and values[i] > 0]
    if rest:
        segments.append((f"other ({len(rest)} kernels)", float(values[rest].sum())))
    model = label.split(" ", 1)[0]

    def build() -> MplFigure:
        rows = math.ceil(len(segments) / 3)
        figure, (ax,) = _canvas(9.0, 1.6 + 0.22 * rows)
        left = 0.0
        colors = matplotlib.colormaps["tab20"]
        for i, (name, value) in enumerate(segments):
            share = 100.0 * value / total
            ax.barh([0], [value], left=left, color=colors(i % 20), label=f"{name} ({share:.1f}%)")
            left += value
        ax.set_yticks([])
        ax.set_xlim(0, total)
        _format_axis(ax.xaxis, metric)
        ax.set_xlabel(metric)
        figure.legend(loc="outside lower center", ncols=3, fontsize=7, frameon=False)
        figure.suptitle(f"{label}: {metric} per kernel")
        return figure

    return Figure(f"{slug(label)}-profile", f"{label}: per-kernel {metric}", "profile", model, build)
