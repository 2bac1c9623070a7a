"""Float UNIDIRECTIONAL_SEQUENCE_LSTM for TVM's importer, its state kept between inferences.

TVM 0.27 converts only the coupled input-forget (CIFG) LSTM, and it reads the hidden and cell
states as constants: every inference starts from zeros, where TFLite and TFLite Micro carry the
state from one Invoke to the next. While the importer runs, every float LSTM becomes one TIR
kernel in TFLM's order of operations (per gate: input FC with bias, recurrent FC, their sum, the
activation; then the cell, clipped, and the hidden state), and its two states become `main`
parameters the kernel updates in place — the model variables of plan.STATE_ATTR, which the AOT
driver keeps outside the arena and zeroes at model init (TFLM's ResetVariableTensors for float).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from mlonmcu.backends.tvm.integer.tir import prim_func, root_block
from mlonmcu.backends.tvm.plan import STATE_ATTR

GATES = ("input", "forget", "cell", "output")  # TFLite's order of the weight and bias tensors
# TFLite's fused activations the LSTM cell takes: its cell-gate and hidden-state activation
ACTIVATIONS = {0: "none", 1: "relu", 3: "relu6", 4: "tanh", 6: "sigmoid"}


@dataclass(frozen=True)
class FloatLstmSpec:
    name: str
    batch: int
    steps: int
    inputs: int
    units: int
    time_major: bool
    cifg: bool  # no input gate: it is 1 - forget
    activation: str
    cell_clip: float

    @property
    def x_shape(self) -> tuple[int, int, int]:
        return (self.steps, self.batch, self.inputs) if self.time_major else (self.batch, self.steps, self.inputs)

    @property
    def y_shape(self) -> tuple[int, int, int]:
        return (self.steps, self.batch, self.units) if self.time_major else (self.batch, self.steps, self.units)


def _activate(value: Any, name: str) -> Any:
    from tvm import tirx

    zero, one = tirx.const(0.0, "float32"), tirx.const(1.0, "float32")
    if name == "tanh":
        return tirx.tanh(value)
    if name == "sigmoid":
        return one / (one + tirx.exp(-value))
    if name == "relu":
        return tirx.Max(value, zero)
    if name == "relu6":
        return tirx.Min(tirx.Max(value, zero), tirx.const(6.0, "float32"))
    return value


def lstm_kernel(spec: FloatLstmSpec) -> Any:
    """Per batch and time step, as TFLM's float LstmStep. Arguments: x, per present gate its input
    weights [S][I], recurrent weights [S][S] and bias [S], the hidden and cell states (updated in
    place), y."""
    from tvm import tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    b_, t_, i_, s_ = spec.batch, spec.steps, spec.inputs, spec.units
    gates = [g for g in range(4) if not (spec.cifg and g == 0)]
    macs = b_ * t_ * len(gates) * s_ * (i_ + s_)
    with IRBuilder() as ib, prim_func(spec.name, ["UNIDIRECTIONAL_SEQUENCE_LSTM"], macs):
        x = T.arg("x", T.Buffer(spec.x_shape, "float32"))
        weights = {
            g: (
                T.arg(f"w{g}", T.Buffer((s_, i_), "float32")),
                T.arg(f"r{g}", T.Buffer((s_, s_), "float32")),
                T.arg(f"bias{g}", T.Buffer((s_,), "float32")),
            )
            for g in gates
        }
        hidden = T.arg("hidden", T.Buffer((b_, s_), "float32"))
        cell = T.arg("cell", T.Buffer((b_, s_), "float32"))
        y = T.arg("y", T.Buffer(spec.y_shape, "float32"))
        with root_block():
            values = T.sblock_alloc_buffer((4, s_), "float32")
            acc = T.sblock_alloc_buffer((2,), "float32")
            zero = tirx.const(0.0, "float32")
            with T.serial(0, b_) as b, T.serial(0, t_) as t:
                step = (t, b) if spec.time_major else (b, t)
                for g, (w, r, bias) in weights.items():
                    with T.serial(0, s_) as s:
                        T.buffer_store(acc, zero, [0])
                        T.buffer_store(acc, zero, [1])
                        with T.serial(0, i_) as c:
                            T.buffer_store(acc, acc[0] + x[(*step, c)] * w[s, c], [0])
                        with T.serial(0, s_) as c:
                            T.buffer_store(acc, acc[1] + hidden[b, c] * r[s, c], [1])
                        summed = (acc[0] + bias[s]) + acc[1]
                        T.buffer_store(values, _activate(summed, spec.activation if g == 2 else "sigmoid"), [g, s])
                with T.serial(0, s_) as s:
                    input_gate = tirx.const(1.0, "float32") - values[1, s] if spec.cifg else values[0, s]
                    updated = values[1, s] * cell[b, s] + input_gate * values[2, s]
                    if spec.cell_clip > 0:
                        clip = tirx.const(spec.cell_clip, "float32")
                        updated = tirx.Min(tirx.Max(updated, -clip), clip)
                    T.buffer_store(cell, updated, [b, s])
                with T.serial(0, s_) as s:
                    T.buffer_store(hidden, values[3, s] * _activate(cell[b, s], spec.activation), [b, s])
                    T.buffer_store(y, hidden[b, s], [*step, s])
    return ib.get()


class _Converter:
    """The replacement of TVM's converter method; `states` collects each LSTM's two state
    variables, which become `main` parameters once the importer is done."""

    def __init__(self, original: Any):
        self.original = original
        self.states: list[Any] = []

    def __call__(self, converter: Any, op: Any) -> Any:
        import tvm
        from tflite.UnidirectionalSequenceLSTMOptions import UnidirectionalSequenceLSTMOptions
        from tvm import relax

        if converter.is_quantized(op):  # integer LSTMs take the direct path; TVM names the rest
            return self.original(converter, op)
        tensors = converter.get_input_tensors(op)
        present = [i for i, t in enumerate(tensors) if t.tensor_idx != -1]
        extras = [i for i in present if i in (9, 10, 11, 16, 17, 20, 21, 22, 23)]
        if extras:
            raise tvm.error.OpNotImplemented(
                "float UNIDIRECTIONAL_SEQUENCE_LSTM with peephole, projection or layer-norm tensors "
                f"(inputs {extras}) is not supported"
            )
        options = UnidirectionalSequenceLSTMOptions()
        table = op.BuiltinOptions()
        options.Init(table.Bytes, table.Pos)
        activation = ACTIVATIONS.get(options.FusedActivationFunction())
        if activation is None:
            raise tvm.error.OpNotImplemented(
                f"float UNIDIRECTIONAL_SEQUENCE_LSTM with fused activation {options.FusedActivationFunction()}"
            )
        x_shape = [int(v) for v in converter.get_tensor_shape(tensors[0])]
        units, inputs = (int(v) for v in converter.get_tensor_shape(tensors[2]))
        time_major = bool(options.TimeMajor())
        steps, batch = (x_shape[0], x_shape[1]) if time_major else (x_shape[1], x_shape[0])
        spec = FloatLstmSpec(
            name=f"float_lstm_{len(self.states) // 2 + 1}",
            batch=batch,
            steps=steps,
            inputs=inputs,
            units=units,
            time_major=time_major,
            cifg=1 not in present,
            activation=activation,
            cell_clip=float(options.CellClip()),
        )
        states = [
            relax.Var(f"state_{tensors[i].tensor_idx}", relax.TensorType(shape=(batch, units), dtype="float32"))
            for i in (18, 19)
        ]
        self.states += states
        args = [converter.get_tensor_expr(tensors[0])]
        for g in range(4):
            if not (spec.cifg and g == 0):
                args += [converter.get_tensor_expr(tensors[i]) for i in (1 + g, 5 + g, 12 + g)]
        gvar = converter.bb.add_func(lstm_kernel(spec), spec.name)
        return relax.call_tir(gvar, relax.Tuple([*args, *states]), relax.TensorType(spec.y_shape, "float32"))


@contextmanager
def converting() -> Iterator[_Converter]:
    """While importing: float LSTMs become our kernel; yields what `with_states` needs."""
    from tvm.relax.frontend.tflite import tflite_frontend

    owner = tflite_frontend.OperatorConverter
    original = owner.convert_unidirectional_sequence_lstm
    replacement = _Converter(original)
    owner.convert_unidirectional_sequence_lstm = lambda self, op: replacement(self, op)
    try:
        yield replacement
    finally:
        owner.convert_unidirectional_sequence_lstm = original


def with_states(mod: Any, converter: _Converter) -> Any:
    """`main` with the LSTM states as its last parameters, zero-filled model variables."""
    from tvm import relax

    if not converter.states:
        return mod
    main = mod["main"]
    params = [*main.params, *converter.states]
    func = relax.Function(params, main.body, main.ret_ty, main.is_pure, main.attrs)
    mod["main"] = func.with_attr("num_input", len(params)).with_attr(STATE_ATTR, [0] * len(converter.states))
    return mod
