"""pytest plugin: in CI (`CI` set) with the offline sources given (MLONMCU_<NAME>_SRC, as
`../shared/sources/sources.env` sets them), a test that needs one of them and skips fails: there
a skip means a broken setup, not a missing checkout. Elsewhere such tests skip with their reason."""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path

import pytest

# marker → the git components (MLONMCU_<NAME>_SRC) a test with that marker needs
SOURCE_MARKERS: dict[str, tuple[str, ...]] = {
    "tflm": ("tflm", "flatbuffers", "gemmlowp"),
    "cmsis_nn": ("cmsis_nn", "cmsis"),
    "muriscv_nn": ("muriscv_nn",),
    "ibex": ("ibex",),
    "iree": ("iree", "flatcc", "printf"),
}


def given_sources(names: tuple[str, ...]) -> list[str]:
    """The MLONMCU_<NAME>_SRC values of `names` that point at an existing directory."""
    found = []
    for name in names:
        value = os.environ.get(f"MLONMCU_{name.upper()}_SRC", "").strip()
        path = value.split("@", 1)[0]
        if path and Path(path).is_dir():
            found.append(f"MLONMCU_{name.upper()}_SRC={value}")
    return found


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, None, None]:
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or not os.environ.get("CI") or hasattr(report, "wasxfail"):
        return
    for marker, names in SOURCE_MARKERS.items():
        given = given_sources(names)
        if item.get_closest_marker(marker) is not None and given:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            report.outcome = "failed"
            report.longrepr = (
                f"skipped in CI although its sources are given ({', '.join(given)}): {reason.removeprefix('Skipped: ')}"
            )
            return
