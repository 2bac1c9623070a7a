"""Frontend `onnx`: read an ONNX model and describe it (I/O with their quantization, operators,
MACs, activation lower bound), as frontend `tflite` does for flatbuffers.

Quantization lives in the graph, not on the tensors: an int8 input's scale and zero point are
those of the DequantizeLinear that reads it, an int8 output's those of the QuantizeLinear that
writes it (QDQ format, onnxruntime's static quantization, tf2onnx's conversion of int8 models).
Shapes inside the graph come from ONNX's shape inference; a graph input with a symbolic
dimension is refused (the firmware has static buffers): export it with fixed shapes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from mlonmcu.contracts import ModelInfo, TensorInfo
from mlonmcu.errors import ModelError
from mlonmcu.models.frontend_base import Frontend

# outputs that can share their input's memory
OPSET = 13  # tf2onnx's opset: QuantizeLinear/DequantizeLinear with per-channel axes
_ALIASING_OPS = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"}


class _Graph:
    """The parsed model: tensors' shapes and types (declared or inferred), initializers, nodes."""

    def __init__(self, model: Any, path: Path):
        from onnx import helper, numpy_helper

        graph = model.graph
        self.path = path
        self.nodes = list(graph.node)
        self.constants = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
        for node in self.nodes:  # Constant nodes are initializers too
            if node.op_type == "Constant" and node.attribute:
                self.constants[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
        self.types: dict[str, tuple[str, tuple[int, ...] | None]] = {}
        for value in [*graph.input, *graph.value_info, *graph.output]:
            tensor = value.type.tensor_type
            dims = tuple(d.dim_value if d.HasField("dim_value") else -1 for d in tensor.shape.dim)
            shape = dims if tensor.HasField("shape") and all(d >= 0 for d in dims) else None
            self.types[value.name] = (np.dtype(helper.tensor_dtype_to_np_dtype(tensor.elem_type)).name, shape)
        for name, array in self.constants.items():
            self.types[name] = (array.dtype.name, tuple(array.shape))
        self.inputs = [v for v in graph.input if v.name not in self.constants]
        self.outputs = list(graph.output)

    def shape(self, name: str) -> tuple[int, ...] | None:
        return self.types.get(name, ("", None))[1]

    def consumers(self, name: str) -> list[Any]:
        return [n for n in self.nodes if name in n.input]

    def producer(self, name: str) -> Any | None:
        return next((n for n in self.nodes if name in n.output), None)

    def dequantizer(self, name: str) -> Any | None:
        """The DequantizeLinear reading tensor `name`, through int8 moves (tf2onnx reshapes an
        int8 input before dequantizing it)."""
        for node in self.consumers(name):
            if node.op_type == "DequantizeLinear":
                return node
            if node.op_type in _ALIASING_OPS | {"Transpose"} and node.input[0] == name:
                found = self.dequantizer(node.output[0])
                if found is not None:
                    return found
        return None

    def quantizer(self, name: str) -> Any | None:
        """The QuantizeLinear writing tensor `name`, through int8 moves."""
        node = self.producer(name)
        if node is None:
            return None
        if node.op_type == "QuantizeLinear":
            return node
        return self.quantizer(node.input[0]) if node.op_type in _ALIASING_OPS | {"Transpose"} else None

    def tensor(self, value: Any, quantizer: Any | None) -> TensorInfo:
        """A graph input or output; int8/uint8/int16 ones with the scale of the (De)QuantizeLinear beside them."""
        dtype, shape = self.types[value.name]
        if shape is None:
            dims = [
                d.dim_param or (d.dim_value if d.HasField("dim_value") else "?")
                for d in value.type.tensor_type.shape.dim
            ]
            raise ModelError(
                f"{self.path.name}: {value.name} has a symbolic shape [{', '.join(map(str, dims))}]; mlonmcu "
                "builds static buffers: export the model with fixed shapes (e.g. batch 1)"
            )
        scale: tuple[float, ...] = ()
        zero: tuple[int, ...] = ()
        if quantizer is not None and dtype in ("int8", "uint8", "int16"):
            scales = self.constants.get(quantizer.input[1])
            zeros = self.constants.get(quantizer.input[2]) if len(quantizer.input) > 2 and quantizer.input[2] else None
            if scales is not None:
                scale = tuple(float(s) for s in np.ravel(scales))
                zero = tuple(int(z) for z in np.ravel(zeros)) if zeros is not None else (0,) * len(scale)
        return TensorInfo(value.name, shape, dtype, scale, zero)

    def macs(self, node: Any) -> int:
        """Multiply-accumulates of the operators that have them (0 where a shape is unknown)."""
        op, ins = node.op_type, list(node.input)
        out = self.shape(node.output[0]) if node.output else None
        if out is None:
            return 0
        out_elems = int(np.prod(out))
        weight = {"Conv": 1, "ConvInteger": 1, "QLinearConv": 3}.get(op)
        if weight is not None:
            w = self.shape(ins[weight])
            return out_elems * int(np.prod(w[1:])) if w else 0
        if op == "ConvTranspose":
            x, w = self.shape(ins[0]), self.shape(ins[1])
            return int(np.prod(x)) * int(np.prod(w[1:])) if x and w else 0
        if op == "Gemm":
            a = self.shape(ins[0])
            trans = any(a_.name == "transA" and a_.i for a_ in node.attribute)
            return out_elems * (a[0] if trans else a[-1]) if a else 0
        if op in ("MatMul", "MatMulInteger", "QLinearMatMul"):
            a = self.shape(ins[0])
            return out_elems * a[-1] if a else 0
        return 0

    def activation_lower_bound(self) -> int:
        """Bytes of the largest set of activation tensors alive at once, executing nodes in file
        order (as frontend tflite computes it: constants are no activations; reshape-like outputs
        share their input's memory). 0 (unknown) for a QDQ model: its float tensors between
        DequantizeLinear and QuantizeLinear are no activations of integer code, so their sum
        bounds nothing."""
        if any(n.op_type in ("QuantizeLinear", "DequantizeLinear") for n in self.nodes):
            return 0

        def nbytes(name: str) -> int:
            dtype, shape = self.types.get(name, ("", None))
            return int(np.prod(shape)) * np.dtype(dtype).itemsize if shape is not None and dtype else 0

        root: dict[str, str] = {}
        first: dict[str, int] = {v.name: -1 for v in self.inputs}
        last: dict[str, int] = {}
        end = len(self.nodes)
        for step, node in enumerate(self.nodes):
            if node.op_type == "Constant":
                continue
            inputs = [t for t in node.input if t and t not in self.constants]
            for t in inputs:
                last[root.get(t, t)] = step
            for t in node.output:
                if node.op_type in _ALIASING_OPS and inputs:
                    root[t] = root.get(inputs[0], inputs[0])
                else:
                    first.setdefault(t, step)
                    last[t] = step
        for value in self.outputs:
            last[root.get(value.name, value.name)] = end
        sizes = {t: nbytes(t) for t in first}
        return max(
            (sum(s for t, s in sizes.items() if first[t] <= step <= last.get(t, first[t])) for step in range(end)),
            default=0,
        )


def read_onnx(path: Path) -> _Graph:
    """The model with its shapes inferred; ModelError naming the file if it is not ONNX."""
    import onnx
    from google.protobuf.message import DecodeError

    try:
        model = onnx.load(str(path))
    except (DecodeError, ValueError, RuntimeError) as err:
        raise ModelError(f"{path.name} is not an ONNX model ({type(err).__name__}: {err})") from None
    if not model.graph.node:
        raise ModelError(f"{path.name} is not an ONNX model (no graph nodes)")
    try:
        model = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except Exception as err:  # onnx raises its own InferenceError, or anything on a broken graph
        raise ModelError(f"{path.name}: ONNX shape inference fails: {type(err).__name__}: {err}") from None
    return _Graph(model, path)


class OnnxFrontend(Frontend):
    """Reads .onnx files with the `onnx` package; onnxruntime computes their reference outputs."""

    name = "onnx"
    help = "ONNX models (.onnx; fp32, or int8 in QDQ format): I/O with quantization, operators, MACs"
    suffixes = (".onnx",)
    converts = {".tflite": "tf2onnx"}
    requires = ("onnx", "onnxruntime")
    optional = ("tf2onnx",)  # -F onnx on a .tflite

    def describe(self, path: Path) -> ModelInfo:
        graph = read_onnx(path)
        inputs = tuple(graph.tensor(v, graph.dequantizer(v.name)) for v in graph.inputs)
        outputs = [graph.tensor(v, graph.quantizer(v.name)) for v in graph.outputs]
        operators = tuple(dict.fromkeys(n.op_type for n in graph.nodes if n.op_type != "Constant"))
        macs = sum(graph.macs(n) for n in graph.nodes)
        activations = graph.activation_lower_bound()
        return ModelInfo("onnx", path.stat().st_size, inputs, tuple(outputs), operators, macs, activations)

    def convert(self, source: Path, out: Path, log: Path) -> Path:
        """A .tflite as ONNX (tf2onnx, opset 13: QDQ for int8), with the TFLite model's fixed
        shapes put back on its inputs and outputs (tf2onnx makes the batch symbolic)."""
        import onnx
        from onnx.tools import update_model_dims

        from mlonmcu.models.frontend import TfliteFrontend
        from mlonmcu.process import run

        if "tf2onnx" not in self.components:
            raise ModelError(f"converting {source.name} to ONNX needs tf2onnx: run `mlonmcu setup tf2onnx`")
        shapes = TfliteFrontend().describe(source)
        target = out / f"{source.stem}.onnx"
        argv = [self.tool("tf2onnx"), "-m", "tf2onnx.convert", "--tflite", str(source), "--output", str(target)]
        done = run([*argv, "--opset", str(OPSET)], log=log, check=False, timeout=600, what="tf2onnx")
        if done.returncode != 0 or not target.is_file():
            lines = [line for line in done.output.splitlines() if line.strip()]
            raise ModelError(f"tf2onnx cannot convert {source.name}: {lines[-1] if lines else 'no message'}")
        model = onnx.load(str(target))
        graph = model.graph
        if len(graph.input) != len(shapes.inputs) or len(graph.output) != len(shapes.outputs):
            raise ModelError(f"tf2onnx changed the inputs/outputs of {source.name}: cannot fix their shapes")
        inputs = {v.name: list(t.shape) for v, t in zip(graph.input, shapes.inputs, strict=True)}
        outputs = {v.name: list(t.shape) for v, t in zip(graph.output, shapes.outputs, strict=True)}
        model = update_model_dims.update_inputs_outputs_dims(model, inputs, outputs)
        del model.graph.value_info[:]  # inferred again from the fixed shapes
        onnx.save(model, str(target))
        return target
