"""Run external tools: never through a shell, output to a log, and never left behind.

Every child gets its own process group (so a simulator's or a build's whole tree can be
killed at once) and a parent-death signal (`PR_SET_PDEATHSIG`: the kernel kills it when the
process that started it dies, even by SIGKILL). Whatever ends the wait — a timeout, Ctrl-C,
SIGTERM, an exception — the group is killed before the exception travels on.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import logging
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlonmcu.errors import RunTimeout, ToolError

TAIL_LINES = 12
INTERRUPT_GRACE = 10.0  # seconds an interrupted process gets to wind down
PR_SET_PDEATHSIG = 1

logger = logging.getLogger("mlonmcu.process")
_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """Ask the kernel to send `sig` to this process when its parent dies (Linux).

    Used in every child before it execs and in pool workers: if the orchestrator is killed,
    nothing it started keeps running (a hung simulator would otherwise spin forever).
    """
    parent = os.getppid()
    _libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def _child_setup() -> None:
    """In a new child before exec: die with us, and take Ctrl-C/SIGTERM the default way (an
    ignored signal would be inherited across exec)."""
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def spawn(
    argv: Sequence[str], *, cwd: Path | None = None, env: Mapping[str, str] | None = None, stdout: Any, what: str
) -> subprocess.Popen[bytes]:
    """Start a child in its own process group that dies with us; FileNotFoundError → ToolError."""
    logger.debug("$ %s", " ".join(argv))
    try:
        return subprocess.Popen(
            list(argv),
            cwd=cwd,
            env={**os.environ, **env} if env else None,
            stdout=stdout,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_child_setup,
        )
    except FileNotFoundError:
        raise ToolError(f"{what}: executable '{argv[0]}' not found") from None


def stop(proc: subprocess.Popen[Any], grace: float = 0.0) -> None:
    """End a child and its whole process group: SIGTERM with a grace period, then SIGKILL."""
    if proc.poll() is None and grace > 0:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # also what the leader left behind in its group
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)


@dataclass
class Completed:
    returncode: int
    output: str


def tail(text: str, lines: int = TAIL_LINES) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def run(
    args: Sequence[str | os.PathLike[str]],
    *,
    log: Path | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    check: bool = True,
    what: str = "",
    interrupt: bool = False,
) -> Completed:
    """Run a command, append stdout+stderr to `log`, raise ToolError/RunTimeout with its tail.

    The process gets its own process group so a timeout kills simulators and their children.
    With `interrupt`, a timeout first sends SIGINT (GDB then halts the target and finishes its
    script) and kills only if that does not end the process.
    """
    argv = [str(a) for a in args]
    what = what or Path(argv[0]).name
    proc = spawn(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, what=what)
    timed_out = False
    try:
        try:
            raw, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            logger.info("%s did not finish within %g s: stopping it", what, timeout)
            raw = b""
            if interrupt:
                proc.send_signal(signal.SIGINT)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    raw, _ = proc.communicate(timeout=INTERRUPT_GRACE)
            if proc.poll() is None:
                stop(proc)
                rest, _ = proc.communicate()
                raw += rest
        else:
            stop(proc)  # the leader exited: anything it left running in its group goes too
    except BaseException:  # Ctrl-C, SIGTERM, any error while waiting: the child must not outlive us
        stop(proc)
        if proc.stdout is not None:
            proc.stdout.close()
        raise
    output = raw.decode("utf-8", errors="replace")
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a", encoding="utf-8") as fh:
            fh.write(f"$ {' '.join(argv)}\n{output}")
            if timed_out:
                fh.write(f"\n[mlonmcu] killed after {timeout} s\n")
            fh.write(f"[exit code {proc.returncode}]\n")
    if timed_out:
        raise RunTimeout(f"timeout: {what} did not finish within {timeout:g} s and was killed")
    if check and proc.returncode != 0:
        raise ToolError(f"{what} failed with exit code {proc.returncode}: {_last_line(output)}", tail(output))
    return Completed(proc.returncode, output)


DIAGNOSTICS = ("error:", "undefined reference", "multiple definition", "overflowed by", "fatal")
SUMMARIES = ("collect2", "make", "gmake", "ninja")  # "failed because of the above" lines


def _last_line(output: str) -> str:
    """The line that says what went wrong: the first compiler/linker diagnostic, else the last line."""
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    diagnostics = [
        line for line in lines if any(d in line.lower() for d in DIAGNOSTICS) and not line.lower().startswith(SUMMARIES)
    ]
    errors = diagnostics or [line for line in lines if "error" in line.lower()]
    return (errors[0] if errors else lines[-1] if lines else "no output")[:300]
