"""The results store without a server: URLs and their errors, checks before writing, import, export.

The behaviour that must match on SQLite and PostgreSQL is tested on both in
tests/integration/test_results_postgres.py.
"""

from __future__ import annotations

import json
import math
import shutil
import socket
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from pg import T0, free_port, sample_record, sample_rows

from mlonmcu.errors import ConfigError, MlonmcuError
from mlonmcu.report import columns as col
from mlonmcu.report.report import export, read, to_frame
from mlonmcu.results import migrations, schema, store, transfer
from mlonmcu.results.store import ResultsStore, SessionRecord, redact, store_url
from mlonmcu.session.session import REPORT_FILE, SESSION_FILE, lock_entry


@pytest.fixture
def opened(tmp_path: Path):
    with ResultsStore.open(f"sqlite:///{tmp_path / 'results.db'}") as results:
        yield results


# -- URLs -----------------------------------------------------------------------------------------


def test_redact_removes_only_the_password():
    assert (
        redact("postgresql+psycopg://ci:s3cret@db.lab:5433/results")
        == "postgresql+psycopg://ci:***@db.lab:5433/results"
    )
    assert redact("sqlite:////srv/results.db") == "sqlite:////srv/results.db"
    assert redact("not a url://ci:s3cret@host") == "not a url://ci:***@host"


def test_store_url_is_the_home_file_unless_given(tmp_path: Path):
    assert store_url(None, tmp_path) == f"sqlite:///{tmp_path}/results.db"
    assert store_url("postgresql://ci@db/results", tmp_path) == "postgresql://ci@db/results"
    assert store_url("team.db", tmp_path) == f"sqlite:///{Path.cwd() / 'team.db'}"  # a bare path: an SQLite file


def test_a_file_that_is_no_database_is_refused_and_left_alone(tmp_path: Path):
    notes = tmp_path / "notes.txt"
    notes.write_text("these are my notes, not a database\n" * 100)
    with pytest.raises(ConfigError, match=r"notes.txt is not an SQLite database: give --db"):
        ResultsStore.open(f"sqlite:///{notes}")
    assert notes.read_text() == "these are my notes, not a database\n" * 100


def test_a_store_in_a_missing_directory_says_so(tmp_path: Path):
    with pytest.raises(ConfigError, match="check that the directory exists"):
        ResultsStore.open(f"sqlite:///{tmp_path / 'nowhere' / 'results.db'}")


def test_an_unreachable_server_fails_fast_naming_it_but_not_the_password():
    port = free_port()  # nothing listens there
    started = time.monotonic()
    with pytest.raises(ConfigError) as refused:
        ResultsStore.open(f"postgresql+psycopg://ci:hunter2-secret@127.0.0.1:{port}/results")
    assert time.monotonic() - started < store.CONNECT_TIMEOUT + 5
    message = str(refused.value)
    assert f"127.0.0.1:{port}" in message and "is running and accepts connections" in message
    assert "hunter2-secret" not in message and "ci:***@" in message
    assert refused.value.__cause__ is None and refused.value.__suppress_context__  # no traceback with the URL


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://ci:pw@db/results", "mlonmcu supports sqlite"),
        ("://nothing", "is not a database URL"),
    ],
)
def test_urls_the_store_cannot_use(url: str, message: str):
    with pytest.raises(ConfigError, match=message) as refused:
        ResultsStore.open(url)
    assert ":pw@" not in str(refused.value)


# -- schema ---------------------------------------------------------------------------------------


def test_every_schema_version_has_its_migration_step():
    assert migrations.SCHEMA_VERSION >= 2
    assert migrations.SCHEMA_VERSION == len(migrations.MIGRATIONS) == schema.LATEST == store.SCHEMA_VERSION
    assert "profile" not in schema.build(1).runs.c and "profile" in schema.build(schema.LATEST).runs.c
    with pytest.raises(ValueError, match="no schema version 3"):
        schema.build(schema.LATEST + 1)


# -- what record_session refuses before writing -----------------------------------------------------


@pytest.mark.parametrize(
    ("meta", "rows", "profiles", "message"),
    [
        (
            sample_record(started=datetime(2026, 1, 1)),
            sample_rows(),
            {},
            "session start 2026-01-01T00:00:00 has no timezone",
        ),
        (sample_record(status="running"), sample_rows(), {}, "status 'running' cannot be recorded"),
        (sample_record(uid=""), sample_rows(), {}, "needs a uid"),
        (sample_record(), [{col.MODEL: "aww"}], {}, "report row 0 has no run number"),
        (sample_record(), [*sample_rows(), sample_rows()[1]], {}, "run 1 is in the rows twice"),
        (sample_record(), sample_rows(), {7: [{"Kernel": "conv"}]}, r"profiles for runs without a report row: \[7\]"),
    ],
)
def test_records_the_store_refuses(opened: ResultsStore, meta: SessionRecord, rows, profiles, message: str):
    with pytest.raises(MlonmcuError, match=message):
        opened.record_session(meta, rows, profiles)
    assert opened.sessions().empty


def test_values_come_back_as_plain_python_of_their_kind(opened: ResultsStore):
    row: dict[str, Any] = {
        col.SESSION: 1,
        col.RUN: np.int32(0),
        col.MODEL: np.str_("aww"),
        col.RUN_CYCLES: np.uint64(2**40),
        col.MAX_ABS_ERROR: math.inf,
        col.VALIDATION: pd.NA,
        col.LABEL: None,
        "When": pd.Timestamp("2026-03-01T22:00:00+00:00"),
        "Missing Time": pd.NaT,
        "Shape": (1, 49, 10),
    }
    opened.record_session(sample_record(), [row])
    back = opened.runs().iloc[0]
    assert back[col.RUN] == 0 and back[col.MODEL] == "aww" and back[col.RUN_CYCLES] == 2**40
    assert back[col.MAX_ABS_ERROR] == math.inf
    assert all(math.isnan(back[c]) for c in (col.VALIDATION, col.LABEL, "Missing Time"))
    assert back["When"] == "2026-03-01T22:00:00+00:00" and back["Shape"] == [1, 49, 10]


# -- import ---------------------------------------------------------------------------------------


def _session_dir(home: Path, session: int = 4, status: str = "done", **meta: Any) -> Path:
    """A session directory as `mlonmcu flow run` leaves it (session.yml, report.csv, run.yml, profile)."""
    directory = home / "sessions" / str(session)
    data = {
        "id": session,
        "label": "",
        "command": "mlonmcu flow run aww -b tvmaot -t spike",
        "home": str(home),
        "host": "lab-pc",
        "pid": 1,
        "started": "2026-03-02T08:00:00+00:00",
        "runs": 3,
        "status": status,
        "finished": "2026-03-02T08:04:00+00:00",
        **meta,
    }
    directory.mkdir(parents=True)
    (directory / SESSION_FILE).write_text(yaml.safe_dump(data, sort_keys=False))
    export(to_frame(sample_rows(session)), directory / REPORT_FILE)
    for run in range(3):
        run_dir = directory / "runs" / str(run)
        (run_dir / "postprocess").mkdir(parents=True)
        run_file = {
            "session": session,
            "run": run,
            "components": {
                "tvm": {"name": "tvm", "version": "0.27.0", "location": "/x", "extras": {}},
                "spike": {"name": "spike", "version": "1.1.0", "location": "/y", "extras": {}},
            },
            "mlonmcu": "0.9.1",
        }
        (run_dir / "run.yml").write_text(yaml.safe_dump(run_file))
    pd.DataFrame([{"Index": 0, "Kernel": "conv", "Cycles": 900}]).to_csv(
        directory / "runs" / "0" / "postprocess" / "profile.csv", index=False
    )
    return directory


def test_import_a_session_directory(opened: ResultsStore, tmp_path: Path):
    directory = _session_dir(tmp_path / "home")
    meta = transfer.import_report(opened, directory)

    assert meta.uid == f"lab-pc:{tmp_path / 'home'}:4"
    assert (meta.session, meta.status, meta.host, meta.mlonmcu_version) == (4, "done", "lab-pc", "0.9.1")
    assert meta.command == "mlonmcu flow run aww -b tvmaot -t spike"
    assert meta.started == datetime(2026, 3, 2, 8, tzinfo=UTC) and meta.finished == meta.started + timedelta(minutes=4)
    assert meta.components == {"tvm": "0.27.0", "spike": "1.1.0"}
    frame = opened.runs()
    pd.testing.assert_frame_equal(frame[list(read(directory / REPORT_FILE).columns)], read(directory / REPORT_FILE))
    assert frame["Custom Note"].tolist() == ["=note 0", "=note 1", "=note 2"]  # the .csv escaping is undone
    assert opened.profiles(meta.uid)[0]["Cycles"].tolist() == [900]


def test_importing_again_replaces_the_session(opened: ResultsStore, tmp_path: Path):
    directory = _session_dir(tmp_path / "home")
    first = transfer.import_report(opened, directory)
    again = transfer.import_report(opened, directory / REPORT_FILE, label="rc1")  # its report: the same session
    assert again.uid == first.uid
    sessions = opened.sessions()
    assert sessions[["uid", "label", "runs"]].values.tolist() == [[first.uid, "rc1", 3]]


def test_a_crashed_session_is_imported_as_failed_a_running_one_refused(opened: ResultsStore, tmp_path: Path):
    here = socket.gethostname()
    crashed = _session_dir(tmp_path / "home", 5, status="running", host=here)
    assert transfer.import_report(opened, crashed).status == "failed"  # says running, but nobody holds its lock

    running = _session_dir(tmp_path / "home", 6, status="running", host=here)
    with lock_entry(running).locked(), pytest.raises(ConfigError, match="is still running: import it when"):
        transfer.import_report(opened, running)
    elsewhere = _session_dir(tmp_path / "home", 7, status="running")  # another host's: cannot tell, so wait
    with pytest.raises(ConfigError, match="is still running on lab-pc"):
        transfer.import_report(opened, elsewhere)
    assert opened.sessions()["session"].tolist() == [5]


def test_import_refuses_what_is_no_session_or_report(opened: ResultsStore, tmp_path: Path):
    with pytest.raises(ConfigError, match="is not a session directory"):
        transfer.import_report(opened, tmp_path)
    with pytest.raises(ConfigError, match="give a session directory"):
        transfer.import_report(opened, tmp_path / "missing.csv")
    other = tmp_path / "other.csv"
    pd.DataFrame([{"a": 1}]).to_csv(other, index=False)
    with pytest.raises(ConfigError, match=r"is not an mlonmcu report \(no 'Model' column\)"):
        transfer.import_report(opened, other)
    mixed = tmp_path / "mixed.csv"
    export(to_frame(sample_rows(1, runs=1) + sample_rows(2, runs=1)), mixed)
    with pytest.raises(ConfigError, match="holds sessions 1, 2: import one session's report at a time"):
        transfer.import_report(opened, mixed)
    assert opened.sessions().empty


def test_import_a_report_file(opened: ResultsStore, tmp_path: Path):
    path = tmp_path / "shared" / "report.csv"
    path.parent.mkdir()
    rows = sample_rows(3)
    for row in rows:
        row[col.LABEL] = "v1.2"
    export(to_frame(rows), path)
    meta = transfer.import_report(opened, path, host="laptop")
    assert meta.uid == f"laptop:{path.resolve()}:3" and meta.label == "v1.2" and meta.status == "done"
    transfer.import_report(opened, path, host="laptop")
    copy = tmp_path / "copy.csv"
    shutil.copy(path, copy)
    transfer.import_report(opened, copy, host="laptop")  # another file: another session
    assert opened.sessions()["runs"].tolist() == [3, 3]


# -- export ---------------------------------------------------------------------------------------


@pytest.fixture
def two_sessions(opened: ResultsStore) -> ResultsStore:
    opened.record_session(sample_record(1), sample_rows(1, runs=2))
    opened.record_session(sample_record(2), sample_rows(2, runs=3))
    return opened


@pytest.mark.parametrize(
    ("suffix", "load"),
    [
        (".csv", read),
        (".json", lambda p: pd.DataFrame(json.loads(p.read_text()))),
        (".parquet", pd.read_parquet),
    ],
)
def test_export_writes_every_run_since(two_sessions: ResultsStore, tmp_path: Path, suffix: str, load):
    out = tmp_path / f"runs{suffix}"
    assert transfer.export_runs(two_sessions, out) == 5
    back = load(out)
    assert back[col.RUN].tolist() == [0, 1, 0, 1, 2] and back["Custom Note"].iloc[0] == "=note 0"
    assert pd.to_datetime(back[store.STARTED], utc=True).iloc[0] == pd.Timestamp(T0 + timedelta(hours=1))
    assert transfer.export_runs(two_sessions, out, since=T0 + timedelta(hours=2)) == 3
    assert len(load(out)) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.db", f"runs{suffix}"]  # no temporary left


def test_parquet_takes_a_column_of_mixed_types(opened: ResultsStore, tmp_path: Path):
    rows = sample_rows(runs=2)
    rows[0]["Odd"], rows[1]["Odd"] = 1, "one"
    opened.record_session(sample_record(), rows)
    out = tmp_path / "runs.parquet"
    transfer.export_runs(opened, out)
    assert pd.read_parquet(out)["Odd"].tolist() == ["1", "one"]


def test_export_refuses_an_unknown_format(two_sessions: ResultsStore, tmp_path: Path):
    with pytest.raises(ConfigError, match=r"unknown format; use one of \.csv, \.json, \.parquet"):
        transfer.export_runs(two_sessions, tmp_path / "runs.xlsx")
    assert not (tmp_path / "runs.xlsx").exists()
