"""Run specs: the picklable description of one run that an executor hands to a worker."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import Any

from mlonmcu.errors import ConfigError


class Stage(IntEnum):
    LOAD = 1
    BUILD = 2
    COMPILE = 3
    RUN = 4
    POSTPROCESS = 5

    @classmethod
    def parse(cls, name: str) -> Stage:
        try:
            return cls[name.upper()]
        except KeyError:
            raise ConfigError(f"unknown stage '{name}'; valid: {', '.join(s.name.lower() for s in cls)}") from None


@dataclass(frozen=True)
class ModelRef:
    name: str
    path: str
    directory: str | None


@dataclass
class RunSpec:
    """Everything a worker needs; no live objects, only names, paths and plain values."""

    session: int
    run: int
    run_dir: Path
    model: ModelRef
    frontend: str
    backend: str
    platform: str
    target: str
    features: list[str]
    config: dict[str, Any]
    user_config: dict[str, Any]
    until: Stage
    cache_dir: Path
    use_cache: bool = True
    components: dict[str, dict[str, str]] = field(default_factory=dict)
    missing: str = ""  # set when a needed component is absent: the run fails with this reason
