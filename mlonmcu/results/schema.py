"""The results store's tables (SQLAlchemy Core), as of any schema version.

The tables are built by :func:`build` for a given version, so the historic schema a migration
starts from is this same code with the later additions left out: the first migration creates
``build(1)``, an empty database gets ``build(LATEST)`` directly, and a test checks both roads
end in the same schema. A new version adds a guarded column or index here and one step in
:mod:`mlonmcu.results.migrations`.

A run's query columns (model, backend, ...) are copies taken out of the full report row for
filtering in SQL; the JSON text in ``runs.row`` holds every column and is what is read back.
Timestamps are :class:`UtcTimestamp`: ``timestamptz`` on PostgreSQL, fixed-width ISO text on
SQLite (so text order is time order), timezone-aware UTC in Python on both.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    Dialect,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.types import TypeDecorator, TypeEngine

LATEST = 2  # the newest version build() knows; migrations.SCHEMA_VERSION counts the steps to it

SCHEMA_TABLE = "mlonmcu_schema"
SESSIONS = "sessions"
RUNS = "runs"
TABLES = (SCHEMA_TABLE, SESSIONS, RUNS)


class UtcTimestamp(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime, stored so that SQLite and PostgreSQL compare it alike."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(String(32))
        return dialect.type_descriptor(DateTime(timezone=True))

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"timestamp {value.isoformat()} has no timezone: the results store keeps UTC times")
        value = value.astimezone(UTC)
        return value.isoformat(timespec="microseconds") if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, str):
            value = datetime.fromisoformat(value)
        return value.astimezone(UTC)


@dataclass(frozen=True)
class Tables:
    metadata: MetaData
    schema: Table
    sessions: Table
    runs: Table


def build(version: int = LATEST) -> Tables:
    """The tables as they are at schema `version`."""
    if not 1 <= version <= LATEST:
        raise ValueError(f"no schema version {version} (1..{LATEST})")
    metadata = MetaData()
    schema = Table(SCHEMA_TABLE, metadata, Column("version", Integer, nullable=False))
    sessions = Table(
        SESSIONS,
        metadata,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("uid", Text, nullable=False, unique=True),
        Column("session", Integer, nullable=False),
        Column("label", Text, nullable=False, default=""),
        Column("sweep", Text, nullable=False, default=""),
        Column("command", Text, nullable=False, default=""),
        Column("host", Text, nullable=False, default=""),
        Column("home", Text, nullable=False, default=""),
        Column("status", String(16), nullable=False),
        Column("started", UtcTimestamp, nullable=False, index=True),
        Column("finished", UtcTimestamp, nullable=True),
        Column("mlonmcu_version", Text, nullable=False, default=""),
        Column("git_commit", Text, nullable=False, default=""),
        Column("components", Text, nullable=False, default="{}"),  # JSON: component name -> version
    )
    runs = Table(
        RUNS,
        metadata,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("session_id", Integer, ForeignKey(f"{SESSIONS}.id", ondelete="CASCADE"), nullable=False),
        Column("run", Integer, nullable=False),
        Column("identity", Text, nullable=False),
        Column("identity_hash", String(16), nullable=False),
        Column("model", Text),
        Column("backend", Text),
        Column("target", Text),
        Column("platform", Text),
        Column("features", Text),
        Column("config", Text),
        Column("model_hash", Text),
        Column("label", Text),
        Column("failing", Boolean),
        Column("reason", Text),
        Column("validation", Text),
        Column("row", Text, nullable=False),  # JSON: the whole report row
        *([Column("profile", Text, nullable=True)] if version >= 2 else []),  # JSON: per-kernel records
        UniqueConstraint("session_id", "run", name="uq_runs_session_run"),
        Index("ix_runs_identity_hash", "identity_hash"),
    )
    return Tables(metadata, schema, sessions, runs)


LATEST_TABLES = build(LATEST)
