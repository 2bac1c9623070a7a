"""Execute one run spec in a worker: stages in order, a report row even when a stage fails."""

from __future__ import annotations

import logging
import os
import platform
import socket
import sys
import traceback
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mlonmcu import __version__, registry, yamlio
from mlonmcu.atomic import disk_full, is_disk_full, write_text
from mlonmcu.contracts import RunResult, encode
from mlonmcu.errors import Interrupted, MlonmcuError
from mlonmcu.logs import session_log
from mlonmcu.report import columns as col
from mlonmcu.session import interrupt
from mlonmcu.session.spec import RunSpec, Stage
from mlonmcu.session.stages import STAGE_FUNCTIONS, RunContext, stages_of

RUN_FILE = "run.yml"
RUNNING_FILE = ".running"  # pid of the worker running it: tells a dead worker's run from queued ones
INTERRUPTED = "interrupted"
WORKER_LOST = "worker lost"

logger = logging.getLogger("mlonmcu.run")


@dataclass
class RunOutcome:
    """What a worker returns: the report row and the artifacts it wrote."""

    row: dict[str, Any]
    artifacts: list[dict[str, Any]]
    interrupted: bool = False


def config_label(user_config: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(user_config.items()))


def base_row(spec: RunSpec) -> dict[str, Any]:
    try:
        framework = registry.BACKENDS.get(spec.backend).framework
        # a target that interprets the model itself (host_py) builds no firmware: no platform ran
        platform = "" if registry.TARGETS.get(spec.target).interpreter else spec.platform
    except MlonmcuError:
        framework, platform = "", spec.platform
    return {
        col.SESSION: spec.session,
        col.RUN: spec.run,
        col.MODEL: spec.model.name,
        col.FRONTEND: spec.frontend,
        col.FRAMEWORK: framework,
        col.BACKEND: spec.backend,
        col.PLATFORM: platform,
        col.TARGET: spec.target,
        col.FEATURES: ",".join(spec.features),
        col.CONFIG: config_label(spec.user_config),
        col.MODEL_PATH: spec.model.path,
        col.MODEL_HASH: spec.model.sha256[:16],
        col.FAILING: False,
        col.REASON: "",
    }


def failed_row(spec: RunSpec, reason: str) -> dict[str, Any]:
    """The row of a run that produced nothing (interrupted before it started, worker lost)."""
    row = base_row(spec)
    _fail(row, reason)
    return row


def unfinished(row: dict[str, Any]) -> bool:
    """A row that stands for a run that never ended (interrupted, its worker lost): resume reruns it."""
    reason = str(row.get(col.REASON) or "")
    return reason == INTERRUPTED or reason.startswith(WORKER_LOST)


def execute_run(spec: RunSpec) -> RunOutcome:
    """Never raises for a failing or interrupted run: that is the row's `Failing`/`Reason`."""
    if interrupt.stopping() is not None:  # this worker was told to stop: start nothing
        return RunOutcome(failed_row(spec, INTERRUPTED), [], interrupted=True)
    with interrupt.running(), session_log(spec.log_file, spec.log_level):
        return _execute(spec)


def _execute(spec: RunSpec) -> RunOutcome:
    spec.run_dir.mkdir(parents=True, exist_ok=True)
    marker = spec.run_dir / RUNNING_FILE
    marker.write_text(f"{os.getpid()} {socket.gethostname()}\n")
    row = base_row(spec)
    ctx: RunContext | None = None
    stage = Stage.LOAD
    stopped = False
    logger.info("run %d: %s %s %s started", spec.run, spec.model.name, spec.backend, spec.target)
    try:
        if spec.missing:
            raise MlonmcuError(spec.missing)
        ctx = RunContext.create(spec)
        for stage in stages_of(spec):
            STAGE_FUNCTIONS[stage](ctx)
        stage = Stage.POSTPROCESS
        postprocess(ctx, row)
    except Interrupted:
        stopped = True
        _fail(row, INTERRUPTED)
    except MlonmcuError as err:
        _fail(row, str(err))
    except Exception as err:  # a bug must not take the session down; keep the traceback
        if is_disk_full(err):
            _fail(row, str(disk_full(spec.run_dir)))
        else:
            log = spec.run_dir / "logs" / "error.log"
            _fail(row, f"internal error in {stage.name}: {type(err).__name__}: {err} (see {log})")
            _write_quietly(lambda: write_text(log, traceback.format_exc()))
    finally:
        if ctx is not None:
            try:
                fill_row(ctx, row)
            except Exception as err:  # a bug here must not lose the run's row either
                _fail(row, f"internal error recording the results: {type(err).__name__}: {err}")
            _write_quietly(ctx.manifest.write)
        _write_quietly(lambda: _write_run_file(spec, ctx, row, stage))
        marker.unlink(missing_ok=True)
    logger.info("run %d: %s", spec.run, f"failed: {row[col.REASON]}" if row[col.FAILING] else "done")
    return RunOutcome(row, ctx.manifest.to_list() if ctx else [], interrupted=stopped)


def _write_quietly(write: Any) -> None:
    """Records of a run that ends badly (a full disk, say) must not hide why it ended."""
    try:
        write()
    except (OSError, MlonmcuError) as err:
        logger.error("%s", err)


def _fail(row: dict[str, Any], message: str) -> None:
    row[col.FAILING] = True
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    row[col.REASON] = lines[0] if lines else "unknown error"


def _mean(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return round(sum(known) / len(known)) if known and len(known) == len(values) else None


def fill_row(ctx: RunContext, row: dict[str, Any]) -> None:
    """Copy whatever the finished stages know into the row (kept even if a later stage failed)."""
    for stage, seconds in ctx.times.items():
        row[col.STAGE_TIME[stage.name]] = round(seconds, 3)
    row[col.CACHED_STAGES] = ",".join(ctx.cached)
    if ctx.loaded is not None:
        info = ctx.loaded.info
        row[col.MODEL_SIZE] = info.size
        row[col.MACS] = info.macs
        if info.activations:  # 0: the frontend could not bound it (a QDQ ONNX model)
            row[col.ARENA_LOWER_BOUND] = info.activations
        row[col.SAMPLES] = ctx.loaded.samples
    if ctx.built is not None:
        row[col.ARENA_SIZE] = ctx.built.arena_size
        row[col.FLOAT_OPS] = ctx.built.float_ops
    if ctx.compiled is not None:
        row.update(ctx.compiled.memory.columns())
        if ctx.compiled.arena_size:  # measured on the target (e.g. tflmi)
            row[col.ARENA_SIZE] = ctx.compiled.arena_size
    if ctx.ran is not None:
        fill_measurements(row, ctx.ran)
        if ctx.ran.arena_size:
            row[col.ARENA_SIZE] = ctx.ran.arena_size


def fill_measurements(row: dict[str, Any], ran: RunResult) -> None:
    h = ran.harness
    first = h.first_sample()
    setup = h.setup
    measured = any(v is not None for v in (setup.cycles, setup.instructions, setup.ns))
    row[col.COUNTER] = ran.counter if measured else "none"
    if setup.cycles is not None:
        row[col.SETUP_CYCLES] = setup.cycles
        row[col.RUN_CYCLES] = _mean([r.cycles for r in first])
        row[col.TOTAL_CYCLES] = setup.cycles + (row[col.RUN_CYCLES] or 0)
    if setup.instructions is not None:
        row[col.SETUP_INSTRUCTIONS] = setup.instructions
        row[col.RUN_INSTRUCTIONS] = _mean([r.instructions for r in first])
        if row.get(col.MACS) and row[col.RUN_INSTRUCTIONS] is not None:
            row[col.INSTRUCTIONS_PER_MAC] = round(row[col.RUN_INSTRUCTIONS] / row[col.MACS], 2)
    if setup.estimated_cycles is not None:
        row[col.ESTIMATED_CYCLES] = _mean([r.estimated_cycles for r in first])
        row[col.TIMING_MODEL] = ran.timing_model
    if setup.ns is not None:
        row[col.SETUP_TIME] = setup.ns / 1e9
        mean_ns = _mean([r.ns for r in first])
        row[col.RUN_TIME] = mean_ns / 1e9 if mean_ns is not None else None
        times = [r.ns for r in first if r.ns is not None]
        if times:
            row[col.RUN_TIME_MIN] = min(times) / 1e9
    if h.end is not None and h.end.stack is not None:
        row[col.STACK_USED] = h.end.stack


def postprocess(ctx: RunContext, row: dict[str, Any]) -> None:
    if ctx.ran is None:
        return
    ctx.postprocess_dir.mkdir(parents=True, exist_ok=True)
    inp = ctx.postprocess_input()
    for feature in ctx.features:
        cells = feature.postprocess(inp)
        unknown = [c for c in cells if c not in col.ALL and c not in feature.columns]
        if unknown:
            raise MlonmcuError(f"feature {feature.name} wrote unknown report column(s) {', '.join(unknown)}")
        row.update(cells)
    ctx.manifest.add_stage("postprocess", ctx.postprocess_dir)


def _write_run_file(spec: RunSpec, ctx: RunContext | None, row: dict[str, Any], stage: Stage) -> None:
    data = {
        "session": spec.session,
        "run": spec.run,
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "model": {"name": spec.model.name, "path": spec.model.path, "sha256": spec.model.sha256},
        "frontend": spec.frontend,
        "backend": spec.backend,
        "platform": spec.platform,
        "target": spec.target,
        "features": spec.features,
        "until": spec.until.name,
        "user_config": spec.user_config,
        "config": spec.config,
        "components": {name: encode(found) for name, found in spec.components.items()},
        "mlonmcu": __version__,
        "python": sys.version.split()[0],
        "host": platform.platform(),
        "hostname": socket.gethostname(),
        "failing": bool(row[col.FAILING]),
        "reason": row[col.REASON],
        "failed_stage": stage.name if row[col.FAILING] else None,
    }
    if ctx is not None:
        data["stage_keys"] = {s.name: k for s, k in ctx.keys.items()}
        data["cached_stages"] = ctx.cached
        if ctx.repaired:
            data["cache_repairs"] = ctx.repaired
    write_text(spec.run_dir / RUN_FILE, yamlio.dump(data, sort_keys=False, default_flow_style=False))
