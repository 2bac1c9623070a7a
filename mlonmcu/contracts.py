"""What crosses a stage boundary: frozen, typed records, stored as JSON in the stage cache.

LOAD describes the model (:class:`LoadResult`), BUILD hands sources and facts to the platform
(:class:`BuildResult`), COMPILE hands an ELF and its memory use to the target
(:class:`CompileResult`), RUN hands the harness records to the report (:class:`RunResult`), and a
feature's postprocess hook sees only :class:`PostprocessInput`. A stage never reads another
stage's internals: what it needs is a field here, so a renamed key is a type error, not a
silently empty report column.

:func:`encode` and :func:`decode` turn any of these into JSON-able data and back, driven by the
type hints, so the cache stores exactly what the types say.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from mlonmcu.report import columns as col

T = TypeVar("T")
Sample = list[np.ndarray]


@dataclass(frozen=True)
class TensorInfo:
    name: str
    shape: tuple[int, ...]
    dtype: str
    scale: tuple[float, ...] = ()
    zero_point: tuple[int, ...] = ()

    @property
    def size(self) -> int:
        return int(np.prod(self.shape)) if self.shape else 1

    @property
    def nbytes(self) -> int:
        return self.size * np.dtype(self.dtype).itemsize

    @property
    def quantized(self) -> bool:
        return bool(self.scale) and np.dtype(self.dtype).kind in "iu"


@dataclass(frozen=True)
class ModelInfo:
    """What the frontend read from the model file."""

    frontend: str
    size: int
    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]
    operators: tuple[str, ...]
    macs: int
    activations: int = 0  # bytes of the largest set of activation tensors live at once


@dataclass(frozen=True)
class LoadResult:
    info: ModelInfo
    samples: str  # where the input samples came from, e.g. "10 from …/input"
    num_samples: int
    reference_error: str = ""  # why there are no reference outputs ("" when there are)
    oracle: str = ""  # what computed them (models/reference.py: litert, tflm-python, onnxruntime)
    converted: str = ""  # the model converted into the frontend's format (a file in LOAD's directory)


@dataclass(frozen=True)
class KernelInfo:
    """One generated kernel: the TFLite operators it covers, its MACs, integer or float."""

    name: str
    ops: tuple[str, ...]
    macs: int
    arithmetic: str = ""


@dataclass(frozen=True)
class SourceGroup:
    """Library sources compiled with extra options (e.g. TFLM's kernels at -O2)."""

    sources: tuple[str, ...]
    options: tuple[str, ...]


@dataclass(frozen=True)
class LibrarySpec:
    """A static library the firmware links, built once per target (platforms/libraries.py)."""

    name: str
    root: str
    identity: str  # hash of what the sources are (commits + file list)
    sources: tuple[str, ...]
    include_dirs: tuple[str, ...]
    definitions: tuple[str, ...] = ()
    compile_flags: tuple[str, ...] = ()
    cxx_flags: tuple[str, ...] = ()
    source_options: tuple[SourceGroup, ...] = ()


@dataclass(frozen=True)
class BuildResult:
    """Backend → platform: the sources in the BUILD directory and how to compile them."""

    model: str
    backend: str
    sources: tuple[str, ...]
    include_dirs: tuple[str, ...] = (".",)
    languages: tuple[str, ...] = ("C",)
    compile_flags: tuple[str, ...] = ()
    cxx_flags: tuple[str, ...] = ()
    definitions: tuple[str, ...] = ()
    libraries: tuple[str, ...] = ()
    static_libraries: tuple[LibrarySpec, ...] = ()
    arena_size: int | None = None
    # None: the arena is in the sources; else measure it on the target at COMPILE (0) or use this size
    arena_request: int | None = None
    float_ops: str = ""
    kernels: tuple[KernelInfo, ...] = ()
    status_messages: dict[int, str] = field(default_factory=dict)  # model status code → meaning
    constants_bytes: int | None = None
    # bytes of stack the generated code needs at least (iree: a dispatch's stack allocations and the
    # runtime's frames); COMPILE reserves at least that on targets with a memory map
    stack_request: int = 0


@dataclass(frozen=True)
class TargetProfile:
    """Target → platform: how to build a firmware for a target. Equal profiles share one ELF."""

    family: str  # e.g. "riscv32-virt-rv32imc-ilp32": the identity of the firmware build
    toolchain: str  # component name of the compiler
    toolchain_file: str  # template under templates/cmake/
    support: tuple[str, ...]  # template directories under templates/targets/, all copied
    compile_flags: tuple[str, ...] = ()  # every language
    c_flags: tuple[str, ...] = ()  # C and assembler only
    cxx_flags: tuple[str, ...] = ()  # C++ only
    link_flags: tuple[str, ...] = ()
    link_language: str = ""  # "C": link C++ objects with the C driver (no libstdc++ on the target)
    toolchain_vars: dict[str, str] = field(default_factory=dict)  # values for the toolchain file
    template_values: dict[str, Any] = field(default_factory=dict)  # extra values for the support templates
    memory: dict[str, int] = field(default_factory=dict)
    counter: str = "minstret"


@dataclass(frozen=True)
class FirmwareRequest:
    """Stage → platform: everything one firmware build needs."""

    sources: Path  # the BUILD directory
    build: BuildResult
    profile: TargetProfile
    samples: list[Sample]
    print_outputs: bool
    definitions: dict[str, str]
    out: Path  # what the COMPILE stage keeps (ELF, map, generated project)
    work: Path  # scratch (CMake build tree)
    log: Path
    cache_root: Path  # for libraries shared across runs
    toolchain_version: str


@dataclass(frozen=True)
class MemoryUsage:
    """ROM/RAM of a firmware from its ELF section headers."""

    rom_code: int
    rom_read_only: int
    rom_data: int
    ram_zero_init: int
    ram_stack: int

    @property
    def total_rom(self) -> int:
        return self.rom_code + self.rom_read_only + self.rom_data

    @property
    def total_ram(self) -> int:
        return self.rom_data + self.ram_zero_init + self.ram_stack

    def columns(self) -> dict[str, int]:
        return {
            col.TOTAL_ROM: self.total_rom,
            col.ROM_CODE: self.rom_code,
            col.ROM_READ_ONLY: self.rom_read_only,
            col.ROM_DATA: self.rom_data,
            col.TOTAL_RAM: self.total_ram,
            col.RAM_DATA: self.rom_data,
            col.RAM_ZERO_INIT: self.ram_zero_init,
            col.RAM_STACK: self.ram_stack,
        }


@dataclass(frozen=True)
class CompileResult:
    """Platform → target: the firmware (relative to the COMPILE directory) and its memory use."""

    elf: str
    map: str
    memory: MemoryUsage
    arena_size: int | None = None  # measured on the target (tflmi)
    arena_needed: int | None = None


@dataclass(frozen=True)
class Measurement:
    """One measured region of a harness run (setup, one inference, one kernel)."""

    status: int = 0
    sample: int | None = None
    iteration: int | None = None
    kernel: int | None = None
    calls: int | None = None
    cycles: int | None = None
    instructions: int | None = None
    ns: int | None = None
    estimated_cycles: int | None = None  # QEMU's instruction classes weighted by a timing model (targets/timing.py)
    # what mlonmcu's QEMU plugin counted per instruction class and event (templates/qemu_plugin)
    events: tuple[tuple[str, int], ...] = ()

    def event_counts(self) -> dict[str, int]:
        return dict(self.events)

    def cost(self) -> int | None:
        """Cycles where the target counts them, else instructions."""
        return self.cycles if self.cycles is not None else self.instructions


@dataclass(frozen=True)
class HarnessEnd:
    status: int
    stack: int | None = None


@dataclass(frozen=True)
class HarnessRecord:
    """What the firmware's harness printed, as numbers (templates/mlif/harness.c)."""

    setup: Measurement
    runs: tuple[Measurement, ...] = ()
    profile: tuple[Measurement, ...] = ()
    end: HarnessEnd | None = None
    errors: tuple[str, ...] = ()
    samples_with_outputs: tuple[int, ...] = ()

    def first_sample(self) -> tuple[Measurement, ...]:
        """The inferences the report's Run figures are the mean of (mlif.repeat of them)."""
        return tuple(r for r in self.runs if r.sample == 0)


@dataclass(frozen=True)
class RunResult:
    """Target → report: harness records and which counter produced them."""

    harness: HarnessRecord
    counter: str  # minstret, wallclock, qemu-plugin, systick, dwt, none
    timing_model: str = ""  # the model behind the Estimated Cycles (targets/timing.py), if any
    arena_size: int | None = None  # found by an interpreting target (host_py); a firmware's is the COMPILE's


@dataclass(frozen=True)
class PostprocessInput:
    """All a feature's postprocess hook may look at: no live run, no other stage's files."""

    model: str
    outputs: list[Sample]
    references: list[Sample] | None  # None: no reference (see reference_error)
    reference_error: str
    harness: HarnessRecord
    kernels: tuple[KernelInfo, ...]
    counter: str
    out_dir: Path  # the run's postprocess directory, for the feature's own artifacts
    oracle: str = ""  # what computed the references: litert, tflm-python, tflm (tflmi on host_x86)


def encode(value: Any) -> Any:
    """A record (or anything made of records, tuples, dicts, paths) as JSON-able data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def decode(cls: type[T], data: Any) -> T:
    """The inverse of :func:`encode` for a record type; wrong shapes raise ValueError."""
    return typing.cast(T, _decode(cls, data, cls.__name__))


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _decode(hint: Any, data: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if data is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        return _decode(options[0], data, where)
    if dataclasses.is_dataclass(hint):
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected an object, got {type(data).__name__}")
        hints = _hints(typing.cast(type, hint))
        values = {}
        for f in dataclasses.fields(hint):
            if f.name in data:
                values[f.name] = _decode(hints[f.name], data[f.name], f"{where}.{f.name}")
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ValueError(f"{where}: missing field '{f.name}'")
        return typing.cast(Callable[..., Any], hint)(**values)
    if origin is tuple:
        if not isinstance(data, list | tuple):
            raise ValueError(f"{where}: expected a list")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode(args[0], v, where) for v in data)
        return tuple(_decode(a, v, where) for a, v in zip(args, data, strict=True))
    if origin is list:
        if not isinstance(data, list):
            raise ValueError(f"{where}: expected a list")
        return [_decode(args[0], v, where) for v in data]
    if origin is dict:
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected an object")
        return {_decode(args[0], k, where): _decode(args[1], v, where) for k, v in data.items()}
    if hint is Path:
        return Path(data)
    if hint is int:
        if isinstance(data, bool) or not isinstance(data, int | str):
            raise ValueError(f"{where}: expected an integer")
        return int(data)
    if hint is float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise ValueError(f"{where}: expected a number")
        return float(data)
    if hint is str or hint is bool:
        if not isinstance(data, hint):
            raise ValueError(f"{where}: expected {hint.__name__}")
        return data
    if hint is Any:
        return data
    raise TypeError(f"{where}: cannot decode type {hint!r}")
