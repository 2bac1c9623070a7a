"""The sessions of a HOME: list them truthfully, find one, clean up old ones.

A session that says `running` in its session.yml but whose lock nobody holds was killed (or
its machine crashed): it is shown as `crashed`. Cleanup never deletes a running session and
never deletes a cache entry another process holds.
"""

from __future__ import annotations

import logging
import re
import shutil
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlonmcu.entry import Entry, find_entries
from mlonmcu.environment import Environment
from mlonmcu.errors import ConfigError
from mlonmcu.session.cache import StageCache
from mlonmcu.session.session import lock_entry, read_meta

logger = logging.getLogger("mlonmcu.sessions")
_ID = re.compile(r"^(\d+|latest)$")
CACHE_AREAS = (("libraries", 2), ("tflm-headers", 1))  # besides the stage entries: (dir, depth)


def status_of(directory: Path, meta: dict[str, Any]) -> str:
    """`running` only if the session's process still holds its lock (this host), else `crashed`."""
    status = str(meta.get("status", "unknown"))
    if status != "running":
        return status
    host = meta.get("host")
    if host and host != socket.gethostname():
        return f"running on {host}"
    with lock_entry(directory).locked(wait=False) as free:
        return "crashed" if free else "running"


def list_sessions(env: Environment) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = []
    if not env.sessions_dir.is_dir():
        return result
    for path in sorted((p for p in env.sessions_dir.iterdir() if p.name.isdigit()), key=lambda p: int(p.name)):
        meta = read_meta(path)
        result.append({**meta, "id": int(path.name), "dir": path, "status": status_of(path, meta)})
    return result


def session_dir(env: Environment, session_id: str) -> Path:
    """A session's directory from its id or `latest` (nothing else: no paths out of HOME)."""
    if not _ID.match(session_id):
        raise ConfigError(f"bad session '{session_id}': give a session id (a number) or 'latest'")
    path = env.sessions_dir / session_id
    if not path.is_dir():
        raise ConfigError(f"no session '{session_id}' in {env.sessions_dir} (see `mlonmcu sessions list`)")
    return path.resolve()


@dataclass
class CleanupResult:
    removed: list[int]
    skipped: list[int]  # running sessions that were kept


def cleanup(env: Environment, keep: int, force: bool = False) -> CleanupResult:
    """Delete all but the newest `keep` sessions. A running session is skipped, or with `force`
    waited for (its lock) and then deleted."""
    sessions = list_sessions(env)
    doomed = sessions[: max(0, len(sessions) - keep)]
    result = CleanupResult([], [])
    for s in doomed:
        lock = lock_entry(s["dir"])
        with lock.locked(wait=False) as free:
            if free:
                shutil.rmtree(s["dir"])
                result.removed.append(s["id"])
                continue
        if not force:
            logger.warning("session %d is running: kept (--force waits for it)", s["id"])
            result.skipped.append(s["id"])
            continue
        logger.warning("waiting for running session %d to end", s["id"])
        with lock.locked():
            shutil.rmtree(s["dir"])
        result.removed.append(s["id"])
    latest = env.sessions_dir / "latest"
    if latest.is_symlink() and not latest.exists():
        latest.unlink()
    return result


def running_sessions(env: Environment) -> list[int]:
    return [s["id"] for s in list_sessions(env) if s["status"] == "running"]


def cache_entries(env: Environment) -> Iterator[Entry]:
    """Every entry of the HOME's cache: stage outputs, libraries, prepared headers."""
    yield from StageCache(env.cache_dir).entries()
    for area, depth in CACHE_AREAS:
        yield from find_entries(env.cache_dir / area, depth)


@dataclass
class CacheCleanup:
    removed: int
    in_use: int  # entries another process held: kept
    freed: int  # bytes


def clear_cache(env: Environment) -> CacheCleanup:
    """Delete every cache entry nobody holds; an entry in use (being computed or read) stays."""
    result = CacheCleanup(0, 0, 0)
    for entry in cache_entries(env):
        with entry.locked(wait=False) as free:
            if not free:
                result.in_use += 1
                continue
            size = sum(p.stat().st_size for p in entry.path.rglob("*") if p.is_file())
            entry.remove()
            entry.lock_path.unlink(missing_ok=True)  # safe while held: waiters re-check the inode
            result.removed += 1
            result.freed += size
    return result


@dataclass
class VerifyResult:
    checked: int
    damaged: list[str]  # "path: problem", removed (recomputed when next needed)
    in_use: int


def verify_cache(env: Environment) -> VerifyResult:
    """Check every entry against its manifest (thoroughly); remove damaged ones."""
    result = VerifyResult(0, [], 0)
    for entry in cache_entries(env):
        with entry.locked(wait=False) as free:
            if not free:
                result.in_use += 1
                continue
            result.checked += 1
            problem = entry.verify(thorough=True)
            if problem:
                logger.warning("%s: %s; removed", entry.path, problem)
                result.damaged.append(f"{entry.path}: {problem}")
                entry.remove()
    return result
