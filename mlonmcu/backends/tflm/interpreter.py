"""TFLite Micro's Python interpreter (PyPI `tflite-micro`): TFLM's reference kernels on the host
without building anything.

Two users: the oracle where LiteRT refuses a model (models/reference.py) and target `host_py`
(tflmi's quick row). As a program (`python -m mlonmcu.backends.tflm.interpreter MODEL INPUTS`) it
is host_py's "firmware": it prints the harness's lines (templates/mlif/harness.c), so a run on it
is parsed, failed and validated exactly like one on a firmware. Its arena is found as tflmi's
calibration firmware finds it: the smallest (16-byte multiple) that AllocateTensors accepts.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ARENA_MAX = 16 << 20  # as the calibration firmware's largest probe arena (session/stages.py)


def open_interpreter(model: Path, arena: int = ARENA_MAX) -> Any:
    """A TFLM interpreter with its tensors allocated; RuntimeError when the arena is too small or
    an operator's Prepare refuses the model."""
    from tflite_micro.python.tflite_micro import runtime

    return runtime.Interpreter.from_file(str(model), arena_size=arena)


def invoke(interpreter: Any, sample: list[np.ndarray]) -> list[np.ndarray]:
    """One inference; the interpreter keeps its variables (SVDF/LSTM state) as a firmware does."""
    for index, value in enumerate(sample):
        detail = interpreter.get_input_details(index)
        interpreter.set_input(value.reshape(detail["shape"]).astype(detail["dtype"]), index)
    interpreter.invoke()
    outputs: list[np.ndarray] = []
    while True:
        try:
            outputs.append(np.array(interpreter.get_output(len(outputs))))
        except IndexError:
            return outputs


def _allocates(model: Path, arena: int) -> bool:
    try:
        open_interpreter(model, arena)
    except RuntimeError:
        return False
    return True


def smallest_arena(model: Path, largest: int = ARENA_MAX) -> int:
    """The smallest arena (a multiple of 16) the model's tensors fit in; 0 if not even `largest`."""
    if not _allocates(model, largest):
        return 0
    bad, good = 0, largest
    while good - bad > 16:
        middle = (bad + good) // 2 // 16 * 16
        if middle <= bad:
            middle = bad + 16
        if _allocates(model, middle):
            good = middle
        else:
            bad = middle
    return good


def _line(kind: str, **fields: Any) -> None:
    print(" ".join([f"MLONMCU {kind}", *(f"{k}={v}" for k, v in fields.items())]), flush=True)


def main(model: Path, inputs: Path) -> int:
    """Print what a tflmi firmware's harness would: setup, one RUN and its OUTPUTs per sample, the
    arena; wall-clock nanoseconds of this host around the interpreter's calls."""
    from mlonmcu.models.samples import load_samples

    samples = load_samples(inputs)
    _line("BEGIN")
    arena = smallest_arena(model)
    if not arena:  # TFLM printed why (an operator's Prepare, or the size) above
        _line("SETUP", status=1)
        print(f"MLONMCU ERROR AllocateTensors fails even with a {ARENA_MAX}-byte arena", flush=True)
        _line("END", status=1)
        return 1
    _line("ARENA", needed=arena)
    start = time.perf_counter_ns()
    interpreter = open_interpreter(model, arena)
    _line("SETUP", status=0, ns=time.perf_counter_ns() - start)
    for number, sample in enumerate(samples):
        start = time.perf_counter_ns()
        try:
            outputs = invoke(interpreter, sample)
        except RuntimeError as err:
            _line("RUN", sample=number, iteration=0, status=1)
            print(f"MLONMCU ERROR Invoke failed: {err}", flush=True)
            _line("END", status=1)
            return 1
        _line("RUN", sample=number, iteration=0, status=0, ns=time.perf_counter_ns() - start)
        for index, value in enumerate(outputs):
            data = np.ascontiguousarray(value).tobytes()
            _line("OUTPUT", sample=number, index=index, size=len(data), data=data.hex())
    _line("END", status=0)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
