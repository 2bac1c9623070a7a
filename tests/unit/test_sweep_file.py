"""Sweep files: every problem is found before any run, and names the file, line and key."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from mlonmcu.environment import Environment
from mlonmcu.errors import ConfigError
from mlonmcu.session.sweep import MAX_RUNS, load_sweep, parse_sweep, plan_sweep

REPO = Path(__file__).resolve().parents[2]

GOOD = """\
name: t
models: [kws_dscnn, cnn_small]
backends: [tvmaot]
targets: [spike, qemu_rv32]
config:
  mlif.optimize: [O2, Os]
exclude:
  - target: qemu_rv32
    config: {mlif.optimize: Os}
include:
  - model: kws_dscnn_fp32
    target: spike
    config: {mlif.optimize: O2}
compare:
  thresholds: {Total ROM: 1%, Run Instructions: 0}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.yml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("models: [a]\nbackend: [tvmaot]\n", r"s\.yml:2: backend: unknown key \(did you mean 'backends'\?\)"),
        ("models: [a]\ntargets: []\n", r"s\.yml:2: targets: empty list"),
        ("models: [a]\nconfig:\n  mlif.optimize: []\n", r"s\.yml:3: config\.mlif\.optimize: empty list"),
        ("models: [a]\nconfig:\n  mlif.optimise: O2\n", r"s\.yml:3: .*unknown config key 'mlif\.optimise'"),
        ("models: [a]\nconfig:\n  mlif.optimize: O9\n", r"s\.yml:3: .*bad value 'O9'"),
        ("models: [a]\nbackends: [tvmoat]\n", r"s\.yml:2: .*unknown backend 'tvmoat'"),
        ("models: [a]\nexclude:\n  - targte: spike\n", r"s\.yml:3: exclude\.0\.targte: unknown key"),
        ("models: [a]\ncompare:\n  thresholds: {Total ROOM: 1%}\n", r"s\.yml:3: unknown metric 'Total ROOM'"),
        ("models: [a]\ncompare:\n  thresholds: {Total ROM: lots}\n", r"s\.yml:3: bad threshold 'lots'"),
        ("models: [a]\nuntil: deploy\n", r"s\.yml:2: until: unknown stage"),
        ("backends: [tvmaot]\n", r"no 'models:'"),
        ("models: [a\n", r"not valid YAML"),
    ],
)
def test_bad_sweep_files_name_line_and_key(tmp_path, text, pattern):
    with pytest.raises(ConfigError, match=pattern):
        load_sweep(write(tmp_path, text))


def test_a_good_file_parses_into_axes_rules_and_thresholds(tmp_path):
    sweep = load_sweep(write(tmp_path, GOOD))
    assert sweep.request.config == {"mlif.optimize": ["O2", "Os"]}
    assert sweep.upper_bound() == 2 * 2 * 2 + 1
    assert sweep.compare.against == "baseline"
    assert sweep.compare.thresholds == {"Total ROM": 0.01, "Run Instructions": 0.0}


def test_exclude_and_include_shape_the_matrix(home, tmp_path):
    env = Environment.load(home)
    specs = plan_sweep(env, load_sweep(write(tmp_path, GOOD)), 0, tmp_path / "runs")
    combos = [(s.model.name, s.target, s.config["mlif.optimize"]) for s in specs]
    assert ("kws_dscnn", "qemu_rv32", "Os") not in combos and ("kws_dscnn", "qemu_rv32", "O2") in combos
    assert combos[-1] == ("kws_dscnn_fp32", "spike", "O2")
    assert len(specs) == 7 and [s.run for s in specs] == list(range(7))
    assert [s.run_dir.name for s in specs] == [str(i) for i in range(7)]


def test_an_exclude_that_matches_nothing_is_a_warning(home, tmp_path, caplog):
    text = "models: [kws_dscnn]\nbackends: [tvmaot]\ntargets: [spike]\nexclude:\n  - target: qemu_rv32\n"
    with caplog.at_level(logging.WARNING, logger="mlonmcu.sweep"):
        specs = plan_sweep(Environment.load(home), parse_sweep(text, tmp_path / "w.yml"), 0, tmp_path / "r")
    assert len(specs) == 1
    assert re.search(r"w\.yml:5: this exclude rule matches no run", caplog.text)


def test_a_huge_matrix_needs_yes(home, tmp_path, mlonmcu):
    values = ", ".join(str(i) for i in range(1, 102))
    text = f"models: [kws_dscnn]\ntargets: [spike]\nconfig:\n  spike.timeout: [{values}]\n  mlif.repeat: [{values}]\n"
    path = write(tmp_path, text)
    code, output = mlonmcu("sweep", "run", path, "-H", home)
    assert code == 2 and f"more than {MAX_RUNS}" in output and "--yes" in output, output
    assert not any((home / "sessions").glob("[0-9]*"))


def test_shipped_sweeps_are_valid():
    files = sorted((REPO / "environments" / "sweeps").glob("*.yml"))
    assert len(files) >= 2
    for path in files:
        sweep = load_sweep(path)
        assert sweep.request.models and sweep.compare.against == "baseline"
