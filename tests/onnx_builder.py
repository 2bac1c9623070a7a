"""Small ONNX models written with onnx.helper for the tests: an fp32 CNN, its QDQ twin made by
onnxruntime's static quantization (float I/O), and a QDQ model with int8 I/O (as tf2onnx
converts int8 TFLite models)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

SHAPE = (1, 3, 8, 8)


def _save(model: object, directory: Path, name: str) -> Path:
    import onnx

    path = directory / name / f"{name}.onnx"
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def float_cnn(directory: Path, name: str = "cnn_onnx", seed: int = 0) -> Path:
    """Conv 3→4 (3×3, stride 2, pad 1) + Relu, AveragePool 2×2, Flatten, Gemm 16→5: 1808 MACs."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    weights = {
        "W": rng.normal(0, 0.3, (4, 3, 3, 3)).astype(np.float32),
        "B": rng.normal(0, 0.1, 4).astype(np.float32),
        "G": rng.normal(0, 0.3, (5, 16)).astype(np.float32),
    }
    nodes = [
        helper.make_node("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("AveragePool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "G"], ["y"], transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(SHAPE))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])],
        [numpy_helper.from_array(v, k) for k, v in weights.items()],
    )
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), directory, name)


def qdq_cnn(directory: Path, name: str = "cnn_onnx_qdq") -> Path:
    """float_cnn quantized by onnxruntime (QDQ format, int8 activations and per-channel weights)."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    source = float_cnn(directory, f"{name}_float")

    class Calibration(CalibrationDataReader):
        def __init__(self) -> None:
            rng = np.random.default_rng(7)
            self.samples = iter([{"x": rng.uniform(-1, 1, SHAPE).astype(np.float32)} for _ in range(8)])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.samples, None)

    path = directory / name / f"{name}.onnx"
    path.parent.mkdir(parents=True, exist_ok=True)
    quantize_static(
        str(source),
        str(path),
        Calibration(),
        quant_format=QuantFormat.QDQ,
        activation_type=QuantType.QInt8,
        weight_type=QuantType.QInt8,
        per_channel=True,
    )
    return path


def int8_io(source: Path, directory: Path, name: str) -> Path:
    """A QDQ model with float I/O (onnxruntime's) made int8 at both ends: the input QuantizeLinear
    and the output DequantizeLinear cut off, as tf2onnx's conversions of int8 models are."""
    import onnx
    from onnx import TensorProto, helper

    model = onnx.load(str(source))
    graph = model.graph
    quantize = next(n for n in graph.node if n.op_type == "QuantizeLinear" and n.input[0] == graph.input[0].name)
    dequantize = next(n for n in graph.node if n.op_type == "DequantizeLinear" and n.output[0] == graph.output[0].name)
    shape_in = [d.dim_value for d in graph.input[0].type.tensor_type.shape.dim]
    shape_out = [d.dim_value for d in graph.output[0].type.tensor_type.shape.dim]
    graph.node.remove(quantize)
    graph.node.remove(dequantize)
    del graph.input[:], graph.output[:]
    graph.input.append(helper.make_tensor_value_info(quantize.output[0], TensorProto.INT8, shape_in))
    graph.output.append(helper.make_tensor_value_info(dequantize.input[0], TensorProto.INT8, shape_out))
    return _save(model, directory, name)


def int8_io_relu(directory: Path, name: str = "relu_int8_io") -> Path:
    """int8 in → DequantizeLinear (0.05, -3) → Relu → QuantizeLinear (0.025, -128) → int8 out."""
    from onnx import TensorProto, helper, numpy_helper

    constants = {
        "xs": np.array(0.05, np.float32),
        "xz": np.array(-3, np.int8),
        "ys": np.array(0.025, np.float32),
        "yz": np.array(-128, np.int8),
    }
    nodes = [
        helper.make_node("DequantizeLinear", ["x", "xs", "xz"], ["xf"]),
        helper.make_node("Relu", ["xf"], ["yf"]),
        helper.make_node("QuantizeLinear", ["yf", "ys", "yz"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info("x", TensorProto.INT8, list(SHAPE))],
        [helper.make_tensor_value_info("y", TensorProto.INT8, list(SHAPE))],
        [numpy_helper.from_array(v, k) for k, v in constants.items()],
    )
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), directory, name)


def symbolic_batch(directory: Path, name: str = "symbolic_batch") -> Path:
    """A Relu over an input whose batch dimension is a name ("N"), as PyTorch exports often are."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
    )
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), directory, name)


def custom_op(directory: Path, name: str = "custom_op") -> Path:
    """One operator of a domain nobody implements (com.example MyFancyOp)."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("MyFancyOp", ["x"], ["y"], domain="com.example")],
        name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
    )
    opsets = [helper.make_opsetid("", 13), helper.make_opsetid("com.example", 1)]
    path = directory / name / f"{name}.onnx"
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(helper.make_model(graph, opset_imports=opsets), str(path))
    return path
