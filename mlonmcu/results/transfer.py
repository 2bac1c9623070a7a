"""Into and out of the results store: import a session directory or report file, export runs.

Import exists for the sessions the store never saw (run before it existed, on a machine without
access to the team's database, or when recording failed); it derives the same uid the session
would have had, so importing twice, or after the session recorded itself, replaces instead of
duplicating. Export is for tools that want a plain table (spreadsheets, notebooks, dashboards).
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from mlonmcu import yamlio
from mlonmcu.atomic import check_writable, write_with
from mlonmcu.errors import ConfigError
from mlonmcu.features.profile import PROFILE_FILE
from mlonmcu.report import columns as col
from mlonmcu.report import report
from mlonmcu.results.records import SessionRecord
from mlonmcu.session.run import RUN_FILE
from mlonmcu.session.session import REPORT_FILE, SESSION_FILE, read_meta
from mlonmcu.session.sessions import status_of
from mlonmcu.session.spec import Stage

if TYPE_CHECKING:  # a session records itself without pandas (read_session)
    import pandas as pd

    from mlonmcu.results.store import ResultsStore

logger = logging.getLogger("mlonmcu.results")

RUNS_DIR = "runs"
PROFILE_PATH = Path(Stage.POSTPROCESS.name.lower()) / PROFILE_FILE  # in a run's directory
# session.yml status -> the stored one: a session nobody runs any more that says `running` crashed
STORED_STATUS = {"done": "done", "interrupted": "interrupted", "failed": "failed", "crashed": "failed"}

Rows = list[dict[str, Any]]
Profiles = dict[int, list[dict[str, Any]]]


def import_report(store: ResultsStore, path: Path, *, label: str = "", host: str = "", home: str = "") -> SessionRecord:
    """Record a session directory (HOME/sessions/<id>) or a report .csv; returns what was recorded.

    `label`, `host` and `home` replace what the session says (a .csv says nothing: its host is
    this machine and its "home" the file, so each file is its own session).
    """
    path = Path(path)
    if path.is_file() and path.name == REPORT_FILE and (path.parent / SESSION_FILE).is_file():
        path = path.parent  # a session's own report: import the session, with its times and versions
    if path.is_dir():
        meta, rows, profiles = read_session(path, label=label, host=host, home=home)
    elif path.is_file() and path.suffix.lower() == ".csv":
        meta, rows, profiles = _read_csv(path, label=label, host=host, home=home)
    else:
        raise ConfigError(f"cannot import '{path}': give a session directory (HOME/sessions/<id>) or a report .csv")
    store.record_session(meta, rows, profiles)
    return meta


def read_session(
    directory: Path, *, label: str = "", host: str = "", home: str = ""
) -> tuple[SessionRecord, Rows, Profiles]:
    """What a finished session directory says about itself, as the store records it."""
    if not (directory / SESSION_FILE).is_file():
        raise ConfigError(
            f"'{directory}' is not a session directory (it has no {SESSION_FILE}): give HOME/sessions/<id>"
        )
    meta = read_meta(directory)
    status = status_of(directory, meta)
    if status.startswith("running"):
        raise ConfigError(f"session '{directory}' is still {status}: import it when it has ended")
    if status not in STORED_STATUS:
        raise ConfigError(
            f"cannot import session '{directory}': its {SESSION_FILE} says status '{status}'; "
            f"expected one of {', '.join(STORED_STATUS)}"
        )
    session = _session_id(meta.get("id", directory.name), directory / SESSION_FILE)
    host = host or str(meta.get("host") or socket.gethostname())
    home = home or str(meta.get("home") or directory.resolve().parent.parent)
    report_path = directory / REPORT_FILE
    rows = report.read_rows(report_path) if report_path.is_file() else []
    runs = {int(r[col.RUN]) for r in rows if not report.missing(r.get(col.RUN))}
    run_mlonmcu, components = _run_versions(directory / RUNS_DIR)
    record = SessionRecord(
        uid=f"{host}:{home}:{session}",
        session=session,
        label=label or str(meta.get("label") or ""),
        sweep=str(meta.get("sweep") or ""),
        command=str(meta.get("command") or ""),
        host=host,
        home=home,
        status=STORED_STATUS[status],
        started=_timestamp(meta.get("started"), directory / SESSION_FILE) or _modified(directory / SESSION_FILE),
        finished=_timestamp(meta.get("finished"), directory / SESSION_FILE),
        mlonmcu_version=str(meta.get("mlonmcu") or run_mlonmcu),
        git_commit=str(meta.get("git_commit") or ""),
        components=components,
    )
    return record, rows, _profiles(directory / RUNS_DIR, runs)


def _read_csv(path: Path, *, label: str, host: str, home: str) -> tuple[SessionRecord, Rows, Profiles]:
    try:
        frame = report.read(path)
    except (OSError, ValueError) as err:
        raise ConfigError(f"cannot read report '{path}': {err}") from None
    if col.MODEL not in frame:
        raise ConfigError(f"'{path}' is not an mlonmcu report (no '{col.MODEL}' column)")
    if col.RUN not in frame:
        raise ConfigError(f"'{path}' has no '{col.RUN}' column: the store needs each run's number")
    ids = sorted({int(v) for v in frame[col.SESSION].dropna()}) if col.SESSION in frame else []
    if len(ids) > 1:
        raise ConfigError(f"'{path}' holds sessions {', '.join(map(str, ids))}: import one session's report at a time")
    labels = sorted({str(v) for v in frame[col.LABEL].dropna() if str(v)}) if col.LABEL in frame else []
    session = ids[0] if ids else 0
    host = host or socket.gethostname()
    home = home or str(path.resolve())
    written = _modified(path)
    record = SessionRecord(
        uid=f"{host}:{home}:{session}",
        session=session,
        label=label or (labels[0] if len(labels) == 1 else ""),
        sweep="",
        command="",
        host=host,
        home=home,
        status="done",
        started=written,
        finished=written,
        mlonmcu_version="",
        git_commit="",
        components={},
    )
    return record, _records(frame), {}


def _records(frame: pd.DataFrame) -> Rows:
    return [{str(k): v for k, v in row.items()} for row in frame.to_dict("records")]


def _session_id(value: Any, source: Path) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{source}: session id '{value}' is not a number") from None


def _timestamp(value: Any, source: Path) -> datetime | None:
    """A time from session.yml (ISO text, or a datetime when YAML parsed it); naive means UTC."""
    if value is None or value == "":
        return None
    try:
        stamp = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    except ValueError:
        raise ConfigError(f"{source}: '{value}' is not a time (expected ISO 8601)") from None
    return stamp.replace(tzinfo=UTC) if stamp.tzinfo is None else stamp.astimezone(UTC)


def _modified(path: Path) -> datetime:
    return datetime.fromtimestamp(path.stat().st_mtime, UTC)


def _run_files(runs_dir: Path) -> list[tuple[int, Path]]:
    if not runs_dir.is_dir():
        return []
    return sorted((int(p.name), p) for p in runs_dir.iterdir() if p.name.isdigit() and p.is_dir())


def _run_versions(runs_dir: Path) -> tuple[str, dict[str, str]]:
    """The mlonmcu version and component versions the runs recorded (the first run naming one wins)."""
    mlonmcu_version = ""
    components: dict[str, str] = {}
    for _, run_dir in _run_files(runs_dir):
        try:
            data = yamlio.load((run_dir / RUN_FILE).read_text())
        except (OSError, yaml.YAMLError) as err:
            logger.warning("%s: %s (its versions are not imported)", run_dir / RUN_FILE, err)
            continue
        if not isinstance(data, dict):
            continue
        mlonmcu_version = mlonmcu_version or str(data.get("mlonmcu") or "")
        for name, found in (data.get("components") or {}).items():
            version = found.get("version", "") if isinstance(found, dict) else found
            components.setdefault(str(name), str(version or ""))
    return mlonmcu_version, components


def _profiles(runs_dir: Path, runs: set[int]) -> Profiles:
    profiles: Profiles = {}
    for run, run_dir in _run_files(runs_dir):
        path = run_dir / PROFILE_PATH
        if run not in runs or not path.is_file():
            continue
        try:
            profiles[run] = report.read_rows(path)
        except (OSError, ValueError) as err:
            logger.warning("%s: %s (not imported)", path, err)
    return profiles


# -- export ---------------------------------------------------------------------------------------


def _uniform(frame: pd.DataFrame) -> pd.DataFrame:
    """Parquet wants one type per column: a column mixing types (numbers and text) becomes text."""
    import pandas as pd

    frame = frame.copy()
    for name in frame.columns:
        values = frame[name].dropna()
        if frame[name].dtype == object and len({type(v) for v in values}) > 1:
            frame[name] = frame[name].map(lambda v: v if pd.isna(v) else str(v))
    return frame


WRITERS: dict[str, Callable[[pd.DataFrame, Path], object]] = {
    ".csv": lambda frame, path: report.export(frame, path),  # formula-safe, as every report .csv
    ".json": lambda frame, path: write_with(
        path, lambda tmp: frame.to_json(tmp, orient="records", date_format="iso", indent=1)
    ),
    ".parquet": lambda frame, path: write_with(path, lambda tmp: _uniform(frame).to_parquet(tmp, index=False)),
}
EXPORT_FORMATS = tuple(WRITERS)


def export_runs(store: ResultsStore, out: Path, *, since: datetime | None = None) -> int:
    """Write the stored runs (since a time) to `out`, by its suffix; returns the number of rows."""
    out = Path(out)
    writer = WRITERS.get(out.suffix.lower())
    if writer is None:
        raise ConfigError(f"cannot export runs to '{out}': unknown format; use one of {', '.join(EXPORT_FORMATS)}")
    check_writable(out)
    frame = store.runs(since=since)
    writer(frame, out)
    return len(frame)
