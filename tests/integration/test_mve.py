"""tvmaot's Arm MVE (Helium) kernels on the Cortex-M55 (mps3_an547): bit-exact with LiteRT, taken
by simd=auto on the M55 only, fewer instructions than the scalar kernels; the MVE weight layouts
are read exactly by the scalar kernels too (simd=mve on the M3)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from simd_cases import add_case, conv_case, dense_case, depthwise_case, exact_counts, pool_case
from tflite_builder import write

pytestmark = pytest.mark.integration

RNG = np.random.default_rng(29)
CASES = {
    # few channels per kernel row: the window gathered into a zero-point padded column
    "conv_70_same_column": lambda: conv_case(RNG, 70, 1, 0),
    "conv_9_valid_stride2": lambda: conv_case(RNG, 9, 2, 1),
    "conv_per_tensor_left_shift": lambda: conv_case(RNG, 8, 1, 0, per_tensor=True, big_scale=True),
    "conv_10x4_one_channel": lambda: conv_case(RNG, 12, 2, 0, input_shape=(1, 13, 7, 1), kernel=(10, 4)),
    # sixteen channels: rows read in place, border pixels with their valid weights' sums
    "conv_in_place_same": lambda: conv_case(RNG, 10, 1, 0, input_shape=(1, 6, 5, 16)),
    "conv_in_place_dilated": lambda: conv_case(RNG, 6, 1, 0, dilation=2, input_shape=(1, 7, 7, 16)),
    "conv_pointwise_tail": lambda: conv_case(RNG, 10, 1, 1, input_shape=(1, 5, 4, 24), kernel=(1, 1)),
    "depthwise_70_same": lambda: depthwise_case(RNG, 70, 1, 0),
    "depthwise_13_valid_stride2": lambda: depthwise_case(RNG, 13, 2, 1),
    "depthwise_8_wide": lambda: depthwise_case(RNG, 8, 1, 0, size=11),  # interior pixel pairs
    "dense_70_per_channel": lambda: dense_case(RNG, 70, 37, True),
    "dense_10_per_tensor": lambda: dense_case(RNG, 10, 64, False),
    "add_tail": lambda: add_case((1, 5, 7, 6)),
    "sub_relu": lambda: add_case((2, 9, 4), subtract=True, act=1),
    # border windows, 21 channels: two vectors and a tail of 5 (average: 16-bit lanes of 8)
    "average_pool_same_relu6": lambda: pool_case("AVERAGE_POOL_2D", (1, 7, 6, 21), (3, 3), 2, 0, act=3),
    "average_pool_whole": lambda: pool_case("AVERAGE_POOL_2D", (1, 5, 5, 64), (5, 5), 1, 1),
    "max_pool_same_relu": lambda: pool_case("MAX_POOL_2D", (1, 7, 6, 21), (3, 3), 2, 0, act=1),
    "max_pool_valid_batches": lambda: pool_case("MAX_POOL_2D", (2, 8, 8, 16), (2, 2), 2, 1),
}


@pytest.fixture(scope="module")
def mve_report(integration_home: Path, tmp_path_factory: pytest.TempPathFactory):
    from mlonmcu import api

    directory = tmp_path_factory.mktemp("mve")
    paths = [str(write(directory, name, make())) for name, make in CASES.items()]
    common = {"backends": ["tvmaot"], "features": ["validate"], "home": integration_home, "parallel": 2}
    m55 = api.flow(paths, targets=["mps3_an547"], config={"tvmaot.simd": ["auto", "off"]}, **common)
    m3 = api.flow(paths, targets=["mps2_an385"], config={"tvmaot.simd": ["mve"]}, **common)
    return m55.report, m3.report


def test_mve_kernels_are_bit_exact_and_faster_on_the_m55(mve_report):
    report, _ = mve_report
    assert len(report) == 2 * len(CASES)
    counts = exact_counts(report)
    assert (counts["auto"] < 0.8 * counts["off"]).all(), counts  # the MVE kernels ran


def test_mve_layouts_are_exact_on_cores_without_mve(mve_report):
    _, report = mve_report
    assert len(report) == len(CASES)
    assert len(exact_counts(report)) == len(CASES)
