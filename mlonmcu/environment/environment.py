"""The environment: where things live, what is enabled, default config (HOME/environment.yml)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from mlonmcu.atomic import probe_directory
from mlonmcu.config import closest
from mlonmcu.data import bundled_models_dir
from mlonmcu.environment.home import DEFAULT_TEMPLATE, ENV_FILE, init_home, resolve_home, unwritable_home
from mlonmcu.errors import ConfigError

BUNDLED = "@bundled"
_TOP_KEYS = ("version", "paths", "components", "backends", "platforms", "targets", "features", "config", "results")
_PATH_KEYS = ("deps", "sessions", "cache", "models")
_KINDS = ("backends", "platforms", "targets", "features")


@dataclass
class Environment:
    """A validated environment.yml plus the HOME it belongs to."""

    home: Path
    deps_dir: Path
    sessions_dir: Path
    cache_dir: Path
    model_dirs: list[Path]
    components: dict[str, dict[str, Any]]
    enabled: dict[str, list[str]]
    config: dict[str, Any] = field(default_factory=dict)
    results_db: str = ""  # results.db: a SQLAlchemy URL; "" = HOME/results.db

    @property
    def file(self) -> Path:
        return self.home / ENV_FILE

    @classmethod
    def load(cls, home: str | os.PathLike[str] | None = None, create: bool | None = None) -> Environment:
        """Load HOME/environment.yml.

        Only the per-user default HOME is created on first use; a HOME named with `-H` or
        $MLONMCU_HOME must exist (a typo would otherwise silently start an empty one) unless
        `create` is set (`--create`, or `mlonmcu init`).
        """
        root = resolve_home(home)
        path = root / ENV_FILE
        if create is None:
            create = home is None and not os.environ.get("MLONMCU_HOME")
        if not path.is_file():
            if not create:
                where = "-H" if home else "$MLONMCU_HOME"
                raise ConfigError(
                    f"no mlonmcu HOME at {root} (from {where}): create it with `mlonmcu init {root}`, "
                    "pass --create, or check the path"
                )
            init_home(root, DEFAULT_TEMPLATE)
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as err:
            raise ConfigError(f"{path} is not valid YAML: {err}") from None
        return cls.from_dict(data, root)

    def check_writable(self) -> None:
        """A session writes its sessions and cache folders: an unwritable HOME is a usage error
        before any run, naming the folder (a read-only mount, a HOME owned by someone else)."""
        for directory in (self.sessions_dir, self.cache_dir):
            try:
                probe_directory(directory)
            except OSError as err:
                raise ConfigError(unwritable_home(self.home, err)) from None

    @classmethod
    def from_dict(cls, data: dict[str, Any], home: Path) -> Environment:
        if not isinstance(data, dict):
            raise ConfigError(f"{home / ENV_FILE}: expected a mapping at the top level")
        for key in data:
            if key not in _TOP_KEYS:
                raise ConfigError(
                    f"{home / ENV_FILE}: unknown key '{key}'{closest(key, _TOP_KEYS)}; valid: {', '.join(_TOP_KEYS)}"
                )
        paths = _mapping(data, "paths", home)
        for key in paths:
            if key not in _PATH_KEYS:
                raise ConfigError(f"{home / ENV_FILE}: unknown key 'paths.{key}'; valid: {', '.join(_PATH_KEYS)}")
        env = cls(
            home=home,
            deps_dir=_path(home, paths.get("deps", "deps")),
            sessions_dir=_path(home, paths.get("sessions", "sessions")),
            cache_dir=_path(home, paths.get("cache", "cache")),
            model_dirs=_model_dirs(home, paths.get("models", [BUNDLED])),
            components={k: dict(v or {}) for k, v in _mapping(data, "components", home).items()},
            enabled={kind: _names(data, kind, home) for kind in _KINDS},
            config=dict(_mapping(data, "config", home)),
            results_db=_results_db(data, home),
        )
        env.validate()
        return env

    def validate(self) -> None:
        """Names and config keys must exist; errors name the key and the valid choices."""
        from mlonmcu import registry

        kinds = {
            "backends": registry.BACKENDS,
            "platforms": registry.PLATFORMS,
            "targets": registry.TARGETS,
            "features": registry.FEATURES,
        }
        for kind, reg in kinds.items():
            for name in self.enabled[kind]:
                if name not in reg.names():
                    raise ConfigError(
                        f"{self.file}: unknown {reg.kind} '{name}' in '{kind}'{closest(name, reg.names())}; "
                        f"valid: {', '.join(reg.names())}"
                    )
        for name, settings in self.components.items():
            if name not in registry.COMPONENTS:
                names = registry.COMPONENTS.names()
                raise ConfigError(
                    f"{self.file}: unknown component '{name}'{closest(name, names)}; valid: {', '.join(names)}"
                )
            options = {o.name: o for o in registry.COMPONENTS.get(name).options}
            for option, value in settings.items():
                if option not in options:
                    valid = ", ".join(options) or "none"
                    raise ConfigError(
                        f"{self.file}: unknown config key '{name}.{option}'{closest(option, options)} under "
                        f"components:; valid for component {name}: {valid}"
                    )
                options[option].parse(value, f"components.{name}.{option}")
        for key, value in self.config.items():
            try:
                registry.check_key(key).parse(value, key)
            except ConfigError as err:
                raise ConfigError(f"{self.file}: config: {err}") from None

    def defaults(self) -> dict[str, Any]:
        """Default config layer: component settings as `name.option`, then `config:`."""
        layer = {f"{name}.{k}": v for name, settings in self.components.items() for k, v in settings.items()}
        layer.update(self.config)
        return layer

    def first(self, kind: str) -> str:
        names = self.enabled[kind]
        if not names:
            raise ConfigError(f"{self.file}: no {kind} enabled; add one or pass it on the command line")
        return names[0]


def _mapping(data: dict[str, Any], key: str, home: Path) -> dict[str, Any]:
    value = data.get(key) or {}
    if not isinstance(value, dict):
        raise ConfigError(f"{home / ENV_FILE}: '{key}' must be a mapping")
    return value


def _results_db(data: dict[str, Any], home: Path) -> str:
    results = _mapping(data, "results", home)
    for key in results:
        if key != "db":
            raise ConfigError(f"{home / ENV_FILE}: unknown key 'results.{key}'; valid: db (a database URL)")
    return os.path.expandvars(str(results.get("db") or ""))


def _names(data: dict[str, Any], key: str, home: Path) -> list[str]:
    value = data.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{home / ENV_FILE}: '{key}' must be a list of names")
    return value


def _path(home: Path, value: Any) -> Path:
    path = Path(os.path.expandvars(str(value))).expanduser()
    return path if path.is_absolute() else home / path


def _model_dirs(home: Path, entries: Any) -> list[Path]:
    if not isinstance(entries, list):
        raise ConfigError(f"{home / ENV_FILE}: 'paths.models' must be a list of directories")
    dirs = [bundled_models_dir() if str(e) == BUNDLED else _path(home, e) for e in entries]
    extra = os.environ.get("MLONMCU_MODELS", "")
    dirs += [Path(p).expanduser().resolve() for p in extra.split(os.pathsep) if p]
    return dirs
