"""Declared options of pluggable components and the `-c scope.option=value` config they form.

Every backend, target, platform, feature and frontend declares its options once, as a tuple of
:class:`Option` on its class. Users address them as ``<name>.<option>``; unknown keys and bad
values are :class:`ConfigError` naming the valid choices.
"""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mlonmcu.errors import ConfigError

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class Option:
    """One configurable knob: name, type, default and a one-line help text."""

    name: str
    type: str  # str | int | float | bool | choice
    default: Any
    help: str
    choices: tuple[Any, ...] = ()

    def parse(self, raw: Any, key: str = "") -> Any:
        """Convert a user value (string from the CLI or a YAML scalar) into the option's type."""
        key = key or self.name
        if raw is None:
            return None
        try:
            if self.type == "bool":
                if isinstance(raw, bool):
                    return raw
                text = str(raw).strip().lower()
                if text in _TRUE:
                    return True
                if text in _FALSE:
                    return False
                raise ValueError
            if self.type == "int":
                if isinstance(raw, bool):
                    raise ValueError
                return int(str(raw), 0) if isinstance(raw, str) else int(raw)
            if self.type == "float":
                return float(raw)
            if self.type == "choice":
                value = str(raw)
                if value not in self.choices:
                    raise ConfigError(
                        f"bad value '{raw}' for config key '{key}': valid values are "
                        + ", ".join(str(c) for c in self.choices)
                    )
                return value
            return str(raw)
        except (TypeError, ValueError):
            raise ConfigError(f"bad value '{raw}' for config key '{key}': expected {self.type}") from None

    def describe(self) -> str:
        extra = f" (one of: {', '.join(map(str, self.choices))})" if self.choices else ""
        return f"{self.help}{extra} [default: {self.default}]"


def closest(name: str, choices: Iterable[str]) -> str:
    """A 'did you mean' suffix for error messages."""
    match = difflib.get_close_matches(name, list(choices), n=1)
    return f" (did you mean '{match[0]}'?)" if match else ""


def split_key(key: str) -> tuple[str, str]:
    scope, sep, name = key.partition(".")
    if not sep or not scope or not name:
        raise ConfigError(f"bad config key '{key}': expected <component>.<option>, e.g. mlif.optimize")
    return scope, name


def parse_assignments(items: Iterable[str]) -> dict[str, list[str]]:
    """Parse repeated ``-c key=value``; a key given twice with different values keeps both."""
    result: dict[str, list[str]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"bad config '{item}': expected KEY=VALUE, e.g. -c mlif.optimize=Os")
        split_key(key)
        values = result.setdefault(key, [])
        if value not in values:
            values.append(value)
    return result


def expand_matrix(values: Mapping[str, list[Any]]) -> list[dict[str, Any]]:
    """Cartesian product of multi-valued keys: one config dict per combination."""
    keys = list(values)
    if not keys:
        return [{}]
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(values[k] for k in keys))]


def resolve(
    scopes: Mapping[str, tuple[Option, ...]], defaults: Mapping[str, Any], user: Mapping[str, Any]
) -> dict[str, Any]:
    """Effective config of one run: declared defaults < environment defaults < user values.

    Only keys of the given scopes are kept, so a run's config names exactly what it reads.
    """
    effective: dict[str, Any] = {}
    for scope, options in scopes.items():
        for option in options:
            key = f"{scope}.{option.name}"
            value = option.default
            for layer in (defaults, user):
                if key in layer:
                    value = option.parse(layer[key], key)
            effective[key] = value
    return effective
