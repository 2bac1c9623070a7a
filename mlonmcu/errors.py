"""Exception types. Every message is meant to be read by a user and acted upon."""


class MlonmcuError(Exception):
    """Base class: an expected failure with a user-facing message."""


class ConfigError(MlonmcuError):
    """Bad usage: unknown name, bad option value, invalid environment file (exit code 2)."""


class SetupError(MlonmcuError):
    """A component could not be installed or is missing."""


class ModelError(MlonmcuError):
    """A model cannot be found or read."""


class StageError(MlonmcuError):
    """A stage of a run failed; the message becomes the run's one-line `Reason`."""


class ToolError(StageError):
    """An external tool exited with an error; carries the tail of its output."""

    def __init__(self, message: str, tail: str = ""):
        super().__init__(message)
        self.tail = tail


class RunTimeout(StageError):
    """A simulator or board did not finish in time and was stopped."""


class DiskFull(MlonmcuError):
    """The disk filled up; the message names the path and the free space."""


class Interrupted(BaseException):
    """Ctrl-C or SIGTERM: stop starting runs, stop running ones, keep what finished.

    A BaseException so that no `except Exception` on the way swallows it.
    """

    def __init__(self, signum: int):
        super().__init__(f"interrupted by signal {signum}")
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum
