"""deps/deps.yml: what `mlonmcu setup` installed, which version, where."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import yaml

from mlonmcu.atomic import write_text

DEPS_FILE = "deps.yml"


@dataclass(frozen=True)
class Installed:
    """A located component: recorded in deps.yml and in every run.yml that used it."""

    name: str
    version: str
    location: str
    extras: dict[str, str] = field(default_factory=dict)  # further paths a component provides


@contextmanager
def _locked(deps_dir: Path) -> Iterator[None]:
    deps_dir.mkdir(parents=True, exist_ok=True)
    with (deps_dir / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def read_deps(deps_dir: Path) -> dict[str, dict[str, str]]:
    path = deps_dir / DEPS_FILE
    if not path.is_file():
        return {}
    return (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("components", {})


def record(deps_dir: Path, installed: Installed) -> None:
    with _locked(deps_dir):
        components = read_deps(deps_dir)
        entry = asdict(installed)
        entry.pop("name")
        entry["recorded"] = datetime.now(UTC).isoformat(timespec="seconds")
        components[installed.name] = entry
        write_text(deps_dir / DEPS_FILE, yaml.safe_dump({"components": components}, sort_keys=True))
