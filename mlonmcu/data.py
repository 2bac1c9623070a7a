"""Locate the data directories shipped with the package (templates, environments, resources).

In a wheel they live under ``mlonmcu/_data``; in a source checkout (editable install) they are
the top-level directories of the repository.
"""

from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


@cache
def data_dir(name: str) -> Path:
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"mlonmcu data directory '{name}' is missing from the installation")


def templates_dir() -> Path:
    return data_dir("templates")


def environments_dir() -> Path:
    return data_dir("environments")


def bundled_models_dir() -> Path:
    return data_dir("resources") / "models"
