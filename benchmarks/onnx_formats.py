#!/usr/bin/env python3
"""The MLPerf Tiny models as .tflite and as ONNX (converted by mlonmcu with tf2onnx, `-F onnx`)
through tvmaot on Spike and the Cortex-M4 board: instructions of both formats and their ratio,
the float operators left, each row's validation against its own oracle (LiteRT for .tflite,
onnxruntime for ONNX), and whether the ONNX row's outputs equal the .tflite row's sample by
sample. Needs `mlonmcu setup tf2onnx`. Run by hand and quote its output; it is not a test.

    python benchmarks/onnx_formats.py [--models DIR] [--only aww,toycar] [--samples 10] [--home DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from mlonmcu import api

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kernel_bench

TARGETS = ("spike", "mps2_an386")


def _outputs(session_dir: Path, run: int) -> dict[str, np.ndarray]:
    with np.load(session_dir / "runs" / str(run) / "run" / "outputs.npz") as data:
        return {k: data[k] for k in data.files}


def main() -> int:
    options = kernel_bench.parser(__doc__.splitlines()[0])
    args = options.parse_args()
    models = kernel_bench.model_paths(args)
    if models is None:
        return 2
    result = api.flow(
        models,
        backends=["tvmaot"],
        targets=list(TARGETS),
        frontends=["tflite", "onnx"],
        features=["validate"],
        home=args.home,
        config={"validate.samples": str(args.samples)},
        parallel=args.parallel,
    )
    report = result.report
    failed = report[report["Failing"].astype(bool)]
    if not failed.empty:
        print(failed[["Model", "Frontend", "Target", "Reason"]].to_string(index=False), file=sys.stderr)
    rows = []
    by_key = {(r["Model"], r["Frontend"], r["Target"]): r for _, r in report.iterrows()}
    for model in dict.fromkeys(report["Model"]):
        for target in TARGETS:
            tflite, onnx = by_key.get((model, "tflite", target)), by_key.get((model, "onnx", target))
            if tflite is None or onnx is None or tflite["Failing"] or onnx["Failing"]:
                continue
            ours = _outputs(result.session.dir, int(onnx["Run"]))
            theirs = _outputs(result.session.dir, int(tflite["Run"]))
            same = sum(np.array_equal(ours[k], theirs[k]) for k in theirs)
            rows.append(
                {
                    "model": model,
                    "target": target,
                    "tflite instructions": int(tflite["Run Instructions"]),
                    "onnx instructions": int(onnx["Run Instructions"]),
                    "onnx / tflite": round(onnx["Run Instructions"] / tflite["Run Instructions"], 4),
                    "onnx float ops": onnx["Float Ops"],
                    "tflite vs LiteRT": f"{tflite['Validation']} ({tflite['Max Abs Error']:g})",
                    "onnx vs onnxruntime": f"{onnx['Validation']} ({onnx['Max Abs Error']:g})",
                    "onnx outputs = tflite outputs": f"{same} of {len(theirs)}",
                }
            )
    print(pd.DataFrame(rows).to_markdown(index=False, intfmt=","))
    return 0


if __name__ == "__main__":
    sys.exit(main())
