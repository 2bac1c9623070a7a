"""QEMU's MPS2/MPS3 Cortex-M boards, with exact instruction counts from mlonmcu's TCG plugin."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import ClassVar

from mlonmcu.contracts import HarnessRecord, Measurement
from mlonmcu.errors import StageError
from mlonmcu.platforms.elf import symbol
from mlonmcu.process import Completed, run
from mlonmcu.targets.cortexm import CortexMTarget, MemoryMap, boards, memory_presets, stack_option
from mlonmcu.targets.target import timeout_option

MARK_SYMBOL = "mlonmcu_mark"


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
        return "qemu-plugin" if self.plugin else "systick"

    def adjust(self, record: HarnessRecord) -> HarnessRecord:
        """SysTick fallback: with -icount shift=0 an instruction takes 1 ns of virtual time, so
        instructions ≈ ticks · 1e9 / f — exact only to one tick (1e9 / f instructions)."""
        if self.plugin:
            return record
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
        plugin_log = log.with_name(f"{log.stem}.plugin.log")
        plugin_log.unlink(missing_ok=True)
        args: list[str | Path] = [qemu, "-machine", self.machine, "-nographic", "-monitor", "none"]
        args += ["-serial", "none", "-semihosting-config", "enable=on,target=native", "-kernel", elf]
        if self.plugin:
            mark = symbol(elf, MARK_SYMBOL)
            if mark is None:
                raise StageError(f"{elf.name} has no symbol {MARK_SYMBOL}: not built for an mlonmcu Cortex-M target")
            args += ["-plugin", f"{self.tool('qemu_plugin')},mark={mark[0]:#x}", "-d", "plugin", "-D", plugin_log]
        else:
            args += ["-icount", "shift=0"]
        completed = run(args, log=log, timeout=self.opt("timeout"), check=False, what=qemu.name)
        marks = plugin_log.read_text(errors="replace") if plugin_log.is_file() else ""
        return Completed(completed.returncode, completed.output + marks)


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
        }
        targets.append(type(f"QemuArmTarget_{name}", (QemuArmTarget,), attrs))
    return targets
