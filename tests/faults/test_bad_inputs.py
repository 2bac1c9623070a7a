"""Every bad input gets its documented exit code and a message naming the problem, never a traceback."""

from __future__ import annotations

import re

import plugin_cli  # noqa: F401  (the test backends the fault HOME enables)
import pytest
from bad_inputs import BAD_INPUTS, expand, prepare

from mlonmcu.data import bundled_models_dir

pytestmark = [pytest.mark.integration, pytest.mark.faults]


@pytest.mark.parametrize("bad", BAD_INPUTS, ids=[b.what for b in BAD_INPUTS])
def test_bad_input_is_handled(fault_home, tmp_path, mlonmcu, bad):
    prepare(tmp_path / "files", bundled_models_dir() / "kws_dscnn" / "kws_dscnn.tflite")
    code, output = mlonmcu(*expand(bad.args, fault_home, tmp_path / "files"))
    assert code == bad.code, output
    assert re.search(bad.message, output), output
    if bad.code == 2 and bad.args[:2] == ("flow", "run"):
        assert not list((fault_home / "sessions").glob("[0-9]*")), "a usage error must not leave a session"
