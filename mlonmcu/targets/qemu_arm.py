"""QEMU's MPS2/MPS3 Cortex-M boards, with exact instruction counts from mlonmcu's TCG plugin."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import ClassVar

from mlonmcu.config import Option
from mlonmcu.contracts import HarnessRecord, Measurement
from mlonmcu.errors import StageError
from mlonmcu.process import Completed, run
from mlonmcu.targets import timing
from mlonmcu.targets.cortexm import CortexMTarget, MemoryMap, boards, memory_presets, stack_option
from mlonmcu.targets.qemu import PLUGIN, plugin_args, with_plugin_output
from mlonmcu.targets.target import timeout_option


def estimate_option(core: str) -> Option:
    """Estimated cycles, for a core whose reference manual publishes instruction timings."""

    def check(on: bool) -> None:
        if on:
            timing.check_core(core)

    return Option(
        "estimate_cycles",
        bool,
        False,
        "also estimate cycles: executed instructions weighted by the core's published timings "
        f"(Estimated Cycles; {', '.join(timing.ARM_CORES)} only; docs/timing.md)",
        check=check,
    )


class QemuArmTarget(CortexMTarget):
    """A Cortex-M board in QEMU: semihosting output and exit code, instructions counted by plugin."""

    machine: ClassVar[str]
    cpu: ClassVar[str]
    memory: ClassVar[MemoryMap]
    clock_hz: ClassVar[int]  # the board's SysTick clock (fallback counter)
    requires = ("arm_gcc", "qemu")
    optional = ("qemu_plugin",)
    options = (stack_option(), timeout_option(600.0))

    @property
    def plugin(self) -> bool:
        return "qemu_plugin" in self.components

    def core(self) -> str:
        return self.cpu

    def memory_map(self) -> MemoryMap:
        return self.memory

    def counters(self) -> dict[str, bool]:
        # QEMU models no DWT->CYCCNT: instructions come from the plugin, else from SysTick
        return {"cycles": False, "marks": self.plugin, "systick": not self.plugin}

    def counter_name(self) -> str:
        if not self.plugin:
            return "systick"
        return "qemu-plugin+timing" if self.opt("estimate_cycles") else "qemu-plugin"

    def timing_model(self) -> timing.TimingModel | None:
        return timing.MODELS[self.cpu] if self.opt("estimate_cycles") else None

    def adjust(self, record: HarnessRecord) -> HarnessRecord:
        """SysTick fallback: with -icount shift=0 an instruction takes 1 ns of virtual time, so
        instructions ≈ ticks · 1e9 / f — exact only to one tick (1e9 / f instructions)."""
        if self.plugin:
            return super().adjust(record)
        scale = 1e9 / self.clock_hz

        def scaled(m: Measurement) -> Measurement:
            if m.cycles is None:
                return m
            return replace(m, cycles=None, instructions=round(m.cycles * scale))

        return replace(
            record,
            setup=scaled(record.setup),
            runs=tuple(scaled(m) for m in record.runs),
            profile=tuple(scaled(m) for m in record.profile),
        )

    def execute(self, elf: Path, log: Path) -> Completed:
        qemu = Path(self.tool("qemu")).with_name("qemu-system-arm")
        args: list[str | Path] = [qemu, "-machine", self.machine, "-nographic", "-monitor", "none"]
        args += ["-serial", "none", "-semihosting-config", "enable=on,target=native", "-kernel", elf]
        if self.opt("estimate_cycles") and not self.plugin:
            raise StageError(f"{self.name}.estimate_cycles needs the QEMU plugin: run `mlonmcu setup {PLUGIN}`")
        plugin_log = None
        if self.plugin:
            extra, plugin_log = plugin_args(self.tool(PLUGIN), elf, log)
            args += extra
        else:
            args += ["-icount", "shift=0"]
        completed = run(args, log=log, timeout=self.opt("timeout"), check=False, what=qemu.name)
        return with_plugin_output(completed, plugin_log)


def board_targets() -> list[type[QemuArmTarget]]:
    """One target per QEMU board in boards.yml (the entry point of the Cortex-M QEMU targets)."""
    presets = memory_presets()
    targets: list[type[QemuArmTarget]] = []
    for name, board in boards()["qemu"].items():
        attrs = {
            "name": name,
            "help": board["help"],
            "machine": board["machine"],
            "cpu": board["core"],
            "memory": presets[board["memory"]],
            "clock_hz": int(board["clock_hz"]),
            "options": (*QemuArmTarget.options, estimate_option(board["core"])),
        }
        targets.append(type(f"QemuArmTarget_{name}", (QemuArmTarget,), attrs))
    return targets
