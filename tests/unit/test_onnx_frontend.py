"""Frontend onnx: I/O with the quantization of the (De)QuantizeLinear beside them, operators,
MACs, liveness; onnxruntime as the oracle; bad files named."""

from __future__ import annotations

import numpy as np
import pytest
from onnx_builder import float_cnn, int8_io_relu, qdq_cnn, symbolic_batch

from mlonmcu.errors import ModelError
from mlonmcu.models.model import find_model, frontend_name, list_models
from mlonmcu.models.onnx_frontend import OnnxFrontend
from mlonmcu.models.reference import ONNXRUNTIME, reference_outputs


def test_a_float_model_is_described(tmp_path):
    info = OnnxFrontend().describe(float_cnn(tmp_path))
    assert info.frontend == "onnx"
    assert [(t.name, t.shape, t.dtype, t.scale) for t in info.inputs] == [("x", (1, 3, 8, 8), "float32", ())]
    assert [(t.name, t.shape, t.dtype) for t in info.outputs] == [("y", (1, 5), "float32")]
    assert info.operators == ("Conv", "Relu", "AveragePool", "Flatten", "Gemm")
    assert info.macs == 4 * 4 * 4 * 27 + 5 * 16
    assert info.activations == (3 * 8 * 8 + 4 * 4 * 4) * 4  # the conv's input and output, float32


def test_int8_io_carries_the_scales_of_its_quantizers(tmp_path):
    info = OnnxFrontend().describe(int8_io_relu(tmp_path))
    (x,), (y,) = info.inputs, info.outputs
    assert (x.dtype, x.scale, x.zero_point) == ("int8", (pytest.approx(0.05),), (-3,))
    assert (y.dtype, y.scale, y.zero_point) == ("int8", (pytest.approx(0.025),), (-128,))
    assert info.activations == 0  # a QDQ graph's float tensors bound nothing
    qdq = OnnxFrontend().describe(qdq_cnn(tmp_path))
    assert qdq.macs == 1808 and "QuantizeLinear" in qdq.operators and qdq.inputs[0].dtype == "float32"


def test_onnx_files_are_models_like_tflite_files(tmp_path):
    path = float_cnn(tmp_path)
    assert frontend_name(path) == "onnx" and frontend_name(path.with_suffix(".tflite")) == "tflite"
    assert find_model("cnn_onnx", [tmp_path]).path == path.resolve()
    assert [m.name for m in list_models([tmp_path])] == ["cnn_onnx"]


def test_bad_files_are_named(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage")
    with pytest.raises(ModelError, match=r"bad\.onnx is not an ONNX model"):
        OnnxFrontend().describe(bad)
    with pytest.raises(ModelError, match=r"x has a symbolic shape \[N, 4\].*fixed shapes"):
        OnnxFrontend().describe(symbolic_batch(tmp_path))


def test_onnxruntime_computes_the_references(tmp_path):
    x = np.arange(-128, 64, dtype=np.int8).reshape(1, 3, 8, 8)
    outputs, oracle = reference_outputs(int8_io_relu(tmp_path), [[x]])
    assert oracle == ONNXRUNTIME
    real = np.maximum((x.astype(np.float64) + 3) * 0.05, 0)
    expected = np.clip(np.rint(real / 0.025) - 128, -128, 127).astype(np.int8)
    assert np.array_equal(outputs[0][0], expected)


def test_frontends_are_chosen_by_suffix_or_asked_for(tmp_path):
    from helpers import make_home

    from mlonmcu.environment import Environment
    from mlonmcu.errors import ConfigError
    from mlonmcu.session.plan import FlowRequest, plan

    env = Environment.load(make_home(tmp_path / "home"))
    onnx_model = str(float_cnn(tmp_path))
    specs = plan(env, FlowRequest(["kws_dscnn", onnx_model], ["tvmaot"], ["spike"]), 0, tmp_path / "runs")
    assert [s.frontend for s in specs] == ["tflite", "onnx"]
    both = FlowRequest(["kws_dscnn"], ["tvmaot"], ["spike"], frontends=["tflite", "onnx"])  # onnx converts it
    assert [s.frontend for s in plan(env, both, 0, tmp_path / "runs")] == ["tflite", "onnx"]
    with pytest.raises(ConfigError, match=r"frontend tflite takes \.tflite; model cnn_onnx is cnn_onnx\.onnx"):
        plan(env, FlowRequest([onnx_model], ["tvmaot"], ["spike"], frontends=["tflite"]), 0, tmp_path / "runs")
    old_session = {"models": ["kws_dscnn"], "frontend": "tflite", "until": "RUN"}
    assert FlowRequest.from_dict(old_session).frontends == ["tflite"]
