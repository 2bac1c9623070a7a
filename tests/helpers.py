"""Helpers for tests: throw-away HOMEs and the shared MLPerf Tiny models."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from mlonmcu.backends.backend import Backend
from mlonmcu.contracts import BuildResult
from mlonmcu.environment import init_home

REPO = Path(__file__).resolve().parents[1]
SHARED_MODELS = REPO.parent / "shared" / "models"


def make_home(root: Path, **overrides: object) -> Path:
    """A HOME from the default template, with environment.yml keys replaced by `overrides`."""
    init_home(root, "default")
    path = root / "environment.yml"
    data = yaml.safe_load(path.read_text())
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key].update(value)
        else:
            data[key] = value
    path.write_text(yaml.safe_dump(data))
    return root


def installed_deps_dir() -> Path:
    """Where `mlonmcu setup` put the components (the user's HOME, or $MLONMCU_HOME)."""
    from mlonmcu.environment.home import resolve_home

    return resolve_home(None) / "deps"


def shared_model(name: str) -> Path:
    path = SHARED_MODELS / name / f"{name}.tflite"
    if not path.is_file():
        pytest.skip(f"shared MLPerf Tiny model {name} not found at {SHARED_MODELS}")
    return path


def home_with(base: Path, tmp_path: Path, **changes: Any) -> Path:
    """A HOME next to `base` sharing its deps and settings, with top-level keys replaced."""
    env = yaml.safe_load((base / "environment.yml").read_text())
    env.update(changes)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "environment.yml").write_text(yaml.safe_dump(env))
    return home


FAKE_MODEL_C = """
#include "mlonmcu_model.h"
static unsigned char input[{insize}];
static unsigned char output[{outsize}];
int mlonmcu_model_init(void) {{ return 0; }}
int mlonmcu_model_run(void) {{
{run}
}}
size_t mlonmcu_model_num_inputs(void) {{ return 1; }}
size_t mlonmcu_model_num_outputs(void) {{ return 1; }}
void *mlonmcu_model_input_ptr(size_t i) {{ (void)i; return input; }}
size_t mlonmcu_model_input_size(size_t i) {{ (void)i; return sizeof(input); }}
const void *mlonmcu_model_output_ptr(size_t i) {{ (void)i; return output; }}
size_t mlonmcu_model_output_size(size_t i) {{ (void)i; return sizeof(output); }}
size_t mlonmcu_model_arena_size(void) {{ return 0; }}
"""


class FakeFirmwareBackend(Backend):
    """Plugin backends for tests: the C API with an inference of the subclass's choosing."""

    framework = "test"
    help = "test only"

    def run_body(self) -> str:
        raise NotImplementedError

    def build(self, model_path: Path, info: Any, out: Path, log: Path) -> BuildResult:
        source = FAKE_MODEL_C.format(insize=info.inputs[0].nbytes, outsize=info.outputs[0].nbytes, run=self.run_body())
        (out / "model.c").write_text(source)
        return BuildResult(model=model_path.stem, backend=self.name, sources=("model.c",), arena_size=0)
