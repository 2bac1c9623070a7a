"""muRISCV-NN as TFLM's optimized kernels (`tflmi.kernels=muriscv_nn`): CMSIS-NN's API for RISC-V.

TFLM's CMSIS-NN glue (`kernels/cmsis_nn/*.cc`) compiles against it unchanged: its compatibility
headers (`Include/CMSIS/NN/Include/arm_*.h`) map every `arm_*` function to its `muriscv_nn_*`
twin. Its vector kernels are taken when the library is compiled for a vector ISA (clang; see
templates/tflmi/muriscv_nn_vector.h), its scalar C otherwise — one BUILD serves every RISC-V arch.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from mlonmcu.backends.tflm import cmsis_nn
from mlonmcu.backends.tflm.tree import KERNEL_OPTIMIZATION
from mlonmcu.contracts import LibrarySpec
from mlonmcu.data import templates_dir
from mlonmcu.errors import StageError
from mlonmcu.hashing import file_hash, value_hash

VECTOR_HEADER = templates_dir() / "tflmi" / "muriscv_nn_vector.h"
# a second copy of muriscv_nn_svdf_get_buffer_sizes_s8.c's functions (duplicate symbols)
_DUPLICATES = ("muriscv_nn_svdf_get_buffer_sizes.c",)
_FLOAT_SOURCES = ("_f16.c", "_f32.c")


@dataclass(frozen=True)
class MuriscvNn:
    root: Path  # the muRISCV-NN checkout
    commit: str

    @cached_property
    def sources(self) -> list[str]:
        """The library's integer C sources, relative to its root."""
        if not (self.root / "Include" / "CMSIS" / "NN" / "Include" / "arm_nnfunctions.h").is_file():
            raise StageError(
                f"{self.root} is not a muRISCV-NN checkout (no Include/CMSIS/NN/Include/arm_nnfunctions.h)"
            )
        found = sorted(p.relative_to(self.root).as_posix() for p in (self.root / "Source").rglob("*.c"))
        return [s for s in found if s.rsplit("/", 1)[-1] not in _DUPLICATES and not s.endswith(_FLOAT_SOURCES)]

    @property
    def include_dirs(self) -> list[str]:
        """TFLM's glue includes "Include/arm_nnfunctions.h", which the compatibility directory holds."""
        return [str(self.root / "Include" / "CMSIS" / "NN"), str(self.root / "Include")]

    def library(self) -> LibrarySpec:
        return LibrarySpec(
            name="muriscv_nn",
            root=str(self.root),
            identity=value_hash({"commit": self.commit, "sources": self.sources, "vector": file_hash(VECTOR_HEADER)}),
            sources=tuple(self.sources),
            include_dirs=tuple(self.include_dirs),
            definitions=cmsis_nn.DEFINITIONS,
            compile_flags=(KERNEL_OPTIMIZATION, "-include", str(VECTOR_HEADER)),
        )
