"""The one base of every pluggable kind: frontends, backends, platforms, targets, features, components.

Each plugin has a `name` users type, a `help` line, typed `options` (addressed as
`<name>.<option>` in `-c` and environment.yml), the components it `requires` and those it uses
when present (`optional`). Settings are read one way, with :meth:`Plugin.opt`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from mlonmcu.config import Option
from mlonmcu.setup.deps import Installed


class Plugin:
    name: ClassVar[str]
    help: ClassVar[str] = ""
    options: ClassVar[tuple[Option, ...]] = ()
    requires: ClassVar[tuple[str, ...]] = ()
    optional: ClassVar[tuple[str, ...]] = ()  # components used when installed (e.g. the QEMU plugin)

    def __init__(self, config: Mapping[str, Any] | None = None, components: Mapping[str, Installed] | None = None):
        self.config: dict[str, Any] = dict(config or {})
        self.components: dict[str, Installed] = dict(components or {})

    @classmethod
    def option(cls, name: str) -> Option:
        for option in cls.options:
            if option.name == name:
                return option
        raise KeyError(f"{cls.name} has no option '{name}'")

    def opt(self, name: str) -> Any:
        """The effective value of one of this plugin's options (its default when unset)."""
        key = f"{self.name}.{name}"
        return self.config[key] if key in self.config else self.option(name).default

    def tool(self, component: str) -> str:
        """Where a required component is (an executable or a directory)."""
        return self.components[component].location

    def used_components(self) -> tuple[str, ...]:
        """The components this plugin reads with its settings (a plugin whose options pick among
        optional components narrows this)."""
        return (*self.requires, *self.optional)

    def versions(self, components: Mapping[str, Installed]) -> dict[str, str]:
        """The versions of the components this plugin reads: part of its stages' cache keys."""
        return {c: components[c].version if c in components else "absent" for c in self.used_components()}
