"""What Spike and QEMU virt share: one bare-metal RV32 firmware (memory map, UART, exit)."""

from __future__ import annotations

from pathlib import Path

from mlonmcu.config import Option
from mlonmcu.contracts import TargetProfile
from mlonmcu.targets.target import Target

ROM_ORIGIN = 0x80000000
ROM_LENGTH = 32 << 20
RAM_ORIGIN = ROM_ORIGIN + ROM_LENGTH
RAM_LENGTH = 32 << 20

RISCV_OPTIONS = (
    Option("arch", str, "rv32imc", "RISC-V ISA for -march (e.g. rv32imc, rv32imafc)"),
    Option("abi", str, "ilp32", "RISC-V ABI for -mabi (ilp32, ilp32f)"),
    Option("stack_size", int, 64 * 1024, "bytes reserved for the stack (RAM stack)", min=1024, max=RAM_LENGTH // 2),
)


class RiscvVirtTarget(Target):
    """Base of targets that run the shared rv32 'virt' firmware."""

    memory_bytes = ROM_LENGTH + RAM_LENGTH

    def _cxx_flags(self) -> tuple[str, ...]:
        extras = self.components["riscv_gcc"].extras if "riscv_gcc" in self.components else {}
        if "cxx_bits" not in extras:
            return ()
        includes = (extras["cxx_bits"], extras["cxx_headers"], extras["libc_headers"])
        return (*(f"-isystem{d}" for d in includes), "-ftls-model=local-exec")

    def profile(self) -> TargetProfile:
        gcc = Path(self.tool("riscv_gcc"))
        arch, abi = self.opt("arch"), self.opt("abi")
        march = ["-march=" + arch, "-mabi=" + abi, "-misa-spec=2.2", "-mcmodel=medany"]
        return TargetProfile(
            family=f"riscv32-virt-{arch}-{abi}",
            toolchain="riscv_gcc",
            toolchain_file="riscv_gcc.cmake.j2",
            support=("bare_metal", "riscv_virt"),
            compile_flags=tuple(march),
            c_flags=("--specs=picolibc.specs",),
            # no libstdc++ for riscv64-unknown-elf: header-only C++ against the bare-metal headers
            # riscv_gcc assembled (and picolibc's C headers after them, not before: no specs file)
            cxx_flags=self._cxx_flags(),
            link_flags=(*march, "--specs=picolibc.specs", "-nostartfiles"),
            link_language="C",
            memory={
                "rom_origin": ROM_ORIGIN,
                "rom_length": ROM_LENGTH,
                "ram_origin": RAM_ORIGIN,
                "ram_length": RAM_LENGTH,
                "stack_size": int(self.opt("stack_size")),
            },
            toolchain_vars={"prefix": str(gcc.parent / gcc.name.removesuffix("gcc"))},
            counter="minstret",
        )
