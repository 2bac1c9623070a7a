"""Executors with the concurrent.futures interface: in-process, local process pool, Dask."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from typing import Any

from mlonmcu.errors import ConfigError
from mlonmcu.session.interrupt import worker_init

KINDS = ("auto", "inline", "process", "dask")


class InlineExecutor(Executor):
    """Runs each job when submitted, in this process (debuggable, no pickling)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as err:
            future.set_exception(err)
        return future


def resolve_kind(kind: str = "auto", parallel: int = 1, scheduler: str | None = None) -> str:
    if kind not in KINDS:
        raise ConfigError(f"unknown executor '{kind}'; valid: {', '.join(KINDS)}")
    if kind == "auto":
        kind = "dask" if scheduler else ("process" if parallel > 1 else "inline")
    return kind


def make_executor(kind: str = "auto", parallel: int = 1, scheduler: str | None = None, verbosity: int = 0) -> Executor:
    kind = resolve_kind(kind, parallel, scheduler)
    if kind == "inline":
        return InlineExecutor()
    if kind == "process":
        # spawn: workers start clean (no inherited threads/locks of the progress display); each
        # dies with the orchestrator and stops its run cleanly on SIGTERM (session/interrupt.py)
        return ProcessPoolExecutor(
            max_workers=max(1, parallel),
            mp_context=multiprocessing.get_context("spawn"),
            initializer=worker_init,
            initargs=(verbosity,),
        )
    try:
        from distributed import Client
    except ImportError:
        raise ConfigError("the dask executor needs the 'distributed' package: pip install 'mlonmcu[dask]'") from None
    client = Client(scheduler) if scheduler else Client(n_workers=max(1, parallel), threads_per_worker=1)
    return client.get_executor(pure=False)
