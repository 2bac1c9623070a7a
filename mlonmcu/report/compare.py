"""Compare two sets of runs (sessions, labels, report files) and gate on regressions.

Runs are aligned by identity (results/identity.py). Spike/QEMU counters are exact, so their
default threshold is 0 %: any increase is a regression and nothing else can cause one. Host
wall-clock is noisy: it is compared on the minimum of the `mlif.repeat` inferences (noise only
ever adds time, so the minimum is the stable estimate) with a 10 % default threshold.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from mlonmcu.errors import ConfigError
from mlonmcu.report import columns as col
from mlonmcu.report.report import markdown_table, markdown_text, records, truthy
from mlonmcu.results.identity import IDENTITY, describe, identity

WALLCLOCK = {col.RUN_TIME: col.RUN_TIME_MIN}  # metric → the column it is compared on
DEFAULT_THRESHOLDS: dict[str, float] = {
    col.RUN_CYCLES: 0.0,
    col.RUN_INSTRUCTIONS: 0.0,
    col.ESTIMATED_CYCLES: 0.0,  # deterministic too: the same instructions, weighted
    col.TOTAL_ROM: 0.0,
    col.TOTAL_RAM: 0.0,
    col.RUN_TIME: 0.10,
}
EXIT_OK, EXIT_FAILED, EXIT_REGRESSED = 0, 1, 3

REGRESSED, IMPROVED, SAME, WITHIN, UNMEASURED = "regressed", "improved", "same", "within threshold", "not measured"


def with_identity(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    out[IDENTITY] = [identity(r) for r in records(frame)] if not frame.empty else []
    return out


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def _text(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def judge(old: Any, new: Any, threshold: float) -> str:
    """Lower is better for every metric we gate on (cycles, instructions, bytes, seconds)."""
    a, b = _number(old), _number(new)
    if a is None or b is None:
        return UNMEASURED
    if b == a:
        return SAME
    if b < a:
        return IMPROVED
    return REGRESSED if b > a * (1.0 + threshold) else WITHIN


def failure(row: Mapping[str, Any]) -> str:
    """Why a run counts as failed ("" if it passed): it failed, or its outputs were wrong."""
    if truthy(row.get(col.FAILING)):
        return str(row.get(col.REASON) or "failed")
    if _text(row.get(col.VALIDATION)) == "fail":
        return f"validation fail (Max Abs Error {row.get(col.MAX_ABS_ERROR)})"
    return ""


@dataclass
class Comparison:
    base: str
    new: str
    table: pd.DataFrame  # Run, Metric, Old, New, Ratio, Threshold, Status — one row per run × metric
    events: pd.DataFrame  # Kind, Run, Detail: failures, fixes, validation changes, runs (dis)appeared
    failing: list[str] = field(default_factory=list)  # runs of NEW that failed or failed validation
    common: int = 0

    @property
    def regressions(self) -> pd.DataFrame:
        return self.table[self.table["Status"] == REGRESSED] if not self.table.empty else self.table

    @property
    def improvements(self) -> pd.DataFrame:
        return self.table[self.table["Status"] == IMPROVED] if not self.table.empty else self.table

    def exit_code(self) -> int:
        """0 nothing regressed; 1 a run of NEW failed or failed validation (wins over 3); 3 a metric regressed."""
        if self.failing:
            return EXIT_FAILED
        return EXIT_REGRESSED if not self.regressions.empty else EXIT_OK

    def verdict(self) -> str:
        code = self.exit_code()
        if code == EXIT_FAILED:
            return f"FAILED: {len(self.failing)} run(s) failed or failed validation"
        if code == EXIT_REGRESSED:
            return f"REGRESSED: {len(self.regressions)} metric(s) beyond their threshold"
        return "OK: no regression"

    def markdown(self) -> str:
        """A summary for a CI job summary or a pull-request comment."""
        lines = [
            f"## mlonmcu compare: {markdown_text(self.base)} → {markdown_text(self.new)}",
            "",
            f"**{self.verdict()}** — {self.common} run(s) in common, "
            f"{len(self.regressions)} regression(s), {len(self.improvements)} improvement(s).",
            "",
        ]
        if not self.events.empty:
            lines += ["### Changes", "", markdown_table(self.events), ""]
        changed = (
            self.table[self.table["Status"].isin([REGRESSED, IMPROVED, WITHIN])] if not self.table.empty else self.table
        )
        if not changed.empty:
            lines += ["### Metrics that changed", "", markdown_table(_fmt(changed)), ""]
        if not self.table.empty:
            lines += [
                "<details><summary>All compared metrics</summary>",
                "",
                markdown_table(_fmt(self.table)),
                "",
                "</details>",
                "",
            ]
        return "\n".join(lines)

    def summary_table(self) -> pd.DataFrame:
        """Changed metrics first, for the terminal."""
        if self.table.empty:
            return self.table
        order = {REGRESSED: 0, WITHIN: 1, IMPROVED: 2, SAME: 3, UNMEASURED: 4}
        ranked = self.table.assign(_o=self.table["Status"].map(order)).sort_values(["_o", "Run", "Metric"])
        return _fmt(ranked.drop(columns="_o"))


def _fmt(table: pd.DataFrame) -> pd.DataFrame:
    out = table.copy()
    out["Ratio"] = [f"{r:.4f}" if isinstance(r, float) and not math.isnan(r) else "" for r in out["Ratio"]]
    out["Threshold"] = [f"{100 * t:g}%" for t in out["Threshold"]]
    return out


def _latest_per_identity(frame: pd.DataFrame) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for row in records(with_identity(frame)):
        rows[row[IDENTITY]] = row  # a report of several sessions: the last one counts
    return rows


def compare(
    base: pd.DataFrame,
    new: pd.DataFrame,
    thresholds: Mapping[str, float] | None = None,
    *,
    base_name: str = "base",
    new_name: str = "new",
) -> Comparison:
    """Align by identity and judge every metric; ConfigError when the two have no run in common."""
    limits = {**DEFAULT_THRESHOLDS, **(thresholds or {})}
    old_rows, new_rows = _latest_per_identity(base), _latest_per_identity(new)
    common = [i for i in new_rows if i in old_rows]
    if not common:
        raise ConfigError(
            f"{base_name} and {new_name} have no run in common (same model, backend, target, features and "
            f"config): {len(old_rows)} vs {len(new_rows)} runs; compare sessions of the same matrix"
        )
    events: list[dict[str, str]] = []
    records: list[dict[str, Any]] = []
    for ident in common:
        old, now = old_rows[ident], new_rows[ident]
        name = describe(ident)
        was, became = failure(old), failure(now)
        if became and not was:
            events.append({"Kind": "new failure", "Run": name, "Detail": became})
        elif was and not became:
            events.append({"Kind": "fixed", "Run": name, "Detail": f"was: {was}"})
        before, after = _text(old.get(col.VALIDATION)), _text(now.get(col.VALIDATION))
        if before != after and not was and not became:
            events.append(
                {"Kind": "validation changed", "Run": name, "Detail": f"{before or 'none'} → {after or 'none'}"}
            )
        if old.get(col.MODEL_HASH) and now.get(col.MODEL_HASH) and old.get(col.MODEL_HASH) != now.get(col.MODEL_HASH):
            events.append(
                {"Kind": "model changed", "Run": name, "Detail": f"{old[col.MODEL_HASH]} → {now[col.MODEL_HASH]}"}
            )
        if became:
            continue
        for metric, limit in limits.items():
            column = WALLCLOCK.get(metric, metric)
            if _number(old.get(column)) is None or _number(now.get(column)) is None:
                column = metric
            a, b = old.get(column), now.get(column)
            if _number(a) is None and _number(b) is None:
                continue
            x, y = _number(a), _number(b)
            ratio = y / x if x and y is not None else float("nan")
            records.append(
                {
                    "Run": name,
                    "Metric": metric if column == metric else f"{metric} (min)",
                    "Old": a,
                    "New": b,
                    "Ratio": ratio,
                    "Threshold": limit,
                    "Status": judge(a, b, limit),
                }
            )
    for ident in new_rows:
        if ident not in old_rows:
            events.append({"Kind": "appeared", "Run": describe(ident), "Detail": "not in " + base_name})
    for ident in old_rows:
        if ident not in new_rows:
            events.append({"Kind": "disappeared", "Run": describe(ident), "Detail": "not in " + new_name})
    failing = [f"{describe(i)}: {failure(r)}" for i, r in new_rows.items() if failure(r)]
    table = pd.DataFrame(records, columns=["Run", "Metric", "Old", "New", "Ratio", "Threshold", "Status"])
    order = {"new failure": 0, "validation changed": 1, "model changed": 2, "fixed": 3, "appeared": 4, "disappeared": 5}
    events.sort(key=lambda e: order[e["Kind"]])
    return Comparison(
        base_name, new_name, table, pd.DataFrame(events, columns=["Kind", "Run", "Detail"]), failing, len(common)
    )


def mark_regressions(history: pd.DataFrame, thresholds: Mapping[str, float] | None = None) -> pd.DataFrame:
    """History rows (with "Identity" and "Started") plus "Regressed": the metrics that got worse
    than the previous point of the same identity beyond their threshold."""
    limits = {**DEFAULT_THRESHOLDS, **(thresholds or {})}
    out = history.sort_values("Started").copy() if not history.empty else history.copy()
    marks: dict[Any, str] = {}
    for _, group in out.groupby(IDENTITY, sort=False) if not out.empty else []:
        previous: dict[str, Any] | None = None
        for index, now in zip(group.index, records(group), strict=True):
            regressed = []
            if previous is not None and not failure(now) and not failure(previous):
                for metric, limit in limits.items():
                    column = WALLCLOCK.get(metric, metric)
                    if _number(now.get(column)) is None:
                        column = metric
                    if judge(previous.get(column), now.get(column), limit) == REGRESSED:
                        regressed.append(metric)
            marks[index] = ",".join(regressed)
            previous = now
    out["Regressed"] = [marks.get(i, "") for i in out.index]
    return out
