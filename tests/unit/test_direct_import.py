"""The direct int8 path: flatbuffer facts, the kernels it builds, and what it names when it cannot."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

from mlonmcu.backends.tvm.integer.direct import build_direct, output_of, same_padding
from mlonmcu.backends.tvm.integer.lowering import lower_integer
from mlonmcu.backends.tvm.integer.uncovered import NotCovered
from mlonmcu.models.tflite_graph import Operator, read_graph

BUNDLED = Path(__file__).resolve().parents[2] / "resources" / "models"


def bundled(name: str) -> Path:
    return BUNDLED / name / f"{name}.tflite"


def test_the_reader_sees_what_tflite_kernels_read():
    graph = read_graph(bundled("kws_dscnn"))
    assert [op.op for op in graph.operators][:3] == ["CONV_2D", "DEPTHWISE_CONV_2D", "CONV_2D"]
    conv = graph.operators[0]
    assert conv.options["StrideH"] == 2 and conv.options["Padding"] == 0  # SAME
    depthwise = graph.operators[1]
    weights = graph.input(depthwise, 1)
    assert weights is not None and weights.data is not None
    # per-channel depthwise scales live on axis 3 of [1, KH, KW, C] (the axis TVM's importer rejects)
    assert weights.shape == (1, 3, 3, 32) and weights.axis == 3 and weights.scale.size == 32
    assert weights.data.dtype == np.int8 and weights.data.shape == weights.shape
    bias = graph.input(depthwise, 2)
    assert bias is not None and bias.data is not None and bias.data.dtype == np.int32
    dense = next(op for op in graph.operators if op.op == "FULLY_CONNECTED")
    assert dense.options["KeepNumDims"] is True
    assert graph.tensors[graph.inputs[0]].dtype == "int8"


def test_activation_ranges_and_same_padding_follow_tflite():
    graph = read_graph(bundled("kws_dscnn"))
    conv = graph.operators[0]
    out = graph.output(conv)
    relu = output_of(conv, out)
    assert (relu.act_min, relu.act_max) == (max(-128, out.scalar_zero_point), 127)
    relu6 = output_of(dataclasses.replace(conv, options={"FusedActivationFunction": 3}), out)
    assert relu6.act_max == min(127, out.scalar_zero_point + round(6 / out.scalar_scale))
    with pytest.raises(NotCovered, match="fused activation TANH"):
        output_of(dataclasses.replace(conv, options={"FusedActivationFunction": 4}), out)
    # TFLite puts the odd padding row after: 49 rows, kernel 10, stride 2 → 25 rows, 9 = 4 + 5
    assert same_padding(49, 10, 2, 1, 25) == (4, 5)
    assert same_padding(5, 3, 1, 1, 5) == (1, 1)


def _c_source(mod):
    import tvm
    from tvm import tirx

    from mlonmcu.backends.tvm.codegen import lower_kernels
    from mlonmcu.backends.tvm.pipeline import lower_relax
    from mlonmcu.backends.tvm.plan import read_plan
    from mlonmcu.backends.tvm.schedule import schedule_for_mcu

    lowered = lower_relax(mod, tvm.target.Target({"kind": "c"}))
    prims = {gv.name_hint: f for gv, f in lowered.functions.items() if isinstance(f, tirx.PrimFunc)}
    source = lower_kernels({name: schedule_for_mcu(f) for name, f in prims.items()}, tvm.target.Target({"kind": "c"}))
    return re.sub(r"\blv\d+", "lv", source), read_plan(lowered["main"])


def test_direct_builds_the_kernels_the_qdq_matcher_builds():
    from mlonmcu.backends.tvm.importer import import_tflite

    path = bundled("cnn_small")  # conv, depthwise, max pool, add, concatenation, mean, dense, softmax
    direct, report = build_direct(read_graph(path))
    matched, _ = lower_integer(import_tflite(path))
    assert report.lowered["MAX_POOL_2D"] == 1 and report.lowered["CONCATENATION"] == 1
    (direct_c, direct_plan), (matched_c, matched_plan) = _c_source(direct), _c_source(matched)
    assert direct_c == matched_c
    assert sorted(c.tobytes() for c in direct_plan.constants) == sorted(c.tobytes() for c in matched_plan.constants)


def test_dense_keeps_a_4d_input_without_a_copy():
    """kws_dscnn's FULLY_CONNECTED reads the [1, 1, 1, 32] pool output as it is (keep_num_dims)."""
    from mlonmcu.backends.tvm.importer import import_tflite

    path = bundled("kws_dscnn")
    direct, _ = build_direct(read_graph(path))
    matched, _ = lower_integer(import_tflite(path))
    assert len(_c_source(direct)[1].calls) == len(_c_source(matched)[1].calls) - 1


def test_an_operator_without_a_kernel_is_named():
    graph = read_graph(bundled("kws_dscnn"))
    graph.operators[5] = Operator(5, "CUSTOM:Mystery", graph.operators[5].inputs, graph.operators[5].outputs)
    with pytest.raises(NotCovered, match=r"CUSTOM:Mystery \(operator 5\): no integer kernel"):
        build_direct(graph)


def test_a_float_model_is_not_taken_for_int8():
    with pytest.raises(NotCovered, match="is float32"):
        build_direct(read_graph(bundled("kws_dscnn_fp32")))


def test_importer_direct_fails_the_build_naming_the_operator(tmp_path):
    from mlonmcu.backends.tvm.backend import TvmAotBackend
    from mlonmcu.errors import StageError

    graph_path = bundled("kws_dscnn")
    backend = TvmAotBackend({"tvmaot.importer": "direct"}, {}, tmp_path)
    _, float_ops, importer = backend._import(graph_path)
    assert (float_ops, importer) == ("none", "direct")
    with pytest.raises(StageError, match=r"CUSTOM:Mystery \(operator 0\).*tvmaot\.importer=relax"):
        backend._import(graph_path, _with_custom_op(read_graph(graph_path)))


def _with_custom_op(graph):
    graph.operators[0] = Operator(0, "CUSTOM:Mystery", graph.operators[0].inputs, graph.operators[0].outputs)
    return graph


def _recurrent_graph(tmp_path: Path, name: str, model: bytes):
    from tflite_builder import write

    return read_graph(write(tmp_path, name, model))


def test_recurrent_state_is_a_variable_the_driver_keeps(tmp_path):
    """SVDF's state: not a model input, outside the arena, set to its zero point at init (TFLM's
    ResetVariableTensors for int8; 0 for int16) and updated in place by the kernel."""
    from tflite_builder import svdf_model

    from mlonmcu.backends.tvm.emitter import AotEmitter

    for dtype, fill in (("int8", 4), ("int16", 0)):
        graph = _recurrent_graph(tmp_path, f"svdf_{dtype}", svdf_model(batch=2, rank=2, state_dtype=dtype))
        assert [t.variable for t in graph.tensors].count(True) == 1
        mod, report = build_direct(graph)
        assert report.lowered["SVDF"] == 1
        source, plan = _c_source(mod)
        assert len(plan.inputs) == 1 and plan.inputs[0].shape == (2, 16)
        [(state, state_fill)] = plan.states
        assert (state.region, state.dtype, state.shape, state_fill) == ("state", dtype, (2, 12 * 5), fill)
        out = tmp_path / f"c_{dtype}"
        out.mkdir()
        facts = AotEmitter("svdf", plan, source).emit(out)
        driver = (out / "model.c").read_text()
        assert f"memset(mlonmcu_state_0, {fill}, sizeof(mlonmcu_state_0));" in driver
        assert "mlonmcu_state_0" in driver.split("int mlonmcu_model_run(void)")[1]  # the kernel gets it
        assert facts["state_bytes"] == state.nbytes and facts["arena_size"] < facts["state_bytes"] + 64


def test_lstm_takes_only_what_tflm_integer_kernel_takes(tmp_path):
    from tflite_builder import lstm_model

    from mlonmcu.backends.tvm.integer.recurrent import cell_parameters

    graph = _recurrent_graph(tmp_path, "lstm", lstm_model(batch=2, steps=3, cell_clip=3.0))
    _, report = build_direct(graph)
    assert report.lowered["UNIDIRECTIONAL_SEQUENCE_LSTM"] == 1
    # the cell state's scale 2^-11 and a clip of 3.0 in its units, truncated like TFLM's int16 cast
    assert cell_parameters(2.0**-11, 3.0) == (-11, 6144)
    assert cell_parameters(2.0**-12, 10.0) == (-12, 32767)
    op = graph.operators[0]
    peephole = dataclasses.replace(op, inputs=(*op.inputs[:9], op.inputs[1], *op.inputs[10:]))
    graph.operators[0] = peephole
    with pytest.raises(NotCovered, match="peephole, projection or layer norm"):
        build_direct(graph)
    graph.operators[0] = dataclasses.replace(op, options={**op.options, "FusedActivationFunction": 1})
    with pytest.raises(NotCovered, match="cell gate activation RELU"):
        build_direct(graph)


def test_stale_converter_shapes_are_settled_as_tflite_prepares_them(tmp_path):
    """SPACE_TO_BATCH_ND's output batch as the converter writes it (1) and as it is (2)."""
    from tflite_builder import Op, build, const, q, write

    from mlonmcu.backends.tvm.integer.shapes import settle_shapes

    blocks, pads = const(np.array([2], np.int32)), const(np.array([[1, 1]], np.int32))
    tensors = [q((1, 10, 4), 0.04, -7), blocks, pads, q((1, 6, 4), 0.04, -7), q((1, 6, 4), 0.04, -7)]
    tensors.append(q((1, 10, 4), 0.04, -7))
    ops = [Op("SPACE_TO_BATCH_ND", [0, 1, 2], [3]), Op("RELU", [3], [4]), Op("BATCH_TO_SPACE_ND", [4, 1, 2], [5])]
    graph = read_graph(write(tmp_path, "stale", build(tensors, ops, [0], [5])))
    settled = settle_shapes(graph)
    assert [settled.tensors[i].shape for i in (3, 4, 5)] == [(2, 6, 4), (2, 6, 4), (1, 10, 4)]
    untouched = read_graph(bundled("kws_dscnn"))
    assert settle_shapes(untouched) is untouched  # without SPACE_TO_BATCH_ND nothing changes
    graph.operators[1] = dataclasses.replace(graph.operators[1], op="SOFTMAX")
    with pytest.raises(NotCovered, match="static shape the converter left stale"):
        settle_shapes(graph)
