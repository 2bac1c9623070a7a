"""TFLM's library for one model: its operators' kernels and the helpers they include, no others."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlonmcu.backends.tflm.tree import MICRO, TflmTree
from mlonmcu.errors import StageError

K = f"{MICRO}/kernels"


def tree(tmp_path: Path) -> TflmTree:
    files = {
        f"{MICRO}/micro_interpreter.cc": '#include "x.h"\n',
        f"{K}/conv.cc": f'#include "{K}/conv.h"\nTFLMRegistration Register_CONV_2D() {{ return {{}}; }}\n',
        f"{K}/conv_common.cc": "int helper() { return 1; }\n",
        f"{K}/conv.h": "",
        f"{K}/add.cc": "TFLMRegistration Register_ADD() { return {}; }\n",
        f"{K}/add_common.cc": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return TflmTree(tmp_path, tmp_path, tmp_path, ("a", "b", "c"))


def test_select_keeps_the_core_the_wanted_kernels_and_their_helpers(tmp_path):
    t = tree(tmp_path)
    sources = [
        s
        for s in (
            f"{MICRO}/micro_interpreter.cc",
            f"{K}/add.cc",
            f"{K}/add_common.cc",
            f"{K}/conv.cc",
            f"{K}/conv_common.cc",
        )
    ]
    assert t.select(sources, {"CONV_2D"}) == [f"{MICRO}/micro_interpreter.cc", f"{K}/conv.cc", f"{K}/conv_common.cc"]
    assert t.select(sources, {"ADD"}) == [f"{MICRO}/micro_interpreter.cc", f"{K}/add.cc"]
    with pytest.raises(StageError, match="Register_RFFT"):
        t.select(sources, {"RFFT"})
