"""The Python API: everything the CLI does is one call here."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from mlonmcu.atomic import check_writable
from mlonmcu.config import parse_assignments
from mlonmcu.environment import Environment
from mlonmcu.errors import ConfigError, Interrupted
from mlonmcu.report import columns as col
from mlonmcu.report.report import FORMATS, export
from mlonmcu.session.executor import make_executor, resolve_kind
from mlonmcu.session.plan import FlowRequest, plan
from mlonmcu.session.run import RunOutcome
from mlonmcu.session.session import Session
from mlonmcu.session.spec import RunSpec, Stage


@dataclass
class FlowResult:
    session: Session
    specs: list[RunSpec]
    report: pd.DataFrame

    @property
    def failed(self) -> bool:
        """Some run could not produce results or its outputs were wrong."""
        frame = self.report
        if frame.empty:
            return False
        failing = frame[col.FAILING].astype(bool).any()
        invalid = (frame[col.VALIDATION] == "fail").any() if col.VALIDATION in frame else False
        return bool(failing or invalid)


class FlowInterrupted(Interrupted):
    """The session was stopped by a signal; `result` holds the partial report (also written)."""

    def __init__(self, signum: int, result: FlowResult):
        super().__init__(signum)
        self.result = result


def _config_values(config: Iterable[str] | Mapping[str, Any] | None) -> dict[str, list[str]]:
    if config is None:
        return {}
    if isinstance(config, Mapping):
        return {k: [str(x) for x in (v if isinstance(v, list | tuple) else [v])] for k, v in config.items()}
    return parse_assignments(config)


def check_output(output: str | os.PathLike[str]) -> Path:
    path = Path(output)
    if path.suffix.lower() not in FORMATS:
        raise ConfigError(f"cannot write report '{output}': use one of {', '.join(FORMATS)}")
    check_writable(path)
    return path


def flow(
    models: Iterable[str],
    *,
    home: str | os.PathLike[str] | None = None,
    create_home: bool | None = None,
    backends: Iterable[str] = (),
    targets: Iterable[str] = (),
    features: Iterable[str] = (),
    config: Iterable[str] | Mapping[str, Any] | None = None,
    until: str | Stage = Stage.RUN,
    parallel: int = 1,
    label: str = "",
    executor: str = "auto",
    scheduler: str | None = None,
    use_cache: bool = True,
    output: str | os.PathLike[str] | None = None,
    verbosity: int = 0,
    on_planned: Callable[[list[RunSpec]], None] | None = None,
    on_done: Callable[[RunOutcome], None] | None = None,
    command: str = "",
) -> FlowResult:
    """Run models × backends × targets × config values up to `until`; returns the report.

    Usage errors (unknown names, bad config, an unwritable `output`) raise ConfigError/ModelError
    before any run starts; failing runs are rows with `Failing=True`. Ctrl-C/SIGTERM raise
    :class:`FlowInterrupted` once the partial report (and `output`) is written.
    """
    env = Environment.load(home, create=create_home)
    out = check_output(output) if output else None
    kind = resolve_kind(executor, parallel, scheduler)
    request = FlowRequest(
        models=list(models),
        backends=list(backends),
        targets=list(targets),
        features=list(features),
        config=_config_values(config),
        until=until if isinstance(until, Stage) else Stage.parse(until),
        use_cache=use_cache,
    )
    session = Session.create(env, label)
    try:
        specs = plan(env, request, session.id, session.dir / "runs")
    except BaseException:
        session.discard()  # a usage error leaves no empty session behind
        raise
    for spec in specs:
        spec.log_file = session.log_path
        spec.log_level = logging.DEBUG if verbosity >= 1 else logging.INFO  # the session log: decisions, -v commands
    if on_planned:
        on_planned(specs)
    frame = session.execute(specs, lambda: make_executor(kind, parallel, scheduler, verbosity), on_done, command)
    if out is not None:
        export(frame, out)
    result = FlowResult(session, specs, frame)
    if session.interrupted_by is not None:
        raise FlowInterrupted(session.interrupted_by, result)
    return result
