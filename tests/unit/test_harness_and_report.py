import pandas as pd
import pytest

from mlonmcu.errors import ConfigError, StageError
from mlonmcu.platforms.harness import parse
from mlonmcu.report.columns import CORE
from mlonmcu.report.report import export, to_frame
from mlonmcu.session.stages import _failure

OUTPUT = """noise from the simulator
MLONMCU BEGIN
MLONMCU SETUP status=0 cycles=45 instructions=40 arena=128
MLONMCU RUN sample=0 iteration=0 status=0 cycles=1000 instructions=900
MLONMCU OUTPUT sample=0 index=0 size=3 data=0a80ff
MLONMCU END status=0 stack=512
"""


def test_parse_harness_output():
    result = parse(OUTPUT)
    assert result.setup == {"status": 0, "cycles": 45, "instructions": 40, "arena": 128}
    assert result.runs[0]["instructions"] == 900
    assert result.outputs[0][0] == bytes([0x0A, 0x80, 0xFF])
    assert result.end == {"status": 0, "stack": 512}
    assert _failure(result, 0) == ""


def test_failure_reasons():
    crashed = parse("MLONMCU BEGIN\nMLONMCU TRAP mcause=0x00000007 mepc=0x80000100 mtval=0x00000000\n")
    assert _failure(crashed, 100).startswith("firmware crashed: trap")
    assert "without finishing" in _failure(parse("MLONMCU BEGIN\n"), -11)
    assert "status -1" in _failure(parse("MLONMCU BEGIN\nMLONMCU END status=-1\n"), 255)


def test_no_harness_output_is_an_error():
    with pytest.raises(StageError, match="MLONMCU BEGIN"):
        parse("spike: command not found\n")


def test_truncated_output_line_is_an_error():
    with pytest.raises(StageError, match="truncated"):
        parse("MLONMCU BEGIN\nMLONMCU OUTPUT sample=0 index=0 size=4 data=0a\n")


@pytest.mark.parametrize("suffix", [".csv", ".xlsx", ".md", ".json", ".html"])
def test_report_formats(tmp_path, suffix):
    frame = to_frame(
        [
            {"Session": 0, "Run": 1, "Model": "m", "Failing": False},
            {"Session": 0, "Run": 0, "Model": "n", "Failing": True, "Reason": "timeout"},
        ]
    )
    assert list(frame.columns[: len(CORE)]) == list(CORE)
    assert frame["Run"].tolist() == [0, 1]
    path = export(frame, tmp_path / f"r{suffix}")
    assert path.stat().st_size > 0
    if suffix == ".csv":
        assert pd.read_csv(path)["Reason"].tolist()[0] == "timeout"


def test_unknown_report_format(tmp_path):
    with pytest.raises(ConfigError, match=r"\.csv, \.xlsx"):
        export(to_frame([]), tmp_path / "r.pdf")
