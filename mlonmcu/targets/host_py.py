"""Target `host_py`: tflmi's quick row — TFLite Micro's Python interpreter on this machine, no
firmware built (outputs, the arena TFLM needs, wall-clock time; no ROM/RAM, no counters).

The interpreter is TFLM's reference kernels compiled for this 64-bit host by the PyPI
`tflite-micro` wheel, which may be another TFLM commit than the one tflmi builds; its arena holds
64-bit pointers, so it is the host's figure (as tflmi on host_x86), not a 32-bit MCU's.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mlonmcu.contracts import TargetProfile
from mlonmcu.process import Completed, run
from mlonmcu.targets.target import Target, timeout_option

COUNTER = "interpreter-wallclock"  # the report's Counter: wall clock around the Python interpreter's calls


class HostPythonTarget(Target):
    name = "host_py"
    help = (
        "tflmi without firmware: TFLite Micro's Python interpreter (PyPI tflite-micro) on this machine; "
        "outputs, arena, wall-clock time only"
    )
    options = (timeout_option(600.0),)
    requires = ("tflm_python",)
    deterministic = False  # wall-clock figures are measurements, never reused from the cache
    interpreter = "tflm"

    def profile(self) -> TargetProfile:
        return TargetProfile(family="host-python", toolchain="", toolchain_file="", support=(), counter=COUNTER)

    def interpret(self, model: Path, inputs: Path, log: Path) -> Completed:
        argv = [sys.executable, "-m", "mlonmcu.backends.tflm.interpreter", str(model), str(inputs)]
        return run(argv, log=log, timeout=self.opt("timeout"), check=False, what="TFLM Python interpreter")
