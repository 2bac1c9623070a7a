"""Ctrl-C and SIGTERM: stop starting runs, stop running ones, keep everything that finished.

In the orchestrator the first SIGINT/SIGTERM raises :class:`Interrupted` where it is (a child
being waited for is killed on the way out, see process.py); later signals are ignored while
the cleanup runs, so it cannot itself be cut short.

Pool workers are told to stop with STOP_SIGNAL (or get Ctrl-C with the terminal's process
group): the running run stops its tools, records itself as `interrupted` and is returned; every
run the worker is handed afterwards returns at once. SIGTERM — which the process pool sends to
all its workers when one of them died — does the same and then ends the worker, so the run it
had is retried elsewhere instead of being blamed for the death.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from mlonmcu import logs
from mlonmcu.errors import Interrupted
from mlonmcu.process import die_with_parent

SIGNALS = (signal.SIGINT, signal.SIGTERM)
STOP_SIGNAL = signal.SIGUSR1  # orchestrator → worker: stop, but report what you have

_stopping: int | None = None  # the signal that told this process to stop
_in_run = False
_exit_when_done = False


def stopping() -> int | None:
    return _stopping


def _orchestrator_handler(signum: int, frame: FrameType | None) -> None:
    global _stopping
    if _stopping is not None:
        return
    _stopping = signum
    raise Interrupted(signum)


def _worker_handler(signum: int, frame: FrameType | None) -> None:
    global _stopping, _exit_when_done
    if signum == signal.SIGTERM:
        _exit_when_done = True
        if not _in_run:
            os._exit(128 + signum)
    if _stopping is not None:
        return
    _stopping = signum
    if _in_run:
        raise Interrupted(signum)


@contextmanager
def handling() -> Iterator[None]:
    """Install the orchestrator's handlers for a session (main thread only; elsewhere no-op)."""
    global _stopping
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _stopping = None
    previous = {s: signal.getsignal(s) for s in SIGNALS}
    for s in SIGNALS:
        signal.signal(s, _orchestrator_handler)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        _stopping = None


@contextmanager
def running() -> Iterator[None]:
    """Around one run in a worker: interrupts raise inside it; SIGTERM ends the worker after it."""
    global _in_run
    _in_run = True
    try:
        yield
    finally:
        _in_run = False
        if _exit_when_done:
            os._exit(128 + signal.SIGTERM)


def worker_init(verbosity: int = 0) -> None:
    """Process-pool workers: die with the orchestrator, stop cleanly when it says so."""
    die_with_parent()
    for s in (signal.SIGINT, signal.SIGTERM, STOP_SIGNAL):
        signal.signal(s, _worker_handler)
    logs.configure(verbosity)
