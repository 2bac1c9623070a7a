"""The source_check plugin: in CI with the sources given, a skipped test that needs them fails."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

TESTS = """
import pytest

@pytest.mark.tflm
def test_needs_tflm():
    pytest.skip("no TFLM source tree")

@pytest.mark.muriscv_nn
def test_needs_muriscv_nn():
    pytest.skip("no muRISCV-NN source tree")

def test_plain_skip():
    pytest.skip("unrelated")
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path):
    for name in ("TFLM", "FLATBUFFERS", "GEMMLOWP", "MURISCV_NN", "CMSIS_NN", "CMSIS"):
        monkeypatch.delenv(f"MLONMCU_{name}_SRC", raising=False)
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\nmarkers =\n    tflm: x\n    muriscv_nn: x\n")
    pytester.makepyfile(TESTS)
    tree = tmp_path / "tflite-micro.git"
    tree.mkdir()
    monkeypatch.setenv("MLONMCU_TFLM_SRC", f"{tree}@main")
    return pytester


def test_in_ci_a_skip_of_a_given_source_fails(suite, monkeypatch):
    monkeypatch.setenv("CI", "true")
    result = suite.runpytest("-p", "source_check", "-rA")
    result.assert_outcomes(failed=1, skipped=2)
    result.stdout.fnmatch_lines(["*skipped in CI although its sources are given (MLONMCU_TFLM_SRC=*): no TFLM source*"])


def test_outside_ci_or_without_the_source_it_skips(suite, monkeypatch, tmp_path):
    suite.runpytest("-p", "source_check").assert_outcomes(skipped=3)
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("MLONMCU_TFLM_SRC", str(tmp_path / "absent"))
    suite.runpytest("-p", "source_check").assert_outcomes(skipped=3)
