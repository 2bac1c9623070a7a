"""Helpers for the report tests: a synthetic report to draw, and a headless Chromium to look at it.

Chromium and its driver come from Debian (`apt-get install chromium chromium-driver`); Selenium
is pointed at both, so Selenium Manager never runs and nothing is downloaded.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
import pytest

from mlonmcu.report import columns as col
from mlonmcu.results.identity import IDENTITY, identity

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
MODELS = ("aww", "vww")
BACKENDS = ("tvmaot", "tflmi")
TARGETS = ("spike", "etiss")
REGRESSED_RUN = ("aww", "tvmaot", "spike")  # its third session got 30 % slower
SESSIONS = 4
# --no-sandbox: the tests may run as root (containers, CI)
ARGUMENTS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000")


def _row(model: str, backend: str, target: str, scale: float = 1.0, **extra: Any) -> dict[str, Any]:
    m, b, t = MODELS.index(model), BACKENDS.index(backend), TARGETS.index(target)
    base = 1000 * (1 + m) * (1 + b) * (1 + t)  # the second backend is slower but smaller
    return {
        col.MODEL: model,
        col.FRONTEND: "tflite",
        col.BACKEND: backend,
        col.PLATFORM: "mlif",
        col.TARGET: target,
        col.FEATURES: "",
        col.CONFIG: "",
        col.RUN_CYCLES: base * 100 * scale,
        col.RUN_INSTRUCTIONS: base * 80 * scale,
        col.TOTAL_ROM: 40_000 + 10_000 * (1 - b) + 1_000 * t + 5_000 * m,
        col.TOTAL_RAM: 20_000 + 4_000 * (1 - b) + 500 * t + 2_000 * m,
        col.VALIDATION: "pass",
        col.FAILING: False,
        **extra,
    }


def current_frame() -> pd.DataFrame:
    """2 models x 2 backends x 2 targets; one run failed (no metrics) and one lacks its RAM figure."""
    rows = []
    for run, (m, b, t) in enumerate((m, b, t) for m in MODELS for b in BACKENDS for t in TARGETS):
        row = _row(m, b, t, **{col.SESSION: 7, col.RUN: run})
        if (m, b, t) == ("vww", "tflmi", "etiss"):
            metrics = (col.RUN_CYCLES, col.RUN_INSTRUCTIONS, col.TOTAL_ROM, col.TOTAL_RAM, col.VALIDATION)
            row.update({c: None for c in metrics}, **{col.FAILING: True, col.REASON: "arena too small <&>"})
        if (m, b, t) == ("aww", "tflmi", "etiss"):
            row[col.TOTAL_RAM] = float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


def history_frame() -> pd.DataFrame:
    """Four nightly sessions of two aww runs: one regression, and one night the other run failed."""
    start = datetime(2024, 5, 1, 2, 0, tzinfo=UTC)
    rows = []
    for night in range(SESSIONS):
        for backend in BACKENDS:
            slow = backend == REGRESSED_RUN[1] and night >= 2
            regressed = slow and night == 2
            row = _row("aww", backend, "spike", scale=1.3 if slow else 1.0 + 0.01 * night)
            if backend == "tflmi" and night == 1:
                row.update({col.RUN_CYCLES: None, col.TOTAL_ROM: None, col.FAILING: True})  # a stray RAM value stays
            row.update(
                {
                    col.SESSION: night + 1,
                    IDENTITY: identity(row),
                    "Started": start + timedelta(days=night),
                    "Session UID": f"uid{night}",
                    "Regressed": col.RUN_CYCLES if regressed else "",
                }
            )
            rows.append(row)
    frame = pd.DataFrame(rows)
    frame["Started"] = pd.to_datetime(frame["Started"], utc=True)
    return frame


def profiles() -> dict[str, pd.DataFrame]:
    """One profiled run with 20 kernels (a few large, many small) and one that measured nothing."""
    cycles = [40_000, 25_000, 9_000, *([300] * 17)]
    table = pd.DataFrame(
        {"Index": range(len(cycles)), "Kernel": [f"k{i}_conv" for i in range(len(cycles))], "Cycles": cycles}
    )
    empty = pd.DataFrame({"Index": [0], "Kernel": ["k0"], "Cycles": [None]})
    return {"aww tvmaot spike": table, "vww tflmi etiss": empty}


def comparison_frame() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"Run": "aww tvmaot spike", "Status": "regressed", "Metric": col.RUN_CYCLES, "Old": 1e5, "New": 1.3e5},
            {"Run": "vww tflmi etiss", "Status": "new failure", "Metric": "", "Old": None, "New": None},
            {"Run": "aww tflmi spike", "Status": "improved", "Metric": col.TOTAL_ROM, "Old": 6e4, "New": 5.9e4},
            {"Run": "<script>alert(1)</script>", "Status": "same", "Metric": col.TOTAL_RAM, "Old": 1, "New": 1},
        ]
    ).assign(Ratio=lambda f: f["New"] / f["Old"])


def browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install selenium)"
    absent = [p for p in (CHROMIUM, CHROMEDRIVER) if not shutil.which(p)]
    if absent:
        return f"{' and '.join(absent)} missing: apt-get install chromium chromium-driver"
    return None


@contextmanager
def chromium(offline: bool = True) -> Iterator[Any]:
    """A headless Chromium that keeps its console log; with `offline`, it has no network at all."""
    reason = browser_missing()
    if reason:
        pytest.skip(reason)
    os.environ["SE_AVOID_STATS"] = "true"  # no usage statistics; the paths below keep Selenium Manager off
    os.environ["SE_OFFLINE"] = "true"
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ARGUMENTS:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        if offline:
            driver.execute_cdp_cmd("Network.enable", {})
            driver.execute_cdp_cmd(
                "Network.emulateNetworkConditions",
                {"offline": True, "latency": 0, "downloadThroughput": 0, "uploadThroughput": 0},
            )
        yield driver
    finally:
        driver.quit()


def severe_console_entries(driver: Any) -> list[dict[str, Any]]:
    return [entry for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"]
