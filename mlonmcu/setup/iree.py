"""IREE for backend `iree`: its sources (git, with the two submodules its runtime needs as
companions), its compiler (PyPI iree-base-compiler, the same release) and a CMake recent enough
for IREE's build (≥ 3.26; Debian 12 has 3.25), kept out of mlonmcu's environment.

The runtime is not built here: backends/iree/runtime.py configures it once per IREE commit and
compiles its sources for every target like TFLM's, as a static library of the firmware.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import ClassVar

from mlonmcu.config import Option
from mlonmcu.process import run
from mlonmcu.setup.component import DirectoryComponent, PythonComponent
from mlonmcu.setup.deps import Installed
from mlonmcu.setup.git import GitComponent

RELEASE = "3.11.0"  # the IREE release the sources and the compiler must both be


class IreeComponent(GitComponent):
    name = "iree"
    help = f"IREE {RELEASE} sources (backend iree: its runtime), with flatcc and printf, its compiler and CMake"
    default_url = "https://github.com/iree-org/iree"
    default_ref = f"v{RELEASE}"
    companions = ("flatcc", "printf", "iree_compiler", "iree_cmake")

    def found(self) -> Installed:
        found = super().found()
        try:
            version = json.loads((self.checkout / "runtime" / "version.json").read_text())["package-version"]
        except (OSError, ValueError, KeyError):
            version = "unknown"
        return Installed(found.name, found.version, found.location, {"release": str(version)})


class FlatccComponent(GitComponent):
    name = "flatcc"
    help = "flatcc at the commit IREE pins (its third_party/flatcc submodule)"
    default_url = "https://github.com/dvidelabs/flatcc"
    default_ref = "9362cd00f0007d8cbee7bff86e90fb4b6b227ff3"


class PrintfComponent(GitComponent):
    name = "printf"
    help = "eyalroz/printf at the commit IREE pins (its third_party/printf submodule)"
    default_url = "https://github.com/eyalroz/printf"
    default_ref = "f1b728cbd5c6e10dc1f140f1574edfd1ccdcbedb"


class IreeCompilerComponent(PythonComponent):
    name = "iree_compiler"
    help = f"IREE's compiler {RELEASE} (PyPI iree-base-compiler): iree-import-onnx and iree-compile"
    distribution = "iree-base-compiler"
    pin = RELEASE
    module = "iree.compiler"
    on_request = True


class IreeCmakeComponent(DirectoryComponent):
    """PyPI's CMake, installed into deps/iree_cmake only: on PATH it would replace Debian's for
    every firmware build."""

    name = "iree_cmake"
    help = "CMake from PyPI in a directory of its own: IREE's runtime configuration needs ≥ 3.26"
    options = (Option("version", str, "3.31.6", "version of the PyPI 'cmake'"),)
    on_request = True
    thorough = False
    stamp: ClassVar[str] = "VERSION"

    def current(self, directory: Path) -> bool:
        return (directory / self.stamp).read_text().strip() == self.opt("version")

    def found(self) -> Installed:
        return Installed(self.name, self.opt("version"), str(self.directory / "cmake" / "data" / "bin" / "cmake"))

    def fill(self, staging: Path, log: Path) -> None:
        argv = [sys.executable, "-m", "pip", "install", "--target", str(staging), f"cmake=={self.opt('version')}"]
        run(argv, log=log, what="pip install cmake")
        (staging / self.stamp).write_text(self.opt("version") + "\n")
