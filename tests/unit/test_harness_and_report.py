import errno

import pandas as pd
import pytest

from mlonmcu.contracts import HarnessEnd, Measurement
from mlonmcu.errors import ConfigError, DiskFull, StageError
from mlonmcu.platforms.harness import parse
from mlonmcu.process import Completed
from mlonmcu.report.columns import CORE
from mlonmcu.report.report import export, read, to_frame
from mlonmcu.session.stages import failure_of
from mlonmcu.targets import timing

OUTPUT = """noise from the simulator
MLONMCU BEGIN
MLONMCU SETUP status=0 cycles=45 instructions=40 arena=128
MLONMCU RUN sample=0 iteration=0 status=0 cycles=1000 instructions=900
MLONMCU OUTPUT sample=0 index=0 size=3 data=0a80ff
MLONMCU END status=0 stack=512
"""


def test_parse_harness_output():
    parsed = parse(OUTPUT)
    record = parsed.record
    assert record.setup == Measurement(status=0, cycles=45, instructions=40)
    assert record.runs[0].instructions == 900 and record.runs[0].sample == 0
    assert parsed.outputs[0][0] == bytes([0x0A, 0x80, 0xFF])
    assert record.end == HarnessEnd(0, 512)
    assert failure_of(parsed, Completed(0, OUTPUT)) == ""


def test_marks_become_instruction_counts():
    text = "\n".join(
        ["MLONMCU BEGIN", "MLONMCU MARK 0 100", "MLONMCU MARK 1 350", "MLONMCU SETUP status=0 marks=0:1", "MLONMCU END"]
    )
    assert parse(text).record.setup.instructions == 250


def test_failure_reasons():
    crashed = parse("MLONMCU BEGIN\nMLONMCU TRAP mcause=0x00000007 mepc=0x80000100 mtval=0x00000000\n")
    assert failure_of(crashed, Completed(100, "")).startswith("firmware crashed: trap")
    assert "without finishing" in failure_of(parse("MLONMCU BEGIN\n"), Completed(-11, ""))
    ended = parse("MLONMCU BEGIN\nMLONMCU END status=-1\n")
    assert "status -1: the meaning" in failure_of(ended, Completed(255, ""), {-1: "the meaning"})


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
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left
    if suffix == ".csv":
        assert pd.read_csv(path)["Reason"].tolist()[0] == "timeout"


def test_unknown_report_format(tmp_path):
    with pytest.raises(ConfigError, match=r"\.csv, \.xlsx"):
        export(to_frame([]), tmp_path / "r.pdf")


FORMULA = '=HYPERLINK("http://example.com","x")'


def test_spreadsheet_exports_never_hold_formulas(tmp_path):
    from openpyxl import load_workbook

    frame = to_frame([{"Session": 0, "Run": 0, "Model": FORMULA, "Reason": "-1 is not @home", "MACs": -5}])
    export(frame, tmp_path / "r.xlsx")
    sheet = load_workbook(tmp_path / "r.xlsx").active
    header = [c.value for c in sheet[1]]
    cell = sheet.cell(row=2, column=header.index("Model") + 1)
    assert cell.data_type == "s" and cell.value == FORMULA  # text, exactly as given, not a formula
    assert sheet.cell(row=2, column=header.index("MACs") + 1).value == -5  # numbers stay numbers
    export(frame, tmp_path / "r.csv")
    raw = (tmp_path / "r.csv").read_text()
    assert "'=HYPERLINK" in raw and "'-1 is not" in raw and ",-5" in raw
    back = read(tmp_path / "r.csv")  # our own reader undoes the escaping
    assert back["Model"][0] == FORMULA and back["Reason"][0] == "-1 is not @home"


def test_full_disk_keeps_the_previous_report(tmp_path, monkeypatch):
    path = export(to_frame([{"Session": 0, "Run": 0, "Model": "old"}]), tmp_path / "report.csv")

    def no_space(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", no_space)
    with pytest.raises(DiskFull, match=r"report\.csv .*bytes free"):
        export(to_frame([{"Session": 0, "Run": 0, "Model": "new"}]), path)
    monkeypatch.undo()
    assert read(path)["Model"].tolist() == ["old"]
    assert [p.name for p in tmp_path.iterdir()] == ["report.csv"]


def test_terminal_table_prints_brackets_literally(capsys):
    from mlonmcu.cli import output

    output.console.file = None  # the current sys.stdout (captured)
    output.print_frame(pd.DataFrame([{"Run Time [s]": 0.5, "Model": "[bold]x[/bold]"}]), title="t [1]")
    text = capsys.readouterr().out
    assert "Run Time [s]" in text and "[bold]x[/bold]" in text and "t [1]" in text


def test_profile_calls_reported_by_marks_are_summed_per_kernel():
    lines = [
        "MLONMCU BEGIN",
        *(f"MLONMCU MARK {i} {c}" for i, c in enumerate((10, 110, 200, 230, 300, 350))),
        "MLONMCU PROFILE kernel=0 calls=1 marks=0:1",
        "MLONMCU PROFILE kernel=1 calls=1 marks=2:3",
        "MLONMCU PROFILE kernel=0 calls=1 marks=4:5",
        "MLONMCU END status=0",
    ]
    profile = parse("\n".join(lines)).record.profile
    assert [(m.kernel, m.calls, m.instructions) for m in profile] == [(0, 2, 150), (1, 1, 30)]


def test_the_session_csv_writer_reads_back_like_the_pandas_export(tmp_path):
    import numpy as np

    from mlonmcu.report import columns as col
    from mlonmcu.report.report import export, read, to_frame, write_csv

    rows = [
        {col.SESSION: 1, col.RUN: 1, col.MODEL: "=cmd()", col.RUN_CYCLES: np.int64(5), col.FAILING: False, "X": 1.5},
        {col.SESSION: 1, col.RUN: 0, col.MODEL: "kws", col.RUN_CYCLES: None, col.FAILING: True, col.REASON: "x, y"},
        {col.SESSION: 1, col.RUN: 2, col.MODEL: "'quoted", col.RUN_TIME: float("nan"), col.FAILING: False},
    ]
    fast, slow = tmp_path / "fast.csv", tmp_path / "slow.csv"
    write_csv(rows, fast)
    export(to_frame(rows), slow)
    a, b = read(fast), read(slow)
    assert list(a.columns) == list(b.columns) and list(a.columns)[-1] == "X"
    pd.testing.assert_frame_equal(a, b)
    assert list(a[col.MODEL]) == ["kws", "=cmd()", "'quoted"]


def test_reading_a_report_without_pandas_types_the_columns_as_pandas_does(tmp_path):
    from mlonmcu.report import columns as col
    from mlonmcu.report.report import read_rows, summary, write_csv

    rows = [
        {col.SESSION: 1, col.RUN: 0, col.MODEL: "=cmd()", col.RUN_CYCLES: 5, col.FAILING: False, "X": 1.5, "Y": "7"},
        {col.SESSION: 1, col.RUN: 1, col.MODEL: "None", col.RUN_CYCLES: None, col.FAILING: True, "X": 2, "Y": "a"},
        {col.SESSION: 1, col.RUN: 2, col.MODEL: "'q", col.RUN_CYCLES: 12, col.FAILING: False, "X": None, "Y": "-1_0"},
    ]
    path = tmp_path / "report.csv"
    write_csv(rows, path)
    plain, frame = read_rows(path), read(path)
    assert list(plain[0]) == list(frame.columns)
    for mine, theirs in zip(plain, frame.to_dict("records"), strict=True):
        for name, value in theirs.items():
            if pd.isna(value):
                assert pd.isna(mine[name]), name
            else:
                assert mine[name] == value and type(mine[name]) in (type(value), int, float, bool), name
    assert plain[0][col.MODEL] == "=cmd()" and pd.isna(plain[1][col.MODEL]) and plain[2][col.MODEL] == "'q"
    assert [r["Y"] for r in plain] == ["7", "a", "-1_0"]  # one text cell makes the column text
    assert plain[0][col.FAILING] is False and plain[1][col.FAILING] is True
    columns, values = summary(plain)
    assert col.REASON not in columns and col.RUN_CYCLES in columns  # empty columns dropped
    assert values[0][columns.index(col.RUN_CYCLES)] == 5


def test_plugin_marks_carry_class_counts_and_a_model_weighs_them():
    marks = ((10, "alu=8 load=2"), (20, "alu=14 load=5 cond_taken=1"), (100, "alu=80 load=20"), (130, "alu=90 load=40"))
    lines = [
        "MLONMCU BEGIN",
        *(f"MLONMCU MARK {i} {n} {counts}" for i, (n, counts) in enumerate(marks)),
        "MLONMCU SETUP status=0 marks=0:1",
        "MLONMCU RUN sample=0 iteration=0 status=0 instructions=31 marks=2:3",  # minstret wins
        "MLONMCU PROFILE kernel=0 calls=1 marks=2:3",
        "MLONMCU PROFILE kernel=0 calls=1 marks=0:1",
        "MLONMCU END status=0",
    ]
    record = parse("\n".join(lines)).record
    assert record.setup.instructions == 10 and record.setup.event_counts() == {"alu": 6, "load": 3, "cond_taken": 1}
    assert record.runs[0].instructions == 31 and record.runs[0].event_counts() == {"alu": 10, "load": 20}
    assert record.profile[0].event_counts() == {"alu": 16, "load": 23, "cond_taken": 1}  # two calls summed
    estimated = timing.with_estimates(record, timing.MODELS["ibex-small"])
    assert estimated.setup.estimated_cycles == 6 * 1 + 3 * 2 + 1 * 2
    assert estimated.runs[0].estimated_cycles == 10 + 40
    two = parse("MLONMCU BEGIN\nMLONMCU MARK 0 5\nMLONMCU MARK 1 9\nMLONMCU SETUP status=0 marks=0:1\n").record
    assert two.setup.instructions == 4 and two.setup.events == ()
    assert timing.with_estimates(two, timing.MODELS["cortex-m4"]).setup.estimated_cycles is None
    with pytest.raises(ValueError, match="ibex-small has no cycles for ldm"):
        timing.MODELS["ibex-small"].estimate({"ldm": 1})


def test_every_class_and_event_of_the_plugin_has_cycles_in_every_model():
    import re

    from mlonmcu.data import templates_dir

    source = (templates_dir() / "qemu_plugin" / "mlonmcu_insn.c").read_text()
    for arch in ("arm", "riscv"):
        names = re.search(rf"{arch}_names\[\] = \{{(.*?)\}};", source, re.S)
        assert names is not None, arch
        assert tuple(re.findall(r'"(\w+)"', names.group(1))) == timing.COUNTED[arch]
    for model in timing.MODELS.values():
        assert list(model.cycles) == list(timing.COUNTED[model.arch]), model.name
    with pytest.raises(ValueError, match="cortex-m55 has no published"):
        timing.check_core("cortex-m55")


def test_markdown_cells_without_a_figure_are_empty_and_text_is_escaped(tmp_path):
    frame = pd.DataFrame({"Model": ["a|b", None], "Run Cycles": [float("nan"), 12.5], "MACs": [9840, None]})
    lines = export(frame, tmp_path / "r.md").read_text().splitlines()
    assert "nan" not in "\n".join(lines)
    assert lines[2].replace(" ", "") == "|a\\|b||9840|"
    assert "12.5" in lines[3] and "9840" in lines[2]
