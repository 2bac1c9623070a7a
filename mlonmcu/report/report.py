"""The session report: one row per run, in the DESIGN.md columns; exported by file extension."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from mlonmcu.errors import ConfigError
from mlonmcu.report.columns import ALL, SUMMARY

FORMATS = (".csv", ".xlsx", ".md", ".json", ".html")


def to_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    rows = sorted(rows, key=lambda r: (r.get("Session", 0), r.get("Run", 0)))
    frame = pd.DataFrame(rows)
    extra = [c for c in frame.columns if c not in ALL]
    return frame.reindex(columns=[*ALL, *extra])


def export(frame: pd.DataFrame, path: Path) -> Path:
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise ConfigError(f"cannot write report '{path}': unknown format; use one of {', '.join(FORMATS)}")
    path.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".csv":
        frame.to_csv(path, index=False)
    elif suffix == ".xlsx":
        frame.to_excel(path, index=False)
    elif suffix == ".md":
        path.write_text(frame.to_markdown(index=False) + "\n", encoding="utf-8")
    elif suffix == ".json":
        frame.to_json(path, orient="records", indent=1)
    else:
        frame.to_html(path, index=False, na_rep="")
    return path


def read(path: Path) -> pd.DataFrame:
    return pd.read_csv(path)


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """The columns worth a terminal: empty ones dropped."""
    columns = [c for c in SUMMARY if c in frame.columns and not frame[c].isna().all()]
    if "Reason" in columns and not frame["Failing"].astype(bool).any():
        columns.remove("Reason")
    return frame[columns]
