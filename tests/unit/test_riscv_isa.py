"""RISC-V ISA strings: vector ISAs pick clang, link against a scalar multilib and tell each
simulator their VLEN; scalar ISAs build exactly as before."""

from __future__ import annotations

import pytest

from mlonmcu.config import Option
from mlonmcu.errors import ConfigError, StageError
from mlonmcu.setup.deps import Installed
from mlonmcu.targets.qemu import QemuRv32Target
from mlonmcu.targets.riscv import is_vector, scalar_arch
from mlonmcu.targets.spike import SpikeTarget

GCC = Installed("riscv_gcc", "riscv64-unknown-elf-gcc 12.2.0", "/usr/bin/riscv64-unknown-elf-gcc")
CLANG = Installed("riscv_llvm", "Debian clang version 19.1.7", "/usr/bin/clang-19")


@pytest.mark.parametrize(
    ("arch", "abi", "vector", "scalar"),
    [
        ("rv32imc", "ilp32", False, "rv32imc"),
        ("rv32gcv", "ilp32", True, "rv32imac"),  # GCC has no rv32gc/ilp32 multilib: it would pick rv64
        ("rv32gcv", "ilp32d", True, "rv32imafdc"),
        ("rv32gcv_zvl256b", "ilp32d", True, "rv32imafdc"),
        ("rv32imc_zve32x", "ilp32", True, "rv32imc"),
        ("rv32imfc_zve32f", "ilp32f", True, "rv32imfc"),
        ("rv32imac_zicsr", "ilp32", False, "rv32imac_zicsr"),
        ("rv32emc_zve32x", "ilp32e", True, "rv32emc"),
    ],
)
def test_vector_isas_link_against_a_scalar_multilib(arch, abi, vector, scalar):
    assert is_vector(arch) is vector
    assert scalar_arch(arch, abi) == scalar


def target(cls, **settings):
    config = {f"{cls.name}.{k}": v for k, v in settings.items()}
    return cls(config, {"riscv_gcc": GCC, "riscv_llvm": CLANG})


def test_scalar_isas_keep_the_gcc_firmware_and_ignore_vlen():
    spike = target(SpikeTarget, vlen=512)
    profile = spike.profile()
    assert profile.toolchain == "riscv_gcc" and profile.family == "riscv32-virt-rv32imc-ilp32"
    assert "-march=rv32imc" in profile.compile_flags and "riscv_llvm" not in spike.used_components()
    assert spike.simulated_isa() == "rv32imc" and "spike.vlen" not in spike.run_settings()
    assert target(QemuRv32Target).cpu_args() == []


def test_vector_isas_compile_c_with_clang_and_cxx_with_gcc():
    spike = target(SpikeTarget, arch="rv32gcv", vlen=256)
    profile = spike.profile()
    assert profile.toolchain == "riscv_llvm" and profile.family.endswith("-llvm")
    assert "-march=rv32gcv" in profile.c_flags and "-march=rv32imac" in profile.cxx_flags
    assert "-march=rv32imac" in profile.link_flags and "--specs=picolibc.specs" in profile.link_flags
    assert profile.toolchain_vars["clang"] == CLANG.location and profile.toolchain_vars["gcc_version"] == GCC.version
    assert "riscv_llvm" in spike.used_components() and spike.run_settings()["spike.vlen"] == 256
    assert spike.simulated_isa() == "rv32gcv_zvl256b"


def test_qemu_gets_the_vector_unit_as_cpu_properties():
    assert target(QemuRv32Target, arch="rv32gcv", vlen=512).cpu_args() == [
        "-cpu",
        "rv32,v=true,elen=64,vlen=512,vext_spec=v1.0",
    ]
    # QEMU 7.2 has no Zve32x: Zve32f adds only float vector instructions an integer firmware never runs
    assert target(QemuRv32Target, arch="rv32imc_zve32x").cpu_args()[1].startswith("rv32,Zve32f=true,vlen=128")


def test_gcc_cannot_build_vector_isas_and_clang_must_be_installed():
    with pytest.raises(ConfigError, match=r"spike\.toolchain=llvm"):
        target(SpikeTarget, arch="rv32gcv", toolchain="gcc").profile()
    without_clang = SpikeTarget({"spike.arch": "rv32gcv"}, {"riscv_gcc": GCC})
    with pytest.raises(StageError, match="mlonmcu setup riscv_llvm"):
        without_clang.profile()


def test_bad_isa_strings_and_vlens_are_usage_errors():
    arch: Option = SpikeTarget.option("arch")
    with pytest.raises(ConfigError, match="RV32 ISA string"):
        arch.parse("rv64gc", "spike.arch")
    with pytest.raises(ConfigError):
        SpikeTarget.option("vlen").parse("100", "spike.vlen")
    with pytest.raises(ConfigError, match="VLEN ≥ 128"):
        target(SpikeTarget, arch="rv32gcv", vlen=64).profile()
    assert target(SpikeTarget, arch="rv32imc_zve32x", vlen=32).simulated_isa() == "rv32imc_zve32x_zvl32b"


def test_tvmaot_builds_once_per_kind_of_core():
    """simd=auto reads the core's SIMD extension (part of the BUILD key); explicit values do not."""
    from mlonmcu import registry
    from mlonmcu.backends.tvm.backend import TvmAotBackend

    m4, m3, m55 = (registry.TARGETS.get(name)({}, {}) for name in ("mps2_an386", "mps2_an385", "mps3_an547"))
    vector, scalar = target(SpikeTarget, arch="rv32imc_zve32x"), target(SpikeTarget)
    auto = TvmAotBackend({}, {})
    facts = [auto.build_facts(t) for t in (vector, m4, m55, m3, scalar)]
    assert facts == [{"simd": "rvv"}, {"simd": "dsp"}, {"simd": "mve"}, {}, {}]
    assert TvmAotBackend({"tvmaot.simd": "off"}, {}).build_facts(vector) == {}
    auto.facts = auto.build_facts(vector)
    assert auto.schedule().simd == "rvv"
    auto.facts = {}
    assert auto.schedule().simd == "auto"  # scalar layouts, free variants
