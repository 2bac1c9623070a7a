"""A session's recording into the results store, done by a helper process beside the session.

Loading SQLAlchemy and the store's modules and opening the store take longer than a whole sweep
restored from the cache (0.7 s of a 2.5 s unchanged rerun measured here). The recorder does
that on the machine's other core while the session loads and plans, then records the finished
session in one transaction (what `mlonmcu results import` would record), so the orchestrator
never loads SQLAlchemy unless it reads the store itself (`compare:`).

The two speak JSON lines over the recorder's stdin/stdout: the orchestrator sends the store
(`--db` or HOME's default; never on a command line, where `ps` would show its password), the
recorder answers once it is open or with the error that stops the command before a session is
created, then takes one finished session at a time, read by the orchestrator. The recorder lives
in its own process group (a Ctrl-C stops the session, not the recording of its partial report)
and ends when its stdin closes, so it never outlives the orchestrator.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO, Any

from mlonmcu import errors
from mlonmcu.errors import MlonmcuError
from mlonmcu.report import columns as col
from mlonmcu.results.records import SessionRecord, plain_row

_started: Recorder | None = None  # started ahead by the CLI (prestart), taken by the session


class Recorder:
    """The orchestrator's end: start it early, `open` the store, `wait_open`, `record` sessions."""

    def __init__(self) -> None:
        self._log: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - its stderr, read if it dies; closed by close()
        self._process = subprocess.Popen(
            [sys.executable, "-m", "mlonmcu.results.recorder"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            start_new_session=True,
            text=True,
        )
        self.url = ""  # the store's URL without password, once open
        self._opening = False

    @classmethod
    def take(cls) -> Recorder:
        """The recorder started ahead of this session, or a new one."""
        global _started
        recorder, _started = _started, None
        if recorder is not None and recorder._process.poll() is None:
            return recorder
        if recorder is not None:  # it died before it was needed (its error would be about nothing)
            recorder.close()
        return cls()

    def open(self, db: str | None, home: Path) -> None:
        """Ask it to open the store `db` names (None: HOME's SQLite file); answered by `wait_open`."""
        self._send({"db": db, "home": str(home)})
        self._opening = True

    def wait_open(self) -> str:
        """The store's redacted URL once it is open; the store's own error (a ConfigError) if not."""
        if self._opening:
            self._opening = False
            self.url = str(self._answer()["open"])
        return self.url

    def record(self, session_dir: Path) -> None:
        """The session into the store, in one transaction; MlonmcuError naming the cause if not.

        Read here (this process has pandas loaded), written there (it has SQLAlchemy loaded)."""
        from mlonmcu.results.transfer import read_session

        meta, rows, profiles = read_session(session_dir)
        self.wait_open()
        self._send(
            {
                "record": meta.to_json(),
                "rows": [plain_row(r, f"run {r.get(col.RUN)}") for r in rows],
                "profiles": {str(k): [plain_row(r, f"profile of run {k}") for r in v] for k, v in profiles.items()},
            }
        )
        self._answer()

    def close(self) -> None:
        """Let it go: with its stdin closed it ends by itself once its answers are given (every
        `record` has had its answer, so nothing is lost); waiting would cost its interpreter's exit."""
        if self._process.stdin is not None and not self._process.stdin.closed:
            with contextlib.suppress(OSError):
                self._process.stdin.close()
        self._log.close()

    def _send(self, message: dict[str, Any]) -> None:
        assert self._process.stdin is not None
        try:
            self._process.stdin.write(json.dumps(message) + "\n")
            self._process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._died() from None

    def _answer(self) -> dict[str, Any]:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            raise self._died()
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:  # raised here as the class it had there (ConfigError: a usage error)
            kind = getattr(errors, str(answer.get("type")), None)
            if not (isinstance(kind, type) and issubclass(kind, MlonmcuError)):
                kind = MlonmcuError
            raise kind(answer["error"])
        return answer

    def _died(self) -> MlonmcuError:
        self._process.wait()
        self._log.seek(0)
        lines = self._log.read().decode(errors="replace").strip().splitlines()
        last = f": {lines[-1]}" if lines else ""
        return MlonmcuError(
            f"the results recorder (pid {self._process.pid}) ended with exit code {self._process.returncode}{last}"
        )


def prestart() -> None:
    """Start the recorder now, so it loads while this process does (CLI commands that run sessions)."""
    global _started
    if _started is None:
        _started = Recorder()


def serve(requests: IO[str], answers: IO[str]) -> None:
    """The recorder's end: load the store's modules at once, then answer requests until EOF."""
    from mlonmcu.results.store import ResultsStore, redact, store_url

    store: ResultsStore | None = None

    def reply(message: dict[str, Any]) -> None:
        answers.write(json.dumps(message) + "\n")
        answers.flush()

    try:
        for line in requests:
            request = json.loads(line)
            try:
                if "db" in request:
                    url = store_url(request["db"], Path(request["home"]))
                    store = ResultsStore.open(url)
                    reply({"open": redact(url)})
                else:
                    if store is None:
                        raise MlonmcuError("the results recorder was asked to record before opening a store")
                    meta = SessionRecord.from_json(request["record"])
                    profiles = {int(k): v for k, v in request["profiles"].items()}
                    store.record_session(meta, request["rows"], profiles)
                    reply({"recorded": meta.uid})
            except (MlonmcuError, OSError) as err:
                reply({"error": str(err), "type": type(err).__name__})
    finally:
        if store is not None:
            store.close()


if __name__ == "__main__":
    serve(sys.stdin, sys.stdout)
