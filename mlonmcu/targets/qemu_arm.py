"""QEMU's MPS2/MPS3 Cortex-M boards, with exact instruction counts from mlonmcu's TCG plugin."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from mlonmcu.errors import StageError
from mlonmcu.platforms.elf import symbol
from mlonmcu.process import Completed, run
from mlonmcu.registry import TARGETS
from mlonmcu.targets.cortexm import CortexMTarget, MemoryMap, stack_option
from mlonmcu.targets.target import timeout_option

MB = 1 << 20
MARK_SYMBOL = "mlonmcu_mark"

# MPS2 FPGA images: 4 MB SSRAM1 for code at 0, SSRAM2/3 for data at 0x20000000, 16 MB PSRAM
# for the samples (at 0x21000000 on AN385/AN386, 0x60000000 on AN500)
MPS2 = MemoryMap(0x00000000, 4 * MB, 0x20000000, 4 * MB, 0x21000000, 16 * MB)
MPS2_AN500 = MemoryMap(0x00000000, 4 * MB, 0x20000000, 4 * MB, 0x60000000, 16 * MB)
# AN505 boots secure: SSRAM1's secure alias for code, SSRAM2 and SSRAM3 (secure aliases) for data
MPS2_AN505 = MemoryMap(0x10000000, 4 * MB, 0x38000000, 2 * MB, 0x38200000, 2 * MB)
# AN547: 512 KB ITCM for code, 512 KB DTCM for data, samples in the 2 MB SRAM
MPS3_AN547 = MemoryMap(0x00000000, 512 * 1024, 0x20000000, 512 * 1024, 0x01000000, 2 * MB)


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

    def adjust(self, result: Any) -> None:
        """SysTick fallback: with -icount shift=0 an instruction takes 1 ns of virtual time, so
        instructions ≈ ticks · 1e9 / f — exact only to one tick (1e9 / f instructions)."""
        if self.plugin:
            return
        scale = 1e9 / self.clock_hz
        for record in [result.setup, *result.runs, *result.profile]:
            if "cycles" in record:
                record["instructions"] = round(record.pop("cycles") * scale)

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


@TARGETS.register
class Mps2An385Target(QemuArmTarget):
    name = "mps2_an385"
    help = "QEMU mps2-an385: Cortex-M3, no FPU"
    machine, cpu, memory, clock_hz = "mps2-an385", "cortex-m3", MPS2, 25_000_000


@TARGETS.register
class Mps2An386Target(QemuArmTarget):
    name = "mps2_an386"
    help = "QEMU mps2-an386: Cortex-M4 with single-precision FPU"
    machine, cpu, memory, clock_hz = "mps2-an386", "cortex-m4", MPS2, 25_000_000


@TARGETS.register
class Mps2An500Target(QemuArmTarget):
    name = "mps2_an500"
    help = "QEMU mps2-an500: Cortex-M7 with double-precision FPU"
    machine, cpu, memory, clock_hz = "mps2-an500", "cortex-m7", MPS2_AN500, 25_000_000


@TARGETS.register
class Mps2An505Target(QemuArmTarget):
    name = "mps2_an505"
    help = "QEMU mps2-an505: Cortex-M33 (Armv8-M, secure state)"
    machine, cpu, memory, clock_hz = "mps2-an505", "cortex-m33", MPS2_AN505, 20_000_000


@TARGETS.register
class Mps3An547Target(QemuArmTarget):
    name = "mps3_an547"
    help = "QEMU mps3-an547: Cortex-M55 with Helium (MVE)"
    machine, cpu, memory, clock_hz = "mps3-an547", "cortex-m55", MPS3_AN547, 32_000_000
