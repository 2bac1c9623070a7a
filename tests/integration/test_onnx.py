"""ONNX models through tvmaot on Spike, an Arm board and the host, judged by onnxruntime."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from onnx_builder import float_cnn, int8_io_relu, qdq_cnn

pytestmark = pytest.mark.integration


def report(home: Path) -> pd.DataFrame:
    return pd.read_csv(home / "sessions" / "latest" / "report.csv")


def test_onnx_models_run_on_tvmaot_and_validate_against_onnxruntime(integration_home, mlonmcu, tmp_path):
    """fp32 and QDQ (float and int8 I/O) models on Spike, the Cortex-M4 board and the host; tflmi
    and a file that is not ONNX fail by name, the session goes on."""
    models = [float_cnn(tmp_path), qdq_cnn(tmp_path), int8_io_relu(tmp_path)]
    bad = tmp_path / "broken" / "broken.onnx"
    bad.parent.mkdir()
    bad.write_bytes(b"\x08\x07not a protobuf")
    targets = ["-t", "spike", "-t", "mps2_an386", "-t", "host_x86"]
    args = ["flow", "run", *models, bad, "-b", "tvmaot", "-b", "tflmi", *targets, "-f", "validate"]
    code, output = mlonmcu(*args, "-c", "validate.samples=3", "-H", integration_home)
    assert code == 1, output  # the tflmi rows and the broken file fail
    frame = report(integration_home)
    assert (frame.Frontend == "onnx").all()
    ran = frame[(frame.Backend == "tvmaot") & (frame.Model != "broken")]
    assert len(ran) == 9 and not ran.Failing.any(), ran[["Model", "Target", "Reason"]]
    assert (ran.Validation == "pass").all() and (ran.Oracle == "onnxruntime").all(), ran["Validation Detail"]
    by_model = ran.set_index(["Model", "Target"])
    assert by_model.loc[("cnn_onnx", "spike"), "MACs"] == 2048
    assert by_model.loc[("relu_int8_io", "spike"), "Float Ops"] == "none"  # int8 I/O: integer code
    assert by_model.loc[("relu_int8_io", "spike"), "Max Abs Error"] == 0
    tflm = frame[(frame.Backend == "tflmi") & (frame.Model != "broken")]
    assert tflm.Failing.all() and tflm.Reason.str.contains("tflmi takes tflite models").all()
    broken = frame[frame.Model == "broken"]
    assert broken.Reason.str.contains("broken.onnx is not an ONNX model").all()
