"""The session report: one row per run, in the DESIGN.md columns; exported by file extension.

Files are written atomically (a full disk never truncates a report). Spreadsheet formats never
turn text into formulas: in .xlsx, text cells are typed as text; in .csv, text that a
spreadsheet would evaluate (starting with = + - @, tab or CR) gets a leading apostrophe,
which :func:`read` removes again.
"""

from __future__ import annotations

import csv
import math
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from mlonmcu.atomic import write_text, write_with
from mlonmcu.errors import ConfigError
from mlonmcu.report import columns as col

if TYPE_CHECKING:  # a session writes and prints its report without pandas (~0.35 s to load)
    import pandas as pd

FORMATS = (".csv", ".xlsx", ".md", ".json", ".html")
# the cells pandas' read_csv takes for missing values (read_rows agrees with read)
NA_CELLS = frozenset(
    [
        "",
        "#N/A",
        "#N/A N/A",
        "#NA",
        "-1.#IND",
        "-1.#QNAN",
        "-NaN",
        "-nan",
        "1.#IND",
        "1.#QNAN",
        "<NA>",
        "N/A",
        "NA",
        "NULL",
        "NaN",
        "None",
        "n/a",
        "nan",
        "null",
    ]
)
INTEGER = re.compile(r"[-+]?[0-9]+")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
ESCAPE = "'"


def to_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    import pandas as pd

    ordered = ordered_rows(rows)
    return pd.DataFrame(ordered).reindex(columns=columns_of(ordered))


def ordered_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows in report order: by session, then run."""
    return sorted(rows, key=lambda r: (r.get(col.SESSION, 0), r.get(col.RUN, 0)))


def columns_of(rows: list[dict[str, Any]]) -> list[str]:
    """The report columns in their fixed order, then any others in order of appearance."""
    extra = dict.fromkeys(k for r in rows for k in r if k not in col.ALL)
    return [*col.ALL, *extra]


def write_csv(rows: list[dict[str, Any]], path: Path) -> Path:
    """The session report as .csv straight from the rows: it is rewritten after every finished
    run, and through pandas that costs ~30 ms a time (most of a cached run). Same cells as
    `export` (read() gives the same frame)."""
    ordered = ordered_rows(rows)
    names = columns_of(ordered)

    def cell(value: Any) -> Any:
        value = _plain(value)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return ""
        return _escape_text(value)

    def fill(tmp: Path) -> None:
        with tmp.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow(names)
            writer.writerows([cell(r.get(c)) for c in names] for r in ordered)

    return write_with(path, fill)


def _escape_text(value: Any) -> Any:
    if isinstance(value, str) and (value.startswith(FORMULA_STARTS) or value.startswith(ESCAPE)):
        return ESCAPE + value
    return value


def _unescape_text(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(ESCAPE):
        return value[1:]
    return value


def _write_xlsx(frame: pd.DataFrame, path: Path) -> None:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.append([str(c) for c in frame.columns])
    for values in frame.itertuples(index=False):
        sheet.append([None if missing(v) else _plain(v) for v in values])
    for row in sheet.iter_rows(min_row=2):
        for cell in row:
            if isinstance(cell.value, str):
                cell.data_type = "s"  # text stays text, even "=HYPERLINK(...)"
    book.save(path)


def missing(value: Any) -> bool:
    """An empty cell: None, NaN, NaT or pandas' NA (a value of a pandas type exists only where
    pandas is loaded: it is not loaded to ask)."""
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, (str, Mapping, list, tuple, int)):
        return False
    pandas = sys.modules.get("pandas")
    if pandas is None:
        return False
    try:
        return bool(pandas.isna(value))
    except (TypeError, ValueError):
        return False


def truthy(value: Any) -> bool:
    """A Failing cell as a bool, whether it came from a frame (bool, NaN) or a CSV file ("True")."""
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value) and not missing(value)


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")  # what starts markup inside a line


def markdown_text(value: Any) -> Any:
    """Text as Markdown shows it literally: a model name or label is data, never markup or HTML
    (`<img onerror=...>` stays text, a `|` does not split the table's cell)."""
    if not isinstance(value, str):
        return value
    text = MARKDOWN_SPECIAL.sub(r"\\\1", value.replace("&", "&amp;"))
    return text.replace("\r", " ").replace("\n", " ")


def markdown_table(frame: pd.DataFrame) -> str:
    """A pipe table whose headers and text cells are escaped (:func:`markdown_text`); a cell
    without a figure is empty, as in the CSV, not `nan`."""
    escaped = frame.astype(object).mask(frame.isna(), "").map(markdown_text)
    escaped.columns = [markdown_text(str(c)) for c in frame.columns]
    return str(escaped.to_markdown(index=False))


def export(frame: pd.DataFrame, path: Path) -> Path:
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise ConfigError(f"cannot write report '{path}': unknown format; use one of {', '.join(FORMATS)}")
    if suffix == ".csv":
        escaped = frame.map(_escape_text)
        return write_with(path, lambda tmp: escaped.to_csv(tmp, index=False))
    if suffix == ".xlsx":
        return write_with(path, lambda tmp: _write_xlsx(frame, tmp))
    if suffix == ".md":
        return write_text(path, markdown_table(frame) + "\n")
    if suffix == ".json":
        return write_text(path, frame.to_json(orient="records", indent=1) or "[]")
    return write_text(path, frame.to_html(index=False, na_rep=""))


def read(path: Path) -> pd.DataFrame:
    import pandas as pd

    return pd.read_csv(path).map(_unescape_text)


def read_rows(path: Path) -> list[dict[str, Any]]:
    """A report .csv as rows without pandas, typed per column as `read` types it: a column of
    whole numbers is int, of numbers float, of True/False bool, else text; empty cells are NaN."""
    with path.open(newline="", encoding="utf-8") as fh:
        table = list(csv.reader(fh))
    if not table:
        raise ValueError("no columns to parse from the file")
    names, cells = table[0], table[1:]
    columns = [_typed([row[i] if i < len(row) else "" for row in cells]) for i in range(len(names))]
    return [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)] if cells else []


def _typed(cells: list[str]) -> list[Any]:
    present = {c for c in cells if c not in NA_CELLS}
    for parse in (_integer, _number, _boolean):
        try:
            values = {c: parse(c) for c in present}
        except ValueError:
            continue
        return [values.get(c, math.nan) for c in cells]
    return [math.nan if c in NA_CELLS else _unescape_text(c) for c in cells]


def _integer(cell: str) -> int:
    if not INTEGER.fullmatch(cell):
        raise ValueError(cell)
    return int(cell)


def _number(cell: str) -> float:
    if "_" in cell or cell.strip() != cell:
        raise ValueError(cell)
    return float(cell)


def _boolean(cell: str) -> bool:
    if cell not in ("True", "False"):
        raise ValueError(cell)
    return cell == "True"


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows as dicts keyed by column name."""
    return cast(list[dict[str, Any]], frame.to_dict("records"))


def summary(rows: list[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    """The columns worth a terminal (empty ones dropped) and the rows' values in them."""
    ordered = ordered_rows(rows)
    columns = [c for c in col.SUMMARY if any(not missing(r.get(c)) for r in ordered)]
    if col.REASON in columns and not any(truthy(r.get(col.FAILING)) for r in ordered):
        columns.remove(col.REASON)
    if col.FRONTEND in columns and len({r.get(col.FRONTEND) for r in ordered}) < 2:
        columns.remove(col.FRONTEND)
    return columns, [[r.get(c) for c in columns] for r in ordered]
