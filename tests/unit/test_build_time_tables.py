"""Build-time tables of the direct path: gemmlowp fixed point on Python ints, TFLite's int16
tables and the integer LSTM/SVDF parameters (values computed by TFLite Micro's own C++)."""

from __future__ import annotations

import pytest

from mlonmcu.backends.tvm.integer import lut, lut16, scalar
from mlonmcu.backends.tvm.integer.recurrent import cell_parameters, lstm_tanh_scaling


@pytest.mark.parametrize(
    ("x", "expected"),
    [(1, (2147483647, 0)), (3, (1431655762, 1)), (89, (1544257904, 6)), (255, (1077952580, 7)), (599, (1835578676, 9))],
)
def test_reciprocal_is_tflites_get_reciprocal(x, expected):
    assert scalar.reciprocal(x, 31) == expected


@pytest.mark.parametrize(
    ("x", "expected"),
    [(0, (2147483647, 0)), (2, (1518498372, 0)), (17, (520841290, 0)), (255, (268961290, -1)), (599, (350975166, -2))],
)
def test_inverse_sqrt_is_tflites(x, expected):
    assert scalar.inv_sqrt(x, -1) == expected


def test_multiply_by_quantized_multiplier_rounds_as_gemmlowp_and_saturates():
    assert scalar.multiply_by_quantized_multiplier(100, 1 << 30, 0) == 50
    assert scalar.multiply_by_quantized_multiplier(-3, 1 << 30, 0) == -1  # gemmlowp: -1.5 rounds up
    assert scalar.srdhm(scalar.INT32_MIN, scalar.INT32_MIN) == scalar.INT32_MAX


def test_int16_tables_and_scalings():
    table = lut16.SIGMOID_TABLE
    assert len(table) == 256 and table[0] == 32768 and list(table) == sorted(table)
    # TFLM Prepare: a Q3.12 input is the power-of-two case, anything else a doubled multiplier
    assert lut16.operator_scaling(2.0**-12, tanh=False) == (3, 0)
    assert lut16.operator_scaling(2.0**-11, tanh=True) == (6, 0)
    multiplier, shift = lut16.operator_scaling(0.0003, tanh=True)
    assert 32767 / 2 < multiplier <= 32767 and shift > 0
    assert lstm_tanh_scaling(-12) == (3, 0) and lstm_tanh_scaling(-16) == (3, 4)
    assert cell_parameters(2.0**-11, 3.0) == (-11, 6144)


def test_rsqrt_and_abs_tables():
    rsqrt = lut.rsqrt_table(0.01, -128, 0.05, -100)
    assert len(rsqrt) == 256 and rsqrt[0] == 127  # x = zero point: TFLM's "maximum" convention
    assert rsqrt[1] >= rsqrt[100] >= rsqrt[255]  # 1/sqrt falls
    absolute = lut.abs_table(0.04, -7, 0.04, -128)
    assert absolute[-7 + 128] == -128 and absolute[-8 + 128] == absolute[-6 + 128] == -127
