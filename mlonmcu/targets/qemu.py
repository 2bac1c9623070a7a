"""Target `qemu_rv32`: QEMU riscv32 virt with -icount shift=0 (exact instruction counts)."""

from __future__ import annotations

from pathlib import Path

from mlonmcu.process import Completed, run
from mlonmcu.targets.riscv import RISCV_OPTIONS, RiscvVirtTarget
from mlonmcu.targets.target import timeout_option


class QemuRv32Target(RiscvVirtTarget):
    name = "qemu_rv32"
    help = "QEMU riscv32 'virt' board; -icount shift=0 makes mcycle/minstret exact instruction counts"
    options = (*RISCV_OPTIONS, timeout_option(600.0))
    requires = ("riscv_gcc", "qemu")

    def execute(self, elf: Path, log: Path) -> Completed:
        args: list[str | Path] = [
            self.tool("qemu"),
            "-machine",
            "virt",
            "-bios",
            "none",
            "-nographic",
            "-monitor",
            "none",
            "-serial",
            "stdio",
            "-icount",
            "shift=0",
            "-m",
            "128M",
            "-kernel",
            elf,
        ]
        return run(args, log=log, timeout=self.opt("timeout"), check=False, what="qemu-system-riscv32")
