"""Firmware that crashes or hangs: the run fails with a clear reason, the others finish (real simulators)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from mlonmcu.backends.backend import Backend
from mlonmcu.registry import BACKENDS

pytestmark = pytest.mark.integration

CRASHING_MODEL = """
#include "mlonmcu_model.h"
static unsigned char input[{insize}];
static unsigned char output[{outsize}];
int mlonmcu_model_init(void) {{ return 0; }}
int mlonmcu_model_run(void) {{ {run} }}
size_t mlonmcu_model_num_inputs(void) {{ return 1; }}
size_t mlonmcu_model_num_outputs(void) {{ return 1; }}
void *mlonmcu_model_input_ptr(size_t i) {{ (void)i; return input; }}
size_t mlonmcu_model_input_size(size_t i) {{ (void)i; return sizeof(input); }}
const void *mlonmcu_model_output_ptr(size_t i) {{ (void)i; return output; }}
size_t mlonmcu_model_output_size(size_t i) {{ (void)i; return sizeof(output); }}
size_t mlonmcu_model_arena_size(void) {{ return 0; }}
"""


class MisbehavingBackend(Backend):
    """Plugin backends for tests: their firmware implements the C API but misbehaves."""

    framework = "test"
    help = "test only"
    body = ""

    def build(self, model_path: Path, info: Any, out: Path, log: Path) -> dict[str, Any]:
        source = CRASHING_MODEL.format(insize=info.inputs[0].nbytes, outsize=info.outputs[0].nbytes, run=self.body)
        (out / "model.c").write_text(source)
        return {"sources": ["model.c"], "arena_size": 0}


@BACKENDS.register
class CrashingBackend(MisbehavingBackend):
    name = "crashing"
    body = "__builtin_trap(); return 0;"  # ebreak on RISC-V, SIGILL on the host


@BACKENDS.register
class HangingBackend(MisbehavingBackend):
    name = "hanging"
    body = 'for (;;) { __asm__ volatile(""); } return 0;'


def home_with(integration_home: Path, tmp_path: Path, **changes: Any) -> Path:
    env = yaml.safe_load((integration_home / "environment.yml").read_text())
    env.update(changes)
    home = tmp_path / "home"
    home.mkdir()
    (home / "environment.yml").write_text(yaml.safe_dump(env))
    return home


def test_crashing_firmware(integration_home, mlonmcu, tmp_path):
    home = home_with(integration_home, tmp_path, backends=["tvmaot", "crashing"])
    code, output = mlonmcu(
        "flow",
        "run",
        "kws_dscnn_fp32",
        "-b",
        "crashing",
        "-b",
        "tvmaot",
        "-t",
        "spike",
        "-t",
        "host_x86",
        "-H",
        home,
    )
    assert code == 1, output
    frame = pd.read_csv(home / "sessions" / "latest" / "report.csv")
    crashed = frame[frame.Backend == "crashing"].set_index("Target")
    assert crashed.loc["spike", "Reason"].startswith("firmware crashed: trap mcause=0x00000003")  # ebreak
    assert "without finishing" in crashed.loc["host_x86", "Reason"]  # SIGILL on the host
    assert not frame[frame.Backend == "tvmaot"]["Failing"].any()


def test_hung_simulator_is_killed(integration_home, mlonmcu, tmp_path):
    home = home_with(integration_home, tmp_path, backends=["hanging", "tvmaot"])
    code, _ = mlonmcu(
        "flow",
        "run",
        "kws_dscnn_fp32",
        "-b",
        "hanging",
        "-b",
        "tvmaot",
        "-t",
        "spike",
        "-t",
        "qemu_rv32",
        "-c",
        "spike.timeout=3",
        "-c",
        "qemu_rv32.timeout=3",
        "-H",
        home,
    )
    assert code == 1
    frame = pd.read_csv(home / "sessions" / "latest" / "report.csv")
    hung = frame[frame.Backend == "hanging"].set_index("Target")
    for target in ("spike", "qemu_rv32"):
        assert hung.loc[target, "Reason"].startswith("timeout"), hung.loc[target, "Reason"]
        assert hung.loc[target, "Total ROM"] > 0  # what COMPILE produced is kept
    assert not frame[frame.Backend == "tvmaot"]["Failing"].any()
