"""CMSIS-NN as TFLM's optimized kernels (`tflmi.kernels=cmsis_nn`): which TFLM sources it
replaces, its own C library, and the defines both sides need.

What TFLM's Makefile does with OPTIMIZED_KERNEL_DIR=cmsis_nn, without running it: each
`kernels/X.cc` that has a `kernels/cmsis_nn/X.cc` is compiled from the latter, and every C
source of the kernel library except the float ones joins the build. The defines reach the
firmware too: TFLM's kernel headers, which the firmware includes, declare more under CMSIS_NN.
CMSIS-NN picks its DSP (M4/M7/M33) or MVE (M55) paths from the compiler's -mcpu feature macros
and falls back to portable C elsewhere (Cortex-M3, RISC-V).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from mlonmcu.backends.tflm.tree import KERNEL_DIR, KERNEL_OPTIMIZATION, MICRO
from mlonmcu.contracts import LibrarySpec
from mlonmcu.errors import StageError
from mlonmcu.hashing import value_hash

DEFINITIONS = ("CMSIS_NN", "ARM_NN_ENABLE_F16=0", "ARM_NN_ENABLE_F32=0")
KERNELS = f"{MICRO}/{KERNEL_DIR}"
_FLOAT_SOURCES = ("_f16.c", "_f32.c", "arm_nntables_flt.c")


@dataclass(frozen=True)
class CmsisNn:
    root: Path  # the CMSIS-NN checkout
    core: Path  # the CMSIS_6 checkout (CMSIS/Core/Include)
    commits: tuple[str, str]  # cmsis_nn, cmsis

    @cached_property
    def sources(self) -> list[str]:
        """The kernel library's integer sources, relative to its root."""
        source = self.root / "Source"
        if not source.is_dir() or not (self.root / "Include" / "arm_nnfunctions.h").is_file():
            raise StageError(f"{self.root} is not a CMSIS-NN checkout (no Source/ and Include/arm_nnfunctions.h)")
        if not (self.core / "CMSIS" / "Core" / "Include").is_dir():
            raise StageError(f"{self.core} is not a CMSIS_6 checkout (no CMSIS/Core/Include)")
        found = sorted(p.relative_to(self.root).as_posix() for p in source.rglob("*.c"))
        return [s for s in found if not s.endswith(_FLOAT_SOURCES)]

    @property
    def include_dirs(self) -> list[str]:
        """TFLM's glue includes "Include/arm_nnfunctions.h"; the library includes its headers
        and CMSIS Core's by name."""
        return [
            str(self.core),
            str(self.root),
            str(self.core / "CMSIS" / "Core" / "Include"),
            str(self.root / "Include"),
        ]

    def library(self) -> LibrarySpec:
        return LibrarySpec(
            name="cmsis_nn",
            root=str(self.root),
            identity=value_hash({"commits": self.commits, "sources": self.sources}),
            sources=tuple(self.sources),
            include_dirs=tuple(self.include_dirs),
            definitions=DEFINITIONS,
            compile_flags=(KERNEL_OPTIMIZATION,),  # as TFLM's kernels
        )


def replace_kernels(tflm_root: Path, sources: list[str]) -> list[str]:
    """TFLM's library sources with each reference kernel that has a CMSIS-NN version swapped."""
    swapped = []
    for source in sources:
        if source.startswith(KERNELS + "/") and source.count("/") == KERNELS.count("/") + 1:
            optimized = f"{KERNELS}/cmsis_nn/{source.rsplit('/', 1)[1]}"
            if (tflm_root / optimized).is_file():
                source = optimized
        swapped.append(source)
    if swapped == sources:
        raise StageError(f"{tflm_root} has no {KERNELS}/cmsis_nn/ kernels: this TFLM cannot use CMSIS-NN")
    return swapped
