"""Integer SVDF and UNIDIRECTIONAL_SEQUENCE_LSTM: TFLite Micro's reference arithmetic, their
state kept between inferences.

The state is a model *variable*: a `main` parameter that is not a model input (plan.STATE_ATTR)
and that the kernel updates in place, as TFLM's kernel does; the AOT driver keeps it outside the
arena and sets it to the tensor's fill byte at model init (TFLM: the zero point for int8, else 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from mlonmcu.backends.tvm.integer.conv import pack_channels
from mlonmcu.backends.tvm.integer.dense import pack_dense_weights
from mlonmcu.backends.tvm.integer.fixedpoint import multiply_by_constant, quantize_multiplier
from mlonmcu.backends.tvm.integer.lut16 import SIGMOID_TABLE, log2_rounded, sigmoid16, tanh16
from mlonmcu.backends.tvm.integer.patterns import ACTIVATION_NAMES, INT16_MAX, INT16_MIN, LIMITS, Lowered
from mlonmcu.backends.tvm.integer.tir import accumulators, clamp, flat_view, i32, local, prim_func, root_block
from mlonmcu.backends.tvm.integer.uncovered import NotCovered
from mlonmcu.models.tflite_graph import Operator

if TYPE_CHECKING:
    from mlonmcu.backends.tvm.integer.direct import DirectBuilder

GATE_SCALE = 2.0**-12  # TFLM's LSTM gate pre-activations: int16 in Q3.12
GATE_OUTPUT_SCALE = 2.0**-15  # and the gates after sigmoid/tanh: Q0.15


def lstm_tanh_scaling(power: int) -> tuple[int, int]:
    """TFLM's LSTM Tanh of an int16 value with scale 2^power: its (multiplier, shift)."""
    left_shift = 15 + power - 3
    return (3, -left_shift) if left_shift < 0 else (3 << left_shift, 0)


GATE_SIGMOID = (3, 0)  # TFLM's LSTM Sigmoid: Logistic(input_multiplier 0, shift 0) of Q3.12
GATE_TANH = lstm_tanh_scaling(-12)


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
    block: int = 8  # B: filters per register block of the feature FC

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
    its zero point, wrapping to the state type as TFLM's store does; the feature FC register-
    blocked over B filters, weights packed [F/B][I][B]), then per unit: bias + the rank's
    filters' dot products with the time weights, requantized to int8. TFLM's integer SVDF
    applies no fused activation; neither does this."""
    from tvm import tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    b_, i_, f_, m_, u_ = spec.batch, spec.inputs, spec.filters, spec.memory, spec.units
    dtype = spec.state_dtype
    low, high = LIMITS[dtype]
    macs = b_ * f_ * (i_ + m_)
    block = spec.block
    blocks = -(-f_ // block)
    with IRBuilder() as ib, prim_func(spec.name, ["SVDF"], macs):
        x = T.arg("x", T.Buffer((b_, i_), "int8"))
        feature = T.arg("feature", T.Buffer((blocks, i_, block), "int8"))
        time = T.arg("time", T.Buffer((f_, m_), dtype))
        bias = T.arg("bias", T.Buffer((u_,), "int32")) if spec.bias else None
        state_arg = T.arg("state", T.Buffer((b_, f_ * m_), dtype))
        y = T.arg("y", T.Buffer((b_, u_), "int8"))
        with root_block():
            state = flat_view(state_arg, (b_, f_ * m_), dtype)
            acc = accumulators(block)
            with T.serial(0, b_ * f_ * m_ - 1) as i:
                T.buffer_store(state, state[i + 1], [i])
            with T.serial(0, b_) as b, T.serial(0, blocks) as fb:
                for j in range(block):
                    T.buffer_store(acc, 0, [j])
                with T.serial(0, i_) as c:
                    xv = T.bind(i32(x[b, c]) - spec.input_zero)
                    for j in range(block):
                        T.buffer_store(acc, acc[j] + xv * i32(feature[fb, c, j]), [j])
                for j in range(block):
                    f = fb * block + j
                    value = clamp(multiply_by_constant(local(acc[j], "int32"), *spec.feature), low, high)
                    at = [(b * f_ + f) * m_ + m_ - 1]
                    if f_ % block:
                        with T.If(f < f_), T.Then():
                            T.buffer_store(state, tirx.Cast(dtype, value + spec.state_zero), at)
                    else:
                        T.buffer_store(state, tirx.Cast(dtype, value + spec.state_zero), at)
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
    block: int = 8  # B: units per register block of the gate FCs


def fc_multiplier(input_scale: float, weight_scale: float, output_scale: float) -> tuple[int, int]:
    """TFLM's FULLY_CONNECTED rescaling: the scales' product in float32, divided in double."""
    return quantize_multiplier(float(np.float32(input_scale) * np.float32(weight_scale)) / output_scale)


def mul_multiplier(first: float, second: float, output_scale: float) -> tuple[int, int]:
    """TFLM's LSTM inter-gate MUL rescaling, all in double."""
    return quantize_multiplier(float(first) * float(second) / float(output_scale))


def cell_parameters(cell_scale: float, cell_clip: float) -> tuple[int, int]:
    """TFLM's CreateLstmCellStateInfo: the scale's (rounded) power of two and the clip in int16."""
    power, _ = log2_rounded(cell_scale)
    clip = int(min(max(float(cell_clip) / float(np.float32(cell_scale)), -32768.0), 32767.0)) if cell_clip > 0 else 0
    return power, clip


def lstm_kernel(spec: LstmSpec) -> Any:
    """Per batch and time step, as TFLM's LstmStep: the four gates from the previous hidden state
    (int8 FCs into int16 Q3.12, saturating add, sigmoid or tanh into Q0.15), then the cell
    (forget·cell + input·cell gate, saturated, clipped) and the hidden state (output gate ·
    tanh(cell) into int8), which is also the step's output. The gate FCs are register-blocked like
    dense (B units at once, weights packed [S/B][K][B], so each input load feeds B MACs); the
    input part is requantized before the recurrent part accumulates, so B accumulators suffice.
    Arguments: x, per gate its packed input and recurrent weights and padded bias, the table, the
    hidden and cell states (updated in place), y."""
    from tvm import tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    b_, t_, i_, s_ = spec.batch, spec.steps, spec.inputs, spec.units
    block = spec.block
    blocks = -(-s_ // block)
    macs = b_ * t_ * 4 * s_ * (i_ + s_)
    cell_tanh = lstm_tanh_scaling(spec.cell_power)
    with IRBuilder() as ib, prim_func(spec.name, ["UNIDIRECTIONAL_SEQUENCE_LSTM"], macs):
        x_arg = T.arg("x", T.Buffer(spec.x_shape, "int8"))
        weights = []
        for g in range(4):
            weights.append(
                (
                    T.arg(f"w{g}", T.Buffer((blocks, i_, block), "int8")),
                    T.arg(f"r{g}", T.Buffer((blocks, s_, block), "int8")),
                    T.arg(f"bias{g}", T.Buffer((blocks * block,), "int32")),
                )
            )
        table = T.arg("table", T.Buffer((256,), "int32"))
        hidden = T.arg("hidden", T.Buffer((b_, s_), "int8"))
        cell = T.arg("cell", T.Buffer((b_, s_), "int16"))
        y_arg = T.arg("y", T.Buffer(spec.y_shape, "int8"))
        with root_block():
            x, y = flat_view(x_arg, spec.x_shape), flat_view(y_arg, spec.y_shape)
            acc = accumulators(block)
            gates = T.sblock_alloc_buffer((4, blocks * block), "int16")
            with T.serial(0, b_) as b, T.serial(0, t_) as t:
                for g, (gate, (w, r, bias)) in enumerate(zip(spec.gates, weights, strict=True)):
                    with T.serial(0, blocks) as ob:
                        for j in range(block):
                            T.buffer_store(acc, bias[ob * block + j], [j])
                        with T.serial(0, i_) as c:
                            xv = T.bind(i32(x[(b * t_ + t) * i_ + c]) - spec.input_zero)
                            for j in range(block):
                                T.buffer_store(acc, acc[j] + xv * i32(w[ob, c, j]), [j])
                        for j in range(block):
                            part = multiply_by_constant(local(acc[j], "int32"), *gate.input_multiplier)
                            T.buffer_store(
                                gates, tirx.Cast("int16", clamp(part, INT16_MIN, INT16_MAX)), [g, ob * block + j]
                            )
                            T.buffer_store(acc, 0, [j])
                        with T.serial(0, s_) as c:
                            hv = T.bind(i32(hidden[b, c]) - spec.hidden_zero)
                            for j in range(block):
                                T.buffer_store(acc, acc[j] + hv * i32(r[ob, c, j]), [j])
                        for j in range(block):
                            part = clamp(
                                multiply_by_constant(local(acc[j], "int32"), *gate.recurrent_multiplier),
                                INT16_MIN,
                                INT16_MAX,
                            )
                            summed = clamp(i32(gates[g, ob * block + j]) + part, INT16_MIN, INT16_MAX)
                            T.buffer_store(gates, tirx.Cast("int16", summed), [g, ob * block + j])
                    with T.serial(0, s_) as s:
                        summed = local(i32(gates[g, s]), "int32")
                        active = (
                            tanh16(summed, GATE_TANH, table) if gate.tanh else sigmoid16(summed, GATE_SIGMOID, table)
                        )
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
                    squashed = local(tanh16(i32(cell[b, s]), cell_tanh, table), "int32")
                    product = local(squashed * i32(gates[3, s]), "int32")
                    value = clamp(multiply_by_constant(product, *spec.hidden_multiplier) + spec.hidden_zero, -128, 127)
                    T.buffer_store(hidden, tirx.Cast("int8", value), [b, s])
                    T.buffer_store(y, hidden[b, s], [(b * t_ + t) * s_ + s])
    return ib.get()


# -- the operators, built from the flatbuffer (DirectBuilder handlers) ------------------------


def svdf(b: DirectBuilder, op: Operator) -> Any:
    """int8 SVDF with an int8 or int16 state (TFLM's integer kernel)."""
    x_tensor, x = b.activation(op, 0)
    feature = b.int8(op, b.graph.input(op, 1), "feature weights")
    time = b.integer(op, b.graph.input(op, 2), "time weights", ("int8", "int16"))
    state = b.integer(op, b.graph.input(op, 4), "state", ("int8", "int16"))
    out_tensor = b.int8(op, b.graph.output(op), "output")
    bias = b.graph.input(op, 3)
    if feature.data is None or time.data is None or (bias is not None and bias.data is None):
        raise NotCovered(op, "weights or bias that are not constant")
    if not state.variable or state.dtype != time.dtype:
        raise NotCovered(op, f"a state that is not a variable of the time weights' type ({state.dtype})")
    if np.any(feature.zero_point != 0) or np.any(time.zero_point != 0):
        raise NotCovered(op, "weights with non-zero zero points")
    (batch, inputs), (filters, memory) = x_tensor.shape, time.shape
    rank = int(op.options.get("Rank", 1))
    feature_scale, output_scale = svdf_multipliers(
        x_tensor.scalar_scale, feature.scalar_scale, state.scalar_scale, time.scalar_scale, out_tensor.scalar_scale
    )
    spec = SvdfSpec(
        name=b.name("svdf"),
        batch=batch,
        inputs=inputs,
        filters=filters,
        rank=rank,
        memory=memory,
        state_dtype=state.dtype,
        input_zero=x_tensor.scalar_zero_point,
        state_zero=state.scalar_zero_point,
        output_zero=out_tensor.scalar_zero_point,
        feature=feature_scale,
        output=output_scale,
        bias=bias is not None,
        block=b.schedule.dense_block,
    )
    packed = pack_dense_weights(feature.data, spec.block).reshape(-1, inputs, spec.block)
    args = [x.value, packed, time.data, *([bias.data] if bias is not None else []), b.values[state.index]]
    return b.call(Lowered(None, op.op, svdf_kernel(spec), args, out_tensor.shape))


def lstm(b: DirectBuilder, op: Operator) -> Any:
    """int8 LSTM with an int16 cell state, no peepholes, projection or layer norm (TFLM's integer
    kernel takes no other)."""
    x_tensor, x = b.activation(op, 0)
    out_tensor = b.int8(op, b.graph.output(op), "output")
    hidden = b.int8(op, b.graph.input(op, 18), "hidden state")
    cell = b.integer(op, b.graph.input(op, 19), "cell state", ("int16",))
    if not (hidden.variable and cell.variable):
        raise NotCovered(op, "hidden or cell state that is not a variable")
    absent = [i for i in (9, 10, 11, 16, 17, 20, 21, 22, 23) if b.graph.input(op, i) is not None]
    if absent:
        raise NotCovered(op, "peephole, projection or layer norm tensors")
    activation = int(op.options.get("FusedActivationFunction", 4))
    if activation != 4:  # the cell gate's: the schema has no SIGMOID, TFLM's kernel takes only TANH
        raise NotCovered(op, f"cell gate activation {ACTIVATION_NAMES.get(activation, activation)}")
    time_major = bool(op.options.get("TimeMajor", False))
    batch, steps, inputs = x_tensor.shape
    if time_major and steps > 1:
        raise NotCovered(op, "time-major input of several batches")
    if time_major:  # one batch: the same memory layout as batch-major
        batch, steps = steps, batch
    units = hidden.shape[-1]
    gates = []
    for position, (w_at, r_at, b_at) in enumerate(((1, 5, 12), (2, 6, 13), (3, 7, 14), (4, 8, 15))):
        weights = [b.int8(op, b.graph.input(op, i), f"gate weights {i}") for i in (w_at, r_at)]
        bias = b.integer(op, b.graph.input(op, b_at), "gate bias", ("int32",))
        matrices = [w.data for w in weights]
        if any(not w.per_tensor or np.any(w.zero_point != 0) for w in weights):
            raise NotCovered(op, "gate weights that are not per-tensor and symmetric")
        if matrices[0] is None or matrices[1] is None or bias.data is None:
            raise NotCovered(op, "gate weights or biases that are not constant")
        gates.append(
            Gate(
                input_weights=matrices[0],
                recurrent_weights=matrices[1],
                bias=bias.data,
                input_multiplier=fc_multiplier(x_tensor.scalar_scale, weights[0].scalar_scale, GATE_SCALE),
                recurrent_multiplier=fc_multiplier(hidden.scalar_scale, weights[1].scalar_scale, GATE_SCALE),
                tanh=position == 2,
            )
        )
    cell_scale = float(np.float32(cell.scalar_scale))
    power, clip = cell_parameters(cell_scale, float(op.options.get("CellClip", 0.0)))
    gate_out = GATE_OUTPUT_SCALE
    spec = LstmSpec(
        name=b.name("lstm"),
        x_shape=x_tensor.shape,
        y_shape=out_tensor.shape,
        batch=batch,
        steps=steps,
        inputs=inputs,
        units=units,
        input_zero=x_tensor.scalar_zero_point,
        hidden_zero=hidden.scalar_zero_point,
        gates=(gates[0], gates[1], gates[2], gates[3]),
        forget_multiplier=mul_multiplier(gate_out, cell_scale, cell_scale),
        input_multiplier=mul_multiplier(gate_out, gate_out, cell_scale),
        hidden_multiplier=mul_multiplier(gate_out, gate_out, float(np.float32(hidden.scalar_scale))),
        cell_power=power,
        cell_clip=clip,
        block=b.schedule.dense_block,
    )
    args: list[Any] = [x.value]
    blocks = -(-units // spec.block)
    for gate in gates:
        args += [
            pack_dense_weights(gate.input_weights, spec.block).reshape(blocks, inputs, spec.block),
            pack_dense_weights(gate.recurrent_weights, spec.block).reshape(blocks, units, spec.block),
            pack_channels(gate.bias, spec.block),
        ]
    args += [np.array(SIGMOID_TABLE, np.int32), b.values[hidden.index], b.values[cell.index]]
    return b.call(Lowered(None, op.op, lstm_kernel(spec), args, out_tensor.shape))


HANDLERS = {"SVDF": svdf, "UNIDIRECTIONAL_SEQUENCE_LSTM": lstm}
