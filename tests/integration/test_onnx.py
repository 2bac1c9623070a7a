"""ONNX models through tvmaot on Spike, an Arm board and the host, judged by onnxruntime."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from onnx_builder import custom_op, float_cnn, int8_io, int8_io_relu, qdq_cnn

pytestmark = pytest.mark.integration


def report(home: Path) -> pd.DataFrame:
    return pd.read_csv(home / "sessions" / "latest" / "report.csv")


def test_onnx_models_run_on_tvmaot_and_validate_against_onnxruntime(integration_home, mlonmcu, tmp_path):
    """fp32 and QDQ (float and int8 I/O) models on Spike, the Cortex-M4 board and the host; tflmi
    and a file that is not ONNX fail by name, the session goes on."""
    qdq = qdq_cnn(tmp_path)
    models = [float_cnn(tmp_path), qdq, int8_io(qdq, tmp_path, "cnn_onnx_int8"), int8_io_relu(tmp_path)]
    bad = tmp_path / "broken" / "broken.onnx"
    bad.parent.mkdir()
    bad.write_bytes(b"\x08\x07not a protobuf")
    targets = ["-t", "spike", "-t", "mps2_an386", "-t", "host_x86"]
    args = ["flow", "run", *models, bad, custom_op(tmp_path), "-b", "tvmaot", "-b", "tflmi", *targets, "-f", "validate"]
    code, output = mlonmcu(*args, "-c", "validate.samples=3", "-H", integration_home)
    assert code == 1, output  # the tflmi rows and the broken file fail
    frame = report(integration_home)
    assert (frame.Frontend == "onnx").all()
    ran = frame[(frame.Backend == "tvmaot") & ~frame.Model.isin(["broken", "custom_op"])]
    assert len(ran) == 12 and not ran.Failing.any(), ran[["Model", "Target", "Reason"]]
    assert (ran.Oracle == "onnxruntime").all()
    exact = ran[ran.Model != "cnn_onnx_qdq"]
    assert (exact.Validation == "pass").all(), exact[["Model", "Target", "Validation Detail"]]
    by_model = ran.set_index(["Model", "Target"])
    assert by_model.loc[("cnn_onnx", "spike"), "MACs"] == 1808
    for model in ("cnn_onnx_int8", "relu_int8_io"):  # int8 I/O: integer code throughout, equal to onnxruntime
        assert (by_model.loc[model, "Float Ops"] == "none").all() and (by_model.loc[model, "Max Abs Error"] <= 1).all()
    # float I/O: only the input's quantize and the output's dequantize stay float; TFLite's
    # requantization rounds a product now and then to the other integer than onnxruntime's
    qdq = by_model.loc["cnn_onnx_qdq"]
    assert (qdq["Float Ops"] == "dequantize×1, quantize×1").all() and (qdq["Max Abs Error"] < 0.05).all()
    spike = by_model.xs("spike", level="Target")["Run Instructions"]
    assert spike["cnn_onnx_int8"] * 5 < spike["cnn_onnx_qdq"] < spike["cnn_onnx"]  # no soft-float kernels
    tflm = frame[(frame.Backend == "tflmi") & (frame.Model != "broken")]
    custom = frame[(frame.Backend == "tvmaot") & (frame.Model == "custom_op")]
    assert custom.Reason.str.contains("tvmaot: TVM's ONNX importer cannot import custom_op.onnx").all()
    assert custom.Reason.str.contains("MyFancyOp").all()
    assert tflm.Failing.all() and tflm.Reason.str.contains("tflmi takes tflite models").all()
    broken = frame[frame.Model == "broken"]
    assert broken.Reason.str.contains("broken.onnx is not an ONNX model").all()


def test_a_tflite_model_converted_to_onnx_computes_what_the_original_does(integration_home, mlonmcu):
    """-F tflite -F onnx: kws_dscnn as it is and converted by tf2onnx once, at LOAD (cached like
    every stage): tvmaot's integer code for the ONNX graph computes what it computes for the
    flatbuffer, bit for bit. onnxruntime, the ONNX row's oracle, requantizes in float32 and may
    disagree with both by an LSB here (on resnet by up to 73: docs/onnx.md)."""
    import numpy as np
    import yaml

    from mlonmcu.environment import Environment
    from mlonmcu.setup import installer

    _, missing = installer.check(Environment.load(integration_home), ["tf2onnx"])
    if missing:
        pytest.skip("tf2onnx is not set up: `mlonmcu setup tf2onnx` (scripts/test.sh does)")
    args = ["flow", "run", "kws_dscnn", "-F", "tflite", "-F", "onnx", "-b", "tvmaot", "-t", "spike", "-f", "validate"]
    code, output = mlonmcu(*args, "-H", integration_home)
    assert code in (0, 1), output
    assert "Frontend" in output  # the two rows differ only in it: the table shows it
    frame = report(integration_home).set_index("Frontend")
    assert not frame.Failing.any(), frame.Reason
    assert frame.loc["tflite", "Validation"] == "pass" and frame.loc["tflite", "Oracle"] == "litert"
    assert frame.loc["onnx", "Oracle"] == "onnxruntime" and frame.loc["onnx", "Float Ops"] == "none"
    runs = integration_home / "sessions" / "latest" / "runs"
    got = {f: np.load(runs / str(int(frame.loc[f, "Run"])) / "run" / "outputs.npz") for f in ("tflite", "onnx")}
    assert all(np.array_equal(got["tflite"][k], got["onnx"][k]) for k in got["tflite"].files)
    instructions = frame["Run Instructions"]
    assert abs(instructions["onnx"] / instructions["tflite"] - 1) < 0.02
    onnx_run = runs / str(int(frame.loc["onnx", "Run"]))
    assert (onnx_run / "load" / "kws_dscnn.onnx").is_file()
    assert yaml.safe_load((onnx_run / "run.yml").read_text())["components"]["tf2onnx"]["version"].startswith(
        "tf2onnx=="
    )
    code, output = mlonmcu(*args, "-H", integration_home)
    assert code in (0, 1), output
    assert report(integration_home).set_index("Frontend").loc["onnx", "Cached Stages"].startswith("load")
