"""Parse the benchmark harness's output lines (format documented in templates/mlif/harness.c)."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

from mlonmcu.contracts import HarnessEnd, HarnessRecord, Measurement
from mlonmcu.errors import StageError

_LINE = re.compile(r"^MLONMCU (BEGIN|SETUP|RUN|OUTPUT|PROFILE|ARENA|END|ERROR|TRAP|MARK)\b(.*)$")
_FIELD = re.compile(r"(\w+)=(\S+)")
_MEASURED = {f.name for f in dataclasses.fields(Measurement)}


@dataclass
class ParsedOutput:
    """Everything the firmware printed: the records, the raw output tensors, the arena probe."""

    record: HarnessRecord
    outputs: dict[int, dict[int, bytes]] = field(default_factory=dict)
    arena_needed: int | None = None  # calibration firmware: the arena the model needs


@dataclass(frozen=True)
class Mark:
    """What mlonmcu's QEMU plugin had counted when a mark started."""

    instructions: int
    events: dict[str, int]


def _measurement(fields: dict[str, str], marks: dict[int, Mark]) -> Measurement:
    """A record's numbers; `marks=before:after` becomes what an external counter (mlonmcu's QEMU
    plugin) saw between the two marks: instructions (unless the target counted them itself, as
    minstret on QEMU riscv32) and the counts per instruction class and event."""
    values: dict[str, object] = {k: int(v) for k, v in fields.items() if k in _MEASURED}
    if "marks" in fields:
        first, last = (int(m) for m in fields["marks"].partition(":")[::2])
        if first in marks and last in marks:
            before, after = marks[first], marks[last]
            values.setdefault("instructions", after.instructions - before.instructions)
            names = sorted(set(before.events) | set(after.events))
            events = ((n, after.events.get(n, 0) - before.events.get(n, 0)) for n in names)
            values["events"] = tuple((n, c) for n, c in events if c)
    return Measurement(**values)  # type: ignore[arg-type]


def _mark(rest: str) -> tuple[int, Mark]:
    """`<index> <instructions> <name>=<count> ...` (counts still 0 are left out)."""
    index, count, *events = rest.split()
    return int(index), Mark(int(count), {k: int(v) for k, v in (e.split("=", 1) for e in events)})


def parse(text: str) -> ParsedOutput:
    lines = [m.groups() for m in (_LINE.match(raw.strip()) for raw in text.splitlines()) if m]
    if not any(kind == "BEGIN" for kind, _ in lines):
        raise StageError("the firmware printed nothing mlonmcu understands (no 'MLONMCU BEGIN' line)")
    marks = dict(_mark(rest) for kind, rest in lines if kind == "MARK")  # printed by mlonmcu's QEMU plugin
    setup = Measurement()
    runs: list[Measurement] = []
    profile: list[Measurement] = []
    errors: list[str] = []
    end: HarnessEnd | None = None
    outputs: dict[int, dict[int, bytes]] = {}
    arena: int | None = None
    for kind, rest in lines:
        fields = dict(_FIELD.findall(rest))
        if kind in ("ERROR", "TRAP"):
            errors.append(f"{kind.lower()} {rest.strip()}".strip())
        elif kind == "OUTPUT":
            sample, index = int(fields["sample"]), int(fields["index"])
            data = bytes.fromhex(fields.get("data", ""))
            if len(data) != int(fields["size"]):
                raise StageError(f"truncated output line for sample {sample} output {index}")
            outputs.setdefault(sample, {})[index] = data
        elif kind == "SETUP":
            setup = _measurement(fields, marks)
        elif kind == "RUN":
            runs.append(_measurement(fields, marks))
        elif kind == "PROFILE":
            profile.append(_measurement(fields, marks))
        elif kind == "ARENA":
            arena = int(fields.get("needed", 0))
        elif kind == "END":
            end = HarnessEnd(int(fields.get("status", 0)), int(fields["stack"]) if "stack" in fields else None)
    record = HarnessRecord(setup, tuple(runs), _per_kernel(profile), end, tuple(errors), tuple(sorted(outputs)))
    return ParsedOutput(record, outputs, arena)


def _per_kernel(profile: list[Measurement]) -> tuple[Measurement, ...]:
    """One record per kernel: the harness reports each call separately where it cannot sum
    (instruction marks), so calls of the same kernel are added up here."""
    merged: dict[int | None, Measurement] = {}
    for m in profile:
        seen = merged.get(m.kernel)
        if seen is None:
            merged[m.kernel] = m
            continue
        merged[m.kernel] = Measurement(
            status=seen.status or m.status,
            kernel=m.kernel,
            calls=(seen.calls or 0) + (m.calls or 0),
            cycles=_add(seen.cycles, m.cycles),
            instructions=_add(seen.instructions, m.instructions),
            ns=_add(seen.ns, m.ns),
            estimated_cycles=_add(seen.estimated_cycles, m.estimated_cycles),
            events=add_events(seen.events, m.events),
        )
    return tuple(merged.values())


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def add_events(a: tuple[tuple[str, int], ...], b: tuple[tuple[str, int], ...]) -> tuple[tuple[str, int], ...]:
    total = dict(a)
    for name, count in b:
        total[name] = total.get(name, 0) + count
    return tuple(sorted(total.items()))
