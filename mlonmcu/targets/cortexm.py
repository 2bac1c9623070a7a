"""What Arm Cortex-M targets share: cores, compiler flags, the firmware layout, semihosting."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

import yaml

from mlonmcu.config import Option
from mlonmcu.contracts import TargetProfile
from mlonmcu.targets.target import Target

# -mcpu/-mfpu/-mfloat-abi per core; the FPU (where there is one) is used for float models
CORES: dict[str, tuple[str, ...]] = {
    "cortex-m0": ("-mcpu=cortex-m0", "-mfloat-abi=soft"),
    "cortex-m0plus": ("-mcpu=cortex-m0plus", "-mfloat-abi=soft"),
    "cortex-m3": ("-mcpu=cortex-m3", "-mfloat-abi=soft"),
    "cortex-m4": ("-mcpu=cortex-m4", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"),
    "cortex-m7": ("-mcpu=cortex-m7", "-mfloat-abi=hard", "-mfpu=fpv5-d16"),
    "cortex-m33": ("-mcpu=cortex-m33", "-mfloat-abi=hard", "-mfpu=fpv5-sp-d16"),
    "cortex-m55": ("-mcpu=cortex-m55", "-mfloat-abi=hard"),
}
HAS_DWT_CYCLES = {"cortex-m3", "cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55"}


@dataclass(frozen=True)
class MemoryMap:
    """Where code and data go: ROM (flash or code RAM), RAM, and optionally a region for samples."""

    rom_origin: int
    rom_length: int
    ram_origin: int
    ram_length: int
    samples_origin: int | None = None
    samples_length: int = 0

    def to_dict(self, stack_size: int) -> dict[str, Any]:
        values: dict[str, Any] = {
            "rom_origin": self.rom_origin,
            "rom_length": self.rom_length,
            "ram_origin": self.ram_origin,
            "ram_length": self.ram_length,
            "stack_size": stack_size,
        }
        if self.samples_origin is not None:
            values.update(samples_origin=self.samples_origin, samples_length=self.samples_length)
        return values


BOARDS_FILE = Path(__file__).with_name("boards.yml")
_REGION = re.compile(r"^\s*(0x[0-9a-f]+|\d+)\s*:\s*(\d+)\s*([KM]?)\s*$", re.IGNORECASE)
_SCALE = {"": 1, "K": 1 << 10, "M": 1 << 20}


def parse_region(text: str) -> tuple[int, int]:
    """`ORIGIN:SIZE` (e.g. 0x08000000:1M) → (origin, bytes)."""
    match = _REGION.match(str(text))
    if not match:
        raise ValueError(text)
    return int(match.group(1), 0), int(match.group(2)) * _SCALE[match.group(3).upper()]


def memory_from_regions(regions: dict[str, str]) -> MemoryMap:
    rom, ram = parse_region(regions["rom"]), parse_region(regions["ram"])
    samples = parse_region(regions["samples"]) if "samples" in regions else (None, 0)
    return MemoryMap(*rom, *ram, *samples)


@cache
def boards() -> dict[str, Any]:
    """boards.yml: QEMU boards and the memory maps of real ones."""
    return dict(yaml.safe_load(BOARDS_FILE.read_text(encoding="utf-8")))


def memory_presets() -> dict[str, MemoryMap]:
    return {name: memory_from_regions(regions) for name, regions in boards()["memory"].items()}


def stack_option(default: int = 16 * 1024) -> Option:
    return Option("stack_size", int, default, "bytes reserved for the stack (RAM stack)", min=1024, max=1 << 24)


DSP_CORES = ("cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55")  # __ARM_FEATURE_DSP with their -mcpu
MVE_CORES = ("cortex-m55",)  # __ARM_FEATURE_MVE (Helium) as well


class CortexMTarget(Target):
    """Base of Cortex-M targets: subclasses pick the core, the memory map and how to run."""

    requires: ClassVar[tuple[str, ...]] = ("arm_gcc",)

    def core(self) -> str:
        raise NotImplementedError

    def memory_map(self) -> MemoryMap:
        raise NotImplementedError

    def core_simd(self) -> str:
        if self.core() in MVE_CORES:
            return "mve"
        return "dsp" if self.core() in DSP_CORES else ""

    def counters(self) -> dict[str, bool]:
        """Which counters the firmware reads: `cycles` (DWT, probed) and/or `marks` (QEMU plugin)."""
        return {"cycles": self.core() in HAS_DWT_CYCLES, "marks": False, "systick": False}

    def counter_name(self) -> str:
        return "dwt"

    def uart(self) -> int | None:
        """Base address of a CMSDK UART for the output (None: semihosting)."""
        return None

    def profile(self) -> TargetProfile:
        gcc = Path(self.tool("arm_gcc"))
        flags = (*CORES[self.core()], "-mthumb")
        return TargetProfile(
            family=f"{self.core()}-{self.memory_family()}",
            toolchain="arm_gcc",
            toolchain_file="arm_gcc.cmake.j2",
            support=("bare_metal", "cortexm"),
            compile_flags=flags,
            link_flags=(*flags, "--specs=nano.specs", "-nostartfiles"),
            link_language="C",  # C++ objects need no libstdc++ runtime (see templates/tflmi)
            memory=self.memory_map().to_dict(int(self.opt("stack_size"))),
            toolchain_vars={"prefix": str(gcc.parent / gcc.name.removesuffix("gcc"))},
            template_values={"counters": self.counters(), "uart": self.uart()},
            counter=self.counter_name(),
        )

    def memory_family(self) -> str:
        return self.name
