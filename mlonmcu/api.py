"""The Python API: everything the CLI does is one call here."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from mlonmcu.config import parse_assignments
from mlonmcu.environment import Environment
from mlonmcu.report.report import export
from mlonmcu.session.executor import make_executor
from mlonmcu.session.run import RunResult
from mlonmcu.session.session import FlowRequest, Session, plan
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
        failing = frame["Failing"].astype(bool).any()
        invalid = (frame["Validation"] == "fail").any() if "Validation" in frame else False
        return bool(failing or invalid)


def _config_values(config: Iterable[str] | Mapping[str, Any] | None) -> dict[str, list[str]]:
    if config is None:
        return {}
    if isinstance(config, Mapping):
        return {k: [str(x) for x in (v if isinstance(v, list | tuple) else [v])] for k, v in config.items()}
    return parse_assignments(config)


def flow(
    models: Iterable[str],
    *,
    home: str | os.PathLike[str] | None = None,
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
    on_planned: Callable[[list[RunSpec]], None] | None = None,
    on_done: Callable[[RunResult], None] | None = None,
    command: str = "",
) -> FlowResult:
    """Run models × backends × targets × config values up to `until`; returns the report.

    Usage errors (unknown names, bad config) raise ConfigError/ModelError before any run starts;
    failing runs are rows with `Failing=True`.
    """
    env = Environment.load(home)
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
    except Exception:
        session.discard()  # a usage error leaves no empty session behind
        raise
    if on_planned:
        on_planned(specs)
    frame = session.execute(specs, make_executor(executor, parallel, scheduler), on_done, command)
    if output:
        export(frame, Path(output))
    return FlowResult(session, specs, frame)
