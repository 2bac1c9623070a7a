"""Files a user reads appear whole or not at all: written to a temporary file, then renamed.

A full disk or a crash mid-write leaves the previous version in place, never a truncated one,
and a full disk is reported as one line naming the path and the free space.
"""

from __future__ import annotations

import errno
import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

from mlonmcu.errors import ConfigError, DiskFull


def free_bytes(path: Path) -> int:
    """Free space on the file system holding `path` (or its nearest existing parent)."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        return shutil.disk_usage(probe).free
    except OSError:
        return -1


def disk_full(path: Path) -> DiskFull:
    free = free_bytes(path)
    left = f"{free:,} bytes free" if free >= 0 else "free space unknown"
    return DiskFull(f"no space left on device writing {path} ({left}); free some space and run again")


FULL = (errno.ENOSPC, errno.EDQUOT)


def is_disk_full(err: BaseException) -> bool:
    """ENOSPC or EDQUOT, also inside a shutil.Error: copytree gathers each file's error into one
    list of (source, destination, message), which names the errno only in its text."""
    if isinstance(err, shutil.Error):
        return any(_full_message(entry) for entry in _copy_errors(err))
    return isinstance(err, OSError) and err.errno in FULL


def _copy_errors(err: shutil.Error) -> list[object]:
    entries = err.args[0] if err.args and isinstance(err.args[0], list) else list(err.args)
    return [entry[-1] if isinstance(entry, tuple) and entry else entry for entry in entries]


def _full_message(message: object) -> bool:
    return any(f"[Errno {code}]" in str(message) for code in FULL)


def write_with(path: Path, writer: Callable[[Path], object]) -> Path:
    """Let `writer` fill a temporary file next to `path`, then rename it over `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        writer(tmp)
        os.replace(tmp, path)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        if is_disk_full(err):
            raise disk_full(path) from None
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_text(path: Path, text: str) -> Path:
    return write_with(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_bytes(path: Path, data: bytes) -> Path:
    return write_with(path, lambda tmp: tmp.write_bytes(data))


def probe_directory(directory: Path) -> None:
    """Create `directory` and write a file in it (OSError if it cannot be written)."""
    directory.mkdir(parents=True, exist_ok=True)
    probe = directory / f".probe.{uuid.uuid4().hex[:8]}"
    probe.write_bytes(b"")
    probe.unlink()


def check_writable(path: Path) -> None:
    """Fail before any work if a report could not be written to `path` (a usage error)."""
    if path.is_dir():
        raise ConfigError(f"cannot write the report to {path}: it is a directory")
    try:
        probe_directory(path.parent)
    except OSError as err:
        raise ConfigError(f"cannot write the report to {path}: {err.strerror or err}") from None
    if path.exists() and not os.access(path, os.W_OK):
        raise ConfigError(f"cannot write the report to {path}: permission denied")
