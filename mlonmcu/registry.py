"""One registry per pluggable kind, filled from Python entry points.

mlonmcu's own plugins are declared in pyproject.toml exactly like a third-party package would
declare its own (group `mlonmcu.targets`, `mlonmcu.backends`, ...; see docs/extending.md). An
entry point names a plugin class, or a function returning several (the QEMU boards, which are
data). Tests and scripts may also call :meth:`Registry.register` directly.
"""

from __future__ import annotations

import importlib.metadata
import logging
from collections.abc import Iterable, Iterator
from typing import Any, Generic, TypeVar

from mlonmcu.config import Option, closest, split_key
from mlonmcu.errors import ConfigError, MlonmcuError

T = TypeVar("T")
log = logging.getLogger("mlonmcu.registry")
OWN_DISTRIBUTION = "mlonmcu"


class Registry(Generic[T]):
    """Name → plugin class for one kind (backend, target, ...)."""

    def __init__(self, kind: str, group: str):
        self.kind = kind
        self.group = group  # the entry point group
        self._classes: dict[str, type[T]] = {}

    def register(self, cls: type[T]) -> type[T]:
        name = cls.name  # type: ignore[attr-defined]
        if name in self._classes and self._classes[name] is not cls:
            raise ValueError(f"{self.kind} '{name}' registered twice")
        self._classes[name] = cls
        return cls

    def get(self, name: str) -> type[T]:
        load_plugins()
        try:
            return self._classes[name]
        except KeyError:
            raise ConfigError(
                f"unknown {self.kind} '{name}'{closest(name, self._classes)}; valid: {', '.join(self.names())}"
            ) from None

    def names(self) -> list[str]:
        load_plugins()
        return sorted(self._classes)

    def __contains__(self, name: str) -> bool:
        load_plugins()
        return name in self._classes

    def __iter__(self) -> Iterator[type[T]]:
        load_plugins()
        return iter(dict(sorted(self._classes.items())).values())


FRONTENDS: Registry[Any] = Registry("frontend", "mlonmcu.frontends")
BACKENDS: Registry[Any] = Registry("backend", "mlonmcu.backends")
PLATFORMS: Registry[Any] = Registry("platform", "mlonmcu.platforms")
TARGETS: Registry[Any] = Registry("target", "mlonmcu.targets")
FEATURES: Registry[Any] = Registry("feature", "mlonmcu.features")
COMPONENTS: Registry[Any] = Registry("component", "mlonmcu.components")

REGISTRIES = (FRONTENDS, BACKENDS, PLATFORMS, TARGETS, FEATURES, COMPONENTS)
_loaded = False


def _plugins_of(loaded: Any) -> Iterable[Any]:
    return [loaded] if isinstance(loaded, type) else list(loaded())


def _is_own(point: importlib.metadata.EntryPoint) -> bool:
    """One of mlonmcu's own plugins (by module: a distribution's name costs a METADATA parse)."""
    return point.module.startswith(OWN_DISTRIBUTION + ".")


def load_plugins() -> None:
    """Import every plugin declared by an installed distribution (once per process)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    own = 0
    points = importlib.metadata.entry_points()  # one scan of the installed distributions for all groups
    for reg in REGISTRIES:
        for point in points.select(group=reg.group):
            try:
                classes = _plugins_of(point.load())
            except Exception as err:
                if _is_own(point):
                    raise
                dist = point.dist.name if point.dist is not None else "?"
                log.warning(
                    "ignoring %s plugin '%s' of %s: %s: %s", reg.kind, point.name, dist, type(err).__name__, err
                )
                continue
            own += _is_own(point)
            for cls in classes:
                reg.register(cls)
    if own == 0:
        _loaded = False
        raise MlonmcuError(
            "mlonmcu's plugins are not registered: install the package (pip install -e . or pip install .)"
        )


def option_scopes() -> dict[str, tuple[Option, ...]]:
    """Every configurable name with its declared options."""
    scopes: dict[str, tuple[Option, ...]] = {}
    for reg in REGISTRIES:
        for cls in reg:
            scopes[cls.name] = tuple(scopes.get(cls.name, ())) + tuple(cls.options)
    return scopes


def check_key(key: str) -> Option:
    """The option a config key names, or a ConfigError listing what is valid."""
    scope, name = split_key(key)
    scopes = option_scopes()
    if scope not in scopes:
        raise ConfigError(f"unknown config key '{key}': no component '{scope}'{closest(scope, scopes)}")
    options = {o.name: o for o in scopes[scope]}
    if name not in options:
        valid = ", ".join(f"{scope}.{o}" for o in options) or "none"
        raise ConfigError(f"unknown config key '{key}'{closest(name, options)}; valid for {scope}: {valid}")
    return options[name]
