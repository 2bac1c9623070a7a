"""A TFLM source tree: which files make the library, how it is compiled, which ops it offers.

Derived from the checkout itself (not its Makefile, which needs network access and Python
packages to evaluate): the library is the interpreter core, arena allocators, memory planners,
the tflite bridge, the reference kernels and the shared TFLite sources, without tests,
examples, tools, platform ports, optimized kernel variants and the signal library.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from mlonmcu.contracts import SourceGroup
from mlonmcu.data import templates_dir
from mlonmcu.entry import Entry
from mlonmcu.errors import StageError
from mlonmcu.hashing import file_hash, value_hash

MICRO = "tensorflow/lite/micro"
CORE_DIRS = ("", "arena_allocator", "memory_planner", "tflite_bridge")
KERNEL_DIR = "kernels"
SHARED_ROOTS = ("tensorflow/lite", "tensorflow/compiler")
EXCLUDED_FILES = {"tensorflow/lite/array.cc"}  # not with TF_LITE_STATIC_MEMORY
_TEST_HELPER = re.compile(
    r"(_test|test_helpers?|test_helper_custom_ops|_test_common|fake_micro_context|mock_micro_graph"
    r"|kernel_runner)\.cc$"
)
FLATBUFFERS_PATCH = "tensorflow/lite/micro/tools/make/flatbuffers.patch"
RESOLVER_HEADER = "tensorflow/lite/micro/micro_mutable_op_resolver.h"
# a kernel's registration function, defined with a body (`Register_CONV_2D() {`)
_REGISTERS = re.compile(r"TFLMRegistration\s*\*?\s*(?:[\w:]+::)?Register_(\w+)\s*\(\s*\)\s*\{")
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)

# TFLM's own build: core -Os, kernels -O2 (an all--Os library runs several times slower)
CORE_OPTIMIZATION = "-Os"
KERNEL_OPTIMIZATION = "-O2"
# GCC 12 with -mcpu=cortex-m55 if-converts a float conversion of this kernel into an
# IT-predicated vcvtne.f32.s32 that gas rejects in MVE mode; both passes off (the first alone
# is not enough), on every target, so that one library recipe serves all
NO_IF_CONVERSION = ("-fno-if-conversion", "-fno-if-conversion2")
IF_CONVERSION_VICTIMS = ("/resize_nearest_neighbor.cc",)
CXX_FLAGS = (
    "-std=c++17",
    "-fno-rtti",
    "-fno-exceptions",
    "-fno-threadsafe-statics",
    "-fno-unwind-tables",
    "-fno-asynchronous-unwind-tables",
)
DEFINITIONS = (
    "TF_LITE_STATIC_MEMORY",
    "TF_LITE_DISABLE_X86_NEON",
    "KERNELS_OPTIMIZED_FOR_SPEED",
    "NDEBUG",
    "TF_LITE_STRIP_ERROR_STRINGS",
)


@dataclass(frozen=True)
class TflmTree:
    root: Path
    flatbuffers: Path
    gemmlowp: Path
    commits: tuple[str, str, str]  # tflm, flatbuffers, gemmlowp

    @cached_property
    def sources(self) -> list[str]:
        """Library sources, relative to the TFLM root."""
        micro = self.root / MICRO
        if not micro.is_dir():
            raise StageError(f"{self.root} is not a TFLite Micro checkout (no {MICRO})")
        found = []
        for sub in (*CORE_DIRS, KERNEL_DIR):
            found += sorted((micro / sub).glob("*.cc"))
        for shared in SHARED_ROOTS:
            for path in sorted((self.root / shared).rglob("*.cc")):
                rel = path.relative_to(self.root).as_posix()
                if not rel.startswith(MICRO + "/") and not rel.startswith("tensorflow/lite/experimental/"):
                    found.append(path)
        sources = [p.relative_to(self.root).as_posix() for p in found]
        return [s for s in sources if s not in EXCLUDED_FILES and not _TEST_HELPER.search(s)]

    def is_kernel(self, source: str) -> bool:
        return source.startswith(f"{MICRO}/{KERNEL_DIR}/")

    def registrations(self, source: str) -> list[str]:
        """The `Register_X` functions a source defines (X: CONV_2D, ...); none for a helper."""
        return _REGISTERS.findall(self._text(source))

    def _text(self, source: str) -> str:
        return (self.root / source).read_text(errors="replace")

    def select(self, sources: list[str], registrations: set[str]) -> list[str]:
        """The library for a model: everything but the kernels, the kernel sources that define the
        wanted `Register_X`, and the helpers those need (`conv.cc` includes `kernels/conv.h`, whose
        functions `conv_common.cc` defines), followed through includes. Two thirds fewer files
        to compile than every kernel; the linker would have kept only these objects anyway."""
        kernels = [s for s in sources if self.is_kernel(s)]
        defines = {s: set(self.registrations(s)) for s in kernels}
        missing = registrations - set().union(*defines.values())
        if missing:
            names = ", ".join(f"Register_{name}" for name in sorted(missing))
            raise StageError(f"no source of TFLM {self.commits[0][:12]} defines {names}")
        helpers: dict[str, list[str]] = {}  # a header → the helper sources implementing it
        for source in kernels:
            if not defines[source]:
                stem = source.removesuffix(".cc").removesuffix("_common")
                helpers.setdefault(f"{stem}.h", []).append(source)
        chosen = [s for s in sources if not self.is_kernel(s) or defines[s] & registrations]
        wanted = set(chosen)
        seen: set[str] = set()
        todo = list(chosen)
        while todo:
            path = todo.pop()
            if path in seen or not (self.root / path).is_file():
                continue
            seen.add(path)
            for header in _INCLUDE.findall(self._text(path)):
                todo.append(header)
                for helper in helpers.get(header, ()):
                    if helper not in wanted:
                        wanted.add(helper)
                        todo.append(helper)
        return [s for s in sources if s in wanted]

    def source_options(self, sources: list[str]) -> tuple[SourceGroup, ...]:
        """Kernels at -O2; the ones GCC miscompiles for M55 without if-conversion."""
        kernels = [s for s in sources if self.is_kernel(s)]
        victims = tuple(s for s in kernels if s.endswith(IF_CONVERSION_VICTIMS))
        return (
            SourceGroup(tuple(s for s in kernels if s not in victims), (KERNEL_OPTIMIZATION,)),
            SourceGroup(victims, (KERNEL_OPTIMIZATION, *NO_IF_CONVERSION)),
        )

    @property
    def identity(self) -> str:
        return value_hash({"commits": self.commits, "sources": self.sources})

    def third_party_headers(self, cache_root: Path) -> Path:
        """flatbuffers' headers with TFLM's patch applied, and a stub for the one ruy header the
        reference kernels include (its profiler is not used). Prepared once per version, as a
        verified cache entry: the key holds the flatbuffers commit, the patch and the stub."""
        patch = self.root / FLATBUFFERS_PATCH
        stub = templates_dir() / "tflmi" / "ruy" / "profiler" / "instrumentation.h"
        key = value_hash(
            {
                "flatbuffers": self.commits[1],
                "patch": patch.read_text() if patch.is_file() else "",
                "stub": file_hash(stub),
            }
        )
        entry = Entry(cache_root / "tflm-headers" / key[:16], f"TFLM's third-party headers {key[:12]}")

        def prepare(staging: Path) -> None:
            shutil.copytree(self.flatbuffers / "include", staging / "include")
            if patch.is_file():
                result = subprocess.run(["git", "apply", str(patch)], cwd=staging, capture_output=True, text=True)
                if result.returncode != 0:
                    raise StageError(
                        f"TFLM's flatbuffers patch does not apply to flatbuffers {self.commits[1][:12]}: "
                        f"{result.stderr.strip().splitlines()[-1] if result.stderr.strip() else 'failed'}"
                    )
            ruy = staging / "ruy" / "ruy" / "profiler"
            ruy.mkdir(parents=True)
            shutil.copyfile(stub, ruy / "instrumentation.h")

        entry.ensure(prepare)
        return entry.path

    def include_dirs(self, headers: Path) -> list[str]:
        return [str(self.root), str(headers / "include"), str(self.gemmlowp), str(headers / "ruy")]

    @cached_property
    def resolver_methods(self) -> dict[str, str]:
        """TFLite builtin op name → the MicroMutableOpResolver method that registers it."""
        return {op: method for op, (method, _) in self._resolver.items()}

    def registration_of(self, op: str) -> str:
        """The `Register_X` whose kernel the resolver's method for `op` takes by default (X)."""
        return self._resolver[op][1]

    @cached_property
    def _resolver(self) -> dict[str, tuple[str, str]]:
        text = (self.root / RESOLVER_HEADER).read_text()
        found: dict[str, tuple[str, str]] = {}
        for match in re.finditer(r"TfLiteStatus\s+(Add\w+)\s*\((.*?)\n\s*\}", text, re.DOTALL):
            builtin = re.search(r"AddBuiltin\(\s*BuiltinOperator_(\w+)", match.group(2))
            registration = re.search(r"Register_(\w+)\s*\(", match.group(2))
            if builtin:
                found.setdefault(builtin.group(1), (match.group(1), registration.group(1) if registration else ""))
        return found
