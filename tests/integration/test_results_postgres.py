"""The results store against the databases it supports: every test here runs on an SQLite file and,
marked `integration`, on a throw-away PostgreSQL server (tests/pg.py; skipped without one).

The same assertions on both are the point: a team that moves its history from SQLite to
PostgreSQL must get the same rows, types, times and orders back.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa
from pg import PASSWORD, T0, pg_cluster, results_db, sample_record, sample_rows  # noqa: F401 (fixtures)

from mlonmcu.errors import ConfigError, MlonmcuError
from mlonmcu.report import columns as col
from mlonmcu.report.report import to_frame
from mlonmcu.results import migrations, schema, store
from mlonmcu.results.identity import IDENTITY, identity
from mlonmcu.results.store import ResultsStore


@pytest.fixture
def opened(results_db: str):  # noqa: F811
    with ResultsStore.open(results_db) as results:
        yield results


@pytest.fixture
def other_db(results_db: str, request: pytest.FixtureRequest, tmp_path):  # noqa: F811
    """A second empty database of the same kind as `results_db`."""
    if results_db.startswith("sqlite"):
        yield f"sqlite:///{tmp_path / 'other.db'}"
        return
    cluster = request.getfixturevalue("pg_cluster")
    name = cluster.create_database()
    try:
        yield cluster.url(name)
    finally:
        cluster.drop_database(name)


@contextmanager
def _raw(url: str) -> Iterator[sa.Connection]:
    """A transaction on the database itself, past the store: to build or break what the store finds."""
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            yield conn
    finally:
        engine.dispose()


def _version(url: str) -> list[int]:
    with _raw(url) as conn:
        return list(conn.execute(sa.text("SELECT version FROM mlonmcu_schema")).scalars())


def _shape(url: str) -> dict[str, Any]:
    """Tables, columns, indexes and constraints: what a migration must reproduce."""
    with _raw(url) as conn:
        found = sa.inspect(conn)
        return {
            table: {
                "columns": sorted((c["name"], str(c["type"]), c["nullable"]) for c in found.get_columns(table)),
                "indexes": sorted((i["name"], tuple(i["column_names"])) for i in found.get_indexes(table)),
                "unique": sorted(tuple(u["column_names"]) for u in found.get_unique_constraints(table)),
                "foreign": [(f["referred_table"], f["options"].get("ondelete")) for f in found.get_foreign_keys(table)],
            }
            for table in sorted(found.get_table_names())
        }


# -- recording and reading back -------------------------------------------------------------------


def test_runs_come_back_with_their_report_columns_and_types(opened: ResultsStore):
    rows = sample_rows()
    meta = sample_record()
    opened.record_session(meta, rows)

    frame = opened.runs()
    expected = to_frame(rows)  # what the session's own report holds
    pd.testing.assert_frame_equal(frame[list(expected.columns)], expected, check_dtype=True)
    assert frame[col.RUN_CYCLES].dtype == "int64"
    assert frame[col.FAILING].dtype == bool and frame[col.FAILING].tolist() == [False, False, True]
    assert math.isnan(frame[col.SETUP_CYCLES].iloc[1]) and math.isnan(frame[col.REASON].iloc[0])
    assert frame["Custom Note"].tolist() == ["=note 0", "=note 1", "=note 2"]
    assert frame[IDENTITY].tolist() == [identity(r) for r in rows]
    assert set(frame[store.SESSION_UID]) == {meta.uid}
    assert (frame[store.STARTED] == pd.Timestamp(meta.started)).all()
    assert str(frame[store.STARTED].dt.tz) == "UTC"
    assert set(frame[store.HOST]) == {"ci"} and set(frame[store.MLONMCU_VERSION]) == {"0.9.0"}
    assert set(frame[store.GIT_COMMIT]) == {"abc123"}
    assert json.loads(frame[store.COMPONENTS].iloc[0]) == meta.components


def test_recording_a_session_again_replaces_it(opened: ResultsStore):
    opened.record_session(sample_record(label="first"), sample_rows(runs=3))
    opened.record_session(sample_record(label="second", status="interrupted"), sample_rows(runs=2))

    sessions = opened.sessions()
    assert len(sessions) == 1
    assert sessions[["label", "status", "runs", "failed"]].iloc[0].tolist() == ["second", "interrupted", 2, 0]
    assert opened.runs()[col.RUN].tolist() == [0, 1]


def test_a_failure_half_way_leaves_the_store_as_it_was(opened: ResultsStore, monkeypatch: pytest.MonkeyPatch):
    before = sample_record(label="before")
    opened.record_session(before, sample_rows(runs=3))
    stored = opened.runs()

    converted: list[int] = []
    real = store._run_values

    def counting(session_id: int, row: dict[str, Any], profiles: Any) -> dict[str, Any]:
        converted.append(row[col.RUN])
        return real(session_id, row, profiles)

    monkeypatch.setattr(store, "_run_values", counting)
    monkeypatch.setattr(store, "INSERT_BATCH", 1)  # one INSERT per row: two are done when the third fails
    bad = sample_rows(runs=4)
    bad[2]["Custom Note"] = object()  # cannot be stored
    with pytest.raises(MlonmcuError, match=r"run 2, column 'Custom Note': a value of type object"):
        opened.record_session(sample_record(label="after"), bad)
    assert converted == [0, 1, 2]  # the session row was upserted, old runs deleted, two new ones inserted

    pd.testing.assert_frame_equal(opened.runs(), stored)
    assert opened.sessions()["label"].tolist() == ["before"]

    with pytest.raises(MlonmcuError):  # a session the store did not know: not even its row stays
        opened.record_session(sample_record(2), bad)
    assert opened.sessions()["uid"].tolist() == [before.uid]


def test_sessions_one_row_each_oldest_first_filtered(opened: ResultsStore):
    # recorded out of order: the list is ordered by start, not by insertion
    opened.record_session(sample_record(3, sweep="weekly", label="rc1"), sample_rows(3, runs=1))
    opened.record_session(sample_record(1, finished=None, status="interrupted"), sample_rows(1))
    opened.record_session(sample_record(2, label="rc1"), [])

    sessions = opened.sessions()
    assert list(sessions.columns) == list(store.SESSION_COLUMNS)
    assert sessions["session"].tolist() == [1, 2, 3]
    assert sessions["runs"].tolist() == [3, 0, 1] and sessions["failed"].tolist() == [1, 0, 0]
    assert pd.isna(sessions["finished"].iloc[0])
    assert sessions["started"].iloc[2] == pd.Timestamp(T0 + timedelta(hours=3))
    assert opened.sessions(sweep="weekly")["session"].tolist() == [3]
    assert opened.sessions(label="rc1")["session"].tolist() == [2, 3]
    assert opened.sessions(label="rc1", sweep="nightly")["session"].tolist() == [2]
    assert opened.sessions(status="interrupted")["session"].tolist() == [1]
    assert opened.sessions(status="failed").empty


def test_runs_filtered_and_ordered_by_start_then_run(opened: ResultsStore):
    for session in (3, 1, 2):
        opened.record_session(
            sample_record(session, label="rc" if session == 2 else "", sweep="weekly" if session == 3 else "nightly"),
            list(reversed(sample_rows(session, runs=2))),
        )
    frame = opened.runs()
    assert list(zip(frame[col.SESSION], frame[col.RUN], strict=True)) == [(s, r) for s in (1, 2, 3) for r in (0, 1)]
    assert opened.runs(session_uids=["ci:/srv/home:2"])[col.SESSION].tolist() == [2, 2]
    assert opened.runs(session_uids=[]).empty
    assert set(opened.runs(since=T0 + timedelta(hours=2))[col.SESSION]) == {2, 3}  # `since` includes its instant
    assert set(opened.runs(sweep="weekly")[col.SESSION]) == {3}
    assert set(opened.runs(label="rc")[col.SESSION]) == {2}
    with pytest.raises(ConfigError, match="no timezone"):
        opened.runs(since=datetime(2026, 1, 1))


def test_an_empty_store_has_the_columns(opened: ResultsStore):
    frame = opened.runs()
    assert frame.empty and {col.MODEL, col.FAILING, IDENTITY, store.STARTED} <= set(frame.columns)
    assert list(opened.sessions().columns) == list(store.SESSION_COLUMNS)


def test_times_are_utc_whatever_zone_they_were_given_in(opened: ResultsStore):
    berlin = timezone(timedelta(hours=2))
    started = datetime(2026, 6, 1, 23, 30, 15, 123456, tzinfo=berlin)  # 21:30:15 UTC
    opened.record_session(sample_record(started=started, finished=started + timedelta(seconds=1)), sample_rows())
    got = opened.sessions()["started"].iloc[0].to_pydatetime()
    assert got == started and got.utcoffset() == timedelta(0)
    assert got.isoformat() == "2026-06-01T21:30:15.123456+00:00"
    assert len(opened.runs(since=started)) == 3
    assert opened.runs(since=started + timedelta(microseconds=1)).empty


def test_profiles_by_run_replaced_with_the_session(opened: ResultsStore):
    table = [
        {"Index": 0, "Kernel": "conv", "Cycles": 900, "Instructions/MAC": 1.5},
        {"Index": 1, "Kernel": "dense", "Cycles": 100, "Instructions/MAC": None},
    ]
    meta = sample_record()
    opened.record_session(meta, sample_rows(), {0: table})
    profiles = opened.profiles(meta.uid)
    assert list(profiles) == [0]
    assert profiles[0]["Kernel"].tolist() == ["conv", "dense"]
    assert profiles[0]["Cycles"].dtype == "int64" and math.isnan(profiles[0]["Instructions/MAC"].iloc[1])

    opened.record_session(meta, sample_rows())
    assert opened.profiles(meta.uid) == {}
    with pytest.raises(ConfigError, match="no session 'ci:/srv/home:9'"):
        opened.profiles("ci:/srv/home:9")


def test_runs_of_a_deleted_session_go_with_it(results_db: str):  # noqa: F811
    with ResultsStore.open(results_db) as opened:
        opened.record_session(sample_record(1), sample_rows(1))
        opened.record_session(sample_record(2), sample_rows(2))
        with opened._use(write=True) as conn:
            conn.execute(schema.LATEST_TABLES.sessions.delete().where(schema.LATEST_TABLES.sessions.c.session == 1))
        assert set(opened.runs()[col.SESSION]) == {2}


# -- schema versions ------------------------------------------------------------------------------


def _build_version_1(url: str) -> None:
    """A store as the first mlonmcu with a results store left it, holding one session."""
    v1 = schema.build(1)
    with _raw(url) as conn:
        migrations.migrate(conn, 0, 1)
        session_id = conn.execute(
            v1.sessions.insert()
            .values(uid="old:/h:7", session=7, status="done", started=T0, components='{"tvm": "0.20"}')
            .returning(v1.sessions.c.id)
        ).scalar_one()
        conn.execute(
            v1.runs.insert().values(
                session_id=session_id,
                run=0,
                identity="[]",
                identity_hash="0" * 16,
                row=json.dumps({col.SESSION: 7, col.RUN: 0, col.MODEL: "aww", col.RUN_CYCLES: 12}),
            )
        )


def test_an_older_store_is_migrated_and_keeps_its_data(results_db: str):  # noqa: F811
    _build_version_1(results_db)
    assert _version(results_db) == [1]
    assert "profile" not in {c[0] for c in _shape(results_db)["runs"]["columns"]}

    with ResultsStore.open(results_db) as opened:
        assert opened.sessions()[["uid", "session", "runs"]].values.tolist() == [["old:/h:7", 7, 1]]
        frame = opened.runs()
        assert frame[[col.MODEL, col.RUN_CYCLES]].values.tolist() == [["aww", 12]]
        opened.record_session(sample_record(), sample_rows(), {1: [{"Kernel": "conv", "Cycles": 5}]})
        assert list(opened.profiles(sample_record().uid)) == [1]
    assert _version(results_db) == [migrations.SCHEMA_VERSION]


def test_migrating_reaches_the_schema_a_new_store_gets(results_db: str, other_db: str):  # noqa: F811
    _build_version_1(results_db)
    ResultsStore.open(results_db).close()
    ResultsStore.open(other_db).close()
    migrated = _shape(results_db)
    assert migrated == _shape(other_db)
    assert ("profile", "TEXT", True) in migrated["runs"]["columns"]
    assert ("ix_runs_identity_hash", ("identity_hash",)) in migrated["runs"]["indexes"]
    assert migrated["runs"]["foreign"] == [("sessions", "CASCADE")]


def test_a_newer_store_is_refused(results_db: str):  # noqa: F811
    ResultsStore.open(results_db).close()
    with _raw(results_db) as conn:
        conn.execute(sa.text("UPDATE mlonmcu_schema SET version = :v"), {"v": migrations.SCHEMA_VERSION + 1})
    with pytest.raises(ConfigError) as refused:
        ResultsStore.open(results_db)
    message = str(refused.value)
    assert f"schema version {migrations.SCHEMA_VERSION + 1}" in message and "upgrade mlonmcu" in message
    assert PASSWORD not in message
    assert _version(results_db) == [migrations.SCHEMA_VERSION + 1]  # untouched


def test_opening_again_changes_nothing(results_db: str):  # noqa: F811
    with ResultsStore.open(results_db) as opened:
        opened.record_session(sample_record(), sample_rows())
    with ResultsStore.open(results_db) as opened:
        assert len(opened.runs()) == 3
    assert _version(results_db) == [migrations.SCHEMA_VERSION]


def test_machines_opening_a_new_store_at_once_create_it_once(results_db: str):  # noqa: F811
    """The first night of a team's server: every machine finds it empty and creates the schema."""
    start = threading.Barrier(4)
    errors: list[BaseException] = []

    def open_it() -> None:
        start.wait()
        try:
            ResultsStore.open(results_db).close()
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=open_it) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert _version(results_db) == [migrations.SCHEMA_VERSION]


def test_a_database_with_someone_elses_sessions_table_is_refused(results_db: str):  # noqa: F811
    with _raw(results_db) as conn:
        conn.execute(sa.text("CREATE TABLE sessions (name TEXT)"))
    with pytest.raises(ConfigError, match="has a table 'sessions' but is not an mlonmcu results store"):
        ResultsStore.open(results_db)


# -- PostgreSQL only: logins --------------------------------------------------------------------


@pytest.mark.integration
def test_a_wrong_password_is_a_config_error_without_the_password(pg_cluster):  # noqa: F811
    url = pg_cluster.url("postgres", password="not-the-" + PASSWORD)
    with pytest.raises(ConfigError) as refused:
        ResultsStore.open(url)
    message = str(refused.value)
    assert "password authentication failed" in message
    assert f"127.0.0.1:{pg_cluster.port}" in message and "--db" in message
    assert PASSWORD not in message


@pytest.mark.integration
def test_a_missing_database_is_a_config_error(pg_cluster):  # noqa: F811
    with pytest.raises(ConfigError, match='database "no_such_db" does not exist'):
        ResultsStore.open(pg_cluster.url("no_such_db"))


@pytest.mark.integration
def test_a_user_who_may_not_create_tables_is_told_so(pg_cluster):  # noqa: F811
    name = pg_cluster.create_database(owner="postgres")  # PostgreSQL 15: others may not create in `public`
    try:
        with pytest.raises(ConfigError) as refused:
            ResultsStore.open(pg_cluster.url(name))
        message = str(refused.value)
        assert "cannot prepare the results store" in message and "permission denied" in message
        assert "right to create tables" in message and PASSWORD not in message
    finally:
        pg_cluster.drop_database(name)


@pytest.mark.integration
def test_a_plain_postgresql_url_uses_psycopg_3(pg_cluster):  # noqa: F811
    name = pg_cluster.create_database()
    try:
        url = pg_cluster.url(name).replace("postgresql+psycopg://", "postgresql://")
        with ResultsStore.open(url) as opened:
            opened.record_session(sample_record(), sample_rows())
            assert len(opened.runs()) == 3
    finally:
        pg_cluster.drop_database(name)


def test_concurrent_sessions_keep_to_their_own_rows(results_db: str):  # noqa: F811
    """Two stores (two machines) writing different sessions and one re-recording: no row lost or mixed."""
    with ResultsStore.open(results_db) as one, ResultsStore.open(results_db) as two:
        one.record_session(sample_record(1, host="a", uid="a:/h:1"), sample_rows(1))
        two.record_session(sample_record(1, host="b", uid="b:/h:1"), sample_rows(1, runs=2))
        one.record_session(sample_record(1, host="a", uid="a:/h:1"), sample_rows(1, runs=1))
        frame = two.runs()
    assert sorted(frame.groupby(store.SESSION_UID).size().items()) == [("a:/h:1", 1), ("b:/h:1", 2)]
