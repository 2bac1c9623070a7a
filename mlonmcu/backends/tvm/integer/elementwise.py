"""Integer elementwise kernels: ADD, SUB, MUL (broadcasting), requantize (QUANTIZE, RELU…),
LEAKY_RELU, CONCATENATION (TFLite exact)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

import numpy as np

from mlonmcu.backends.tvm.integer.blocks import takes_variant, variant_attrs
from mlonmcu.backends.tvm.integer.fixedpoint import multiply_by_constant, quantize_multiplier
from mlonmcu.backends.tvm.integer.tir import (
    clamp,
    flat_view,
    i32,
    local,
    prim_func,
    root_block,
)

if TYPE_CHECKING:
    from mlonmcu.backends.tvm.integer.graph import Quantized
    from mlonmcu.backends.tvm.integer.patterns import Output

Shape = tuple[int, ...]
Shapes = tuple[Shape, Shape]  # the two inputs of a broadcasting operator
ADD_LEFT_SHIFT = 20  # int8 ADD works on inputs scaled by 2^20
ADD16_LEFT_SHIFT = 15  # and int16 ADD/SUB on inputs scaled by 2^15


def _flat(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape))


def add_params(
    a: Quantized, b: Quantized, out: Output, left_shift: int = ADD_LEFT_SHIFT, single: bool = False
) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int]]:
    """TFLite ADD's three (multiplier, shift) pairs; scales are float32, ratios in double —
    `single`: in float32, as TFLM's SUB computes them."""
    real = np.float32 if single else np.float64
    sa, sb, so = (real(np.float32(s)) for s in (a.scalar_scale, b.scalar_scale, out.scale))
    twice_max = real(2) * max(sa, sb)
    return (
        quantize_multiplier(float(sa / twice_max)),
        quantize_multiplier(float(sb / twice_max)),
        quantize_multiplier(float(twice_max / (real(1 << left_shift) * so))),
    )


def unary_kernel(
    name: str,
    op: str,
    shape: tuple[int, ...],
    scalar: Callable[[Any], Any],
    dtypes: tuple[str, str] = ("int8", "int8"),
) -> Any:
    """out[i] = scalar(int32(x[i])) for every element; `scalar` returns the clamped int32 value.
    `dtypes`: of the input and of the output (QUANTIZE also converts int16 ↔ int8/int32)."""
    from tvm import tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    size = _flat(shape)
    with IRBuilder() as ib, prim_func(name, [op], 0):
        args = [T.arg(arg, T.Buffer(shape, dtype)) for arg, dtype in zip(("x", "out"), dtypes, strict=True)]
        with root_block():
            x, z = (flat_view(arg, shape, dtype) for arg, dtype in zip(args, dtypes, strict=True))
            with T.serial(0, size) as i:
                T.buffer_store(z, tirx.Cast(dtypes[1], scalar(i32(x[i]))), [i])
    return ib.get()


def interface_kernel(
    name: str, shape: tuple[int, ...], scale: float, zero_point: int, to_float: bool, dtype: str
) -> Any:
    """The float interface of an int8 model, as TFLite computes it. QUANTIZE: round(x / s) + zp
    with a float32 division and rounding half away from zero (C's roundf: TVM's round becomes
    nearbyintf, which rounds ties to even); DEQUANTIZE: s·(q − zp) in float32 (LiteRT; TFLite
    Micro multiplies in double: up to 1 ulp apart)."""
    from tvm import tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    size = _flat(shape)
    source, target = (dtype, "float32") if to_float else ("float32", dtype)
    info = np.iinfo(dtype)
    factor = tirx.const(float(np.float32(scale)), "float32")
    with IRBuilder() as ib, prim_func(name, ["DEQUANTIZE" if to_float else "QUANTIZE"], 0):
        x_arg = T.arg("x", T.Buffer(shape, source))
        out_arg = T.arg("out", T.Buffer(shape, target))
        with root_block():
            x, z = flat_view(x_arg, shape, source), flat_view(out_arg, shape, target)
            with T.serial(0, size) as i:
                if to_float:
                    centred = tirx.Cast("float32", i32(x[i]) - zero_point)
                    T.buffer_store(z, centred * factor, [i])
                else:
                    scaled = T.call_pure_extern("float32", "roundf", x[i] / factor)
                    value = clamp(tirx.Cast("int32", scaled) + zero_point, int(info.min), int(info.max))
                    T.buffer_store(z, tirx.Cast(dtype, value), [i])
    return ib.get()


def _strides(shape: tuple[int, ...], rank: int) -> list[int]:
    """Element strides of `shape` aligned right to `rank` axes; 0 where the axis is broadcast."""
    padded = (1,) * (rank - len(shape)) + tuple(shape)
    strides, step = [0] * rank, 1
    for axis in reversed(range(rank)):
        strides[axis] = 0 if padded[axis] == 1 else step
        step *= padded[axis]
    return strides


def binary_kernel(
    name: str,
    op: str,
    shapes: Shapes,
    out_shape: Shape,
    scalar: Callable[..., Any],
    dtype: str = "int8",
    tables: tuple[tuple[tuple[int, ...], str], ...] = (),
) -> Any:
    """out = scalar(int32(a), int32(b), *tables) elementwise, the inputs broadcast as numpy (and
    TFLite) do; inputs and output of `dtype` (int8, or int16 for the 16x8 operators). `tables`:
    (shape, dtype) of constant arguments after a and b (e.g. DIV's reciprocals)."""
    from tvm import tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    def store(buffer: Any, value: Any, indices: list[Any]) -> None:
        T.buffer_store(buffer, tirx.Cast(dtype, value), indices)

    a_shape, b_shape = shapes
    with IRBuilder() as ib, prim_func(name, [op], 0):
        operands = [T.arg(n, T.Buffer(s, dtype)) for n, s in (("a", a_shape), ("b", b_shape))]
        constants = [T.arg(f"table{i}", T.Buffer(s, t)) for i, (s, t) in enumerate(tables)]
        result = T.arg("out", T.Buffer(out_shape, dtype))
        with root_block():
            x, y = (flat_view(arg, s, dtype) for arg, s in zip(operands, (a_shape, b_shape), strict=True))
            z = flat_view(result, out_shape, dtype)
            if a_shape == b_shape == out_shape:
                with T.serial(0, _flat(out_shape)) as i:
                    store(z, scalar(i32(x[i]), i32(y[i]), *constants), [i])
            else:
                rank = len(out_shape)
                with ExitStack() as loops:
                    axes = [loops.enter_context(T.serial(0, d)) for d in out_shape]
                    a_at = sum(v * s for v, s in zip(axes, _strides(a_shape, rank), strict=True) if s)
                    b_at = sum(v * s for v, s in zip(axes, _strides(b_shape, rank), strict=True) if s)
                    out_at = sum(v * s for v, s in zip(axes, _strides(out_shape, rank), strict=True) if s)
                    store(z, scalar(i32(x[a_at]), i32(y[b_at]), *constants), [out_at])
    return ib.get()


def add_kernel(
    name: str,
    shapes: Shapes,
    out_shape: Shape,
    a: Quantized,
    b: Quantized,
    out: Output,
    subtract: bool = False,
    dtype: str = "int8",
    simd: str = "auto",
    single: bool = False,
) -> Any:
    """TFLite ADD / SUB: both inputs scaled by 2^20 (int16: 2^15, TFLite's general int16 path) and
    to the larger scale, then requantized (`single`: add_params'). With int8 inputs of one shape,
    DSP, MVE and RVV variants as `simd` (patterns.Schedule) allows: templates/tvmaot/mlonmcu_{dsp,mve,rvv}.h."""
    left_shift = ADD_LEFT_SHIFT if dtype == "int8" else ADD16_LEFT_SHIFT
    (ma, sa), (mb, sb), (mo, so) = add_params(a, b, out, left_shift, single)

    def scalar(xa: Any, xb: Any) -> Any:
        va = local((xa - a.scalar_zero_point) * (1 << left_shift), "int32")
        vb = local((xb - b.scalar_zero_point) * (1 << left_shift), "int32")
        scaled_a, scaled_b = multiply_by_constant(va, ma, sa), multiply_by_constant(vb, mb, sb)
        total = local(scaled_a - scaled_b if subtract else scaled_a + scaled_b, "int32")
        return clamp(multiply_by_constant(total, mo, so) + out.zero_point, out.act_min, out.act_max)

    op = "SUB" if subtract else "ADD"
    kernel = binary_kernel(name, op, shapes, out_shape, scalar, dtype)
    if dtype != "int8" or not shapes[0] == shapes[1] == out_shape:
        return kernel
    constants = [a.scalar_zero_point, b.scalar_zero_point, left_shift, ma, sa, mb, sb, mo, so]
    constants += [out.zero_point, out.act_min, out.act_max, int(subtract)]
    for kind, attr in variant_attrs().items():
        if kind == "dsp" and min(ma, mb, mo) < 1 << 30:  # SMMLAR needs 2M's bit 31 (mlonmcu_dsp_scale)
            continue
        if takes_variant(simd, kind):
            kernel = kernel.with_attr(attr, _add_variant(name, op, out_shape, f"mlonmcu_{kind}_add", constants))
    return kernel


def _add_variant(name: str, op: str, shape: Shape, extern: str, constants: list[int]) -> Any:
    """A SIMD variant of ADD / SUB (add_kernel's parameters a, b, out): one call into the
    variant's C (templates/tvmaot/mlonmcu_dsp.h, mlonmcu_mve.h, mlonmcu_rvv.h) with the size and
    `constants`."""
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    with IRBuilder() as ib, prim_func(name, [op], 0):
        buffers = [T.arg(arg, T.Buffer(shape, "int8")).data for arg in ("a", "b", "out")]
        T.evaluate(T.call_extern("int32", extern, *buffers, _flat(shape), *constants))
    return ib.get()


def mul_kernel(
    name: str, shapes: Shapes, out_shape: Shape, a: Quantized, b: Quantized, out: Output, dtype: str = "int8"
) -> Any:
    """TFLite MUL: (a − zp_a)·(b − zp_b) requantized by s_a·s_b/s_out (in double); int8 or 16x8."""
    real = float(np.float32(a.scalar_scale)) * float(np.float32(b.scalar_scale)) / float(np.float32(out.scale))
    multiplier, shift = quantize_multiplier(real)

    def scalar(xa: Any, xb: Any) -> Any:
        product = local((xa - a.scalar_zero_point) * (xb - b.scalar_zero_point), "int32")
        return clamp(multiply_by_constant(product, multiplier, shift) + out.zero_point, out.act_min, out.act_max)

    return binary_kernel(name, "MUL", shapes, out_shape, scalar, dtype)


def squared_difference_kernel(
    name: str, shapes: Shapes, out_shape: Shape, a: Quantized, b: Quantized, out: Output
) -> Any:
    """TFLite SQUARED_DIFFERENCE: both inputs ×2^7 and to the larger scale, the difference squared
    in int32, then requantized by (2·max s)²/(2^14·s_out)."""
    s_a, s_b = float(np.float32(a.scalar_scale)), float(np.float32(b.scalar_scale))
    twice_max = 2.0 * max(s_a, s_b)
    (ma, sa), (mb, sb) = quantize_multiplier(s_a / twice_max), quantize_multiplier(s_b / twice_max)
    mo, so = quantize_multiplier(twice_max * twice_max / ((1 << 14) * float(np.float32(out.scale))))

    def scalar(xa: Any, xb: Any) -> Any:
        va = multiply_by_constant(local((xa - a.scalar_zero_point) * (1 << 7), "int32"), ma, sa)
        vb = multiply_by_constant(local((xb - b.scalar_zero_point) * (1 << 7), "int32"), mb, sb)
        diff = local(va - vb, "int32")
        return clamp(multiply_by_constant(local(diff * diff, "int32"), mo, so) + out.zero_point, -128, 127)

    return binary_kernel(name, "SQUARED_DIFFERENCE", shapes, out_shape, scalar)


def prelu_kernel(name: str, shapes: Shapes, out_shape: Shape, x: Quantized, alpha: Quantized, out: Output) -> Any:
    """TFLite PRELU: x − zp for x ≥ zp, else (x − zp)·(α − zp_α), each with its own multiplier
    (s_x/s_out and s_x·s_α/s_out, in double); α broadcast against x."""
    from tvm import tirx

    s_x, s_a, s_out = (float(np.float32(v)) for v in (x.scalar_scale, alpha.scalar_scale, out.scale))
    positive, negative = quantize_multiplier(s_x / s_out), quantize_multiplier(s_x * s_a / s_out)

    def scalar(xv: Any, av: Any) -> Any:
        centred = local(xv - x.scalar_zero_point, "int32")
        scaled = tirx.Select(
            centred >= tirx.const(0, "int32"),
            multiply_by_constant(centred, *positive),
            multiply_by_constant(local(centred * (av - alpha.scalar_zero_point), "int32"), *negative),
        )
        return clamp(scaled + out.zero_point, out.act_min, out.act_max)

    return binary_kernel(name, "PRELU", shapes, out_shape, scalar)


def requantize_kernel(
    name: str,
    shape: tuple[int, ...],
    q: Quantized,
    out: Output,
    op: str = "QUANTIZE",
    real: float | None = None,
    dtypes: tuple[str, str] = ("int8", "int8"),
) -> Any:
    """TFLite QUANTIZE between integer types (and RELU, RELU6, ...: the same with the activation's
    range): (x − zp_in)·(s_in/s_out) in fixed point + zp_out, clamped to `out`'s range.
    `real`: the ratio as the operator computes it."""
    identity = real is None and q.scalar_scale == out.scale
    if real is None:
        real = float(np.float32(q.scalar_scale)) / float(np.float32(out.scale))
    multiplier, shift = quantize_multiplier(real)

    def scalar(x: Any) -> Any:
        centred = x - q.scalar_zero_point
        scaled = centred if identity else multiply_by_constant(local(centred, "int32"), multiplier, shift)
        return clamp(scaled + out.zero_point, out.act_min, out.act_max)

    return unary_kernel(name, op, shape, scalar, dtypes)


def leaky_relu_kernel(
    name: str, shape: tuple[int, ...], q: Quantized, out: Output, alpha: float, dtype: str = "int8"
) -> Any:
    """TFLite LEAKY_RELU: one multiplier for x ≥ zp (s_in/s_out), one for below (s_in·α/s_out),
    both ratios computed in float32 as TFLite's Prepare does."""
    s_in, s_out, a = np.float32(q.scalar_scale), np.float32(out.scale), np.float32(alpha)
    identity = quantize_multiplier(float(s_in / s_out))
    negative = quantize_multiplier(float(s_in * a / s_out))

    def scalar(x: Any) -> Any:
        from tvm import tirx

        centred = local(x - q.scalar_zero_point, "int32")
        scaled = tirx.Select(
            centred >= tirx.const(0, "int32"),
            multiply_by_constant(centred, *identity),
            multiply_by_constant(centred, *negative),
        )
        return clamp(scaled + out.zero_point, out.act_min, out.act_max)

    return unary_kernel(name, "LEAKY_RELU", shape, scalar, (dtype, dtype))


def concat_kernel(name: str, shapes: list[tuple[int, ...]], out_shape: tuple[int, ...], axis: int) -> Any:
    """Concatenation of tensors that share the output's quantization: copies."""
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    outer = _flat(out_shape[:axis])
    inner = [_flat(s[axis:]) for s in shapes]
    total = sum(inner)
    with IRBuilder() as ib, prim_func(name, ["CONCATENATION"], 0):
        args = [T.arg(f"in{k}", T.Buffer(shape, "int8")) for k, shape in enumerate(shapes)]
        out = T.arg("out", T.Buffer(out_shape, "int8"))
        with root_block():
            parts = [flat_view(arg, shape) for arg, shape in zip(args, shapes, strict=True)]
            z = flat_view(out, out_shape)
            with T.serial(0, outer) as o:
                offset = 0
                for part, size in zip(parts, inner, strict=True):
                    with T.serial(0, size) as i:
                        T.buffer_store(z, part[o * size + i], [o * total + offset + i])
                    offset += size
    return ib.get()


def _wide_rounding_divide(x: Any, exponent: Any) -> Any:
    """gemmlowp's RoundingDivideByPOT as TFLite's DIV runs it, also for exponents of 32 and more,
    which small dividends reach: its mask is (1ll << e) − 1 in 64 bits and its int32 shift by e is
    undefined in C, done modulo 32 by x86 and RISC-V alike. The same bits, without the undefined
    behaviour: mask from an int64 shift, the int32 shift by e & 31."""
    from tvm import tirx

    mask = local(
        tirx.Cast(
            "int32", tirx.shift_left(tirx.const(1, "int64"), tirx.Cast("int64", tirx.bitwise_and(exponent, 63))) - 1
        ),
        "int32",
    )
    zero, one = tirx.const(0, "int32"), tirx.const(1, "int32")
    threshold = tirx.shift_right(mask, one) + tirx.Select(x < zero, one, zero)
    shifted = tirx.shift_right(x, tirx.bitwise_and(exponent, 31))
    return shifted + tirx.Select(tirx.bitwise_and(x, mask) > threshold, one, zero)


def divisor_table() -> np.ndarray:
    """TFLite DIV's reciprocal of every int8 divisor magnitude 1…255 (row 0 unused):
    int32 [256, 2] (Q0.31 reciprocal, its shift) — GetReciprocal(d, 31) at build time."""
    from mlonmcu.backends.tvm.integer import scalar

    rows = [(0, 0)] + [scalar.reciprocal(d, 31) for d in range(1, 256)]
    return np.array(rows, np.int32)


def div_kernel(name: str, shapes: Shapes, out_shape: Shape, a: Quantized, b: Quantized, out: Output) -> Any:
    """TFLite's int8 DIV (reference DivElementwise): signs moved to the dividend, the divisor's
    reciprocal from divisor_table, the dividend normalised by its redundant sign bits, two
    fixed-point multiplications. A zero divisor is undefined in TFLite too. The kernel's third
    argument is the table."""
    from tvm import tirx

    from mlonmcu.backends.tvm.integer.fixedpoint import count_leading_zeros, saturating_rounding_doubling_high_mul

    real = float(np.float32(a.scalar_scale) / (np.float32(b.scalar_scale) * np.float32(out.scale)))
    multiplier, shift = quantize_multiplier(real)

    def scalar(xa: Any, xb: Any, table: Any) -> Any:
        zero = tirx.const(0, "int32")
        dividend, divisor = local(xa - a.scalar_zero_point, "int32"), local(xb - b.scalar_zero_point, "int32")
        negative = divisor < zero
        dividend = local(tirx.Select(negative, -dividend, dividend), "int32")
        divisor = local(tirx.Select(negative, -divisor, divisor), "int32")
        inverse, inverse_shift = table[divisor, 0], table[divisor, 1]
        # GCC's __builtin_clrsb: the redundant sign bits (31 for zero)
        flipped = tirx.Select(dividend < zero, tirx.bitwise_not(dividend), dividend)
        headroom = local(
            tirx.Select(
                flipped == zero, tirx.const(31, "int32"), count_leading_zeros(tirx.Cast("uint32", flipped)) - 1
            ),
            "int32",
        )
        quotient = saturating_rounding_doubling_high_mul(tirx.shift_left(dividend, headroom), inverse)
        exponent = local(headroom + inverse_shift - shift, "int32")
        high = saturating_rounding_doubling_high_mul(quotient, tirx.const(multiplier, "int32"))
        return clamp(_wide_rounding_divide(high, exponent) + out.zero_point, out.act_min, out.act_max)

    return binary_kernel(name, "DIV", shapes, out_shape, scalar, tables=(((256, 2), "int32"),))
