"""Run external tools: never through a shell, output to a log, timeouts that really kill."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mlonmcu.errors import RunTimeout, ToolError

TAIL_LINES = 12
INTERRUPT_GRACE = 10.0  # seconds an interrupted process gets to wind down


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
    full_env = {**os.environ, **env} if env else None
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    except FileNotFoundError:
        raise ToolError(f"{what}: executable '{argv[0]}' not found") from None
    timed_out = False
    try:
        raw, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        raw = b""
        if interrupt:
            proc.send_signal(signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                raw, _ = proc.communicate(timeout=INTERRUPT_GRACE)
        if proc.poll() is None:
            _kill_group(proc)
            rest, _ = proc.communicate()
            raw += rest
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


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
