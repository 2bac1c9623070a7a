#!/usr/bin/env python3
"""Which real int8 models tvmaot runs, bit-exact, beside TFLite Micro — and how fast.

Every .tflite under the given directories (searched recursively; the same bytes once) runs
through `tvmaot` and `tflmi` on Spike with `validate`. Per model it prints: the operators, whether
TFLM runs it, whether tvmaot runs it, whether tvmaot is exact (against LiteRT's reference
kernels, or against TFLM's outputs where LiteRT has no reference), whether tvmaot's outputs are
TFLM's byte for byte ("= TFLM", whichever oracle judged), which importer built it, tvmaot/TFLM
instructions and tvmaot's `Float Ops`; then totals. Run by hand and quote it; it is not a test.
Needs `mlonmcu setup tflm` (or --backends tvmaot).

    python benchmarks/coverage.py DIR... [--home H] [--samples 3] [--parallel 2] [--markdown]
        [-c tvmaot.arithmetic=tflm ...]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mlonmcu import api
from mlonmcu.models.tflite_graph import read_graph


def find_models(directories: list[Path]) -> list[Path]:
    seen: dict[str, Path] = {}
    for directory in directories:
        for path in sorted(directory.rglob("*.tflite")) if directory.is_dir() else [directory]:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            seen.setdefault(digest, path)
    return list(seen.values())


def kind(path: Path) -> tuple[str, str]:
    """(the model's activation type, its operators) from the flatbuffer."""
    try:
        graph = read_graph(path)
    except Exception as err:  # a model the reader refuses is a row too
        return "unreadable", str(err)[:60]
    types = {graph.tensors[i].dtype for i in graph.inputs}
    quantized = any(t.quantized and t.dtype in ("int8", "int16") for t in graph.tensors)
    activations = {t.dtype for t in graph.tensors if t.data is None}
    label = "int16x8" if "int16" in activations and quantized else "int8" if quantized else "float"
    if quantized and "float32" in types:
        label += " (float I/O)"
    return label, " ".join(dict.fromkeys(op.op for op in graph.operators))


def _outputs(run_dir: Path) -> list[np.ndarray] | None:
    path = run_dir / "run" / "outputs.npz"
    if not path.is_file():
        return None
    with np.load(path) as data:
        return [data[k] for k in sorted(data.files)]


def _same_as_tflm(session_dir: Path, tvm: pd.Series, tflm: pd.Series) -> str:
    """Whether tvmaot's outputs are TFLM's, byte for byte, on the same samples ("no (N)": the
    largest difference) — what a TFLM user ships, whichever oracle judged the run."""
    ours = _outputs(session_dir / "runs" / str(int(tvm["Run"])))
    theirs = _outputs(session_dir / "runs" / str(int(tflm["Run"])))
    if ours is None or theirs is None or len(ours) != len(theirs):
        return "?"
    if any(a.shape != b.shape for a, b in zip(ours, theirs, strict=True)):
        return "?"
    worst = max(
        float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)), initial=0.0))
        for a, b in zip(ours, theirs, strict=True)
    )
    return "yes" if worst == 0 else f"no ({worst:g})"


def _importer(run_dir: Path) -> str:
    log = run_dir / "logs" / "build.log"
    try:
        return str(json.loads(log.read_text()).get("importer", "?")).split(" (")[0]
    except (OSError, ValueError):
        return ""


def summarize(report: pd.DataFrame, session_dir: Path, paths: list[Path]) -> pd.DataFrame:
    rows: list[dict[str, Any]] = []
    for path in paths:
        name = path.stem
        runs = report[report.Model == name].set_index("Backend")
        label, ops = kind(path)
        row: dict[str, Any] = {"Model": name, "Type": label, "Operators": ops}
        tflm = runs.loc["tflmi"] if "tflmi" in runs.index else None
        tvm = runs.loc["tvmaot"] if "tvmaot" in runs.index else None
        row["TFLM runs"] = "yes" if tflm is not None and not tflm["Failing"] else "no"
        row["tvmaot runs"] = "yes" if tvm is not None and not tvm["Failing"] else "no"
        exact = ""
        if tvm is not None and not tvm["Failing"]:
            if tvm["Validation"] == "pass":
                exact = "yes" if tvm["Max Abs Error"] == 0 else f"no (±{tvm['Max Abs Error']:g})"
            elif tvm["Validation"] == "fail":
                exact = f"no ({tvm['Max Abs Error']:g})"
            elif tflm is not None and not tflm["Failing"]:  # no LiteRT reference: TFLM is the oracle
                exact = "yes (= TFLM)" if _same_as_tflm(session_dir, tvm, tflm) == "yes" else "no (≠ TFLM)"
            else:
                exact = "no oracle"
            if tflm is not None and not tflm["Failing"]:
                row["= TFLM"] = _same_as_tflm(session_dir, tvm, tflm)
            row["Importer"] = _importer(session_dir / "runs" / str(int(tvm["Run"])))
            row["Float Ops"] = tvm["Float Ops"]
        row["Exact"] = exact
        if row["TFLM runs"] == row["tvmaot runs"] == "yes":
            row["tvmaot/TFLM instr."] = round(float(tvm["Run Instructions"]) / float(tflm["Run Instructions"]), 3)
        failing = [f"{b}: {str(runs.loc[b, 'Reason'])[:90]}" for b in runs.index if runs.loc[b, "Failing"]]
        row["Why not"] = "; ".join(failing)
        rows.append(row)
    return pd.DataFrame(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directories", nargs="+", type=Path)
    parser.add_argument("--home", default=None, help="mlonmcu HOME (default: the usual one)")
    parser.add_argument("--backends", default="tvmaot,tflmi")
    parser.add_argument("--target", default="spike")
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table (for docs/)")
    parser.add_argument(
        "-c",
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a config value for every run, e.g. tvmaot.arithmetic=tflm (repeatable)",
    )
    args = parser.parse_args()
    paths = find_models(args.directories)
    if not paths:
        print("no .tflite files found", file=sys.stderr)
        return 2
    names = [p.stem for p in paths]
    if len(set(names)) != len(names):
        print("two different models share a file name; rename one", file=sys.stderr)
        return 2
    result = api.flow(
        [str(p) for p in paths],
        home=args.home,
        backends=args.backends.split(","),
        targets=[args.target],
        features=["validate"],
        config={"validate.samples": args.samples, **dict(item.split("=", 1) for item in args.config)},
        parallel=args.parallel,
    )
    table = summarize(result.report, result.session.dir, paths)
    with pd.option_context("display.max_rows", None, "display.max_colwidth", 60, "display.width", 250):
        print(table.to_markdown(index=False) if args.markdown else table.to_string(index=False))
    both = table[table["TFLM runs"] == "yes"]
    exact = both[both["Exact"].str.startswith("yes")]
    ratios = both["tvmaot/TFLM instr."].dropna() if "tvmaot/TFLM instr." in both else pd.Series(dtype=float)
    print(
        f"\n{len(table)} models; TFLM runs {len(both)}; tvmaot runs {int((table['tvmaot runs'] == 'yes').sum())}; "
        f"of the models TFLM runs, tvmaot runs bit-exact {len(exact)}"
        + (f"; tvmaot/TFLM instructions: median {ratios.median():.3f}, worst {ratios.max():.3f}" if len(ratios) else "")
    )
    print(f"session: {result.session.dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
