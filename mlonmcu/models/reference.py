"""Reference outputs from LiteRT with its reference kernels (BUILTIN_REF, no delegates), or,
where LiteRT refuses or crashes on the model, from TFLite Micro's Python interpreter (PyPI
`tflite-micro`, its reference kernels on the host).

LiteRT's reference kernels are the integer kernels TFLite Micro uses, so they are the yardstick
for bit-exactness; XNNPACK (LiteRT's default) rounds differently. TFLM has kernels LiteRT's
reference resolver lacks (int8 ELU, 16x8 TRANSPOSE_CONV, ...): for those models its interpreter
is the oracle, and the report's Oracle column says so. ONNX models are judged by onnxruntime.

Each oracle runs in a child process: on some valid models (e.g. TFLite Micro's SVDF test model)
LiteRT's reference kernels crash with a segmentation fault or a heap corruption, which in-process
would take the whole session down. A crash means "no reference from it", named, like a refusal.
"""

from __future__ import annotations

import signal
import sys
import tempfile
from pathlib import Path

import numpy as np

from mlonmcu.contracts import Sample
from mlonmcu.errors import ModelError, RunTimeout
from mlonmcu.models.samples import load_samples, save_samples

TIMEOUT = 600.0  # seconds; the reference kernels are slow on big models, never this slow
_REFUSED = 3  # exit code of the child when LiteRT refuses the model (message on stderr)


LITERT = "litert"
TFLM_PYTHON = "tflm-python"
ONNXRUNTIME = "onnxruntime"
ORACLES = {
    LITERT: "LiteRT (reference kernels)",
    TFLM_PYTHON: "TFLM Python interpreter",
    ONNXRUNTIME: "onnxruntime (CPU execution provider)",
}


def reference_outputs(model_path: Path, samples: list[Sample]) -> tuple[list[Sample], str]:
    """The reference outputs and the oracle that computed them: for a TFLite model LiteRT, else
    TFLM's interpreter; for an ONNX model onnxruntime."""
    from mlonmcu.models.model import frontend_name

    if frontend_name(model_path) == "onnx":
        return _child(ONNXRUNTIME, model_path, samples), ONNXRUNTIME
    try:
        return _child(LITERT, model_path, samples), LITERT
    except ModelError as refused:
        try:
            return _child(TFLM_PYTHON, model_path, samples), TFLM_PYTHON
        except ModelError as err:
            raise ModelError(f"{refused}; {err}") from None


def _child(oracle: str, model_path: Path, samples: list[Sample]) -> list[Sample]:
    from mlonmcu.process import run, tail

    name = ORACLES[oracle].split(" (")[0]
    with tempfile.TemporaryDirectory(prefix="mlonmcu-reference-") as tmp:
        inputs, outputs = Path(tmp) / "inputs.npz", Path(tmp) / "outputs.npz"
        save_samples(inputs, samples)
        argv = [sys.executable, "-m", "mlonmcu.models.reference", oracle, str(model_path), str(inputs), str(outputs)]
        try:
            done = run(argv, timeout=TIMEOUT, check=False, what=f"{name} reference")
        except RunTimeout as err:
            raise ModelError(f"{name} did not finish {model_path.name} ({err})") from None
        message = tail(done.output, 1).strip()[:500] or "no message"
        if done.returncode == _REFUSED:
            raise ModelError(f"{name} cannot load {model_path.name}: {message}")
        if done.returncode < 0:
            signame = signal.Signals(-done.returncode).name
            raise ModelError(f"{name}'s reference kernels crashed on {model_path.name} ({signame})")
        if done.returncode != 0:
            raise ModelError(f"{name} failed on {model_path.name} (exit {done.returncode}): {message}")
        return load_samples(outputs)


def _invoke(model_path: Path, samples: list[Sample]) -> list[Sample]:
    from ai_edge_litert import interpreter as litert

    try:
        interp = litert.Interpreter(
            model_path=str(model_path), experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF
        )
        interp.allocate_tensors()
    except (ValueError, RuntimeError) as err:
        print(str(err).strip().splitlines()[0], file=sys.stderr)
        sys.exit(_REFUSED)
    inputs = interp.get_input_details()
    outputs = interp.get_output_details()
    results: list[Sample] = []
    for sample in samples:
        for detail, value in zip(inputs, sample, strict=True):
            interp.set_tensor(detail["index"], value.reshape(detail["shape"]).astype(detail["dtype"]))
        interp.invoke()
        results.append([np.array(interp.get_tensor(d["index"])) for d in outputs])
    return results


def _invoke_tflm(model_path: Path, samples: list[Sample]) -> list[Sample]:
    from mlonmcu.backends.tflm import interpreter

    try:
        interp = interpreter.open_interpreter(model_path)
    except Exception as err:
        print(f"{type(err).__name__}: {str(err).strip().splitlines()[0] if str(err).strip() else ''}", file=sys.stderr)
        sys.exit(_REFUSED)
    return [interpreter.invoke(interp, sample) for sample in samples]


def _invoke_onnxruntime(model_path: Path, samples: list[Sample]) -> list[Sample]:
    """onnxruntime with its default graph optimizations: a QDQ model runs in its integer kernels
    (QLinearConv, ...), which round as onnxruntime does, not as TFLite does."""
    import onnxruntime

    try:
        session = onnxruntime.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    except Exception as err:  # onnxruntime's Fail, InvalidGraph, NotImplemented ... all mean "refused"
        print(str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__, file=sys.stderr)
        sys.exit(_REFUSED)
    inputs = session.get_inputs()
    results: list[Sample] = []
    for sample in samples:
        feed = {i.name: value.reshape(i.shape) for i, value in zip(inputs, sample, strict=True)}
        results.append([np.asarray(out) for out in session.run(None, feed)])
    return results


_INVOKE = {LITERT: _invoke, TFLM_PYTHON: _invoke_tflm, ONNXRUNTIME: _invoke_onnxruntime}

if __name__ == "__main__":
    oracle, (model, given, written) = sys.argv[1], (Path(a) for a in sys.argv[2:5])
    save_samples(written, _INVOKE[oracle](model, load_samples(given)))
