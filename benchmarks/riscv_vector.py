#!/usr/bin/env python3
"""RISC-V vector: TFLM (reference, muRISCV-NN scalar and + V) against tvmaot on Spike.

Per MLPerf Tiny model: TFLM reference kernels and muRISCV-NN on rv32imc, tvmaot on rv32imc (GCC),
then muRISCV-NN + V and tvmaot (its RVV kernels: simd=auto on a vector ISA) on rv32gcv (clang)
at each VLEN — one vector ELF per backend, run at every VLEN — with validation, ROM and arena, and
tvmaot's ratio to muRISCV-NN at the same ISA and VLEN (> 1: tvmaot needs fewer instructions).
Needs `mlonmcu setup tflm muriscv_nn riscv_llvm`. Run by hand; quote its output, it is not a test.

    python benchmarks/riscv_vector.py [--models DIR] [--vlen 128,256,512,1024] [--home DIR] [--parallel N]
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from mlonmcu import api

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kernel_bench

SCALAR = "rv32imc"
VECTOR = "rv32gcv"


def main() -> int:
    options = kernel_bench.parser(__doc__.splitlines()[0])
    options.add_argument("--vlen", default="128,256,512,1024", help="comma-separated VLENs for the vector rows")
    args = options.parse_args()
    models = kernel_bench.model_paths(args)
    if models is None:
        return 2
    common = {"validate.samples": str(args.samples)}
    matrices = [
        ({**common, "spike.arch": SCALAR, "tflmi.kernels": ["reference", "muriscv_nn"]}, ["tflmi", "tvmaot"]),
        (
            {
                **common,
                "spike.arch": VECTOR,
                "tflmi.kernels": "muriscv_nn",
                "spike.vlen": args.vlen.split(","),
            },
            ["tflmi", "tvmaot"],
        ),
    ]
    frames = []
    for config, backends in matrices:
        result = api.flow(
            models,
            home=args.home,
            backends=backends,
            targets=["spike"],
            features=["validate"],
            config=config,
            parallel=args.parallel,
        )
        frames.append(result.report)
    report = pd.concat(frames)
    failed = report[report["Failing"].astype(bool)]
    if not failed.empty:
        print(failed[["Model", "Backend", "Config", "Reason"]].to_string(index=False), file=sys.stderr)
    print(summarise(report).to_markdown(index=False))
    return 0


def _setting(config: pd.Series, key: str, default: str) -> pd.Series:
    return config.str.extract(rf"{key.replace('.', '[.]')}=([\w]+)")[0].fillna(default)


def summarise(report: pd.DataFrame) -> pd.DataFrame:
    report = report.assign(
        ISA=_setting(report["Config"], "spike.arch", SCALAR),
        VLEN=_setting(report["Config"], "spike.vlen", "-"),
        Kernels=_setting(report["Config"], "tflmi.kernels", "reference"),
    )
    report.loc[report["ISA"] == SCALAR, "VLEN"] = "-"
    report["Name"] = report["Backend"] + " " + report["Kernels"]
    report.loc[report["Backend"] == "tvmaot", "Name"] = "tvmaot"
    rows = []
    for (model, isa, vlen), group in report.groupby(["Model", "ISA", "VLEN"], sort=False):
        by = {row["Name"]: row for _, row in group.iterrows()}
        muriscv = by.get("tflmi muriscv_nn")
        for name, row in by.items():
            ratio = None
            if name == "tvmaot" and muriscv is not None and row["Run Instructions"] > 0:
                ratio = round(muriscv["Run Instructions"] / row["Run Instructions"], 2)
            where = {"model": model, "ISA": isa, "VLEN": vlen, "backend": name}
            rows.append(
                {**where, "muRISCV-NN / tvmaot": "" if ratio is None else ratio, **kernel_bench.result_columns(row)}
            )
    return pd.DataFrame(rows)


if __name__ == "__main__":
    sys.exit(main())
