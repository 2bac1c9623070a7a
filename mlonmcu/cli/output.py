"""Terminal output: tables and progress (rich on a terminal, plain lines otherwise)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from mlonmcu.report import columns as col
from mlonmcu.report.report import missing

if TYPE_CHECKING:
    import pandas as pd

# Not a terminal (CI logs, pipes): wide enough that report tables are not folded to 80 columns.
console = Console(width=None if sys.stdout.isatty() else 240)
err_console = Console(stderr=True)


def _cell(value: Any) -> str:
    if missing(value):
        return ""
    if isinstance(value, float):
        return f"{int(value):,}" if value.is_integer() and abs(value) >= 1000 else f"{value:.6g}"
    if isinstance(value, bool):
        return "yes" if value else ""
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def print_frame(frame: pd.DataFrame, title: str = "") -> None:
    print_table([str(c) for c in frame.columns], [row.tolist() for _, row in frame.iterrows()], title)


def print_table(columns: list[str], rows: list[list[Any]], title: str = "") -> None:
    """A table; cells and headers are plain text (`Run Time [s]` is not markup)."""
    table = Table(title=Text(title) if title else None, show_lines=False)
    for column in columns:
        table.add_column(Text(column), overflow="fold")
    for values in rows:
        table.add_row(*(Text(_cell(v)) for v in values))
    console.print(table)


class RunProgress:
    """A progress bar over runs on a terminal; one line per finished run elsewhere."""

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet  # -q: errors only, no line per run
        self.interactive = sys.stderr.isatty() and not quiet
        self.progress: Progress | None = None
        self.task: Any = None
        self.total = 0
        self.done = 0

    def start(self, total: int) -> None:
        self.total = total
        if self.interactive:
            self.progress = Progress(
                TextColumn("[bold]runs"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.description}", markup=False),
                console=err_console,
                transient=True,
            )
            self.progress.start()
            self.task = self.progress.add_task("", total=total)

    def advance(self, row: dict[str, Any]) -> None:
        self.done += 1
        status = f"FAILED: {row[col.REASON]}" if row.get(col.FAILING) else "ok"
        what = f"{row[col.MODEL]} {row[col.BACKEND]} {row[col.TARGET]}"
        text = f"[{self.done}/{self.total}] run {row[col.RUN]}: {what} {status}"
        if self.progress is not None:
            self.progress.update(self.task, advance=1, description=f"{row[col.MODEL]}/{row[col.TARGET]}")
            self.progress.console.print(text, markup=False, highlight=False)
        elif not self.quiet:
            print(text, file=sys.stderr, flush=True)

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()
