"""Static libraries a backend needs (e.g. TFLM), built per target once and shared by all runs.

A library is a function of its sources' identity, the toolchain and the target's flags; that
key names it in HOME/cache/libraries, so a second session (or a second model) links the same
archive instead of paying minutes of compilation again.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mlonmcu.contracts import LibrarySpec, TargetProfile
from mlonmcu.data import templates_dir
from mlonmcu.entry import Entry
from mlonmcu.hashing import file_hash, tree_hash, value_hash
from mlonmcu.platforms.templates import render
from mlonmcu.process import run

logger = logging.getLogger("mlonmcu.cache")


def library_key(spec: LibrarySpec, profile: TargetProfile, toolchain_version: str) -> str:
    flags = {k: getattr(profile, k) for k in ("toolchain", "compile_flags", "c_flags", "cxx_flags", "toolchain_vars")}
    return value_hash(
        {
            "library": spec.identity,
            "definitions": spec.definitions,
            "flags": flags,
            "library_flags": [
                spec.compile_flags,
                spec.cxx_flags,
                [(g.sources, g.options) for g in spec.source_options],
            ],
            "toolchain": toolchain_version,
            # what builds it: this module and the CMake templates (not all of mlonmcu: a
            # library takes minutes to build, and nothing else of mlonmcu goes into it)
            "code": value_hash([file_hash(Path(__file__)), tree_hash(templates_dir() / "cmake")]),
        }
    )


@contextmanager
def library_archive(
    spec: LibrarySpec, profile: TargetProfile, toolchain_version: str, cache_root: Path, log: Path
) -> Iterator[Path]:
    """The archive for this target, built if no session built it before (once: locked), verified
    against its manifest when reused, and protected from cleanup while the caller links it."""
    key = library_key(spec, profile, toolchain_version)
    entry = Entry(cache_root / "libraries" / spec.name / key[:24], f"library {spec.name} {key[:12]}")
    archive = entry.path / f"lib{spec.name}.a"
    with entry.using(lambda staging: _build(spec, profile, staging / archive.name, cache_root, log)) as hit:
        if hit:
            logger.info("cache hit: library %s %s", spec.name, key[:12])
            with log.open("a") as fh:
                fh.write(f"[mlonmcu] {spec.name}: reusing {archive}\n")
        yield archive


def _compiler_cache(cache_root: Path, log: Path) -> tuple[list[str], dict[str, str]]:
    """CMake options and environment that put Debian's ccache in front of the compilers.

    Libraries for two models differ in a few kernels only; with ccache in HOME/cache/ccache the
    second one compiles just those (a library archive is keyed by its exact source list).
    """
    ccache = shutil.which("ccache")
    if ccache is None:
        with log.open("a") as fh:
            fh.write("[mlonmcu] ccache not found: every source is compiled (`mlonmcu setup cmake` installs it)\n")
        return [], {}
    directory = cache_root / "ccache"
    with log.open("a") as fh:
        fh.write(f"[mlonmcu] compiling through ccache ({directory})\n")
    options = [f"-DCMAKE_{lang}_COMPILER_LAUNCHER={ccache}" for lang in ("C", "CXX")]
    return options, {"CCACHE_DIR": str(directory)}


def _build(spec: LibrarySpec, profile: TargetProfile, archive: Path, cache_root: Path, log: Path) -> None:
    with tempfile.TemporaryDirectory(prefix=f"mlonmcu-{spec.name}-") as tmp:
        work = Path(tmp)
        render(f"cmake/{profile.toolchain_file}", work / "toolchain.cmake", **profile.toolchain_vars)
        root = Path(spec.root)
        render(
            "cmake/library.txt.j2",
            work / "project" / "CMakeLists.txt",
            name=spec.name,
            family=profile.family,
            sources=[(root / s).as_posix() for s in spec.sources],
            include_dirs=list(spec.include_dirs),
            definitions=list(spec.definitions),
            compile_flags=[*profile.compile_flags, *spec.compile_flags, "-ffunction-sections", "-fdata-sections"],
            c_flags=list(profile.c_flags),
            cxx_flags=[*profile.cxx_flags, *spec.cxx_flags],
            source_options=[
                {"sources": [(root / s).as_posix() for s in group.sources], "options": list(group.options)}
                for group in spec.source_options
            ],
        )
        with log.open("a") as fh:
            fh.write(f"[mlonmcu] building {spec.name} ({len(spec.sources)} sources) for {profile.family}\n")
        logger.info("building library %s for %s", spec.name, profile.family)
        launcher, env = _compiler_cache(cache_root, log)
        run(
            [
                "cmake",
                "-S",
                work / "project",
                "-B",
                work / "build",
                f"-DCMAKE_TOOLCHAIN_FILE={work / 'toolchain.cmake'}",
                "-DCMAKE_BUILD_TYPE=None",
                *launcher,
            ],
            log=log,
            what=f"cmake configure ({spec.name})",
        )
        run(["cmake", "--build", work / "build", "--parallel", "2"], log=log, env=env, what=f"{spec.name} build")
        shutil.copyfile(work / "build" / archive.name, archive)
