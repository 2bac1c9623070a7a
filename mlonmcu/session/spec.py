"""Run specs: the picklable description of one run that an executor hands to a worker."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import Any

from mlonmcu.errors import ConfigError
from mlonmcu.setup.deps import Installed


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
    sha256: str = ""  # of the model file, at plan time


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
    use_cache: bool = True  # False (--no-cache): recompute every stage and replace its cache entry
    components: dict[str, Installed] = field(default_factory=dict)
    missing: str = ""  # set when a needed component is absent: the run fails with this reason
    log_file: Path | None = None  # the session's mlonmcu.log
    log_level: int = 20  # logging.INFO: what the session log records
    # validate.reference=tflm: the run whose outputs are the reference (tflmi on the host)
    oracle: RunSpec | None = None
