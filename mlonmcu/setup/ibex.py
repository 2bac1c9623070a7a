"""lowRISC Ibex as an RTL simulator: the sources (git), Verilator (Debian), FuseSoC (PyPI), and the
Verilator model of simple_system, built once per (Ibex commit, configuration, memory size) and
kept next to the components, so that no run and no session builds it again.

simple_system has 1 MB of memory at 0x100000, fixed in its RTL. The model is built with the
memory the target asks for, at an address equal to its size (aligned as the address decoder
needs): the copy of the RTL FuseSoC exports is patched before Verilator compiles it.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml

from mlonmcu.entry import Entry
from mlonmcu.errors import SetupError
from mlonmcu.hashing import file_hash, value_hash
from mlonmcu.process import run
from mlonmcu.setup.component import AptComponent, PythonComponent
from mlonmcu.setup.deps import Installed
from mlonmcu.setup.git import GitComponent

logger = logging.getLogger("mlonmcu.setup")

CORE = "lowrisc:ibex:ibex_simple_system"
CORE_FILE = Path("examples/simple_system/ibex_simple_system.core")
CONFIGS_FILE = Path("ibex_configs.yaml")
EXECUTABLE = "Vibex_simple_system"
DEFAULT_MEMORY = 1 << 20  # simple_system's own: what its RTL says before it is patched


class IbexComponent(GitComponent):
    name = "ibex"
    help = "lowRISC Ibex RTL (target ibex: simple_system under Verilator), with Verilator and FuseSoC"
    default_url = "https://github.com/lowRISC/ibex"
    default_ref = "8b8ee086aef72e0833b7f0493d9d33f1e4d3c8e2"
    companions = ("verilator", "fusesoc")

    def found(self) -> Installed:
        found = super().found()
        # the Verilator models built from this checkout (one per configuration and memory size)
        return Installed(found.name, found.version, found.location, {"models": str(self.deps_dir / "ibex_models")})


class VerilatorComponent(AptComponent):
    """libelf-dev: simple_system's memory loader (a DPI library) reads ELF files with libelf."""

    name = "verilator"
    help = "Verilator (Debian), which compiles the Ibex RTL into a simulator; libelf for its ELF loader"
    packages = ("verilator", "libelf-dev", "g++", "make")
    executable = "verilator"
    on_request = True  # only for target ibex: `mlonmcu setup ibex` brings it


class FusesocComponent(PythonComponent):
    name = "fusesoc"
    help = "FuseSoC (PyPI, installed with mlonmcu), which resolves Ibex's cores for Verilator"
    distribution = "fusesoc"
    pin = "2.4.3"  # what Ibex's python-requirements.txt pins
    module = "fusesoc"


def configurations(checkout: Path) -> dict[str, dict[str, object]]:
    """ibex_configs.yaml: configuration name → its parameters."""
    path = checkout / CONFIGS_FILE
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise SetupError(f"ibex: cannot read the configurations in {path}: {err}") from None
    return {str(k): dict(v) for k, v in data.items() if isinstance(v, dict)}


def parameters(checkout: Path, config: str) -> dict[str, object]:
    """The configuration's parameters that simple_system takes (at the pinned commit it has no
    BaseIsa, which ibex_configs.yaml lists)."""
    known = configurations(checkout)
    if config not in known:
        raise SetupError(f"ibex: no configuration '{config}' in {checkout / CONFIGS_FILE}; known: {', '.join(known)}")
    core = yaml.safe_load((checkout / CORE_FILE).read_text())
    accepted = set(core.get("parameters", {}))
    return {k: v for k, v in known[config].items() if k in accepted}


def isa(params: dict[str, object]) -> tuple[str, str]:
    """-march and -mabi for firmware of a configuration: RV32I/E, M unless RV32MNone, C always
    (every configuration has Zca), and the ratified bit-manipulation subsets GCC 12 knows."""
    base = "rv32e" if int(str(params.get("RV32E", 0))) else "rv32i"
    letters = base + ("" if str(params.get("RV32M", "")).endswith("RV32MNone") else "m") + "c"
    bitmanip = str(params.get("RV32B", "ibex_pkg::RV32BNone")).removeprefix("ibex_pkg::")
    extensions = {"RV32BNone": "", "RV32BBalanced": "_zba_zbb_zbs"}.get(bitmanip, "_zba_zbb_zbc_zbs")
    return letters + extensions, "ilp32e" if base == "rv32e" else "ilp32"


def _replace_once(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    if text.count(old) != 1:
        raise SetupError(
            f"ibex: {path.name} is not the simple_system this mlonmcu knows (no single '{old}'); "
            f"use the pinned commit {IbexComponent.default_ref[:12]} or ibex.memory=1M"
        )
    path.write_text(text.replace(old, new))


def _patch_memory(sources: Path, memory: int) -> None:
    """RAM of `memory` bytes at address `memory` (boot address and ELF loader follow)."""
    core = sources / "lowrisc_ibex_ibex_simple_system_core_0"
    rtl, header = core / "rtl" / "ibex_simple_system.sv", core / "ibex_simple_system.h"
    _replace_once(rtl, "cfg_device_addr_base[Ram] = 32'h100000;", f"cfg_device_addr_base[Ram] = 32'h{memory:x};")
    _replace_once(rtl, "cfg_device_addr_mask[Ram] = ~32'hFFFFF;", f"cfg_device_addr_mask[Ram] = ~32'h{memory - 1:x};")
    _replace_once(rtl, ".boot_addr_i               (32'h00100000)", f".boot_addr_i               (32'h{memory:08x})")
    _replace_once(rtl, ".Depth(1024*1024/4)", f".Depth({memory // 4})")
    _replace_once(header, "kRAM_BaseAddr = 0x100000u;", f"kRAM_BaseAddr = 0x{memory:x}u;")
    _replace_once(header, "kRAM_SizeBytes = 0x100000u;", f"kRAM_SizeBytes = 0x{memory:x}u;")


def _without_tracing(config_mk: Path, log: Path) -> None:
    """Drop waveform tracing from the Verilator options: mlonmcu never dumps waves, and the model
    without it simulates 1.3x faster, builds in 46 s instead of 78 s and is 1 MB instead of 10."""
    text = config_mk.read_text()
    lean = re.sub(r" (--trace-max-array \d+|--trace[-a-z]*|-DVM_TRACE_FMT_FST)(?=[ \"])", "", text)
    lean = lean.replace(' -g"', '"')
    config_mk.write_text(lean)
    with log.open("a") as fh:
        if "--trace" in lean or lean == text:
            fh.write(f"[mlonmcu] ibex: tracing options not recognised in {config_mk}; building as FuseSoC set it up\n")
        else:
            fh.write("[mlonmcu] ibex: Verilator model without waveform tracing\n")


def _build(checkout: Path, params: dict[str, object], memory: int, staging: Path, log: Path) -> None:
    options = [f"--{k}={v}" for k, v in params.items()]
    # FuseSoC's pre-build check runs `python3` and imports edalize: ours, on PATH first
    env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    with tempfile.TemporaryDirectory(prefix="mlonmcu-ibex-") as tmp:
        root = Path(tmp) / "build"
        fusesoc = [sys.executable, "-m", "fusesoc.main", f"--cores-root={checkout}"]
        run(
            [*fusesoc, "run", "--target=sim", "--setup", f"--build-root={root}", CORE, *options],
            log=log,
            cwd=Path(tmp),
            env=env,
            what="fusesoc setup (ibex simple_system)",
        )
        work = root / "lowrisc_ibex_ibex_simple_system_0" / "sim-verilator"
        if memory != DEFAULT_MEMORY:
            _patch_memory(work / "src", memory)
        _without_tracing(work / "config.mk", log)
        jobs = str(os.cpu_count() or 1)
        # -O2 instead of Verilator's -Os: 11 % more simulated cycles per second
        run(
            ["make", "-C", work, "-j", jobs, "OPT_FAST=-O2"],
            log=log,
            env=env,
            what="verilator build (ibex simple_system)",
        )
        shutil.copy2(work / EXECUTABLE, staging / EXECUTABLE)
    (staging / "model.yml").write_text(yaml.safe_dump({"parameters": params, "memory": memory}, sort_keys=True))


@contextmanager
def simulator(ibex: Installed, verilator: Installed, config: str, memory: int, log: Path) -> Iterator[Path]:
    """The Verilator model for this configuration and memory size, built on first use (about a
    minute on 2 cores) and protected from cleanup while the caller simulates with it."""
    checkout = Path(ibex.location)
    params = parameters(checkout, config)
    key = value_hash(
        {
            "ibex": ibex.version,
            "parameters": params,
            "memory": memory,
            "verilator": verilator.version,
            "code": file_hash(Path(__file__)),
        }
    )
    models = Path(ibex.extras.get("models", checkout.parent / "ibex_models"))
    entry = Entry(models / f"{config}-{memory >> 20}M-{key[:16]}", f"Ibex model {config} ({memory >> 20} MB)")

    def build(staging: Path) -> None:
        logger.info("building the Ibex Verilator model '%s' with %d MB (once, about a minute)", config, memory >> 20)
        with log.open("a") as fh:
            fh.write(f"[mlonmcu] building the Ibex Verilator model '{config}' ({memory >> 20} MB) in {entry.path}\n")
        _build(checkout, params, memory, staging, log)

    with entry.using(build, thorough=False) as hit:
        if hit:
            with log.open("a") as fh:
                fh.write(f"[mlonmcu] ibex: reusing the Verilator model {entry.path}\n")
        yield entry.path / EXECUTABLE
