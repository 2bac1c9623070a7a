"""What the results store keeps of a session, as plain data: its record and its report values as JSON.

Shared by the store, which writes them, and the recorder (recorder.py), which carries them from
the session's process to its own as JSON lines. Neither end needs SQLAlchemy or pandas for
this: a value of a numpy or pandas type can only exist where that library is already loaded.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

from mlonmcu.errors import MlonmcuError
from mlonmcu.report.report import missing


@dataclass(frozen=True)
class SessionRecord:
    uid: str  # globally unique: f"{hostname}:{home}:{session_id}"
    session: int
    label: str
    sweep: str
    command: str
    host: str
    home: str
    status: str  # done | interrupted | failed
    started: datetime  # timezone-aware
    finished: datetime | None
    mlonmcu_version: str
    git_commit: str
    components: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["started"] = self.started.isoformat()
        data["finished"] = self.finished.isoformat() if self.finished else None
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SessionRecord:
        finished = data.get("finished")
        return cls(
            **{
                **data,
                "started": datetime.fromisoformat(data["started"]),
                "finished": datetime.fromisoformat(finished) if finished else None,
            }
        )


def plain(value: Any, where: str) -> Any:
    """A report value as JSON data of the same type: numpy scalars become Python ones, missing null."""
    if missing(value):
        return None
    numpy = sys.modules.get("numpy")
    if isinstance(value, bool) or (numpy is not None and isinstance(value, numpy.bool_)):
        return bool(value)
    if isinstance(value, int) or (numpy is not None and isinstance(value, numpy.integer)):
        return int(value)
    if isinstance(value, float) or (numpy is not None and isinstance(value, numpy.floating)):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): plain(v, where) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, where) for v in value]
    raise MlonmcuError(f"{where}: a value of type {type(value).__name__} cannot be kept in the results store")


def plain_row(record: Mapping[str, Any], where: str) -> dict[str, Any]:
    return {str(k): plain(v, f"{where}, column '{k}'") for k, v in record.items()}


def dumps(record: Mapping[str, Any], where: str) -> str:
    return json.dumps(plain_row(record, where))


def restore(record: Mapping[str, Any]) -> dict[str, Any]:
    """A stored record; missing values come back as NaN, as in a report read from a file."""
    return {k: math.nan if v is None else v for k, v in record.items()}
