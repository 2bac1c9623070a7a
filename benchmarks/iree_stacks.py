#!/usr/bin/env python3
"""The three deployment stacks side by side: iree (the model converted to ONNX, `-F onnx`),
tvmaot and tflmi (the .tflite) on the MLPerf Tiny models on a target (default Spike):
instructions, ROM, RAM (IREE's heap is not in it), arena and validation of every row. Needs
`mlonmcu setup iree tflm tf2onnx`. Run by hand and quote its output; it is not a test.

    python benchmarks/iree_stacks.py [--models DIR] [--only aww,toycar] [--target spike] [--home DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from mlonmcu import api

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kernel_bench


def main() -> int:
    options = kernel_bench.parser(__doc__.splitlines()[0])
    options.add_argument("--target", default="spike", help="target of every run")
    args = options.parse_args()
    models = kernel_bench.model_paths(args)
    if models is None:
        return 2
    common = {
        "targets": [args.target],
        "features": ["validate"],
        "home": args.home,
        "config": {"validate.samples": str(args.samples)},
        "parallel": args.parallel,
    }
    reports = [
        api.flow(models, backends=["tvmaot", "tflmi"], frontends=["tflite"], **common).report,
        api.flow(models, backends=["iree"], frontends=["onnx"], **common).report,
    ]
    report = pd.concat(reports, ignore_index=True)
    failed = report[report["Failing"].astype(bool)]
    if not failed.empty:
        print(failed[["Model", "Backend", "Reason"]].to_string(index=False), file=sys.stderr)
    rows = []
    for _, row in report[~report["Failing"].astype(bool)].iterrows():
        rows.append({"model": row["Model"], "backend": row["Backend"], **kernel_bench.result_columns(row)})
    table = pd.DataFrame(rows)
    for column in ("instructions", "ROM", "arena"):
        table[column] = table[column].astype("Int64")
    print(table.sort_values(["model", "backend"]).to_markdown(index=False, intfmt=","))
    return 0


if __name__ == "__main__":
    sys.exit(main())
