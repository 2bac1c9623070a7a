"""Platform `mlif`: benchmark firmware from templates, built with CMake for any target."""

from __future__ import annotations

import re
import shutil
from contextlib import ExitStack
from typing import Any

import numpy as np

from mlonmcu.config import Option
from mlonmcu.contracts import CompileResult, FirmwareRequest, Sample, TargetProfile
from mlonmcu.errors import StageError, ToolError
from mlonmcu.platforms.elf import memory_usage
from mlonmcu.platforms.libraries import library_archive
from mlonmcu.platforms.templates import c_byte_lines, install_directory, render
from mlonmcu.plugin import Plugin
from mlonmcu.process import run

ELF_NAME = "firmware.elf"
MAP_NAME = "firmware.map"


class MlifPlatform(Plugin):
    name = "mlif"
    help = "CMake-built benchmark firmware: harness + backend sources + target start-up code"
    options = (
        Option("optimize", str, "O2", "compiler optimisation level", choices=("O2", "Os", "O3")),
        Option(
            "repeat",
            int,
            1,
            "inferences on the first sample (the report's Run figures are their mean)",
            min=1,
            max=1000,
        ),
        Option("debug", bool, False, "compile with -g (larger ELF, same code)"),
    )
    requires = ("cmake",)

    def compile(self, request: FirmwareRequest) -> CompileResult:
        """Generate the CMake project in `out/project`, build it in `work`, keep ELF and map.

        Static libraries the backend asks for are built for the target first (or taken from the
        cache, where an earlier run left them).
        """
        r = request
        with ExitStack() as stack:
            archives = [
                str(stack.enter_context(library_archive(spec, r.profile, r.toolchain_version, r.cache_root, r.log)))
                for spec in r.build.static_libraries
            ]
            self._build_firmware(r, archives)
        return CompileResult(elf=ELF_NAME, map=MAP_NAME, memory=memory_usage(r.out / ELF_NAME))

    def _build_firmware(self, request: FirmwareRequest, archives: list[str]) -> None:
        sources, build, profile, out, work, log = (
            request.sources,
            request.build,
            request.profile,
            request.out,
            request.work,
            request.log,
        )
        definitions = request.definitions
        project = out / "project"
        values = {"family": profile.family, "memory": profile.memory, **profile.template_values}
        support = [
            path
            for directory in profile.support
            for path in install_directory(f"targets/{directory}", project / "target", **values)
        ]
        harness = install_directory(
            "mlif", project / "mlif", **self._harness_values(request.samples, request.print_outputs)
        )
        render(f"cmake/{profile.toolchain_file}", project / "toolchain.cmake", **profile.toolchain_vars)

        c_sources = [p for p in harness + support if p.suffix in (".c", ".S", ".cc", ".cpp")]
        c_sources += [sources / s for s in build.sources]
        linker_scripts = [p for p in support if p.suffix == ".ld"]
        compile_flags = [
            *profile.compile_flags,
            f"-{self.opt('optimize')}",
            "-ffunction-sections",
            "-fdata-sections",
            *(["-g"] if self.opt("debug") else []),
            *build.compile_flags,
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
            model=build.model,
            backend=build.backend,
            family=profile.family,
            languages=sorted({"C", "ASM", *build.languages}),
            sources=[p.as_posix() for p in c_sources],
            include_dirs=[
                (project / "mlif").as_posix(),
                (project / "target").as_posix(),
                *(str(sources / d) for d in build.include_dirs),
            ],
            compile_flags=compile_flags,
            c_flags=list(profile.c_flags),
            cxx_flags=[*profile.cxx_flags, *build.cxx_flags],
            definitions=[*(f"{k}={v}" for k, v in sorted(definitions.items())), *build.definitions],
            link_language=profile.link_language if "CXX" in build.languages else "",
            link_flags=link_flags,
            libraries=[*archives, *build.libraries, "m"],
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
            "repeat": int(self.opt("repeat")),
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
