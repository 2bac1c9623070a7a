"""Match the importer's QDQ chains and describe their integer replacements.

Every int8 op arrives as dequantize → float op → quantize (→ clip). A match needs constant
scales and zero points and int8 tensors on both ends; the replacement is a TIR kernel plus its
constant operands (weights kept int8, biases int32 with the zero-point terms folded in).
Anything not matched exactly stays QDQ and is reported, never approximated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mlonmcu.backends.tvm.integer import conv, dense, dsp, elementwise, mve, pooling, rvv, softmax
from mlonmcu.backends.tvm.integer.blocks import DSP_CONV_BLOCK, SCALAR_CONV_BLOCK
from mlonmcu.backends.tvm.integer.fixedpoint import (
    common_shift,
    double_multiplier,
    fast_rounding,
    per_channel_multipliers,
    quantize_multiplier,
    requant_table,
)
from mlonmcu.backends.tvm.integer.graph import Graph, Quantized, constant, op_name, tensor_type

INT8_MIN, INT8_MAX = -128, 127
INT16_MIN, INT16_MAX = -(1 << 15), (1 << 15) - 1
# the value range of each integer tensor type the kernels store
LIMITS = {
    "int8": (INT8_MIN, INT8_MAX),
    "uint8": (0, 255),
    "int16": (INT16_MIN, INT16_MAX),
    "int32": (-(1 << 31), (1 << 31) - 1),
}
# TFLite ActivationFunctionType by code, for messages
ACTIVATION_NAMES = {0: "NONE", 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH", 5: "SIGN_BIT"}


@dataclass(frozen=True)
class Schedule:
    """Register blocking of the integer kernels (output channels B × output pixels P)."""

    conv_block: int = 0  # 0: by layout (regular_conv_block)
    conv_pixels: int = 2
    # convolutions over very few input channels (first layers on RGB or audio features):
    # each tap feeds few MACs, so more output channels per pixel pay off more than pixel pairs
    few_channels_block: int = 8
    few_channels_pixels: int = 1
    depthwise_block: int = 0  # 0: by layout (depthwise_blocking)
    depthwise_pixels: int = 0
    dense_block: int = 8
    fc_requant: str = "litert"  # FULLY_CONNECTED rounding: "litert" (reference kernels) or "tflm"
    # where else LiteRT and TFLM differ: int8 LOGISTIC/TANH tables (LiteRT float32, TFLM fixed point)
    # and SUB's scale ratios (LiteRT double, TFLM float32)
    arithmetic: str = "litert"
    # SIMD variants the compiler takes where the core has them (integer/dsp.py, integer/rvv.py,
    # integer/mve.py): auto = those that cost other cores nothing, dsp = Arm DSP convolutions too,
    # rvv = conv weights in blocks as wide as the vector lanes, mve = weights as rows of input
    # channels (dot products), off = none
    simd: str = "auto"

    @property
    def scalar_conv_block(self) -> int:
        """Output channels per register block of the scalar layouts: tvmaot.conv_block, else 4."""
        return self.conv_block or SCALAR_CONV_BLOCK

    def regular_conv_block(self, channels: int) -> int:
        """The same for a CONV_2D of `channels` outputs: in the Arm DSP layout, unless set, 16 or 8
        where it divides the channels (padded lanes in a wide block cost more than the block
        shares), else the scalar block."""
        if self.simd == "dsp" and not self.conv_block:
            wide = [b for b in (DSP_CONV_BLOCK, 8) if channels % b == 0]
            return wide[0] if wide else SCALAR_CONV_BLOCK
        return self.scalar_conv_block

    def depthwise_blocking(self, channels: int) -> tuple[int, int]:
        """Channels × pixels per depthwise register block, unless set: 8 × 1 in the scalar layouts;
        4 × 2 in the Arm DSP layout where the channels come in words (its SMLABB/SMLATT step keeps
        a word of widened weights and each pixel's lanes live; measured on the M4, aww: 8 × 1
        spills in the border loops)."""
        block, pixels = (4, 2) if self.simd == "dsp" and channels % 4 == 0 else (8, 1)
        return self.depthwise_block or block, self.depthwise_pixels or pixels


@dataclass
class Lowered:
    """The integer replacement of one binding."""

    anchor: Any  # the binding whose value becomes the kernel call
    op: str  # TFLite operator name
    kernel: Any  # TIR PrimFunc
    args: list[Any]  # relax vars (activations) and numpy arrays (constants)
    shape: tuple[int, ...]
    replaces: list[Any] = field(default_factory=list)  # other anchors made dead by this one
    dtype: str = "int8"  # of the result
    # the binding is NCHW (TVM's ONNX importer) and the kernel NHWC: the first argument and the
    # result are transposed around the call (lowering.py; back-to-back transposes cancel)
    nchw: bool = False


@dataclass(frozen=True)
class Output:
    scale: float
    zero_point: int
    act_min: int
    act_max: int


def dense_requantization(
    input_scale: float, weight_scales: np.ndarray, output_scale: float, per_tensor: bool, mode: str
) -> np.ndarray:
    """Per-channel requantization table of FULLY_CONNECTED in LiteRT-reference or TFLM style."""
    s_in, s_out = float(np.float32(input_scale)), float(np.float32(output_scale))
    rows: list[tuple[int, ...]] = []
    for s_w in np.asarray(weight_scales, dtype=np.float32):
        if mode == "litert":
            rows.append(double_multiplier(s_in * float(s_w) / s_out))
        elif per_tensor:  # TFLM multiplies the two float32 scales in float32 first
            rows.append(quantize_multiplier(float(np.float32(np.float32(input_scale) * s_w)) / s_out))
        else:
            rows.append(quantize_multiplier(s_in * float(s_w) / s_out))
    return np.array(rows, dtype=np.int32)


NHWC_OF_NCHW = (0, 2, 3, 1)  # the axes of an NCHW shape in NHWC order (and permute_dims' axes)
NCHW_OF_NHWC = (0, 3, 1, 2)


def _pair(values: Any) -> tuple[int, int]:
    first, second = (int(v) for v in values)
    return first, second


def quad(values: Any) -> tuple[int, int, int, int]:
    a, b, c, d = (int(v) for v in values)
    return a, b, c, d


@dataclass(frozen=True)
class ConvGeometry:
    strides: tuple[int, int]
    dilation: tuple[int, int]
    padding: tuple[int, int, int, int]  # top, left, bottom, right


def conv_lowering(
    name: str,
    x: Quantized,
    in_shape: tuple[int, int, int, int],
    hwio: np.ndarray,
    scales: np.ndarray,
    bias: np.ndarray,
    out: Output,
    shape: tuple[int, int, int, int],
    geometry: ConvGeometry,
    schedule: Schedule,
) -> Lowered:
    """CONV_2D (weights [KH, KW, I, O]) or DEPTHWISE_CONV_2D with multiplier 1 (weights [KH, KW, C])
    as a register-blocked kernel and its packed constant operands."""
    depthwise = hwio.ndim == 3
    channels = shape[3]
    scales = np.asarray(scales, dtype=np.float32).reshape(-1)
    if scales.size == 1:
        scales = np.repeat(scales, channels)
    table = requant_table(per_channel_multipliers(x.scalar_scale, scales, out.scale), out.zero_point)
    if depthwise:
        block, pixels = schedule.depthwise_blocking(channels)
    elif in_shape[3] <= conv.SMALL_CHANNELS:
        block, pixels = schedule.few_channels_block, schedule.few_channels_pixels
    else:
        block, pixels = schedule.regular_conv_block(channels), schedule.conv_pixels
    if schedule.simd == "rvv" and not depthwise:  # the vector lanes are a block's output channels
        block, pixels = min(channels, rvv.CONV_BLOCK), 1
    elif schedule.simd == "mve" and not depthwise:  # dot products along each channel's weights
        block, pixels = 1, 1
    elif schedule.simd == "mve":  # four channels per vector, a block's taps together
        block = 4
    spec = conv.ConvSpec(
        name=name,
        input_shape=in_shape,
        output_shape=shape,
        kernel=(int(hwio.shape[0]), int(hwio.shape[1])),
        strides=geometry.strides,
        dilation=geometry.dilation,
        padding=geometry.padding,
        depthwise=depthwise,
        input_offset=-x.scalar_zero_point,
        output_offset=out.zero_point,
        act_min=out.act_min,
        act_max=out.act_max,
        block=block,
        pixels=pixels,
        requant=table,
        fours=schedule.simd == "dsp",
        blocked=depthwise and schedule.simd == "mve",
    )
    block = spec.block
    if depthwise:
        weights_arg = conv.pack_depthwise_weights(hwio, block, spec.blocked)
        folded = conv.interior_bias(bias, hwio, spec.input_offset, channel_axis=2)
    else:
        weights_arg = conv.pack_conv_weights(hwio, block, spec.quad, spec.row_quad)
        folded = conv.interior_bias(bias, hwio, spec.input_offset, channel_axis=3)
    args = [
        x.value,
        weights_arg,
        conv.pack_channels(bias, block),
        conv.pack_channels(folded, block),
        table.values if table.uniform else conv.pack_channels(table.values, block),
    ]
    op = "DEPTHWISE_CONV_2D" if depthwise else "CONV_2D"
    kernel = conv.conv_kernel(spec)
    if spec.quad:
        kernel = kernel.with_attr(dsp.DSP_VARIANT, conv.conv_kernel(spec, dsp.conv_dsp_step))
    elif spec.row_quad:
        kernel = kernel.with_attr(dsp.DSP_VARIANT, conv.conv_kernel(spec, dsp.conv_dsp_row_step))
    elif spec.depthwise_quad:
        kernel = kernel.with_attr(dsp.DSP_VARIANT, conv.conv_kernel(spec, dsp.depthwise_dsp_step))
    elif schedule.simd == "dsp":  # channels the DSP steps do not take: their requantization only
        kernel = kernel.with_attr(dsp.DSP_VARIANT, conv.conv_kernel(spec, dsp=True))
    elif schedule.simd == "mve":
        kernel = kernel.with_attr(mve.MVE_VARIANT, mve.conv_mve_kernel(spec))
    elif schedule.simd != "off":
        kernel = kernel.with_attr(rvv.RVV_VARIANT, rvv.conv_rvv_kernel(spec))
    return Lowered(None, op, kernel, args, shape)


# FULLY_CONNECTED outputs per block where a SIMD layout fixes it (else Schedule.dense_block)
DENSE_BLOCKS = {"rvv": rvv.DENSE_BLOCK, "mve": mve.DENSE_BLOCK}


def dense_lowering(
    name: str,
    x: Quantized,
    in_shape: tuple[int, ...],
    weights_oi: np.ndarray,
    scales: np.ndarray,
    bias: np.ndarray,
    out: Output,
    shape: tuple[int, ...],
    schedule: Schedule,
) -> Lowered:
    """FULLY_CONNECTED over the last axis (weights [O, I]; leading axes are batches)."""
    outputs = weights_oi.shape[0]
    scales = np.asarray(scales, dtype=np.float32).reshape(-1)
    per_tensor = scales.size == 1
    if per_tensor:
        scales = np.repeat(scales, outputs)
    quant = dense_requantization(x.scalar_scale, scales, out.scale, per_tensor, schedule.fc_requant)
    uniform = bool(np.all(quant == quant[:1]))
    spec = dense.DenseSpec(
        name=name,
        input_shape=tuple(in_shape),
        output_shape=tuple(shape),
        input_offset=-x.scalar_zero_point,
        output_offset=out.zero_point,
        act_min=out.act_min,
        act_max=out.act_max,
        block=min(outputs, DENSE_BLOCKS[schedule.simd]) if schedule.simd in DENSE_BLOCKS else schedule.dense_block,
        requant=schedule.fc_requant,
        uniform_quant=uniform,
        fast_rounding=schedule.fc_requant == "litert" and fast_rounding(quant),
        shift=common_shift(quant) if schedule.fc_requant == "litert" else None,
        fours=schedule.simd != "rvv",  # the vector lanes are outputs: [O/B][I][B]
        rows=schedule.simd == "mve",
    )
    if spec.rows:
        bias = conv.interior_bias(bias, weights_oi, spec.input_offset, channel_axis=0)
    args = [
        x.value,
        dense.pack_weights(spec, weights_oi),
        conv.pack_channels(bias, spec.block),
        quant[:1] if uniform else conv.pack_channels(quant, spec.block),
    ]
    kernel = dense.dense_kernel(spec)
    if spec.rows:
        kernel = kernel.with_attr(mve.MVE_VARIANT, mve.dense_mve_kernel(spec))
    elif schedule.simd != "off" and dense.quad_layout(spec):
        kernel = kernel.with_attr(dsp.DSP_VARIANT, dsp.dense_dsp_kernel(spec))
    elif schedule.simd != "off":
        kernel = kernel.with_attr(rvv.RVV_VARIANT, rvv.dense_rvv_kernel(spec))
    return Lowered(None, "FULLY_CONNECTED", kernel, args, shape)


class Matcher:
    def __init__(self, graph: Graph, schedule: Schedule | None = None):
        self.graph = graph
        self.schedule = schedule or Schedule()
        self.count = 0

    def name(self, op: str) -> str:
        self.count += 1
        return f"int8_{op}_{self.count}"

    # -- entry -------------------------------------------------------------------------------

    def match(self, binding: Any) -> Lowered | None:
        value = binding.value
        name = op_name(value)
        if name == "relax.quantize" and str(value.attrs.out_dtype) == "int8":
            return self._quantize(binding)
        if name == "relax.astype" and tensor_type(binding.var)[1] == "int8":
            return self._average_pool(binding)
        if name == "relax.nn.max_pool2d" and tensor_type(binding.var)[1] == "int8":
            return self._max_pool(binding)
        return None

    def _quantize(self, binding: Any) -> Lowered | None:
        g = self.graph
        call = binding.value
        scale, zero = constant(call.args[1]), constant(call.args[2])
        if scale is None or zero is None or scale.size != 1 or zero.size != 1:
            return None
        anchor, (lo, hi) = binding.var, (INT8_MIN, INT8_MAX)
        user = g.single_user(binding.var)
        clip = g.defs.get(user) if user is not None else None
        if clip is not None and op_name(clip) == "relax.clip":
            lo_c, hi_c = constant(clip.args[1]), constant(clip.args[2])
            if lo_c is not None and hi_c is not None:
                anchor, lo, hi = user, max(lo, int(np.ceil(lo_c))), min(hi, int(np.floor(hi_c)))
        source = call.args[0]
        producer = g.producer(source)
        if op_name(producer) == "relax.nn.relu":
            lo = max(lo, int(zero))
            source = producer.args[0]
            producer = g.producer(source)
        out = Output(float(np.float32(scale)), int(zero), lo, hi)
        shape = tensor_type(binding.var)[0]
        matchers = (self._conv_or_dense, self._add, self._mean, self._softmax, self._concat, self._qdq_pool)
        for matcher in (*matchers, self._requantize):
            lowered = matcher(source, producer, out, shape)
            if lowered is not None:
                lowered.anchor = anchor
                if anchor is not binding.var:
                    lowered.replaces.append(binding.var)
                return lowered
        return None

    # -- conv2d / depthwise / fully connected ----------------------------------------------------

    def _bias(self, expr: Any, channels: int) -> tuple[Any, np.ndarray | None]:
        """Split `core + dequantize(bias)` (the bias reshaped to [1, C, 1, 1] in an NCHW graph);
        returns (core, int32 bias or None)."""
        add = self.graph.call(expr, "relax.add")
        if add is None:
            return expr, np.zeros(channels, np.int32)
        for core, other in ((add.args[0], add.args[1]), (add.args[1], add.args[0])):
            reshape = self.graph.call(other, "relax.reshape")
            bias = self.graph.dequantized(reshape.args[0] if reshape is not None else other)
            if bias is not None:
                data = constant(bias.value)
                if data is not None and data.dtype == np.int32 and data.size == channels:
                    return core, data.reshape(-1)
        return expr, None

    def _conv_or_dense(self, source: Any, producer: Any, out: Output, shape: tuple[int, ...]) -> Lowered | None:
        core, bias = self._bias(source, shape[-1])
        if bias is None and len(shape) == 4:  # an NCHW convolution's channels
            core, bias = self._bias(source, shape[1])
        if bias is None:
            return None
        if self.graph.call(core, "relax.nn.conv2d") is not None:
            return self._conv(self.graph.call(core, "relax.nn.conv2d"), bias, out, shape)
        if self.graph.call(core, "relax.matmul") is not None:
            return self._dense(self.graph.call(core, "relax.matmul"), bias, out, shape)
        return None

    def _weights(self, expr: Any) -> tuple[np.ndarray, np.ndarray] | None:
        """int8 weights and per-output-channel scales of a dequantized constant (through reshape)."""
        g = self.graph
        outer = g.call(expr, "relax.permute_dims")  # TVM's ONNX importer: permute_dims(dequantize(W))
        if outer is not None and g.dequantized(outer.args[0]) is not None:
            found = self._weights(outer.args[0])
            if found is None:
                return None
            return np.transpose(found[0], [int(a) for a in outer.attrs.axes]), found[1]
        reshape = g.call(expr, "relax.reshape")
        target_shape = None
        if reshape is not None:
            target_shape = tensor_type(expr)[0] if expr in g.defs else None
            expr = reshape.args[0]
        weights = g.dequantized(expr)
        if weights is None or np.any(weights.zero_point != 0):
            return None
        data = constant(weights.value)
        transpose = g.call(weights.value, "relax.permute_dims") if data is None else None
        if transpose is not None:
            data = constant(transpose.args[0])
            if data is not None:
                data = np.transpose(data, [int(a) for a in transpose.attrs.axes])
        if data is None or data.dtype != np.int8:
            return None
        if reshape is not None:
            if target_shape is None:
                return None
            data = data.reshape(target_shape)
        return data, weights.scale.reshape(-1)

    def _conv(self, call: Any, bias: np.ndarray, out: Output, shape: tuple[int, ...]) -> Lowered | None:
        attrs = call.attrs
        layouts = (str(attrs.data_layout), str(attrs.out_layout), str(attrs.kernel_layout))
        nchw = layouts == ("NCHW", "NCHW", "OIHW")
        if layouts[:2] != ("NHWC", "NHWC") and not nchw:
            return None
        x = self.graph.dequantized(call.args[0])
        weights = self._weights(call.args[1])
        if x is None or weights is None or not x.per_tensor or tensor_type(x.value)[1] != "int8":
            return None
        data, scales = weights
        in_shape = tensor_type(x.value)[0]
        groups = int(attrs.groups)
        layout = layouts[2]
        if nchw:  # the kernel computes NHWC: the weights as the TFLite importer lays them out
            in_shape, shape = tuple(in_shape[i] for i in NHWC_OF_NCHW), tuple(shape[i] for i in NHWC_OF_NCHW)
            data = np.transpose(data, (2, 3, 1, 0))  # OIHW → HWIO (depthwise: HW1C → its HWOI below)
            layout = "HWIO" if groups == 1 else "HWOI"
            if groups != 1:
                data = np.transpose(data, (0, 1, 3, 2))
        if groups == 1 and layout == "HWIO":
            depthwise, hwio = False, data
        elif groups == in_shape[3] and layout == "HWOI" and data.shape[3] == 1 and data.shape[2] == shape[3]:
            depthwise, hwio = True, data[:, :, :, 0]  # [KH, KW, C]
        else:
            return None
        padding = tuple(int(p) for p in attrs.padding)
        geometry = ConvGeometry(
            _pair(attrs.strides), _pair(attrs.dilation), (padding[0], padding[1], padding[2], padding[3])
        )
        name = self.name("depthwise_conv2d" if depthwise else "conv2d")
        lowered = conv_lowering(name, x, quad(in_shape), hwio, scales, bias, out, quad(shape), geometry, self.schedule)
        lowered.nchw = nchw
        return lowered

    def _dense(self, call: Any, bias: np.ndarray, out: Output, shape: tuple[int, ...]) -> Lowered | None:
        x = self.graph.dequantized(call.args[0])
        weights = self._weights(call.args[1])
        if x is None or weights is None or not x.per_tensor or tensor_type(x.value)[1] != "int8":
            return None
        data, scales = weights  # [I, O] after the importer's permute_dims
        in_shape = tensor_type(x.value)[0]
        if data.ndim != 2 or data.shape[0] != in_shape[-1] or shape[:-1] != in_shape[:-1]:
            return None
        name = self.name("fully_connected")
        return dense_lowering(
            name, x, tuple(in_shape), np.ascontiguousarray(data.T), scales, bias, out, shape, self.schedule
        )

    # -- elementwise and reductions --------------------------------------------------------------

    def _activation(self, expr: Any) -> Quantized | None:
        q = self.graph.dequantized(expr)
        if q is None or not q.per_tensor or constant(q.value) is not None:
            return None
        return q if tensor_type(q.value)[1] == "int8" else None

    def _add(self, source: Any, producer: Any, out: Output, shape: tuple[int, ...]) -> Lowered | None:
        if op_name(producer) != "relax.add":
            return None
        a, b = self._activation(producer.args[0]), self._activation(producer.args[1])
        if a is None or b is None or tensor_type(a.value)[0] != shape or tensor_type(b.value)[0] != shape:
            return None
        kernel = elementwise.add_kernel(self.name("add"), (shape, shape), shape, a, b, out, simd=self.schedule.simd)
        return Lowered(None, "ADD", kernel, [a.value, b.value], shape)

    def _requantize(self, source: Any, producer: Any, out: Output, shape: tuple[int, ...]) -> Lowered | None:
        q = self._activation(source)
        if q is None or tensor_type(q.value)[0] != shape:
            return None
        kernel = elementwise.requantize_kernel(self.name("requantize"), shape, q, out)
        return Lowered(None, "QUANTIZE", kernel, [q.value], shape)

    def _mean(self, source: Any, producer: Any, out: Output, shape: tuple[int, ...]) -> Lowered | None:
        if op_name(producer) != "relax.mean":
            return None
        q = self._activation(producer.args[0])
        axes = tuple(int(a) for a in producer.attrs.axis)
        if q is None:
            return None
        in_shape = tensor_type(q.value)[0]
        if len(in_shape) != 4 or sorted(a % 4 for a in axes) != [1, 2]:
            return None
        kernel = pooling.mean_kernel(self.name("mean"), in_shape, shape, q, out)
        return None if kernel is None else Lowered(None, "MEAN", kernel, [q.value], shape)

    def _softmax(self, source: Any, producer: Any, out: Output, shape: tuple[int, ...]) -> Lowered | None:
        if op_name(producer) != "relax.nn.softmax":
            return None
        q = self._activation(producer.args[0])
        if q is None or int(producer.attrs.axis) not in (-1, len(shape) - 1):
            return None
        kernel = softmax.softmax_kernel(self.name("softmax"), shape, q, out)
        return None if kernel is None else Lowered(None, "SOFTMAX", kernel, [q.value], shape)

    def _concat(self, source: Any, producer: Any, out: Output, shape: tuple[int, ...]) -> Lowered | None:
        import tvm

        if op_name(producer) != "relax.concat":
            return None
        fields = producer.args[0]
        if not isinstance(fields, tvm.relax.Tuple):
            return None
        found = [self._activation(f) for f in fields.fields]
        parts = [p for p in found if p is not None]
        if len(parts) != len(found):
            return None
        same = all(p.scalar_scale == out.scale and p.scalar_zero_point == out.zero_point for p in parts)
        if not same or (out.act_min, out.act_max) != (INT8_MIN, INT8_MAX):
            return None  # TFLite rescales in float here: left QDQ rather than approximated
        axis = int(producer.attrs.axis) % len(shape)
        shapes = [tensor_type(p.value)[0] for p in parts]
        kernel = elementwise.concat_kernel(self.name("concatenation"), shapes, shape, axis)
        return Lowered(None, "CONCATENATION", kernel, [p.value for p in parts], shape)

    def _qdq_pool(self, source: Any, producer: Any, out: Output, shape: tuple[int, ...]) -> Lowered | None:
        """AveragePool/MaxPool between a DequantizeLinear and a QuantizeLinear of the same
        quantization (TVM's ONNX importer; NCHW), as TFLite's int8 pools compute them."""
        name = op_name(producer)
        if name not in ("relax.nn.avg_pool2d", "relax.nn.max_pool2d"):
            return None
        attrs = producer.attrs
        q = self._activation(producer.args[0])
        layout = str(attrs.layout)
        if q is None or layout not in ("NHWC", "NCHW") or bool(attrs.ceil_mode) or len(shape) != 4:
            return None
        if any(int(d) != 1 for d in attrs.dilation) or (
            name == "relax.nn.avg_pool2d" and bool(attrs.count_include_pad)
        ):
            return None  # TFLite's average leaves the padding out
        if (q.scalar_scale, q.scalar_zero_point) != (out.scale, out.zero_point):
            return None
        in_shape, nchw = tensor_type(q.value)[0], layout == "NCHW"
        if nchw:
            in_shape, shape = tuple(in_shape[i] for i in NHWC_OF_NCHW), tuple(shape[i] for i in NHWC_OF_NCHW)
        op = "AVERAGE_POOL_2D" if name == "relax.nn.avg_pool2d" else "MAX_POOL_2D"
        geometry = (_pair(attrs.pool_size), _pair(attrs.strides), tuple(int(p) for p in attrs.padding))
        kernel = pooling.pool_kernel(
            op,
            self.name("average_pool2d" if op == "AVERAGE_POOL_2D" else "max_pool2d"),
            in_shape,
            shape,
            *geometry,
            act=(out.act_min, out.act_max),
            simd=self.schedule.simd,
        )
        return Lowered(None, op, kernel, [q.value], shape, nchw=nchw)

    # -- average pool on the importer's int32 path -----------------------------------------------

    def _average_pool(self, binding: Any) -> Lowered | None:
        g = self.graph
        pool = g.call(binding.value.args[0], "relax.nn.avg_pool2d")
        if pool is None or str(pool.attrs.layout) != "NHWC":
            return None
        widen = g.call(pool.args[0], "relax.astype")
        if widen is None or tensor_type(widen.args[0])[1] != "int8":
            return None
        return self._pool(binding, "AVERAGE_POOL_2D", widen.args[0], pool.attrs)

    def _max_pool(self, binding: Any) -> Lowered | None:
        """The importer's int8 max pool (no quantization chain: the values are compared as they
        are) as the integer kernel with its SIMD variants."""
        attrs = binding.value.attrs
        if str(attrs.layout) != "NHWC" or any(int(d) != 1 for d in attrs.dilation) or bool(attrs.ceil_mode):
            return None
        return self._pool(binding, "MAX_POOL_2D", binding.value.args[0], attrs)

    def _pool(self, binding: Any, op: str, x: Any, attrs: Any) -> Lowered:
        """The pool `op` of int8 `x` with the Relax pool's `attrs` (pool size, strides, padding)."""
        shape = tensor_type(binding.var)[0]
        name = self.name("average_pool2d" if op == "AVERAGE_POOL_2D" else "max_pool2d")
        geometry = (_pair(attrs.pool_size), _pair(attrs.strides), tuple(int(p) for p in attrs.padding))
        kernel = pooling.pool_kernel(op, name, tensor_type(x)[0], shape, *geometry, simd=self.schedule.simd)
        return Lowered(binding.var, op, kernel, [x], shape)
