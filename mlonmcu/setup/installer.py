"""`mlonmcu setup`: install, locate and list components for an environment."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from mlonmcu import registry
from mlonmcu.entry import Entry
from mlonmcu.environment import Environment
from mlonmcu.errors import ConfigError, MlonmcuError, SetupError
from mlonmcu.setup.component import Component, DirectoryComponent
from mlonmcu.setup.deps import Installed, record
from mlonmcu.setup.git import GitComponent, split_source

logger = logging.getLogger("mlonmcu.setup")


@dataclass
class ComponentStatus:
    name: str
    help: str
    needed_by: list[str]
    installed: Installed | None
    hint: str


def component(env: Environment, name: str) -> Component:
    cls = registry.COMPONENTS.get(name)
    return cls(env.deps_dir, env.components.get(name))


KIND_REGISTRIES = {
    "backends": registry.BACKENDS,
    "platforms": registry.PLATFORMS,
    "targets": registry.TARGETS,
    "features": registry.FEATURES,
    "frontends": registry.FRONTENDS,
}


def requirements(kind: str, name: str) -> tuple[str, ...]:
    return tuple(KIND_REGISTRIES[kind].get(name).requires)


def optional_components(kind: str, name: str) -> tuple[str, ...]:
    return tuple(KIND_REGISTRIES[kind].get(name).optional)


def needed_by(env: Environment) -> dict[str, list[str]]:
    """Component → the enabled plugins that need it."""
    users: dict[str, list[str]] = {}
    enabled = dict(env.enabled) | {"frontends": registry.FRONTENDS.names()}
    for kind, names in enabled.items():
        for name in names:
            for comp in requirements(kind, name):
                users.setdefault(comp, []).append(name)
            for comp in optional_components(kind, name):
                users.setdefault(comp, []).append(f"{name} (optional)")
    return users


def status(env: Environment) -> list[ComponentStatus]:
    users = needed_by(env)
    names = list(dict.fromkeys([*env.components, *users]))
    result = []
    for name in names:
        comp = component(env, name)
        result.append(ComponentStatus(name, comp.help, users.get(name, []), comp.locate(), comp.hint()))
    return result


def verify_components(env: Environment) -> dict[str, str]:
    """Components mlonmcu installed itself, checked file by file: name → what is wrong."""
    broken = {}
    for name in dict.fromkeys([*env.components, *needed_by(env)]):
        comp = component(env, name)
        if isinstance(comp, DirectoryComponent) and comp.manages_directory():
            problem = comp.entry.verify(thorough=True)
            if problem:
                broken[name] = f"{comp.directory} is damaged ({problem})"
    return broken


def default_components(env: Environment) -> list[str]:
    """What a plain `mlonmcu setup` installs: the listed components plus what enabled plugins
    need, except components fetched from the network, which are installed when listed or named."""
    needed = [name for name in needed_by(env) if not registry.COMPONENTS.get(name).on_request]
    return list(dict.fromkeys([*env.components, *needed]))


def install(
    env: Environment,
    names: Iterable[str] | None = None,
    report: Callable[[str, str], None] | None = None,
    sources: dict[str, str] | None = None,
) -> tuple[list[Installed], dict[str, str]]:
    """Install (idempotently) and record components; returns what worked and per-name errors.

    `sources` points git components elsewhere: NAME → URL_OR_PATH[@REF] (a mirror, a fork, a
    local checkout); $MLONMCU_<NAME>_SRC does the same for names it does not mention (and
    a plain `setup` then installs that component too).
    """
    given = dict(sources or {})
    sources = {**environment_sources(), **given}
    names = list(names) if names else [*default_components(env), *sources]
    names += [name for name in given if name not in names]
    names = list(dict.fromkeys(names))
    for name in list(names):  # unknown names are usage errors before anything is installed
        names += [c for c in registry.COMPONENTS.get(name).companions if c not in names]
    log = log_path(env)
    env.deps_dir.mkdir(parents=True, exist_ok=True)
    # one setup at a time per HOME: a second one waits, then finds everything installed
    lock = Entry(env.deps_dir / "setup", "setup")
    with lock.locked(wait=False) as free:
        if free:
            return _install_all(env, names, sources, log, report)
    if report:
        report("setup", f"waiting for another `mlonmcu setup` on {env.home}")
    with lock.locked():
        return _install_all(env, names, sources, log, report)


def _install_all(
    env: Environment,
    names: list[str],
    sources: dict[str, str],
    log: Path,
    report: Callable[[str, str], None] | None,
) -> tuple[list[Installed], dict[str, str]]:
    done: list[Installed] = []
    failed: dict[str, str] = {}
    for name in names:
        if report:
            report(name, "checking")
        try:
            comp = component(env, name)
            if name in sources:
                if not isinstance(comp, GitComponent):
                    raise ConfigError(f"--source {name}=...: {name} is not a git component")
                comp.use_source(*split_source(sources[name]))
            found = comp.ensure(log)
        except ConfigError:
            raise
        except MlonmcuError as err:
            failed[name] = f"{err} (log: {log})"
            if report:
                report(name, "failed")
            continue
        record(env.deps_dir, found)
        done.append(found)
        if report:
            report(name, f"ok {found.version}")
    return done, failed


def source_variable(name: str) -> str:
    return f"MLONMCU_{name.upper()}_SRC"


def environment_sources() -> dict[str, str]:
    """Sources given as environment variables (labs set them once for every HOME they create)."""
    found = {}
    for cls in registry.COMPONENTS:
        value = os.environ.get(source_variable(cls.name), "").strip()
        if value and issubclass(cls, GitComponent):
            found[cls.name] = value
    return found


def check(env: Environment, names: Iterable[str]) -> tuple[dict[str, Installed], dict[str, str]]:
    """Locate components for a run: found ones with versions, missing ones with the fix."""
    found: dict[str, Installed] = {}
    missing: dict[str, str] = {}
    for name in dict.fromkeys(names):
        comp = component(env, name)
        located = comp.locate()
        logger.debug("component %s: %s", name, located.location if located else comp.problem or "not installed")
        if located is None:
            missing[name] = f"{comp.problem}; {comp.hint()}" if comp.problem else comp.hint()
        else:
            found[name] = located
    return found, missing


def missing_message(missing: dict[str, str]) -> str:
    names = ", ".join(missing)
    if len(missing) == 1:
        hint = next(iter(missing.values()))
        problem, _, fix = hint.rpartition("; ")
        command, _, alternative = fix.partition("  (")
        where = f" ({problem})" if problem else ""
        return f"missing component {names}{where}: run `{command}`" + (f" ({alternative}" if alternative else "")
    return f"missing components {names}: run `mlonmcu setup {' '.join(missing)}`"


def log_path(env: Environment) -> Path:
    return env.deps_dir / "setup.log"


__all__ = ["SetupError", "check", "install", "missing_message", "status"]
