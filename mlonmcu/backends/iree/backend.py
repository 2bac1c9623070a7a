"""Backend `iree`: IREE's compiler turns the model (ONNX: `iree-import-onnx`) into a VM bytecode
module whose executables are embedded ELF for the target's CPU (`iree-compile`, llvm-cpu, no
threads); the firmware runs it in IREE's runtime (local-sync HAL, runtime.py) behind the
mlonmcu_model_* API (templates/iree/model.c.j2).

A .tflite reaches IREE through ONNX (`-F onnx` converts it): `iree-import-tflite` does not work
with the TensorFlow releases on PyPI. Targets: those with a `triple` below (the host so far).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from mlonmcu.backends.backend import Backend
from mlonmcu.backends.iree.runtime import NO_CLOCK, NO_WAIT, IreeRuntime
from mlonmcu.config import Option
from mlonmcu.contracts import BuildResult, ModelInfo, TensorInfo
from mlonmcu.errors import StageError
from mlonmcu.platforms.templates import c_byte_lines, render
from mlonmcu.process import run
from mlonmcu.setup.iree import RELEASE

# target family (TargetProfile.family) prefix → iree-compile's llvm-cpu target flags
CPU_TARGETS = {
    "host": ("--iree-llvmcpu-target-triple=x86_64-unknown-linux-gnu", "--iree-llvmcpu-target-cpu=generic"),
    "riscv32-": (
        "--iree-llvmcpu-target-triple=riscv32-unknown-elf",
        "--iree-llvmcpu-target-cpu=generic-rv32",
        "--iree-llvmcpu-target-abi=ilp32",
    ),
    # hard float, as targets/cortexm.py builds these cores' firmware (the M3 has no FPU, and IREE's
    # runtime saves and restores the FPU state with VMRS/VMSR on every 32-bit Arm)
    "cortex-m4-": ("--iree-llvmcpu-target-triple=thumbv7em-none-eabihf", "--iree-llvmcpu-target-cpu=cortex-m4"),
    "cortex-m7-": ("--iree-llvmcpu-target-triple=thumbv7em-none-eabihf", "--iree-llvmcpu-target-cpu=cortex-m7"),
    "cortex-m33-": ("--iree-llvmcpu-target-triple=thumbv8m.main-none-eabihf", "--iree-llvmcpu-target-cpu=cortex-m33"),
    "cortex-m55-": ("--iree-llvmcpu-target-triple=thumbv8.1m.main-none-eabihf", "--iree-llvmcpu-target-cpu=cortex-m55"),
}
ELEMENT_TYPES = {
    "float32": "IREE_HAL_ELEMENT_TYPE_FLOAT_32",
    "int8": "IREE_HAL_ELEMENT_TYPE_SINT_8",
    "uint8": "IREE_HAL_ELEMENT_TYPE_UINT_8",
    "int16": "IREE_HAL_ELEMENT_TYPE_SINT_16",
    "int32": "IREE_HAL_ELEMENT_TYPE_SINT_32",
    "int64": "IREE_HAL_ELEMENT_TYPE_SINT_64",
    "bool": "IREE_HAL_ELEMENT_TYPE_BOOL_8",
}
# iree_status_code_t values (iree/base/status.h) as the firmware returns them: 100 + code
STATUS_MESSAGES = {
    100 + code: f"IREE {name}"
    for code, name in enumerate(
        (
            "OK",
            "CANCELLED",
            "UNKNOWN",
            "INVALID_ARGUMENT (the module does not take these inputs)",
            "DEADLINE_EXCEEDED",
            "NOT_FOUND (no such function or driver)",
            "ALREADY_EXISTS",
            "PERMISSION_DENIED",
            "RESOURCE_EXHAUSTED (out of heap memory)",
            "FAILED_PRECONDITION",
            "ABORTED",
            "OUT_OF_RANGE",
            "UNIMPLEMENTED (an executable format or feature this runtime was built without)",
            "INTERNAL",
            "UNAVAILABLE",
            "DATA_LOSS",
            "UNAUTHENTICATED",
            "DEFERRED",
            "INCOMPATIBLE (the module needs another runtime version)",
        )
    )
}
_FUNCTION = re.compile(r"func\.func @([\w$.-]+)\(")
RUNTIME_STACK = (
    32768  # the runtime's frames below a dispatch (measured on the M4: a 64 KB stack holds a 32 KB dispatch)
)
LIBRARY = "model_lib"  # the static library of the executables: model_lib.o, model_lib.h


class IreeBackend(Backend):
    name = "iree"
    framework = "iree"
    formats = ("onnx",)
    help = "IREE: its compiler (llvm-cpu, embedded ELF) and its runtime (local-sync HAL) in the firmware"
    requires = ("iree", "flatcc", "printf", "iree_compiler", "iree_cmake")
    options = (
        Option(
            "stack_limit",
            int,
            65536,
            "bytes one dispatch may allocate on the stack (iree-compile's stack allocation limit; IREE's own "
            "default, 32768, stops resnet); the firmware reserves this plus 32 KB for the runtime's frames",
            min=1024,
        ),
    )

    def build_facts(self, target: Any) -> dict[str, str]:
        """The executables are compiled for the target's CPU: its family keys the BUILD."""
        return {"family": target.profile().family}

    def runtime(self) -> IreeRuntime:
        iree, flatcc, printf = (self.components[c] for c in ("iree", "flatcc", "printf"))
        release = iree.extras.get("release", "unknown")
        compiler = self.components["iree_compiler"].version
        if not release.startswith(compiler):
            raise StageError(
                f"IREE's compiler is {compiler} but its runtime sources are {release} ({iree.location}): "
                f"they must be one release ({RELEASE}); `mlonmcu setup iree` installs both"
            )
        commits = (iree.version.split()[0], flatcc.version.split()[0], printf.version.split()[0])
        cmake = self.tool("iree_cmake")
        return IreeRuntime(Path(iree.location), Path(flatcc.location), Path(printf.location), cmake, commits)

    def build(self, model_path: Path, info: ModelInfo, out: Path, log: Path) -> BuildResult:
        family = self.facts.get("family", "")
        cpu = next((flags for prefix, flags in CPU_TARGETS.items() if family.startswith(prefix)), None)
        if cpu is None:
            raise StageError(
                f"backend iree has no CPU target for {family or 'this target'} (it knows: "
                f"{', '.join(p.rstrip('-') for p in CPU_TARGETS)}): IREE's runtime is not cross-built for it yet"
            )
        if family.startswith("riscv32-"):
            cpu = (*cpu, f"--iree-llvmcpu-target-cpu-features={_riscv_features(family)}")
        untyped = [t for t in (*info.inputs, *info.outputs) if t.dtype not in ELEMENT_TYPES]
        if untyped:
            raise StageError(
                f"backend iree: no IREE element type for {', '.join(f'{t.name} ({t.dtype})' for t in untyped)}"
            )
        libc = "host" if family == "host" else "newlib" if family.startswith("cortex-") else "picolibc"
        library = self.runtime().library(self.cache_dir, log, libc)
        mlir, module = out / "model.mlir", out / "model.vmfb"
        self._compile(model_path, mlir, module, cpu, out, log)
        data = module.read_bytes()
        render(
            "iree/model.c.j2",
            out / "model.c",
            module_size=len(data),
            module_lines=c_byte_lines(data),
            function=f"module.{_function_name(mlir)}",
            library_query=_library_query(out / f"{LIBRARY}.h"),
            inputs=[_tensor(t) for t in info.inputs],
            outputs=[_tensor(t) for t in info.outputs],
        )
        mlir.unlink()  # large (the weights as text), and the module has it all
        return BuildResult(
            model=model_path.stem,
            backend=self.name,
            sources=("model.c", f"{LIBRARY}.o"),
            include_dirs=(".", *library.include_dirs),
            definitions=tuple(d for d in library.definitions if d not in (NO_CLOCK, NO_WAIT)),
            static_libraries=(library,),
            status_messages=STATUS_MESSAGES,
            stack_request=int(self.opt("stack_limit")) + RUNTIME_STACK,
        )

    def _compile(self, model: Path, mlir: Path, module: Path, cpu: tuple[str, ...], out: Path, log: Path) -> None:
        """iree-import-onnx, then iree-compile; either one's error becomes the run's reason."""
        importer = [sys.executable, "-m", "iree.compiler.tools.import_onnx", str(model), "-o", str(mlir)]
        done = run(importer, log=log, check=False, what="iree-import-onnx")
        if done.returncode != 0:
            raise StageError(f"iree-import-onnx cannot import {model.name}: {_first_error(done.output)}")
        compiler = [
            sys.executable,
            "-m",
            "iree.compiler.tools.scripts.iree_compile",
            str(mlir),
            "--iree-hal-target-device=local",
            "--iree-hal-local-target-device-backends=llvm-cpu",
            *cpu,
            # a static library the firmware links (with the toolchain's libgcc: soft-float calls resolve)
            "--iree-llvmcpu-link-embedded=false",
            "--iree-llvmcpu-link-static",
            f"--iree-llvmcpu-static-library-output-path={out / LIBRARY}.o",
            f"--iree-llvmcpu-stack-allocation-limit={int(self.opt('stack_limit'))}",
            "-o",
            str(module),
        ]
        done = run(compiler, log=log, check=False, what="iree-compile")
        if done.returncode != 0:
            raise StageError(f"iree-compile failed on {model.name}: {_first_error(done.output)}")


def _riscv_features(family: str) -> str:
    """LLVM's features of the ISA in a RISC-V family name (riscv32-virt-rv32imc-ilp32 → +m,+c)."""
    isa = next((p for p in family.split("-") if p.startswith("rv32")), "rv32i")[4:].split("_")[0]
    return ",".join(f"+{ext}" for ext in isa if ext in "mafdcv") or "+m"


def _library_query(header: Path) -> str:
    """The query function iree-compile declared in the static library's header."""
    match = re.search(r"(\w+_library_query)\s*\(", header.read_text(errors="replace")) if header.is_file() else None
    if match is None:
        raise StageError(f"iree-compile wrote no static library query function into {header.name}")
    return match[1]


def _function_name(mlir: Path) -> str:
    match = _FUNCTION.search(mlir.read_text(errors="replace")[:100_000])
    if match is None:
        raise StageError(f"iree-import-onnx wrote no function into {mlir.name}")
    return match[1]


def _tensor(t: TensorInfo) -> dict[str, Any]:
    return {"nbytes": t.nbytes, "shape": [int(d) for d in t.shape], "element_type": ELEMENT_TYPES[t.dtype]}


def _first_error(output: str) -> str:
    """The first error line, the cause (IREE's later ones say which pass failed because of it)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line.split(" error: ", 1)[-1] for line in lines if "error" in line.lower()]
    return (errors or lines[-1:] or ["no message"])[0][:300]
