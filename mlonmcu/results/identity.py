"""Run identity: what makes two runs of different sessions the same experiment.

The model's name, frontend, backend, platform, target, features and the user-set config values.
Not the model's bytes, component versions or the mlonmcu version: those are what changes between
nights, and what a comparison is meant to show.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

from mlonmcu.report import columns as col

COLUMNS = (col.MODEL, col.FRONTEND, col.BACKEND, col.PLATFORM, col.TARGET, col.FEATURES, col.CONFIG)
IDENTITY = "Identity"  # a column the store and compare add: the canonical identity text


def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value).strip()


def identity(row: Mapping[str, Any]) -> str:
    """Canonical text of a report row's identity (features are a set: their order does not matter)."""
    values = {c: _text(row.get(c)) for c in COLUMNS}
    values[col.FEATURES] = ",".join(sorted(f for f in values[col.FEATURES].split(",") if f))
    return json.dumps([values[c] for c in COLUMNS], separators=(",", ":"))


def identity_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def describe(text: str) -> str:
    """The identity for people: model backend target [features] {config}."""
    model, _frontend, backend, _platform, target, features, config = json.loads(text)
    parts = [model, backend, target]
    if features:
        parts.append(f"[{features}]")
    if config:
        parts.append(f"{{{config}}}")
    return " ".join(parts)
