"""What `compare`, `report html` and a sweep's gate name: a session, a label, `baseline`, a file.

Sessions of this HOME are read from the results store when they are there (every finished
session is), otherwise from their directory; labels and baselines are questions to the store,
so they work across the machines of a team that share one database.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pandas as pd

from mlonmcu.environment import Environment
from mlonmcu.errors import ConfigError
from mlonmcu.report import columns as col
from mlonmcu.report.compare import failure
from mlonmcu.report.report import read, records
from mlonmcu.results.store import ResultsStore, redact
from mlonmcu.session.session import REPORT_FILE, read_meta
from mlonmcu.session.sessions import session_dir

BASELINE = "baseline"
LATEST = "latest"


def session_uid(env: Environment, session_id: int, host: str | None = None) -> str:
    """Unique across machines and HOMEs: the store's key for a session."""
    return f"{host or socket.gethostname()}:{env.home.resolve()}:{session_id}"


@dataclass
class Side:
    name: str  # for people: "session 12", "label nightly-abc", a path
    frame: pd.DataFrame
    uid: str = ""
    sweep: str = ""
    started: datetime | None = None


def _from_session(env: Environment, store: ResultsStore | None, text: str) -> Side:
    directory = session_dir(env, text)
    meta = read_meta(directory)
    uid = session_uid(env, int(directory.name), str(meta.get("host") or "") or None)
    sweep = str(meta.get("sweep") or "")
    if store is not None:
        frame = store.runs(session_uids=[uid])
        if not frame.empty:
            return Side(f"session {directory.name}", frame, uid, sweep, _started(store, uid))
    report = directory / REPORT_FILE
    if not report.is_file():
        raise ConfigError(f"session {directory.name} has no report yet")
    started = pd.Timestamp(meta["started"]).to_pydatetime() if meta.get("started") else None
    return Side(f"session {directory.name}", read(report), uid, sweep, started)


def _started(store: ResultsStore, uid: str) -> datetime | None:
    sessions = store.sessions()
    match = sessions[sessions["uid"] == uid]
    return pd.Timestamp(match["started"].iloc[0]).to_pydatetime() if not match.empty else None


def _passed(frame: pd.DataFrame) -> bool:
    return not any(failure(r) for r in records(frame))


def baseline(store: ResultsStore, new: Side) -> Side:
    """The last session of NEW's sweep, started before it, that finished with every run passing."""
    if not new.sweep:
        raise ConfigError(f"'{BASELINE}' is the last passing session of a sweep, and {new.name} is not a sweep session")
    sessions = store.sessions(sweep=new.sweep, status="done")
    order = list(sessions["uid"])
    if new.uid in order:  # the store's order (start time, then id): everything before NEW
        sessions = sessions.iloc[: order.index(new.uid)]
    elif new.started is not None:
        sessions = sessions[[pd.Timestamp(t).to_pydatetime() <= new.started for t in sessions["started"]]]
    for _, s in sessions.iloc[::-1].iterrows():
        frame = store.runs(session_uids=[s["uid"]])
        if not frame.empty and _passed(frame):
            started = pd.Timestamp(s["started"]).to_pydatetime()
            return Side(f"baseline (session {s['session']} on {s['host']})", frame, s["uid"], new.sweep, started)
    raise ConfigError(
        f"no baseline for sweep '{new.sweep}': no earlier session of it passed completely "
        f"(the first night has nothing to compare with)"
    )


def _from_label(store: ResultsStore, label: str, exclude: str = "") -> Side:
    sessions = store.sessions(label=label)
    sessions = sessions[sessions["uid"] != exclude] if not sessions.empty else sessions
    if sessions.empty:
        raise ConfigError(
            f"'{label}' is no session id, 'latest', '{BASELINE}', report file or label in the results store "
            f"{redact(store.url)}"
        )
    s = sessions.iloc[-1]
    started = pd.Timestamp(s["started"]).to_pydatetime()
    return Side(
        f"label {label} (session {s['session']})",
        store.runs(session_uids=[s["uid"]]),
        s["uid"],
        str(s["sweep"] or ""),
        started,
    )


def resolve(env: Environment, store: ResultsStore | None, text: str, relative_to: Side | None = None) -> Side:
    """A side of a comparison from what the user typed (see the module docstring)."""
    path = Path(text)
    if path.suffix.lower() in (".csv", ".json"):
        if not path.is_file():
            raise ConfigError(f"no report file {path}")
        frame = read(path) if path.suffix.lower() == ".csv" else pd.read_json(path, orient="records")
        if col.MODEL not in frame:
            raise ConfigError(f"{path} is not an mlonmcu report (no '{col.MODEL}' column)")
        return Side(str(path), frame)
    if text == LATEST or text.isdigit():
        return _from_session(env, store, text)
    if store is None:
        raise ConfigError(f"'{text}' needs the results store")
    if text == BASELINE:
        if relative_to is None:
            raise ConfigError(
                f"'{BASELINE}' is relative to the other side: use it as BASE, e.g. compare baseline latest"
            )
        return baseline(store, relative_to)
    return _from_label(store, text, relative_to.uid if relative_to else "")
