"""Target: what a firmware runs on, how it is started and how its counters are read.

A target knows nothing about backends. It gives the platform a :class:`TargetProfile`
(toolchain, flags, startup/linker/support templates) and turns an ELF into raw output text.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from mlonmcu.config import Option


@dataclass(frozen=True)
class TargetProfile:
    """How to build a firmware for a target. Two targets with equal profiles share one ELF."""

    family: str  # e.g. "riscv32-virt": the identity of the firmware build
    toolchain: str  # component name of the compiler
    toolchain_file: str  # template under templates/toolchains/
    support: tuple[str, ...]  # template directories under templates/targets/, all copied
    compile_flags: tuple[str, ...] = ()  # every language
    c_flags: tuple[str, ...] = ()  # C and assembler only
    cxx_flags: tuple[str, ...] = ()  # C++ only
    link_flags: tuple[str, ...] = ()
    link_language: str = ""  # "C": link C++ objects with the C driver (no libstdc++ on the target)
    toolchain_vars: dict[str, str] = field(default_factory=dict)  # values for the toolchain file
    template_values: dict[str, Any] = field(default_factory=dict)  # extra values for the support templates
    memory: dict[str, Any] = field(default_factory=dict)
    counter: str = "minstret"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def timeout_option(default: float) -> Option:
    return Option("timeout", "float", default, "seconds before a hung run is killed (Reason: timeout)")


class Target:
    name: ClassVar[str]
    help: ClassVar[str]
    options: ClassVar[tuple[Option, ...]] = ()
    requires: ClassVar[tuple[str, ...]] = ()
    optional: ClassVar[tuple[str, ...]] = ()  # components used when installed
    deterministic: ClassVar[bool] = True  # may RUN results be cached?
    hardware: ClassVar[bool] = False  # running needs a device attached (not just a program)

    def __init__(self, config: dict[str, Any], components: dict[str, dict[str, str]]):
        self.config = config
        self.components = components

    def opt(self, name: str) -> Any:
        return self.config[f"{self.name}.{name}"]

    def tool(self, component: str) -> str:
        return self.components[component]["location"]

    def profile(self) -> TargetProfile:
        raise NotImplementedError

    def run_settings(self) -> dict[str, Any]:
        """What besides the ELF determines the output (part of the RUN key)."""
        return {k: v for k, v in self.config.items() if k.startswith(f"{self.name}.")}

    def adjust(self, result: Any) -> None:
        """Turn raw counter readings into report figures where the target needs to (see systick)."""

    def execute(self, elf: Path, log: Path) -> str:
        """Run the firmware, return its output; raise RunTimeout/ToolError on failure."""
        raise NotImplementedError
