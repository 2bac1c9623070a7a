#!/usr/bin/env python3
"""Arm Cortex-M: TFLM (reference kernels, CMSIS-NN) against tvmaot (scalar, SIMD) in QEMU.

Per MLPerf Tiny model and board: TFLM with its reference kernels and with CMSIS-NN
(`tflmi.kernels=cmsis_nn`: DSP on M4/M7/M33, MVE on M55, portable C on M3), tvmaot with its scalar
kernels (`tvmaot.simd=off`) and with the kernels `simd=auto` lays out for the board's core (DSP on
M4/M7/M33, MVE on M55, scalar on M3) — exact QEMU instruction counts, validation, ROM and arena,
and CMSIS-NN's count over tvmaot SIMD's (> 1: tvmaot needs fewer instructions); with --estimate,
also estimated cycles on the boards whose core publishes instruction timings (M3, M4). Needs
`mlonmcu setup tflm cmsis_nn`; each board's TFLM libraries build once (minutes). Run by hand and
quote its output; it is not a test.

    python benchmarks/arm_kernels.py [--models DIR] [--boards mps2_an386,mps3_an547] [--estimate] [--home DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from mlonmcu import api
from mlonmcu.targets.timing import TIMINGS

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kernel_bench

BOARDS = ("mps2_an385", "mps2_an386", "mps2_an500", "mps2_an505", "mps3_an547")
CORES = {"mps2_an385": "M3", "mps2_an386": "M4", "mps2_an500": "M7", "mps2_an505": "M33", "mps3_an547": "M55"}
TIMED = {"mps2_an385", "mps2_an386"}  # boards whose core has a table in targets/timing.py
assert {f"cortex-m{CORES[b][1:]}" for b in TIMED} <= set(TIMINGS)


def main() -> int:
    options = kernel_bench.parser(__doc__.splitlines()[0])
    options.add_argument("--boards", default=",".join(BOARDS), help="comma-separated QEMU boards")
    options.add_argument("--estimate", action="store_true", help="also estimated cycles on the M3/M4 boards")
    args = options.parse_args()
    models = kernel_bench.model_paths(args)
    if models is None:
        return 2
    boards = args.boards.split(",")
    common = {"backends": None, "home": args.home, "targets": boards, "features": ["validate"]}
    estimate = {f"{b}.estimate_cycles": "1" for b in boards if b in TIMED} if args.estimate else {}
    frames = []
    for backend, config in (
        ("tflmi", {"tflmi.kernels": ["reference", "cmsis_nn"]}),
        ("tvmaot", {"tvmaot.simd": ["off", "auto"]}),
    ):
        result = api.flow(
            models,
            **{**common, "backends": [backend]},
            config={**config, **estimate, "validate.samples": str(args.samples)},
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
            where = {"model": model, "board": f"{board} ({CORES.get(board, '?')})", "kernels": name}
            ratios = {"CMSIS-NN / tvmaot SIMD": _ratio(cmsis, row, "Run Instructions") if name == "tvmaot SIMD" else ""}
            estimated = {}
            if "Estimated Cycles" in report and not report["Estimated Cycles"].isna().all():
                estimated = {"est. cycles": row["Estimated Cycles"]}
                ratios["in est. cycles"] = _ratio(cmsis, row, "Estimated Cycles") if name == "tvmaot SIMD" else ""
            rows.append({**where, **ratios, **kernel_bench.result_columns(row), **estimated})
    return pd.DataFrame(rows)


def _ratio(cmsis: pd.Series | None, row: pd.Series, metric: str) -> str:
    """CMSIS-NN's figure over this row's, where both exist."""
    if cmsis is None or pd.isna(cmsis.get(metric)) or pd.isna(row.get(metric)) or not row[metric]:
        return ""
    return f"{cmsis[metric] / row[metric]:.2f}"


if __name__ == "__main__":
    sys.exit(main())
