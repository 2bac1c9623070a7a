"""TFLite (and ONNX) → Relax with TVM's importers; their rejections become one-line run failures.

One importer defect is mended while it runs: TFLite's FULLY_CONNECTED flattens an input of any
rank to [-1, inputs] (unless keep_num_dims), TVM 0.27 multiplies the input as it is and fails
("Matmul requires the reduction length ... to be equal") on float models whose FC follows a
pooling layer without a RESHAPE (magic_wand, several MNIST models). Float LSTMs take our own
kernel (float_lstm.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mlonmcu.errors import StageError


def import_tflite(path: Path) -> Any:
    import tflite
    from tvm.relax.frontend.tflite import from_tflite

    from mlonmcu.backends.tvm import float_lstm

    buf = path.read_bytes()
    try:
        model = tflite.Model.GetRootAsModel(buf, 0)
        with _flattening_fully_connected(), float_lstm.converting() as lstms:
            return float_lstm.with_states(from_tflite(model), lstms)
    except Exception as err:  # OpNotImplemented, TVMError, ValueError...: all mean "TVM cannot import"
        raise StageError(f"TVM cannot import {path.name}: {first_line(err)}") from None


def import_onnx(path: Path) -> Any:
    """ONNX → Relax with TVM's ONNX importer (NCHW as in the file; QDQ models as
    quantize/dequantize around float operators, like TVM's TFLite importer makes them)."""
    import onnx
    from tvm.relax.frontend.onnx import from_onnx

    try:
        return from_onnx(onnx.load(str(path)))
    except Exception as err:  # OpNotImplemented, TVMError, ValueError...: all mean "TVM cannot import"
        raise StageError(f"tvmaot: TVM's ONNX importer cannot import {path.name}: {first_line(err)}") from None


@contextmanager
def _flattening_fully_connected() -> Iterator[None]:
    """While importing: FULLY_CONNECTED sees its activation input reshaped to [-1, inputs]."""
    from tflite.FullyConnectedOptions import FullyConnectedOptions
    from tvm import relax
    from tvm.relax.frontend.tflite import tflite_frontend

    converter = tflite_frontend.OperatorConverter
    convert = converter.convert_fully_connected

    def flattening(self: Any, op: Any) -> Any:
        x, weights = self.get_input_tensors(op)[:2]
        options = FullyConnectedOptions()
        table = op.BuiltinOptions()
        if table is not None:
            options.Init(table.Bytes, table.Pos)
        name = tflite_frontend.get_tensor_name(self.subgraph, x.tensor_idx)
        rank = len(self.get_tensor_shape(x))
        if rank == 2 or (table is not None and options.KeepNumDims()) or name not in self.exp_tab.exprs:
            return convert(self, op)
        original = self.exp_tab.exprs[name]
        inputs = int(self.get_tensor_shape(weights)[1])
        self.exp_tab.exprs[name] = relax.op.reshape(original, (-1, inputs))
        try:
            return convert(self, op)
        finally:
            self.exp_tab.exprs[name] = original

    converter.convert_fully_connected = flattening
    try:
        yield
    finally:
        converter.convert_fully_connected = convert


def first_line(err: BaseException) -> str:
    text = str(err).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    # TVM errors carry a traceback; the useful part is the last "...Error: message" line
    for line in reversed(lines):
        if "Error" in line.split(":", 1)[0] or "not supported" in line.lower():
            return line[:300]
    return (lines[-1] if lines else type(err).__name__)[:300]
