"""Write small TFLite flatbuffers (one or a few operators) for operator tests, without TensorFlow.

Uses the flatbuffer builders of the `tflite` package. A model is a list of tensors (shape, type,
quantization, optional constant data) and operators (builtin name, input/output tensor indices,
builtin options by field name as the schema spells them, e.g. {"StrideH": 2}).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import flatbuffers
import numpy as np
import tflite

TYPES = {"float32": 0, "int32": 2, "uint8": 3, "int64": 4, "int16": 7, "int8": 9, "uint64": 12}


@dataclass
class Tensor:
    shape: tuple[int, ...]
    dtype: str = "int8"
    scale: list[float] | None = None
    zero_point: list[int] | None = None
    axis: int = 0
    data: np.ndarray | None = None
    name: str = ""
    variable: bool = False  # state kept between inferences (SVDF, LSTM)


@dataclass
class Op:
    op: str  # builtin name, e.g. "CONV_2D"
    inputs: list[int]
    outputs: list[int]
    options: dict[str, Any] = field(default_factory=dict)
    options_type: str = ""  # e.g. "Conv2DOptions"; "" = no options table
    version: int = 1  # the operator version LiteRT looks its kernel up by (int8 ELU needs 2)


def q(shape: tuple[int, ...], scale: float, zero_point: int, dtype: str = "int8", **kw: Any) -> Tensor:
    """A per-tensor quantized activation."""
    return Tensor(tuple(shape), dtype, [scale], [zero_point], **kw)


def const(data: np.ndarray, scale: list[float] | float | None = None, zero_point: Any = None, axis: int = 0) -> Tensor:
    """A constant (weights, bias, axes, shapes); scales per channel when given a list."""
    dtype = str(data.dtype)
    if scale is None:
        return Tensor(tuple(data.shape), dtype, data=data)
    scales = list(np.atleast_1d(np.asarray(scale, dtype=np.float64)))
    zeros = list(np.atleast_1d(np.asarray(zero_point if zero_point is not None else [0] * len(scales))))
    return Tensor(tuple(data.shape), dtype, scales, [int(z) for z in zeros], axis, data)


def _vector(b: flatbuffers.Builder, values: list[Any], kind: str) -> int:
    sizes = {"int32": 4, "float32": 4, "int64": 8, "uint8": 1, "offset": 4}
    alignment = 16 if kind == "uint8" else sizes[kind]
    b.StartVector(sizes[kind], len(values), alignment)
    for value in reversed(values):
        {
            "int32": b.PrependInt32,
            "float32": b.PrependFloat32,
            "int64": b.PrependInt64,
            "uint8": b.PrependUint8,
            "offset": b.PrependUOffsetTRelative,
        }[kind](value)
    return b.EndVector()


def _options(b: flatbuffers.Builder, kind: str, options: dict[str, Any]) -> int:
    vectors = {k: _vector(b, [int(x) for x in v], "int32") for k, v in options.items() if isinstance(v, list | tuple)}
    getattr(tflite, f"{kind}Start")(b)
    for key, value in options.items():
        add = getattr(tflite, f"{kind}Add{key}")
        add(b, vectors.get(key, value))
    return getattr(tflite, f"{kind}End")(b)


def build(tensors: list[Tensor], ops: list[Op], inputs: list[int], outputs: list[int]) -> bytes:
    b = flatbuffers.Builder(1024)
    codes = list(dict.fromkeys(op.op for op in ops))
    versions = {op.op: op.version for op in ops}
    # buffers: 0 is the empty sentinel, then one per constant tensor
    buffer_of: dict[int, int] = {}
    buffer_offsets = []
    tflite.BufferStart(b)
    buffer_offsets.append(tflite.BufferEnd(b))
    for i, tensor in enumerate(tensors):
        if tensor.data is not None:
            raw = np.ascontiguousarray(tensor.data).tobytes()
            data = _vector(b, list(raw), "uint8")
            tflite.BufferStart(b)
            tflite.BufferAddData(b, data)
            buffer_of[i] = len(buffer_offsets)
            buffer_offsets.append(tflite.BufferEnd(b))
    tensor_offsets = []
    for i, tensor in enumerate(tensors):
        name = b.CreateString(tensor.name or f"t{i}")
        shape = _vector(b, list(tensor.shape), "int32")
        quant = None
        if tensor.scale is not None:
            scales = _vector(b, [float(s) for s in tensor.scale], "float32")
            zeros = _vector(b, [int(z) for z in (tensor.zero_point or [0] * len(tensor.scale))], "int64")
            tflite.QuantizationParametersStart(b)
            tflite.QuantizationParametersAddScale(b, scales)
            tflite.QuantizationParametersAddZeroPoint(b, zeros)
            tflite.QuantizationParametersAddQuantizedDimension(b, tensor.axis)
            quant = tflite.QuantizationParametersEnd(b)
        tflite.TensorStart(b)
        tflite.TensorAddShape(b, shape)
        tflite.TensorAddType(b, TYPES[tensor.dtype])
        tflite.TensorAddBuffer(b, buffer_of.get(i, 0))
        tflite.TensorAddName(b, name)
        if tensor.variable:
            tflite.TensorAddIsVariable(b, True)
        if quant is not None:
            tflite.TensorAddQuantization(b, quant)
        tensor_offsets.append(tflite.TensorEnd(b))
    op_offsets = []
    for op in ops:
        ins, outs = _vector(b, op.inputs, "int32"), _vector(b, op.outputs, "int32")
        opts = _options(b, op.options_type, op.options) if op.options_type else None
        tflite.OperatorStart(b)
        tflite.OperatorAddOpcodeIndex(b, codes.index(op.op))
        tflite.OperatorAddInputs(b, ins)
        tflite.OperatorAddOutputs(b, outs)
        if opts is not None:
            tflite.OperatorAddBuiltinOptionsType(b, getattr(tflite.BuiltinOptions, op.options_type))
            tflite.OperatorAddBuiltinOptions(b, opts)
        op_offsets.append(tflite.OperatorEnd(b))
    code_offsets = []
    for name in codes:
        builtin = getattr(tflite.BuiltinOperator, name)
        tflite.OperatorCodeStart(b)
        tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(builtin, 127))
        tflite.OperatorCodeAddBuiltinCode(b, builtin)
        tflite.OperatorCodeAddVersion(b, versions[name])
        code_offsets.append(tflite.OperatorCodeEnd(b))
    tensor_vec = _vector(b, tensor_offsets, "offset")
    op_vec = _vector(b, op_offsets, "offset")
    in_vec, out_vec = _vector(b, inputs, "int32"), _vector(b, outputs, "int32")
    graph_name = b.CreateString("main")
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, tensor_vec)
    tflite.SubGraphAddInputs(b, in_vec)
    tflite.SubGraphAddOutputs(b, out_vec)
    tflite.SubGraphAddOperators(b, op_vec)
    tflite.SubGraphAddName(b, graph_name)
    subgraph = tflite.SubGraphEnd(b)
    subgraphs = _vector(b, [subgraph], "offset")
    code_vec = _vector(b, code_offsets, "offset")
    buffer_vec = _vector(b, buffer_offsets, "offset")
    description = b.CreateString("mlonmcu operator test")
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddOperatorCodes(b, code_vec)
    tflite.ModelAddSubgraphs(b, subgraphs)
    tflite.ModelAddBuffers(b, buffer_vec)
    tflite.ModelAddDescription(b, description)
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def conv_options(stride: int, padding: int, dilation: int = 1, act: int = 0) -> dict[str, int]:
    """Conv2DOptions with the same stride and dilation on both axes (padding 0 = SAME, 1 = VALID)."""
    return {
        "Padding": padding,
        "StrideH": stride,
        "StrideW": stride,
        "DilationHFactor": dilation,
        "DilationWFactor": dilation,
        "FusedActivationFunction": act,
    }


def write(directory: Path, name: str, model: bytes) -> Path:
    """In the mlonmcu-models layout: DIR/NAME/NAME.tflite."""
    path = directory / name / f"{name}.tflite"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(model)
    return path


def hybrid_model(directory: Path) -> Path:
    """FULLY_CONNECTED with float activations and int8 weights: dynamic-range quantization."""
    weights = const(np.arange(-64, 64, dtype=np.int8).reshape(8, 16), 0.02, 0)
    tensors = [Tensor((1, 16), "float32"), weights, Tensor((1, 8), "float32")]
    model = build(tensors, [Op("FULLY_CONNECTED", [0, 1, -1], [2], {}, "FullyConnectedOptions")], [0], [2])
    return write(directory, "hybrid_fc", model)


def svdf_model(batch: int, rank: int, state_dtype: str, seed: int = 3) -> bytes:
    """One SVDF (16 inputs, 6 units × rank filters, memory 5) with its state, int8 in and out."""
    rng = np.random.default_rng(seed)
    inputs, units, memory = 16, 6, 5
    filters = units * rank
    state_scale, time_scale = (0.02, 0.01) if state_dtype == "int8" else (0.0005, 0.0002)
    state_zero = 4 if state_dtype == "int8" else 0
    limit = 127 if state_dtype == "int8" else 2000
    tensors = [
        q((batch, inputs), 0.05, -3),
        const(rng.integers(-127, 128, (filters, inputs)).astype(np.int8), 0.01),
        const(rng.integers(-limit, limit + 1, (filters, memory)).astype(state_dtype), time_scale),
        const(rng.integers(-500, 500, units).astype(np.int32), state_scale * time_scale),
        q((batch, filters * memory), state_scale, state_zero, state_dtype, variable=True),
        q((batch, units), 0.03, 2),
    ]
    options = {"Rank": rank, "FusedActivationFunction": 1}
    return build(tensors, [Op("SVDF", [0, 1, 2, 3, 4], [5], options, "SVDFOptions")], [0], [5])


def _lstm(
    tensors: list[Tensor], weights: list[Tensor], states: list[Tensor], y: Tensor, cell_clip: float, time_major: bool
) -> bytes:
    """UNIDIRECTIONAL_SEQUENCE_LSTM of x (tensors[0]) and its weights: the four input-to and four
    recurrent-to gate weights and the four biases, None for an absent (CIFG) input gate."""
    index = {}
    for slot, tensor in enumerate(weights):
        if tensor is not None:
            index[slot] = len(tensors)
            tensors.append(tensor)
    hidden = len(tensors)
    tensors += [*states, y]
    gate = [index.get(slot, -1) for slot in range(12)]
    absent = [-1]
    inputs_of = [0, *gate[:8], *absent * 3, *gate[8:], *absent * 2, hidden, hidden + 1, *absent * 4]
    options = {
        "FusedActivationFunction": 4,  # TANH: the cell gate's (the schema has no SIGMOID)
        "CellClip": cell_clip,
        "ProjClip": 0.0,
        "TimeMajor": time_major,
        "AsymmetricQuantizeInputs": False,
    }
    op = Op("UNIDIRECTIONAL_SEQUENCE_LSTM", inputs_of, [hidden + 2], options, "UnidirectionalSequenceLSTMOptions")
    return build(tensors, [op], [0], [hidden + 2])


def lstm_model(batch: int, steps: int, cell_clip: float = 0.0, time_major: bool = False, seed: int = 5) -> bytes:
    """One int8 UNIDIRECTIONAL_SEQUENCE_LSTM (8 inputs, 6 units) with an int16 cell state, the
    tensor layout TFLM's integer kernel takes (no peepholes, projection or layer norm)."""
    rng = np.random.default_rng(seed)
    inputs, units = 8, 6
    x_shape = (steps, batch, inputs) if time_major else (batch, steps, inputs)
    weights = [
        const(rng.integers(-127, 128, shape).astype(np.int8), float(rng.uniform(0.004, 0.02)))
        for shape in [(units, inputs)] * 4 + [(units, units)] * 4
    ]
    weights += [const(rng.integers(-3000, 3000, units).astype(np.int32), 0.0001) for _ in range(4)]
    states = [q((batch, units), 0.008, 3, variable=True), q((batch, units), 2.0**-11, 0, "int16", variable=True)]
    y_shape = (steps, batch, units) if time_major else (batch, steps, units)
    return _lstm([q(x_shape, 0.01, -20)], weights, states, q(y_shape, 0.008, 3), cell_clip, time_major)


def float_lstm_model(
    batch: int, steps: int, cifg: bool = False, cell_clip: float = 0.0, time_major: bool = False, seed: int = 5
) -> bytes:
    """One float UNIDIRECTIONAL_SEQUENCE_LSTM (8 inputs, 6 units); `cifg`: no input gate."""
    rng = np.random.default_rng(seed)
    inputs, units = 8, 6
    x_shape = (steps, batch, inputs) if time_major else (batch, steps, inputs)
    shapes = [(units, inputs)] * 4 + [(units, units)] * 4 + [(units,)] * 4
    weights: list[Any] = [const(rng.uniform(-0.6, 0.6, shape).astype(np.float32)) for shape in shapes]
    if cifg:
        weights[0] = weights[4] = weights[8] = None
    states = [Tensor((batch, units), "float32", variable=True) for _ in range(2)]
    y_shape = (steps, batch, units) if time_major else (batch, steps, units)
    return _lstm([Tensor(x_shape, "float32")], weights, states, Tensor(y_shape, "float32"), cell_clip, time_major)


def transpose_conv_model(
    kernel: int, stride: int, padding: int, out_hw: tuple[int, int], act: int = 0, dtype: str = "int8", seed: int = 11
) -> bytes:
    """TRANSPOSE_CONV of x [1, 4, 3, 8] → [1, OH, OW, 5], per-channel filter scales and a bias
    (int32; int64 for 16x8, whose activations have zero point 0)."""
    rng = np.random.default_rng(seed)
    w = rng.integers(-127, 128, (5, kernel, kernel, 8)).astype(np.int8)
    scales = list(rng.uniform(0.002, 0.02, 5))
    x_scale, x_zero, y_scale, y_zero = (0.04, -7, 0.1, 2) if dtype == "int8" else (0.0004, 0, 0.001, 0)
    tensors = [
        const(np.array([1, *out_hw, 5], np.int32)),
        const(w, scales, [0] * 5),
        q((1, 4, 3, 8), x_scale, x_zero, dtype),
        const(
            rng.integers(-3000, 3000, 5).astype("int32" if dtype == "int8" else "int64"), [x_scale * s for s in scales]
        ),
        q((1, *out_hw, 5), y_scale, y_zero, dtype),
    ]
    opts = {"Padding": padding, "StrideH": stride, "StrideW": stride, "FusedActivationFunction": act}
    return build(tensors, [Op("TRANSPOSE_CONV", [0, 1, 2, 3], [4], opts, "TransposeConvOptions", 4)], [2], [4])


def conv16_model(bias_dtype: str, stride: int = 1, padding: int = 0, seed: int = 13) -> bytes:
    """16x8 CONV_2D: x int16 [1, 6, 5, 8] (zero point 0), int8 per-channel weights [6, 3, 3, 8],
    an int64 or int32 bias (TFLM accumulates in the bias' width)."""
    rng = np.random.default_rng(seed)
    shape = (1, 6, 5, 8)
    w = rng.integers(-127, 128, (6, 3, 3, 8)).astype(np.int8)
    scales = list(rng.uniform(0.002, 0.02, 6))
    h = (shape[1] + stride - 1) // stride if padding == 0 else (shape[1] - 3) // stride + 1
    w_out = (shape[2] + stride - 1) // stride if padding == 0 else (shape[2] - 3) // stride + 1
    tensors = [
        q(shape, 0.0004, 0, "int16"),
        const(w, scales, [0] * 6),
        const(rng.integers(-30000, 30000, 6).astype(bias_dtype), [0.0004 * s for s in scales], [0] * 6),
        q((1, h, w_out, 6), 0.0009, 0, "int16"),
    ]
    opts = {"Padding": padding, "StrideH": stride, "StrideW": stride, "FusedActivationFunction": 1}
    return build(tensors, [Op("CONV_2D", [0, 1, 2], [3], opts, "Conv2DOptions", 4)], [0], [3])


def dense16_model(bias_dtype: str = "int64", seed: int = 17) -> bytes:
    """16x8 FULLY_CONNECTED: x int16 [2, 24] (zero point 0), int8 weights [7, 24] (per tensor)."""
    rng = np.random.default_rng(seed)
    tensors = [
        q((2, 24), 0.0005, 0, "int16"),
        const(rng.integers(-127, 128, (7, 24)).astype(np.int8), 0.01),
        const(rng.integers(-30000, 30000, 7).astype(bias_dtype), 0.0005 * 0.01),
        q((2, 7), 0.002, 0, "int16"),
    ]
    opts = {"FusedActivationFunction": 0, "KeepNumDims": False}
    return build(tensors, [Op("FULLY_CONNECTED", [0, 1, 2], [3], opts, "FullyConnectedOptions", 7)], [0], [3])


def depthwise16_model(multiplier_one: bool = True, seed: int = 19) -> bytes:
    """16x8 DEPTHWISE_CONV_2D 3×3 with an int64 bias: on 8 channels (multiplier 1), or on one
    input channel with multiplier 4."""
    rng = np.random.default_rng(seed)
    channels_in, channels = (8, 8) if multiplier_one else (1, 4)
    w = rng.integers(-127, 128, (1, 3, 3, channels)).astype(np.int8)
    scales = list(rng.uniform(0.002, 0.02, channels))
    tensors = [
        q((1, 6, 5, channels_in), 0.0004, 0, "int16"),
        const(w, scales, [0] * channels, axis=3),
        const(rng.integers(-30000, 30000, channels).astype(np.int64), [0.0004 * s for s in scales], [0] * channels),
        q((1, 6, 5, channels), 0.0009, 0, "int16"),
    ]
    opts = {
        "Padding": 0,
        "StrideH": 1,
        "StrideW": 1,
        "DepthMultiplier": channels // channels_in,
        "FusedActivationFunction": 0,
    }
    return build(tensors, [Op("DEPTHWISE_CONV_2D", [0, 1, 2], [3], opts, "DepthwiseConv2DOptions", 5)], [0], [3])
