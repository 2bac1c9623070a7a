"""The dask executor against a real cluster: scheduler and workers as processes, each worker with
its own HOME, nothing shared with the client but the installed components; real TVM, real GCC."""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from dask_cluster import DaskCluster, host_home
from helpers import installed_deps_dir

from mlonmcu import api
from mlonmcu.errors import ConfigError
from mlonmcu.session.remote import WORKER_FILE
from mlonmcu.session.run import RunOutcome

pytestmark = pytest.mark.integration
pytest.importorskip("distributed")

MODELS = ["cnn_small", "kws_dscnn"]
OPTIMIZE = ["O2", "Os", "O3"]  # × 2 models: 6 runs
FLOW_TIMEOUT = 150.0


@pytest.fixture(scope="module")
def deps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from mlonmcu.environment import Environment
    from mlonmcu.setup import installer

    deps = installed_deps_dir()
    env = Environment.load(host_home(tmp_path_factory.mktemp("probe"), deps))
    _, missing = installer.check(env, installer.default_components(env))
    if missing:
        pytest.skip(f"components not installed ({', '.join(missing)}): run `mlonmcu setup` first")
    return deps


@pytest.fixture(scope="module")
def cluster(deps: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaskCluster]:
    """Shared by the tests that leave the scheduler up (a killed worker is restarted)."""
    started = DaskCluster(tmp_path_factory.mktemp("dask"), deps)
    try:
        yield started.start()
    finally:
        started.stop()


def sweep(home: Path, scheduler: str, **kwargs: Any) -> api.FlowResult:
    return api.flow(
        MODELS,
        home=home,
        backends=["tvmaot"],
        targets=["host_x86"],
        executor="dask",
        scheduler=scheduler,
        config={"mlif.optimize": OPTIMIZE},
        **kwargs,
    )


def in_thread(call: Any, timeout: float = FLOW_TIMEOUT) -> Any:
    """`call()` with a bound: a session that hangs fails the test instead of the whole run."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = call()
        except BaseException as err:
            box["error"] = err

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), f"the session did not end within {timeout:g} s"
    if "error" in box:
        raise box["error"]
    return box["result"]


def worker_of(run_dir: Path) -> dict[str, Any]:
    return yaml.safe_load((run_dir / WORKER_FILE).read_text())


def check_rows(frame: pd.DataFrame, runs: int) -> None:
    assert sorted(frame["Run"]) == list(range(runs)), frame[["Run", "Reason"]]
    assert not frame["Failing"].any(), frame[["Run", "Reason"]]


def test_runs_travel_to_workers_with_their_own_homes(cluster: DaskCluster, deps: Path, tmp_path: Path) -> None:
    cluster.ensure_workers()
    home = host_home(tmp_path / "client", deps)
    outcomes: list[RunOutcome] = []
    result = in_thread(lambda: sweep(home, cluster.address, on_done=outcomes.append))
    check_rows(result.report, 6)
    on_disk = pd.read_csv(result.session.report_path)
    check_rows(on_disk, 6)
    worker_homes = {str(w.home) for w in cluster.workers}
    used = set()
    for spec in result.specs:
        run_dir = spec.run_dir
        assert run_dir.is_relative_to(home / "sessions")
        run = yaml.safe_load((run_dir / "run.yml").read_text())
        assert run["failing"] is False
        assert (run_dir / "compile" / "firmware.elf").stat().st_size > 1000
        assert (run_dir / "logs" / "compile.log").is_file() and (run_dir / "run" / "output.txt").is_file()
        worker = worker_of(run_dir)
        assert worker["home"] in worker_homes
        assert run["model"]["path"].startswith(worker["home"])  # its own copy, not the client's file
        used.add(worker["home"])
    assert used == worker_homes, "all runs went to one worker"
    for outcome in outcomes:  # the manifest the worker returned names files that are here now
        run_dir = result.specs[outcome.row["Run"]].run_dir
        assert outcome.artifacts and all((run_dir / a["name"]).is_file() for a in outcome.artifacts)
    paths = dict(zip(result.report["Run"], result.report["Model Path"], strict=True))
    assert paths == {s.run: s.model.path for s in result.specs}  # the client's paths in the report
    assert not (home / "cache").exists() or not any((home / "cache").iterdir()), "the client's cache was used"
    for worker in cluster.workers:
        assert any((worker.home / "cache").rglob("result.json")), f"worker {worker.index} cached nothing"
        assert worker.runs_in_progress() == [], "a worker left a temporary run directory behind"
    log = result.session.log_path.read_text()
    assert "cache miss: compile" in log and "run 5: done" in log  # the workers' records


def test_a_killed_worker_s_runs_are_rerun_on_the_other(cluster: DaskCluster, deps: Path, tmp_path: Path) -> None:
    cluster.ensure_workers()
    victim, survivor = cluster.workers
    home = host_home(tmp_path / "client", deps)
    interrupted: list[Path] = []

    def kill_once(outcome: RunOutcome) -> None:
        if interrupted or not victim.alive:
            return
        deadline = time.monotonic() + 30
        while not victim.runs_in_progress() and time.monotonic() < deadline:
            time.sleep(0.05)
        interrupted.extend(victim.runs_in_progress())
        cluster.kill_worker(victim)  # SIGKILL, mid-run

    # no cache: every run computes, so the victim is busy when the first row comes back
    result = in_thread(lambda: sweep(home, cluster.address, use_cache=False, on_done=kill_once))
    assert not victim.alive and interrupted, "the worker was not killed mid-run"
    frame = result.report
    check_rows(frame, 6)
    assert frame["Run"].is_unique
    check_rows(pd.read_csv(result.session.report_path), 6)
    for leftover in interrupted:
        match = re.match(r"mlonmcu-run-s\d+-r(\d+)-", leftover.name)
        assert match, leftover
        run_dir = result.specs[int(match.group(1))].run_dir
        assert worker_of(run_dir)["home"] == str(survivor.home)  # Dask reran it on the survivor
        assert (run_dir / "compile" / "firmware.elf").is_file()


def test_an_unreachable_scheduler_is_a_usage_error(deps: Path, tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    home = host_home(tmp_path / "client", deps)
    start = time.monotonic()
    with pytest.raises(ConfigError, match=re.escape(address)) as err:
        in_thread(lambda: sweep(home, address), timeout=30)
    assert time.monotonic() - start < 15
    assert "dask scheduler" in str(err.value)


def test_a_lost_scheduler_ends_the_session_with_worker_lost_rows(deps: Path, tmp_path: Path) -> None:
    cluster = DaskCluster(tmp_path / "dask", deps, n_workers=1)
    try:
        cluster.start()
        home = host_home(tmp_path / "client", deps)
        done: list[int] = []

        def kill_scheduler(outcome: RunOutcome) -> None:
            done.append(outcome.row["Run"])
            if len(done) == 1:
                cluster.kill_scheduler()

        start = time.monotonic()
        result = in_thread(lambda: sweep(home, cluster.address, on_done=kill_scheduler), timeout=90)
        frame = result.report.set_index("Run")
        assert sorted(frame.index) == list(range(6))
        assert not frame.loc[done[0], "Failing"]
        lost = frame[frame["Failing"].astype(bool)]
        assert len(lost) >= 4, frame[["Failing", "Reason"]]  # one worker: at most one more run could finish
        assert lost["Reason"].str.startswith("worker lost").all(), lost["Reason"]
        assert lost["Reason"].str.contains("Dask scheduler").all(), lost["Reason"]
        assert time.monotonic() - start < 90
    finally:
        cluster.stop()
    # a new scheduler comes up: resume runs exactly the lost runs there, the finished ones stay
    replacement = DaskCluster(tmp_path / "dask2", deps, n_workers=1)
    try:
        replacement.start()
        resumed = in_thread(
            lambda: api.resume(result.session.id, home=home, executor="dask", scheduler=replacement.address),
            timeout=FLOW_TIMEOUT,
        )
    finally:
        replacement.stop()
    assert sorted(s.run for s in resumed.specs) == list(range(6))
    check_rows(resumed.report, 6)
    assert set(resumed.report["Run"]) == set(range(6))
