"""Declared options of pluggable components and the `-c scope.option=value` config they form.

Every backend, target, platform, feature and frontend declares its options once, as a tuple of
:class:`Option` on its class. Users address them as ``<name>.<option>``; unknown keys and bad
values are :class:`ConfigError` naming the valid choices.
"""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mlonmcu.errors import ConfigError

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class Option:
    """One configurable knob: name, Python type, default, help, and the values it accepts.

    `choices` lists the only valid values; `min`/`max` bound numbers inclusively and `above`
    exclusively (a timeout must be > 0). Every user value goes through :meth:`parse` at plan
    time, so a bad value is a usage error before any run starts, never a failure deep in a stage.
    """

    name: str
    type: type
    default: Any
    help: str
    choices: tuple[Any, ...] = ()
    min: float | None = None
    max: float | None = None
    above: float | None = None
    check: Callable[[Any], object] | None = None  # further validation; raises ValueError or ConfigError

    def parse(self, raw: Any, key: str = "") -> Any:
        """Convert a user value (string from the CLI or a YAML scalar) into the option's type."""
        key = key or self.name
        if raw is None:
            return None
        try:
            value = self._convert(raw)
        except (TypeError, ValueError):
            raise ConfigError(f"bad value '{raw}' for config key '{key}': expected {self.type.__name__}") from None
        problem = self._range_problem(value)
        if problem:
            raise ConfigError(f"bad value '{raw}' for config key '{key}': {problem}")
        if self.check is not None:
            try:
                self.check(value)
            except ValueError as err:
                raise ConfigError(f"bad value '{raw}' for config key '{key}': {err}") from None
        return value

    def _convert(self, raw: Any) -> Any:
        if self.type is bool:
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in _TRUE:
                return True
            if text in _FALSE:
                return False
            raise ValueError(raw)
        if self.type is int:
            if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
                raise ValueError(raw)
            return int(str(raw).strip(), 0) if isinstance(raw, str) else int(raw)
        if self.type is float:
            if isinstance(raw, bool):
                raise ValueError(raw)
            value = float(raw)
            if value != value:  # NaN passes no range check
                raise ValueError(raw)
            return value
        return str(raw)

    def _range_problem(self, value: Any) -> str:
        if self.choices and value not in self.choices:
            return "valid values are " + ", ".join(str(c) for c in self.choices)
        if self.min is not None and value < self.min:
            return f"must be at least {_number(self.min)}{self._range_hint()}"
        if self.max is not None and value > self.max:
            return f"must be at most {_number(self.max)}{self._range_hint()}"
        if self.above is not None and value <= self.above:
            return f"must be greater than {_number(self.above)}"
        return ""

    def _range_hint(self) -> str:
        if self.min is not None and self.max is not None:
            return f" (valid: {_number(self.min)} to {_number(self.max)})"
        return ""

    def valid(self) -> str:
        """The accepted values in words, for --help and error messages."""
        if self.choices:
            return "one of: " + ", ".join(map(str, self.choices))
        bounds = []
        if self.min is not None:
            bounds.append(f">= {_number(self.min)}")
        if self.above is not None:
            bounds.append(f"> {_number(self.above)}")
        if self.max is not None:
            bounds.append(f"<= {_number(self.max)}")
        return f"{self.type.__name__} {' and '.join(bounds)}".strip()

    def describe(self) -> str:
        return f"{self.help} ({self.valid()}) [default: {self.default}]"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


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
