"""Helpers for tests: throw-away HOMEs and the shared MLPerf Tiny models."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mlonmcu.environment import init_home

REPO = Path(__file__).resolve().parents[1]
SHARED_MODELS = REPO.parent / "shared" / "models"


def make_home(root: Path, **overrides: object) -> Path:
    """A HOME from the default template, with environment.yml keys replaced by `overrides`."""
    init_home(root, "default")
    path = root / "environment.yml"
    data = yaml.safe_load(path.read_text())
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key].update(value)
        else:
            data[key] = value
    path.write_text(yaml.safe_dump(data))
    return root


def installed_deps_dir() -> Path:
    """Where `mlonmcu setup` put the components (the user's HOME, or $MLONMCU_HOME)."""
    from mlonmcu.environment.home import resolve_home

    return resolve_home(None) / "deps"


def shared_model(name: str) -> Path:
    path = SHARED_MODELS / name / f"{name}.tflite"
    if not path.is_file():
        pytest.skip(f"shared MLPerf Tiny model {name} not found at {SHARED_MODELS}")
    return path
