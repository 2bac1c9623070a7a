"""The orchestrator's own log: cache hits, misses and repairs, component lookups, commands, retries.

Everything goes through the `mlonmcu` logger. The terminal shows warnings (`-v`: decisions,
`-vv`: every command; `-q`: errors only); each session directory keeps `mlonmcu.log` with the
decisions of all its runs, whichever process ran them.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOGGER = "mlonmcu"
SESSION_LOG = "mlonmcu.log"
FILE_FORMAT = "%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"


class _Console(logging.StreamHandler):
    """Writes to the *current* sys.stderr (CLI test runners swap it)."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("%(levelname_lower)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        record.levelname_lower = record.levelname.lower()
        super().emit(record)


class _SessionFile(logging.FileHandler):
    """The session's mlonmcu.log. A write it cannot make (a full disk) stops it with one line on
    the terminal, instead of logging's `--- Logging error ---` traceback for every later record:
    the error that matters (which file, how much space) is reported where it happened."""

    stopped = False

    def emit(self, record: logging.LogRecord) -> None:
        if not self.stopped:
            super().emit(record)

    def handleError(self, record: logging.LogRecord) -> None:
        err = sys.exc_info()[1]
        if not isinstance(err, OSError):
            super().handleError(record)
            return
        self._stop(err)

    def close(self) -> None:
        try:
            super().close()
        except OSError as err:  # the buffered tail could not be flushed
            self.stream = None
            self._stop(err)
            logging.Handler.close(self)

    def _stop(self, err: OSError) -> None:
        if self.stopped:
            return
        self.stopped = True
        print(f"warning: session log {self.baseFilename} not written further: {err.strerror or err}", file=sys.stderr)


def level_for(verbosity: int) -> int:
    """-q → -1, default 0, -v → 1, -vv → 2."""
    return {-1: logging.ERROR, 0: logging.WARNING, 1: logging.INFO}.get(verbosity, logging.DEBUG)


def configure(verbosity: int = 0) -> None:
    """Terminal logging for this process (the CLI and every pool worker call it)."""
    logger = logging.getLogger(LOGGER)
    for handler in [h for h in logger.handlers if isinstance(h, _Console)]:
        logger.removeHandler(handler)
    console = _Console()
    console.setLevel(level_for(verbosity))
    logger.addHandler(console)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False


@contextmanager
def session_log(path: Path | None, level: int = logging.INFO) -> Iterator[None]:
    """Append this process's records to a session's mlonmcu.log while the block runs."""
    if path is None:
        yield
        return
    logger = logging.getLogger(LOGGER)
    target = str(path.resolve())
    if any(isinstance(h, logging.FileHandler) and h.baseFilename == target for h in logger.handlers):
        yield  # the session already logs there (runs in the orchestrator's own process)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = _SessionFile(path, encoding="utf-8")
    handler.setLevel(level)
    handler.setFormatter(logging.Formatter(FILE_FORMAT))
    logger.addHandler(handler)
    if logger.level == logging.NOTSET or logger.level > level:
        logger.setLevel(level)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        handler.close()
