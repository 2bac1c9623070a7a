"""A sweep whose orchestrator is killed mid-run is finished by `sweep resume` in place: the
runs that finished are kept as they were, the rest run, the report and the store end complete."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from faultlib import kill_group, report, run_cli, simulators, start_cli, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.faults]

# run 0 is real (and quick once cached); run 1's firmware hangs until spike.timeout ends it
SWEEP = """\
name: crashy
models: [kws_dscnn]
backends: [tvmaot, stuck]
targets: [spike]
config:
  spike.timeout: 15
"""


def run_1_hangs(home: Path) -> list[int]:
    return [p for p in simulators("/runs/1/") if p in simulators(str(home))]


def test_resume_finishes_a_killed_sweep(fault_home, tmp_path):
    sweep = tmp_path / "crashy.yml"
    sweep.write_text(SWEEP)
    proc = start_cli("sweep", "run", sweep, "-H", fault_home, log=tmp_path / "log")
    try:
        wait_for(lambda: run_1_hangs(fault_home), 600, "run 1's simulator to hang (run 0 has finished by then)")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        kill_group(proc)
    before = report(fault_home)
    assert list(before["Run"]) == [0] and not before["Failing"].any()
    kept = fault_home / "sessions" / "latest" / "runs" / "0" / "run.yml"
    stamp = kept.stat().st_mtime_ns
    code, sessions = run_cli("sessions", "-H", fault_home)
    assert "crashed" in sessions, sessions

    code, output = run_cli("sweep", "resume", "latest", "-H", fault_home)
    assert code == 1, output  # run 1 ran to its timeout: a failed run, as it should be
    after = report(fault_home)
    assert list(after["Run"]) == [0, 1]
    assert not after.loc[0, "Failing"] and after.loc[1, "Failing"]
    assert "timeout" in str(after.loc[1, "Reason"]).lower(), after.loc[1, "Reason"]
    assert kept.stat().st_mtime_ns == stamp, "a finished run must be kept, not rerun"
    code, sessions = run_cli("sessions", "-H", fault_home)
    assert "crashed" not in sessions and "done" in sessions, sessions
    code, stored = run_cli("results", "list", "-H", fault_home)
    assert code == 0 and "crashy" in stored and " 2 " in stored, stored

    code, output = run_cli("sweep", "resume", "latest", "-H", fault_home)
    assert code == 1 and len(report(fault_home)) == 2, output  # nothing left to run: the same report
