"""Target `qemu_rv32`: QEMU riscv32 virt with -icount shift=0 (exact instruction counts)."""

from __future__ import annotations

from pathlib import Path

from mlonmcu.process import Completed, run
from mlonmcu.targets.riscv import RISCV_OPTIONS, RiscvVirtTarget, has_v
from mlonmcu.targets.target import timeout_option


class QemuRv32Target(RiscvVirtTarget):
    name = "qemu_rv32"
    help = "QEMU riscv32 'virt' board; -icount shift=0 makes mcycle/minstret exact instruction counts"
    options = (*RISCV_OPTIONS, timeout_option(600.0))
    requires = ("riscv_gcc", "qemu")

    def cpu_args(self) -> list[str]:
        """QEMU 7.2 enables vectors per CPU property (default: none). It has V (ELEN 64) and
        Zve32f/Zve64f; Zve32x/Zve64x run as Zve32f/Zve64f — supersets that add only the float
        vector instructions an integer firmware never executes (same counts)."""
        if not self.vector:
            return []
        extensions = self.opt("arch").split("_")[1:]
        zve = next((e for e in extensions if e.startswith("zve")), "")
        unit = f"Zve{zve[3:5]}f=true" if zve and not has_v(self.opt("arch")) else "v=true,elen=64"
        return ["-cpu", f"rv32,{unit},vlen={self.opt('vlen')},vext_spec=v1.0"]

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
            *self.cpu_args(),
            "-icount",
            "shift=0",
            "-m",
            "128M",
            "-kernel",
            elf,
        ]
        return run(args, log=log, timeout=self.opt("timeout"), check=False, what="qemu-system-riscv32")
