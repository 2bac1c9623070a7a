"""Platform `mlif`: benchmark firmware from templates, built with CMake for any target."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from mlonmcu.config import Option
from mlonmcu.errors import StageError, ToolError
from mlonmcu.models.samples import Sample
from mlonmcu.platforms.elf import memory_usage
from mlonmcu.platforms.libraries import build_library
from mlonmcu.platforms.templates import c_byte_lines, install_directory, render
from mlonmcu.process import run
from mlonmcu.registry import PLATFORMS
from mlonmcu.targets.target import TargetProfile

ELF_NAME = "firmware.elf"
MAP_NAME = "firmware.map"


@PLATFORMS.register
class MlifPlatform:
    name = "mlif"
    help = "CMake-built benchmark firmware: harness + backend sources + target start-up code"
    options: ClassVar[tuple[Option, ...]] = (
        Option("optimize", "choice", "O2", "compiler optimisation level", ("O2", "Os", "O3")),
        Option("repeat", "int", 1, "inferences on the first sample (the report's Run figures are their mean)"),
        Option("debug", "bool", False, "compile with -g (larger ELF, same code)"),
    )
    requires: ClassVar[tuple[str, ...]] = ("cmake",)

    def __init__(self, config: dict[str, Any]):
        self.config = config

    def compile(
        self,
        sources: Path,
        build: dict[str, Any],
        profile: TargetProfile,
        samples: list[Sample],
        print_outputs: bool,
        definitions: dict[str, str],
        out: Path,
        work: Path,
        log: Path,
        cache_root: Path,
        toolchain_version: str,
    ) -> dict[str, Any]:
        """Generate the CMake project in `out/project`, build it in `work`, keep ELF and map.

        Static libraries the backend asks for are built for the target first (or taken from the
        cache, where an earlier run left them).
        """
        archives = [
            str(build_library(spec, profile, toolchain_version, cache_root, log))
            for spec in build.get("static_libraries", [])
        ]
        project = out / "project"
        values = {"family": profile.family, "memory": profile.memory, **profile.template_values}
        support = [
            path
            for directory in profile.support
            for path in install_directory(f"targets/{directory}", project / "target", **values)
        ]
        harness = install_directory("mlif", project / "mlif", **self._harness_values(samples, print_outputs))
        render(f"cmake/{profile.toolchain_file}", project / "toolchain.cmake", **profile.toolchain_vars)

        c_sources = [p for p in harness + support if p.suffix in (".c", ".S", ".cc", ".cpp")]
        c_sources += [sources / s for s in build["sources"]]
        linker_scripts = [p for p in support if p.suffix == ".ld"]
        compile_flags = [
            *profile.compile_flags,
            f"-{self.config['mlif.optimize']}",
            "-ffunction-sections",
            "-fdata-sections",
            *(["-g"] if self.config["mlif.debug"] else []),
            *build.get("compile_flags", []),
        ]
        link_flags = [
            *profile.link_flags,
            *(f"-T{p}" for p in linker_scripts),
            "-Wl,--gc-sections",
            f"-Wl,-Map={work / MAP_NAME}",
        ]
        render(
            "cmake/CMakeLists.txt.j2",
            project / "CMakeLists.txt",
            model=build.get("model", "model"),
            backend=build.get("backend", "backend"),
            family=profile.family,
            languages=sorted({"C", "ASM", *build.get("languages", ["C"])}),
            sources=[p.as_posix() for p in c_sources],
            include_dirs=[
                (project / "mlif").as_posix(),
                (project / "target").as_posix(),
                *(str(sources / d) for d in build.get("include_dirs", ["."])),
            ],
            compile_flags=compile_flags,
            c_flags=list(profile.c_flags),
            cxx_flags=[*profile.cxx_flags, *build.get("cxx_flags", [])],
            definitions=[*(f"{k}={v}" for k, v in sorted(definitions.items())), *build.get("definitions", [])],
            link_language=profile.link_language if "CXX" in build.get("languages", []) else "",
            link_flags=link_flags,
            libraries=[*archives, *build.get("libraries", []), "m"],
        )
        build_dir = work / "cmake"
        run(
            [
                "cmake",
                "-S",
                project,
                "-B",
                build_dir,
                f"-DCMAKE_TOOLCHAIN_FILE={project / 'toolchain.cmake'}",
                "-DCMAKE_BUILD_TYPE=None",
            ],
            log=log,
            what="cmake configure",
        )
        try:
            run(["cmake", "--build", build_dir, "--parallel", "2"], log=log, what="firmware build")
        except ToolError as err:
            raise _memory_overflow(err, profile) or err from None
        shutil.copyfile(build_dir / ELF_NAME, out / ELF_NAME)
        shutil.copyfile(work / MAP_NAME, out / MAP_NAME)
        (out / ELF_NAME).chmod(0o755)
        return {"elf": ELF_NAME, "memory": memory_usage(out / ELF_NAME)}

    def _harness_values(self, samples: list[Sample], print_outputs: bool) -> dict[str, Any]:
        arrays = []
        for s, sample in enumerate(samples):
            for i, tensor in enumerate(sample):
                data = np.ascontiguousarray(tensor).tobytes()
                arrays.append({"name": f"sample{s}_input{i}", "size": len(data), "lines": c_byte_lines(data)})
        return {
            "arrays": arrays,
            "num_samples": len(samples),
            "num_inputs": len(samples[0]) if samples else 0,
            "repeat": max(1, int(self.config["mlif.repeat"])),
            "print_outputs": print_outputs,
        }


_OVERFLOW = re.compile(r"region `(\w+)' overflowed by (\d+) bytes")


def _memory_overflow(err: ToolError, profile: TargetProfile) -> StageError | None:
    """The linker's 'region overflowed' as a sentence with the sizes the user can act on."""
    found = _OVERFLOW.findall(err.tail + str(err))
    if not found:
        return None
    parts = []
    for region, excess in dict(found).items():
        key = region.lower()
        origin, length = profile.memory.get(f"{key}_origin"), profile.memory.get(f"{key}_length")
        where = f" ({length} bytes at {origin:#x})" if origin is not None and length is not None else ""
        parts.append(f"{region} overflowed by {excess} bytes{where}")
    return StageError(f"the firmware does not fit {profile.family}: " + "; ".join(parts))
