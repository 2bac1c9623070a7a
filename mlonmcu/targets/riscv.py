"""What RV32 targets share: a bare-metal firmware (start-up, counters, traps; Spike and QEMU virt
also one memory map, UART and exit, Ibex its own), and the RISC-V ISA string it is built for —
including vector ISAs (V, Zve32x/f), which GCC 12 cannot
compile intrinsics for: their C and assembler come from clang (component `riscv_llvm`), the C++
and the link from GCC with picolibc (see docs/riscv-vector.md)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar

from mlonmcu.config import Option
from mlonmcu.contracts import TargetProfile
from mlonmcu.errors import ConfigError, StageError
from mlonmcu.targets.target import Target

ROM_ORIGIN = 0x80000000
ROM_LENGTH = 32 << 20
RAM_ORIGIN = ROM_ORIGIN + ROM_LENGTH
RAM_LENGTH = 32 << 20
VLENS = (32, 64, 128, 256, 512, 1024)
DEFAULT_VLEN = 128
# the letters GCC's multilibs (and picolibc) are built for, per ABI: a vector ISA links against these
_MULTILIB_LETTERS = {"ilp32": "imac", "ilp32e": "emac", "ilp32f": "imafc", "ilp32d": "imafdc"}
_ARCH = re.compile(r"rv32([a-z]+)((?:_[a-z0-9]+)*)")


def _parts(arch: str) -> tuple[str, list[str]]:
    """Single-letter extensions (g expanded) and the multi-letter ones of an ISA string."""
    match = _ARCH.fullmatch(arch)
    if not match:
        raise ValueError("expected an RV32 ISA string such as rv32imc, rv32gcv or rv32imc_zve32x")
    return match[1].replace("g", "imafd"), [e for e in match[2].split("_") if e]


def letters(arch: str) -> str:
    """The single-letter extensions of an ISA string (g expanded): rv32imc → imc."""
    return _parts(arch)[0]


def has_v(arch: str) -> bool:
    """The full V extension (ELEN 64), not only an embedded Zve* subset."""
    return "v" in _parts(arch)[0]


def is_vector(arch: str) -> bool:
    return has_v(arch) or any(e.startswith("zve") for e in _parts(arch)[1])


def scalar_arch(arch: str, abi: str) -> str:
    """The ISA GCC compiles the C++ and links for: without the vector extensions and narrowed to
    a multilib that exists for the ABI (GCC 12 picks none for rv32gcv and falls back to rv64)."""
    letters, extensions = _parts(arch)
    keep = _MULTILIB_LETTERS.get(abi, "imac")
    base = "".join(c for c in "eimafdc" if c in letters and c in keep)
    rest = [e for e in extensions if not e.startswith("zv")]
    return "_".join([f"rv32{base}", *rest])


RISCV_OPTIONS = (
    Option(
        "arch",
        str,
        "rv32imc",
        "RISC-V ISA for -march (e.g. rv32imc, rv32imafc; vector: rv32gcv, rv32imc_zve32x)",
        check=_parts,
    ),
    Option(
        "abi",
        str,
        "ilp32",
        "RISC-V ABI for -mabi (ilp32, ilp32e, ilp32f, ilp32d)",
        choices=("ilp32", "ilp32e", "ilp32f", "ilp32d"),
    ),
    Option(
        "vlen",
        int,
        DEFAULT_VLEN,
        "vector register length in bits of the simulated core (vector ISAs only; V needs ≥ 128)",
        choices=VLENS,
    ),
    Option(
        "toolchain",
        str,
        "auto",
        "C compiler: gcc, llvm (clang; `mlonmcu setup riscv_llvm`), or auto: llvm for vector ISAs "
        "(GCC 12 has no RVV intrinsics), gcc otherwise. C++ and the link always use GCC",
        choices=("auto", "gcc", "llvm"),
    ),
    Option("stack_size", int, 64 * 1024, "bytes reserved for the stack (RAM stack)", min=1024, max=RAM_LENGTH // 2),
)


class RiscvTarget(Target):
    """Base of targets that run a bare-metal rv32 firmware (templates/targets/riscv)."""

    support: ClassVar[tuple[str, ...]] = ("bare_metal", "riscv", "riscv_virt")
    machine: ClassVar[str] = "virt"  # in the firmware family: the memory map and devices
    counter: ClassVar[str] = "minstret"  # what the Counter column says counted
    counts_cycles: ClassVar[bool] = False  # mcycle counts cycles (an RTL core), not instructions (Spike, QEMU)
    optional: ClassVar[tuple[str, ...]] = ("riscv_llvm",)  # with <target>.toolchain=llvm (the default for vector ISAs)

    def arch(self) -> str:
        return self.opt("arch")

    def abi(self) -> str:
        return self.opt("abi")

    def memory_map(self) -> dict[str, int]:
        return {
            "rom_origin": ROM_ORIGIN,
            "rom_length": ROM_LENGTH,
            "ram_origin": RAM_ORIGIN,
            "ram_length": RAM_LENGTH,
            "stack_size": int(self.opt("stack_size")),
        }

    @property
    def vector(self) -> bool:
        return is_vector(self.arch())

    def core_simd(self) -> str:
        return "rvv" if self.vector else ""

    def compiler(self) -> str:
        """gcc or llvm, as the settings resolve."""
        choice = self.opt("toolchain")
        if choice == "auto":
            return "llvm" if self.vector else "gcc"
        if choice == "gcc" and self.vector:
            raise ConfigError(
                f"{self.name}.arch={self.arch()} is a vector ISA, which GCC 12 cannot build for: "
                f"use {self.name}.toolchain=llvm (or auto)"
            )
        return choice

    def used_components(self) -> tuple[str, ...]:
        """clang's version keys only the runs it compiles."""
        return self.requires + (self.optional if self.compiler() == "llvm" else ())

    def simulated_isa(self) -> str:
        """The ISA string for Spike: VLEN as Zvl<N>b (a vector ISA's minimum is 128, Zve32* 32)."""
        arch = self.arch()
        return f"{arch}_zvl{self.opt('vlen')}b" if self.vector else arch

    def run_settings(self) -> dict[str, object]:
        """VLEN changes nothing for a scalar ISA: not part of its RUN key."""
        settings = super().run_settings()
        if not self.vector:
            settings.pop(f"{self.name}.vlen", None)
        return settings

    def template_values(self) -> dict[str, object]:
        """Spike's and QEMU's mcycle equals minstret: the firmware reads it only where it counts cycles."""
        return {"counters": {"cycles": self.counts_cycles}}

    def _cxx_flags(self) -> tuple[str, ...]:
        extras = self.components["riscv_gcc"].extras if "riscv_gcc" in self.components else {}
        if "cxx_bits" not in extras:
            return ()
        includes = (extras["cxx_bits"], extras["cxx_headers"], extras["libc_headers"])
        return (*(f"-isystem{d}" for d in includes), "-ftls-model=local-exec")

    def profile(self) -> TargetProfile:
        gcc = Path(self.tool("riscv_gcc"))
        arch, abi = self.arch(), self.abi()
        prefix = str(gcc.parent / gcc.name.removesuffix("gcc"))
        memory = self.memory_map()
        if has_v(arch) and int(self.opt("vlen")) < 128:
            raise ConfigError(f"{self.name}.vlen={self.opt('vlen')}: the V extension needs VLEN ≥ 128 (Zve32x/f: ≥ 32)")
        if self.compiler() == "llvm":
            return self._llvm_profile(arch, abi, prefix, memory)
        march = ["-march=" + arch, "-mabi=" + abi, "-misa-spec=2.2", "-mcmodel=medany"]
        return TargetProfile(
            family=f"riscv32-{self.machine}-{arch}-{abi}",
            toolchain="riscv_gcc",
            toolchain_file="riscv_gcc.cmake.j2",
            support=self.support,
            compile_flags=tuple(march),
            c_flags=("--specs=picolibc.specs",),
            # no libstdc++ for riscv64-unknown-elf: header-only C++ against the bare-metal headers
            # riscv_gcc assembled (and picolibc's C headers after them, not before: no specs file)
            cxx_flags=self._cxx_flags(),
            link_flags=(*march, "--specs=picolibc.specs", "-nostartfiles"),
            link_language="C",
            memory=memory,
            toolchain_vars={"prefix": prefix},
            template_values=self.template_values(),
            counter=self.counter,
        )

    def _llvm_profile(self, arch: str, abi: str, prefix: str, memory: dict[str, int]) -> TargetProfile:
        """C and assembler from clang for the full ISA; C++ and the link from GCC for the scalar
        multilib (same ABI: the objects link together; picolibc's headers for both)."""
        if "riscv_llvm" not in self.components:
            raise StageError(
                f"{self.name}: arch {arch} needs clang (component riscv_llvm): run `mlonmcu setup riscv_llvm`"
            )
        gcc_march = ["-march=" + scalar_arch(arch, abi), "-mabi=" + abi, "-misa-spec=2.2"]
        libc = self.components["riscv_gcc"].extras.get("libc_headers", "/usr/lib/picolibc/riscv64-unknown-elf/include")
        return TargetProfile(
            family=f"riscv32-{self.machine}-{arch}-{abi}-llvm",
            toolchain="riscv_llvm",
            toolchain_file="riscv_llvm.cmake.j2",
            support=self.support,
            compile_flags=("-mcmodel=medany",),
            c_flags=("--target=riscv32-unknown-elf", f"-march={arch}", f"-mabi={abi}", f"-isystem{libc}"),
            cxx_flags=(*gcc_march, *self._cxx_flags()),
            link_flags=(*gcc_march, "-mcmodel=medany", "--specs=picolibc.specs", "-nostartfiles"),
            link_language="C",
            memory=memory,
            toolchain_vars={
                "prefix": prefix,
                "clang": self.tool("riscv_llvm"),
                "gcc_version": self.components["riscv_gcc"].version,  # C++ and link: in the library key
            },
            template_values=self.template_values(),
            counter=self.counter,
        )


class RiscvVirtTarget(RiscvTarget):
    """Spike and QEMU virt: the same ELF runs on both (ROM and RAM of 32 MB each)."""

    memory_bytes = ROM_LENGTH + RAM_LENGTH
