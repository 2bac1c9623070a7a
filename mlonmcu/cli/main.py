"""The `mlonmcu` command: parse, call mlonmcu.api / the library, print. Nothing else lives here."""

from __future__ import annotations

import errno
import gc
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from mlonmcu import __version__
from mlonmcu.errors import ConfigError, Interrupted, MlonmcuError, ModelError
from mlonmcu.results import recorder

EXIT_FAILED_RUNS = 1
EXIT_USAGE = 2
# a file or folder mlonmcu must write is not writable (read-only ~/.local, a root-owned HOME)
UNWRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM)
F = TypeVar("F", bound=Callable[..., Any])


def verbosity_options(func: F) -> F:
    """-v/-q on every command: what the orchestrator tells the terminal (see mlonmcu/logs.py)."""

    def configure(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        from mlonmcu import logs

        verbose = value if param.name == "verbose" else ctx.params.get("verbose", 0)
        quiet = value if param.name == "quiet" else ctx.params.get("quiet", False)
        logs.configure(max(-1, verbose - (1 if quiet else 0)))
        return value

    func = click.option(
        "-v", "--verbose", count=True, callback=configure, help="say more: -v cache and setup decisions, -vv commands"
    )(func)
    return click.option("-q", "--quiet", is_flag=True, callback=configure, help="errors only")(func)


def home_options(func: F) -> F:
    func = click.option(
        "-H",
        "--home",
        "home",
        type=click.Path(file_okay=False),
        default=None,
        help="mlonmcu home (default: $MLONMCU_HOME, else ~/.local/share/mlonmcu); must exist unless --create",
    )(func)
    func = click.option("--create", is_flag=True, help="create the HOME given with -H if it does not exist")(func)
    return verbosity_options(func)


def _environment(home: str | None, create: bool) -> Any:
    from mlonmcu.environment import Environment

    return Environment.load(home, create=True if create else None)


class Cli(click.Group):
    """Turns library errors into one clear line and the documented exit codes:
    0 all passed, 1 a run failed, 2 usage error, 130/143 interrupted (SIGINT/SIGTERM)."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except (ConfigError, ModelError) as err:
            click.echo(f"error: {err}", err=True)
            sys.exit(EXIT_USAGE)
        except MlonmcuError as err:
            click.echo(f"error: {err}", err=True)
            sys.exit(EXIT_FAILED_RUNS)
        except Interrupted as stop:
            click.echo(f"interrupted (signal {stop.signum})", err=True)
            sys.exit(stop.exit_code)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(130)
        except OSError as err:
            if err.errno not in UNWRITABLE:
                raise
            click.echo(
                f"error: cannot write {err.filename or 'a file'}: {err.strerror or err}; make it writable, or "
                "choose another HOME with `-H DIR --create` or $MLONMCU_HOME",
                err=True,
            )
            sys.exit(EXIT_USAGE)


@click.group(cls=Cli, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(__version__, prog_name="mlonmcu")
def cli() -> None:
    """Benchmark ML models on microcontrollers: models × backends × targets → one table.

    \b
    Quick start:
      mlonmcu setup                                   # install toolchains and simulators
      mlonmcu flow run kws_dscnn -b tvmaot -t spike -f validate
    """


@cli.command()
@click.argument("home", required=False, type=click.Path(file_okay=False))
@click.option("--template", default="default", show_default=True, help="environment template to render")
@click.option("--force", is_flag=True, help="overwrite an existing environment.yml")
@click.option("--list", "list_templates", is_flag=True, help="list the available templates")
@click.option(
    "-H", "--home", "home_option", type=click.Path(file_okay=False), help="the HOME, as every other command takes it"
)
@verbosity_options
def init(home: str | None, template: str, force: bool, list_templates: bool, home_option: str | None, **_: Any) -> None:
    """Create HOME/environment.yml from a template (HOME as argument or -H)."""
    from mlonmcu.environment import init_home, resolve_home
    from mlonmcu.environment.home import template_names

    if home and home_option and Path(home).resolve() != Path(home_option).resolve():
        raise click.UsageError(f"two homes given: {home} and -H {home_option}; give one")
    home = home or home_option
    if list_templates:
        click.echo("\n".join(template_names()))
        return
    path = init_home(resolve_home(home), template, force)
    click.echo(f"created {path}\nnext: mlonmcu setup -H {path.parent}")


@cli.command()
@home_options
@click.option("--list", "list_only", is_flag=True, help="show components, who needs them and whether installed")
@click.option(
    "--source",
    "sources",
    multiple=True,
    metavar="NAME=URL_OR_PATH[@REF]",
    help="take a git component from elsewhere: a mirror, a fork, a local checkout (repeatable)",
)
@click.argument("components", nargs=-1)
def setup(
    home: str | None, create: bool, list_only: bool, sources: tuple[str, ...], components: tuple[str, ...], **_: Any
) -> None:
    """Install components (default: everything the environment needs). Idempotent.

    Git components (tflm with flatbuffers and gemmlowp; cmsis_nn with cmsis) are cloned
    shallow from their official repositories at pinned refs, or from what --source names;
    MLONMCU_<NAME>_SRC (e.g. MLONMCU_TFLM_SRC=/srv/mirrors/tflite-micro) acts like --source
    for that component. A local work tree given without @REF is used as it is (deps/NAME
    links to it).
    """
    from mlonmcu.cli.output import console, print_frame
    from mlonmcu.setup import installer

    env = _environment(home, create)
    if list_only:
        import pandas as pd

        rows = [
            {
                "component": s.name,
                "needed by": ", ".join(s.needed_by),
                "installed": "yes" if s.installed else "no",
                "version": s.installed.version if s.installed else "",
                "location": s.installed.location if s.installed else "",
                "install with": "" if s.installed else s.hint,
            }
            for s in installer.status(env)
        ]
        print_frame(pd.DataFrame(rows), title=f"components of {env.home}")
        return
    pairs = {}
    for item in sources:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise ConfigError(
                f"bad --source '{item}': expected NAME=URL_OR_PATH[@REF], e.g. tflm=/srv/mirrors/tflite-micro"
            )
        pairs[name.strip()] = value.strip()
    done, failed = installer.install(
        env, components, report=lambda n, s: console.print(f"{n}: {s}", highlight=False), sources=pairs
    )
    for name, reason in failed.items():
        click.echo(f"error: {name}: {reason}", err=True)
    click.echo(f"{len(done)} component(s) ready, {len(failed)} failed; recorded in {env.deps_dir / 'deps.yml'}")
    if failed:
        sys.exit(EXIT_FAILED_RUNS)


@cli.command()
@home_options
def env(home: str | None, create: bool, **_: Any) -> None:
    """Show the environment: paths, enabled plugins, default config."""
    e = _environment(home, create)
    click.echo(f"home:      {e.home}\nfile:      {e.file}\ndeps:      {e.deps_dir}\nsessions:  {e.sessions_dir}")
    click.echo(f"cache:     {e.cache_dir}")
    click.echo("models:    " + "\n           ".join(str(d) for d in e.model_dirs))
    for kind, names in e.enabled.items():
        click.echo(f"{kind + ':':<10} {', '.join(names)}")
    for key, value in e.defaults().items():
        click.echo(f"config:    {key}={value}")


@cli.command()
@click.argument("names", nargs=-1)
@verbosity_options
def options(names: tuple[str, ...], **_: Any) -> None:
    """Every config key (`-c KEY=VALUE`) with its default and the values it accepts.

    NAMES limits the list to some backends, targets, features or components, e.g. `spike tvmaot`.
    """
    import pandas as pd

    from mlonmcu import registry
    from mlonmcu.cli.output import print_frame
    from mlonmcu.config import closest

    scopes = registry.option_scopes()
    for name in names:
        if name not in scopes:
            raise ConfigError(
                f"no plugin or component '{name}'{closest(name, scopes)}; valid: {', '.join(sorted(scopes))}"
            )
    rows = [
        {
            "key": f"{scope}.{o.name}",
            "default": "" if o.default is None else str(o.default),
            "valid": o.valid(),
            "help": o.help,
        }
        for scope, opts in sorted(scopes.items())
        if not names or scope in names
        for o in opts
    ]
    print_frame(pd.DataFrame(rows), title="config keys")


@cli.command()
@home_options
@click.option("--detailed", is_flag=True, help="also read each model: I/O, operators, MACs")
def models(home: str | None, create: bool, detailed: bool, **_: Any) -> None:
    """List the models found in the model directories (and model groups)."""
    import pandas as pd

    from mlonmcu import registry
    from mlonmcu.cli.output import print_frame
    from mlonmcu.models.model import frontend_name, list_models, model_groups

    e = _environment(home, create)
    rows = []
    for model in list_models(e.model_dirs):
        row = {"model": model.name, "size": model.path.stat().st_size, "path": str(model.path)}
        if detailed:
            try:
                info = registry.FRONTENDS.get(frontend_name(model.path))().describe(model.path)
                row.update(
                    {
                        "inputs": "; ".join(f"{t.name} {t.dtype}{t.shape}" for t in info.inputs),
                        "outputs": "; ".join(f"{t.name} {t.dtype}{t.shape}" for t in info.outputs),
                        "MACs": info.macs,
                        "operators": ", ".join(info.operators),
                    }
                )
            except MlonmcuError as err:
                row["error"] = str(err)
        rows.append(row)
    print_frame(pd.DataFrame(rows), title="models")
    for name, members in model_groups(e.model_dirs).items():
        click.echo(f"group {name}: {', '.join(members)}")


def db_option(func: F) -> F:
    return click.option(
        "--db",
        default=None,
        metavar="URL",
        help="results store: a SQLAlchemy URL, e.g. postgresql+psycopg://user@host/db "
        "(default: results.db in environment.yml, else HOME/results.db)",
    )(func)


def executor_options(func: F) -> F:
    func = click.option("--parallel", type=click.IntRange(min=1), default=1, show_default=True, help="runs at a time")(
        func
    )
    func = click.option(
        "--executor",
        type=click.Choice(["auto", "inline", "process", "dask"]),
        default="auto",
        show_default=True,
        help="where runs execute (dask: see --scheduler and docs/distributed.md)",
    )(func)
    return click.option("--scheduler", default=None, help="Dask scheduler address for --executor dask")(func)


def output_option(func: F) -> F:
    return click.option(
        "-o",
        "--output",
        type=click.Path(dir_okay=False),
        multiple=True,
        help="also write the report here: .csv, .xlsx, .md, .json or .html (checked before any run; "
        "give it again for more files)",
    )(func)


def _also(output: tuple[str, ...]) -> str:
    return "".join(f" and {o}" for o in dict.fromkeys(output))


def _report_session(call: Callable[..., Any], output: tuple[str, ...], quiet: bool = False) -> Any:
    """Run a session with progress, print its table; exit 1 on failed runs, 130/143 when interrupted."""
    from mlonmcu import api
    from mlonmcu.cli.output import RunProgress, print_table
    from mlonmcu.report import columns as col
    from mlonmcu.report.report import summary
    from mlonmcu.session.run import INTERRUPTED

    progress = RunProgress(quiet)
    try:
        result = call(on_planned=lambda specs: progress.start(len(specs)), on_done=lambda r: progress.advance(r.row))
    except api.FlowInterrupted as stop:
        progress.stop()
        partial = stop.result
        finished = sum(1 for r in partial.rows if r.get(col.REASON) != INTERRUPTED)
        print_table(*summary(partial.rows), title=f"session {partial.session.id} (interrupted)")
        click.echo(
            f"interrupted by signal {stop.signum}: {finished} of {len(partial.rows)} runs finished; "
            f"report: {partial.session.report_path}"
            + _also(output)
            + f"; finish it with `mlonmcu sweep resume {partial.session.id}`",
            err=True,
        )
        sys.exit(stop.exit_code)
    finally:
        progress.stop()
    print_table(*summary(result.rows), title=f"session {result.session.id}")
    if result.session.report_error:
        click.echo(f"error: {result.session.report_error}", err=True)
    if result.store_error:
        click.echo(f"error: results store: {result.store_error}", err=True)
    click.echo(f"report: {result.session.report_path}" + _also(output))
    if result.comparison is not None:
        _print_comparison(result.comparison)
    elif result.comparison_note:
        click.echo(f"compare: {result.comparison_note}")
    if result.failed:
        sys.exit(EXIT_FAILED_RUNS)
    if result.comparison is not None and result.comparison.exit_code():
        sys.exit(result.comparison.exit_code())
    return result


def _print_comparison(comparison: Any, fmt: str = "table") -> None:
    from mlonmcu.cli.output import print_frame

    if fmt == "md":
        click.echo(comparison.markdown())
        return
    if not comparison.events.empty:
        print_frame(comparison.events, title="changes")
    table = comparison.summary_table()
    shown = table[table["Status"] != "same"] if not table.empty else table
    if not shown.empty:
        print_frame(shown, title=f"{comparison.base} → {comparison.new}: metrics that changed")
    click.echo(f"compare {comparison.base} → {comparison.new}: {comparison.verdict()}")


FLOW_EPILOG = """\b
Exit codes: 0 every run passed; 1 a run failed or failed validation (the report is still
written); 2 usage error, before any run; 130 Ctrl-C, 143 SIGTERM (runs are stopped, the partial
report and -o are written, unfinished runs say 'interrupted')."""


def _flow_command(stage: str) -> click.Command:
    @click.command(
        name=stage,
        help=f"Run models through LOAD … {stage.upper()} and report.\n\n"
        "MODEL is a name from the model directories, a model group or a .tflite/.onnx path.",
        epilog=FLOW_EPILOG,
    )
    @click.argument("models", nargs=-1)
    @home_options
    @click.option("-b", "--backend", "backends", multiple=True, help="backend (repeatable), e.g. tvmaot")
    @click.option(
        "-t",
        "--target",
        "targets",
        multiple=True,
        help="target (repeatable), e.g. spike, qemu_rv32, host_x86",
    )
    @click.option(
        "-f", "--feature", "features", multiple=True, help="feature for every run (repeatable), e.g. validate"
    )
    @click.option(
        "-F",
        "--frontend",
        "frontends",
        multiple=True,
        help="model format (repeatable): tflite, onnx (a .tflite converted once with tf2onnx: "
        "`mlonmcu setup tf2onnx`); default: each model file's own",
    )
    @click.option(
        "-c",
        "--config",
        "config",
        multiple=True,
        metavar="KEY=VALUE",
        help="config, e.g. -c mlif.optimize=Os; a key given twice gives one run per value",
    )
    @executor_options
    @click.option("--label", default="", help="free text stored with the session and in the report")
    @output_option
    @click.option(
        "--no-cache", is_flag=True, help="recompute every stage (and replace its cache entry) instead of reusing it"
    )
    @db_option
    @click.option(
        "--resume",
        "resume_id",
        default=None,
        metavar="SESSION",
        help="finish an interrupted or crashed session (id or 'latest') instead of starting one; give no MODEL",
    )
    def command(
        models: tuple[str, ...],
        home: str | None,
        create: bool,
        verbose: int,
        quiet: bool,
        backends: tuple[str, ...],
        targets: tuple[str, ...],
        features: tuple[str, ...],
        frontends: tuple[str, ...],
        config: tuple[str, ...],
        parallel: int,
        executor: str,
        scheduler: str | None,
        label: str,
        output: tuple[str, ...],
        no_cache: bool,
        db: str | None,
        resume_id: str | None,
    ) -> None:
        recorder.prestart()  # it loads the results store's modules while this process loads the rest
        from mlonmcu import api

        common: dict[str, Any] = {
            "parallel": parallel,
            "executor": executor,
            "scheduler": scheduler,
            "output": output,
            "db": db,
        }
        verbosity = verbose - (1 if quiet else 0)
        if resume_id is not None:
            if models or backends or targets or features or frontends or config or label:
                raise ConfigError(
                    "--resume finishes a session as it was planned: give no MODEL, -b, -t, -f, -F, -c or --label"
                )
            _report_session(
                lambda **kw: api.resume(resume_id, home=home, verbosity=verbosity, **common, **kw), output, quiet
            )
            return
        if not models:
            raise ConfigError("no model given: name one (see `mlonmcu models`), a model group or a .tflite/.onnx path")
        _report_session(
            lambda **kw: api.flow(
                models,
                home=home,
                create_home=True if create else None,
                backends=backends,
                targets=targets,
                features=features,
                frontends=frontends,
                config=config,
                until=stage,
                label=label,
                use_cache=not no_cache,
                verbosity=verbosity,
                command=shlex.join(["mlonmcu", *sys.argv[1:]]),
                **common,
                **kw,
            ),
            output,
            quiet,
        )

    return command


@cli.group()
def flow() -> None:
    """Run the benchmark flow up to a stage: load, build, compile or run."""


for _stage in ("load", "build", "compile", "run"):
    flow.add_command(_flow_command(_stage))


@cli.command()
@home_options
@click.argument("action", type=click.Choice(["list", "show"]), default="list")
@click.argument("session_id", required=False)
def sessions(home: str | None, create: bool, action: str, session_id: str | None, **_: Any) -> None:
    """List sessions (a killed one shows as 'crashed'), or show one's report: ID or 'latest'."""
    import pandas as pd

    from mlonmcu.cli.output import print_frame, print_table
    from mlonmcu.report.report import read_rows, summary
    from mlonmcu.session.session import REPORT_FILE
    from mlonmcu.session.sessions import list_sessions, session_dir

    e = _environment(home, create)
    if action == "list":
        rows = [
            {k: s.get(k, "") for k in ("id", "status", "runs", "failed", "started", "label", "command")}
            for s in list_sessions(e)
        ]
        if not rows:
            click.echo(f"no sessions in {e.sessions_dir} yet")
            return
        print_frame(pd.DataFrame(rows), title=f"sessions in {e.sessions_dir}")
        return
    path = session_dir(e, session_id or "latest")
    report = path / REPORT_FILE
    if not report.is_file():
        raise ConfigError(f"session {path.name} has no report yet")
    print_table(*summary(read_rows(report)), title=f"session {path.name}")
    click.echo(f"report: {report}")


@cli.command()
@home_options
@click.option("--keep", type=click.IntRange(min=0), default=10, show_default=True, help="newest sessions to keep")
@click.option("--cache", "clear_cache", is_flag=True, help="also empty the cache (entries in use are kept)")
@click.option("--force", is_flag=True, help="wait for running sessions instead of skipping them")
def cleanup(home: str | None, create: bool, keep: int, clear_cache: bool, force: bool, **_: Any) -> None:
    """Delete old sessions (and optionally the cache). Running sessions are kept unless --force."""
    from mlonmcu.session.sessions import cleanup as remove_sessions
    from mlonmcu.session.sessions import clear_cache as empty_cache
    from mlonmcu.session.sessions import running_sessions

    e = _environment(home, create)
    result = remove_sessions(e, keep, force)
    removed = result.removed
    click.echo(f"removed {len(removed)} session(s)" + (f": {', '.join(map(str, removed))}" if removed else ""))
    if result.skipped:
        click.echo(f"kept running session(s) {', '.join(map(str, result.skipped))} (--force waits for them)")
    if clear_cache:
        running = running_sessions(e)
        if running and not force:
            click.echo(
                f"cache not emptied: session(s) {', '.join(map(str, running))} running (--force: entries in use stay)"
            )
            return
        cleared = empty_cache(e)
        kept = f"; {cleared.in_use} in use kept" if cleared.in_use else ""
        click.echo(f"emptied the cache: {cleared.removed} entries, {cleared.freed / 1e6:.1f} MB{kept}")


@cli.group()
def cache() -> None:
    """The stage cache (HOME/cache) and installed components (HOME/deps)."""


@cache.command("verify")
@home_options
def cache_verify(home: str | None, create: bool, **_: Any) -> None:
    """Check every cache entry and component against its manifest; remove damaged cache entries.

    A removed entry is computed again when a run needs it. A damaged component is reported with
    the `mlonmcu setup` command that reinstalls it (exit code 1).
    """
    from mlonmcu.session.sessions import verify_cache
    from mlonmcu.setup import installer

    e = _environment(home, create)
    result = verify_cache(e)
    for line in result.damaged:
        click.echo(f"damaged, removed: {line}")
    busy = f" ({result.in_use} in use, not checked)" if result.in_use else ""
    click.echo(f"cache: {result.checked} entries checked, {len(result.damaged)} damaged and removed{busy}")
    broken = installer.verify_components(e)
    for name, problem in broken.items():
        click.echo(f"component {name}: {problem}; run `mlonmcu setup {name}`")
    click.echo(f"components: {len(broken)} damaged")
    if broken:
        sys.exit(EXIT_FAILED_RUNS)


SWEEP_EPILOG = """\b
Exit codes: 0 every run passed and nothing regressed; 1 a run failed or failed validation;
2 usage error (the sweep file is checked before any run); 3 a metric regressed beyond its
threshold against the file's `compare: against:` (default: baseline, the last passing session
of this sweep); 130/143 interrupted (finish it with `mlonmcu sweep resume SESSION`)."""


def threshold_option(func: F) -> F:
    return click.option(
        "--threshold",
        "thresholds",
        multiple=True,
        metavar="'METRIC=PCT'",
        help="allowed increase of a report column, e.g. --threshold 'Total ROM=1%' (repeatable; "
        "defaults: exact counters, ROM and RAM 0%, Run Time [s] 10% on the minimum of mlif.repeat)",
    )(func)


def _thresholds(items: tuple[str, ...]) -> dict[str, float]:
    from mlonmcu.session.sweep import check_metric, parse_threshold

    result = {}
    for item in items:
        metric, sep, value = item.rpartition("=")
        if not sep or not metric.strip():
            raise ConfigError(f"bad --threshold '{item}': expected METRIC=PCT, e.g. 'Run Instructions=0%'")
        result[check_metric(metric.strip())] = parse_threshold(value)
    return result


@cli.group()
def sweep() -> None:
    """Named matrices in a YAML file, run again and again (see environments/sweeps/, docs/nightly.md)."""


@sweep.command("run", epilog=SWEEP_EPILOG)
@click.argument("file", type=click.Path(dir_okay=False))
@home_options
@executor_options
@click.option("--label", default="", help="stored with the session (e.g. the commit under test); default: the file's")
@output_option
@click.option("--no-cache", is_flag=True, help="recompute every stage instead of reusing cached ones")
@click.option("--yes", is_flag=True, help=f"run a matrix of more than {10_000:,} runs")
@threshold_option
@db_option
def sweep_run(file: str, label: str, no_cache: bool, yes: bool, **options: Any) -> None:
    """Run FILE's matrix as one session, record it in the results store, compare it with its baseline."""
    recorder.prestart()
    from mlonmcu import api

    home, common = _session_options(options)
    _report_session(
        lambda **kw: api.sweep(
            file,
            home=home,
            create_home=True if options["create"] else None,
            label=label,
            use_cache=not no_cache,
            yes=yes,
            command=shlex.join(["mlonmcu", *sys.argv[1:]]),
            **common,
            **kw,
        ),
        options["output"],
        options["quiet"],
    )


def _session_options(options: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """HOME and the api keywords the session commands share (executor, output, store, gate)."""
    keys = ("parallel", "executor", "scheduler", "output", "db")
    common = {k: options[k] for k in keys}
    common["thresholds"] = _thresholds(options["thresholds"])
    common["verbosity"] = options["verbose"] - (1 if options["quiet"] else 0)
    return options["home"], common


@sweep.command("plan")
@click.argument("file", type=click.Path(dir_okay=False))
@home_options
@click.option("--yes", is_flag=True, help=f"plan a matrix of more than {10_000:,} runs")
def sweep_plan(file: str, home: str | None, create: bool, yes: bool, **_: Any) -> None:
    """Print FILE's matrix and which stages each run would take from the cache; runs nothing."""
    import pandas as pd

    from mlonmcu import api
    from mlonmcu.cli.output import print_frame
    from mlonmcu.session.run import config_label

    definition, specs, cached = api.plan_only(file, home=home, yes=yes)
    rows = [
        {
            "Run": s.run,
            "Model": s.model.name,
            "Backend": s.backend,
            "Target": s.target,
            "Features": ",".join(s.features),
            "Config": config_label(s.user_config),
            "Cached Stages": ",".join(c) or "-",
            "Missing": s.missing.splitlines()[0] if s.missing else "",
        }
        for s, c in zip(specs, cached, strict=True)
    ]
    frame = pd.DataFrame(rows)
    if not frame.empty and not frame["Missing"].astype(bool).any():
        frame = frame.drop(columns="Missing")
    print_frame(frame, title=f"sweep {definition.name}: {len(specs)} runs")
    stages = definition.request.until.name.lower()
    complete = sum(1 for c in cached if c and c[-1] == stages)
    click.echo(f"{len(specs)} runs; {complete} fully cached (up to {stages}), {len(specs) - complete} to compute")


@sweep.command("resume", epilog=SWEEP_EPILOG)
@click.argument("session_id", metavar="SESSION")
@home_options
@executor_options
@output_option
@threshold_option
@db_option
def sweep_resume(session_id: str, **options: Any) -> None:
    """Finish an interrupted or crashed session (id or 'latest') in place: finished runs are kept."""
    recorder.prestart()
    from mlonmcu import api

    home, common = _session_options(options)
    _report_session(lambda **kw: api.resume(session_id, home=home, **common, **kw), options["output"], options["quiet"])


@cli.command(
    "compare",
    epilog="""\b
Exit codes: 0 no regression; 1 a run of NEW failed or failed validation (wins over 3);
2 usage error (e.g. no run in common); 3 a metric regressed beyond its threshold.""",
)
@click.argument("base")
@click.argument("new")
@home_options
@threshold_option
@click.option("--format", "fmt", type=click.Choice(["table", "md"]), default="table", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None, help="also write the Markdown here")
@db_option
def compare_cmd(
    base: str,
    new: str,
    home: str | None,
    create: bool,
    thresholds: tuple[str, ...],
    fmt: str,
    output: str | None,
    db: str | None,
    **_: Any,
) -> None:
    """Compare runs of BASE and NEW, aligned by identity (model, backend, target, features, config).

    \b
    Each side: a session id or 'latest' (this HOME), a label (the newest session with it in the
    results store), 'baseline' (as BASE: the last passing session of NEW's sweep) or a report .csv.
    New failures, fixes, validation and model changes, runs that appeared or disappeared come
    first, then every metric old → new with its ratio.
    """
    from pathlib import Path

    from mlonmcu import api
    from mlonmcu.atomic import write_text

    comparison = api.compare_sides(base, new, home=home, db=db, thresholds=_thresholds(thresholds))
    _print_comparison(comparison, fmt)
    if output:
        write_text(Path(output), comparison.markdown())
    sys.exit(comparison.exit_code())


@cli.group()
def results() -> None:
    """The results store: every finished run of every session (HOME/results.db or --db)."""


@results.command("import")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@home_options
@click.option("--label", default="", help="label for reports that have none")
@db_option
def results_import(
    paths: tuple[str, ...], home: str | None, create: bool, label: str, db: str | None, **_: Any
) -> None:
    """Load sessions (HOME/sessions/<id> directories) or report .csv files into the store."""
    from pathlib import Path

    from mlonmcu import api
    from mlonmcu.results.transfer import import_report

    env = _environment(home, create)
    with api.open_store(env, db) as store:
        for path in paths:
            record = import_report(store, Path(path), label=label)
            click.echo(f"imported {path} as {record.uid}")


@results.command("export")
@home_options
@click.option(
    "--since", default=None, metavar="DATE", help="only sessions started on or after DATE (ISO, e.g. 2026-11-01)"
)
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True, help=".csv, .parquet or .json")
@db_option
def results_export(home: str | None, create: bool, since: str | None, output: str, db: str | None, **_: Any) -> None:
    """Write the stored runs (all their report columns, identity, session and versions) to a file."""
    from pathlib import Path

    from mlonmcu import api
    from mlonmcu.results.transfer import export_runs

    env = _environment(home, create)
    with api.open_store(env, db) as store:
        count = export_runs(store, Path(output), since=_date(since) if since else None)
    click.echo(f"wrote {count} run(s) to {output}")


def _date(text: str) -> Any:
    from datetime import UTC, datetime

    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise ConfigError(f"bad date '{text}': expected ISO 8601, e.g. 2026-11-01 or 2026-11-01T03:00") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


@results.command("list")
@home_options
@click.option("--sweep", "sweep_name", default=None, help="only sessions of this sweep")
@db_option
def results_list(home: str | None, create: bool, sweep_name: str | None, db: str | None, **_: Any) -> None:
    """The sessions in the store, oldest first."""
    from mlonmcu import api
    from mlonmcu.cli.output import print_frame

    env = _environment(home, create)
    with api.open_store(env, db) as store:
        frame = store.sessions(sweep=sweep_name)
    if frame.empty:
        click.echo(f"no sessions in {store.url}")
        return
    print_frame(frame[["session", "host", "sweep", "label", "status", "runs", "failed", "started"]], title=store.url)


@cli.group()
def report() -> None:
    """Figures and the HTML dashboard from sessions or the results history."""


def _report_inputs(
    env: Any, db: str | None, sessions_: tuple[str, ...], history: bool, thresholds: dict[str, float]
) -> Any:
    from mlonmcu import api

    with api.open_store(env, db) as store:
        return api.report_inputs(env, store, list(sessions_) or ["latest"], history, thresholds)


@report.command("html")
@click.argument("sessions_", metavar="[SESSION]...", nargs=-1)
@home_options
@click.option("--history", is_flag=True, help="add trend lines over every stored session of the same runs")
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True, help="the page, e.g. site/index.html")
@threshold_option
@db_option
def report_html(
    sessions_: tuple[str, ...],
    home: str | None,
    create: bool,
    history: bool,
    output: str,
    thresholds: tuple[str, ...],
    db: str | None,
    **_: Any,
) -> None:
    """One self-contained page (works offline): bars, Pareto fronts, trends, profiles, compare table.

    SESSION: an id, 'latest' (default), a label or a report .csv; with two or more, the first
    is compared with the last.
    """
    from pathlib import Path

    from mlonmcu.report.dashboard import write_dashboard

    env = _environment(home, create)
    inputs = _report_inputs(env, db, sessions_, history, _thresholds(thresholds))
    path = write_dashboard(Path(output), **inputs)
    click.echo(f"dashboard: {path}")


@report.command("plot")
@click.argument("sessions_", metavar="[SESSION]...", nargs=-1)
@home_options
@click.option("--history", is_flag=True, help="also the trend figures over the stored history")
@click.option("-o", "--output", type=click.Path(file_okay=False), required=True, help="directory for the figures")
@click.option("--format", "fmt", type=click.Choice(["svg", "png", "pdf"]), default="svg", show_default=True)
@db_option
def report_plot(
    sessions_: tuple[str, ...],
    home: str | None,
    create: bool,
    history: bool,
    output: str,
    fmt: str,
    db: str | None,
    **_: Any,
) -> None:
    """The dashboard's figures as files, for papers."""
    from pathlib import Path

    from mlonmcu.report.plots import figures, write_figures

    env = _environment(home, create)
    inputs = _report_inputs(env, db, sessions_, history, {})
    paths = write_figures(figures(inputs["current"], inputs["history"], inputs["profiles"]), Path(output), fmt)
    for path in paths:
        click.echo(str(path))
    click.echo(f"{len(paths)} figure(s) in {output}")


def main() -> None:
    try:
        cli(prog_name="mlonmcu")
    finally:
        # what is alive now lives until exit: the interpreter's last collection need not walk it
        # (pandas & co. make that walk ~0.25 s, a tenth of a cached rerun)
        gc.freeze()
