"""Target `ibex`: lowRISC's Ibex core in simple_system, simulated cycle by cycle from its RTL by
Verilator. Run Cycles are mcycle, the only measured cycle counts the tool has (Spike and QEMU
count instructions); Run Instructions are minstret."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import ClassVar

from mlonmcu.config import Option
from mlonmcu.errors import ConfigError, SetupError, StageError
from mlonmcu.process import Completed, run
from mlonmcu.setup import ibex
from mlonmcu.targets.riscv import RiscvTarget
from mlonmcu.targets.target import timeout_option

MEMORY_SIZES = ("1M", "2M", "4M", "8M", "16M", "32M")
_EXIT_LINE = re.compile(r"^MLONMCU_IBEX_EXIT (-?\d+)$", re.MULTILINE)
_SPEED = re.compile(r"Simulation speed: ([0-9.e+]+) cycles/s")
CONSOLE = "ibex_simple_system.log"  # where simple_system writes what the firmware prints


class IbexTarget(RiscvTarget):
    name = "ibex"
    help = (
        "lowRISC Ibex (simple_system) simulated from its RTL by Verilator: measured cycles (mcycle); "
        "`mlonmcu setup ibex` (offline: --source ibex=PATH)"
    )
    options = (
        Option("config", str, "small", "Ibex configuration from ibex_configs.yaml (small, maxperf, opentitan, ...)"),
        Option(
            "memory",
            str,
            "4M",
            "memory of the simulated system, at an address equal to its size (half code, half data)",
            choices=MEMORY_SIZES,
        ),
        Option("stack_size", int, 64 * 1024, "bytes reserved for the stack (RAM stack)", min=1024),
        timeout_option(1800.0),
    )
    requires = ("riscv_gcc", "ibex", "verilator", "fusesoc")
    optional: ClassVar[tuple[str, ...]] = ()
    support = ("bare_metal", "riscv", "ibex")
    machine = "ibex"
    counter = "mcycle"
    counts_cycles = True

    @property
    def memory_size(self) -> int:
        return int(self.opt("memory").removesuffix("M")) << 20

    def parameters(self) -> dict[str, object]:
        try:
            return ibex.parameters(Path(self.components["ibex"].location), self.opt("config"))
        except SetupError as err:
            raise ConfigError(f"ibex.config={self.opt('config')}: {err}") from None

    def arch(self) -> str:
        return ibex.isa(self.parameters())[0]

    def abi(self) -> str:
        return ibex.isa(self.parameters())[1]

    def compiler(self) -> str:
        return "gcc"  # no vector unit: GCC compiles everything

    def simulated_isa(self) -> str:
        return self.arch()

    def run_settings(self) -> dict[str, object]:
        return {k: v for k, v in self.config.items() if k.startswith("ibex.")}

    def memory_map(self) -> dict[str, int]:
        size = self.memory_size
        half = size // 2
        stack = int(self.opt("stack_size"))
        if stack > half // 2:
            raise ConfigError(f"ibex.stack_size={stack} is more than half the data memory ({half} bytes)")
        return {
            "rom_origin": size,
            "rom_length": half,
            "ram_origin": size + half,
            "ram_length": half,
            "stack_size": stack,
            "vector_table": 1,
        }

    def execute(self, elf: Path, log: Path) -> Completed:
        installed = self.components
        with (
            ibex.simulator(installed["ibex"], installed["verilator"], self.opt("config"), self.memory_size, log) as sim,
            tempfile.TemporaryDirectory(prefix="mlonmcu-ibex-run-") as tmp,
        ):
            done = run(
                [sim, "+ibex_tracer_enable=0", f"--meminit=ram,{elf}"],
                log=log,
                cwd=Path(tmp),
                timeout=self.opt("timeout"),
                check=False,
                what="ibex simulator",
            )
            console = Path(tmp) / CONSOLE
            output = console.read_text(errors="replace") if console.is_file() else ""
        speed = _SPEED.search(done.output)
        if speed:
            with log.open("a") as fh:
                fh.write(f"[mlonmcu] ibex: {float(speed[1]) / 1e6:.2f} M simulated cycles per second\n")
        match = _EXIT_LINE.search(output)
        if match is None:
            detail = done.output.strip().splitlines()[-1] if done.output.strip() else "no output"
            raise StageError(
                f"the Ibex simulation ended before the firmware exited (exit code {done.returncode}: {detail})"
            )
        return Completed(int(match[1]), output)
