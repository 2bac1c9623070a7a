"""compare: runs aligned by identity, thresholds per metric, the exit code a CI job gates on."""

from __future__ import annotations

import pandas as pd
import pytest

from mlonmcu.errors import ConfigError
from mlonmcu.report import columns as col
from mlonmcu.report.compare import EXIT_FAILED, EXIT_OK, EXIT_REGRESSED, compare, mark_regressions


def row(model="kws", target="spike", config="mlif.optimize=O2", **metrics):
    base = {
        col.MODEL: model,
        col.FRONTEND: "tflite",
        col.BACKEND: "tvmaot",
        col.PLATFORM: "mlif",
        col.TARGET: target,
        col.FEATURES: "validate",
        col.CONFIG: config,
        col.RUN_INSTRUCTIONS: 1000,
        col.TOTAL_ROM: 20000,
        col.TOTAL_RAM: 5000,
        col.VALIDATION: "pass",
        col.FAILING: False,
        col.REASON: "",
        col.MODEL_HASH: "aaaa",
    }
    base.update(metrics)
    return base


def frame(*rows):
    return pd.DataFrame(list(rows))


def test_identical_sessions_pass():
    c = compare(frame(row(), row(target="qemu_rv32")), frame(row(target="qemu_rv32"), row()))
    assert c.exit_code() == EXIT_OK and c.common == 2 and c.events.empty
    assert set(c.table["Status"]) == {"same"}


def test_one_more_instruction_is_a_regression_at_zero_percent():
    c = compare(frame(row()), frame(row(**{col.RUN_INSTRUCTIONS: 1001})))
    assert c.exit_code() == EXIT_REGRESSED
    regressed = c.regressions
    assert list(regressed["Metric"]) == [col.RUN_INSTRUCTIONS] and regressed["Ratio"].iloc[0] == pytest.approx(1.001)
    assert "REGRESSED" in c.markdown() and "| kws tvmaot spike" in c.markdown()


def test_thresholds_allow_growth_and_improvements_never_fail():
    new = frame(row(**{col.TOTAL_ROM: 20150, col.RUN_INSTRUCTIONS: 900}))
    c = compare(frame(row()), new, {col.TOTAL_ROM: 0.01})
    status = dict(zip(c.table["Metric"], c.table["Status"], strict=True))
    assert status[col.TOTAL_ROM] == "within threshold" and status[col.RUN_INSTRUCTIONS] == "improved"
    assert c.exit_code() == EXIT_OK
    assert compare(frame(row()), new, {col.TOTAL_ROM: 0.005}).exit_code() == EXIT_REGRESSED


def test_failures_come_first_and_win_over_regressions():
    base = frame(row(), row(model="vww", **{col.FAILING: True, col.REASON: "boom"}), row(model="gone"))
    new = frame(
        row(**{col.FAILING: True, col.REASON: "COMPILE failed"}),
        row(model="vww", **{col.RUN_INSTRUCTIONS: 2000}),
        row(model="extra"),
    )
    c = compare(base, new)
    kinds = list(c.events["Kind"])
    assert kinds == ["new failure", "fixed", "appeared", "disappeared"]
    assert c.exit_code() == EXIT_FAILED


def test_validation_and_model_changes_are_listed():
    c = compare(frame(row()), frame(row(**{col.VALIDATION: "fail", col.MODEL_HASH: "bbbb"})))
    assert list(c.events["Kind"]) == ["new failure", "model changed"]
    assert c.exit_code() == EXIT_FAILED
    c = compare(frame(row(**{col.VALIDATION: "fail"})), frame(row()))
    assert list(c.events["Kind"]) == ["fixed"]


def test_no_run_in_common_is_a_usage_error():
    with pytest.raises(ConfigError, match="no run in common"):
        compare(frame(row()), frame(row(model="other")))


def test_wall_clock_is_judged_on_the_minimum_of_the_repeats():
    old = row(target="host_x86", **{col.RUN_TIME: 0.010, col.RUN_TIME_MIN: 0.009})
    noisy = row(target="host_x86", **{col.RUN_TIME: 0.013, col.RUN_TIME_MIN: 0.0092})
    c = compare(frame(old), frame(noisy))
    assert c.exit_code() == EXIT_OK
    assert "Run Time [s] (min)" in set(c.table["Metric"])
    slower = row(target="host_x86", **{col.RUN_TIME: 0.013, col.RUN_TIME_MIN: 0.0111})
    assert compare(frame(old), frame(slower)).exit_code() == EXIT_REGRESSED


def test_history_marks_the_point_that_regressed():
    rows = [row(**{col.RUN_INSTRUCTIONS: n}) for n in (1000, 1000, 1200, 1100)]
    history = frame(*rows)
    history["Identity"] = "x"
    history["Started"] = pd.date_range("2026-11-01", periods=4, tz="UTC")
    marked = mark_regressions(history)
    assert list(marked["Regressed"]) == ["", "", col.RUN_INSTRUCTIONS, ""]
