#!/usr/bin/env python3
"""Arm Cortex-M: TFLM (reference kernels, CMSIS-NN) against tvmaot (scalar, SIMD) in QEMU.

Per MLPerf Tiny model and board: TFLM with its reference kernels and with CMSIS-NN
(`tflmi.kernels=cmsis_nn`: DSP on M4/M7/M33, MVE on M55, portable C on M3), tvmaot with its scalar
kernels (`tvmaot.simd=off`) and with the kernels `simd=auto` lays out for the board's core (DSP on
M4/M7/M33, MVE on M55, scalar on M3) — exact QEMU instruction counts, validation, ROM and arena,
and CMSIS-NN's count over tvmaot SIMD's (> 1: tvmaot needs fewer instructions). Needs
`mlonmcu setup tflm cmsis_nn`; each board's TFLM libraries build once (minutes). Run by hand and
quote its output; it is not a test.

    python benchmarks/arm_kernels.py [--models DIR] [--boards mps2_an386,mps3_an547] [--home DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from mlonmcu import api

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kernel_bench

BOARDS = ("mps2_an385", "mps2_an386", "mps2_an500", "mps2_an505", "mps3_an547")
CORES = {"mps2_an385": "M3", "mps2_an386": "M4", "mps2_an500": "M7", "mps2_an505": "M33", "mps3_an547": "M55"}


def main() -> int:
    options = kernel_bench.parser(__doc__.splitlines()[0])
    options.add_argument("--boards", default=",".join(BOARDS), help="comma-separated QEMU boards")
    options.add_argument("--only", default=",".join(kernel_bench.MODELS), help="comma-separated models")
    args = options.parse_args()
    models = kernel_bench.model_paths(args.models, args.only.split(","))
    if models is None:
        return 2
    boards = args.boards.split(",")
    common = {"backends": None, "home": args.home, "targets": boards, "features": ["validate"]}
    frames = []
    for backend, config in (
        ("tflmi", {"tflmi.kernels": ["reference", "cmsis_nn"]}),
        ("tvmaot", {"tvmaot.simd": ["off", "auto"]}),
    ):
        result = api.flow(
            models,
            **{**common, "backends": [backend]},
            config={**config, "validate.samples": str(args.samples)},
            parallel=args.parallel,
        )
        frames.append(result.report)
    report = pd.concat(frames)
    failed = report[report["Failing"].astype(bool)]
    if not failed.empty:
        print(failed[["Model", "Backend", "Target", "Config", "Reason"]].to_string(index=False), file=sys.stderr)
    print(summarise(report).to_markdown(index=False))
    return 0


NAMES = {
    ("tflmi", "reference"): "TFLM reference",
    ("tflmi", "cmsis_nn"): "TFLM + CMSIS-NN",
    ("tvmaot", "off"): "tvmaot scalar",
    ("tvmaot", "auto"): "tvmaot SIMD",
}


def summarise(report: pd.DataFrame) -> pd.DataFrame:
    setting = report["Config"].str.extract(r"(?:tflmi\.kernels|tvmaot\.simd)=(\w+)")[0]
    report = report.assign(Name=[NAMES[(b, s)] for b, s in zip(report["Backend"], setting, strict=True)])
    rows = []
    for (model, board), group in report.groupby(["Model", "Target"], sort=False):
        by = {row["Name"]: row for _, row in group.iterrows()}
        cmsis = by.get("TFLM + CMSIS-NN")
        for name in NAMES.values():
            if name not in by:
                continue
            row = by[name]
            ratio = ""
            if name == "tvmaot SIMD" and cmsis is not None and row["Run Instructions"] > 0:
                ratio = f"{cmsis['Run Instructions'] / row['Run Instructions']:.2f}"
            where = {"model": model, "board": f"{board} ({CORES.get(board, '?')})", "kernels": name}
            rows.append({**where, "CMSIS-NN / tvmaot SIMD": ratio, **kernel_bench.result_columns(row)})
    return pd.DataFrame(rows)


if __name__ == "__main__":
    sys.exit(main())
