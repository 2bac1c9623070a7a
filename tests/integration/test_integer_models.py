"""The integer lowering end to end: bit-exact with LiteRT's reference kernels, and fast."""

from __future__ import annotations

import pandas as pd
import pytest
from helpers import shared_model

pytestmark = pytest.mark.integration


def latest(home) -> pd.DataFrame:
    return pd.read_csv(home / "sessions" / "latest" / "report.csv")


def test_integer_versus_qdq_on_spike(integration_home, mlonmcu):
    code, output = mlonmcu(
        "flow",
        "run",
        "bundled",
        "-b",
        "tvmaot",
        "-t",
        "spike",
        "-f",
        "validate",
        "-f",
        "profile",
        "-c",
        "tvmaot.quant=integer",
        "-c",
        "tvmaot.quant=qdq",
        "-H",
        integration_home,
    )
    frame = latest(integration_home)
    assert not frame["Failing"].any(), output
    integer = frame[frame.Config == "tvmaot.quant=integer"].set_index("Model")
    qdq = frame[frame.Config == "tvmaot.quant=qdq"].set_index("Model")
    for model in ("kws_dscnn", "cnn_small"):
        row = integer.loc[model]
        assert row["Validation"] == "pass" and row["Max Abs Error"] == 0, row["Validation Detail"]
        assert row["Float Ops"] == "none"
        assert qdq.loc[model, "Float Ops"] == "all (qdq)"
        assert qdq.loc[model, "Run Instructions"] > 10 * row["Run Instructions"]
        assert row["Arena Size"] <= 1.2 * row["Arena Lower Bound"]
        assert row["Float Share [%]"] == 0
        # the per-layer profile adds up to the measured inference
        run_dir = integration_home / "sessions" / "latest" / "runs" / str(row["Run"])
        profile = pd.read_csv(run_dir / "postprocess" / "profile.csv")
        assert abs(profile["Instructions"].sum() - row["Run Instructions"]) <= 0.02 * row["Run Instructions"]
        assert set(profile["Arithmetic"]) == {"integer"}
    assert code == 1  # the QDQ runs do not match the reference exactly: validation fails there


@pytest.mark.parametrize("name", ["aww", "toycar"])
def test_mlperf_tiny_models_are_bit_exact(integration_home, mlonmcu, name):
    path = shared_model(name)
    code, output = mlonmcu(
        "flow", "run", path, "-b", "tvmaot", "-t", "host_x86", "-f", "validate", "-H", integration_home
    )
    row = latest(integration_home).iloc[0]
    assert code == 0, output
    assert row["Validation"] == "pass" and row["Max Abs Error"] == 0 and row["Float Ops"] == "none"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["vww", "resnet"])
def test_larger_mlperf_tiny_models_are_bit_exact(integration_home, mlonmcu, name):
    path = shared_model(name)
    code, output = mlonmcu(
        "flow", "run", path, "-b", "tvmaot", "-t", "host_x86", "-f", "validate", "-H", integration_home
    )
    row = latest(integration_home).iloc[0]
    assert code == 0, output
    assert row["Max Abs Error"] == 0


def test_fc_rounding_is_a_choice(integration_home, mlonmcu):
    """toycar is ten FULLY_CONNECTED layers: TFLite Micro's fixed point differs from LiteRT's double."""
    path = shared_model("toycar")
    mlonmcu(
        "flow",
        "run",
        path,
        "-b",
        "tvmaot",
        "-t",
        "host_x86",
        "-f",
        "validate",
        "-c",
        "tvmaot.fc_requant=tflm",
        "-H",
        integration_home,
    )
    row = latest(integration_home).iloc[0]
    assert not row["Failing"] and 1 <= row["Max Abs Error"] <= 3
