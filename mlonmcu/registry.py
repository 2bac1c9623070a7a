"""One registry per pluggable kind; built-in plugins register themselves on import."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any, Generic, TypeVar

from mlonmcu.config import Option, closest, split_key
from mlonmcu.errors import ConfigError

T = TypeVar("T")

_BUILTIN_MODULES = (
    "mlonmcu.models.frontend",
    "mlonmcu.backends.tvm.backend",
    "mlonmcu.backends.tflm.backend",
    "mlonmcu.platforms.mlif",
    "mlonmcu.targets.host",
    "mlonmcu.targets.spike",
    "mlonmcu.targets.qemu",
    "mlonmcu.targets.qemu_arm",
    "mlonmcu.targets.board",
    "mlonmcu.features.validate",
    "mlonmcu.features.profile",
    "mlonmcu.setup.components",
)


class Registry(Generic[T]):
    """Name → class for one kind (backend, target, ...)."""

    def __init__(self, kind: str):
        self.kind = kind
        self._classes: dict[str, type[T]] = {}

    def register(self, cls: type[T]) -> type[T]:
        name = cls.name  # type: ignore[attr-defined]
        if name in self._classes and self._classes[name] is not cls:
            raise ValueError(f"{self.kind} '{name}' registered twice")
        self._classes[name] = cls
        return cls

    def get(self, name: str) -> type[T]:
        load_builtins()
        try:
            return self._classes[name]
        except KeyError:
            raise ConfigError(
                f"unknown {self.kind} '{name}'{closest(name, self._classes)}; valid: {', '.join(self.names())}"
            ) from None

    def names(self) -> list[str]:
        load_builtins()
        return sorted(self._classes)

    def __iter__(self) -> Iterator[type[T]]:
        load_builtins()
        return iter(dict(sorted(self._classes.items())).values())


FRONTENDS: Registry[Any] = Registry("frontend")
BACKENDS: Registry[Any] = Registry("backend")
PLATFORMS: Registry[Any] = Registry("platform")
TARGETS: Registry[Any] = Registry("target")
FEATURES: Registry[Any] = Registry("feature")
COMPONENTS: Registry[Any] = Registry("component")

_CONFIGURABLE = (FRONTENDS, BACKENDS, PLATFORMS, TARGETS, FEATURES, COMPONENTS)
_loaded = False


def load_builtins() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in _BUILTIN_MODULES:
        importlib.import_module(module)


def option_scopes() -> dict[str, tuple[Option, ...]]:
    """Every configurable name with its declared options."""
    load_builtins()
    scopes: dict[str, tuple[Option, ...]] = {}
    for registry in _CONFIGURABLE:
        for cls in registry:
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
