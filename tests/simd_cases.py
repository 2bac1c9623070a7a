"""One-operator int8 models for the SIMD kernel tests (RVV, MVE): shapes chosen so that vector
strips, channel tails, border pixels and per-tensor/per-channel requantization all occur."""

from __future__ import annotations

import numpy as np
import pandas as pd
from tflite_builder import Op, build, const, conv_options, q


def conv_case(
    rng: np.random.Generator,
    cout: int,
    stride: int,
    padding: int,
    dilation: int = 1,
    per_tensor: bool = False,
    big_scale: bool = False,
    input_shape: tuple[int, int, int, int] = (1, 7, 6, 5),
    kernel: tuple[int, int] = (3, 3),
) -> bytes:
    """CONV_2D with input zero point -128 (padding 0 = SAME); `big_scale`: a multiplier > 1 (left shift)."""
    _, height, width, cin = input_shape
    w = rng.integers(-127, 128, (cout, *kernel, cin)).astype(np.int8)
    scales = [0.5] if per_tensor else list(rng.uniform(0.002, 0.02, cout))
    x_scale, out_scale = (0.5, 0.01) if big_scale else (0.04, 0.1)

    def out_size(size: int, k: int) -> int:
        span = 1 + (k - 1) * dilation
        return (size + stride - 1) // stride if padding == 0 else (size - span) // stride + 1

    tensors = [
        q(input_shape, x_scale, -128),
        const(w, scales, [0] * len(scales)),
        const(rng.integers(-3000, 3000, cout).astype(np.int32), [x_scale * s for s in scales], [0] * len(scales)),
        q((1, out_size(height, kernel[0]), out_size(width, kernel[1]), cout), out_scale, 3),
    ]
    opts = conv_options(stride, padding, dilation, act=1)
    return build(tensors, [Op("CONV_2D", [0, 1, 2], [3], opts, "Conv2DOptions")], [0], [3])


def depthwise_case(
    rng: np.random.Generator, channels: int, stride: int, padding: int, size: int = 6, act: int = 3
) -> bytes:
    """DEPTHWISE_CONV_2D 3x3 (multiplier 1, fused activation `act`: RELU6) on (1, size, size, channels)."""
    w = rng.integers(-127, 128, (1, 3, 3, channels)).astype(np.int8)
    scales = list(rng.uniform(0.002, 0.02, channels))
    out = (size + stride - 1) // stride if padding == 0 else (size - 3) // stride + 1
    tensors = [
        q((1, size, size, channels), 0.04, 9),
        const(w, scales, [0] * channels, axis=3),
        const(rng.integers(-500, 500, channels).astype(np.int32), [0.04 * s for s in scales], [0] * channels),
        q((1, out, out, channels), 0.08, -1),
    ]
    opts = {"Padding": padding, "StrideH": stride, "StrideW": stride, "DepthMultiplier": 1}
    opts["FusedActivationFunction"] = act
    return build(tensors, [Op("DEPTHWISE_CONV_2D", [0, 1, 2], [3], opts, "DepthwiseConv2DOptions")], [0], [3])


def dense_case(rng: np.random.Generator, outputs: int, inputs: int, per_channel: bool) -> bytes:
    """FULLY_CONNECTED on two rows of `inputs`, input zero point -128."""
    w = rng.integers(-127, 128, (outputs, inputs)).astype(np.int8)
    scales = list(rng.uniform(0.004, 0.02, outputs)) if per_channel else 0.01
    bias_scales = [0.04 * s for s in scales] if per_channel else 0.0004
    tensors = [
        q((2, inputs), 0.04, -128),
        const(w, scales, [0] * outputs if per_channel else 0),
        const(rng.integers(-900, 900, outputs).astype(np.int32), bias_scales, [0] * outputs if per_channel else 0),
        q((2, outputs), 0.2, 5),
    ]
    return build(tensors, [Op("FULLY_CONNECTED", [0, 1, 2], [3], {}, "FullyConnectedOptions")], [0], [3])


def add_case(shape: tuple[int, ...], subtract: bool = False, act: int = 0) -> bytes:
    """ADD / SUB of two int8 tensors of one shape, different scales and zero points."""
    tensors = [q(shape, 0.05, -3), q(shape, 0.11, 17), q(shape, 0.09, -20)]
    op = "SUB" if subtract else "ADD"
    options = {"FusedActivationFunction": act}
    return build(tensors, [Op(op, [0, 1], [2], options, "SubOptions" if subtract else "AddOptions")], [0, 1], [2])


def exact_counts(report: pd.DataFrame) -> pd.DataFrame:
    """Every run of a SIMD kernel report finished and matched LiteRT to the bit; its instruction
    counts per model (rows) and tvmaot.simd value (columns)."""
    for _, row in report.iterrows():
        where = f"{row['Model']} {row['Config']}"
        assert not row["Failing"], f"{where}: {row['Reason']}"
        assert row["Validation"] == "pass" and row["Max Abs Error"] == 0, where
    simd = report.assign(simd=report["Config"].str.extract(r"simd=(\w+)")[0])
    return simd.pivot_table(index="Model", columns="simd", values="Run Instructions")


def pool_case(
    op: str,
    shape: tuple[int, int, int, int],
    pool: tuple[int, int],
    stride: int,
    padding: int,
    act: int = 0,
) -> bytes:
    """AVERAGE_POOL_2D / MAX_POOL_2D (padding 0 = SAME: border windows smaller) with a fused
    activation `act` (1 = RELU, 3 = RELU6), input and output quantized alike."""
    n, height, width, channels = shape

    def out_size(size: int, k: int) -> int:
        return (size + stride - 1) // stride if padding == 0 else (size - k) // stride + 1

    out = (n, out_size(height, pool[0]), out_size(width, pool[1]), channels)
    opts = {"Padding": padding, "StrideH": stride, "StrideW": stride, "FilterHeight": pool[0]}
    opts |= {"FilterWidth": pool[1], "FusedActivationFunction": act}
    tensors = [q(shape, 0.04, -7), q(out, 0.04, -7)]
    return build(tensors, [Op(op, [0], [1], opts, "Pool2DOptions")], [0], [1])
