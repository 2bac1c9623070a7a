"""Stage keys: a change of mlonmcu's code or templates, or of a component's version, is a miss."""

from __future__ import annotations

import dataclasses
import shutil

from helpers import make_home

from mlonmcu.data import templates_dir
from mlonmcu.environment import Environment
from mlonmcu.hashing import code_fingerprint
from mlonmcu.session import stages
from mlonmcu.session.plan import FlowRequest, plan
from mlonmcu.session.spec import Stage
from mlonmcu.session.stages import RunContext, load
from mlonmcu.setup.deps import Installed


def load_once(spec, run_dir):
    spec = dataclasses.replace(spec, run_dir=run_dir)
    ctx = RunContext.create(spec)
    load(ctx)
    return ctx.keys[Stage.LOAD], ctx.cached


def test_code_and_component_versions_are_part_of_every_key(tmp_path, monkeypatch):
    env = Environment.load(make_home(tmp_path / "home"))
    spec = plan(env, FlowRequest(["kws_dscnn"], ["tvmaot"], ["spike"], until=Stage.LOAD), 0, tmp_path / "runs")[0]
    spec = dataclasses.replace(spec, components={"litert": Installed("litert", "2.3.0", "x")}, missing="")
    key, cached = load_once(spec, tmp_path / "r0")
    assert cached == []
    assert load_once(spec, tmp_path / "r1") == (key, ["load"])
    other_litert = dataclasses.replace(spec, components={"litert": Installed("litert", "9.9.9", "x")})
    key2, cached2 = load_once(other_litert, tmp_path / "r2")
    assert key2 != key and cached2 == []
    monkeypatch.setattr(stages, "code_fingerprint", lambda: "another mlonmcu")
    key3, cached3 = load_once(spec, tmp_path / "r3")
    assert key3 not in (key, key2) and cached3 == []


def test_fingerprint_covers_the_templates(tmp_path, monkeypatch):
    copy = tmp_path / "templates"
    shutil.copytree(templates_dir(), copy)
    monkeypatch.setattr("mlonmcu.hashing.templates_dir", lambda: copy)
    code_fingerprint.cache_clear()
    try:
        before = code_fingerprint()
        harness = copy / "mlif" / "harness.c"
        harness.write_text(harness.read_text() + "\n/* changed */\n")
        code_fingerprint.cache_clear()
        assert code_fingerprint() != before
    finally:
        code_fingerprint.cache_clear()
