"""Reference outputs from LiteRT with its reference kernels (BUILTIN_REF, no delegates).

These are the same integer kernels TFLite Micro uses, so they are the yardstick for
bit-exactness; XNNPACK (LiteRT's default) rounds differently.

LiteRT runs in a child process: on some valid models (e.g. TFLite Micro's SVDF test model) its
reference kernels crash with a segmentation fault or a heap corruption, which in-process would
take the whole session down. A crash here means "no reference", named, like a refusal.
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


def reference_outputs(model_path: Path, samples: list[Sample]) -> list[Sample]:
    from mlonmcu.process import run, tail

    with tempfile.TemporaryDirectory(prefix="mlonmcu-reference-") as tmp:
        inputs, outputs = Path(tmp) / "inputs.npz", Path(tmp) / "outputs.npz"
        save_samples(inputs, samples)
        argv = [sys.executable, "-m", "mlonmcu.models.reference", str(model_path), str(inputs), str(outputs)]
        try:
            done = run(argv, timeout=TIMEOUT, check=False, what="LiteRT reference")
        except RunTimeout as err:
            raise ModelError(f"LiteRT did not finish {model_path.name} ({err})") from None
        message = tail(done.output, 1).strip()[:500] or "no message"
        if done.returncode == _REFUSED:
            raise ModelError(f"LiteRT cannot load {model_path.name}: {message}")
        if done.returncode < 0:
            name = signal.Signals(-done.returncode).name
            raise ModelError(f"LiteRT's reference kernels crashed on {model_path.name} ({name})")
        if done.returncode != 0:
            raise ModelError(f"LiteRT failed on {model_path.name} (exit {done.returncode}): {message}")
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


if __name__ == "__main__":
    model, given, written = (Path(a) for a in sys.argv[1:4])
    save_samples(written, _invoke(model, load_samples(given)))
