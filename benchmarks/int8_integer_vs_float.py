#!/usr/bin/env python3
"""Integer-only int8 vs the importer's QDQ graph vs the fp32 twin, on Spike (rv32imc, rv32imafc).

Runs the four MLPerf Tiny int8 models and their fp32 twins through `tvmaot` and prints, per model
and ISA: run instructions, ROM, RAM, arena (and the int8 lower bound), instructions per MAC, and
the integer/QDQ and fp32/integer ratios. Run by hand; quote its output, it is not a test.

    python benchmarks/int8_integer_vs_float.py [--models DIR] [--home DIR] [--parallel N]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import pandas as pd

from mlonmcu import api

MODELS = ("aww", "vww", "resnet", "toycar")
ISAS = {"rv32imc": "ilp32", "rv32imafc": "ilp32f"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_models = Path(__file__).resolve().parents[2] / "shared" / "models"
    parser.add_argument("--models", type=Path, default=default_models, help="mlonmcu-models directory")
    parser.add_argument("--home", default=None, help="mlonmcu home (default: a temporary one using installed deps)")
    parser.add_argument("--parallel", type=int, default=2)
    args = parser.parse_args()
    if not (args.models / "aww").is_dir():
        print(f"no MLPerf Tiny models in {args.models}; pass --models", file=sys.stderr)
        return 2
    int8 = [str(args.models / m / f"{m}.tflite") for m in MODELS]
    fp32 = [str(args.models / f"{m}_fp32" / f"{m}_fp32.tflite") for m in MODELS]
    frames = []
    with tempfile.TemporaryDirectory() as tmp:
        home = args.home or _home(Path(tmp))
        for isa, abi in ISAS.items():
            common = {"spike.arch": isa, "spike.abi": abi}
            quant = {**common, "tvmaot.quant": ["integer", "qdq"]}
            for models, config in ((int8, quant), (fp32, common)):
                result = api.flow(
                    models, home=home, backends=["tvmaot"], targets=["spike"], config=config, parallel=args.parallel
                )
                frame = result.report.copy()
                frame["ISA"] = isa
                frame["Variant"] = frame["Config"].str.extract(r"tvmaot\.quant=(\w+)")[0].fillna("fp32")
                frames.append(frame)
    report = pd.concat(frames)
    failed = report[report["Failing"].astype(bool)]
    if not failed.empty:
        print(failed[["Model", "ISA", "Variant", "Reason"]].to_string(index=False), file=sys.stderr)
    print(summarise(report).to_string(index=False))
    return 0


def summarise(report: pd.DataFrame) -> pd.DataFrame:
    report = report.assign(Base=report["Model"].str.removesuffix("_fp32"))
    rows = []
    for (base, isa), group in report.groupby(["Base", "ISA"], sort=False):
        by = {row["Variant"]: row for _, row in group.iterrows()}
        integer, qdq, fp32 = by.get("integer"), by.get("qdq"), by.get("fp32")
        if integer is None:
            continue
        rows.append(
            {
                "model": base,
                "ISA": isa,
                "integer instr": int(integer["Run Instructions"]),
                "instr/MAC": integer["Run Instructions/MAC"],
                "QDQ instr": int(qdq["Run Instructions"]) if qdq is not None else None,
                "fp32 instr": int(fp32["Run Instructions"]) if fp32 is not None else None,
                "QDQ/integer": round(qdq["Run Instructions"] / integer["Run Instructions"], 2)
                if qdq is not None
                else None,
                "fp32/integer": round(fp32["Run Instructions"] / integer["Run Instructions"], 2)
                if fp32 is not None
                else None,
                "ROM": int(integer["Total ROM"]),
                "ROM w/o code": int(integer["Total ROM"] - integer["ROM code"]),
                ".tflite": int(integer["Model Size"]),
                "RAM": int(integer["Total RAM"]),
                "arena": int(integer["Arena Size"]),
                "int8 bound": int(integer["Arena Lower Bound"]),
                "QDQ arena": int(qdq["Arena Size"]) if qdq is not None else None,
                "fp32 ROM": int(fp32["Total ROM"]) if fp32 is not None else None,
            }
        )
    return pd.DataFrame(rows)


def _home(root: Path) -> str:
    """A throw-away HOME whose components are those installed for the default HOME."""
    import yaml

    from mlonmcu.environment import init_home, resolve_home

    init_home(root, "default")
    path = root / "environment.yml"
    data = yaml.safe_load(path.read_text())
    data["paths"]["deps"] = str(resolve_home(None) / "deps")
    path.write_text(yaml.safe_dump(data))
    return str(root)


if __name__ == "__main__":
    sys.exit(main())
