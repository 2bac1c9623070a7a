"""Integer SVDF and UNIDIRECTIONAL_SEQUENCE_LSTM: TFLite Micro's reference arithmetic, their
state kept between inferences.

The state is a model *variable*: a `main` parameter that is not a model input (plan.STATE_ATTR)
and that the kernel updates in place, as TFLM's kernel does; the AOT driver keeps it outside the
arena and sets it to the tensor's fill byte at model init (TFLM: the zero point for int8, else 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mlonmcu.backends.tvm.integer.fixedpoint import multiply_by_constant, quantize_multiplier, round_half_away
from mlonmcu.backends.tvm.integer.tir import accumulators, clamp, flat_view, i32, local, prim_func, root_block

_LIMITS = {"int8": (-128, 127), "int16": (-32768, 32767)}
INT16_MIN, INT16_MAX = _LIMITS["int16"]
GATE_SCALE = 2.0**-12  # TFLM's LSTM gate pre-activations: int16 in Q3.12
GATE_OUTPUT_SCALE = 2.0**-15  # and the gates after sigmoid/tanh: Q0.15
# TFLite's int16 sigmoid/tanh table: sigmoid(i/24) in 0.16 fixed point (kernels/internal/common.h),
# values tuned for linear interpolation, so they are data, not a formula.
# fmt: off
SIGMOID_TABLE = (
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794,
    41432, 42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443,
    48964, 49475, 49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169, 53581, 53983, 54374,
    54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433, 57724, 58007, 58280, 58544,
    58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110, 61279,
    61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990,
    63090, 63186, 63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968, 64030,
    64090, 64148, 64204, 64257, 64308, 64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652,
    64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900, 64926, 64950, 64974, 64997, 65019,
    65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234,
    65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360,
    65367, 65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433,
    65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474, 65476,
    65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498, 65500, 65501,
    65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513, 65514, 65515, 65516,
    65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524,
    65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529,
    65529, 65530, 65530, 65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532,
    65532, 65532, 65532, 65533, 65533, 65533, 65533, 65533, 65533, 65533, 65533, 65534, 65534,
    65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65535
)
# fmt: on


def state_fill(dtype: str, zero_point: int) -> int:
    """The byte TFLM fills a variable tensor with (ResetVariableTensors: memset)."""
    return zero_point if dtype == "int8" else 0


@dataclass(frozen=True)
class SvdfSpec:
    name: str
    batch: int
    inputs: int
    filters: int
    rank: int
    memory: int
    state_dtype: str  # int8 or int16: also the time weights' type
    input_zero: int
    state_zero: int
    output_zero: int
    feature: tuple[int, int]  # input × feature weights → state: (multiplier, shift)
    output: tuple[int, int]  # state × time weights → output
    bias: bool

    @property
    def units(self) -> int:
        return self.filters // self.rank


def svdf_multipliers(
    input_scale: float, feature_scale: float, state_scale: float, time_scale: float, output_scale: float
) -> tuple[tuple[int, int], tuple[int, int]]:
    """The two rescalings of TFLM's SVDF Prepare, with its float32 products."""
    f32 = np.float32
    first = float(f32(input_scale) * f32(feature_scale) / f32(state_scale))
    second = float(f32(state_scale) * f32(time_scale) / f32(output_scale))
    return quantize_multiplier(first), quantize_multiplier(second)


def svdf_kernel(spec: SvdfSpec) -> Any:
    """Shift the state by one step, write the new feature column (clamped to the state type, plus
    its zero point, wrapping to the state type as TFLM's store does), then per unit: bias + the
    rank's filters' dot products with the time weights, requantized to int8. TFLM's integer SVDF
    applies no fused activation; neither does this."""
    from tvm import tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    b_, i_, f_, m_, u_ = spec.batch, spec.inputs, spec.filters, spec.memory, spec.units
    dtype = spec.state_dtype
    low, high = _LIMITS[dtype]
    macs = b_ * f_ * (i_ + m_)
    with IRBuilder() as ib, prim_func(spec.name, ["SVDF"], macs):
        x = T.arg("x", T.Buffer((b_, i_), "int8"))
        feature = T.arg("feature", T.Buffer((f_, i_), "int8"))
        time = T.arg("time", T.Buffer((f_, m_), dtype))
        bias = T.arg("bias", T.Buffer((u_,), "int32")) if spec.bias else None
        state_arg = T.arg("state", T.Buffer((b_, f_ * m_), dtype))
        y = T.arg("y", T.Buffer((b_, u_), "int8"))
        with root_block():
            state = flat_view(state_arg, (b_, f_ * m_), dtype)
            acc = accumulators(1)
            with T.serial(0, b_ * f_ * m_ - 1) as i:
                T.buffer_store(state, state[i + 1], [i])
            with T.serial(0, b_) as b, T.serial(0, f_) as f:
                T.buffer_store(acc, 0, [0])
                with T.serial(0, i_) as c:
                    T.buffer_store(acc, acc[0] + i32(feature[f, c]) * (i32(x[b, c]) - spec.input_zero), [0])
                value = clamp(multiply_by_constant(local(acc[0], "int32"), *spec.feature), low, high)
                T.buffer_store(state, tirx.Cast(dtype, value + spec.state_zero), [(b * f_ + f) * m_ + m_ - 1])
            with T.serial(0, b_) as b, T.serial(0, u_) as u:
                T.buffer_store(acc, bias[u] if bias is not None else 0, [0])
                with T.serial(0, spec.rank) as r, T.serial(0, m_) as m:
                    f = u * spec.rank + r
                    term = i32(time[f, m]) * (i32(state[(b * f_ + f) * m_ + m]) - spec.state_zero)
                    T.buffer_store(acc, acc[0] + term, [0])
                scaled = multiply_by_constant(local(acc[0], "int32"), *spec.output) + spec.output_zero
                T.buffer_store(y, tirx.Cast("int8", clamp(scaled, -128, 127)), [b, u])
    return ib.get()


@dataclass(frozen=True)
class Gate:
    """One LSTM gate: input FC (with the gate's bias) + recurrent FC, each requantized to Q3.12."""

    input_weights: np.ndarray  # int8 [state, input]
    recurrent_weights: np.ndarray  # int8 [state, state]
    bias: np.ndarray  # int32 [state]
    input_multiplier: tuple[int, int]
    recurrent_multiplier: tuple[int, int]
    tanh: bool  # activation: tanh (the cell gate) or sigmoid


@dataclass(frozen=True)
class LstmSpec:
    name: str
    x_shape: tuple[int, ...]  # [batch, steps, inputs], or [steps, 1, inputs] (time-major, one batch)
    y_shape: tuple[int, ...]
    batch: int
    steps: int
    inputs: int
    units: int
    input_zero: int
    hidden_zero: int
    gates: tuple[Gate, Gate, Gate, Gate]  # input, forget, cell, output
    forget_multiplier: tuple[int, int]  # forget gate × cell → cell
    input_multiplier: tuple[int, int]  # input gate × cell gate → cell
    hidden_multiplier: tuple[int, int]  # output gate × tanh(cell) → hidden (int8)
    cell_power: int  # log2 of the cell state's scale
    cell_clip: int  # 0: no clipping


def fc_multiplier(input_scale: float, weight_scale: float, output_scale: float) -> tuple[int, int]:
    """TFLM's FULLY_CONNECTED rescaling: the scales' product in float32, divided in double."""
    return quantize_multiplier(float(np.float32(input_scale) * np.float32(weight_scale)) / output_scale)


def mul_multiplier(first: float, second: float, output_scale: float) -> tuple[int, int]:
    """TFLM's LSTM inter-gate MUL rescaling, all in double."""
    return quantize_multiplier(float(first) * float(second) / float(output_scale))


def cell_parameters(cell_scale: float, cell_clip: float) -> tuple[int, int]:
    """TFLM's CreateLstmCellStateInfo: the scale's (rounded) power of two and the clip in int16."""
    f32 = np.float32
    power = round_half_away(float(f32(np.log(f32(cell_scale))) * (f32(1.0) / f32(np.log(f32(2.0))))))
    clip = int(min(max(float(cell_clip) / float(np.float32(cell_scale)), -32768.0), 32767.0)) if cell_clip > 0 else 0
    return power, clip


def _sigmoid16(value: Any, table: Any) -> Any:
    """TFLite's int16 logistic of a Q3.12 value (multiplier 3, no shift), by table interpolation."""
    from tvm import tirx

    x = local(value * 3, "int32")
    magnitude = local(tirx.abs(x), "int32")
    high = local(tirx.shift_right(magnitude, 9), "int32")
    below = table[tirx.Min(high, 254)]
    interpolated = tirx.shift_left(below, 9) + tirx.bitwise_and(magnitude, 0x1FF) * (
        table[tirx.Min(high, 254) + 1] - below
    )
    result = local(tirx.Select(high >= 255, tirx.const(0x7FFF << 10, "int32"), interpolated), "int32")
    positive = tirx.shift_right(result + (1 << 9), 10)
    negative = tirx.shift_right((1 << 25) - result + (1 << 9) - 1, 10)
    return tirx.Select(x >= 0, positive, negative)


def _tanh16(value: Any, power: int, table: Any) -> Any:
    """TFLite's int16 tanh of a value with scale 2^power (TFLM's LSTM Tanh), by table interpolation."""
    from tvm import tirx

    left_shift = 15 + power - 3
    if left_shift < 0:
        multiplier, shift = 3, -left_shift
    else:
        multiplier, shift = 3 << left_shift, 0
    rounding = 1 << (shift - 1) if shift > 0 else 0
    x = local(tirx.shift_right(value * multiplier + rounding, shift), "int32")
    magnitude = local(tirx.abs(x), "int32")
    high = local(tirx.shift_right(magnitude, 8), "int32")
    below = table[tirx.Min(high, 254)]
    interpolated = tirx.shift_left(below, 8) + tirx.bitwise_and(magnitude, 0xFF) * (
        table[tirx.Min(high, 254) + 1] - below
    )
    result = local(tirx.Select(high >= 255, tirx.const(0xFFFF << 8, "int32"), interpolated), "int32")
    positive = tirx.shift_right(result - (1 << 23) + (1 << 7), 8)
    negative = tirx.shift_right((1 << 23) - result + (1 << 7) - 1, 8)
    return tirx.Select(x >= 0, positive, negative)


def lstm_kernel(spec: LstmSpec) -> Any:
    """Per batch and time step, as TFLM's LstmStep: the four gates from the previous hidden state
    (int8 FCs into int16 Q3.12, saturating add, sigmoid or tanh into Q0.15), then the cell
    (forget·cell + input·cell gate, saturated, clipped) and the hidden state (output gate ·
    tanh(cell) into int8), which is also the step's output. Arguments: x, per gate its input
    weights, recurrent weights and bias, the table, the hidden and cell states (updated in
    place), y."""
    from tvm import tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    b_, t_, i_, s_ = spec.batch, spec.steps, spec.inputs, spec.units
    macs = b_ * t_ * 4 * s_ * (i_ + s_)
    with IRBuilder() as ib, prim_func(spec.name, ["UNIDIRECTIONAL_SEQUENCE_LSTM"], macs):
        x_arg = T.arg("x", T.Buffer(spec.x_shape, "int8"))
        weights = []
        for g in range(4):
            weights.append(
                (
                    T.arg(f"w{g}", T.Buffer((s_, i_), "int8")),
                    T.arg(f"r{g}", T.Buffer((s_, s_), "int8")),
                    T.arg(f"bias{g}", T.Buffer((s_,), "int32")),
                )
            )
        table = T.arg("table", T.Buffer((256,), "int32"))
        hidden = T.arg("hidden", T.Buffer((b_, s_), "int8"))
        cell = T.arg("cell", T.Buffer((b_, s_), "int16"))
        y_arg = T.arg("y", T.Buffer(spec.y_shape, "int8"))
        with root_block():
            x, y = flat_view(x_arg, spec.x_shape), flat_view(y_arg, spec.y_shape)
            acc = accumulators(2)
            gates = T.sblock_alloc_buffer((4, s_), "int16")
            with T.serial(0, b_) as b, T.serial(0, t_) as t:
                for g, (gate, (w, r, bias)) in enumerate(zip(spec.gates, weights, strict=True)):
                    with T.serial(0, s_) as s:
                        T.buffer_store(acc, bias[s], [0])
                        with T.serial(0, i_) as c:
                            T.buffer_store(
                                acc, acc[0] + i32(w[s, c]) * (i32(x[(b * t_ + t) * i_ + c]) - spec.input_zero), [0]
                            )
                        T.buffer_store(acc, 0, [1])
                        with T.serial(0, s_) as c:
                            T.buffer_store(acc, acc[1] + i32(r[s, c]) * (i32(hidden[b, c]) - spec.hidden_zero), [1])
                        from_input = clamp(
                            multiply_by_constant(local(acc[0], "int32"), *gate.input_multiplier), INT16_MIN, INT16_MAX
                        )
                        from_state = clamp(
                            multiply_by_constant(local(acc[1], "int32"), *gate.recurrent_multiplier),
                            INT16_MIN,
                            INT16_MAX,
                        )
                        summed = local(clamp(from_input + from_state, INT16_MIN, INT16_MAX), "int32")
                        active = _tanh16(summed, -12, table) if gate.tanh else _sigmoid16(summed, table)
                        T.buffer_store(gates, tirx.Cast("int16", active), [g, s])
                with T.serial(0, s_) as s:
                    kept = multiply_by_constant(
                        local(i32(gates[1, s]) * i32(cell[b, s]), "int32"), *spec.forget_multiplier
                    )
                    added = multiply_by_constant(
                        local(i32(gates[0, s]) * i32(gates[2, s]), "int32"), *spec.input_multiplier
                    )
                    updated = clamp(
                        clamp(kept, INT16_MIN, INT16_MAX) + clamp(added, INT16_MIN, INT16_MAX), INT16_MIN, INT16_MAX
                    )
                    if spec.cell_clip:
                        updated = clamp(updated, -spec.cell_clip, spec.cell_clip)
                    T.buffer_store(cell, tirx.Cast("int16", updated), [b, s])
                with T.serial(0, s_) as s:
                    squashed = local(_tanh16(i32(cell[b, s]), spec.cell_power, table), "int32")
                    product = local(squashed * i32(gates[3, s]), "int32")
                    value = clamp(multiply_by_constant(product, *spec.hidden_multiplier) + spec.hidden_zero, -128, 127)
                    T.buffer_store(hidden, tirx.Cast("int8", value), [b, s])
                    T.buffer_store(y, hidden[b, s], [(b * t_ + t) * s_ + s])
    return ib.get()
