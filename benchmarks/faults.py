#!/usr/bin/env python3
"""Faults survived, bad inputs handled, and what cache verification costs.

1. Runs the fault-injection suite (tests/faults, real runs) and counts, from its results, the
   faults injected and survived and the bad inputs tried and handled.
2. Times an unchanged rerun of the 8-run sweep `aww vww resnet toycar × spike qemu_rv32 -f
   validate --parallel 2` with cache verification and with it switched off (only here, for the
   measurement: the switch exists in this script alone), best of N, and prints the ratio.

Run by hand and quote its output; it is not a test.

    python benchmarks/faults.py [--models DIR] [--repeat 3] [--skip-suite] [--skip-timing]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NO_VERIFY = "MLONMCU_BENCH_NO_VERIFY"

if os.environ.get(NO_VERIFY) == "1":  # also runs in the process-pool workers, which import this file

    def _copy_unverified(self, thorough=True, copy=None):  # type: ignore[no-untyped-def]
        """The entry copied out without reading it for hashes: what verification is compared to."""
        if copy is None:
            return "" if self.exists() else "missing"
        if not self.exists():
            return "missing"
        subdir, dest = copy
        shutil.copytree(self.path / subdir, dest, dirs_exist_ok=True)
        return ""

    from mlonmcu.entry import Entry

    Entry.verify = _copy_unverified  # type: ignore[method-assign]


def suite() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "faults.xml"
        subprocess.run(
            [sys.executable, "-m", "pytest", "tests/faults", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}"],
            cwd=REPO,
            check=False,
        )
        cases = ET.parse(junit).getroot().iter("testcase")
        results = [
            (c.get("name", ""), not any(c.find(t) is not None for t in ("failure", "error", "skipped"))) for c in cases
        ]
    bad = [ok for name, ok in results if name.startswith("test_bad_input")]
    faults = [ok for name, ok in results if not name.startswith("test_bad_input")]
    print(f"faults injected: {len(faults)}, survived: {sum(faults)}")
    print(f"bad inputs tried: {len(bad)}, handled: {sum(bad)}")


STAGE_TIMES = ("Load Stage Time [s]", "Build Stage Time [s]", "Compile Stage Time [s]", "Run Stage Time [s]")


def sweep(models: Path, home: Path, no_verify: bool) -> tuple[float, float]:
    """One sweep in a process of its own (this file as its main module, so that the pool
    workers it spawns import it too and get the same verification setting): wall-clock
    seconds, and the seconds its runs spent in their stages (cache restore and verification)."""
    env = {**os.environ, NO_VERIFY: "1" if no_verify else "0"}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, __file__, "--sweep-home", str(home), "--models", str(models)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    return wall, float(done.stdout.split("STAGES")[-1])


def sweep_child(models: Path, home: Path) -> int:
    from mlonmcu import api

    names = [str(models / m / f"{m}.tflite") for m in ("aww", "vww", "resnet", "toycar")]
    result = api.flow(
        names, home=home, backends=["tvmaot"], targets=["spike", "qemu_rv32"], features=["validate"], parallel=2
    )
    if result.failed:
        print(result.report[["Model", "Target", "Reason"]], file=sys.stderr)
        return 1
    print("STAGES", float(result.report[list(STAGE_TIMES)].sum().sum()))
    return 0


def timing(models: Path, repeat: int) -> None:
    from mlonmcu.environment.home import resolve_home

    if not (models / "aww").is_dir():
        print(f"no MLPerf Tiny models in {models}: timing skipped (pass --models)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        subprocess.run([sys.executable, "-m", "mlonmcu", "init", str(home)], check=True, stdout=subprocess.DEVNULL)
        text = (home / "environment.yml").read_text()
        (home / "environment.yml").write_text(text.replace("  deps: deps", f"  deps: {resolve_home(None) / 'deps'}"))
        cold, _ = sweep(models, home, no_verify=False)
        verified = [sweep(models, home, no_verify=False) for _ in range(repeat)]
        unverified = [sweep(models, home, no_verify=True) for _ in range(repeat)]
    wall_v, wall_u = min(w for w, _ in verified), min(w for w, _ in unverified)
    stage_v, stage_u = min(t for _, t in verified), min(t for _, t in unverified)
    print(f"8-run sweep, cold: {cold:.1f} s")
    print(f"unchanged rerun (best of {repeat}), verified: {wall_v:.2f} s; without verification: {wall_u:.2f} s")
    print(f"verification adds {100 * (wall_v / wall_u - 1):+.1f} % to an unchanged rerun (wall clock)")
    print(
        f"time in the runs' stages (cache restore): verified {stage_v:.3f} s, without {stage_u:.3f} s, "
        f"+{stage_v - stage_u:.3f} s"
    )
    print(f"unchanged rerun / cold run: {100 * wall_v / cold:.1f} %")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, default=REPO.parent / "shared" / "models")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-suite", action="store_true")
    parser.add_argument("--skip-timing", action="store_true")
    parser.add_argument("--sweep-home", type=Path, help=argparse.SUPPRESS)  # internal: one timed sweep
    args = parser.parse_args()
    if args.sweep_home:
        return sweep_child(args.models, args.sweep_home)
    if not args.skip_suite:
        suite()
    if not args.skip_timing:
        timing(args.models, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
