"""Static libraries a backend needs (e.g. TFLM), built per target once and shared by all runs.

A library is a function of its sources' identity, the toolchain and the target's flags; that
key names it in HOME/cache/libraries, so a second session (or a second model) links the same
archive instead of paying minutes of compilation again.
"""

from __future__ import annotations

import fcntl
import shutil
import tempfile
from pathlib import Path
from typing import Any

from mlonmcu.hashing import value_hash
from mlonmcu.platforms.templates import render
from mlonmcu.process import run
from mlonmcu.targets.target import TargetProfile


def library_key(spec: dict[str, Any], profile: TargetProfile, toolchain_version: str) -> str:
    flags = {k: getattr(profile, k) for k in ("toolchain", "compile_flags", "c_flags", "cxx_flags", "toolchain_vars")}
    return value_hash(
        {
            "library": spec["identity"],
            "definitions": spec["definitions"],
            "flags": flags,
            "library_flags": [spec["compile_flags"], spec["cxx_flags"], spec["source_options"]],
            "toolchain": toolchain_version,
        }
    )


def build_library(
    spec: dict[str, Any], profile: TargetProfile, toolchain_version: str, cache_root: Path, log: Path
) -> Path:
    """The archive for this target, built if no session built it before (locked: built once)."""
    key = library_key(spec, profile, toolchain_version)
    directory = cache_root / "libraries" / spec["name"] / key[:24]
    archive = directory / f"lib{spec['name']}.a"
    directory.parent.mkdir(parents=True, exist_ok=True)
    with (directory.parent / f"{key[:24]}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if archive.is_file():
            with log.open("a") as fh:
                fh.write(f"[mlonmcu] {spec['name']}: reusing {archive}\n")
            return archive
        with tempfile.TemporaryDirectory(prefix=f"mlonmcu-{spec['name']}-", dir=directory.parent) as tmp:
            work = Path(tmp)
            render(f"cmake/{profile.toolchain_file}", work / "toolchain.cmake", **profile.toolchain_vars)
            root = Path(spec["root"])
            render(
                "cmake/library.txt.j2",
                work / "project" / "CMakeLists.txt",
                name=spec["name"],
                family=profile.family,
                sources=[(root / s).as_posix() for s in spec["sources"]],
                include_dirs=spec["include_dirs"],
                definitions=spec["definitions"],
                compile_flags=[
                    *profile.compile_flags,
                    *spec["compile_flags"],
                    "-ffunction-sections",
                    "-fdata-sections",
                ],
                c_flags=list(profile.c_flags),
                cxx_flags=[*profile.cxx_flags, *spec["cxx_flags"]],
                source_options=[
                    {"sources": [(root / s).as_posix() for s in group["sources"]], "options": group["options"]}
                    for group in spec["source_options"]
                ],
            )
            with log.open("a") as fh:
                fh.write(f"[mlonmcu] building {spec['name']} ({len(spec['sources'])} sources) for {profile.family}\n")
            run(
                [
                    "cmake",
                    "-S",
                    work / "project",
                    "-B",
                    work / "build",
                    f"-DCMAKE_TOOLCHAIN_FILE={work / 'toolchain.cmake'}",
                    "-DCMAKE_BUILD_TYPE=None",
                ],
                log=log,
                what=f"cmake configure ({spec['name']})",
            )
            run(["cmake", "--build", work / "build", "--parallel", "2"], log=log, what=f"{spec['name']} build")
            staging = Path(tempfile.mkdtemp(dir=directory.parent))
            shutil.copyfile(work / "build" / f"lib{spec['name']}.a", staging / archive.name)
            shutil.rmtree(directory, ignore_errors=True)
            staging.replace(directory)
        return archive
