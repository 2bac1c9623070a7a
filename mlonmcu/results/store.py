"""The results store: every finished run of every session, queryable across time and machines.

SQLite in HOME by default; a PostgreSQL URL (``--db``) lets a team's machines write to one
history. A session is recorded in one transaction (its row upserted by a globally unique uid,
its old runs replaced), so re-recording or re-importing a session replaces it and a crash
half-way leaves the previous state. Each run keeps its whole report row as JSON, so columns
added later need no schema change, and reads give back the values with their types.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import URL, Connection, Engine, case, create_engine, event, func, make_url, select, text
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError

from mlonmcu.errors import ConfigError, MlonmcuError
from mlonmcu.report import columns as col
from mlonmcu.report.report import missing
from mlonmcu.results import migrations
from mlonmcu.results.identity import IDENTITY, identity, identity_hash
from mlonmcu.results.records import SessionRecord, dumps, plain, restore
from mlonmcu.results.schema import LATEST_TABLES as T

if TYPE_CHECKING:
    import pandas as pd

# pandas is imported where stored runs are read into frames: the recorder (recorder.py) writes
# without it

DEFAULT_FILE = "results.db"
SCHEMA_VERSION = migrations.SCHEMA_VERSION
CONNECT_TIMEOUT = 5  # seconds: a store that does not answer should fail the command, not hang it
INSERT_BATCH = 500  # rows per INSERT statement
STATUSES = ("done", "interrupted", "failed")

# columns runs() adds to the report columns: where and when a run was made
SESSION_UID = "Session UID"
STARTED = "Started"
HOST = "Host"
MLONMCU_VERSION = "mlonmcu Version"
GIT_COMMIT = "Git Commit"
COMPONENTS = "Components"
STORE_COLUMNS = (IDENTITY, SESSION_UID, STARTED, HOST, MLONMCU_VERSION, GIT_COMMIT, COMPONENTS)

SESSION_COLUMNS = (
    "uid",
    "session",
    "label",
    "sweep",
    "command",
    "host",
    "home",
    "status",
    "started",
    "finished",
    "runs",
    "failed",
    "mlonmcu_version",
    "git_commit",
)

# query columns of the runs table, copied out of the report row for filtering in SQL
QUERY_COLUMNS = {
    "model": col.MODEL,
    "backend": col.BACKEND,
    "target": col.TARGET,
    "platform": col.PLATFORM,
    "features": col.FEATURES,
    "config": col.CONFIG,
    "model_hash": col.MODEL_HASH,
    "label": col.LABEL,
    "reason": col.REASON,
    "validation": col.VALIDATION,
}

_IMMEDIATE = "mlonmcu_sqlite_immediate"  # execution option: take SQLite's write lock at BEGIN
_PG_SCHEMA_LOCK = 0x6D6C6F6E6D6375  # advisory lock key: one process at a time creates/migrates the schema
_PASSWORD = re.compile(r"(://[^:/@]*:)[^@]*@")


def redact(url: str) -> str:
    """The URL without its password: for messages and logs."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return _PASSWORD.sub(r"\1***@", url)
    return parsed.render_as_string(hide_password=True) if parsed.password else url


def store_url(url: str | None, home: Path) -> str:
    """The store's URL: the HOME's SQLite file by default; a bare path also means an SQLite file."""
    if not url:
        return f"sqlite:///{home.absolute() / DEFAULT_FILE}"
    if "://" not in url:
        return f"sqlite:///{Path(url).expanduser().absolute()}"
    return url


def _normalise(url: str) -> str:
    """`postgresql://` would mean psycopg2, which mlonmcu does not install: use psycopg 3."""
    for scheme in ("postgresql://", "postgres://"):
        if url.startswith(scheme):
            return "postgresql+psycopg://" + url[len(scheme) :]
    return url


def _utc(value: datetime, what: str) -> datetime:
    if value.tzinfo is None:
        raise ConfigError(f"{what} {value.isoformat()} has no timezone: give it one (e.g. +00:00 for UTC)")
    return value


def _cell(row: Mapping[str, Any], column: str) -> str | None:
    value = row.get(column)
    return None if missing(value) else str(value)


def _run_values(
    session_id: int, row: Mapping[str, Any], profiles: Mapping[int, list[dict[str, Any]]]
) -> dict[str, Any]:
    run = int(float(row[col.RUN]))  # checked by _check_runs
    profile = profiles.get(run)
    text_ = identity(row)
    failing = row.get(col.FAILING)
    return {
        "session_id": session_id,
        "run": run,
        "identity": text_,
        "identity_hash": identity_hash(text_),
        **{name: _cell(row, column) for name, column in QUERY_COLUMNS.items()},
        "failing": None if missing(failing) else bool(failing),
        "row": dumps(row, f"run {run}"),
        "profile": None if profile is None else json.dumps([plain(r, f"profile of run {run}") for r in profile]),
    }


def _run_number(value: Any) -> int | None:
    try:
        value = plain(value, "run number")
    except MlonmcuError:
        return None
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(number) if number.is_integer() else None


def _check_runs(rows: Sequence[Mapping[str, Any]], profiles: Mapping[int, Any]) -> None:
    """Refuse rows the schema would refuse, before anything is written, with a message that says why."""
    seen: set[int] = set()
    for index, row in enumerate(rows):
        run = _run_number(row.get(col.RUN))
        if run is None:
            raise MlonmcuError(f"report row {index} has no run number ('{col.RUN}': {row.get(col.RUN)!r})")
        if run in seen:
            raise MlonmcuError(f"run {run} is in the rows twice")
        seen.add(run)
    unknown = sorted(set(profiles) - seen)
    if unknown:
        raise MlonmcuError(f"profiles for runs without a report row: {unknown}")


def _check_meta(meta: SessionRecord) -> None:
    if not meta.uid:
        raise ConfigError("a session needs a uid (host:home:id) to be recorded")
    if meta.status not in STATUSES:
        raise ConfigError(f"session status '{meta.status}' cannot be recorded: use one of {', '.join(STATUSES)}")
    _utc(meta.started, "session start")
    if meta.finished is not None:
        _utc(meta.finished, "session end")


def _session_values(meta: SessionRecord) -> dict[str, Any]:
    return {
        "uid": meta.uid,
        "session": int(meta.session),
        "label": meta.label,
        "sweep": meta.sweep,
        "command": meta.command,
        "host": meta.host,
        "home": meta.home,
        "status": meta.status,
        "started": meta.started,
        "finished": meta.finished,
        "mlonmcu_version": meta.mlonmcu_version,
        "git_commit": meta.git_commit,
        "components": json.dumps(dict(meta.components), sort_keys=True),
    }


def _utc_column(values: Any) -> pd.Series:
    import pandas as pd

    return pd.to_datetime(pd.Series(values, dtype=object), utc=True)


# -- connecting -----------------------------------------------------------------------------------


def _first_line(err: DBAPIError, password: str | None) -> str:
    message = str(err.orig) if err.orig is not None else str(err)
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    reason = lines[0] if lines else type(err.orig).__name__
    return reason.replace(password, "***") if password else reason


def _open_error(url: URL, shown: str, err: DBAPIError, connected: bool) -> ConfigError:
    """What went wrong opening the store, and what to do about it."""
    reason = _first_line(err, url.password)
    if url.get_backend_name() == "sqlite":
        if "not a database" in reason:
            fix = f"{url.database} is not an SQLite database: give --db a results store or a new file"
        else:
            fix = "check that the directory exists and is writable, or give --db another path"
        return ConfigError(f"cannot open the results store {shown}: {reason}; {fix}")
    if connected:
        return ConfigError(
            f"cannot prepare the results store {shown}: {reason}; the user in the --db URL needs the right to "
            "create tables in that database (once; later it only reads and writes rows)"
        )
    where = f"{url.host or 'localhost'}:{url.port or 5432}"
    return ConfigError(
        f"cannot connect to the results store {shown}: {reason}; check that the PostgreSQL server at {where} "
        "is running and accepts connections, and the user, password and database in the --db URL"
    )


def _engine(url: URL, shown: str) -> Engine:
    backend = url.get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        raise ConfigError(
            f"cannot use '{shown}' as results store: mlonmcu supports sqlite:///PATH and "
            "postgresql://USER:PASSWORD@HOST:PORT/DATABASE"
        )
    args = {"timeout": CONNECT_TIMEOUT} if backend == "sqlite" else {"connect_timeout": CONNECT_TIMEOUT}
    try:
        engine = create_engine(url, connect_args=args, pool_pre_ping=True)
    except (NoSuchModuleError, ImportError) as err:
        raise ConfigError(f"cannot use '{shown}' as results store: its database driver is missing ({err})") from None
    if backend == "sqlite":
        _transactional_sqlite(engine)
    return engine


def _transactional_sqlite(engine: Engine) -> None:
    """Let SQLAlchemy, not Python's sqlite3, begin transactions: sqlite3 would run DDL outside them
    (a half-migrated store) and enforce no foreign keys (orphaned runs)."""

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        # a writer takes the lock at once, so it waits (timeout) instead of failing on upgrade
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get(_IMMEDIATE) else "BEGIN")


class ResultsStore:
    """One open store. Use :meth:`open`; close it (or use it as a context manager) when done."""

    def __init__(self, engine: Engine, url: str):
        self._engine = engine
        self.url = url  # redacted: safe to show

    @classmethod
    def open(cls, url: str) -> ResultsStore:
        """Connect and create or migrate the schema; every way this can fail is a ConfigError."""
        shown = redact(url)
        try:
            parsed = make_url(_normalise(url))
        except ArgumentError:
            raise ConfigError(
                f"'{shown}' is not a database URL: use sqlite:///PATH or postgresql://USER:PASSWORD@HOST:PORT/DATABASE"
            ) from None
        engine = _engine(parsed, shown)
        connected = False
        try:
            with engine.connect():
                connected = True
            with cls._transaction(engine, write=True) as conn:
                if engine.dialect.name == "postgresql":
                    conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_SCHEMA_LOCK})
                migrations.ensure_latest(conn, shown)
        except DBAPIError as err:
            engine.dispose()
            raise _open_error(parsed, shown, err, connected) from None
        except BaseException:
            engine.dispose()
            raise
        return cls(engine, shown)

    @staticmethod
    @contextmanager
    def _transaction(engine: Engine, write: bool = False) -> Iterator[Connection]:
        with engine.connect() as conn:
            if write:
                conn.execution_options(**{_IMMEDIATE: True})
            with conn.begin():
                yield conn

    @contextmanager
    def _use(self, write: bool = False) -> Iterator[Connection]:
        """A transaction; a database failure becomes one line naming the store."""
        try:
            with self._transaction(self._engine, write) as conn:
                yield conn
        except DBAPIError as err:
            raise MlonmcuError(f"results store {self.url}: {_first_line(err, None)}") from err

    def close(self) -> None:
        self._engine.dispose()

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- writing ------------------------------------------------------------------------------------

    def record_session(
        self,
        meta: SessionRecord,
        rows: list[dict[str, Any]],
        profiles: dict[int, list[dict[str, Any]]] | None = None,
    ) -> None:
        """Store a session and its report rows, replacing what was stored for its uid, all or nothing."""
        profiles = profiles or {}
        _check_meta(meta)
        _check_runs(rows, profiles)
        values = _session_values(meta)
        with self._use(write=True) as conn:
            session_id = self._upsert_session(conn, values)
            conn.execute(T.runs.delete().where(T.runs.c.session_id == session_id))
            for start in range(0, len(rows), INSERT_BATCH):
                batch = rows[start : start + INSERT_BATCH]
                conn.execute(
                    T.runs.insert(),
                    [_run_values(session_id, row, profiles) for row in batch],
                )

    @staticmethod
    def _upsert_session(conn: Connection, values: dict[str, Any]) -> int:
        # the dialect's own INSERT … ON CONFLICT, imported for the dialect in use (postgresql's is slow to load)
        dialect = "postgresql" if conn.dialect.name == "postgresql" else "sqlite"
        insert: Any = importlib.import_module(f"sqlalchemy.dialects.{dialect}").insert
        new = insert(T.sessions).values(**values)
        upsert = new.on_conflict_do_update(
            index_elements=[T.sessions.c.uid],
            set_={name: new.excluded[name] for name in values if name != "uid"},
        ).returning(T.sessions.c.id)
        return int(conn.execute(upsert).scalar_one())

    # -- reading ------------------------------------------------------------------------------------

    def sessions(
        self, *, sweep: str | None = None, label: str | None = None, status: str | None = None
    ) -> pd.DataFrame:
        """One row per session (SESSION_COLUMNS), oldest first, with its numbers of runs and failures."""
        s, r = T.sessions, T.runs
        counts = (
            select(
                r.c.session_id,
                func.count().label("runs"),
                func.sum(case((r.c.failing.is_(True), 1), else_=0)).label("failed"),
            )
            .group_by(r.c.session_id)
            .subquery()
        )
        query = (
            select(
                *(s.c[name] for name in SESSION_COLUMNS if name not in ("runs", "failed")),
                func.coalesce(counts.c.runs, 0).label("runs"),
                func.coalesce(counts.c.failed, 0).label("failed"),
            )
            .select_from(s.outerjoin(counts, counts.c.session_id == s.c.id))
            .order_by(s.c.started, s.c.id)
        )
        for column, wanted in (("sweep", sweep), ("label", label), ("status", status)):
            if wanted is not None:
                query = query.where(s.c[column] == wanted)
        with self._use() as conn:
            records = [dict(m) for m in conn.execute(query).mappings()]
        import pandas as pd

        frame = pd.DataFrame(records, columns=list(SESSION_COLUMNS))
        for name in ("started", "finished"):
            frame[name] = _utc_column(frame[name])
        for name in ("session", "runs", "failed"):
            frame[name] = frame[name].astype("int64")
        return frame

    def runs(
        self,
        *,
        session_uids: list[str] | None = None,
        since: datetime | None = None,
        sweep: str | None = None,
        label: str | None = None,
    ) -> pd.DataFrame:
        """The stored report rows, as the session's report had them, plus STORE_COLUMNS; by start, run."""
        s, r = T.sessions, T.runs
        query = (
            select(
                r.c.row,
                r.c.identity,
                s.c.uid,
                s.c.started,
                s.c.host,
                s.c.mlonmcu_version,
                s.c.git_commit,
                s.c.components,
            )
            .select_from(r.join(s, r.c.session_id == s.c.id))
            .order_by(s.c.started, s.c.id, r.c.run)
        )
        if session_uids is not None:
            query = query.where(s.c.uid.in_(session_uids))
        if since is not None:
            query = query.where(s.c.started >= _utc(since, "since"))
        if sweep is not None:
            query = query.where(s.c.sweep == sweep)
        if label is not None:
            query = query.where(s.c.label == label)
        with self._use() as conn:
            results = conn.execute(query).all()
        records = [
            {
                **restore(json.loads(found.row)),
                IDENTITY: found.identity,
                SESSION_UID: found.uid,
                STARTED: found.started,
                HOST: found.host,
                MLONMCU_VERSION: found.mlonmcu_version,
                GIT_COMMIT: found.git_commit,
                COMPONENTS: found.components,
            }
            for found in results
        ]
        import pandas as pd

        frame = pd.DataFrame(records)
        extra = [c for c in frame.columns if c not in col.ALL and c not in STORE_COLUMNS]
        frame = frame.reindex(columns=[*col.ALL, *extra, *STORE_COLUMNS])
        frame[STARTED] = _utc_column(frame[STARTED])
        return frame

    def profiles(self, session_uid: str) -> dict[int, pd.DataFrame]:
        """The per-kernel tables of a session's profiled runs, by run number."""
        s, r = T.sessions, T.runs
        with self._use() as conn:
            session_id = conn.execute(select(s.c.id).where(s.c.uid == session_uid)).scalar()
            if session_id is None:
                raise ConfigError(f"no session '{session_uid}' in the results store {self.url}")
            found = conn.execute(
                select(r.c.run, r.c.profile)
                .where(r.c.session_id == session_id, r.c.profile.is_not(None))
                .order_by(r.c.run)
            ).all()
        import pandas as pd

        return {run: pd.DataFrame([restore(rec) for rec in json.loads(profile)]) for run, profile in found}
