#!/usr/bin/env python3
"""Measured cycles on the Ibex RTL and how well the timing models estimate them: the MLPerf Tiny
models with tvmaot and tflmi on `ibex` in two configurations (small: 2-stage, fast multiplier;
maxperf: single-cycle multiplier, branch target ALU, writeback stage) — cycles (mcycle),
instructions (minstret), CPI, validation, the Verilator model's speed (simulated cycles per
wall-clock second, from the run logs) — and the same ELF's instruction classes counted on
`qemu_rv32` (the ELF Spike runs) weighted by `qemu_rv32.timing_model=ibex-<config>`: Estimated
Cycles, their error against the RTL, and QEMU's speed in estimated cycles per second. Needs
`mlonmcu setup ibex tflm qemu_plugin`; each configuration's model builds once (about a minute).
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
_CONFIG = r"ibex\.config=([\w-]+)"
_MODEL = r"qemu_rv32\.timing_model=ibex-([\w-]+)"


def _config(row: pd.Series, pattern: str) -> str:
    match = re.search(pattern, str(row["Config"]))
    return match[1] if match else "small"


def main() -> int:
    options = kernel_bench.parser(__doc__.splitlines()[0])
    options.add_argument("--configs", default="small,maxperf", help="comma-separated Ibex configurations")
    options.add_argument("--backends", default="tvmaot,tflmi", help="comma-separated backends")
    args = options.parse_args()
    models = kernel_bench.model_paths(args)
    if models is None:
        return 2
    configs = args.configs.split(",")
    result = api.flow(
        models,
        backends=args.backends.split(","),
        targets=["ibex", "qemu_rv32"],
        features=["validate"],
        home=args.home,
        config={
            "ibex.config": configs,
            "qemu_rv32.timing_model": [f"ibex-{c}" for c in configs],
            "validate.samples": str(args.samples),
        },
        parallel=args.parallel,
    )
    report = result.report
    failed = report[report["Failing"].astype(bool)]
    if not failed.empty:
        print(failed[["Model", "Backend", "Config", "Reason"]].to_string(index=False), file=sys.stderr)
    estimates = {
        (row["Model"], row["Backend"], _config(row, _MODEL)): row
        for _, row in report[report["Target"] == "qemu_rv32"].iterrows()
    }
    rows = []
    for _, row in report[report["Target"] == "ibex"].iterrows():
        log = result.session.dir / "runs" / str(int(row["Run"])) / "logs" / "run.log"
        speeds = _SPEED.findall(log.read_text()) if log.is_file() else []
        config = _config(row, _CONFIG)
        estimate = estimates.get((row["Model"], row["Backend"], config))
        estimated = estimate["Estimated Cycles"] if estimate is not None else float("nan")
        seconds = estimate["Run Stage Time [s]"] if estimate is not None else float("nan")
        rows.append(
            {
                "model": row["Model"],
                "backend": row["Backend"],
                "config": config,
                "RTL cycles": int(row["Run Cycles"]),
                "instructions": int(row["Run Instructions"]),
                "CPI": round(row["Run Cycles"] / row["Run Instructions"], 3) if row["Run Instructions"] else "",
                "estimated cycles": int(estimated) if estimated == estimated else "",
                "error %": round(100 * (estimated / row["Run Cycles"] - 1), 3),
                "validation": row["Validation"],
                "RTL M cycles/s": speeds[-1] if speeds else "",
                "QEMU M est. cycles/s": round(estimated / seconds / 1e6, 1) if seconds else "",
            }
        )
    table = pd.DataFrame(rows).sort_values(["model", "backend", "config"])
    print(table.to_markdown(index=False, intfmt=","))
    return 0


if __name__ == "__main__":
    sys.exit(main())
