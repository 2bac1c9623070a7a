"""Target `spike`: the RISC-V ISA simulator (bare metal, HTIF exit, mcycle/minstret)."""

from __future__ import annotations

from pathlib import Path

from mlonmcu.process import Completed, run
from mlonmcu.targets.riscv import RISCV_OPTIONS, ROM_ORIGIN, RiscvVirtTarget
from mlonmcu.targets.target import timeout_option


class SpikeTarget(RiscvVirtTarget):
    name = "spike"
    help = "Spike RISC-V ISA simulator; counts retired instructions (spike has no timing model)"
    options = (*RISCV_OPTIONS, timeout_option(600.0))
    requires = ("riscv_gcc", "spike", "dtc")

    def execute(self, elf: Path, log: Path) -> Completed:
        args: list[str | Path] = [
            self.tool("spike"),
            f"--isa={self.simulated_isa()}",
            f"-m0x{ROM_ORIGIN:x}:0x{self.memory_bytes:x}",
            elf,
        ]
        return run(args, log=log, timeout=self.opt("timeout"), check=False, what="spike")
