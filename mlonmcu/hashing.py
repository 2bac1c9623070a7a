"""Content hashes: the keys that name cached stage outputs and artifacts."""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any

from mlonmcu.data import templates_dir


def file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def tree_hash(root: Path, pattern: str = "**/*") -> str:
    """Hash of the relative paths and contents of all files under `root`."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.glob(pattern) if p.is_file() and "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(file_hash(path).encode())
    return digest.hexdigest()


def value_hash(value: Any) -> str:
    """Stable hash of JSON-able data (dict keys sorted)."""
    text = json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@cache
def code_fingerprint() -> str:
    """Hash of this installation's code and templates.

    Part of every stage key: changing the tool invalidates its cached results instead of
    silently reusing outputs of an older version.
    """
    package = Path(__file__).resolve().parent
    return value_hash([tree_hash(package, "**/*.py"), tree_hash(package, "**/*.yml"), tree_hash(templates_dir())])
