"""Target `qemu_rv32`: QEMU riscv32 virt with -icount shift=0 (exact instruction counts), and
what every QEMU target shares: mlonmcu's plugin, which counts instruction classes between the
firmware's marks (templates/qemu_plugin/mlonmcu_insn.c)."""

from __future__ import annotations

from pathlib import Path

from mlonmcu.config import Option
from mlonmcu.errors import ConfigError, StageError
from mlonmcu.platforms.elf import symbol
from mlonmcu.process import Completed, run
from mlonmcu.targets import timing
from mlonmcu.targets.riscv import RISCV_OPTIONS, RiscvVirtTarget, has_v, is_vector, letters
from mlonmcu.targets.target import timeout_option

MARK_SYMBOL = "mlonmcu_mark"
PLUGIN = "qemu_plugin"


def plugin_args(library: str, elf: Path, log: Path) -> tuple[list[str | Path], Path]:
    """QEMU options that load the plugin on the firmware's mark, and the file it writes to."""
    mark = symbol(elf, MARK_SYMBOL)
    if mark is None:
        raise StageError(f"{elf.name} has no symbol {MARK_SYMBOL}: not built for an mlonmcu target")
    plugin_log = log.with_name(f"{log.stem}.plugin.log")
    plugin_log.unlink(missing_ok=True)
    return ["-plugin", f"{library},mark={mark[0]:#x}", "-d", "plugin", "-D", plugin_log], plugin_log


def with_plugin_output(completed: Completed, plugin_log: Path | None) -> Completed:
    """The firmware's output followed by the plugin's MARK lines."""
    if plugin_log is None or not plugin_log.is_file():
        return completed
    return Completed(completed.returncode, completed.output + plugin_log.read_text(errors="replace"))


class QemuRv32Target(RiscvVirtTarget):
    name = "qemu_rv32"
    help = (
        "QEMU riscv32 'virt' board; -icount shift=0 makes minstret an exact instruction count; with "
        "the QEMU plugin also the instruction mix and Estimated Cycles (qemu_rv32.timing_model)"
    )
    options = (
        *RISCV_OPTIONS,
        Option(
            "timing_model",
            str,
            "none",
            "estimate cycles of this core from the counted instruction classes (Estimated Cycles; "
            "needs `mlonmcu setup qemu_plugin`; docs/timing.md gives each model's error against the RTL)",
            choices=("none", *timing.RISCV_MODELS),
        ),
        timeout_option(600.0),
    )
    requires = ("riscv_gcc", "qemu")
    optional = (*RiscvVirtTarget.optional, PLUGIN)

    @property
    def plugin(self) -> bool:
        return PLUGIN in self.components

    def used_components(self) -> tuple[str, ...]:
        return (*super().used_components(), PLUGIN)  # what it counts changes with its version

    def timing_model(self) -> timing.TimingModel | None:
        name = self.opt("timing_model")
        if name == "none":
            return None
        if is_vector(self.arch()) or set(letters(self.arch())) & set("fdq"):
            raise ConfigError(
                f"qemu_rv32.timing_model={name} models an integer core without F, D or V: "
                f"qemu_rv32.arch={self.arch()} is not one (use rv32imc, rv32im or rv32i)"
            )
        return timing.MODELS[name]

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
        if self.timing_model() is not None and not self.plugin:
            raise StageError(f"qemu_rv32.timing_model needs the QEMU plugin: run `mlonmcu setup {PLUGIN}`")
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
        plugin_log = None
        if self.plugin:
            extra, plugin_log = plugin_args(self.tool(PLUGIN), elf, log)
            args += extra
        completed = run(args, log=log, timeout=self.opt("timeout"), check=False, what="qemu-system-riscv32")
        return with_plugin_output(completed, plugin_log)
