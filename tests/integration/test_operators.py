"""Every operator of the direct int8 path against LiteRT's reference kernels, bit for bit.

Each case is a one-operator model written with tests/tflite_builder.py (no TensorFlow), run by
tvmaot with `tvmaot.importer=direct` on the host (the kernels are plain integer C: the same
results as on any target) over 10 random full-range int8 samples.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from tflite_builder import (
    Op,
    Tensor,
    build,
    const,
    conv16_model,
    conv_options,
    depthwise16_model,
    q,
    transpose_conv_model,
    write,
)

pytestmark = pytest.mark.integration

RNG = np.random.default_rng(7)
X = (1, 6, 5, 8)  # the activation most cases take
DIVISORS = np.array([-120, -64, -9, 4, 6, 17, 90, 127], np.int8)  # none equals the zero point 5
POOL = {"Padding": 0, "StrideH": 2, "StrideW": 2, "FilterHeight": 2, "FilterWidth": 2, "FusedActivationFunction": 0}


def unary(op: str, options: str = "", out_scale: float = 0.05, out_zp: int = 3, version: int = 1, **opts):
    """x (scale 0.04, zp -7) → op → out (its own quantization)."""
    tensors = [q(X, 0.04, -7), q(X, out_scale, out_zp)]
    return build(tensors, [Op(op, [0], [1], opts, options, version)], [0], [1])


def requantize(dtype: str, scale: float, zero: int, out_dtype: str, out_scale: float, out_zero: int):
    """QUANTIZE between integer types (e.g. an int16 model input into the int8 model)."""
    tensors = [q(X, scale, zero, dtype), q(X, out_scale, out_zero, out_dtype)]
    return build(tensors, [Op("QUANTIZE", [0], [1])], [0], [1])


def moving(op: str, out: tuple[int, ...], constants: tuple = (), options: str = "", dtype_out: str = "int8", **opts):
    """Operators that keep the quantization (x and out both scale 0.04, zp -7)."""
    output = q(out, 0.04, -7) if dtype_out == "int8" else const(np.zeros(out, np.int32))
    if dtype_out != "int8":
        output.data = None
    tensors = [q(X, 0.04, -7), *[const(np.asarray(c, np.int32)) for c in constants], output]
    n = len(tensors) - 1
    return build(tensors, [Op(op, list(range(n)), [n], opts, options)], [0], [n])


def moving_requant(op: str, out: tuple[int, ...], axes: list[int], out_scale: float = 0.03, **opts):
    """Reductions that requantize: x (0.04, -7) and constant axes → out (its own quantization)."""
    tensors = [q(X, 0.04, -7), const(np.asarray(axes, np.int32)), q(out, out_scale, 4)]
    return build(tensors, [Op(op, [0, 1], [2], opts, "ReducerOptions", version=2)], [0], [2])


def binary(op: str, a: tuple[int, ...], b: tuple[int, ...], options: str, act: int = 0):
    out = tuple(np.broadcast_shapes(a, b))
    tensors = [q(a, 0.03, 5), q(b, 0.05, -20), q(out, 0.07, -3)]
    return build(tensors, [Op(op, [0, 1], [2], {"FusedActivationFunction": act}, options)], [0, 1], [2])


def dense16_model(per_channel: bool, bias: bool):
    """16x8 FULLY_CONNECTED of x int16 [2, 32] (full range), int8 weights [10, 32]."""
    rng = np.random.default_rng(17)
    w = rng.integers(-127, 128, (10, 32)).astype(np.int8)
    scales = list(rng.uniform(0.002, 0.004, 10)) if per_channel else 0.003
    x_scale = 7.6e-06
    tensors = [q((2, 32), x_scale, 0, "int16"), const(w, scales, [0] * 10 if per_channel else 0)]
    if bias:
        bias_scales = [x_scale * s for s in scales] if per_channel else x_scale * 0.003
        tensors.append(const(rng.integers(-(2**20), 2**20, 10).astype(np.int64), bias_scales))
    tensors.append(q((2, 10), 1.15e-05, 0, "int16"))
    n = len(tensors) - 1
    fc = Op("FULLY_CONNECTED", list(range(n)), [n], {"FusedActivationFunction": 0}, "FullyConnectedOptions", 7)
    return build(tensors, [fc], [0], [n])


def conv(dilation: int, stride: int, padding: int):
    w = RNG.integers(-127, 128, (6, 3, 3, 8)).astype(np.int8)
    bias = RNG.integers(-3000, 3000, 6).astype(np.int32)
    scales = list(RNG.uniform(0.002, 0.02, 6))
    h = (X[1] + stride - 1) // stride if padding == 0 else (X[1] - 2 * dilation - 1) // stride + 1
    w_out = (X[2] + stride - 1) // stride if padding == 0 else (X[2] - 2 * dilation - 1) // stride + 1
    tensors = [
        q(X, 0.04, -7),
        const(w, scales, [0] * 6),
        const(bias, [0.04 * s for s in scales], [0] * 6),
        q((1, h, w_out, 6), 0.1, 2),
    ]
    opts = conv_options(stride, padding, dilation, act=1)
    return build(tensors, [Op("CONV_2D", [0, 1, 2], [3], opts, "Conv2DOptions")], [0], [3])


def binary16(op: str, b: tuple[int, ...], options: str):
    tensors = [q(X, 0.0003, 0, "int16"), q(b, 0.0005, 0, "int16"), q(X, 0.0007, 0, "int16")]
    return build(tensors, [Op(op, [0, 1], [2], {"FusedActivationFunction": 0}, options, 3)], [0, 1], [2])


def depthwise_multiplier(channels_in: int = 1, multiplier: int = 4, padding: int = 0):
    """Depth multiplier > 1 with per-channel scales on axis 3: one input channel (micro_speech's
    first layer) or several (output channel c·M + m reads input channel c)."""
    shape = (1, 9, 7, channels_in)
    channels = channels_in * multiplier
    w = RNG.integers(-127, 128, (1, 3, 3, channels)).astype(np.int8)
    scales = list(RNG.uniform(0.002, 0.02, channels))
    out_hw = (5, 4) if padding == 0 else (4, 3)
    tensors = [
        q(shape, 0.04, -7),
        const(w, scales, [0] * channels, axis=3),
        const(RNG.integers(-500, 500, channels).astype(np.int32), [0.04 * s for s in scales], [0] * channels),
        q((1, *out_hw, channels), 0.08, -1),
    ]
    opts = {"Padding": padding, "StrideH": 2, "StrideW": 2, "DepthMultiplier": multiplier, "FusedActivationFunction": 3}
    return build(tensors, [Op("DEPTHWISE_CONV_2D", [0, 1, 2], [3], opts, "DepthwiseConv2DOptions")], [0], [3])


def dense_4d():
    """FULLY_CONNECTED over a 4-D input: TFLite flattens it to [-1, inputs]."""
    w = RNG.integers(-127, 128, (5, 40)).astype(np.int8)
    tensors = [
        q(X, 0.04, -7),
        const(w, 0.01, 0),
        const(RNG.integers(-900, 900, 5).astype(np.int32), 0.0004, 0),
        q((6, 5), 0.2, 0),
    ]
    return build(
        tensors, [Op("FULLY_CONNECTED", [0, 1, 2], [3], {"KeepNumDims": False}, "FullyConnectedOptions")], [0], [3]
    )


CASES: dict[str, Callable[[], bytes]] = {
    "transpose_conv_stride2_same": lambda: transpose_conv_model(3, 2, 0, (8, 6)),
    "transpose_conv_stride2_valid": lambda: transpose_conv_model(2, 2, 1, (8, 6), act=1),
    "transpose_conv_stride1_same": lambda: transpose_conv_model(3, 1, 0, (4, 3)),
    "transpose_conv_stride3_kernel2": lambda: transpose_conv_model(2, 3, 1, (11, 8)),  # phases no tap reaches
    "transpose_conv_odd_output": lambda: transpose_conv_model(3, 2, 0, (7, 5)),
    "conv_16x8_int64_bias": lambda: conv16_model("int64"),
    "conv_16x8_int64_bias_strided_valid": lambda: conv16_model("int64", stride=2, padding=1),
    # LiteRT rounds the 16x8 FULLY_CONNECTED once with the full multiplier (TFLM: 16 bits)
    "dense_16x8_int64_bias": lambda: dense16_model(per_channel=False, bias=True),
    "dense_16x8_per_channel_no_bias": lambda: dense16_model(per_channel=True, bias=False),
    "add_16x8": lambda: binary16("ADD", X, "AddOptions"),
    "sub_16x8_broadcast": lambda: binary16("SUB", (1, 1, 1, 8), "SubOptions"),
    "mean_16x8": lambda: build(
        [q(X, 0.0004, 0, "int16"), const(np.array([1, 2], np.int32)), q((1, 1, 1, 8), 0.0002, 0, "int16")],
        [Op("MEAN", [0, 1], [2], {"KeepDims": True}, "ReducerOptions", 2)],
        [0],
        [2],
    ),
    "logistic_16x8": lambda: build(
        [q(X, 2.0**-12, 0, "int16"), q(X, 2.0**-15, 0, "int16")], [Op("LOGISTIC", [0], [1])], [0], [1]
    ),
    "tanh_16x8_scaled": lambda: build(
        [q(X, 0.0003, 0, "int16"), q(X, 2.0**-15, 0, "int16")], [Op("TANH", [0], [1])], [0], [1]
    ),
    "tanh_16x8_pot": lambda: build(
        [q(X, 2.0**-11, 0, "int16"), q(X, 2.0**-15, 0, "int16")], [Op("TANH", [0], [1])], [0], [1]
    ),
    "logistic_16x8_scaled": lambda: build(
        [q(X, 0.0007, 0, "int16"), q(X, 2.0**-15, 0, "int16")], [Op("LOGISTIC", [0], [1])], [0], [1]
    ),
    "average_pool_16x8": lambda: build(
        [q(X, 0.0004, 0, "int16"), q((1, 3, 3, 8), 0.0004, 0, "int16")],
        [Op("AVERAGE_POOL_2D", [0], [1], POOL, "Pool2DOptions")],
        [0],
        [1],
    ),
    "max_pool_16x8": lambda: build(
        [q(X, 0.0004, 0, "int16"), q((1, 3, 3, 8), 0.0004, 0, "int16")],
        [Op("MAX_POOL_2D", [0], [1], POOL, "Pool2DOptions")],
        [0],
        [1],
    ),
    "depthwise_16x8": depthwise16_model,
    "depthwise_16x8_multiplier": lambda: depthwise16_model(multiplier_one=False),
    "softmax_16x8": lambda: build(
        [q((2, 10), 0.0004, 0, "int16"), q((2, 10), 2.0**-15, 0, "int16")],
        [Op("SOFTMAX", [0], [1], {"Beta": 1.0}, "SoftmaxOptions", 3)],
        [0],
        [1],
    ),
    "leaky_relu_16x8": lambda: build(
        [q(X, 0.0004, 0, "int16"), q(X, 0.0003, 0, "int16")],
        [Op("LEAKY_RELU", [0], [1], {"Alpha": 0.2}, "LeakyReluOptions", 2)],
        [0],
        [1],
    ),
    "div_broadcast_constant": lambda: build(  # a constant divisor without zeros (TFLite divides by it)
        [q(X, 0.04, -7), const(DIVISORS, 0.02, 5), q(X, 0.3, 2)],
        [Op("DIV", [0, 1], [2], {"FusedActivationFunction": 0}, "DivOptions", 2)],
        [0],
        [2],
    ),
    "rsqrt": lambda: build([q(X, 0.01, -128), q(X, 0.05, -100)], [Op("RSQRT", [0], [1], version=2)], [0], [1]),
    "abs": lambda: build([q(X, 0.04, -7), q(X, 0.03, -128)], [Op("ABS", [0], [1], version=2)], [0], [1]),
    "abs_same_scale": lambda: build([q(X, 0.04, -7), q(X, 0.04, -128)], [Op("ABS", [0], [1], version=2)], [0], [1]),
    "log_softmax": lambda: build([q(X, 0.04, -7), q(X, 16 / 256, 127)], [Op("LOG_SOFTMAX", [0], [1])], [0], [1]),
    "log_softmax_wide_rows": lambda: build(
        [q((2, 30), 0.3, 5), q((2, 30), 16 / 256, 127)], [Op("LOG_SOFTMAX", [0], [1])], [0], [1]
    ),
    "log_softmax_narrow_scale": lambda: build(
        [q((3, 4), 0.005, -100), q((3, 4), 16 / 256, 127)], [Op("LOG_SOFTMAX", [0], [1])], [0], [1]
    ),
    "add_broadcast_channels": lambda: binary("ADD", X, (1, 1, 1, 8), "AddOptions", act=1),
    "add_broadcast_rows": lambda: binary("ADD", X, (1, 6, 1, 1), "AddOptions"),
    "sub": lambda: binary("SUB", X, X, "SubOptions"),
    "sub_broadcast": lambda: binary("SUB", (1, 1, 5, 8), (1, 6, 1, 8), "SubOptions", act=3),
    "mul": lambda: binary("MUL", X, X, "MulOptions"),
    "squared_difference": lambda: binary("SQUARED_DIFFERENCE", X, (1, 1, 5, 8), ""),
    "mul_broadcast_vector": lambda: binary("MUL", X, (8,), "MulOptions", act=1),
    "relu": lambda: unary("RELU"),
    "relu6": lambda: unary("RELU6", out_scale=0.025, out_zp=-128),
    "relu_n1_to_1": lambda: unary("RELU_N1_TO_1", out_scale=0.008, out_zp=0),
    "relu_0_to_1": lambda: unary("RELU_0_TO_1", out_scale=0.004, out_zp=-128),
    "requantize": lambda: unary("QUANTIZE", out_scale=0.013, out_zp=20),
    "softmax": lambda: unary("SOFTMAX", "SoftmaxOptions", out_scale=1 / 256, out_zp=-128, Beta=1.0),
    "softmax_int16_output": lambda: build(
        [q(X, 0.04, -7), q(X, 1 / 65536, -32768, "int16")],
        [Op("SOFTMAX", [0], [1], {"Beta": 1.0}, "SoftmaxOptions")],
        [0],
        [1],
    ),
    "requantize_int16_to_int8": lambda: requantize("int16", 0.0004, 0, "int8", 0.04, -7),
    "requantize_int8_to_int16": lambda: requantize("int8", 0.04, -7, "int16", 0.0003, 0),
    "requantize_uint8_to_int8": lambda: requantize("uint8", 0.04, 121, "int8", 0.04, -7),
    "requantize_int8_to_uint8": lambda: requantize("int8", 0.04, -7, "uint8", 0.05, 130),
    "requantize_int16_to_int32": lambda: requantize("int16", 0.0004, 0, "int32", 0.00003, 0),
    "leaky_relu": lambda: unary("LEAKY_RELU", options="LeakyReluOptions", Alpha=0.1),
    "leaky_relu_wide": lambda: unary("LEAKY_RELU", options="LeakyReluOptions", out_scale=0.09, out_zp=-30, Alpha=0.3),
    "hard_swish": lambda: unary("HARD_SWISH", out_scale=0.03, out_zp=-40),
    "hard_swish_narrow": lambda: unary("HARD_SWISH", out_scale=0.011, out_zp=-100),
    "logistic": lambda: unary("LOGISTIC", out_scale=1 / 256, out_zp=-128),
    "tanh": lambda: unary("TANH", out_scale=1 / 128, out_zp=0),
    "exp": lambda: unary("EXP", out_scale=0.9, out_zp=-128, version=2),
    "resize_bilinear": lambda: moving("RESIZE_BILINEAR", (1, 12, 10, 8), ([12, 10],), "ResizeBilinearOptions"),
    "resize_bilinear_half_pixel": lambda: moving(
        "RESIZE_BILINEAR", (1, 9, 7, 8), ([9, 7],), "ResizeBilinearOptions", HalfPixelCenters=True
    ),
    "resize_bilinear_align_corners": lambda: moving(
        "RESIZE_BILINEAR", (1, 11, 4, 8), ([11, 4],), "ResizeBilinearOptions", AlignCorners=True
    ),
    "transpose": lambda: moving("TRANSPOSE", (1, 8, 6, 5), ([0, 3, 1, 2],)),
    "pad": lambda: moving("PAD", (1, 9, 8, 8), ([[0, 0], [1, 2], [2, 1], [0, 0]],)),
    "mirror_pad_reflect": lambda: moving(
        "MIRROR_PAD", (1, 9, 7, 8), ([[0, 0], [1, 2], [1, 1], [0, 0]],), "MirrorPadOptions", Mode=0
    ),
    "mirror_pad_symmetric": lambda: moving(
        "MIRROR_PAD", (1, 9, 7, 8), ([[0, 0], [1, 2], [1, 1], [0, 0]],), "MirrorPadOptions", Mode=1
    ),
    "slice": lambda: moving(
        "SLICE",
        (1, 2, 4, 3),
        (
            [0, 1, 1, 2],
            [1, 2, -1, 3],
        ),
    ),
    "strided_slice": lambda: moving(
        "STRIDED_SLICE", (1, 3, 5, 3), [[0, 1, 9, 1], [1, 6, 5, 8], [1, 2, 1, 3]], "StridedSliceOptions", BeginMask=4
    ),
    "strided_slice_shrink": lambda: moving(
        "STRIDED_SLICE", (6, 8), [[0, 0, -2, 0], [1, 6, -1, 8], [1, 1, 1, 1]], "StridedSliceOptions", ShrinkAxisMask=5
    ),
    "maximum": lambda: binary("MAXIMUM", X, (1, 1, 5, 8), ""),
    "minimum": lambda: binary("MINIMUM", X, X, ""),
    "mean_channels": lambda: moving_requant("MEAN", (1, 6, 5), [3], KeepDims=False),
    "mean_rows_keep": lambda: moving_requant("MEAN", (1, 1, 5, 8), [1], KeepDims=True),
    "reduce_max": lambda: moving("REDUCE_MAX", (1, 1, 1, 8), ([1, 2],), "ReducerOptions", KeepDims=True),
    "arg_max": lambda: moving("ARG_MAX", (1, 6, 5), ([3],), "ArgMaxOptions", dtype_out="int32", OutputType=2),
    "arg_min": lambda: moving("ARG_MIN", (1, 6, 8), ([2],), "ArgMinOptions", dtype_out="int32", OutputType=2),
    "resize_nearest": lambda: moving(
        "RESIZE_NEAREST_NEIGHBOR", (1, 13, 7, 8), ([13, 7],), "ResizeNearestNeighborOptions"
    ),
    "resize_nearest_align": lambda: moving(
        "RESIZE_NEAREST_NEIGHBOR", (1, 13, 7, 8), [[13, 7]], "ResizeNearestNeighborOptions", AlignCorners=True
    ),
    "resize_nearest_half_pixel": lambda: moving(
        "RESIZE_NEAREST_NEIGHBOR", (1, 4, 9, 8), [[4, 9]], "ResizeNearestNeighborOptions", HalfPixelCenters=True
    ),
    "conv_dilated_same": lambda: conv(2, 2, 0),
    "conv_dilated_valid": lambda: conv(2, 1, 1),
    "depthwise_multiplier": depthwise_multiplier,
    "depthwise_multiplier_3_channels_same": lambda: depthwise_multiplier(3, 2, padding=0),
    "depthwise_multiplier_5_channels_valid": lambda: depthwise_multiplier(5, 3, padding=1),
    "dense_4d_input": dense_4d,
}
# SPACE_TO_DEPTH needs even sizes; these take their own input
SHAPED = {
    "space_to_depth": (
        [q((1, 6, 10, 2), 0.04, -7), q((1, 3, 5, 8), 0.04, -7)],
        Op("SPACE_TO_DEPTH", [0], [1], {"BlockSize": 2}, "SpaceToDepthOptions"),
    ),
    "depth_to_space": (
        [q((1, 3, 5, 8), 0.04, -7), q((1, 6, 10, 2), 0.04, -7)],
        Op("DEPTH_TO_SPACE", [0], [1], {"BlockSize": 2}, "DepthToSpaceOptions"),
    ),
    "split": (
        [const(np.array([3], np.int32)), q(X, 0.04, -7), q((1, 6, 5, 4), 0.04, -7), q((1, 6, 5, 4), 0.04, -7)],
        Op("SPLIT", [0, 1], [2, 3], {"NumSplits": 2}, "SplitOptions"),
    ),
    "split_v": (
        [
            q(X, 0.04, -7),
            const(np.array([2, -1, 3], np.int32)),
            const(np.array([3], np.int32)),
            q((1, 6, 5, 2), 0.04, -7),
            q((1, 6, 5, 3), 0.04, -7),
            q((1, 6, 5, 3), 0.04, -7),
        ],
        Op("SPLIT_V", [0, 1, 2], [3, 4, 5], {"NumSplits": 3}, "SplitVOptions"),
    ),
    "unpack": (
        [q((1, 3, 8), 0.04, -7), q((1, 8), 0.04, -7), q((1, 8), 0.04, -7), q((1, 8), 0.04, -7)],
        Op("UNPACK", [0], [1, 2, 3], {"Num": 3, "Axis": 1}, "UnpackOptions"),
    ),
    "pack": (
        [q((1, 8), 0.04, -7), q((1, 8), 0.04, -7), q((1, 2, 8), 0.04, -7)],
        Op("PACK", [0, 1], [2], {"ValuesCount": 2, "Axis": 1}, "PackOptions"),
    ),
    "gather": (
        [q(X, 0.04, -7), const(np.array([4, 0, 0, 2], np.int32)), q((1, 4, 5, 8), 0.04, -7)],
        Op("GATHER", [0, 1], [2], {"Axis": 1}, "GatherOptions"),
    ),
    "prelu_channels": (
        [q(X, 0.04, -7), const(RNG.integers(-128, 128, (1, 1, 8)).astype(np.int8), 0.01, 5), q(X, 0.03, -2)],
        Op("PRELU", [0, 1], [2]),
    ),
    "batch_matmul": (  # attention-style: both operands activations, batches broadcast
        [q((2, 3, 5, 8), 0.04, -7), q((1, 3, 8, 4), 0.05, 9), q((2, 3, 5, 4), 0.4, -3)],
        Op("BATCH_MATMUL", [0, 1], [2], {}, "BatchMatMulOptions"),
    ),
    "mul_sub_scalar_constants": (  # MobileNetV2's preprocessing (TF Hub): x·2 − 1 on [0, 1]
        [
            q((1, 6, 5, 3), 0.003921568859368563, -128),
            const(np.array(127, np.int8), 0.015748031437397003, 0),
            q((1, 6, 5, 3), 0.007843137718737125, -128),
            const(np.array(127, np.int8), 0.007874015718698502, 0),
            q((1, 6, 5, 3), 0.007843137718737125, -1),
        ],
        [
            Op("MUL", [0, 1], [2], {"FusedActivationFunction": 0}, "MulOptions"),
            Op("SUB", [2, 3], [4], {"FusedActivationFunction": 0, "PotScaleInt16": True}, "SubOptions"),
        ],
    ),
    "batch_matmul_column_blocks": (  # 19 columns: two register blocks of 8 and a rest of 3
        [q((1, 3, 12), 0.04, -7), q((1, 12, 19), 0.05, 9), q((1, 3, 19), 0.3, 4)],
        Op("BATCH_MATMUL", [0, 1], [2], {}, "BatchMatMulOptions"),
    ),
    "batch_matmul_adjoint_const": (
        [
            q((4, 6), 0.04, -7),
            const(RNG.integers(-128, 128, (5, 4)).astype(np.int8), 0.02, 0),
            q((6, 5), 0.1, 2),
        ],
        Op("BATCH_MATMUL", [0, 1], [2], {"AdjX": True, "AdjY": True}, "BatchMatMulOptions"),
    ),
    "average_pool_relu6_same": (
        [q(X, 0.04, -7), q((1, 3, 3, 8), 0.04, -7)],
        Op(
            "AVERAGE_POOL_2D",
            [0],
            [1],
            {
                "Padding": 0,
                "StrideH": 2,
                "StrideW": 2,
                "FilterHeight": 3,
                "FilterWidth": 2,
                "FusedActivationFunction": 3,
            },
            "Pool2DOptions",
        ),
    ),
    "max_pool_relu": (
        [q(X, 0.04, -7), q((1, 3, 2, 8), 0.04, -7)],
        Op(
            "MAX_POOL_2D",
            [0],
            [1],
            {
                "Padding": 1,
                "StrideH": 2,
                "StrideW": 2,
                "FilterHeight": 2,
                "FilterWidth": 2,
                "FusedActivationFunction": 1,
            },
            "Pool2DOptions",
        ),
    ),
    "squeeze_expand_dims": (
        [q(X, 0.04, -7), q((6, 5, 8), 0.04, -7), q((6, 1, 5, 8), 0.04, -7), const(np.array([1], np.int32))],
        [Op("SQUEEZE", [0], [1], {"SqueezeDims": [0]}, "SqueezeOptions"), Op("EXPAND_DIMS", [1, 3], [2])],
    ),
    "concatenation": (
        [q(X, 0.04, -7), q((1, 6, 5, 3), 0.04, -7), q((1, 6, 5, 11), 0.04, -7)],
        Op("CONCATENATION", [0, 1], [2], {"Axis": 3}, "ConcatenationOptions"),
    ),
    "shape_flatten": (  # Keras' Flatten: SHAPE → STRIDED_SLICE → PACK → RESHAPE
        [
            q(X, 0.04, -7),
            Tensor((4,), "int32"),
            Tensor((), "int32"),
            const(np.array([0], np.int32)),
            const(np.array([1], np.int32)),
            const(np.array([1], np.int32)),
            const(np.array(-1, np.int32)),
            Tensor((2,), "int32"),
            q((1, 240), 0.04, -7),
        ],
        [
            Op("SHAPE", [0], [1], {"OutType": 2}, "ShapeOptions"),
            Op("STRIDED_SLICE", [1, 3, 4, 5], [2], {"ShrinkAxisMask": 1}, "StridedSliceOptions"),
            Op("PACK", [2, 6], [7], {"ValuesCount": 2, "Axis": 0}, "PackOptions"),
            Op("RESHAPE", [0, 7], [8]),
        ],
    ),
    "mul_constant": (  # MobileNetV3's hard-sigmoid: x · (1/6) with the constant quantized
        [q(X, 0.04, -7), const(np.array([85], np.int8), 0.002, -128), q(X, 0.009, -100)],
        Op("MUL", [0, 1], [2], {}, "MulOptions"),
    ),
    "float_interface": (  # the converter's default: float32 in and out, int8 inside
        [
            Tensor(X, "float32", name="in"),
            q(X, 0.008, 3),
            q(X, 0.006, -128),
            Tensor(X, "float32", name="out"),
        ],
        [Op("QUANTIZE", [0], [1]), Op("RELU6", [1], [2]), Op("DEQUANTIZE", [2], [3])],
    ),
    "space_to_batch_nd": (
        [
            q(X, 0.04, -7),
            const(np.array([2, 2], np.int32)),
            const(np.array([[0, 0], [1, 0]], np.int32)),
            q((4, 3, 3, 8), 0.04, -7),
        ],
        Op("SPACE_TO_BATCH_ND", [0, 1, 2], [3]),
    ),
    "space_to_batch_nd_1d": (  # Keras' dilated Conv1D
        [
            q((1, 10, 4), 0.04, -7),
            const(np.array([2], np.int32)),
            const(np.array([[1, 1]], np.int32)),
            q((2, 6, 4), 0.04, -7),
        ],
        Op("SPACE_TO_BATCH_ND", [0, 1, 2], [3]),
    ),
    "space_to_batch_stale_shapes": (  # the converter's dilated Conv1D: batch 1 written where it is 2
        [
            q((1, 10, 4), 0.04, -7),
            const(np.array([2], np.int32)),
            const(np.array([[1, 1]], np.int32)),
            q((1, 6, 4), 0.04, -7),
            q((1, 6, 4), 0.04, -7),
            q((1, 10, 4), 0.04, -7),
        ],
        [Op("SPACE_TO_BATCH_ND", [0, 1, 2], [3]), Op("RELU", [3], [4]), Op("BATCH_TO_SPACE_ND", [4, 1, 2], [5])],
    ),
    "batch_to_space_nd": (
        [
            q((4, 3, 3, 8), 0.04, -7),
            const(np.array([2, 2], np.int32)),
            const(np.array([[0, 1], [1, 0]], np.int32)),
            q((1, 5, 5, 8), 0.04, -7),
        ],
        Op("BATCH_TO_SPACE_ND", [0, 1, 2], [3]),
    ),
    "padv2": (
        [
            q(X, 0.04, -7),
            const(np.array([[0, 0], [2, 0], [0, 3], [0, 0]], np.int32)),
            const(np.array([-5], np.int8), 0.04, -7),
            q((1, 8, 8, 8), 0.04, -7),
        ],
        Op("PADV2", [0, 1, 2], [3], {}, ""),
    ),
    # float islands: what the converter cannot quantize stays float between DEQUANTIZE and QUANTIZE
    # (Keras' LayerNormalization: MEAN → DEQUANTIZE → NEG → QUANTIZE)
    "float_island_neg": (
        [q((1, 16, 1), 0.04, -7), Tensor((1, 16, 1), "float32"), Tensor((1, 16, 1), "float32"), q((1, 16, 1), 0.04, 7)],
        [Op("DEQUANTIZE", [0], [1]), Op("NEG", [1], [2]), Op("QUANTIZE", [2], [3])],
    ),
    "float_island_broadcast_add_relu6_exp": (
        [
            q(X, 0.04, -7),
            q((1, 1, 5, 8), 0.05, 3),
            Tensor(X, "float32"),
            Tensor((1, 1, 5, 8), "float32"),
            Tensor(X, "float32"),
            Tensor(X, "float32"),
            q(X, 403.5 / 255, -128),
        ],
        [
            Op("DEQUANTIZE", [0], [2]),
            Op("DEQUANTIZE", [1], [3]),
            Op("ADD", [2, 3], [4], {"FusedActivationFunction": 3}, "AddOptions"),
            Op("EXP", [4], [5]),
            Op("QUANTIZE", [5], [6]),
        ],
    ),
}
FLOAT_OPS = {  # the cases with float operators; every other case is integer throughout
    "float_interface": "DEQUANTIZE×1, QUANTIZE×1",
    "float_island_neg": "DEQUANTIZE×1, NEG×1, QUANTIZE×1",
    "float_island_broadcast_add_relu6_exp": "ADD×1, DEQUANTIZE×2, EXP×1, QUANTIZE×1",
}


def _shaped(name: str) -> bytes:
    tensors, ops = SHAPED[name]
    ops = ops if isinstance(ops, list) else [ops]
    produced = {t for op in ops for t in op.outputs}
    inputs = [i for op in ops for i in op.inputs if tensors[i].data is None and i not in produced]
    return build(tensors, ops, list(dict.fromkeys(inputs)), ops[-1].outputs)


ALL = {**CASES, **{k: (lambda k=k: _shaped(k)) for k in SHAPED}}


@pytest.fixture(scope="module")
def operator_report(integration_home: Path, tmp_path_factory: pytest.TempPathFactory):
    from mlonmcu import api

    directory = tmp_path_factory.mktemp("operators")
    paths = [str(write(directory, name, make())) for name, make in ALL.items()]
    result = api.flow(
        paths,
        home=integration_home,
        backends=["tvmaot"],
        targets=["host_x86"],
        features=["validate"],
        config={"tvmaot.importer": "direct"},
    )
    return result.report.set_index("Model")


@pytest.mark.parametrize("case", sorted(ALL))
def test_operator_is_bit_exact_with_litert(operator_report, case):
    row = operator_report.loc[case]
    assert not row["Failing"], row["Reason"]
    assert row["Validation"] == "pass", row["Validation Detail"]
    assert row["Max Abs Error"] == 0
    assert row["Float Ops"] == FLOAT_OPS.get(case, "none")


def test_float_interface_rounds_ties_away_from_zero(integration_home: Path, tmp_path: Path):
    """x / scale landing exactly on k + 0.5 (after float32 division that is not rare: MobileNetV2
    from TF Hub hit it on every sample): TFLite rounds away from zero, C's nearbyint to even."""
    from mlonmcu import api

    scale = 0.0625  # a power of two: x / scale is exact
    ties = (np.arange(-40, 40, dtype=np.float32) + np.float32(0.5)) * np.float32(scale)
    model = tmp_path / "ties"
    (model / "input").mkdir(parents=True)
    ties.astype(np.float32).tofile(model / "input" / "0.bin")
    tensors = [Tensor((1, 80), "float32", name="in"), q((1, 80), scale, 0), Tensor((1, 80), "float32", name="out")]
    (model / "ties.tflite").write_bytes(
        build(tensors, [Op("QUANTIZE", [0], [1]), Op("DEQUANTIZE", [1], [2])], [0], [2])
    )
    result = api.flow(
        [str(model / "ties.tflite")],
        home=integration_home,
        backends=["tvmaot"],
        targets=["host_x86"],
        features=["validate"],
    )
    row = result.report.iloc[0]
    assert not row["Failing"], row["Reason"]
    assert row["Validation"] == "pass" and row["Max Abs Error"] == 0, row["Validation Detail"]
