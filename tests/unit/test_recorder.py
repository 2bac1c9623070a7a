"""The recorder process records a session exactly as `results import` does, and its failures are the store's."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_results_store import _session_dir

from mlonmcu.errors import ConfigError, MlonmcuError
from mlonmcu.report.report import read
from mlonmcu.results import records, transfer
from mlonmcu.results.recorder import Recorder
from mlonmcu.results.store import ResultsStore
from mlonmcu.session.session import REPORT_FILE


def test_a_session_recorded_by_the_recorder_reads_back_as_an_imported_one(tmp_path: Path) -> None:
    directory = _session_dir(tmp_path / "home")
    recorder = Recorder()
    try:
        recorder.open(None, tmp_path / "home")  # the HOME's own results.db
        assert recorder.wait_open() == f"sqlite:///{tmp_path / 'home' / 'results.db'}"
        recorder.record(directory)
        recorder.record(directory)  # again: replaced, not duplicated
    finally:
        recorder.close()
    with ResultsStore.open(f"sqlite:///{tmp_path / 'home' / 'results.db'}") as recorded:
        by_recorder = recorded.runs()
        sessions = recorded.sessions()
        profile = recorded.profiles(sessions["uid"][0])
    with ResultsStore.open(f"sqlite:///{tmp_path / 'imported.db'}") as imported:
        meta = transfer.import_report(imported, directory)
        by_import = imported.runs()
    assert sessions["uid"].tolist() == [meta.uid] and sessions["runs"].tolist() == [3]
    pd.testing.assert_frame_equal(by_recorder, by_import)
    columns = list(read(directory / REPORT_FILE).columns)
    pd.testing.assert_frame_equal(by_recorder[columns], read(directory / REPORT_FILE))
    assert profile[0]["Cycles"].tolist() == [900]


def test_the_stores_own_error_reaches_the_session_before_any_run(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a database\n" * 100)
    recorder = Recorder()
    try:
        recorder.open(str(notes), tmp_path)
        with pytest.raises(ConfigError, match=r"notes.txt is not an SQLite database: give --db"):
            recorder.wait_open()
    finally:
        recorder.close()


def test_a_running_session_is_refused_by_the_reading_side(tmp_path: Path) -> None:
    directory = _session_dir(tmp_path / "home", status="running", host="elsewhere")
    recorder = Recorder()
    try:
        recorder.open(None, tmp_path)
        with pytest.raises(ConfigError, match="still running on elsewhere"):
            recorder.record(directory)
    finally:
        recorder.close()


def test_a_recorder_that_died_is_named_with_its_exit_code(tmp_path: Path) -> None:
    recorder = Recorder()
    recorder._process.kill()
    recorder._process.wait()
    try:
        with pytest.raises(MlonmcuError, match=r"the results recorder \(pid \d+\) ended with exit code -9"):
            recorder.open(None, tmp_path)
            recorder.wait_open()
    finally:
        recorder.close()


def test_report_values_become_json_of_their_kind() -> None:
    assert records.plain(np.int64(3), "x") == 3 and type(records.plain(np.int64(3), "x")) is int
    assert records.plain(np.bool_(True), "x") is True and records.plain(np.float32(0.5), "x") == 0.5
    assert records.plain(pd.NA, "x") is None and records.plain(math.nan, "x") is None
    assert records.plain(pd.NaT, "x") is None and records.plain(np.float64("nan"), "x") is None
    assert records.plain((1, np.int8(2)), "x") == [1, 2]
    with pytest.raises(MlonmcuError, match="run 3, column 'Blob': a value of type bytes"):
        records.plain_row({"Blob": b"\x00"}, "run 3")


def test_a_session_record_survives_json(tmp_path: Path) -> None:
    meta, _, _ = transfer.read_session(_session_dir(tmp_path / "home"))
    assert records.SessionRecord.from_json(meta.to_json()) == meta
