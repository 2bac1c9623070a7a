"""A firmware that crashes: the run fails with the trap, the others finish (real Spike and host)."""

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
int mlonmcu_model_run(void) {{ __builtin_trap(); return 0; }}
size_t mlonmcu_model_num_inputs(void) {{ return 1; }}
size_t mlonmcu_model_num_outputs(void) {{ return 1; }}
void *mlonmcu_model_input_ptr(size_t i) {{ (void)i; return input; }}
size_t mlonmcu_model_input_size(size_t i) {{ (void)i; return sizeof(input); }}
const void *mlonmcu_model_output_ptr(size_t i) {{ (void)i; return output; }}
size_t mlonmcu_model_output_size(size_t i) {{ (void)i; return sizeof(output); }}
size_t mlonmcu_model_arena_size(void) {{ return 0; }}
"""


@BACKENDS.register
class CrashingBackend(Backend):
    """A plugin backend whose firmware executes a trap instruction in every inference."""

    name = "crashing"
    framework = "test"
    help = "test only"

    def build(self, model_path: Path, info: Any, out: Path, log: Path) -> dict[str, Any]:
        (out / "model.c").write_text(
            CRASHING_MODEL.format(insize=info.inputs[0].nbytes, outsize=info.outputs[0].nbytes)
        )
        return {"sources": ["model.c"], "arena_size": 0}


def test_crashing_firmware(integration_home, mlonmcu, tmp_path):
    env = yaml.safe_load((integration_home / "environment.yml").read_text())
    env["backends"] = ["tvmaot", "crashing"]
    home = tmp_path / "home"
    home.mkdir()
    (home / "environment.yml").write_text(yaml.safe_dump(env))
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
