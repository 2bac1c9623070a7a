"""Ctrl-C, SIGTERM and SIGKILL of the orchestrator, and a worker killed mid-run, during a
`--parallel 2` sweep whose firmware hangs: no simulator survives, nothing finished is lost."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pandas as pd
import pytest
from faultlib import alive, kill_group, report, run_cli, simulators, start_cli, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.faults]

# runs 0 and 1 hang, runs 2 and 3 are real; the pool takes them in turns by model and backend
# (0, 2, 1, 3): run 2 finishes beside run 0, then both workers hang and run 3 waits
SWEEP = ("flow", "run", "kws_dscnn", "-b", "stuck", "-b", "tvmaot", "-t", "spike", "-t", "qemu_rv32")
SWEEP_OPTIONS = ("-f", "validate", "--parallel", "2")


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def hanging_simulators(home: Path) -> list[int]:
    """The simulators of runs 0 and 1 (the stuck ones), once both are running."""

    def hung() -> list[int]:
        found = [simulators(f"/runs/{run}/") for run in (0, 1)]
        mine = [p for pids in found for p in pids if p in simulators(str(home))]
        return mine if all(found) and len(mine) == 2 else []

    return wait_for(hung, 300, "the two stuck runs' simulators")


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGKILL, -9)])
def test_orchestrator_signal_leaves_nothing_running(fault_home, tmp_path, signum, code):
    out = tmp_path / "out.csv"
    proc = start_cli(*SWEEP, *SWEEP_OPTIONS, "-o", out, "-H", fault_home, log=tmp_path / "log")
    try:
        sims = hanging_simulators(fault_home)
        if signum == signal.SIGINT:
            os.killpg(proc.pid, signum)  # Ctrl-C reaches the terminal's whole process group
        else:
            os.kill(proc.pid, signum)  # a CI timeout or the OOM killer signals the orchestrator
        assert proc.wait(timeout=60) == code, (tmp_path / "log").read_text()
        wait_for(lambda: not any(alive(p) for p in sims), 20, "the simulators to die")
        assert not simulators(str(fault_home))
    finally:
        kill_group(proc)
    output = (tmp_path / "log").read_text()
    code_, sessions = run_cli("sessions", "-H", fault_home)
    if signum == signal.SIGKILL:
        assert "crashed" in sessions and "running" not in sessions, sessions
    else:
        assert f"interrupted by signal {signum}" in output and "Traceback" not in output
        assert "interrupted" in sessions and "running" not in sessions, sessions
        frame = report(fault_home)
        assert len(frame) == 4
        by_run = frame.set_index(["Backend", "Target"])
        finished = by_run.loc[("tvmaot", "spike")]  # ran first, beside a hung one (runs interleave)
        assert not finished["Failing"] and finished["Validation"] == "pass", finished["Reason"]
        rest = by_run.drop(index=("tvmaot", "spike"))
        assert rest["Failing"].all() and (rest["Reason"] == "interrupted").all(), rest["Reason"]
        hung = frame[frame.Backend == "stuck"]
        assert (hung["Total ROM"] > 0).all()  # what COMPILE produced before the interrupt is kept
        assert pd.read_csv(out)["Reason"].fillna("").tolist() == frame["Reason"].fillna("").tolist()  # -o too
    # nothing is left in a state that breaks the next session
    code_, output = run_cli(
        *SWEEP[:3], "-b", "tvmaot", "-t", "spike", "-t", "qemu_rv32", "-f", "validate", "-H", fault_home
    )
    assert code_ == 0, output
    assert (report(fault_home)["Validation"] == "pass").all()


def test_killed_worker_loses_only_its_own_run(fault_home, tmp_path):
    """The run whose worker was killed runs again in a new worker (here it times out there);
    the others are untouched, and nothing prints a traceback after the session ends."""
    timeouts = ("-c", "qemu_rv32.timeout=10", "-c", "spike.timeout=20")
    proc = start_cli(*SWEEP, *SWEEP_OPTIONS, *timeouts, "-H", fault_home, log=tmp_path / "log")
    try:
        hanging_simulators(fault_home)
        spike = next(p for p in simulators(str(fault_home)) if "spike" in Path(f"/proc/{p}/cmdline").read_text())
        worker = int(Path(f"/proc/{spike}/stat").read_text().rsplit(")", 1)[1].split()[1])  # its parent
        os.kill(worker, signal.SIGKILL)
        assert proc.wait(timeout=120) == 1, (tmp_path / "log").read_text()
        wait_for(lambda: not alive(spike), 20, "the orphaned simulator to die")
        wait_for(lambda: not group_alive(proc.pid), 20, "its helpers (the resource tracker) to exit")  # they write last
    finally:
        kill_group(proc)
    output = (tmp_path / "log").read_text()
    assert f"worker process (pid {worker}) died; running it again" in output, output
    assert "Traceback" not in output and "KeyError" not in output, output
    frame = report(fault_home).set_index(["Backend", "Target"])
    assert frame.loc[("stuck", "spike"), "Reason"].startswith("timeout")  # the second attempt's own end
    assert frame.loc[("stuck", "qemu_rv32"), "Reason"].startswith("timeout")  # ran again in a new worker
    good = frame.loc["tvmaot"]
    assert not good["Failing"].any() and (good["Validation"] == "pass").all()
    assert not simulators(str(fault_home))
