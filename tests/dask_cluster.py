"""A real Dask cluster for tests: a scheduler and workers as separate processes on this machine.

Each worker gets its own MLONMCU_HOME (own cache, own sessions, no files shared with the client
except the installed components) and its own TMPDIR (where its runs' temporary directories go),
so a test sees what a worker on another machine would leave behind. Every process runs in its
own process group and is killed with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from mlonmcu.environment import init_home

DASK = str(Path(sys.executable).with_name("dask"))
START_TIMEOUT = 60.0


def host_home(root: Path, deps: Path) -> Path:
    """A HOME from the host template using the already installed components (`deps`)."""
    init_home(root, "host")
    path = root / "environment.yml"
    data = yaml.safe_load(path.read_text())
    data["paths"]["deps"] = str(deps)
    path.write_text(yaml.safe_dump(data))
    return root


@dataclass
class Worker:
    index: int
    home: Path
    tmp: Path
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def runs_in_progress(self) -> list[Path]:
        """Temporary run directories of this worker (left behind by a run it did not finish)."""
        return sorted(self.tmp.glob("mlonmcu-run-*"))


@dataclass
class DaskCluster:
    root: Path
    deps: Path
    n_workers: int = 2
    scheduler_file: Path = field(init=False)
    scheduler: subprocess.Popen[bytes] | None = None
    workers: list[Worker] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.scheduler_file = self.root / "scheduler.json"

    @property
    def address(self) -> str:
        return str(json.loads(self.scheduler_file.read_text())["address"])

    def _spawn(self, args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
        with log.open("ab") as out:
            return subprocess.Popen(
                [DASK, *args], stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )

    def start(self) -> DaskCluster:
        env = {k: v for k, v in os.environ.items() if k != "MLONMCU_HOME"}
        self.scheduler = self._spawn(
            ["scheduler", "--scheduler-file", str(self.scheduler_file), "--port", "0", "--no-dashboard"],
            self.root / "scheduler.log",
            env,
        )
        deadline = time.monotonic() + START_TIMEOUT
        while not self.scheduler_file.is_file():
            if self.scheduler.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the Dask scheduler did not start: {(self.root / 'scheduler.log').read_text()}")
            time.sleep(0.1)
        for index in range(self.n_workers):
            base = self.root / f"worker{index}"
            worker = Worker(index, host_home(base / "home", self.deps), base / "tmp", base / "worker.log")
            worker.tmp.mkdir(parents=True, exist_ok=True)
            self.workers.append(worker)
            self.start_worker(worker)
        self.wait_for_workers(self.n_workers)
        return self

    def start_worker(self, worker: Worker) -> None:
        env = {k: v for k, v in os.environ.items() if k != "MLONMCU_MODELS"}
        env.update(MLONMCU_HOME=str(worker.home), TMPDIR=str(worker.tmp))
        args = ["worker", "--scheduler-file", str(self.scheduler_file), "--nworkers", "1", "--nthreads", "1"]
        args += ["--no-nanny", "--name", f"w{worker.index}", "--local-directory", str(worker.tmp / "dask")]
        args += ["--preload", "mlonmcu.session.remote"]
        worker.proc = self._spawn(args, worker.log, env)

    def ensure_workers(self) -> None:
        """Restart the workers a test killed, so the next test has the whole cluster."""
        for worker in self.workers:
            if not worker.alive:
                self.start_worker(worker)
        self.wait_for_workers(self.n_workers)

    def wait_for_workers(self, n: int) -> None:
        from distributed import Client

        with Client(scheduler_file=str(self.scheduler_file), timeout=START_TIMEOUT, set_as_default=False) as client:
            client.wait_for_workers(n, timeout=START_TIMEOUT)

    def kill_worker(self, worker: Worker) -> None:
        if worker.proc is not None:
            _kill_group(worker.proc)

    def kill_scheduler(self) -> None:
        if self.scheduler is not None:
            _kill_group(self.scheduler)

    def stop(self) -> None:
        for worker in self.workers:
            self.kill_worker(worker)
        self.kill_scheduler()


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)
