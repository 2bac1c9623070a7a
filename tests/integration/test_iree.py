"""Backend iree: IREE's compiler and its runtime, built from ../shared/sources (MLONMCU_IREE_SRC)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from onnx_builder import float_cnn, int8_io, qdq_cnn

from mlonmcu.environment import Environment
from mlonmcu.setup import installer

pytestmark = [pytest.mark.integration, pytest.mark.iree]

COMPONENTS = ("iree", "flatcc", "printf", "iree_compiler", "iree_cmake")


def report(home: Path) -> pd.DataFrame:
    return pd.read_csv(home / "sessions" / "latest" / "report.csv")


@pytest.fixture(scope="module")
def iree_home(integration_home: Path) -> Path:
    """integration_home with IREE's sources (from MLONMCU_IREE_SRC, or as `mlonmcu setup iree` put them)."""
    env = Environment.load(integration_home)
    if installer.environment_sources().get("iree"):
        _, failed = installer.install(env, ["iree"])
        assert not failed, f"setup of iree from MLONMCU_IREE_SRC failed: {failed}"
    _, missing = installer.check(env, COMPONENTS)
    if missing:
        pytest.skip(
            "no IREE source tree: set MLONMCU_IREE_SRC, MLONMCU_FLATCC_SRC and MLONMCU_PRINTF_SRC (as "
            "../shared/sources/sources.env does) or run `mlonmcu setup iree --source iree=PATH ...`"
        )
    return integration_home


def test_onnx_models_run_in_irees_runtime_and_validate(iree_home, mlonmcu, tmp_path):
    """fp32 and int8 (QDQ) ONNX models on the host and bare metal (Spike, rv32imc: IREE's generic
    platform, the executables a static library linked with libgcc's soft float), judged by
    onnxruntime; a .tflite is refused with the way to convert it; a target the runtime is not
    built for yet says so."""
    models = [float_cnn(tmp_path), int8_io(qdq_cnn(tmp_path), tmp_path, "cnn_onnx_int8")]
    targets = ["-t", "host_x86", "-t", "spike", "-t", "mps2_an386", "-t", "mps2_an385"]
    args = ["flow", "run", *models, "-b", "iree", *targets, "-f", "validate", "-c", "validate.samples=3"]
    code, output = mlonmcu(*args, "-H", iree_home)  # the firmware reserves the stack IREE asks for
    assert code == 1, output  # the Cortex-M3's rows
    frame = report(iree_home).set_index(["Model", "Target"])
    targets_run = ("host_x86", "spike", "mps2_an386")
    ran = frame.loc[[(m, t) for m in ("cnn_onnx", "cnn_onnx_int8") for t in targets_run]]
    assert not ran.Failing.any(), ran.Reason
    assert (ran.Validation == "pass").all() and (ran.Oracle == "onnxruntime").all(), ran["Validation Detail"]
    assert (ran["Total ROM"] > 0).all()
    assert (ran.xs("spike", level="Target")["Run Instructions"] > 0).all()
    arm = ran.xs("mps2_an386", level="Target")
    assert (arm["Run Instructions"] > 0).all() and (arm["RAM stack"] >= 65536 + 32768).all()
    m3 = frame.xs("mps2_an385", level="Target").loc["cnn_onnx"]
    assert m3.Failing and "no CPU target for cortex-m3" in m3.Reason
    code, output = mlonmcu("flow", "run", "kws_dscnn", "-F", "tflite", "-b", "iree", "-t", "host_x86", "-H", iree_home)
    assert code == 1, output
    reason = report(iree_home).iloc[0].Reason
    assert "backend iree takes onnx models" in reason and "-F onnx (converts it)" in reason


def test_a_tflite_model_reaches_iree_through_onnx_by_itself(iree_home, mlonmcu):
    """-b iree on a .tflite with no -F: the iree row converts it to ONNX (tvmaot's keeps it)."""
    _, missing = installer.check(Environment.load(iree_home), ["tf2onnx"])
    if missing:
        pytest.skip("tf2onnx is not set up: `mlonmcu setup tf2onnx` (scripts/test.sh does)")
    args = ["flow", "run", "kws_dscnn", "-b", "iree", "-b", "tvmaot", "-t", "spike", "-f", "validate"]
    code, output = mlonmcu(*args, "-c", "validate.samples=2", "-H", iree_home)
    assert code == 0, output
    frame = report(iree_home).set_index("Backend")
    assert (frame.loc["iree", "Frontend"], frame.loc["tvmaot", "Frontend"]) == ("onnx", "tflite")
    assert (frame.Validation == "pass").all(), frame["Validation Detail"]


def test_a_compiler_of_another_release_is_named_before_building(iree_home):
    from mlonmcu.backends.iree.backend import IreeBackend
    from mlonmcu.errors import StageError
    from mlonmcu.setup.deps import Installed

    env = Environment.load(iree_home)
    found, _ = installer.check(env, COMPONENTS)
    found["iree_compiler"] = Installed("iree_compiler", "3.13.0", "elsewhere")
    with pytest.raises(StageError, match=r"IREE's compiler is 3\.13\.0 but its runtime sources are 3\.11\.0"):
        IreeBackend({}, found).runtime()
