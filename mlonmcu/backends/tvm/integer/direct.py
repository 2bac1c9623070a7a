"""int8 TFLite → Relax `main` of integer kernels, read from the flatbuffer itself.

TVM's TFLite importer turns every int8 operator into dequantize → float → quantize and has bugs
of its own (per-channel `quantized_dimension` 3, FULLY_CONNECTED over a 4-D input, ...). Here
each operator becomes its integer kernel directly from what TFLite's kernels read: the tensors'
scales and zero points, the constant buffers and the builtin options. Layout-only operators
(RESHAPE, SQUEEZE, EXPAND_DIMS) are Relax reshapes. An
operator this path does not cover raises `NotCovered` naming it (and why), never an
approximation.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from mlonmcu.backends.tvm.integer import (
    conv16,
    deconv,
    elementwise,
    islands,
    lut,
    lut16,
    matmul,
    movement,
    pooling,
    recurrent,
    resize,
    softmax,
)
from mlonmcu.backends.tvm.integer.fixedpoint import per_channel_multipliers, round_half_away
from mlonmcu.backends.tvm.integer.graph import Quantized
from mlonmcu.backends.tvm.integer.lowering import LoweringReport
from mlonmcu.backends.tvm.integer.patterns import (
    ACTIVATION_NAMES,
    INT8_MAX,
    INT8_MIN,
    LIMITS,
    ConvGeometry,
    Lowered,
    Output,
    Schedule,
    conv_lowering,
    dense_lowering,
    dense_requantization,
    quad,
)
from mlonmcu.backends.tvm.integer.shapes import settle_shapes
from mlonmcu.backends.tvm.integer.uncovered import NotCovered
from mlonmcu.backends.tvm.plan import STATE_ATTR
from mlonmcu.models.tflite_graph import Operator, Tensor, TfliteGraph

__all__ = ["NotCovered", "build_direct"]

Range = tuple[float | None, float | None]  # the float range an activation clamps to (None: unbounded)
_RELU, _RELU6, _RELU_N1_TO_1 = (0.0, None), (0.0, 6.0), (-1.0, 1.0)
# TFLite ActivationFunctionType → its range
_ACTIVATIONS: dict[int, Range] = {0: (None, None), 1: _RELU, 2: _RELU_N1_TO_1, 3: _RELU6}
_SAME = 0  # TFLite Padding
_REQUANTIZED = ("int8", "uint8", "int16", "int32")
_WIDE = ("int8", "int16")  # operators with a 16x8 variant take int16 activations too
# QUANTIZE between integer types: the (input, output) pairs TFLM's Requantize takes
_REQUANTIZE_PAIRS = {("int8", "int8"), ("int16", "int8"), ("int8", "int16"), ("int8", "int32")}
_REQUANTIZE_PAIRS |= {("int16", "int16"), ("int16", "int32"), ("int32", "int16"), ("int32", "int8")}
_REQUANTIZE_PAIRS |= {("uint8", "int8"), ("int8", "uint8")}  # a uint8 model interface
_RESHAPES = ("RESHAPE", "SQUEEZE", "EXPAND_DIMS")
# standalone activations: TFLite requantizes to the output and clamps to the activation's range
_RELUS: dict[str, Range] = {"RELU": _RELU, "RELU6": _RELU6, "RELU_N1_TO_1": _RELU_N1_TO_1, "RELU_0_TO_1": (0.0, 1.0)}


def _quantize_value(value: float, tensor: Tensor) -> int:
    """TFLite's Quantize of one float: zero point + round(value / scale), in float32."""
    return tensor.scalar_zero_point + round_half_away(float(np.float32(value) / np.float32(tensor.scalar_scale)))


def output_of(op: Operator, tensor: Tensor) -> Output:
    """The output quantization and the int8 range its fused activation clamps to."""
    code = int(op.options.get("FusedActivationFunction", 0))
    if code not in _ACTIVATIONS:
        raise NotCovered(op, f"fused activation {ACTIVATION_NAMES.get(code, code)}")
    return clamped_output(tensor, _ACTIVATIONS[code])


def clamped_output(tensor: Tensor, bounds: Range) -> Output:
    """The tensor's quantization with `bounds` quantized to its type (int8, int16), as TFLite
    computes the range."""
    low, high = bounds
    type_min, type_max = LIMITS.get(tensor.dtype, LIMITS["int8"])
    act_min = type_min if low is None else max(type_min, _quantize_value(low, tensor))
    act_max = type_max if high is None else min(type_max, _quantize_value(high, tensor))
    return Output(float(np.float32(tensor.scalar_scale)), tensor.scalar_zero_point, act_min, act_max)


def same_padding(size: int, kernel: int, stride: int, dilation: int, out: int) -> tuple[int, int]:
    """TFLite's SAME padding: the total split with the extra row or column after."""
    effective = (kernel - 1) * dilation + 1
    total = max((out - 1) * stride + effective - size, 0)
    return total // 2, total - total // 2


class DirectBuilder:
    """Emits one Relax binding per operator into `main`, in the flatbuffer's order."""

    def __init__(self, graph: TfliteGraph, schedule: Schedule | None = None):
        self.graph = graph
        self.schedule = schedule or Schedule()
        self.values: dict[int, Any] = {}  # tensor index → Relax expression
        self.report = LoweringReport()
        self.count = 0
        self.handlers: dict[str, Callable[[Operator], Any]] = {
            "CONV_2D": self._conv,
            "DEPTHWISE_CONV_2D": self._conv,
            "TRANSPOSE_CONV": self._transpose_conv,
            "FULLY_CONNECTED": self._dense,
            "BATCH_MATMUL": self._batch_matmul,
            "ADD": self._binary,
            "SUB": self._binary,
            "MUL": self._binary,
            "SQUARED_DIFFERENCE": self._binary,
            "DIV": self._binary,
            **dict.fromkeys(_RELUS, self._relu),
            "LEAKY_RELU": self._leaky_relu,
            "PRELU": self._prelu,
            **dict.fromkeys(("HARD_SWISH", "RSQRT", "ABS", *lut.TRANSFORMS), self._table),
            "AVERAGE_POOL_2D": self._pool,
            "MAX_POOL_2D": self._pool,
            "MEAN": self._mean,
            "SUM": self._mean,
            "RESIZE_BILINEAR": self._resize_bilinear,
            "SOFTMAX": self._softmax,
            "LOG_SOFTMAX": self._log_softmax,
            "CONCATENATION": self._concat,
            "QUANTIZE": self._requantize,
            "DEQUANTIZE": self._dequantize,
            **dict.fromkeys(_RESHAPES, self._reshape),
            **{name: functools.partial(handler, self) for name, handler in movement.HANDLERS.items()},
            **{name: functools.partial(handler, self) for name, handler in recurrent.HANDLERS.items()},
        }

    # -- checks ----------------------------------------------------------------------------------

    def handler(self, op: Operator) -> Callable[[Operator], Any] | None:
        """What builds `op`: its float-island operator, else its integer handler (None: none)."""
        if islands.takes(self, op):
            return functools.partial(islands.float_op, self)
        return self.handlers.get(op.op)

    def uncovered(self) -> list[str]:
        """The operators of the model with no handler at all (parameters are checked while building)."""
        return sorted({op.op for op in self.graph.operators if self.handler(op) is None})

    def int8(self, op: Operator, tensor: Tensor | None, what: str) -> Tensor:
        return self.integer(op, tensor, what, ("int8",))

    def integer(self, op: Operator, tensor: Tensor | None, what: str, dtypes: tuple[str, ...]) -> Tensor:
        """A quantized tensor of one of `dtypes`."""
        if tensor is None:
            raise NotCovered(op, f"no {what}")
        if tensor.dtype not in dtypes or not tensor.quantized:
            raise NotCovered(
                op, f"{what} '{tensor.name}' is {tensor.dtype}{'' if tensor.quantized else ' (not quantized)'}"
            )
        return tensor

    def activation(
        self, op: Operator, position: int, constant: bool = False, dtypes: tuple[str, ...] = ("int8",)
    ) -> tuple[Tensor, Quantized]:
        """A per-tensor quantized input (int8 unless `dtypes` says otherwise); `constant`: a constant
        one is fine too (elementwise operands, e.g. MobileNetV3's hard-sigmoid multiplies by 1/6)."""
        tensor = self.integer(op, self.graph.input(op, position), f"input {position}", dtypes)
        if tensor.data is not None and not constant:
            raise NotCovered(op, f"constant input {position}")
        if not tensor.per_tensor:
            raise NotCovered(op, f"per-channel quantized activation '{tensor.name}'")
        value = self.operand(tensor)
        return tensor, Quantized(value, tensor.scale, tensor.zero_point.astype(np.int32), tensor.axis)

    def operand(self, tensor: Tensor) -> Any:
        """A tensor as a Relax value: the activation computed so far, or the constant."""
        from tvm import relax

        if tensor.data is not None:
            # ascontiguousarray would make a scalar 1-D; the dtype: relax.const narrows int64 to int32
            return relax.const(tensor.data.copy(order="C"), str(tensor.data.dtype))
        return self.values[tensor.index]

    def name(self, op: str) -> str:
        self.count += 1
        return f"int8_{op}_{self.count}"

    # -- building --------------------------------------------------------------------------------

    def build(self) -> tuple[Any, LoweringReport]:
        from tvm import relax

        missing = self.uncovered()
        if missing:
            first = next(op for op in self.graph.operators if op.op in missing)
            raise NotCovered(
                first, "no integer kernel" + (f" (also {', '.join(missing[1:])})" if len(missing) > 1 else "")
            )
        params = []
        for index in self.graph.inputs:
            tensor = self.graph.tensors[index]
            var = relax.Var(tensor.name, relax.TensorType(shape=tensor.shape, dtype=tensor.dtype))
            self.values[index] = var
            params.append(var)
        fills = []
        for tensor in self.graph.tensors:
            if tensor.variable:  # state: a parameter the AOT driver keeps (plan.STATE_ATTR)
                var = relax.Var(f"state_{tensor.index}", relax.TensorType(shape=tensor.shape, dtype=tensor.dtype))
                self.values[tensor.index] = var
                params.append(var)
                fills.append(recurrent.state_fill(tensor.dtype, tensor.scalar_zero_point))
        self.builder = relax.BlockBuilder()
        failure: NotCovered | None = None
        with self.builder.function("main", params=params):
            with self.builder.dataflow():
                try:
                    for op in self.graph.operators:
                        build = self.handler(op)
                        assert build is not None  # uncovered() checked
                        result = build(op)
                        results = result if isinstance(result, list) else [result]
                        for index, value in zip(op.outputs, results, strict=True):
                            self.values[index] = self.builder.emit(value)
                    outputs = [self._value(i) for i in self.graph.outputs]
                except NotCovered as err:  # close the builder's scopes (TVM warns otherwise); discarded
                    failure, outputs = err, [params[0]]
                output = self.builder.emit_output(outputs[0] if len(outputs) == 1 else relax.Tuple(outputs))
            self.builder.emit_func_output(output)
        if failure is not None:
            raise failure
        mod = self.builder.get()
        if fills:
            mod["main"] = mod["main"].with_attr(STATE_ATTR, fills)
        return mod, self.report

    def _value(self, index: int) -> Any:
        if index not in self.values:
            raise NotCovered(Operator(-1, "OUTPUT", (), ()), f"model output {index} is not computed by any operator")
        return self.values[index]

    def call(self, lowered: Lowered, integer: bool = True) -> Any:
        from tvm import relax

        gvar = self.builder.add_func(lowered.kernel, str(lowered.kernel.attrs["global_symbol"]))
        args = [
            relax.const(np.ascontiguousarray(a), str(a.dtype)) if isinstance(a, np.ndarray) else a for a in lowered.args
        ]
        if integer:
            self.report.lowered[lowered.op] += 1
        return relax.call_tir(gvar, relax.Tuple(args), relax.TensorType(lowered.shape, lowered.dtype))

    # -- operators -------------------------------------------------------------------------------

    def _conv16(
        self,
        op: Operator,
        value: Any,
        shapes: tuple[tuple[int, int, int, int], tuple[int, int, int, int]],
        tensors: tuple[Tensor, Tensor, Tensor, Tensor | None],
        hwio: np.ndarray,
        geometry: ConvGeometry,
        out: Output,
        pairs: np.ndarray | None = None,
        single_rounding: bool = False,
    ) -> Lowered:
        """A 16x8 convolution (integer/conv16.py) of `value` (input shape, output shape) from the
        same geometry as the int8 one; `tensors`: input, filter, output, bias; `pairs`: the
        (multiplier, shift) per channel if not CONV_2D's; `single_rounding`: LiteRT's 16x8
        FULLY_CONNECTED requantization (with an int64 accumulator)."""
        in_shape, out_shape = shapes
        x, weights, out_tensor, bias = tensors
        if x.scalar_zero_point != 0 or out_tensor.scalar_zero_point != 0:
            raise NotCovered(op, "int16 activations with a non-zero zero point")
        channels = out_shape[3]
        if bias is not None and (bias.data is None or bias.dtype not in ("int32", "int64")):
            raise NotCovered(op, "a bias that is not constant int32 or int64")
        # TFLM's CONV_2D and FULLY_CONNECTED accumulate in the bias' width (without a bias:
        # QuantizedBiasType, INT32 = 2, else int64); DEPTHWISE_CONV_2D and TRANSPOSE_CONV in int64
        declared = int(op.options.get("QuantizedBiasType", 0))
        wide = op.op in ("DEPTHWISE_CONV_2D", "TRANSPOSE_CONV") or (
            bias.dtype == "int64" if bias is not None else declared != 2
        )
        values = np.zeros(channels, np.int64 if wide else np.int32) if bias is None or bias.data is None else bias.data
        spec = conv16.Conv16Spec(
            name=self.name("conv2d_16x8"),
            input_shape=in_shape,
            output_shape=out_shape,
            kernel=(int(hwio.shape[0]), int(hwio.shape[1])),
            strides=geometry.strides,
            dilation=geometry.dilation,
            padding=geometry.padding[:2],
            wide=wide,
            act=(out.act_min, out.act_max),
            depthwise=hwio.ndim == 3,
            block=self.schedule.scalar_conv_block,
            single_rounding=single_rounding and wide,
        )
        if pairs is None:
            pairs = per_channel_multipliers(x.scalar_scale, weights.scale, out.scale)
        if spec.single_rounding:
            pairs = conv16.single_multipliers(pairs)
        elif wide:
            pairs = conv16.wide_multipliers(pairs)
        packed = conv16.pack_conv16(spec, hwio, values.astype(np.int64 if wide else np.int32).reshape(-1), pairs)
        return Lowered(None, op.op, conv16.conv16_kernel(spec), [value, *packed], out_shape, dtype="int16")

    def _conv(self, op: Operator) -> Any:
        from tvm import relax

        x_tensor, x = self.activation(op, 0, dtypes=_WIDE)
        weights = self.int8(op, self.graph.input(op, 1), "filter")
        if weights.data is None:
            raise NotCovered(op, "a filter that is not constant")
        if np.any(weights.zero_point != 0):
            raise NotCovered(op, "a filter with non-zero zero points")
        out_tensor = self.integer(op, self.graph.output(op), "output", (x_tensor.dtype,))
        out = output_of(op, out_tensor)
        bias_tensor = self.graph.input(op, 2)
        channels = out_tensor.shape[3]
        bias = np.zeros(channels, np.int32) if bias_tensor is None else bias_tensor.data
        if bias is None or (x_tensor.dtype == "int8" and bias.dtype != np.int32):
            raise NotCovered(op, "a bias that is not constant int32 (int64 for 16x8)")
        opts = op.options
        strides = (int(opts["StrideH"]), int(opts["StrideW"]))
        dilation = (int(opts.get("DilationHFactor", 1)), int(opts.get("DilationWFactor", 1)))
        in_shape, shape = quad(x_tensor.shape), quad(out_tensor.shape)
        if op.op == "CONV_2D":
            if weights.shape[3] != in_shape[3]:
                raise NotCovered(op, "grouped convolution")
            hwio = np.transpose(weights.data, (1, 2, 3, 0))  # [O, KH, KW, I] → [KH, KW, I, O]
        elif in_shape[3] == 1:  # one input channel: each multiplier is an output channel of a conv
            hwio = np.transpose(weights.data, (1, 2, 0, 3))  # [1, KH, KW, M] → [KH, KW, 1, M]
        elif int(opts.get("DepthMultiplier", 1)) == 1 and weights.shape[3] == in_shape[3]:
            hwio = weights.data[0]  # [KH, KW, C]
        elif weights.shape[3] % in_shape[3] == 0:
            # output channel c·M + m reads input channel c: each input channel repeated M times (a
            # copy of the input), then a depthwise convolution with multiplier 1
            repeats = weights.shape[3] // in_shape[3]
            value = self.builder.emit(relax.op.repeat(x.value, repeats, axis=3))
            x = dataclasses.replace(x, value=value)
            in_shape = (*in_shape[:3], weights.shape[3])
            hwio = weights.data[0]
        else:
            raise NotCovered(op, f"depth multiplier {opts.get('DepthMultiplier')} on {in_shape[3]} input channels")
        kernel_h, kernel_w = int(hwio.shape[0]), int(hwio.shape[1])
        if int(opts["Padding"]) == _SAME:
            top, bottom = same_padding(in_shape[1], kernel_h, strides[0], dilation[0], shape[1])
            left, right = same_padding(in_shape[2], kernel_w, strides[1], dilation[1], shape[2])
        else:
            top = bottom = left = right = 0
        geometry = ConvGeometry(strides, dilation, (top, left, bottom, right))
        if x_tensor.dtype == "int16":
            tensors = (x_tensor, weights, out_tensor, bias_tensor)
            return self.call(self._conv16(op, x.value, (in_shape, shape), tensors, hwio, geometry, out))
        name = self.name("conv2d" if hwio.ndim == 4 else "depthwise_conv2d")
        scales = weights.scale
        return self.call(
            conv_lowering(name, x, in_shape, hwio, scales, bias.reshape(-1), out, shape, geometry, self.schedule)
        )

    def _transpose_conv(self, op: Operator) -> Any:
        """One register-blocked convolution per output phase (integer/deconv.py), interleaved."""
        from tvm import relax

        x_tensor, x = self.activation(op, 2, dtypes=_WIDE)
        weights = self.int8(op, self.graph.input(op, 1), "filter")
        out_tensor = self.integer(op, self.graph.output(op), "output", (x_tensor.dtype,))
        if weights.data is None or np.any(weights.zero_point != 0):
            raise NotCovered(op, "a filter that is not constant and symmetric")
        out = output_of(op, out_tensor)
        channels = out_tensor.shape[3]
        bias_tensor = self.graph.input(op, 3)
        bias = np.zeros(channels, np.int32) if bias_tensor is None else bias_tensor.data
        if bias is None or (x_tensor.dtype == "int8" and bias.dtype != np.int32):
            raise NotCovered(op, "a bias that is not constant int32 (int64 for 16x8)")
        hwio = np.transpose(weights.data, (1, 2, 3, 0))  # [O, KH, KW, I] → [KH, KW, I, O]
        strides = (int(op.options["StrideH"]), int(op.options["StrideW"]))
        same = int(op.options["Padding"]) == _SAME
        n, height, width, _ = x_tensor.shape
        _, out_h, out_w, _ = out_tensor.shape
        per_axis = [
            deconv.phases(size, hwio.shape[axis], stride, deconv.padding(size, hwio.shape[axis], stride, same))
            for axis, (size, stride) in enumerate(zip((out_h, out_w), strides, strict=True))
        ]
        rows = []
        for phase_y in per_axis[0]:
            row = []
            for phase_x in per_axis[1]:
                (y0, y1, top, bottom), (x0, x1, left, right) = (
                    deconv.window(phase_y, height),
                    deconv.window(phase_x, width),
                )
                if y1 <= y0 or x1 <= x0:
                    raise NotCovered(op, "an output phase that reads no input")
                value = x.value
                if (y0, y1, x0, x1) != (0, height, 0, width):
                    value = self.builder.emit(relax.op.strided_slice(value, [1, 2], [y0, x0], [y1, x1]))
                kernel = hwio[list(phase_y.taps)][:, list(phase_x.taps)]
                if kernel.size == 0:  # a phase no filter tap reaches: the bias alone
                    kernel = np.zeros((1, 1, *hwio.shape[2:]), np.int8)
                shape = (n, phase_y.rows, phase_x.rows, channels)
                geometry = ConvGeometry((1, 1), (1, 1), (top, left, bottom, right))
                if x_tensor.dtype == "int16":
                    shapes = ((n, y1 - y0, x1 - x0, int(hwio.shape[2])), shape)
                    tensors = (x_tensor, weights, out_tensor, bias_tensor)
                    lowered = self._conv16(op, value, shapes, tensors, kernel, geometry, out)
                    row.append(self.builder.emit(relax.op.expand_dims(self.builder.emit(self.call(lowered)), 0)))
                    continue
                lowered = conv_lowering(
                    self.name("transpose_conv2d"),
                    Quantized(value, x.scale, x.zero_point, x.axis),
                    (n, y1 - y0, x1 - x0, hwio.shape[2]),
                    kernel,
                    weights.scale,
                    bias.reshape(-1),
                    out,
                    shape,
                    geometry,
                    self.schedule,
                )
                lowered = dataclasses.replace(lowered, op=op.op)
                row.append(self.builder.emit(relax.op.expand_dims(self.builder.emit(self.call(lowered)), 0)))
            rows.append(self.builder.emit(relax.op.expand_dims(self.builder.emit(relax.op.concat(row, 0)), 0)))
        if strides == (1, 1):  # one phase: [1, 1, N, OH, OW, O]
            return relax.op.reshape(rows[0], out_tensor.shape)
        stacked = self.builder.emit(relax.op.concat(rows, 0))  # [SH, SW, N, MH, MW, O]
        moved = self.builder.emit(relax.op.permute_dims(stacked, [2, 3, 0, 4, 1, 5]))
        full_h, full_w = per_axis[0][0].rows * strides[0], per_axis[1][0].rows * strides[1]
        joined = self.builder.emit(relax.op.reshape(moved, (n, full_h, full_w, channels)))
        if (full_h, full_w) == (out_h, out_w):
            return joined
        return relax.op.strided_slice(joined, [1, 2], [0, 0], [out_h, out_w])

    def _dense(self, op: Operator) -> Any:
        from tvm import relax

        x_tensor, x = self.activation(op, 0, dtypes=_WIDE)
        weights = self.int8(op, self.graph.input(op, 1), "weights")
        if weights.data is None or weights.data.ndim != 2:
            raise NotCovered(op, "weights that are not a constant matrix")
        if np.any(weights.zero_point != 0):
            raise NotCovered(op, "weights with non-zero zero points")
        if int(op.options.get("WeightsFormat", 0)) != 0:
            raise NotCovered(op, "shuffled weights")
        out_tensor = self.integer(op, self.graph.output(op), "output", (x_tensor.dtype,))
        out = output_of(op, out_tensor)
        outputs, inputs = weights.data.shape
        bias_tensor = self.graph.input(op, 2)
        bias = np.zeros(outputs, np.int32) if bias_tensor is None else bias_tensor.data
        if bias is None or (x_tensor.dtype == "int8" and bias.dtype != np.int32):
            raise NotCovered(op, "a bias that is not constant int32 (int64 for 16x8)")
        if x_tensor.dtype == "int16":
            return self._dense16(op, x, (x_tensor, weights, out_tensor, bias_tensor), out)
        size = int(np.prod(x_tensor.shape))
        if size % inputs:
            raise NotCovered(op, f"input of {size} values is not a multiple of {inputs}")
        flat: tuple[int, ...] = (size // inputs, inputs)  # TFLite flattens any input to [-1, inputs]
        if x_tensor.shape[-1:] == (inputs,) and out_tensor.shape == (*x_tensor.shape[:-1], outputs):
            flat = x_tensor.shape  # keep_num_dims: the leading axes are the batches as they are
        elif x_tensor.shape != flat:
            x = Quantized(self.builder.emit(relax.op.reshape(x.value, flat)), x.scale, x.zero_point, x.axis)
        result_shape = (*flat[:-1], outputs)
        lowered = dense_lowering(
            self.name("fully_connected"),
            x,
            flat,
            weights.data,
            weights.scale,
            bias.reshape(-1),
            out,
            result_shape,
            self.schedule,
        )
        result = self.call(lowered)
        if out_tensor.shape != result_shape:  # keep_num_dims, or a batch of one written as [O]
            return relax.op.reshape(self.builder.emit(result), out_tensor.shape)
        return result

    def _dense16(
        self, op: Operator, x: Quantized, tensors: tuple[Tensor, Tensor, Tensor, Tensor | None], out: Output
    ) -> Any:
        """A 16x8 FULLY_CONNECTED: the 16x8 convolution of a 1×1 filter over [1, 1, rows, inputs],
        with TFLM's FULLY_CONNECTED multipliers, rounded as the arithmetic asks: TFLM reduces the
        multiplier to 16 bits, LiteRT's reference kernel keeps all 31 (measured: 1-LSB
        differences on a third of the outputs otherwise)."""
        from tvm import relax

        x_tensor, weights, out_tensor, _ = tensors
        assert weights.data is not None
        outputs, inputs = weights.data.shape
        rows = int(np.prod(x_tensor.shape)) // inputs
        scales = np.broadcast_to(weights.scale, (outputs,))
        pairs = dense_requantization(x_tensor.scalar_scale, scales, out.scale, weights.per_tensor, "tflm")
        flat = self.builder.emit(relax.op.reshape(x.value, (1, 1, rows, inputs)))
        hwio = np.ascontiguousarray(weights.data.T).reshape(1, 1, inputs, outputs)
        geometry = ConvGeometry((1, 1), (1, 1), (0, 0, 0, 0))
        shapes = ((1, 1, rows, inputs), (1, 1, rows, outputs))
        single = self.schedule.fc_requant == "litert"
        lowered = self._conv16(op, flat, shapes, tensors, hwio, geometry, out, pairs, single)
        return relax.op.reshape(self.builder.emit(self.call(lowered)), out_tensor.shape)

    def _batch_matmul(self, op: Operator) -> Any:
        """Both operands may be activations (attention) or constants; per-tensor quantization."""
        operands = [self.int8(op, self.graph.input(op, i), f"input {i}") for i in (0, 1)]
        out = self.int8(op, self.graph.output(op), "output")
        if not all(t.per_tensor for t in operands):
            raise NotCovered(op, "per-channel quantized operands")
        lhs, rhs = operands
        spec = matmul.MatmulSpec(
            name=self.name("batch_matmul"),
            lhs_shape=lhs.shape,
            rhs_shape=rhs.shape,
            out_shape=out.shape,
            adj_x=bool(op.options.get("AdjX", False)),
            adj_y=bool(op.options.get("AdjY", False)),
            lhs_zero=lhs.scalar_zero_point,
            rhs_zero=rhs.scalar_zero_point,
            out_zero=out.scalar_zero_point,
            multiplier=matmul.batch_multiplier(lhs.scalar_scale, rhs.scalar_scale, out.scalar_scale),
            block=self.schedule.dense_block,
        )
        kernel = matmul.batch_matmul_kernel(spec)
        return self.call(Lowered(None, op.op, kernel, [self.operand(lhs), self.operand(rhs)], out.shape))

    def _binary(self, op: Operator) -> Any:
        """ADD, SUB, MUL, DIV, SQUARED_DIFFERENCE with TFLite's broadcasting (ADD, SUB, MUL also 16x8)."""
        wide = _WIDE if op.op in ("ADD", "SUB", "MUL") else ("int8",)
        a_tensor, a = self.activation(op, 0, constant=True, dtypes=wide)
        b_tensor, b = self.activation(op, 1, constant=True, dtypes=wide)
        out_tensor = self.integer(op, self.graph.output(op), "output", wide)
        if not a_tensor.dtype == b_tensor.dtype == out_tensor.dtype:
            raise NotCovered(op, f"mixed types {a_tensor.dtype}, {b_tensor.dtype} → {out_tensor.dtype}")
        if np.broadcast_shapes(a_tensor.shape, b_tensor.shape) != out_tensor.shape:
            raise NotCovered(op, f"shapes {a_tensor.shape}, {b_tensor.shape} → {out_tensor.shape}")
        out = output_of(op, out_tensor)
        shapes = (a_tensor.shape, b_tensor.shape)
        name = self.name(op.op.lower())
        args = [a.value, b.value]
        if op.op == "MUL":
            kernel = elementwise.mul_kernel(name, shapes, out_tensor.shape, a, b, out, out_tensor.dtype)
        elif op.op == "DIV":
            kernel = elementwise.div_kernel(name, shapes, out_tensor.shape, a, b, out)
            args.append(elementwise.divisor_table())
        elif op.op == "SQUARED_DIFFERENCE":
            kernel = elementwise.squared_difference_kernel(name, shapes, out_tensor.shape, a, b, out)
        else:
            subtract, dtype, simd = op.op == "SUB", out_tensor.dtype, self.schedule.simd
            # TFLM's SUB divides the scales in float32, its ADD (and LiteRT's both) in double
            single = subtract and self.schedule.arithmetic == "tflm"
            kernel = elementwise.add_kernel(name, shapes, out_tensor.shape, a, b, out, subtract, dtype, simd, single)
        return self.call(Lowered(None, op.op, kernel, args, out_tensor.shape, dtype=out_tensor.dtype))

    def _relu(self, op: Operator) -> Any:
        _, x = self.activation(op, 0)
        out_tensor = self.int8(op, self.graph.output(op), "output")
        out = clamped_output(out_tensor, _RELUS[op.op])
        real = float(np.float32(x.scalar_scale) / np.float32(out.scale))  # float32, as TFLite's Prepare
        kernel = elementwise.requantize_kernel(self.name(op.op.lower()), out_tensor.shape, x, out, op.op, real)
        return self.call(Lowered(None, op.op, kernel, [x.value], out_tensor.shape))

    def _leaky_relu(self, op: Operator) -> Any:
        x_tensor, x = self.activation(op, 0, dtypes=_WIDE)
        out_tensor = self.integer(op, self.graph.output(op), "output", (x_tensor.dtype,))
        out = output_of(op, out_tensor)
        alpha = float(op.options.get("Alpha", 0.2))
        dtype = out_tensor.dtype
        kernel = elementwise.leaky_relu_kernel(self.name("leaky_relu"), out_tensor.shape, x, out, alpha, dtype)
        return self.call(Lowered(None, op.op, kernel, [x.value], out_tensor.shape, dtype=dtype))

    def _prelu(self, op: Operator) -> Any:
        x_tensor, x = self.activation(op, 0)
        alpha = self.int8(op, self.graph.input(op, 1), "alpha")
        out_tensor = self.int8(op, self.graph.output(op), "output")
        if not alpha.per_tensor:
            raise NotCovered(op, "a per-channel quantized alpha")
        if np.broadcast_shapes(x_tensor.shape, alpha.shape) != out_tensor.shape:
            raise NotCovered(op, f"alpha of shape {alpha.shape} for {x_tensor.shape}")
        a = Quantized(self.operand(alpha), alpha.scale, alpha.zero_point.astype(np.int32), alpha.axis)
        out = clamped_output(out_tensor, (None, None))
        shapes = (x_tensor.shape, alpha.shape)
        kernel = elementwise.prelu_kernel(self.name("prelu"), shapes, out_tensor.shape, x, a, out)
        return self.call(Lowered(None, op.op, kernel, [x.value, a.value], out_tensor.shape))

    def _table(self, op: Operator) -> Any:
        """Elementwise activations with a nonlinear function: a 256-entry table (integer/lut.py);
        16x8 LOGISTIC and TANH interpolate TFLite's int16 table (integer/lut16.py)."""
        wide = _WIDE if op.op in ("LOGISTIC", "TANH") else ("int8",)
        x_tensor, x = self.activation(op, 0, dtypes=wide)
        out_tensor = self.integer(op, self.graph.output(op), "output", (x_tensor.dtype,))
        if x_tensor.dtype == "int16":
            if x_tensor.scalar_zero_point or out_tensor.scalar_zero_point or out_tensor.scalar_scale != 2.0**-15:
                raise NotCovered(op, "int16 quantization other than TFLite's (zero point 0, output scale 2^-15)")
            scaling = lut16.operator_scaling(x_tensor.scalar_scale, tanh=op.op == "TANH")
            kernel = lut16.lut16_kernel(self.name(op.op.lower() + "_16x8"), op.op, out_tensor.shape, scaling)
            table16 = np.array(lut16.SIGMOID_TABLE, np.int32)
            return self.call(Lowered(None, op.op, kernel, [x.value, table16], out_tensor.shape, dtype="int16"))
        scales = (
            x_tensor.scalar_scale,
            x_tensor.scalar_zero_point,
            out_tensor.scalar_scale,
            out_tensor.scalar_zero_point,
        )
        if op.op == "HARD_SWISH":
            table = lut.hard_swish_table(*scales)
            if table is None:
                raise NotCovered(op, "an output scale TFLite refuses (its multiplier would shift left)")
        elif op.op in ("RSQRT", "ABS"):
            table = (lut.rsqrt_table if op.op == "RSQRT" else lut.abs_table)(*scales)
        elif op.op in ("LOGISTIC", "TANH") and self.schedule.arithmetic == "tflm":
            expected = (1 / 256, -128) if op.op == "LOGISTIC" else (1 / 128, 0)
            if (out_tensor.scalar_scale, out_tensor.scalar_zero_point) != (np.float32(expected[0]), expected[1]):
                raise NotCovered(
                    op, f"an output quantization TFLM's {op.op} does not take (scale, zero point {expected})"
                )
            table = lut.tflm_table(op.op, x_tensor.scalar_scale, x_tensor.scalar_zero_point)
        else:
            table = lut.float_table(*scales, lut.TRANSFORMS[op.op])
        kernel = lut.lut_kernel(self.name(op.op.lower()), op.op, out_tensor.shape)
        values = np.array(table, np.int8)
        return self.call(Lowered(None, op.op, kernel, [x.value, values], out_tensor.shape))

    def _pool_geometry(self, op: Operator, in_shape: tuple[int, ...], shape: tuple[int, ...]) -> tuple[Any, ...]:
        opts = op.options
        pool = (int(opts["FilterHeight"]), int(opts["FilterWidth"]))
        strides = (int(opts["StrideH"]), int(opts["StrideW"]))
        if int(opts["Padding"]) == _SAME:
            top, bottom = same_padding(in_shape[1], pool[0], strides[0], 1, shape[1])
            left, right = same_padding(in_shape[2], pool[1], strides[1], 1, shape[2])
        else:
            top = bottom = left = right = 0
        return pool, strides, (top, left, bottom, right)

    def _same_quantization(self, op: Operator, x: Tensor, out_tensor: Tensor) -> Output:
        if (x.scalar_scale, x.scalar_zero_point) != (out_tensor.scalar_scale, out_tensor.scalar_zero_point):
            raise NotCovered(op, "input and output quantized differently")
        return output_of(op, out_tensor)

    def _pool(self, op: Operator) -> Any:
        x_tensor, x = self.activation(op, 0, dtypes=_WIDE)
        out_tensor = self.integer(op, self.graph.output(op), "output", (x_tensor.dtype,))
        out = self._same_quantization(op, x_tensor, out_tensor)
        pool, strides, padding = self._pool_geometry(op, x_tensor.shape, out_tensor.shape)
        act, dtype = (out.act_min, out.act_max), out_tensor.dtype
        name = self.name("average_pool2d" if op.op == "AVERAGE_POOL_2D" else "max_pool2d")
        shapes = (x_tensor.shape, out_tensor.shape)
        kernel = pooling.pool_kernel(op.op, name, *shapes, pool, strides, padding, act, dtype, self.schedule.simd)
        return self.call(Lowered(None, op.op, kernel, [x.value], out_tensor.shape, dtype=dtype))

    def _resize_bilinear(self, op: Operator) -> Any:
        x_tensor, x = self.activation(op, 0)
        out_tensor = self.int8(op, self.graph.output(op), "output")
        self._same_quantization(op, x_tensor, out_tensor)
        align = bool(op.options.get("AlignCorners", False))
        half = bool(op.options.get("HalfPixelCenters", False))
        if align and half:
            raise NotCovered(op, "both align_corners and half_pixel_centers")
        (_, height, width, _), (_, out_h, out_w, _) = x_tensor.shape, out_tensor.shape
        rows = resize.sample_table(out_h, height, align, half)
        cols = resize.sample_table(out_w, width, align, half)
        kernel = resize.bilinear_kernel(self.name("resize_bilinear"), x_tensor.shape, out_tensor.shape)
        return self.call(Lowered(None, op.op, kernel, [x.value, rows, cols], out_tensor.shape))

    def _mean(self, op: Operator) -> Any:
        """MEAN and SUM over any constant axes (keep_dims or not): one sum, requantized with or
        without the division by the count (LiteRT's reference SUM returns -1s for int8: TFLM judges)."""
        x_tensor, x = self.activation(op, 0, dtypes=_WIDE)
        axes_tensor = self.graph.input(op, 1)
        out_tensor = self.integer(op, self.graph.output(op), "output", (x_tensor.dtype,))
        if axes_tensor is None or axes_tensor.data is None:
            raise NotCovered(op, "axes that are not constant")
        axes = tuple(sorted({int(a) % len(x_tensor.shape) for a in axes_tensor.data.reshape(-1)}))
        out = output_of(op, out_tensor)
        dtype, name = out_tensor.dtype, self.name(op.op.lower())
        kernel = pooling.reduce_mean_kernel(
            name, x_tensor.shape, axes, out_tensor.shape, x, out, dtype, compute_sum=op.op == "SUM"
        )
        return self.call(Lowered(None, op.op, kernel, [x.value], out_tensor.shape, dtype=dtype))

    def _log_softmax(self, op: Operator) -> Any:
        _, x = self.activation(op, 0)
        out_tensor = self.int8(op, self.graph.output(op), "output")
        if (out_tensor.scalar_scale, out_tensor.scalar_zero_point) != (16 / 256, 127):
            raise NotCovered(op, "an output quantization other than TFLite's (scale 16/256, zero point 127)")
        kernel = softmax.log_softmax_kernel(self.name("log_softmax"), out_tensor.shape, x)
        return self.call(Lowered(None, op.op, kernel, [x.value], out_tensor.shape))

    def _softmax(self, op: Operator) -> Any:
        x_tensor, x = self.activation(op, 0, dtypes=_WIDE)
        out_tensor = self.integer(op, self.graph.output(op), "output", ("int8", "int16"))
        if float(op.options.get("Beta", 1.0)) != 1.0:
            raise NotCovered(op, f"beta {op.options.get('Beta')}")
        if x_tensor.dtype == "int16":
            if x_tensor.scalar_zero_point or out_tensor.scalar_zero_point or out_tensor.dtype != "int16":
                raise NotCovered(op, "16x8 quantization other than TFLite's (zero points 0, int16 out)")
            if abs(out_tensor.scalar_scale - 2.0**-15) > 2.0**-15 * 1e-3:
                raise NotCovered(op, "a 16x8 output scale other than 2^-15")
            kernel = softmax.softmax16_kernel(self.name("softmax_16x8"), out_tensor.shape, x_tensor.scalar_scale)
            tables = [np.array(t, np.int32) for t in softmax.softmax16_tables()]
            return self.call(Lowered(None, op.op, kernel, [x.value, *tables], out_tensor.shape, dtype="int16"))
        out = Output(float(np.float32(out_tensor.scalar_scale)), out_tensor.scalar_zero_point, *LIMITS["int8"])
        kernel = softmax.softmax_kernel(self.name("softmax"), out_tensor.shape, x, out, out_tensor.dtype)
        if kernel is None:
            raise NotCovered(op, "an output quantization other than TFLite's (scale 1/256 or 1/65536, zero point min)")
        return self.call(Lowered(None, "SOFTMAX", kernel, [x.value], out_tensor.shape, dtype=out_tensor.dtype))

    def _concat(self, op: Operator) -> Any:
        out_tensor = self.int8(op, self.graph.output(op), "output")
        out = output_of(op, out_tensor)
        parts = [self.activation(op, i) for i in range(len(op.inputs))]
        for tensor, _ in parts:
            if (tensor.scalar_scale, tensor.scalar_zero_point) != (
                out_tensor.scalar_scale,
                out_tensor.scalar_zero_point,
            ):
                raise NotCovered(op, "inputs quantized unlike the output (TFLite rescales them)")
        if (out.act_min, out.act_max) != (INT8_MIN, INT8_MAX):
            raise NotCovered(op, "a fused activation")
        axis = int(op.options.get("Axis", 0)) % len(out_tensor.shape)
        shapes = [tensor.shape for tensor, _ in parts]
        kernel = elementwise.concat_kernel(self.name("concatenation"), shapes, out_tensor.shape, axis)
        return self.call(Lowered(None, "CONCATENATION", kernel, [q.value for _, q in parts], out_tensor.shape))

    def _requantize(self, op: Operator) -> Any:
        source = self.graph.input(op, 0)
        if source is not None and source.dtype == "float32":
            return self._interface(op, source, self.graph.output(op), to_float=False)
        x_tensor, x = self.activation(op, 0, dtypes=_REQUANTIZED)
        out_tensor = self.integer(op, self.graph.output(op), "output", _REQUANTIZED)
        if (x_tensor.dtype, out_tensor.dtype) not in _REQUANTIZE_PAIRS:
            raise NotCovered(op, f"{x_tensor.dtype} → {out_tensor.dtype}")
        low, high = LIMITS[out_tensor.dtype]
        out = Output(float(np.float32(out_tensor.scalar_scale)), out_tensor.scalar_zero_point, low, high)
        dtypes = (x_tensor.dtype, out_tensor.dtype)
        kernel = elementwise.requantize_kernel(self.name("requantize"), out_tensor.shape, x, out, dtypes=dtypes)
        return self.call(Lowered(None, "QUANTIZE", kernel, [x.value], out_tensor.shape, dtype=out_tensor.dtype))

    def _dequantize(self, op: Operator) -> Any:
        source = self.graph.input(op, 0)
        out = self.graph.output(op)
        if source is None or out.dtype != "float32":
            raise NotCovered(op, f"an output of type {out.dtype}")
        return self._interface(op, source, source, to_float=True)

    def _interface(self, op: Operator, source: Tensor, quantized: Tensor, to_float: bool) -> Any:
        """float32 ↔ int8 where the model meets the outside (the converter's default interface)."""
        integer = quantized if to_float else self.graph.output(op)
        if integer.dtype != "int8" or not integer.per_tensor or source.index not in self.values:
            raise NotCovered(op, f"{source.dtype} → {self.graph.output(op).dtype} inside the model")
        name = self.name("dequantize" if to_float else "quantize")
        shape = self.graph.output(op).shape
        kernel = elementwise.interface_kernel(
            name, shape, integer.scalar_scale, integer.scalar_zero_point, to_float, "int8"
        )
        self.report.float_ops[op.op] += 1  # float arithmetic, at the model's boundary
        lowered = Lowered(
            None, op.op, kernel, [self.values[source.index]], shape, dtype="float32" if to_float else "int8"
        )
        return self.call(lowered, integer=False)

    def _reshape(self, op: Operator) -> Any:
        from tvm import relax

        x = self.graph.input(op, 0)
        out_tensor = self.graph.output(op)
        if x is None or x.index not in self.values:
            raise NotCovered(op, "a constant input")
        if x.dtype != out_tensor.dtype:
            raise NotCovered(op, f"{x.dtype} → {out_tensor.dtype}")
        return relax.op.reshape(self.values[x.index], out_tensor.shape)


def build_direct(graph: TfliteGraph, schedule: Schedule | None = None) -> tuple[Any, LoweringReport]:
    return DirectBuilder(settle_shapes(graph), schedule).build()
