"""Fault injection: real `mlonmcu` processes, real simulators, faults injected on purpose.

Each test injects one fault and asserts that nothing wrong is reported and nothing finished is
lost. The CLI runs as a separate process (tests/faults/plugin_cli.py) so that it can be
signalled and killed like a user's or a CI job's would be.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd

PLUGIN_CLI = Path(__file__).with_name("plugin_cli.py")
SIMULATORS = ("spike", "qemu-system-riscv32", "qemu-system-arm")


def cli_args(*args: object) -> list[str]:
    return [sys.executable, str(PLUGIN_CLI), *(str(a) for a in args)]


def run_cli(*args: object, timeout: float = 600) -> tuple[int, str]:
    done = subprocess.run(cli_args(*args), capture_output=True, text=True, timeout=timeout)
    return done.returncode, done.stdout + done.stderr


def start_cli(*args: object, log: Path) -> subprocess.Popen[bytes]:
    """In its own process group, like a command typed into a terminal."""
    return subprocess.Popen(cli_args(*args), stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)


def _state(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def alive(pid: int) -> bool:
    """Running (a zombie waiting to be reaped has already died)."""
    state = _state(pid)
    return state is not None and state not in ("Z", "X")


def simulators(marker: str) -> list[int]:
    """Live simulator processes whose command line mentions `marker` (e.g. a session directory)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        simulator = argv and Path(argv[0].decode(errors="replace")).name in SIMULATORS
        if simulator and marker.encode() in b" ".join(argv) and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def wait_for(predicate: Callable[[], object], timeout: float, what: str) -> object:
    """Poll until `predicate` is truthy (a condition, not a measurement of speed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def report(home: Path, session: int | str = "latest") -> pd.DataFrame:
    return pd.read_csv(home / "sessions" / str(session) / "report.csv")


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Test cleanup: whatever a failed test left behind."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
