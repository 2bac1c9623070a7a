"""Integer conv2d and depthwise conv2d kernels, written for scalar MCUs.

What a 32-bit core with ~30 registers does well decides the loop nest:
- register blocking: B output channels × P output pixels accumulate at once, so each loaded
  input value feeds B multiply-accumulates and each loaded weight feeds P;
- weights are packed at compile time ([Cout/B][KH][KW][Cin][B]) so the inner loop walks them
  contiguously, and the input-channel loop is unrolled;
- padding never reaches the inner loop: output pixels whose window lies inside the input (the
  interior, known at compile time) run without bounds and with the input zero point folded into
  the bias; only border pixels clamp their window and subtract the zero point per load;
- requantization is TFLite's fixed point, from a per-channel table (fixedpoint.requantize).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mlonmcu.backends.tvm.integer.fixedpoint import RequantTable, clamp_int8, requantize
from mlonmcu.backends.tvm.integer.tir import accumulators, flat_view, i32, prim_func, root_block, store_int8

SMALL_CHANNELS = 4  # up to this many input channels the channel loop is unrolled completely


@dataclass(frozen=True)
class ConvSpec:
    """An NHWC int8 convolution after the QDQ chain was matched."""

    name: str
    input_shape: tuple[int, int, int, int]  # N, H, W, C
    output_shape: tuple[int, int, int, int]
    kernel: tuple[int, int]  # KH, KW
    strides: tuple[int, int]
    dilation: tuple[int, int]
    padding: tuple[int, int, int, int]  # top, left, bottom, right
    depthwise: bool
    input_offset: int  # −zero point of the input
    output_offset: int
    act_min: int
    act_max: int
    block: int  # B: output channels per register block
    pixels: int = 2  # P: output pixels per register block (interior only)
    unroll: int = 2  # input-channel loop unrolling (regular convolution)
    requant: RequantTable | None = None  # per-channel requantization (its layout, not its values)
    fours: bool = False  # weights in fours of input channels where possible (see `quad`)
    blocked: bool = False  # depthwise weights [C/B][KH][KW][B]: a block's taps together (integer/mve.py)

    @property
    def table(self) -> RequantTable:
        if self.requant is None:
            raise ValueError(f"{self.name}: the kernel needs its requantization table")
        return self.requant

    @property
    def macs(self) -> int:
        n, oh, ow, co = self.output_shape
        kh, kw = self.kernel
        per_output = kh * kw * (1 if self.depthwise else self.input_shape[3])
        return n * oh * ow * co * per_output

    @property
    def channel_blocks(self) -> int:
        return -(-self.output_shape[3] // self.block)

    @property
    def channels_per_tap(self) -> int:
        """Weights per kernel tap in one packed channel block: Cin · B."""
        return self.input_shape[3] * self.block

    @property
    def weight_shape(self) -> tuple[int, ...]:
        """The packed weights' shape (pack_conv_weights, pack_depthwise_weights)."""
        kh, kw = self.kernel
        cin = self.input_shape[3]
        if self.depthwise and self.blocked:
            return (self.channel_blocks, kh, kw, self.block)
        if self.depthwise:
            return (kh, kw, self.channel_blocks * self.block)
        if self.quad:
            return (self.channel_blocks, kh, kw, cin // 4, self.block, 4)
        if self.row_quad:
            return (self.channel_blocks, kh, kw * cin // 4, self.block, 4)
        return (self.channel_blocks, kh, kw, cin, self.block)

    @property
    def quad(self) -> bool:
        """Input channels in fours (weights [Cout/B][KH][KW][Cin/4][B][4]): what the DSP variant
        (integer/dsp.py) needs, one 32-bit word per four channels. The scalar kernel reads it too,
        unrolled by four — 3–6 % more instructions than its own layout on rv32 (MLPerf Tiny), so
        it is asked for (`fours`), not the default."""
        channels = self.input_shape[3]
        return self.fours and not self.depthwise and channels > SMALL_CHANNELS and channels % 4 == 0

    @property
    def depthwise_quad(self) -> bool:
        """A depthwise convolution whose channels and blocks come in whole words of four (the
        DSP variant's SMLABB/SMLATT step, integer/dsp.py); no padded lane reads past a pixel."""
        channels = self.input_shape[3]
        return self.fours and self.depthwise and self.block % 4 == 0 and channels % self.block == 0

    @property
    def row_quad(self) -> bool:
        """Few input channels whose kernel rows are a multiple of 4 bytes (KW·Cin, dilation_w 1;
        e.g. one audio channel under a 4-wide kernel): the weights in fours along each kernel row
        ([Cout/B][KH][KW·Cin/4][B][4], the quad layout of a kernel KH × 1 over KW·Cin channels),
        so that the DSP variant takes a row's bytes as words of the input (any alignment)."""
        channels = self.input_shape[3]
        row = self.kernel[1] * channels
        few = channels <= SMALL_CHANNELS
        return self.fours and not self.depthwise and few and self.dilation[1] == 1 and row % 4 == 0


def pack_conv_weights(weights_hwio: np.ndarray, block: int, quad: bool = False, row_quad: bool = False) -> np.ndarray:
    """HWIO → [Cout/B][KH][KW][Cin][B] (quad: [Cout/B][KH][KW][Cin/4][B][4]; row_quad:
    [Cout/B][KH][KW·Cin/4][B][4]), output channels padded with zeros to a multiple of B."""
    if row_quad:  # a kernel KH × 1 over KW·Cin channels, in fours
        kh, kw, ci, co = weights_hwio.shape
        packed = pack_conv_weights(weights_hwio.reshape(kh, 1, kw * ci, co), block, quad=True)
        return packed.reshape(-1, kh, kw * ci // 4, block, 4)
    kh, kw, ci, co = weights_hwio.shape
    blocks = -(-co // block)
    padded = np.zeros((kh, kw, ci, blocks * block), dtype=np.int8)
    padded[..., :co] = weights_hwio
    if quad:
        grouped = padded.reshape(kh, kw, ci // 4, 4, blocks, block)
        return np.ascontiguousarray(grouped.transpose(4, 0, 1, 2, 5, 3))
    return np.ascontiguousarray(padded.reshape(kh, kw, ci, blocks, block).transpose(3, 0, 1, 2, 4))


def pack_depthwise_weights(weights_hwc: np.ndarray, block: int, blocked: bool = False) -> np.ndarray:
    """[KH][KW][C] with channels padded to a multiple of B (blocked: [C/B][KH][KW][B])."""
    kh, kw, c = weights_hwc.shape
    padded = np.zeros((kh, kw, -(-c // block) * block), dtype=np.int8)
    padded[..., :c] = weights_hwc
    if blocked:
        return np.ascontiguousarray(padded.reshape(kh, kw, -1, block).transpose(2, 0, 1, 3))
    return padded


def pack_channels(values: np.ndarray, block: int, fill: int = 0) -> np.ndarray:
    count = -(-values.shape[0] // block) * block
    out = np.full((count, *values.shape[1:]), fill, dtype=values.dtype)
    out[: values.shape[0]] = values
    return out


def interior_bias(bias: np.ndarray, weights: np.ndarray, input_offset: int, channel_axis: int) -> np.ndarray:
    """bias + input_offset · Σ weights per output channel: the zero point folded for full windows."""
    axes = tuple(a for a in range(weights.ndim) if a != channel_axis % weights.ndim)
    sums = weights.astype(np.int64).sum(axis=axes)
    return (bias.astype(np.int64) + input_offset * sums).astype(np.int32)


def interior_range(out_size: int, in_size: int, kernel: int, stride: int, dilation: int, pad: int) -> tuple[int, int]:
    """Output positions whose whole window lies inside the input: [lo, hi)."""
    lo = -(-pad // stride)
    hi = (in_size - 1 + pad - (kernel - 1) * dilation) // stride + 1
    lo, hi = min(max(lo, 0), out_size), min(max(hi, 0), out_size)
    return lo, max(lo, hi)


def _window(origin: Any, size: int, kernel: int, dilation: int) -> tuple[Any, Any]:
    """Kernel taps [lo, hi) that fall inside the input, for a border pixel."""
    from tvm import tirx

    zero = tirx.const(0, "int32")
    lo = tirx.Max(zero, tirx.floordiv(-origin + (dilation - 1), dilation))
    hi = tirx.Min(tirx.const(kernel, "int32"), tirx.floordiv(size - origin + (dilation - 1), dilation))
    return lo, tirx.Max(lo, hi)


class _ConvBuilder:
    """Emits the loop nest of one convolution inside an IRBuilder prim_func.

    Inputs and weights are addressed through 1-D views as base + constant offsets, so that the C
    compiler turns every load of the unrolled inner code into one load with an immediate offset.
    """

    def __init__(
        self,
        spec: ConvSpec,
        x: Any,
        w: Any,
        bias: Any,
        bias_interior: Any,
        quant: Any,
        y: Any,
        acc: Any,
        dsp_step: Any = None,
        dsp: bool = False,
    ):
        self.spec, self.x, self.w, self.y, self.acc = spec, x, w, y, acc
        self.dsp_step = dsp_step  # integer/dsp.py: four input channels of one tap (or row bytes) per call
        self.dsp = dsp or dsp_step is not None  # an Arm DSP variant: SMMLAR requantization, SSAT clamp
        if dsp_step is not None and spec.row_quad:  # a border pixel's padded window
            from tvm.script.ir_builder import tirx as T

            self.column = T.sblock_alloc_buffer((spec.kernel[0] * spec.kernel[1] * spec.input_shape[3],), "int8")
        self.bias, self.bias_interior, self.quant = bias, bias_interior, quant
        _, self.height, self.width, self.channels = spec.input_shape
        kh, kw = spec.kernel
        # strides (in elements) of the flat input and of the packed weights
        self.row = self.width * self.channels
        if not spec.depthwise:
            self.tap_w = spec.channels_per_tap
        else:  # blocked: a block's taps together
            self.tap_w = spec.block if spec.blocked else spec.channel_blocks * spec.block
        self.block_w = kh * kw * self.tap_w

    def output_block(self, n: Any, oh: Any, ows: list[Any], interior: bool) -> None:
        """All channel blocks of 1..P output pixels in one row."""
        from tvm.script.ir_builder import tirx as T

        spec, block = self.spec, self.spec.block
        sh, sw = spec.strides
        dh, dw = spec.dilation
        ih0 = T.bind(oh * sh - spec.padding[0])
        iw0 = T.bind(ows[0] * sw - spec.padding[1])
        # input offsets of the pixels of the block, relative to the first one
        pixel_offsets = [p * sw * self.channels for p in range(len(ows))]
        if interior:
            rows: tuple[Any, Any] = (0, spec.kernel[0])
            cols: tuple[Any, Any] = (0, spec.kernel[1])
        else:  # a single border pixel: clamp its window
            rows = tuple(T.bind(v) for v in _window(ih0, self.height, spec.kernel[0], dh))
            cols = tuple(T.bind(v) for v in _window(iw0, self.width, spec.kernel[1], dw))
        origin = T.bind(((n * self.height + ih0) * self.width + iw0) * self.channels)
        rows_in_words = spec.row_quad and self.dsp_step is not None
        padded = rows_in_words and not interior  # a border pixel's window, zero-point padded
        if padded:
            self._fill_column(origin, ih0, iw0)
        bias = self.bias_interior if interior or padded else self.bias
        offset = 0 if interior else spec.input_offset
        with T.serial(0, spec.channel_blocks) as cb:
            for p in range(len(ows)):
                for j in range(block):
                    T.buffer_store(self.acc, bias[cb * block + j], [p * block + j])
            x_base = T.bind(origin + cb * block) if spec.depthwise else origin
            w_base = T.bind(cb * (block if spec.depthwise and not spec.blocked else self.block_w))

            def tap(kh: Any, kw: Any) -> None:
                x_tap = x_base + kh * (dh * self.row) + kw * (dw * self.channels)
                w_tap = w_base + (kh * spec.kernel[1] + kw) * self.tap_w
                if not (isinstance(kh, int) and isinstance(kw, int)):
                    x_tap, w_tap = T.bind(x_tap), T.bind(w_tap)
                if spec.depthwise and self.dsp_step is not None:
                    self.dsp_step(self, x_tap, w_tap, pixel_offsets, offset)
                elif spec.depthwise:
                    self._depthwise_tap(x_tap, w_tap, cb, pixel_offsets, offset)
                elif spec.row_quad:
                    w_row = w_base + kh * (spec.kernel[1] * self.tap_w)
                    self._row_quad_channels(x_tap, w_row, kw * self.channels, pixel_offsets, offset)
                else:
                    self._channel_loop(x_tap, w_tap, pixel_offsets, offset)

            few_channels = self.channels <= SMALL_CHANNELS
            if rows_in_words:  # a row's bytes four at a time, of the input or of the padded window
                span = spec.kernel[1] * self.channels
                source, start, stride = (self.column, 0, span) if padded else (self.x, x_base, dh * self.row)
                with T.serial(0, spec.kernel[0]) as kh:
                    x_row = T.bind(start + kh * stride)
                    w_row = T.bind(w_base + kh * (spec.kernel[1] * self.tap_w))
                    for quad in range(span // 4):
                        self.dsp_step(self, source, x_row + 4 * quad, w_row + quad * 4 * block, pixel_offsets)
            elif interior and (spec.depthwise or few_channels):  # kernel rows unrolled: few MACs per tap
                with T.serial(*rows) as kh:
                    for kw in range(spec.kernel[1]):
                        tap(kh, kw)
            else:
                with T.serial(*rows) as kh, T.serial(*cols) as kw:
                    tap(kh, kw)
            for p, ow in enumerate(ows):
                for j in range(block):
                    self._store(n, oh, ow, cb * block + j, self.acc[p * block + j])

    def _mac(self, values: list[Any], weight: Any, j: int) -> None:
        from tvm.script.ir_builder import tirx as T

        block = self.spec.block
        for p, value in enumerate(values):
            index = p * block + j
            T.buffer_store(self.acc, self.acc[index] + value * weight, [index])

    def _load(self, index: Any, offset: int) -> Any:
        from tvm.script.ir_builder import tirx as T

        value = i32(self.x[index])
        return T.bind(value + offset if offset else value)

    def _channel_loop(self, x_tap: Any, w_tap: Any, pixel_offsets: list[int], offset: int) -> None:
        from tvm.script.ir_builder import tirx as T

        spec, block = self.spec, self.spec.block

        def step(c: Any, weight_at: Any) -> None:
            values = [self._load(x_tap + c + po, offset) for po in pixel_offsets]
            for j in range(block):
                self._mac(values, T.bind(i32(self.w[weight_at(j)])), j)

        if spec.quad:  # weights [Cin/4][B][4] per tap
            if self.dsp_step is not None:
                with T.serial(0, self.channels // 4) as c4:
                    self.dsp_step(self, x_tap, w_tap, c4, pixel_offsets, offset)
                return
            with T.serial(0, self.channels // 4) as c4:
                for t in range(4):
                    step(c4 * 4 + t, lambda j, c4=c4, t=t: w_tap + (c4 * block + j) * 4 + t)
            return
        if self.channels <= SMALL_CHANNELS:
            for c in range(self.channels):
                step(c, lambda j, c=c: w_tap + c * block + j)
            return
        unroll = spec.unroll if self.channels % spec.unroll == 0 else 1
        with T.serial(0, self.channels // unroll) as cu:
            for u in range(unroll):
                c = cu * unroll + u
                step(c, lambda j, c=c: w_tap + c * block + j)

    def _fill_column(self, origin: Any, ih0: Any, iw0: Any) -> None:
        """The window of one border pixel as rows of KW·Cin bytes (ConvSpec.row_quad), taps outside
        the input the input's zero point: (zero point + offset)·w adds nothing."""
        from tvm import tirx
        from tvm.script.ir_builder import tirx as T

        spec = self.spec
        span = spec.kernel[1] * self.channels
        zero_point = tirx.const(-spec.input_offset, "int8")
        with T.serial(0, spec.kernel[0]) as kh:
            ih = ih0 + kh * spec.dilation[0]
            row_inside = T.bind(tirx.And(ih >= 0, ih < self.height))
            for at in range(span):
                iw = iw0 + at // self.channels
                inside = tirx.And(row_inside, tirx.And(iw >= 0, iw < self.width))
                value = tirx.if_then_else(inside, self.x[origin + kh * (spec.dilation[0] * self.row) + at], zero_point)
                T.buffer_store(self.column, value, [kh * span + at])

    def _row_quad_channels(self, x_tap: Any, w_row: Any, position: Any, pixel_offsets: list[int], offset: int) -> None:
        """The channels of one tap in the row-quad layout (ConvSpec.row_quad): channel c is byte
        `position` + c of its kernel row, in the row's fours of B output channels."""
        from tvm import tirx
        from tvm.script.ir_builder import tirx as T

        block = self.spec.block
        for c in range(self.channels):
            at = position + c
            quad, byte = (at // 4, at % 4) if isinstance(at, int) else (tirx.floordiv(at, 4), tirx.floormod(at, 4))
            values = [self._load(x_tap + c + po, offset) for po in pixel_offsets]
            for j in range(block):
                self._mac(values, T.bind(i32(self.w[w_row + quad * (4 * block) + j * 4 + byte])), j)

    def _depthwise_tap(self, x_tap: Any, w_tap: Any, cb: Any, pixel_offsets: list[int], offset: int) -> None:
        from tvm import tirx
        from tvm.script.ir_builder import tirx as T

        spec = self.spec
        for j in range(spec.block):
            lane = j
            if self.channels % spec.block:  # padded lanes read a valid input
                lane = tirx.Min(cb * spec.block + j, self.channels - 1) - cb * spec.block
            weight = T.bind(i32(self.w[w_tap + j]))
            self._mac([self._load(x_tap + lane + po, offset) for po in pixel_offsets], weight, j)

    def _store(self, n: Any, oh: Any, ow: Any, channel: Any, acc: Any) -> None:
        from tvm.script.ir_builder import tirx as T

        spec = self.spec
        requantized = requantize(acc, self.quant, channel, spec.table, smmlar=self.dsp)
        clamped = clamp_int8(requantized, spec.act_min, spec.act_max, ssat=self.dsp)
        if spec.output_shape[3] % spec.block:
            with T.If(channel < spec.output_shape[3]), T.Then():
                store_int8(self.y, clamped, [n, oh, ow, channel])
        else:
            store_int8(self.y, clamped, [n, oh, ow, channel])

    def rows(self) -> None:
        """Border pixels one at a time; interior pixels P at a time."""
        from tvm import tirx
        from tvm.script.ir_builder import tirx as T

        spec = self.spec
        n_, _, _, _ = spec.input_shape
        _, oh_, ow_, _ = spec.output_shape
        oh_lo, oh_hi = interior_range(
            oh_, spec.input_shape[1], spec.kernel[0], spec.strides[0], spec.dilation[0], spec.padding[0]
        )
        ow_lo, ow_hi = interior_range(
            ow_, spec.input_shape[2], spec.kernel[1], spec.strides[1], spec.dilation[1], spec.padding[1]
        )
        pairs, odd = divmod(ow_hi - ow_lo, spec.pixels)
        with T.serial(0, n_) as n, T.serial(0, oh_) as oh:
            inside = T.bind(tirx.And(oh >= oh_lo, oh < oh_hi))
            left_end = T.bind(tirx.Select(inside, tirx.const(ow_lo, "int32"), tirx.const(ow_, "int32")))
            with T.serial(0, left_end) as ow:
                self.output_block(n, oh, [ow], interior=False)
            with T.If(inside), T.Then():
                if pairs:
                    with T.serial(0, pairs) as pair:
                        first = ow_lo + pair * spec.pixels
                        self.output_block(n, oh, [first + p for p in range(spec.pixels)], interior=True)
                for k in range(odd):
                    self.output_block(n, oh, [tirx.const(ow_hi - odd + k, "int32")], interior=True)
                if ow_hi < ow_:
                    with T.serial(ow_hi, ow_) as ow:
                        self.output_block(n, oh, [ow], interior=False)


def conv_kernel(spec: ConvSpec, dsp_step: Any = None, dsp: bool = False) -> Any:
    """Regular or depthwise (multiplier 1) convolution; arguments: x, packed weights, bias,
    interior bias, requantization table, y. `dsp_step`: the DSP variant's channel step; `dsp`: an
    Arm DSP variant (implied by dsp_step) — the scalar MACs with the DSP requantization."""
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    channels = spec.channel_blocks * spec.block
    weight_shape = spec.weight_shape
    quant_rows, quant_width = spec.table.values.shape
    op = "DEPTHWISE_CONV_2D" if spec.depthwise else "CONV_2D"
    with IRBuilder() as ib, prim_func(spec.name, [op], spec.macs):
        x = T.arg("x", T.Buffer(spec.input_shape, "int8"))
        w = T.arg("w", T.Buffer(weight_shape, "int8"))
        bias = T.arg("bias", T.Buffer((channels,), "int32"))
        bias_interior = T.arg("bias_interior", T.Buffer((channels,), "int32"))
        quant = T.arg("quant", T.Buffer((channels if not spec.table.uniform else quant_rows, quant_width), "int32"))
        y = T.arg("y", T.Buffer(spec.output_shape, "int8"))
        with root_block():
            acc = accumulators(spec.block * spec.pixels)
            x_flat, w_flat = flat_view(x, spec.input_shape), flat_view(w, weight_shape)
            _ConvBuilder(spec, x_flat, w_flat, bias, bias_interior, quant, y, acc, dsp_step, dsp).rows()
    return ib.get()


def conv_call_kernel(spec: ConvSpec, extern: str, passed: tuple[str, ...], tail: list[int]) -> Any:
    """A SIMD variant of conv_kernel whose body is one call into hand-written C (integer/rvv.py,
    integer/mve.py): the scalar kernel's parameters, the `passed` ones handed to `extern`, then
    every shape and quantization fact as a constant, then `tail` (what the variant reads more)."""
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    table = spec.table
    channels = spec.channel_blocks * spec.block
    n, height, width, cin = spec.input_shape
    _, out_height, out_width, outputs = spec.output_shape
    quant_rows, quant_width = table.values.shape
    op = "DEPTHWISE_CONV_2D" if spec.depthwise else "CONV_2D"
    with IRBuilder() as ib, prim_func(spec.name, [op], spec.macs):
        args = {
            "x": T.arg("x", T.Buffer(spec.input_shape, "int8")),
            "w": T.arg("w", T.Buffer(spec.weight_shape, "int8")),
            "bias": T.arg("bias", T.Buffer((channels,), "int32")),
            "bias_interior": T.arg("bias_interior", T.Buffer((channels,), "int32")),
            "quant": T.arg("quant", T.Buffer((channels if not table.uniform else quant_rows, quant_width), "int32")),
            "y": T.arg("y", T.Buffer(spec.output_shape, "int8")),
        }
        constants = [
            int(spec.depthwise), n, height, width, cin, out_height, out_width, outputs,
            *spec.kernel, *spec.strides, *spec.dilation, spec.padding[0], spec.padding[1], spec.block,
            spec.input_offset, spec.act_min, spec.act_max, quant_width, int(table.uniform), int(table.left_shift),
        ]  # fmt: skip
        T.evaluate(T.call_extern("int32", extern, *(args[name].data for name in passed), *constants, *tail))
    return ib.get()
