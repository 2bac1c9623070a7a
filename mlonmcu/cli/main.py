"""The `mlonmcu` command: parse, call mlonmcu.api / the library, print. Nothing else lives here."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from mlonmcu import __version__
from mlonmcu.errors import ConfigError, MlonmcuError, ModelError

EXIT_FAILED_RUNS = 1
EXIT_USAGE = 2

HOME_OPTION = click.option(
    "-H",
    "--home",
    "home",
    type=click.Path(file_okay=False),
    default=None,
    help="mlonmcu home (default: $MLONMCU_HOME, else ~/.local/share/mlonmcu)",
)


class Cli(click.Group):
    """Turns library errors into one clear line and the documented exit codes."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except (ConfigError, ModelError) as err:
            click.echo(f"error: {err}", err=True)
            sys.exit(EXIT_USAGE)
        except MlonmcuError as err:
            click.echo(f"error: {err}", err=True)
            sys.exit(EXIT_FAILED_RUNS)


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
def init(home: str | None, template: str, force: bool, list_templates: bool) -> None:
    """Create HOME/environment.yml from a template."""
    from mlonmcu.environment import init_home, resolve_home
    from mlonmcu.environment.home import template_names

    if list_templates:
        click.echo("\n".join(template_names()))
        return
    path = init_home(resolve_home(home), template, force)
    click.echo(f"created {path}\nnext: mlonmcu setup -H {path.parent}")


@cli.command()
@HOME_OPTION
@click.option("--list", "list_only", is_flag=True, help="show components, who needs them and whether installed")
@click.option(
    "--source",
    "sources",
    multiple=True,
    metavar="NAME=URL_OR_PATH[@REF]",
    help="take a git component from elsewhere: a mirror, a fork, a local checkout (repeatable)",
)
@click.argument("components", nargs=-1)
def setup(home: str | None, list_only: bool, sources: tuple[str, ...], components: tuple[str, ...]) -> None:
    """Install components (default: everything the environment needs). Idempotent.

    Git components (tflm, flatbuffers, gemmlowp) are cloned shallow from their official
    repositories at pinned refs, or from what --source names; MLONMCU_<NAME>_SRC (e.g.
    MLONMCU_TFLM_SRC=/srv/mirrors/tflite-micro) acts like --source for that component.
    A local work tree given without @REF is used as it is (deps/NAME links to it).
    """
    from mlonmcu.cli.output import console, print_frame
    from mlonmcu.environment import Environment
    from mlonmcu.setup import installer

    env = Environment.load(home)
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
@HOME_OPTION
def env(home: str | None) -> None:
    """Show the environment: paths, enabled plugins, default config."""
    from mlonmcu.environment import Environment

    e = Environment.load(home)
    click.echo(f"home:      {e.home}\nfile:      {e.file}\ndeps:      {e.deps_dir}\nsessions:  {e.sessions_dir}")
    click.echo(f"cache:     {e.cache_dir}")
    click.echo("models:    " + "\n           ".join(str(d) for d in e.model_dirs))
    for kind, names in e.enabled.items():
        click.echo(f"{kind + ':':<10} {', '.join(names)}")
    for key, value in e.defaults().items():
        click.echo(f"config:    {key}={value}")


@cli.command()
@HOME_OPTION
@click.option("--detailed", is_flag=True, help="also read each model: I/O, operators, MACs")
def models(home: str | None, detailed: bool) -> None:
    """List the models found in the model directories (and model groups)."""
    import pandas as pd

    from mlonmcu.cli.output import print_frame
    from mlonmcu.environment import Environment
    from mlonmcu.models.frontend import TfliteFrontend
    from mlonmcu.models.model import list_models, model_groups

    e = Environment.load(home)
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


def _flow_command(stage: str) -> click.Command:
    @click.command(
        name=stage,
        help=f"Run models through LOAD … {stage.upper()} and report.\n\n"
        "MODEL is a name from the model directories, a model group or a .tflite path.",
    )
    @click.argument("models", nargs=-1, required=True)
    @HOME_OPTION
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
        help="also write the report here: .csv, .xlsx, .md, .json or .html",
    )
    @click.option("--no-cache", is_flag=True, help="recompute every stage instead of reusing cached outputs")
    def command(
        models: tuple[str, ...],
        home: str | None,
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
        from mlonmcu.report.report import summary

        if output:
            from mlonmcu.report.report import FORMATS

            if Path(output).suffix.lower() not in FORMATS:
                raise ConfigError(f"cannot write report '{output}': use one of {', '.join(FORMATS)}")
        progress = RunProgress()
        try:
            result = api.flow(
                models,
                home=home,
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
                on_planned=lambda specs: progress.start(len(specs)),
                on_done=lambda r: progress.advance(r.row),
                command=shlex.join(["mlonmcu", *sys.argv[1:]]),
            )
        finally:
            progress.stop()
        print_frame(summary(result.report), title=f"session {result.session.id}")
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
@HOME_OPTION
@click.argument("action", type=click.Choice(["list", "show"]), default="list")
@click.argument("session_id", required=False)
def sessions(home: str | None, action: str, session_id: str | None) -> None:
    """List sessions, or show one session's report (ID, or 'latest')."""
    import pandas as pd

    from mlonmcu.cli.output import print_frame
    from mlonmcu.environment import Environment
    from mlonmcu.report.report import read, summary
    from mlonmcu.session.session import REPORT_FILE, list_sessions, session_dir

    e = Environment.load(home)
    if action == "list":
        rows = [
            {k: s.get(k, "") for k in ("id", "status", "runs", "failed", "started", "label", "command")}
            for s in list_sessions(e)
        ]
        print_frame(pd.DataFrame(rows), title=f"sessions in {e.sessions_dir}")
        return
    path = session_dir(e, session_id or "latest")
    report = path / REPORT_FILE
    if not report.is_file():
        raise ConfigError(f"session {path.name} has no report yet")
    print_frame(summary(read(report)), title=f"session {path.name}")
    click.echo(f"report: {report}")


@cli.command()
@HOME_OPTION
@click.option("--keep", type=click.IntRange(min=0), default=10, show_default=True, help="newest sessions to keep")
@click.option("--cache", "clear_cache", is_flag=True, help="also empty the stage cache")
def cleanup(home: str | None, keep: int, clear_cache: bool) -> None:
    """Delete old sessions (and optionally the cache)."""
    from mlonmcu.environment import Environment
    from mlonmcu.session.cache import StageCache
    from mlonmcu.session.session import cleanup as remove_sessions

    e = Environment.load(home)
    removed = remove_sessions(e, keep)
    click.echo(f"removed {len(removed)} session(s)" + (f": {', '.join(map(str, removed))}" if removed else ""))
    if clear_cache:
        cache = StageCache(e.cache_dir)
        size = cache.size()
        cache.clear()
        click.echo(f"emptied the cache ({size / 1e6:.1f} MB)")


def main() -> None:
    cli(prog_name="mlonmcu")
