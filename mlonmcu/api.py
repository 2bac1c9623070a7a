"""The Python API: everything the CLI does is one call here."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlonmcu.atomic import check_writable, write_text
from mlonmcu.config import parse_assignments
from mlonmcu.environment import Environment
from mlonmcu.errors import ConfigError, Interrupted, MlonmcuError
from mlonmcu.report import columns as col
from mlonmcu.report.report import FORMATS, export, read_rows, records, to_frame, truthy
from mlonmcu.results.identity import IDENTITY, describe, identity
from mlonmcu.results.recorder import Recorder
from mlonmcu.session.executor import connect_dask, make_executor, resolve_kind
from mlonmcu.session.plan import FlowRequest, plan
from mlonmcu.session.run import RunOutcome, base_row, unfinished
from mlonmcu.session.session import REPORT_FILE, Session
from mlonmcu.session.sessions import session_dir
from mlonmcu.session.spec import RunSpec, Stage
from mlonmcu.session.sweep import SWEEP_FILE, Sweep, check_size, load_sweep, parse_sweep, plan_sweep

if TYPE_CHECKING:  # pandas and the comparison load where a frame is asked for: a session needs neither
    import pandas as pd

    from mlonmcu.report.compare import Comparison
    from mlonmcu.results.store import ResultsStore

REQUEST_FILE = "request.json"  # what a session needs to be resumed: its request and planned identities
logger = logging.getLogger("mlonmcu.api")


@dataclass
class FlowResult:
    session: Session
    specs: list[RunSpec]
    rows: list[dict[str, Any]]  # the report's rows, in run order
    comparison: Comparison | None = None  # a sweep's gate (compare: in the sweep file)
    comparison_note: str = ""  # why there is none (e.g. the first night has no baseline)
    store_error: str = ""  # the results store could not take the session (the report is still written)

    @cached_property
    def report(self) -> pd.DataFrame:
        """The report as a frame (built when asked for: printing and recording need none)."""
        return to_frame(self.rows)

    @property
    def failed(self) -> bool:
        """Some run could not produce results or its outputs were wrong."""
        return any(truthy(r.get(col.FAILING)) or r.get(col.VALIDATION) == "fail" for r in self.rows)


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


Outputs = str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None  # `-o`, given once or several times


def check_output(output: str | os.PathLike[str]) -> Path:
    path = Path(output)
    if path.suffix.lower() not in FORMATS:
        raise ConfigError(f"cannot write report '{output}': use one of {', '.join(FORMATS)}")
    check_writable(path)
    return path


def check_outputs(output: Outputs) -> tuple[Path, ...]:
    """Every report file asked for, each checked (format, writable) before any run."""
    if output is None:
        return ()
    given = [output] if isinstance(output, str | os.PathLike) else list(output)
    return tuple(dict.fromkeys(check_output(o) for o in given))


def open_store(env: Environment, db: str | None = None) -> ResultsStore:
    """The results store `--db`, the environment file or HOME/results.db name (checked, migrated)."""
    from mlonmcu.results.store import ResultsStore, store_url

    return ResultsStore.open(store_url(db or env.results_db or None, env.home))


@dataclass
class _Launch:
    """Everything checked before a session starts: a run must not be the first to find a typo."""

    env: Environment
    kind: str
    parallel: int
    scheduler: str | None
    verbosity: int
    out: tuple[Path, ...]  # the report files (-o), each written when the session ends
    db: str | None
    recorder: Recorder  # opens the store while the session plans; records it when it ends
    client: Any = None  # the Dask client connected while checking, handed to the session's executor

    @classmethod
    def check(
        cls,
        env: Environment,
        *,
        executor: str,
        parallel: int,
        scheduler: str | None,
        verbosity: int,
        output: Outputs,
        db: str | None,
    ) -> _Launch:
        env.check_writable()
        out = check_outputs(output)
        kind = resolve_kind(executor, parallel, scheduler)
        recorder = Recorder.take()
        try:
            recorder.open(db or env.results_db or None, env.home)  # answered before any run (wait_open)
            client = connect_dask(scheduler) if kind == "dask" and scheduler else None  # unreachable: fail now
        except BaseException:
            recorder.close()
            raise
        return cls(env, kind, parallel, scheduler, verbosity, out, db, recorder, client)

    def abandon(self) -> None:
        """No session will run (a usage error while planning, an unusable store): let go of the cluster."""
        self.recorder.close()
        if self.client is not None:
            self.client.close()

    def ready(self) -> None:
        """Wait for the store to be open (it opened while this process loaded): an unusable one
        stops the command here, before a session is created."""
        try:
            self.recorder.wait_open()
        except BaseException:
            self.abandon()
            raise

    def store(self) -> ResultsStore:
        """The store opened here, to read it (a sweep's comparison); the recorder only writes."""
        return open_store(self.env, self.db)

    def run(
        self,
        session: Session,
        specs: list[RunSpec],
        *,
        on_planned: Callable[[list[RunSpec]], None] | None,
        on_done: Callable[[RunOutcome], None] | None,
        command: str = "",
        kept: dict[int, dict[str, Any]] | None = None,
        sweep: str = "",
    ) -> FlowResult:
        for spec in specs:
            spec.log_file = session.log_path
            spec.log_level = logging.DEBUG if self.verbosity >= 1 else logging.INFO
        if on_planned:
            on_planned(specs)
        client, self.client = self.client, None  # the executor closes it; a second pool connects anew

        def factory() -> Executor:
            nonlocal client
            given, client = client, None
            return make_executor(self.kind, self.parallel, self.scheduler, self.verbosity, client=given)

        try:
            rows = session.execute(specs, factory, on_done, command, kept=kept, **({"sweep": sweep} if sweep else {}))
        finally:
            store_error = self._record(session)
            self.recorder.close()
        result = FlowResult(session, specs, rows, store_error=store_error)
        for path in self.out:
            export(result.report, path)
        if session.interrupted_by is not None:
            raise FlowInterrupted(session.interrupted_by, result)
        return result

    def _record(self, session: Session) -> str:
        """The session into the store, in one transaction; a failure is reported, never fatal."""
        try:
            self.recorder.record(session.dir)
        except (MlonmcuError, OSError) as err:
            logger.error("results store %s: %s (load it later with `mlonmcu results import`)", self.recorder.url, err)
            return str(err)
        return ""


def _save_request(session: Session, specs: list[RunSpec], kind: str, request: FlowRequest) -> None:
    data = {
        "kind": kind,
        "request": request.to_dict(),
        "identities": {str(s.run): identity(base_row(s)) for s in specs},
    }
    write_text(session.dir / REQUEST_FILE, json.dumps(data, indent=1))


def _planned(launch: _Launch, session: Session, make: Callable[[], list[RunSpec]], yes: bool = True) -> list[RunSpec]:
    try:
        specs = make()
        check_size(len(specs), yes)
    except BaseException:
        session.discard()  # a usage error leaves no empty session behind
        launch.abandon()
        raise
    return specs


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
    frontends: Iterable[str] = (),
    parallel: int = 1,
    label: str = "",
    executor: str = "auto",
    scheduler: str | None = None,
    use_cache: bool = True,
    output: Outputs = None,
    db: str | None = None,
    verbosity: int = 0,
    on_planned: Callable[[list[RunSpec]], None] | None = None,
    on_done: Callable[[RunOutcome], None] | None = None,
    command: str = "",
) -> FlowResult:
    """Run models × backends × targets × config values up to `until`; returns the report.

    Usage errors (unknown names, bad config, an unwritable `output`, an unreachable `db` or
    scheduler) raise ConfigError/ModelError before any run starts; failing runs are rows with
    `Failing=True`. Ctrl-C/SIGTERM raise :class:`FlowInterrupted` once the partial report (and
    `output`) is written. Every session is recorded in the results store.
    """
    env = Environment.load(home, create=create_home)
    launch = _Launch.check(
        env, executor=executor, parallel=parallel, scheduler=scheduler, verbosity=verbosity, output=output, db=db
    )
    request = FlowRequest(
        models=list(models),
        backends=list(backends),
        targets=list(targets),
        features=list(features),
        config=_config_values(config),
        until=until if isinstance(until, Stage) else Stage.parse(until),
        frontends=list(frontends),
        use_cache=use_cache,
    )
    launch.ready()
    session = Session.create(env, label)
    specs = _planned(launch, session, lambda: plan(env, request, session.id, session.dir / "runs"))
    _save_request(session, specs, "flow", request)
    return launch.run(session, specs, on_planned=on_planned, on_done=on_done, command=command)


def sweep(
    file: str | os.PathLike[str],
    *,
    home: str | os.PathLike[str] | None = None,
    create_home: bool | None = None,
    label: str = "",
    parallel: int = 1,
    executor: str = "auto",
    scheduler: str | None = None,
    use_cache: bool = True,
    output: Outputs = None,
    db: str | None = None,
    yes: bool = False,
    thresholds: Mapping[str, float] | None = None,
    verbosity: int = 0,
    on_planned: Callable[[list[RunSpec]], None] | None = None,
    on_done: Callable[[RunOutcome], None] | None = None,
    command: str = "",
) -> FlowResult:
    """Run a sweep file's matrix as one session, record it, and compare it with what the file's
    `compare:` names (its baseline by default). The file is checked completely first."""
    definition = load_sweep(file)
    check_size(definition.upper_bound(), yes)
    env = Environment.load(home, create=create_home)
    launch = _Launch.check(
        env, executor=executor, parallel=parallel, scheduler=scheduler, verbosity=verbosity, output=output, db=db
    )
    definition = replace(definition, request=replace(definition.request, use_cache=use_cache))
    launch.ready()
    session = Session.create(env, label or definition.label)
    specs = _planned(launch, session, lambda: plan_sweep(env, definition, session.id, session.dir / "runs"), yes)
    write_text(session.dir / SWEEP_FILE, definition.text)
    _save_request(session, specs, "sweep", definition.request)
    result = launch.run(session, specs, on_planned=on_planned, on_done=on_done, command=command, sweep=definition.name)
    return _gate(launch, definition, result, thresholds)


def _gate(launch: _Launch, definition: Sweep, result: FlowResult, thresholds: Mapping[str, float] | None) -> FlowResult:
    rules = definition.compare
    if not rules.against:
        return result
    from mlonmcu.report.compare import compare
    from mlonmcu.results import sides

    try:
        with launch.store() as store:
            new = sides.resolve(launch.env, store, str(result.session.id))
            base = sides.resolve(launch.env, store, rules.against, relative_to=new)
        result.comparison = compare(
            base.frame, new.frame, {**rules.thresholds, **(thresholds or {})}, base_name=base.name, new_name=new.name
        )
    except ConfigError as err:
        result.comparison_note = str(err)
    return result


def plan_only(
    file: str | os.PathLike[str], *, home: str | os.PathLike[str] | None = None, yes: bool = False
) -> tuple[Sweep, list[RunSpec], list[list[str]]]:
    """A sweep's matrix and, per run, the stages a run would restore from the cache (nothing runs)."""
    from mlonmcu.session.stages import cached_stages

    definition = load_sweep(file)
    check_size(definition.upper_bound(), yes)
    env = Environment.load(home)
    specs = plan_sweep(env, definition, 0, env.sessions_dir / "planned" / "runs")
    check_size(len(specs), yes)
    return definition, specs, [cached_stages(s) for s in specs]


def resume(
    session_id: str | int,
    *,
    home: str | os.PathLike[str] | None = None,
    parallel: int = 1,
    executor: str = "auto",
    scheduler: str | None = None,
    output: Outputs = None,
    db: str | None = None,
    thresholds: Mapping[str, float] | None = None,
    verbosity: int = 0,
    on_planned: Callable[[list[RunSpec]], None] | None = None,
    on_done: Callable[[RunOutcome], None] | None = None,
) -> FlowResult:
    """Finish an interrupted or crashed session in place: finished runs are kept, the others run,
    and the session's report (and its record in the store) becomes complete."""
    env = Environment.load(home)
    directory = session_dir(env, str(session_id))
    saved_file = directory / REQUEST_FILE
    try:
        saved = json.loads(saved_file.read_text())
    except (OSError, ValueError):
        raise ConfigError(f"session {directory.name} cannot be resumed: it has no readable {REQUEST_FILE}") from None
    launch = _Launch.check(
        env, executor=executor, parallel=parallel, scheduler=scheduler, verbosity=verbosity, output=output, db=db
    )
    definition: Sweep | None = None
    launch.ready()
    try:
        session = Session.reopen(env, directory)
    except BaseException:
        launch.abandon()
        raise
    try:
        request = FlowRequest.from_dict(saved["request"])
        if saved["kind"] == "sweep":
            definition = replace(
                parse_sweep((directory / SWEEP_FILE).read_text(), directory / SWEEP_FILE), request=request
            )
            specs = plan_sweep(env, definition, session.id, directory / "runs")
        else:
            specs = plan(env, request, session.id, directory / "runs")
        planned = {str(s.run): identity(base_row(s)) for s in specs}
        if planned != saved["identities"]:
            raise ConfigError(
                f"session {directory.name} cannot be resumed: its matrix plans differently now (models, "
                "model groups or the environment changed); start a new session"
            )
        report = directory / REPORT_FILE
        rows = read_rows(report) if report.is_file() else []
        kept = {int(r[col.RUN]): r for r in rows if not unfinished(r)}
    except BaseException:
        session.close()
        launch.abandon()
        raise
    todo = [s for s in specs if s.run not in kept]
    logger.info("session %s: %d run(s) finished before, %d to run", directory.name, len(kept), len(todo))
    result = launch.run(
        session,
        todo,
        on_planned=on_planned,
        on_done=on_done,
        kept=kept,
        sweep=definition.name if definition else "",
    )
    result.specs = specs
    return _gate(launch, definition, result, thresholds) if definition else result


def compare_sides(
    base: str,
    new: str,
    *,
    home: str | os.PathLike[str] | None = None,
    db: str | None = None,
    thresholds: Mapping[str, float] | None = None,
) -> Comparison:
    """`mlonmcu compare BASE NEW`: each side a session id, `latest`, a label, `baseline` or a
    report file. Thresholds: the NEW sweep file's `compare.thresholds`, then `thresholds`."""
    from mlonmcu.report.compare import compare
    from mlonmcu.results import sides

    env = Environment.load(home)
    store = open_store(env, db)
    try:
        if new == sides.BASELINE:
            raise ConfigError("NEW cannot be 'baseline': the baseline is what NEW is compared with")
        new_side = sides.resolve(env, store, new)
        base_side = sides.resolve(env, store, base, relative_to=new_side)
        limits: dict[str, float] = {}
        if new_side.sweep and (new.isdigit() or new == sides.LATEST):
            copy = session_dir(env, new) / SWEEP_FILE
            if copy.is_file():
                limits.update(parse_sweep(copy.read_text(), copy).compare.thresholds)
        limits.update(thresholds or {})
        return compare(base_side.frame, new_side.frame, limits, base_name=base_side.name, new_name=new_side.name)
    finally:
        store.close()


def report_inputs(
    env: Environment, store: ResultsStore, names: list[str], history: bool, thresholds: Mapping[str, float]
) -> dict[str, Any]:
    """What `report html`/`report plot` show: the named sessions' runs, their per-kernel profiles,
    the first compared with the last, and (with `history`) every stored run of the same identities."""
    import pandas as pd

    from mlonmcu.report.compare import compare, mark_regressions
    from mlonmcu.results import sides

    resolved: list[sides.Side] = []
    for name in names:
        resolved.append(sides.resolve(env, store, name, relative_to=resolved[-1] if resolved else None))
    current = pd.concat([s.frame for s in resolved], ignore_index=True) if resolved else pd.DataFrame()
    profiles: dict[str, pd.DataFrame] = {}
    for side in resolved:
        by_run = store.profiles(side.uid) if side.uid else {}
        for row in records(side.frame):
            table = by_run.get(int(row[col.RUN]))
            if table is not None and not table.empty:
                profiles[f"{describe(identity(row))} ({side.name})"] = table
    comparison = None
    if len(resolved) >= 2:
        first, last = resolved[0], resolved[-1]
        try:
            compared = compare(first.frame, last.frame, thresholds, base_name=first.name, new_name=last.name)
            comparison = compared.summary_table()
        except ConfigError as err:  # the page is still worth having without the comparison
            logger.warning("no comparison on the page: %s", err)
    past = None
    if history:
        wanted = {identity(r) for r in records(current)}
        stored = store.runs()
        past = mark_regressions(stored[stored[IDENTITY].isin(wanted)], thresholds) if not stored.empty else None
    title = "mlonmcu: " + ", ".join(s.name for s in resolved)
    return {"current": current, "history": past, "comparison": comparison, "profiles": profiles, "title": title}
