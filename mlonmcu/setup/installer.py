"""`mlonmcu setup`: install, locate and list components for an environment."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlonmcu import registry
from mlonmcu.environment import Environment
from mlonmcu.errors import ConfigError, MlonmcuError, SetupError
from mlonmcu.setup.component import Component
from mlonmcu.setup.deps import Installed, record
from mlonmcu.setup.git import GitComponent, split_source


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


def _plugin(kind: str, name: str) -> Any:
    registries = {
        "backends": registry.BACKENDS,
        "platforms": registry.PLATFORMS,
        "targets": registry.TARGETS,
        "features": registry.FEATURES,
        "frontends": registry.FRONTENDS,
    }
    return registries[kind].get(name)


def requirements(kind: str, name: str) -> tuple[str, ...]:
    return tuple(_plugin(kind, name).requires)


def optional_components(kind: str, name: str) -> tuple[str, ...]:
    return tuple(getattr(_plugin(kind, name), "optional", ()))


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
    log = env.deps_dir / "setup.log"
    env.deps_dir.mkdir(parents=True, exist_ok=True)
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
        if located is None:
            missing[name] = comp.hint()
        else:
            found[name] = located
    return found, missing


def missing_message(missing: dict[str, str]) -> str:
    names = ", ".join(missing)
    return (
        f"missing component(s) {names}: run `{next(iter(missing.values()))}`"
        if len(missing) == 1
        else (f"missing components {names}: run `mlonmcu setup {' '.join(missing)}`")
    )


def log_path(env: Environment) -> Path:
    return env.deps_dir / "setup.log"


__all__ = ["SetupError", "check", "install", "missing_message", "status"]
