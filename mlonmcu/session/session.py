"""Session: the runs launched together, their directory and their report.

A session holds a lock on its directory while it runs, so whether it is still running is a
fact the file system knows (a killed session shows as `crashed`, see sessions.py). Its report is
rewritten atomically after every finished run, so no finished run is lost whatever ends the
session; an interrupted session stops its runs, records the unfinished ones as `interrupted`
and writes the report before it ends.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import shutil
import signal
import socket
import time
from collections.abc import Callable
from concurrent.futures import BrokenExecutor, CancelledError, Executor, Future, wait
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from mlonmcu import yamlio
from mlonmcu.atomic import write_text
from mlonmcu.entry import Entry
from mlonmcu.environment import Environment
from mlonmcu.errors import ConfigError, Interrupted, MlonmcuError
from mlonmcu.logs import SESSION_LOG, session_log
from mlonmcu.report import columns as col
from mlonmcu.report.report import ordered_rows, truthy, write_csv
from mlonmcu.session import interrupt
from mlonmcu.session.executor import InlineExecutor
from mlonmcu.session.remote import submit as submit_run
from mlonmcu.session.run import INTERRUPTED, RUNNING_FILE, WORKER_LOST, RunOutcome, execute_run, failed_row
from mlonmcu.session.spec import RunSpec
from mlonmcu.session.stages import cached_stages, stages_of

SESSION_FILE = "session.yml"
REPORT_FILE = "report.csv"
LOCK_NAME = "lock"  # Entry(sessions/<id>/lock) → sessions/<id>/.lock
NEXT_ID_FILE = ".next-id"
STOP_GRACE = 15.0  # seconds running runs get to stop their simulators and write what they have
RETRIES_AFTER_LOST_WORKER = 1  # a run whose worker process died runs once more (a crash twice is the run's)

logger = logging.getLogger("mlonmcu.session")


def lock_entry(directory: Path) -> Entry:
    return Entry(directory / LOCK_NAME, f"session {directory.name}")


def read_meta(directory: Path) -> dict[str, Any]:
    path = directory / SESSION_FILE
    try:
        data = yamlio.load(path.read_text()) if path.is_file() else {}
    except (OSError, yaml.YAMLError):
        return {"status": "unreadable"}
    return data if isinstance(data, dict) else {"status": "unreadable"}


class Session:
    def __init__(self, env: Environment, session_id: int, directory: Path, label: str = ""):
        self.env = env
        self.id = session_id
        self.dir = directory
        self.label = label
        self.interrupted_by: int | None = None  # the signal that stopped it
        self.report_error = ""  # the last failure to write the report (a full disk)
        self._stack = ExitStack()

    @classmethod
    def create(cls, env: Environment, label: str = "") -> Session:
        """Allocate the next session id: from a counter under a lock, so ids are never reused
        (not after a cleanup, not by two sessions starting at once)."""
        env.sessions_dir.mkdir(parents=True, exist_ok=True)
        with Entry(env.sessions_dir / "ids", "session ids").locked():
            counter = env.sessions_dir / NEXT_ID_FILE
            existing = [int(p.name) for p in env.sessions_dir.iterdir() if p.name.isdigit()]
            try:
                stored = int(counter.read_text().strip())
            except (OSError, ValueError):
                stored = 0
            session_id = max([stored, *(i + 1 for i in existing)])
            directory = env.sessions_dir / str(session_id)
            directory.mkdir()
            write_text(counter, f"{session_id + 1}\n")
        session = cls(env, session_id, directory, label)
        session._stack.enter_context(lock_entry(directory).locked())
        latest = env.sessions_dir / "latest"
        tmp = env.sessions_dir / f".latest-{session_id}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(directory.name)
        os.replace(tmp, latest)
        return session

    @classmethod
    def reopen(cls, env: Environment, directory: Path) -> Session:
        """An existing session, to finish it (resume): it must not be running anywhere."""
        session = cls(env, int(directory.name), directory, str(read_meta(directory).get("label") or ""))
        lock = session._stack.enter_context(lock_entry(directory).locked(wait=False))
        if not lock:
            session.close()
            raise ConfigError(f"session {directory.name} is still running: wait for it, or stop it first")
        return session

    def close(self) -> None:
        """Release the session's lock (it is done, or discarded)."""
        self._stack.close()

    def discard(self) -> None:
        self.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        latest = self.env.sessions_dir / "latest"
        if latest.is_symlink() and not latest.exists():
            latest.unlink()

    @property
    def report_path(self) -> Path:
        return self.dir / REPORT_FILE

    @property
    def log_path(self) -> Path:
        return self.dir / SESSION_LOG

    def _write_meta(self, **values: Any) -> None:
        data = read_meta(self.dir)
        data.update(values)
        try:
            write_text(self.dir / SESSION_FILE, yamlio.dump(data, sort_keys=False))
        except MlonmcuError as err:  # a full disk: the old file stays; `sessions` tells the truth
            logger.error("%s", err)

    def _write_report(self, rows: list[dict[str, Any]]) -> None:
        try:
            write_csv(rows, self.report_path)
            self.report_error = ""
        except MlonmcuError as err:
            if str(err) != self.report_error:
                logger.error("%s", err)
            self.report_error = str(err)

    def execute(
        self,
        specs: list[RunSpec],
        executor_factory: Callable[[], Executor],
        on_done: Callable[[RunOutcome], None] | None = None,
        command: str = "",
        kept: dict[int, dict[str, Any]] | None = None,
        **meta: Any,
    ) -> list[dict[str, Any]]:
        """Run all specs; returns the report's rows, in run order. An interrupt sets `interrupted_by` (and the
        unfinished runs' rows say `interrupted`) instead of losing what finished.

        `kept`: rows of runs that finished earlier (a resumed session) — reported, not rerun.
        """
        now = datetime.now(UTC).isoformat(timespec="milliseconds")
        previous = read_meta(self.dir)
        started = {"started": now} if kept is None else {"resumed": [*previous.get("resumed", []), now]}
        self._write_meta(
            id=self.id,
            label=self.label,
            **({"command": command} if kept is None else {}),
            home=str(self.env.home),
            host=socket.gethostname(),
            pid=os.getpid(),
            **started,
            runs=len(specs) + len(kept or {}),
            status="running",
            **meta,
        )
        rows: dict[int, dict[str, Any]] = dict(kept or {})

        def finished(outcome: RunOutcome) -> None:
            if self.label:
                outcome.row[col.LABEL] = self.label
            rows[outcome.row[col.RUN]] = outcome.row
            self._write_report(list(rows.values()))
            if on_done:
                on_done(outcome)

        status = "done"
        with interrupt.handling(), session_log(self.log_path):
            runner = _Runner(specs, executor_factory, finished)
            try:
                runner.run()
            except Interrupted as stop:
                status = "interrupted"
                self.interrupted_by = stop.signum
                logger.warning("interrupted (signal %d): stopping the runs", stop.signum)
                runner.stop()
            except BaseException:  # a bug or a lost cluster: stop what runs, keep what finished
                status = "failed"
                runner.stop()
                raise
            finally:
                for spec in specs:  # the runs that did not report back
                    if spec.run not in rows:
                        reason = INTERRUPTED if status == "interrupted" else f"{WORKER_LOST}: no result came back"
                        rows[spec.run] = failed_row(spec, reason)
                        if self.label:
                            rows[spec.run][col.LABEL] = self.label
                self._write_report(list(rows.values()))
                report = ordered_rows(list(rows.values()))
                failed = sum(1 for r in report if truthy(r.get(col.FAILING)))
                self._write_meta(
                    finished=datetime.now(UTC).isoformat(timespec="seconds"),
                    status=status,
                    completed=sum(1 for r in rows.values() if r[col.REASON] != INTERRUPTED),
                    failed=failed,
                    **({"signal": self.interrupted_by} if self.interrupted_by else {}),
                )
                self.close()
        return report


class _Runner:
    """Hands the specs to an executor and the outcomes back as they finish. A process pool whose
    worker died is replaced: the run that worker had runs once more, the rest run elsewhere."""

    def __init__(
        self, specs: list[RunSpec], factory: Callable[[], Executor], finished: Callable[[RunOutcome], None]
    ) -> None:
        self.pending = {s.run: s for s in specs}
        self.factory = factory
        self.finished = finished
        self.executor: Executor | None = None
        self.futures: dict[Future[RunOutcome], RunSpec] = {}
        self.lost: dict[int, int] = {}  # run → how often its worker died under it

    def _done(self, spec: RunSpec, outcome: RunOutcome) -> None:
        self.pending.pop(spec.run, None)
        self.finished(outcome)

    def run(self) -> None:
        restarts = 0
        while self.pending:
            self.executor = self.factory()
            try:
                self._submit_all()
            except BrokenExecutor:  # the process pool (BrokenProcessPool); its module loads only with it
                # wait until the broken pool has ended all its workers: the innocent ones remove
                # their run's marker on the way out (SIGTERM), the dead one's marker stays
                self.executor.shutdown(wait=True, cancel_futures=True)
                restarts += 1
                self._recover_from_dead_worker(give_up=restarts > len(self.pending) + 1)
                continue
            self.executor.shutdown(wait=True)
            return

    def _submit_all(self) -> None:
        assert self.executor is not None
        specs = list(self.pending.values())
        if isinstance(self.executor, InlineExecutor):
            self._inline(specs)
            return
        from concurrent.futures import ProcessPoolExecutor  # loads multiprocessing: only here, for a pool

        if isinstance(self.executor, ProcessPoolExecutor):
            # a run restored from the cache takes milliseconds here, a worker seconds to start
            self._inline([s for s in specs if _fully_cached(s)])
            specs = list(self.pending.values())
            if not specs:
                return
        self.futures = {submit_run(self.executor, spec): spec for spec in interleaved(specs)}
        waiting = set(self.futures)
        while waiting:
            done, waiting = wait(waiting, return_when="FIRST_COMPLETED")
            for future in done:
                self._collect(future)

    def _inline(self, specs: list[RunSpec]) -> None:
        """One at a time, in this process: progress and report advance after each."""
        for spec in specs:
            self._done(spec, execute_run(spec))
            if interrupt.stopping() is not None:
                raise Interrupted(interrupt.stopping() or signal.SIGINT)

    def _collect(self, future: Future[RunOutcome]) -> None:
        spec = self.futures[future]
        if spec.run not in self.pending:
            return
        try:
            outcome = future.result()
        except (BrokenExecutor, Interrupted):
            raise
        except CancelledError:
            return
        except Exception as err:  # the worker itself failed (e.g. a lost Dask worker)
            outcome = RunOutcome(failed_row(spec, f"{WORKER_LOST}: {type(err).__name__}: {err}"), [])
        self._done(spec, outcome)

    def _recover_from_dead_worker(self, give_up: bool) -> None:
        """A run whose worker died (the pool is gone; its `.running` marker is left) runs once more
        in the new pool (the cache keeps that cheap: its finished stages are restored); a second
        death, or a pool that keeps breaking, makes it `worker lost`."""
        for spec in list(self.pending.values()):
            marker = spec.run_dir / RUNNING_FILE
            pid = _marker_pid(marker)
            if not (give_up or (pid is not None and not _alive(pid))):
                continue
            marker.unlink(missing_ok=True)
            self.lost[spec.run] = self.lost.get(spec.run, 0) + 1
            died = f"its worker process (pid {pid}) died" if pid else "its worker process died"
            if not give_up and self.lost[spec.run] <= RETRIES_AFTER_LOST_WORKER:
                logger.warning("run %d: %s; running it again", spec.run, died)
                continue
            times = f" ({self.lost[spec.run]} times)" if self.lost[spec.run] > 1 else ""
            reason = f"{WORKER_LOST}: {died}{times}"
            logger.warning("run %d: %s", spec.run, reason)
            self._done(spec, RunOutcome(failed_row(spec, reason), []))
        if self.pending:
            logger.warning("a worker process died: restarting the pool for %d run(s)", len(self.pending))

    def stop(self) -> None:
        """After an interrupt: nothing new starts, running runs stop their tools and report.

        Workers get STOP_SIGNAL and STOP_GRACE seconds to hand back their interrupted runs; then
        they are killed, and with them (parent-death signal) whatever they had started.
        """
        executor = self.executor
        if executor is None or isinstance(executor, InlineExecutor):
            return
        processes = list((getattr(executor, "_processes", None) or {}).values())
        try:
            for future in self.futures:
                future.cancel()
            for process in processes:
                if process.pid is not None:
                    _signal(process.pid, interrupt.STOP_SIGNAL)
            deadline = time.monotonic() + STOP_GRACE
            for future, spec in self.futures.items():
                if spec.run not in self.pending or future.cancelled():
                    continue
                self._collect_within(future, deadline)
        except (BrokenExecutor, TimeoutError) as err:
            logger.warning("not every run reported back after the interrupt: %s", type(err).__name__)
        finally:
            for process in processes:
                if process.pid is not None:
                    _signal(process.pid, signal.SIGKILL)
            executor.shutdown(wait=False, cancel_futures=True)

    def _collect_within(self, future: Future[RunOutcome], deadline: float) -> None:
        wait([future], timeout=max(0.0, deadline - time.monotonic()))
        if future.done():
            self._collect(future)
        else:
            raise TimeoutError


def _fully_cached(spec: RunSpec) -> bool:
    """Every stage up to `until` would be restored from the cache (peeked: nothing is copied)."""
    return len(cached_stages(spec)) == len(stages_of(spec))


def interleaved(specs: list[RunSpec]) -> list[RunSpec]:
    """Runs of one model and backend share their LOAD and BUILD entries: started side by side, all
    but one would wait for the entry's lock. Taking the groups in turns keeps every worker busy;
    the longest first, since a long group started last keeps one worker busy while the others
    have nothing left to do. How long is guessed from the model's operator count (compiling
    costs per kernel: vww's 31 operators take longer than toycar's 10 in a file of the same
    size), then its size."""
    groups: dict[tuple[str, str], list[RunSpec]] = {}
    for spec in specs:
        groups.setdefault((spec.model.path, spec.backend), []).append(spec)
    weights = {path: _weight(path) for path, _ in groups}
    ordered = sorted(groups.values(), key=lambda group: weights[group[0].model.path], reverse=True)
    rounds = itertools.zip_longest(*ordered)
    return [spec for turn in rounds for spec in turn if spec is not None]


def _weight(path: str) -> tuple[int, int]:
    """(operators, bytes) of a model file; (0, bytes) where it is no readable TFLite model."""
    try:
        size = os.path.getsize(path)
    except OSError:
        return 0, 0
    try:
        from mlonmcu.models.tflite_graph import read_graph

        return len(read_graph(Path(path)).operators), size
    except (MlonmcuError, OSError, ValueError):  # only the order depends on it: LOAD reports a bad model
        return 0, size


def _marker_pid(marker: Path) -> int | None:
    try:
        return int(marker.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _alive(pid: int) -> bool:
    """Running — a dead worker the pool has not reaped yet is a zombie, and dead."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)
