#!/usr/bin/env python3
"""Measured cycles on the Ibex RTL: the MLPerf Tiny models with tvmaot and tflmi on `ibex` in two
configurations (small: 2-stage, fast multiplier; maxperf: single-cycle multiplier, branch
target ALU, writeback stage) — cycles (mcycle), instructions (minstret), CPI, validation, and the
simulation speed of the Verilator model (simulated cycles per wall-clock second, from the run
logs). Needs `mlonmcu setup ibex tflm`; each configuration's model builds once (about a minute).
Run by hand and quote its output; it is not a test.

    python benchmarks/ibex_cycles.py [--models DIR] [--configs small,maxperf] [--only aww,toycar] [--home DIR]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pandas as pd

from mlonmcu import api

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kernel_bench

_SPEED = re.compile(r"ibex: ([0-9.]+) M simulated cycles per second")


def main() -> int:
    options = kernel_bench.parser(__doc__.splitlines()[0])
    options.add_argument("--configs", default="small,maxperf", help="comma-separated Ibex configurations")
    options.add_argument("--backends", default="tvmaot,tflmi", help="comma-separated backends")
    args = options.parse_args()
    models = kernel_bench.model_paths(args)
    if models is None:
        return 2
    result = api.flow(
        models,
        backends=args.backends.split(","),
        targets=["ibex"],
        features=["validate"],
        home=args.home,
        config={"ibex.config": args.configs.split(","), "validate.samples": str(args.samples)},
        parallel=args.parallel,
    )
    report = result.report
    failed = report[report["Failing"].astype(bool)]
    if not failed.empty:
        print(failed[["Model", "Backend", "Config", "Reason"]].to_string(index=False), file=sys.stderr)
    rows = []
    for _, row in report.iterrows():
        log = result.session.dir / "runs" / str(int(row["Run"])) / "logs" / "run.log"
        speeds = _SPEED.findall(log.read_text()) if log.is_file() else []
        config = re.search(r"ibex\.config=([\w-]+)", str(row["Config"]))
        rows.append(
            {
                "model": row["Model"],
                "backend": row["Backend"],
                "config": config[1] if config else "small",
                "cycles": row["Run Cycles"],
                "instructions": row["Run Instructions"],
                "CPI": round(row["Run Cycles"] / row["Run Instructions"], 2) if row["Run Instructions"] else "",
                "validation": row["Validation"],
                "max abs error": row["Max Abs Error"],
                "M cycles/s": speeds[-1] if speeds else "",
            }
        )
    table = pd.DataFrame(rows).sort_values(["model", "backend", "config"])
    print(table.to_markdown(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
