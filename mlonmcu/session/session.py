"""Session: the runs launched together, their directory and their report."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, as_completed
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from mlonmcu import config as cfg
from mlonmcu import registry
from mlonmcu.environment import Environment
from mlonmcu.errors import ConfigError
from mlonmcu.models.model import expand_models, find_model
from mlonmcu.report.report import export, to_frame
from mlonmcu.session.executor import InlineExecutor
from mlonmcu.session.run import RunResult, execute_run
from mlonmcu.session.spec import ModelRef, RunSpec, Stage
from mlonmcu.setup import installer

SESSION_FILE = "session.yml"
REPORT_FILE = "report.csv"


@dataclass
class FlowRequest:
    """What `mlonmcu flow` asks for; the session turns it into the run matrix."""

    models: list[str]
    backends: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    features: list[str] = field(default_factory=list)
    config: dict[str, list[str]] = field(default_factory=dict)
    until: Stage = Stage.RUN
    frontend: str = "tflite"
    platform: str = ""
    use_cache: bool = True


def _check_enabled(env: Environment, kind: str, names: list[str], reg: registry.Registry[Any]) -> None:
    for name in names:
        reg.get(name)
        if name not in env.enabled[kind]:
            raise ConfigError(
                f"{reg.kind} '{name}' is not enabled in {env.file} (enabled: {', '.join(env.enabled[kind]) or 'none'});"
                f" add it to '{kind}:' there"
            )


def plan(env: Environment, request: FlowRequest, session_id: int, runs_dir: Path) -> list[RunSpec]:
    """The run matrix: models × backends × targets × config values (usage errors raise ConfigError)."""
    if not request.models:
        raise ConfigError("no model given: name one (see `mlonmcu models`) or pass a .tflite path")
    backends = request.backends or [env.first("backends")]
    targets = request.targets or [env.first("targets")]
    platform = request.platform or env.first("platforms")
    features = list(dict.fromkeys(request.features))
    _check_enabled(env, "backends", backends, registry.BACKENDS)
    _check_enabled(env, "targets", targets, registry.TARGETS)
    _check_enabled(env, "platforms", [platform], registry.PLATFORMS)
    _check_enabled(env, "features", features, registry.FEATURES)
    registry.FRONTENDS.get(request.frontend)
    for key, values in request.config.items():
        option = registry.check_key(key)
        for value in values:
            option.parse(value, key)
    models = [find_model(m, env.model_dirs) for m in expand_models(request.models, env.model_dirs)]
    defaults = env.defaults()
    specs: list[RunSpec] = []
    seen: set[str] = set()
    for model in models:
        for backend in backends:
            for target in targets:
                plugins = {
                    request.frontend: registry.FRONTENDS.get(request.frontend),
                    backend: registry.BACKENDS.get(backend),
                    platform: registry.PLATFORMS.get(platform),
                    target: registry.TARGETS.get(target),
                    **{f: registry.FEATURES.get(f) for f in features},
                }
                scopes = {name: tuple(cls.options) for name, cls in plugins.items()}
                needed = [c for cls in plugins.values() for c in cls.requires]
                found, missing = installer.check(env, needed)
                optional = [c for cls in plugins.values() for c in getattr(cls, "optional", ())]
                found.update(installer.check(env, optional)[0])  # used when present, e.g. the QEMU plugin
                for combo in cfg.expand_matrix(request.config):
                    user = {k: v for k, v in combo.items() if k.split(".", 1)[0] in scopes}
                    identity = repr((model.path, backend, target, sorted(user.items())))
                    if identity in seen:
                        continue
                    seen.add(identity)
                    run_id = len(specs)
                    specs.append(
                        RunSpec(
                            session=session_id,
                            run=run_id,
                            run_dir=runs_dir / str(run_id),
                            model=ModelRef(
                                model.name, str(model.path), str(model.directory) if model.directory else None
                            ),
                            frontend=request.frontend,
                            backend=backend,
                            platform=platform,
                            target=target,
                            features=features,
                            config=cfg.resolve(scopes, defaults, user),
                            user_config={k: registry.check_key(k).parse(v, k) for k, v in user.items()},
                            until=request.until,
                            cache_dir=env.cache_dir,
                            use_cache=request.use_cache,
                            components={
                                n: {"version": i.version, "location": i.location, **i.extras} for n, i in found.items()
                            },
                            missing=installer.missing_message(missing) if missing else "",
                        )
                    )
    return specs


class Session:
    def __init__(self, env: Environment, session_id: int, directory: Path, label: str = ""):
        self.env = env
        self.id = session_id
        self.dir = directory
        self.label = label

    @classmethod
    def create(cls, env: Environment, label: str = "") -> Session:
        """Allocate the next session id atomically (mkdir), so parallel sessions never collide."""
        env.sessions_dir.mkdir(parents=True, exist_ok=True)
        while True:
            ids = [int(p.name) for p in env.sessions_dir.iterdir() if p.name.isdigit()]
            session_id = max(ids, default=-1) + 1
            directory = env.sessions_dir / str(session_id)
            try:
                directory.mkdir()
            except FileExistsError:
                continue
            latest = env.sessions_dir / "latest"
            tmp = env.sessions_dir / f".latest-{session_id}"
            tmp.unlink(missing_ok=True)
            tmp.symlink_to(directory.name)
            os.replace(tmp, latest)
            return cls(env, session_id, directory, label)

    def discard(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
        latest = self.env.sessions_dir / "latest"
        if latest.is_symlink() and not latest.exists():
            latest.unlink()

    @property
    def report_path(self) -> Path:
        return self.dir / REPORT_FILE

    def _write_meta(self, **values: Any) -> None:
        path = self.dir / SESSION_FILE
        data = yaml.safe_load(path.read_text()) if path.is_file() else {}
        data.update(values)
        path.write_text(yaml.safe_dump(data, sort_keys=False))

    def execute(
        self,
        specs: list[RunSpec],
        executor: Executor,
        on_done: Callable[[RunResult], None] | None = None,
        command: str = "",
    ) -> pd.DataFrame:
        """Run all specs; the report is rewritten after every finished run, so none is lost."""
        self._write_meta(
            id=self.id,
            label=self.label,
            command=command,
            home=str(self.env.home),
            started=datetime.now(UTC).isoformat(timespec="seconds"),
            runs=len(specs),
            status="running",
        )
        rows: list[dict[str, Any]] = []
        status = "done"
        previous = signal.getsignal(signal.SIGTERM)
        signal.signal(signal.SIGTERM, _raise_interrupt)
        try:
            for spec, future in _completed(executor, specs):
                try:
                    result = future.result()
                except Exception as err:  # the worker itself died (e.g. killed process)
                    result = RunResult(_lost_row(spec, err), [])
                if self.label:
                    result.row["Label"] = self.label
                rows.append(result.row)
                export(to_frame(rows), self.report_path)
                if on_done:
                    on_done(result)
        except KeyboardInterrupt:
            status = "interrupted"
            raise
        finally:
            signal.signal(signal.SIGTERM, previous)
            executor.shutdown(wait=status == "done", cancel_futures=True)
            frame = to_frame(rows)
            export(frame, self.report_path)
            failed = int(frame["Failing"].astype(bool).sum()) if rows else 0
            self._write_meta(
                finished=datetime.now(UTC).isoformat(timespec="seconds"),
                status=status,
                completed=len(rows),
                failed=failed,
            )
        return frame


def _completed(executor: Executor, specs: list[RunSpec]) -> Iterator[tuple[RunSpec, Future[RunResult]]]:
    """Results as they finish; in-process runs one at a time so progress and the report advance."""
    if isinstance(executor, InlineExecutor):
        for spec in specs:
            yield spec, executor.submit(execute_run, spec)
        return
    futures = {executor.submit(execute_run, spec): spec for spec in specs}
    for future in as_completed(futures):
        yield futures[future], future


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _lost_row(spec: RunSpec, err: BaseException) -> dict[str, Any]:
    from mlonmcu.session.run import base_row

    row = base_row(spec)
    row["Failing"] = True
    row["Reason"] = f"worker lost: {type(err).__name__}: {err}"
    return row


def list_sessions(env: Environment) -> list[dict[str, Any]]:
    result = []
    if not env.sessions_dir.is_dir():
        return result
    for path in sorted((p for p in env.sessions_dir.iterdir() if p.name.isdigit()), key=lambda p: int(p.name)):
        meta_path = path / SESSION_FILE
        meta = yaml.safe_load(meta_path.read_text()) if meta_path.is_file() else {}
        result.append({"id": int(path.name), "dir": path, **(meta or {})})
    return result


def session_dir(env: Environment, session_id: str) -> Path:
    path = env.sessions_dir / session_id
    if not path.is_dir():
        raise ConfigError(f"no session '{session_id}' in {env.sessions_dir} (see `mlonmcu sessions list`)")
    return path.resolve()


def cleanup(env: Environment, keep: int) -> list[int]:
    """Delete all but the newest `keep` sessions; returns the deleted ids."""
    sessions = list_sessions(env)
    doomed = sessions[: max(0, len(sessions) - keep)]
    for s in doomed:
        shutil.rmtree(s["dir"])
    latest = env.sessions_dir / "latest"
    if latest.is_symlink() and not latest.exists():
        latest.unlink()
    return [s["id"] for s in doomed]
