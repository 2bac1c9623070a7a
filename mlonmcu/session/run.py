"""Execute one run spec in a worker: stages in order, a report row even when a stage fails."""

from __future__ import annotations

import platform
import sys
import traceback
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import yaml

from mlonmcu import __version__, registry
from mlonmcu.errors import MlonmcuError
from mlonmcu.session.manifest import Manifest
from mlonmcu.session.spec import RunSpec, Stage
from mlonmcu.session.stages import STAGE_FUNCTIONS, RunContext

RUN_FILE = "run.yml"


@dataclass
class RunResult:
    """What a worker returns: the report row and the artifacts it wrote."""

    row: dict[str, Any]
    artifacts: list[dict[str, Any]]


def config_label(user_config: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(user_config.items()))


def base_row(spec: RunSpec) -> dict[str, Any]:
    try:
        framework = registry.BACKENDS.get(spec.backend).framework
    except MlonmcuError:
        framework = ""
    return {
        "Session": spec.session,
        "Run": spec.run,
        "Model": spec.model.name,
        "Frontend": spec.frontend,
        "Framework": framework,
        "Backend": spec.backend,
        "Platform": spec.platform,
        "Target": spec.target,
        "Features": ",".join(spec.features),
        "Config": config_label(spec.user_config),
        "Failing": False,
        "Reason": "",
    }


def execute_run(spec: RunSpec) -> RunResult:
    """Never raises for a failing run: the failure is the row's `Failing`/`Reason`."""
    spec.run_dir.mkdir(parents=True, exist_ok=True)
    row = base_row(spec)
    manifest = Manifest(spec.run_dir)
    ctx: RunContext | None = None
    stage = Stage.LOAD
    try:
        if spec.missing:
            raise MlonmcuError(spec.missing)
        ctx = RunContext.create(spec)
        for stage in (Stage.LOAD, Stage.BUILD, Stage.COMPILE, Stage.RUN):
            if stage > spec.until:
                break
            STAGE_FUNCTIONS[stage](ctx)
            manifest.add_stage(stage.name.lower(), ctx.stage_dir(stage))
        stage = Stage.POSTPROCESS
        postprocess(ctx, row)
        if ctx.postprocess_dir.is_dir():
            manifest.add_stage("postprocess", ctx.postprocess_dir)
    except MlonmcuError as err:
        _fail(row, str(err))
    except Exception as err:  # a bug must not take the session down; keep the traceback
        log = spec.run_dir / "logs" / "error.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(traceback.format_exc())
        _fail(row, f"internal error in {stage.name}: {type(err).__name__}: {err} (see {log})")
    finally:
        if ctx is not None:
            fill_row(ctx, row)
        manifest.write()
        _write_run_file(spec, ctx, row, stage)
    return RunResult(row, manifest.to_list())


def _fail(row: dict[str, Any], message: str) -> None:
    row["Failing"] = True
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    row["Reason"] = lines[0] if lines else "unknown error"


def _mean(values: list[int]) -> int | None:
    return round(sum(values) / len(values)) if values else None


def fill_row(ctx: RunContext, row: dict[str, Any]) -> None:
    """Copy whatever the finished stages know into the row (kept even if a later stage failed)."""
    results = ctx.results
    for stage, seconds in ctx.times.items():
        row[f"{stage.name.capitalize()} Stage Time [s]"] = round(seconds, 3)
    row["Cached Stages"] = ",".join(ctx.cached)
    if Stage.LOAD in results:
        info = ctx.info
        row["Model Size"] = info.size
        row["MACs"] = info.macs
        row["Arena Lower Bound"] = info.activations
        row["Samples"] = results[Stage.LOAD]["samples"]
    if Stage.BUILD in results:
        row["Arena Size"] = results[Stage.BUILD].get("arena_size")
        row["Float Ops"] = results[Stage.BUILD].get("float_ops")
    if Stage.COMPILE in results:
        row.update(results[Stage.COMPILE]["memory"])
        if results[Stage.COMPILE].get("arena_size"):  # measured on the target (e.g. tflmi)
            row["Arena Size"] = results[Stage.COMPILE]["arena_size"]
    if Stage.RUN in results:
        h = results[Stage.RUN]["harness"]
        first = [r for r in h["runs"] if r.get("sample") == 0]
        setup = h["setup"]
        measured = any(key in setup for key in ("cycles", "instructions", "ns"))
        row["Counter"] = results[Stage.RUN]["counter"] if measured else "none"
        if "cycles" in setup:
            row["Setup Cycles"] = setup["cycles"]
            row["Run Cycles"] = _mean([r["cycles"] for r in first])
            row["Total Cycles"] = row["Setup Cycles"] + (row["Run Cycles"] or 0)
        if "instructions" in setup:
            row["Setup Instructions"] = setup["instructions"]
            row["Run Instructions"] = _mean([r["instructions"] for r in first])
            if row.get("MACs"):
                row["Run Instructions/MAC"] = round(row["Run Instructions"] / row["MACs"], 2)
        if "ns" in setup:
            row["Setup Time [s]"] = setup["ns"] / 1e9
            mean_ns = _mean([r["ns"] for r in first])
            row["Run Time [s]"] = mean_ns / 1e9 if mean_ns is not None else None
        if h.get("end") and "stack" in h["end"]:
            row["Stack Used"] = h["end"]["stack"]


def postprocess(ctx: RunContext, row: dict[str, Any]) -> None:
    if Stage.RUN not in ctx.results:
        return
    ctx.postprocess_dir.mkdir(parents=True, exist_ok=True)
    for feature in ctx.features:
        feature.postprocess(ctx, row)


def _write_run_file(spec: RunSpec, ctx: RunContext | None, row: dict[str, Any], stage: Stage) -> None:
    data = {
        "session": spec.session,
        "run": spec.run,
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "model": {"name": spec.model.name, "path": spec.model.path},
        "frontend": spec.frontend,
        "backend": spec.backend,
        "platform": spec.platform,
        "target": spec.target,
        "features": spec.features,
        "until": spec.until.name,
        "user_config": spec.user_config,
        "config": spec.config,
        "components": spec.components,
        "mlonmcu": __version__,
        "python": sys.version.split()[0],
        "host": platform.platform(),
        "failing": bool(row["Failing"]),
        "reason": row["Reason"],
        "failed_stage": stage.name if row["Failing"] else None,
    }
    if ctx is not None:
        data["stage_keys"] = {s.name: k for s, k in ctx.keys.items()}
        data["cached_stages"] = ctx.cached
    (spec.run_dir / RUN_FILE).write_text(yaml.safe_dump(data, sort_keys=False, default_flow_style=False))
