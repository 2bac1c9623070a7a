"""TFLite → Relax with TVM's importer; its rejections become one-line run failures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mlonmcu.errors import StageError


def import_tflite(path: Path) -> Any:
    import tflite
    from tvm.relax.frontend.tflite import from_tflite

    buf = path.read_bytes()
    try:
        model = tflite.Model.GetRootAsModel(buf, 0)
        return from_tflite(model)
    except Exception as err:  # OpNotImplemented, TVMError, ValueError...: all mean "TVM cannot import"
        raise StageError(f"TVM cannot import {path.name}: {first_line(err)}") from None


def first_line(err: BaseException) -> str:
    text = str(err).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    # TVM errors carry a traceback; the useful part is the last "...Error: message" line
    for line in reversed(lines):
        if "Error" in line.split(":", 1)[0] or "not supported" in line.lower():
            return line[:300]
    return (lines[-1] if lines else type(err).__name__)[:300]
