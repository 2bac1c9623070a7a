"""IREE's runtime as a library of every firmware: configured once per IREE commit, compiled per
target by the platform like TFLM's (platforms/libraries.py).

IREE's CMake does two things mlonmcu cannot do without it: it compiles flatcc's schema compiler
and generates the flatbuffer headers the runtime includes, and it knows which of its sources make
`iree_runtime_unified` for a configuration (the local-sync HAL driver, the embedded-ELF loader,
no threads). So a host configuration and build of that target, once, in HOME/cache/iree_runtime,
yields the generated headers and — from the build's compile commands — the source list, include
directories and definitions; the platform then compiles those sources with the target's
toolchain. IREE's own tree cannot hold its submodules (deps/iree is a verified clone), so the
build reads a tree of links: IREE's entries, with third_party/flatcc and third_party/printf
pointing at those components.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from mlonmcu.contracts import LibrarySpec
from mlonmcu.entry import Entry
from mlonmcu.errors import StageError
from mlonmcu.hashing import file_hash, value_hash
from mlonmcu.process import run

TARGET = "iree_runtime_unified"
# the configuration: one synchronous driver, executables as embedded ELF, no threads, no host OS services
CONFIGURATION = (
    "-DIREE_ERROR_ON_MISSING_SUBMODULES=OFF",
    "-DIREE_BUILD_COMPILER=OFF",
    "-DIREE_BUILD_TESTS=OFF",
    "-DIREE_BUILD_SAMPLES=OFF",
    "-DIREE_HAL_DRIVER_DEFAULTS=OFF",
    "-DIREE_HAL_DRIVER_LOCAL_SYNC=ON",
    "-DIREE_HAL_EXECUTABLE_LOADER_DEFAULTS=OFF",
    "-DIREE_HAL_EXECUTABLE_LOADER_EMBEDDED_ELF=ON",
    "-DIREE_HAL_EXECUTABLE_PLUGIN_DEFAULTS=OFF",
    "-DIREE_ENABLE_CPUINFO=OFF",
    "-DIREE_ENABLE_LIBBACKTRACE=OFF",
    "-DIREE_ENABLE_THREADING=OFF",
    "-DCMAKE_BUILD_TYPE=MinSizeRel",
    "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
)
MANIFEST = "runtime.json"
# the firmware's executables are a static library (backend.py): its loader, which the
# configuration's target leaves out
EXTRA_SOURCES = ("runtime/src/iree/hal/local/loaders/static_library_loader.c",)
# IREE's generic platform (its build_tools/cmake/generic_riscv32.cmake): no OS, no files, no
# threads; the firmware's sources include IREE's headers with the same (IREE_DEVICE_SIZE_T shapes
# its structs)
GENERIC_PLATFORM = (
    "IREE_PLATFORM_GENERIC=1",
    "IREE_FILE_IO_ENABLE=0",
    "IREE_DEVICE_SIZE_T=uint32_t",
    "PRIdsz=PRIu32",
    "IREE_SYNCHRONIZATION_DISABLE_UNSAFE=1",
)
# ... and no clock (nothing waits: one synchronous device); `\;` is a semicolon inside the
# quoted definition of the library's CMakeLists (a bare one would split it)
NO_CLOCK = "IREE_TIME_NOW_FN=return 0\\;"
# a wait returns at once, saying it reached its deadline: `return (bool)(deadline_ns);`
NO_WAIT = "IREE_WAIT_UNTIL_FN=(bool)"
# built with the target only to generate headers: flatcc's schema compiler runs on the host
HOST_TOOLS = ("third_party/flatcc/src/compiler/", "third_party/flatcc/src/cli/", "third_party/flatcc/external/")


@dataclass(frozen=True)
class IreeRuntime:
    iree: Path
    flatcc: Path
    printf: Path
    cmake: str
    commits: tuple[str, str, str]  # iree, flatcc, printf

    def library(self, cache_dir: Path, log: Path, libc: str) -> LibrarySpec:
        """The runtime as a static library spec (its host configuration made first if needed)
        for the host's OS (`libc` "host") or bare metal with picolibc or newlib (IREE's generic
        platform)."""
        generic = libc != "host"
        # what makes it: the sources, the configuration and this module (not all of mlonmcu)
        key = value_hash({"commits": self.commits, "configuration": CONFIGURATION, "code": file_hash(Path(__file__))})
        entry = Entry(cache_dir / "iree_runtime" / key[:24], f"IREE runtime configuration {key[:12]}")
        entry.ensure(lambda staging: self._configure(staging, log), thorough=False)
        data = json.loads((entry.path / MANIFEST).read_text())
        sources = (*data["sources"], *EXTRA_SOURCES)
        definitions = (*data["definitions"], *((*GENERIC_PLATFORM, NO_CLOCK, NO_WAIT) if generic else ()))
        if libc == "newlib":  # Debian's arm-none-eabi: GCC's stdint.h leaves newlib's 64-bit PRI macros out
            definitions += ("__int64_t_defined=1",)
        return LibrarySpec(
            name="iree_runtime",
            root=str(entry.path / "tree"),
            identity=value_hash([key, sources]),
            sources=sources,
            include_dirs=tuple(str(entry.path / d) for d in data["include_dirs"]),
            definitions=definitions,
        )

    def _configure(self, staging: Path, log: Path) -> None:
        tree, build = staging / "tree", staging / "build"
        tree.mkdir()
        for entry in self.iree.iterdir():
            if entry.name not in ("third_party", ".git"):
                (tree / entry.name).symlink_to(entry.resolve())
        third_party = tree / "third_party"
        third_party.mkdir()
        for entry in (self.iree / "third_party").iterdir():
            if entry.name not in ("flatcc", "printf"):
                (third_party / entry.name).symlink_to(entry.resolve())
        (third_party / "flatcc").symlink_to(self.flatcc.resolve())
        (third_party / "printf").symlink_to(self.printf.resolve())
        run([self.cmake, "-S", str(tree), "-B", str(build), *CONFIGURATION], log=log, what="IREE runtime configuration")
        run([self.cmake, "--build", str(build), "--target", TARGET, "-j2"], log=log, what="IREE runtime host build")
        sources, includes, definitions = _from_compile_commands(build, tree)
        if not sources:
            raise StageError(f"IREE's build of {TARGET} compiled no sources: see {log}")
        manifest = {
            "sources": sources,
            "include_dirs": [str(Path(i).relative_to(staging)) for i in includes],
            "definitions": definitions,
        }
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
        for built in [*build.rglob("*.o"), *build.rglob("*.a")]:  # only the generated headers are read
            built.unlink()


def _from_compile_commands(build: Path, tree: Path) -> tuple[list[str], list[str], list[str]]:
    """The C sources `TARGET` needs — those whose object the build of only it made — relative to
    the tree, and the include directories and definitions of their compile commands."""
    commands = json.loads((build / "compile_commands.json").read_text())
    sources: list[str] = []
    includes: dict[str, None] = {}
    definitions: dict[str, None] = {}
    staging = build.parent
    for command in commands:
        path = Path(command["file"])
        built = build / command.get("output", "")  # relative to the build tree
        if not path.name.endswith(".c") or not built.is_file():  # compiled for another target only
            continue
        relative = _within(path, tree)
        if relative is None or relative.startswith(HOST_TOOLS):
            continue
        sources.append(relative)
        for flag in shlex.split(command["command"]):
            if flag.startswith("-I"):
                include = Path(flag[2:])
                within = _within(include, staging) if include.is_absolute() else None
                if within is not None:
                    includes[str(staging / within)] = None
            elif flag.startswith("-D") and not re.match(r"-DNDEBUG\b", flag):
                definitions[flag[2:]] = None
    return sorted(dict.fromkeys(sources)), list(includes), list(definitions)


def _within(path: Path, root: Path) -> str | None:
    """`path` relative to `root` as the build wrote it (through the tree's links, not resolved)."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return None
