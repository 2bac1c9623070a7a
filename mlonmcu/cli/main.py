"""The `mlonmcu` command: parse, call mlonmcu.api / the library, print. Nothing else lives here."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from mlonmcu import __version__
from mlonmcu.errors import ConfigError, Interrupted, MlonmcuError, ModelError

EXIT_FAILED_RUNS = 1
EXIT_USAGE = 2
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
@verbosity_options
def init(home: str | None, template: str, force: bool, list_templates: bool, **_: Any) -> None:
    """Create HOME/environment.yml from a template."""
    from mlonmcu.environment import init_home, resolve_home
    from mlonmcu.environment.home import template_names

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

    Git components (tflm, flatbuffers, gemmlowp) are cloned shallow from their official
    repositories at pinned refs, or from what --source names; MLONMCU_<NAME>_SRC (e.g.
    MLONMCU_TFLM_SRC=/srv/mirrors/tflite-micro) acts like --source for that component.
    A local work tree given without @REF is used as it is (deps/NAME links to it).
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

    from mlonmcu.cli.output import print_frame
    from mlonmcu.models.frontend import TfliteFrontend
    from mlonmcu.models.model import list_models, model_groups

    e = _environment(home, create)
    rows = []
    for model in list_models(e.model_dirs):
        row = {"model": model.name, "size": model.path.stat().st_size, "path": str(model.path)}
        if detailed:
            try:
                info = TfliteFrontend().describe(model.path)
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


FLOW_EPILOG = """\b
Exit codes: 0 every run passed; 1 a run failed or failed validation (the report is still
written); 2 usage error, before any run; 130 Ctrl-C, 143 SIGTERM (runs are stopped, the partial
report and -o are written, unfinished runs say 'interrupted')."""


def _flow_command(stage: str) -> click.Command:
    @click.command(
        name=stage,
        help=f"Run models through LOAD … {stage.upper()} and report.\n\n"
        "MODEL is a name from the model directories, a model group or a .tflite path.",
        epilog=FLOW_EPILOG,
    )
    @click.argument("models", nargs=-1, required=True)
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
        "-c",
        "--config",
        "config",
        multiple=True,
        metavar="KEY=VALUE",
        help="config, e.g. -c mlif.optimize=Os; a key given twice gives one run per value",
    )
    @click.option("--parallel", type=click.IntRange(min=1), default=1, show_default=True, help="runs at a time")
    @click.option(
        "--executor",
        type=click.Choice(["auto", "inline", "process", "dask"]),
        default="auto",
        show_default=True,
        help="where runs execute (dask: see --scheduler)",
    )
    @click.option("--scheduler", default=None, help="Dask scheduler address for --executor dask")
    @click.option("--label", default="", help="free text stored with the session and in the report")
    @click.option(
        "-o",
        "--output",
        type=click.Path(dir_okay=False),
        default=None,
        help="also write the report here: .csv, .xlsx, .md, .json or .html (checked before any run)",
    )
    @click.option(
        "--no-cache", is_flag=True, help="recompute every stage (and replace its cache entry) instead of reusing it"
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
        config: tuple[str, ...],
        parallel: int,
        executor: str,
        scheduler: str | None,
        label: str,
        output: str | None,
        no_cache: bool,
    ) -> None:
        from mlonmcu import api
        from mlonmcu.cli.output import RunProgress, print_frame
        from mlonmcu.report import columns as col
        from mlonmcu.report.report import summary
        from mlonmcu.session.run import INTERRUPTED

        progress = RunProgress()
        try:
            result = api.flow(
                models,
                home=home,
                create_home=True if create else None,
                backends=backends,
                targets=targets,
                features=features,
                config=config,
                until=stage,
                parallel=parallel,
                label=label,
                executor=executor,
                scheduler=scheduler,
                use_cache=not no_cache,
                output=output,
                verbosity=verbose - (1 if quiet else 0),
                on_planned=lambda specs: progress.start(len(specs)),
                on_done=lambda r: progress.advance(r.row),
                command=shlex.join(["mlonmcu", *sys.argv[1:]]),
            )
        except api.FlowInterrupted as stop:
            progress.stop()
            partial = stop.result
            finished = int((partial.report[col.REASON] != INTERRUPTED).sum())
            print_frame(summary(partial.report), title=f"session {partial.session.id} (interrupted)")
            click.echo(
                f"interrupted by signal {stop.signum}: {finished} of {len(partial.specs)} runs finished; "
                f"report: {partial.session.report_path}" + (f" and {output}" if output else ""),
                err=True,
            )
            sys.exit(stop.exit_code)
        finally:
            progress.stop()
        print_frame(summary(result.report), title=f"session {result.session.id}")
        if result.session.report_error:
            click.echo(f"error: {result.session.report_error}", err=True)
        click.echo(f"report: {result.session.report_path}" + (f" and {output}" if output else ""))
        if result.failed:
            sys.exit(EXIT_FAILED_RUNS)

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

    from mlonmcu.cli.output import print_frame
    from mlonmcu.report.report import read, summary
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
    print_frame(summary(read(report)), title=f"session {path.name}")
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


def main() -> None:
    cli(prog_name="mlonmcu")
