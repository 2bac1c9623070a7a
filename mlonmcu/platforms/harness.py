"""Parse the benchmark harness's output lines (format documented in templates/mlif/harness.c)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from mlonmcu.errors import StageError

_LINE = re.compile(r"^MLONMCU (BEGIN|SETUP|RUN|OUTPUT|PROFILE|ARENA|END|ERROR|TRAP|MARK)\b(.*)$")
_FIELD = re.compile(r"(\w+)=(\S+)")


@dataclass
class HarnessResult:
    setup: dict[str, int] = field(default_factory=dict)
    runs: list[dict[str, int]] = field(default_factory=list)
    profile: list[dict[str, int]] = field(default_factory=list)
    outputs: dict[int, dict[int, bytes]] = field(default_factory=dict)
    end: dict[str, int] | None = None
    arena: dict[str, int] | None = None  # calibration firmware: the arena the model needs
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "setup": self.setup,
            "runs": self.runs,
            "profile": self.profile,
            "end": self.end,
            "errors": self.errors,
            "samples_with_outputs": sorted(self.outputs),
        }


def _numbers(fields: dict[str, str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key, value in fields.items():
        if key == "marks":  # indices of the instruction-count marks around the region
            before, _, after = value.partition(":")
            values[key] = (int(before), int(after))
        else:
            values[key] = int(value)
    return values


def _resolve_marks(result: HarnessResult, counts: dict[int, int]) -> None:
    """Replace `marks=before:after` by the instructions an external counter saw between them."""
    for record in [result.setup, *result.runs, *result.profile]:
        if "marks" in record:
            before, after = record.pop("marks")
            if before in counts and after in counts:
                record["instructions"] = counts[after] - counts[before]


def parse(text: str) -> HarnessResult:
    result = HarnessResult()
    counts: dict[int, int] = {}
    began = False
    for raw in text.splitlines():
        match = _LINE.match(raw.strip())
        if not match:
            continue
        kind, rest = match.groups()
        if kind == "MARK":  # printed by mlonmcu's QEMU plugin: index, instructions before it
            index, count = rest.split()
            counts[int(index)] = int(count)
            continue
        fields = dict(_FIELD.findall(rest))
        if kind == "BEGIN":
            began = True
        elif kind in ("ERROR", "TRAP"):
            result.errors.append(f"{kind.lower()} {rest.strip()}".strip())
        elif kind == "OUTPUT":
            sample, index = int(fields["sample"]), int(fields["index"])
            data = bytes.fromhex(fields.get("data", ""))
            if len(data) != int(fields["size"]):
                raise StageError(f"truncated output line for sample {sample} output {index}")
            result.outputs.setdefault(sample, {})[index] = data
        else:
            numbers = _numbers(fields)
            if kind == "SETUP":
                result.setup = numbers
            elif kind == "RUN":
                result.runs.append(numbers)
            elif kind == "PROFILE":
                result.profile.append(numbers)
            elif kind == "ARENA":
                result.arena = numbers
            else:
                result.end = numbers
    if not began:
        raise StageError("the firmware printed nothing mlonmcu understands (no 'MLONMCU BEGIN' line)")
    _resolve_marks(result, counts)
    return result
