"""What the kernel benchmarks (arm_kernels.py, riscv_vector.py) share: their common options,
the MLPerf Tiny models, and the per-run columns they print."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

MODELS = ("aww", "vww", "resnet", "toycar")


def parser(description: str) -> argparse.ArgumentParser:
    """--models, --only, --home, --parallel, --samples; the script adds its own axes."""
    parsed = argparse.ArgumentParser(description=description)
    default_models = Path(__file__).resolve().parents[2] / "shared" / "models"
    parsed.add_argument("--models", type=Path, default=default_models, help="mlonmcu-models directory")
    parsed.add_argument("--only", default=",".join(MODELS), help="comma-separated models")
    parsed.add_argument("--home", default=None, help="mlonmcu home (default: the default HOME, with its TFLM)")
    parsed.add_argument("--parallel", type=int, default=2)
    parsed.add_argument("--samples", type=int, default=1, help="validate.samples")
    return parsed


def model_paths(args: argparse.Namespace) -> list[str] | None:
    """The .tflite files of the --only models in the --models directory (None, said, if it has none)."""
    models, names = args.models, args.only.split(",")
    if not (models / "aww").is_dir():
        print(f"no MLPerf Tiny models in {models}; pass --models", file=sys.stderr)
        return None
    return [str(models / m / f"{m}.tflite") for m in names]


def result_columns(row: Any) -> dict[str, Any]:
    """Instructions, validation, ROM and arena of one report row."""
    return {
        "instructions": row["Run Instructions"],
        "validation": row["Validation"],
        "max abs error": row["Max Abs Error"],
        "ROM": row["Total ROM"],
        "RAM": row["Total RAM"],
        "arena": row["Arena Size"],
    }
