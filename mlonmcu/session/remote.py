"""Runs on Dask workers that share no files with the client (other machines, each its own HOME).

What travels: out, the run spec without the client's paths plus the model (its file, and the
sample data of its directory) as a tar, once per model and worker; back, the report row, the
artifacts manifest and the run directory as a tar. A worker uses its own HOME ($MLONMCU_HOME
of the worker process): its components, its stage cache; the client's config decides what
runs. See docs/distributed.md.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import logging
import os
import shutil
import socket
import sys
import tarfile
import tempfile
import threading
import traceback
from collections.abc import Iterable
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from mlonmcu import __version__
from mlonmcu.atomic import write_text
from mlonmcu.environment import Environment
from mlonmcu.errors import MlonmcuError
from mlonmcu.hashing import file_hash
from mlonmcu.logs import SESSION_LOG
from mlonmcu.report import columns as col
from mlonmcu.session.executor import DaskExecutor
from mlonmcu.session.plan import plugins_of
from mlonmcu.session.run import RunOutcome, execute_run, failed_row
from mlonmcu.session.spec import ModelRef, RunSpec
from mlonmcu.setup import installer
from mlonmcu.setup.deps import DEPS_FILE, Installed

REMOTE_DIR = "remote"  # HOME/remote/models/<digest>: models the client sent this worker
WORKER_FILE = "worker.yml"  # in each run directory: which worker ran it, with which HOME
MODEL_PARTS = ("definition.yml", "input", "output_tflite")  # what a run reads of a model's directory
RUN_PREFIX = "mlonmcu-run-"

logger = logging.getLogger("mlonmcu.remote")


@dataclass(frozen=True)
class ModelArchive:
    """A model packed for the trip: `data` is a deterministic tar, `digest` its SHA-256."""

    data: bytes
    digest: str
    file: str  # the model file's name inside the archive
    with_directory: bool  # has the directory's sample data (else: the file only)


@dataclass(frozen=True)
class RemoteJob:
    """One run for a worker: the spec with the client's paths stripped (the worker sets its own)."""

    spec: RunSpec
    model_digest: str
    model_file: str
    with_directory: bool
    version: str = __version__  # of the client: a worker running another mlonmcu refuses the run


@dataclass
class RemoteResult:
    """What a worker sends back: the outcome, the run directory (tar.gz) and where it ran."""

    outcome: RunOutcome
    archive: bytes
    run_dir: str  # on the worker: paths in the row that point there are rewritten
    model_dir: str
    worker: dict[str, Any] = field(default_factory=dict)
    log: str = ""  # the run's records for the client's session log


# ---------------------------------------------------------------- client: packing


def _add(tar: tarfile.TarFile, path: Path, name: str) -> None:
    """Fixed owner and timestamps: the same model gives the same bytes and digest everywhere."""
    info = tar.gettarinfo(str(path), arcname=name)
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    if info.isfile():
        with path.open("rb") as fh:
            tar.addfile(info, fh)
    else:
        tar.addfile(info)


def _walk(root: Path) -> Iterable[Path]:
    yield root
    if root.is_dir() and not root.is_symlink():
        for child in sorted(root.iterdir()):
            yield from _walk(child)


@functools.lru_cache(maxsize=32)
def _pack_model(path: str, directory: str | None, sha256: str) -> ModelArchive:
    model = Path(path)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        _add(tar, model, model.name)
        if directory:
            for part in MODEL_PARTS:
                top = Path(directory) / part
                if top.exists() and top.name != model.name:
                    for item in _walk(top):
                        _add(tar, item, item.relative_to(directory).as_posix())
    data = buffer.getvalue()
    return ModelArchive(data, hashlib.sha256(data).hexdigest(), model.name, directory is not None)


def pack_model(ref: ModelRef) -> ModelArchive:
    """The model file plus its directory's samples; packed once per model (`ref.sha256`)."""
    return _pack_model(ref.path, ref.directory, ref.sha256)


def strip(spec: RunSpec) -> RunSpec:
    """The spec without anything that names the client's files (they do not exist elsewhere)."""
    return dataclasses.replace(
        spec,
        run_dir=Path(str(spec.run)),
        cache_dir=Path(),
        model=ModelRef(spec.model.name, Path(spec.model.path).name, None, spec.model.sha256),
        components={},
        missing="",
        log_file=None,
    )


def make_job(spec: RunSpec) -> tuple[RemoteJob, ModelArchive]:
    archive = pack_model(spec.model)
    job = RemoteJob(strip(spec), archive.digest, archive.file, archive.with_directory)
    return job, archive


def submit(executor: Executor, spec: RunSpec) -> Future[RunOutcome]:
    """Submit one run: to a Dask cluster of other machines as a job whose future resolves once the
    run directory is unpacked here; to any other executor as `execute_run(spec)`."""
    if not (isinstance(executor, DaskExecutor) and executor.remote):
        return executor.submit(execute_run, spec)
    job, archive = make_job(spec)
    model = executor.share(f"mlonmcu-model-{spec.model.name}-{archive.digest[:12]}", archive.data)
    key = f"mlonmcu-s{spec.session}-r{spec.run}-{executor.token}"
    return executor.submit_task(execute_remote, job, model, key=key, finish=functools.partial(receive, spec))


# ---------------------------------------------------------------- client: receiving


def receive(spec: RunSpec, result: RemoteResult) -> RunOutcome:
    """The worker's run as if it had run here: its directory at `spec.run_dir`, client paths in the
    row, its log records in the session log. Files that cannot be stored fail the run (the row
    keeps what was measured)."""
    row = dict(result.outcome.row)
    worker = result.worker.get("address") or result.worker.get("hostname", "?")
    try:
        if result.archive:
            _unpack_run(result.archive, spec.run_dir)
    except (OSError, tarfile.TarError, MlonmcuError) as err:
        if not row[col.FAILING]:  # a failing run keeps its own reason
            row[col.FAILING] = True
            row[col.REASON] = f"could not store run {spec.run} from worker {worker} in {spec.run_dir}: {err}"
    _rewrite_paths(row, spec, result)
    if result.log and spec.log_file is not None:
        try:
            with spec.log_file.open("a", encoding="utf-8") as fh:
                fh.write(result.log if result.log.endswith("\n") else result.log + "\n")
        except OSError as err:
            logger.error("could not append the log of run %d to %s: %s", spec.run, spec.log_file, err)
    return RunOutcome(row, result.outcome.artifacts, result.outcome.interrupted)


def _unpack_run(archive: bytes, run_dir: Path) -> None:
    """Into a sibling first, then renamed: a run directory is never half there."""
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    incoming = Path(tempfile.mkdtemp(prefix=f".{run_dir.name}.incoming-", dir=run_dir.parent))
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:*") as tar:
            tar.extractall(incoming, filter="data")
        if run_dir.exists():
            shutil.rmtree(run_dir)
        os.replace(incoming, run_dir)
    finally:
        shutil.rmtree(incoming, ignore_errors=True)


def _rewrite_paths(row: dict[str, Any], spec: RunSpec, result: RemoteResult) -> None:
    model_dir = spec.model.directory or str(Path(spec.model.path).parent)
    worker_model = str(Path(result.model_dir) / Path(spec.model.path).name)
    pairs = [(result.run_dir, str(spec.run_dir)), (worker_model, spec.model.path), (result.model_dir, model_dir)]
    pairs = [(old, new) for old, new in pairs if old]
    for name, value in row.items():
        if isinstance(value, str):
            for old, new in pairs:
                value = value.replace(old, new)
            row[name] = value
    row[col.MODEL_PATH] = spec.model.path


# ---------------------------------------------------------------- worker


_components_lock = threading.Lock()
_components_memo: dict[tuple[Any, ...], tuple[dict[str, Installed], dict[str, str]]] = {}


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _needed(spec: RunSpec) -> tuple[list[str], list[str]]:
    """The components the run's plugins require and may use (as plan.py computes them)."""
    plugins = plugins_of(spec.frontend, spec.backend, spec.platform, spec.target, spec.features).values()
    required = list(dict.fromkeys(c for cls in plugins for c in cls.requires))
    optional = list(dict.fromkeys(c for cls in plugins for c in cls.optional if c not in required))
    return required, optional


def components(env: Environment, spec: RunSpec) -> tuple[dict[str, Installed], dict[str, str]]:
    """This worker's components for a run: looked up once per process and HOME (it runs tools and
    hashes files), again after `mlonmcu setup` or an edit of environment.yml on the worker."""
    required, optional = _needed(spec)
    key = (str(env.home), tuple(required), tuple(optional), _mtime(env.file), _mtime(env.deps_dir / DEPS_FILE))
    with _components_lock:
        if key not in _components_memo:
            found, missing = installer.check(env, required)
            extra, _ = installer.check(env, optional)
            _components_memo[key] = ({**found, **extra}, missing)
        found, missing = _components_memo[key]
    return dict(found), dict(missing)


def _model_on_worker(env: Environment, job: RemoteJob, data: bytes) -> ModelRef:
    """The model unpacked under this worker's HOME, once: later runs (and sessions) reuse it."""
    root = env.home / REMOTE_DIR / "models"
    directory = root / job.model_digest[:32]
    path = directory / job.model_file
    sha = job.spec.model.sha256
    if not (path.is_file() and (not sha or file_hash(path) == sha)):
        root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".incoming-", dir=root))
        try:
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
                tar.extractall(staging, filter="data")
            if sha and file_hash(staging / job.model_file) != sha:
                raise MlonmcuError(f"model {job.spec.model.name} arrived damaged (SHA-256 differs from the client's)")
            shutil.rmtree(directory, ignore_errors=True)
            try:
                os.replace(staging, directory)
            except OSError:  # another process of this HOME unpacked it meanwhile
                if not path.is_file():
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return ModelRef(job.spec.model.name, str(path), str(directory) if job.with_directory else None, sha)


def _worker_info() -> dict[str, Any]:
    info: dict[str, Any] = {"hostname": socket.gethostname(), "pid": os.getpid()}
    try:
        from distributed import get_worker

        worker = get_worker()
        info["address"] = worker.address
        info["name"] = str(worker.name)
    except (ImportError, ValueError):
        pass
    return info


def _pack_dir(directory: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1) as tar:
        if directory.is_dir():
            for item in sorted(directory.iterdir()):
                tar.add(str(item), arcname=item.name)
    return buffer.getvalue()


def execute_remote(job: RemoteJob, model: bytes) -> RemoteResult:
    """Run a job on this worker: its HOME ($MLONMCU_HOME), its components and cache, a temporary
    run directory that is sent back and deleted. Never raises for a failing run: that is the row."""
    spec = job.spec
    info = _worker_info()
    info["started"] = datetime.now(UTC).isoformat(timespec="seconds")
    where = info.get("address") or f"{info['hostname']} (pid {info['pid']})"
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f"{RUN_PREFIX}s{spec.session}-r{spec.run}-"))
    except OSError as err:  # no usable $TMPDIR: the row says so instead of a task error
        row = failed_row(spec, f"worker {where}: no temporary directory for the run: {err}")
        return RemoteResult(RunOutcome(row, []), b"", "", "", info)
    run_dir = tmp / str(spec.run)
    log = tmp / SESSION_LOG
    model_dir = ""
    try:
        try:
            if job.version != __version__:
                raise MlonmcuError(
                    f"worker {where} runs mlonmcu {__version__}, the client {job.version}: install the same version"
                )
            env = Environment.load()
            info["home"] = str(env.home)
            ref = _model_on_worker(env, job, model)
            model_dir = str(Path(ref.path).parent)
            found, missing = components(env, spec)
            local = dataclasses.replace(
                spec,
                run_dir=run_dir,
                cache_dir=env.cache_dir,
                model=ref,
                components=found,
                missing=installer.missing_message(missing) if missing else "",
                log_file=log,
            )
        except MlonmcuError as err:
            outcome = RunOutcome(failed_row(spec, f"worker {where}: {err}"), [])
        except Exception as err:  # a bug must not cost the row: say where it happened
            logger.error("worker %s: %s", where, traceback.format_exc())
            outcome = RunOutcome(failed_row(spec, f"internal error on worker {where}: {type(err).__name__}: {err}"), [])
        else:
            outcome = execute_run(local)
        info["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
        info.update(mlonmcu=__version__, python=sys.version.split()[0])
        text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
            write_text(run_dir / WORKER_FILE, yaml.safe_dump(info, sort_keys=False))
            archive = _pack_dir(run_dir)
        except (OSError, MlonmcuError) as err:  # e.g. a full disk: the row still goes back
            row = outcome.row
            if not row[col.FAILING]:
                row[col.FAILING], row[col.REASON] = True, f"worker {where} could not pack the run directory: {err}"
            archive = b""
        return RemoteResult(outcome, archive, str(run_dir), model_dir, info, text)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def dask_setup(worker: Any) -> None:
    """`dask worker --preload mlonmcu.session.remote`: a worker without a usable HOME exits at
    start, naming the HOME and the fix, instead of quickly failing every run it is handed."""
    try:
        env = Environment.load()
    except MlonmcuError as err:
        logger.error("mlonmcu worker cannot start: %s", err)
        raise SystemExit(f"mlonmcu: {err}") from None
    logger.info("worker %s: mlonmcu %s, HOME %s", getattr(worker, "address", "?"), __version__, env.home)
    _, missing = installer.check(env, installer.default_components(env))
    if missing:  # not fatal: the worker may serve only the targets it has components for
        logger.warning("HOME %s lacks %s: runs that need them fail here", env.home, installer.missing_message(missing))
