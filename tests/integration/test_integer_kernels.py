"""Integer kernels compiled with the host GCC against numpy references of TFLite's arithmetic."""

from __future__ import annotations

import ctypes
import dataclasses
import subprocess
from pathlib import Path

import numpy as np
import pytest

from mlonmcu.backends.tvm.codegen import lower_kernels
from mlonmcu.backends.tvm.integer import conv, dense
from mlonmcu.backends.tvm.integer.fixedpoint import (
    FAST_ROUNDING_SHIFTS,
    INT32_MAX,
    common_shift,
    double_multiplier,
    fast_rounding,
    multiply_by_constant,
    per_channel_multipliers,
    quantize_multiplier,
    reference_requantize,
    requant_table,
    requantize,
    round_double_product,
    round_double_product_fast,
)
from mlonmcu.backends.tvm.integer.tir import prim_func, root_block

pytestmark = pytest.mark.integration


def build(func, name: str, tmp_path: Path):
    import tvm

    source = lower_kernels({name: func}, tvm.target.Target({"kind": "c"}))
    c_file = tmp_path / f"{name}.c"
    c_file.write_text("#include <stdint.h>\n#include <stdbool.h>\n" + source)
    library = tmp_path / f"{name}.so"
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", library, c_file], check=True)
    return getattr(ctypes.CDLL(str(library)), f"tvmgen_{name}")


def pointer(array: np.ndarray):
    return array.ctypes.data_as(ctypes.c_void_p)


def test_requantize_matches_the_literal_tflite_formula(tmp_path):
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    rng = np.random.default_rng(1)
    reals = np.concatenate([rng.uniform(1e-5, 0.9, 120), [0.5, 1.0, 1.5, 3.0, 2**-20, 0.25, 0.7, 1e-9]])
    pairs = np.array([quantize_multiplier(float(r)) for r in reals], np.int32)
    table = requant_table(pairs, zero_point=5)
    count = 4000
    acc = np.concatenate([rng.integers(-(2**31), 2**31, count // 2), rng.integers(-(2**16), 2**16, count // 2)])
    acc = acc.astype(np.int32)
    channel = rng.integers(0, len(reals), count).astype(np.int32)
    with IRBuilder() as ib, prim_func("rq", ["TEST"], 0):
        a = T.arg("a", T.Buffer((count,), "int32"))
        c = T.arg("c", T.Buffer((count,), "int32"))
        t = T.arg("t", T.Buffer(table.values.shape, "int32"))
        o = T.arg("o", T.Buffer((count,), "int32"))
        with root_block(), T.serial(0, count) as i:
            T.buffer_store(o, requantize(a[i], t, c[i], table), [i])
    out = np.zeros(count, np.int32)
    build(ib.get(), "rq", tmp_path)(
        pointer(acc), pointer(channel), pointer(np.ascontiguousarray(table.values)), pointer(out)
    )
    expected = reference_requantize(acc, pairs[channel, 0], pairs[channel, 1]) + 5
    assert np.array_equal(out, expected.astype(np.int32))


def test_multiply_by_a_constant_is_the_literal_tflite_formula(tmp_path):
    """The compile-time multipliers of ADD/SUB/MUL/... (high word of x·2m, and 2^30 as a rounding
    halving) against gemmlowp's SRDHM + RDBPOT, at the int32 extremes too."""
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    rng = np.random.default_rng(5)
    reals = [0.5, 0.25, 1.0, 1.5, 2.0**-20, 0.7, 3.1, 1e-9, *rng.uniform(1e-6, 0.99, 5)]
    pairs = [quantize_multiplier(r) for r in reals] + [(1 << 30, 0), (INT32_MAX, -3), (0, 0)]
    extremes = [-(2**31), -(2**31) + 1, -1, 0, 1, 2**31 - 1, 2**31 - 2, -(2**30), 2**30, 2**30 + 1]
    x = np.concatenate([extremes, rng.integers(-(2**31), 2**31, 3000), rng.integers(-(2**12), 2**12, 1000)])
    x = x.astype(np.int32)
    with IRBuilder() as ib, prim_func("mbc", ["TEST"], 0):
        a = T.arg("a", T.Buffer((x.size,), "int32"))
        o = T.arg("o", T.Buffer((len(pairs), x.size), "int32"))
        with root_block(), T.serial(0, x.size) as i:
            for row, (multiplier, shift) in enumerate(pairs):
                T.buffer_store(o, multiply_by_constant(a[i], multiplier, shift), [row, i])
    out = np.zeros((len(pairs), x.size), np.int32)
    build(ib.get(), "mbc", tmp_path)(pointer(x), pointer(out))
    for row, (multiplier, shift) in enumerate(pairs):
        expected = reference_requantize(x, multiplier, shift).astype(np.int32)
        assert np.array_equal(out[row], expected), (multiplier, shift)


def c_round_of_double_product(acc: np.ndarray, effs: np.ndarray) -> np.ndarray:
    """C's round(double(acc) · eff): IEEE double multiply, then half away from zero."""
    product = acc.astype(np.float64) * effs
    return np.trunc(product) + np.where(np.abs(product - np.trunc(product)) >= 0.5, np.sign(product), 0)


def near_ties(rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray]:
    """(acc, eff) whose double product lies at or within a few ulps of k + 1/2: the values where
    the fast rounding must hand over to the emulation. Only effs in its shift range are kept."""
    low, high = FAST_ROUNDING_SHIFTS
    acc = (rng.integers(1, 2**31, count) * rng.choice([-1, 1], count)).astype(np.int64)
    acc[:4] = [-(2**31), 2**31 - 1, 3, -5]
    scale = np.exp2(-rng.uniform(low - 52, high - 52, count))
    k = np.floor(np.abs(acc) * scale)
    eff = (k + 0.5) / np.abs(acc)
    for step in rng.integers(-3, 4, count), rng.integers(-1, 2, count):  # a nudge of up to 4 ulps
        eff = np.where(step != 0, np.nextafter(eff, np.where(step > 0, np.inf, 0.0)), eff)
    shifts = np.array([double_multiplier(float(e))[2] for e in eff])
    keep = (shifts >= low) & (shifts <= high)
    return acc[keep].astype(np.int32), eff[keep]


def test_fast_double_rounding_equals_the_double_product_also_near_ties(tmp_path):
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    rng = np.random.default_rng(11)
    count = 4000
    tie_acc, tie_eff = near_ties(rng, count)
    low, high = FAST_ROUNDING_SHIFTS
    plain_eff = np.exp2(-rng.uniform(low - 51.99, high - 52, count))
    plain_acc = rng.integers(-(2**31), 2**31, count).astype(np.int32)
    acc = np.concatenate([tie_acc, plain_acc])
    effs = np.concatenate([tie_eff, plain_eff])
    count = acc.size
    table = np.array([double_multiplier(float(e)) for e in effs], np.int32)
    assert fast_rounding(table), "the test effs must lie in the fast path's shift range"
    shifts, counts = np.unique(table[:, 2], return_counts=True)
    constant = int(shifts[np.argmax(counts)])  # the cases with the most frequent shift, also as a constant
    same = table[:, 2] == constant
    variants = {
        "full": (round_double_product, None),
        "fast": (round_double_product_fast, None),
        "fast-constant": (round_double_product_fast, constant),
    }
    outputs = {}
    for name, (rounding, shift) in variants.items():
        with IRBuilder() as ib, prim_func(name.replace("-", "_"), ["TEST"], 0):
            a = T.arg("a", T.Buffer((count,), "int32"))
            t = T.arg("t", T.Buffer((count, 3), "int32"))
            o = T.arg("o", T.Buffer((count,), "int32"))
            with root_block(), T.serial(0, count) as i:
                T.buffer_store(o, rounding(a[i], t[i, 0], t[i, 1], t[i, 2] if shift is None else shift), [i])
        outputs[name] = np.zeros(count, np.int32)
        build(ib.get(), name.replace("-", "_"), tmp_path)(pointer(acc), pointer(table), pointer(outputs[name]))
    expected = c_round_of_double_product(acc, effs)
    assert np.array_equal(outputs["full"], expected)
    assert np.array_equal(outputs["fast"], expected)
    assert np.array_equal(outputs["fast-constant"][same], expected[same])
    assert np.count_nonzero(same[: tie_acc.size]) > 50
    fraction = np.abs(acc.astype(np.float64) * effs) % 1.0
    assert np.count_nonzero(fraction[: tie_acc.size] == 0.5) > 100, "exact ties must be among the cases"


def reference_conv(x, weights, bias, pairs, spec: conv.ConvSpec) -> np.ndarray:
    _, h, w, _ = spec.input_shape
    _, oh, ow, co = spec.output_shape
    kh, kw = spec.kernel
    out = np.zeros(spec.output_shape, np.int64)
    xs = x.astype(np.int64) + spec.input_offset
    for y in range(oh):
        for z in range(ow):
            for c in range(co):
                acc = int(bias[c])
                for a in range(kh):
                    for b in range(kw):
                        iy = y * spec.strides[0] - spec.padding[0] + a * spec.dilation[0]
                        ix = z * spec.strides[1] - spec.padding[1] + b * spec.dilation[1]
                        if 0 <= iy < h and 0 <= ix < w:
                            if spec.depthwise:
                                acc += int(xs[0, iy, ix, c]) * int(weights[a, b, c])
                            else:
                                acc += int(np.dot(xs[0, iy, ix, :], weights[a, b, :, c].astype(np.int64)))
                out[0, y, z, c] = acc
    result = reference_requantize(out, pairs[:co, 0], pairs[:co, 1]) + spec.output_offset
    return np.clip(result, spec.act_min, spec.act_max).astype(np.int8)


CONVS = [  # H, W, Cin, Cout, kernel, strides, padding (t, l, b, r), dilation
    (9, 7, 5, 6, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    (10, 8, 3, 8, (3, 2), (2, 2), (0, 0, 1, 1), (1, 1)),
    (6, 6, 16, 5, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),
    (12, 11, 16, 12, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),
    (13, 9, 1, 4, (10, 4), (2, 2), (4, 1, 5, 1), (1, 1)),
    (8, 8, 6, 7, (3, 3), (1, 1), (2, 2, 2, 2), (2, 2)),
]


@pytest.mark.parametrize("depthwise", [False, True])
@pytest.mark.parametrize("case", range(len(CONVS)))
@pytest.mark.parametrize(("block", "pixels"), [(4, 2), (8, 1)])
def test_conv_kernels_are_exact(tmp_path, depthwise, case, block, pixels):
    h, w, ci, co, kernel, strides, padding, dilation = CONVS[case]
    ci = co if depthwise else ci
    oh = (h + padding[0] + padding[2] - dilation[0] * (kernel[0] - 1) - 1) // strides[0] + 1
    ow = (w + padding[1] + padding[3] - dilation[1] * (kernel[1] - 1) - 1) // strides[1] + 1
    rng = np.random.default_rng(case)
    spec = conv.ConvSpec(
        f"conv{case}",
        (1, h, w, ci),
        (1, oh, ow, co),
        kernel,
        strides,
        dilation,
        padding,
        depthwise,
        input_offset=7,
        output_offset=-3,
        act_min=-100,
        act_max=120,
        block=block,
        pixels=pixels,
    )
    x = rng.integers(-128, 128, spec.input_shape).astype(np.int8)
    if depthwise:
        weights = rng.integers(-127, 128, (*kernel, co)).astype(np.int8)
        packed, axis = conv.pack_depthwise_weights(weights, block), 2
    else:
        weights = rng.integers(-127, 128, (*kernel, ci, co)).astype(np.int8)
        packed, axis = conv.pack_conv_weights(weights, block), 3
    bias = rng.integers(-5000, 5000, co).astype(np.int32)
    pairs = per_channel_multipliers(0.05, rng.uniform(0.001, 0.02, co), 0.1)
    table = requant_table(pairs, spec.output_offset)
    spec = dataclasses.replace(spec, requant=table)
    args = [
        x,
        packed,
        conv.pack_channels(bias, block),
        conv.pack_channels(conv.interior_bias(bias, weights, spec.input_offset, axis), block),
        table.values if table.uniform else conv.pack_channels(table.values, block),
    ]
    y = np.zeros(spec.output_shape, np.int8)
    build(conv.conv_kernel(spec), spec.name, tmp_path)(*(pointer(np.ascontiguousarray(a)) for a in args), pointer(y))
    assert np.array_equal(y, reference_conv(x, weights, bias, pairs, spec))


@pytest.mark.parametrize("rounding", ["emulation", "fast", "fast-common-shift"])
def test_dense_litert_requantization_is_round_of_a_double_product(tmp_path, rounding):
    rng = np.random.default_rng(3)
    inputs, outputs, block = 40, 12, 8
    effs = rng.uniform(2**-8, 2**-7, outputs) if rounding == "fast-common-shift" else rng.uniform(1e-4, 0.05, outputs)
    table = np.array([double_multiplier(float(e)) for e in effs], np.int32)
    assert (common_shift(table) is not None) == (rounding == "fast-common-shift")
    spec = dense.DenseSpec(
        "fc",
        (2, inputs),
        (2, outputs),
        input_offset=3,
        output_offset=-7,
        act_min=-128,
        act_max=127,
        block=block,
        fast_rounding=rounding != "emulation" and fast_rounding(table),
        shift=common_shift(table),
    )
    assert spec.fast_rounding == (rounding != "emulation")
    x = rng.integers(-128, 128, (2, inputs)).astype(np.int8)
    weights = rng.integers(-127, 128, (outputs, inputs)).astype(np.int8)
    bias = rng.integers(-20000, 20000, outputs).astype(np.int32)
    args = [
        x,
        dense.pack_weights(spec, weights),
        conv.pack_channels(bias, block),
        conv.pack_channels(table, block),
    ]
    y = np.zeros((2, outputs), np.int8)
    build(dense.dense_kernel(spec), "fc", tmp_path)(*(pointer(np.ascontiguousarray(a)) for a in args), pointer(y))
    acc = (x.astype(np.int64) + 3) @ weights.T.astype(np.int64) + bias
    rounded = c_round_of_double_product(acc, effs)  # IEEE double, as LiteRT's reference kernel
    assert np.array_equal(y, np.clip(rounded - 7, -128, 127).astype(np.int8))
