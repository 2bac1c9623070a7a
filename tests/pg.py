"""For tests of the results store: a throw-away PostgreSQL server, empty databases, sample sessions.

The server is Debian's PostgreSQL (`apt-get install postgresql`), started from a fresh cluster in
a temporary directory on a free port: nothing of a real installation is touched and every test
gets a database of its own. initdb refuses to run as root, so as root it runs as the `postgres`
user; TCP logins need a password (scram-sha-256), so tests see what a team's server would do.

Import the fixtures into a test module: `from pg import pg_cluster, results_db  # noqa: F401`;
`results_db` runs a test against SQLite and (marked `integration`) PostgreSQL.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from mlonmcu.report import columns as col
from mlonmcu.results.store import SessionRecord

if TYPE_CHECKING:
    import psycopg

USER = "mlonmcu"
PASSWORD = "pg-test-secret-4711"  # distinctive: tests check it never shows in a message
SERVER_USER = "postgres"
START_TIMEOUT = 60  # seconds pg_ctl waits for the server to accept connections


def bindir() -> Path | None:
    """The newest installed PostgreSQL's programs."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    return Path(found[-1]).parent if found else None


def unavailable() -> str:
    """Why no server can be started here ("" if one can)."""
    if bindir() is None:
        return "PostgreSQL is not installed: install Debian's postgresql (apt-get install postgresql)"
    if os.geteuid() != 0:
        return "the PostgreSQL tests run a throw-away server as the postgres user: run them as root"
    try:
        pwd.getpwnam(SERVER_USER)
    except KeyError:
        return f"no '{SERVER_USER}' user to run the server as: install Debian's postgresql"
    return ""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Cluster:
    """One running server; `stop` ends it and removes its files."""

    def __init__(self, root: Path, programs: Path):
        self.root = root
        self.programs = programs
        self.data = root / "data"
        self.port = 0
        self._names = itertools.count()

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [str(self.programs / args[0]), *args[1:]]
        return subprocess.run(
            ["runuser", "-u", SERVER_USER, "--", *command], capture_output=True, text=True, timeout=120, check=False
        )

    def _checked(self, *args: str) -> None:
        done = self._run(*args)
        if done.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text()[-2000:] if log.is_file() else ""
            raise RuntimeError(f"{args[0]} failed ({done.returncode}): {done.stderr.strip()}\n{tail}")

    @classmethod
    def start(cls) -> Cluster:
        programs = bindir()
        assert programs is not None, unavailable()
        root = Path(tempfile.mkdtemp(prefix="mlonmcu-pg-"))  # short: the socket path has a length limit
        shutil.chown(root, SERVER_USER, SERVER_USER)
        cluster = cls(root, programs)
        try:
            cluster._checked(
                "initdb", "-D", str(cluster.data), "-U", SERVER_USER, "-E", "UTF8", "--no-sync",
                "--auth-local=trust", "--auth-host=scram-sha-256",
            )  # fmt: skip
            cluster._listen()
            cluster._create_role()
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def _listen(self) -> None:
        for attempt in range(3):  # a free port can be taken between probing and binding it
            self.port = free_port()
            options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
            done = self._run(
                "pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-o", options,
                "-w", "-t", str(START_TIMEOUT), "start",
            )  # fmt: skip
            if done.returncode == 0:
                return
            if attempt == 2:
                self._checked("pg_ctl", "-D", str(self.data), "status")

    def admin(self) -> psycopg.Connection[Any]:
        """A superuser connection over the private socket (trusted: only root and postgres reach it)."""
        import psycopg  # late: without psycopg the fixture fails, collecting the tests does not

        return psycopg.connect(
            host=str(self.root), port=self.port, user=SERVER_USER, dbname="postgres", autocommit=True
        )

    def _create_role(self) -> None:
        from psycopg import sql

        with self.admin() as conn:
            conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(USER), sql.Literal(PASSWORD))
            )

    def url(self, database: str, password: str = PASSWORD) -> str:
        return f"postgresql+psycopg://{USER}:{password}@127.0.0.1:{self.port}/{database}"

    def create_database(self, owner: str = USER) -> str:
        """A new empty database; owned by the test user unless `owner` says otherwise."""
        from psycopg import sql

        name = f"results_{next(self._names)}"
        with self.admin() as conn:
            conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(name), sql.Identifier(owner)))
        return name

    def drop_database(self, name: str) -> None:
        from psycopg import sql

        with self.admin() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))

    def stop(self) -> None:
        if (self.data / "postmaster.pid").is_file():
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """A PostgreSQL server for the whole test session (skipped where none can be started)."""
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    cluster = Cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)])
def results_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of an empty results database: an SQLite file, and a PostgreSQL database of its own."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'results.db'}"
        return
    cluster: Cluster = request.getfixturevalue("pg_cluster")
    name = cluster.create_database()
    try:
        yield cluster.url(name)
    finally:
        cluster.drop_database(name)


# -- sample sessions ------------------------------------------------------------------------------

T0 = datetime(2026, 3, 1, 22, 0, tzinfo=UTC)


def sample_record(session: int = 1, **changes: Any) -> SessionRecord:
    """A finished session of host `ci` started `session` hours after T0; fields replaced by `changes`."""
    record = SessionRecord(
        uid=f"ci:/srv/home:{session}",
        session=session,
        label="",
        sweep="nightly",
        command="mlonmcu sweep run nightly.yml",
        host="ci",
        home="/srv/home",
        status="done",
        started=T0 + timedelta(hours=session),
        finished=T0 + timedelta(hours=session, minutes=5),
        mlonmcu_version="0.9.0",
        git_commit="abc123",
        components={"tvm": "0.27.0", "spike": "1.1.0"},
    )
    return replace(record, **changes)


def sample_rows(session: int = 1, runs: int = 3) -> list[dict[str, Any]]:
    """Report rows as a session makes them: numpy scalars, missing values, a failure, an extra column."""
    rows = []
    for run in range(runs):
        failing = run == 2
        rows.append(
            {
                col.SESSION: session,
                col.RUN: run,
                col.MODEL: f"model{run}",
                col.FRONTEND: "tflite",
                col.BACKEND: "tvmaot",
                col.PLATFORM: "mlif",
                col.TARGET: "spike",
                col.FEATURES: "validate,profile" if run == 0 else "validate",
                col.CONFIG: "mlif.optimize=O3" if run == 1 else "",
                col.SETUP_CYCLES: None if run == 1 else 53,  # an int column with a gap: float, NaN
                col.RUN_CYCLES: np.int64(1_000_000 + run),  # an int column: stays int
                col.TOTAL_ROM: 27_588 + run,
                col.MAX_ABS_ERROR: np.float64(0.25) * run,  # float32 would come back as float64
                col.VALIDATION: "fail" if failing else "pass",
                col.FAILING: np.bool_(failing),
                col.REASON: "validation failed: 3 of 10 samples" if failing else float("nan"),
                col.MODEL_HASH: f"{run:016x}",
                "Custom Note": f"=note {run}",  # a column the store has never heard of
            }
        )
    return rows
