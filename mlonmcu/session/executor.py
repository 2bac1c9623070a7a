"""Executors with the concurrent.futures interface: in-process, local process pool, Dask."""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Executor, Future, InvalidStateError
from concurrent.futures import wait as futures_wait
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlonmcu.errors import ConfigError
from mlonmcu.session.interrupt import worker_init

if TYPE_CHECKING:
    from distributed import Client

KINDS = ("auto", "inline", "process", "dask")
CONNECT_TIMEOUT = 10.0  # seconds to reach a Dask scheduler before giving up with a ConfigError
CLOSE_TIMEOUT = 5.0  # seconds to close a Dask client (its scheduler may be gone)
DASK_MISSING = "the dask executor needs the 'distributed' package: pip install 'mlonmcu[dask]'"

logger = logging.getLogger("mlonmcu.executor")


class InlineExecutor(Executor):
    """Runs each job when submitted, in this process (debuggable, no pickling)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as err:
            future.set_exception(err)
        return future


class SchedulerLost(ConnectionError):
    """The client lost its Dask scheduler: the task's result will never come back."""


class DaskExecutor(Executor):
    """A Dask client behind the concurrent.futures interface.

    Unlike `Client.get_executor()` it closes its client (and the LocalCluster it started) on
    shutdown, accepts `cancel_futures`, runs a `finish` step on this machine before a future is
    done (session/remote.py unpacks the run there) and turns a lost scheduler into an error that
    says so instead of a silent cancellation. `remote`: the workers may be other machines that
    share no files with this one, so runs travel as self-contained jobs (session/remote.py).
    """

    def __init__(self, client: Client, cluster: Any = None, remote: bool = True) -> None:
        self.client = client
        self.cluster = cluster
        self.remote = remote
        self.address = str(getattr(client.scheduler, "address", "") or "")
        self.token = uuid.uuid4().hex[:8]  # keeps this session's task keys apart from others'
        self.shared: dict[str, Any] = {}  # name → Dask future of data many tasks read (remote.py)
        self._lock = threading.Lock()
        self._running: dict[Future[Any], Any] = {}  # our future → its Dask future
        self._shutdown = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        return self.submit_task(fn, *args, **kwargs)

    def submit_task(
        self,
        fn: Callable[..., Any],
        *args: Any,
        key: str | None = None,
        finish: Callable[[Any], Any] | None = None,
        **kwargs: Any,
    ) -> Future[Any]:
        """Submit `fn(*args)` (never deduplicated: runs measure, they are not pure); the returned
        future holds `finish(result)`, computed on this machine in Dask's callback thread."""
        if self._shutdown:
            raise RuntimeError("cannot schedule new futures after shutdown")
        task = self.client.submit(fn, *args, key=key, pure=False, **kwargs)
        return self._wrap(task, finish)

    def share(self, name: str, data: Any) -> Any:
        """`data` as a Dask task that many tasks take as an argument, once per executor and name:
        it sits in the scheduler's graph once (not once per task), travels to each worker once,
        and is recomputed from the graph if the worker holding it dies (scattered data would be
        lost with that worker)."""
        with self._lock:
            task = self.shared.get(name)
            if task is None:
                task = self.client.submit(_identity, data, key=f"{name}-{self.token}", pure=False)
                self.shared[name] = task
        return task

    def _wrap(self, task: Any, finish: Callable[[Any], Any] | None) -> Future[Any]:
        outer: Future[Any] = Future()
        with self._lock:
            self._running[outer] = task

        def cancelled(future: Future[Any]) -> None:
            if future.cancelled():
                with contextlib.suppress(Exception):
                    task.cancel()
                with contextlib.suppress(RuntimeError):
                    future.set_running_or_notify_cancel()  # wakes a concurrent.futures.wait()

        def done(task: Any) -> None:
            try:
                if outer.cancelled():
                    return
                try:
                    value = task.result()
                    if finish is not None:
                        value = finish(value)
                except BaseException as err:
                    _settle(outer, error=self._explain(task, err))
                else:
                    _settle(outer, value=value)
            finally:
                with self._lock:
                    self._running.pop(outer, None)
                with contextlib.suppress(Exception):
                    task.release()  # the worker may drop the result now

        outer.add_done_callback(cancelled)
        task.add_done_callback(done)
        return outer

    def _explain(self, task: Any, err: BaseException) -> BaseException:
        if task.status == "cancelled" or type(err).__name__.endswith("CancelledError"):
            why = getattr(err, "reason", "") or type(err).__name__
            return SchedulerLost(f"the connection to the Dask scheduler at {self.address} was lost ({why})")
        return err

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if self._shutdown:
            return
        self._shutdown = True
        with self._lock:
            running = dict(self._running)
        if cancel_futures or not wait:
            for outer in running:
                outer.cancel()
        if wait:
            futures_wait(list(running))
        self.shared.clear()
        with contextlib.suppress(Exception):
            self.client.close(timeout=CLOSE_TIMEOUT)
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                self.cluster.close(timeout=CLOSE_TIMEOUT)


def _identity(data: Any) -> Any:
    return data


def _settle(future: Future[Any], value: Any = None, error: BaseException | None = None) -> None:
    """Set a future that may have been cancelled meanwhile (then the outcome is dropped)."""
    with contextlib.suppress(InvalidStateError):
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)


def _connect_kwargs(scheduler: str) -> dict[str, Any]:
    if scheduler.endswith(".json") or Path(scheduler).is_file():
        if not Path(scheduler).is_file():
            raise ConfigError(
                f"Dask scheduler file {scheduler} does not exist: start the scheduler with "
                f"`dask scheduler --scheduler-file {scheduler}`, or pass its address (tcp://host:8786)"
            )
        return {"scheduler_file": scheduler}
    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.comm.registry import get_backend

    try:
        scheme, location = parse_address(scheduler, strict=False)
        get_backend(scheme)
        if scheme in ("tcp", "tls", "ws", "wss"):
            parse_host_port(location)
    except ValueError as err:
        raise ConfigError(
            f"'{scheduler}' is not a Dask scheduler address ({err}): give tcp://HOST:PORT (a scheduler listens "
            "on 8786 unless told otherwise) or the path of its --scheduler-file"
        ) from None
    return {"address": scheduler}


def connect_dask(scheduler: str, timeout: float = CONNECT_TIMEOUT) -> Client:
    """A `distributed.Client` of a running scheduler (address or scheduler file).

    Fails within `timeout` with a ConfigError naming the address: a typo or a scheduler that is
    not up yet must be a usage error before a session starts, not a hang or a traceback.
    """
    try:
        from distributed import Client
    except ImportError:
        raise ConfigError(DASK_MISSING) from None
    kwargs = _connect_kwargs(scheduler)
    try:
        client = Client(**kwargs, timeout=timeout, set_as_default=False)
    except Exception as err:
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        why = f"no answer within {timeout:g} s" if "timed out" in detail.lower() else detail
        raise ConfigError(
            f"cannot reach the Dask scheduler at {scheduler} ({why}): start one with `dask scheduler`, "
            "check the address (tcp://HOST:8786) and that the port is open"
        ) from None
    try:
        workers = len(client.scheduler_info().get("workers", {}))
    except Exception:
        workers = -1
    if workers == 0:
        logger.warning(
            "the Dask scheduler at %s has no workers yet: runs wait until one connects "
            "(`MLONMCU_HOME=... dask worker %s --nthreads 1`)",
            scheduler,
            getattr(client.scheduler, "address", scheduler),
        )
    return client


def resolve_kind(kind: str = "auto", parallel: int = 1, scheduler: str | None = None) -> str:
    if kind not in KINDS:
        raise ConfigError(f"unknown executor '{kind}'; valid: {', '.join(KINDS)}")
    if kind == "auto":
        kind = "dask" if scheduler else ("process" if parallel > 1 else "inline")
    return kind


def make_executor(
    kind: str = "auto",
    parallel: int = 1,
    scheduler: str | None = None,
    verbosity: int = 0,
    client: Client | None = None,
) -> Executor:
    """The executor for a session. Dask: `client` (e.g. from connect_dask), else one connected
    to `scheduler`, else a LocalCluster of `parallel` single-threaded workers on this machine."""
    kind = resolve_kind(kind, parallel, scheduler if client is None else "given")
    if kind == "inline":
        return InlineExecutor()
    if kind == "process":
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        # spawn: workers start clean (no inherited threads/locks of the progress display); each
        # dies with the orchestrator and stops its run cleanly on SIGTERM (session/interrupt.py)
        return ProcessPoolExecutor(
            max_workers=max(1, parallel),
            mp_context=multiprocessing.get_context("spawn"),
            initializer=worker_init,
            initargs=(verbosity,),
        )
    if client is not None:
        return DaskExecutor(client, remote=True)
    if scheduler:
        return DaskExecutor(connect_dask(scheduler), remote=True)
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ConfigError(DASK_MISSING) from None
    # workers on this machine see its files: runs go as they are, no packing (remote=False)
    cluster = LocalCluster(n_workers=max(1, parallel), threads_per_worker=1, dashboard_address=None)
    return DaskExecutor(Client(cluster, set_as_default=False), cluster, remote=False)
