"""TFLite's fixed-point parameter derivation, against values worked out from its definition."""

import numpy as np
import pytest

from mlonmcu.backends.tvm.integer.fixedpoint import (
    double_multiplier,
    quantize_multiplier,
    reference_requantize,
    requant_table,
)
from mlonmcu.backends.tvm.integer.pooling import mean_multiplier
from mlonmcu.backends.tvm.integer.softmax import softmax_parameters


@pytest.mark.parametrize(
    ("real", "expected"),
    [
        (0.5, (1 << 30, 0)),
        (1.0, (1 << 30, 1)),
        (1 - 2**-40, (1 << 30, 1)),  # mantissa rounds up to 1.0: halved, shift + 1
        (0.1, (1717986918, -3)),
        (2**-32, (1 << 30, -31)),
        (2**-33, (0, 0)),  # too small: flushed to zero
        (0.0, (0, 0)),
    ],
)
def test_quantize_multiplier(real, expected):
    assert quantize_multiplier(real) == expected


def test_requantize_reference_rounds_twice():
    # 3 · 0.5 = 1.5 → 2 (half away from zero); −3 · 0.5 → −1.5: SRDHM rounds it up to −1 first
    multiplier, shift = quantize_multiplier(0.5)
    assert reference_requantize(np.array([3, -3, 5, -5]), multiplier, shift).tolist() == [2, -1, 3, -2]


def test_requant_table_folds_zero_point_and_compacts_uniform_channels():
    pairs = np.array([quantize_multiplier(0.01)] * 4, dtype=np.int32)
    table = requant_table(pairs, zero_point=-128)
    assert table.uniform and table.rows == 1 and table.always_right and not table.left_shift
    right = int(table.values[0, 1])
    assert table.values[0, 2] == (1 << (right - 1)) + (-128 << right)
    assert int(table.values[0, 0]) & 0xFFFFFFFF == 2 * int(pairs[0, 0])
    mixed = requant_table(np.array([quantize_multiplier(0.01), quantize_multiplier(3.0)], dtype=np.int32))
    assert not mixed.uniform and mixed.left_shift and not mixed.always_right and mixed.values.shape == (2, 4)
    assert table.high_multipliers and mixed.high_multipliers  # normalized multipliers: 2M has bit 31 set
    zero = requant_table(np.array([quantize_multiplier(0.01), quantize_multiplier(0.0)], dtype=np.int32))
    assert not zero.high_multipliers  # SMMLAR's form needs every 2M ≥ 2^31: a zero scale keeps the scalar one


def test_double_multiplier_is_exact():
    for eff in (0.0123456789, 1.5, 2.0**-20 * 3, 0.138):
        hi, lo, shift = double_multiplier(eff)
        assert (hi * 2**26 + lo) * 2.0**-shift == eff
        assert 2**52 <= hi * 2**26 + lo < 2**53


def test_mean_folds_the_count():
    assert mean_multiplier(0.5, 0.5, 64) == (1 << 30, -5)
    assert mean_multiplier(0.5, 0.5, 49) == (701219150, -4)


def test_softmax_parameters():
    multiplier, shift, diff_min = softmax_parameters(0.14217764139175415)
    assert (multiplier, shift, diff_min) == (1221296640, 24, -124)
    assert softmax_parameters(40.0) == ((1 << 31) - 1, 31, 0)  # clamped: only the row maximum counts
