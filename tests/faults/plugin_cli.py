"""`mlonmcu` with the test backends registered, for tests that drive a real CLI process.

The fault tests need firmware that hangs or crashes, run by a separate `mlonmcu` process they
can signal and kill. Process-pool workers import this file as their main module, so the
backends exist there too.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from helpers import FakeFirmwareBackend

from mlonmcu.registry import BACKENDS


class StuckBackend(FakeFirmwareBackend):
    name = "stuck"

    def run_body(self) -> str:
        return 'for (;;) { __asm__ volatile(""); } return 0;'


BACKENDS.register(StuckBackend)

if __name__ == "__main__":
    from mlonmcu.cli.main import main

    main()
