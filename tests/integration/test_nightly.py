"""The nightly recipe, for real: a sweep run night after night into the results store, gated by
`compare` against its baseline; a change between nights shows in compare, the exit code, the
dashboard and the exported history."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from helpers import REPO

pytestmark = pytest.mark.integration

SWEEP = """\
name: nightly-test
models: [kws_dscnn]
backends: [tvmaot]
targets: [spike]
features: [validate]
config:
  validate.samples: 1
compare:
  against: baseline
  thresholds: {Run Instructions: 0%, Total ROM: 0%}
"""


@pytest.fixture
def nightly_home(integration_home: Path, tmp_path: Path) -> Path:
    """A HOME of its own (cache, sessions, results.db) whose model directory we may change."""
    models = tmp_path / "models"
    shutil.copytree(REPO / "resources" / "models" / "kws_dscnn", models / "kws_dscnn")
    env = yaml.safe_load((integration_home / "environment.yml").read_text())
    env["paths"] = {"deps": env["paths"]["deps"], "models": [str(models)]}
    home = tmp_path / "home"
    home.mkdir()
    (home / "environment.yml").write_text(yaml.safe_dump(env))
    return home


def test_a_change_between_nights_fails_the_gate(nightly_home, tmp_path, mlonmcu):
    sweep = tmp_path / "nightly.yml"
    sweep.write_text(SWEEP)
    code, output = mlonmcu("sweep", "run", sweep, "-H", nightly_home, "--label", "n1")
    assert code == 0, output
    assert "no baseline" in output
    code, output = mlonmcu("sweep", "run", sweep, "-H", nightly_home, "--label", "n2")
    assert code == 0 and "OK: no regression" in output, output

    # night 3: the compiler flags of the environment changed, and the model file was replaced
    # by another revision under the same name (same graph, different bytes)
    env_file = nightly_home / "environment.yml"
    env = yaml.safe_load(env_file.read_text())
    env["config"]["mlif.optimize"] = "Os"
    env_file.write_text(yaml.safe_dump(env))
    model = tmp_path / "models" / "kws_dscnn" / "kws_dscnn.tflite"
    model.write_bytes(model.read_bytes() + b"revision-2")
    code, output = mlonmcu("sweep", "run", sweep, "-H", nightly_home, "--label", "n3")
    assert code == 3, output
    assert "REGRESSED" in output and "model changed" in output

    code, markdown = mlonmcu("compare", "baseline", "latest", "-H", nightly_home, "--format", "md")
    assert code == 3
    assert "## mlonmcu compare: baseline (session 1 " in markdown  # the newest passing one before NEW
    assert "| model changed" in markdown and "Run Instructions" in markdown and "regressed" in markdown
    code, output = mlonmcu("compare", "n1", "n2", "-H", nightly_home)
    assert code == 0 and "OK: no regression" in output, output
    code, output = mlonmcu("compare", "0", str(nightly_home / "sessions" / "2" / "report.csv"), "-H", nightly_home)
    assert code == 3, output

    site = tmp_path / "site" / "index.html"
    code, output = mlonmcu("report", "html", "0", "latest", "--history", "-H", nightly_home, "-o", site)
    assert code == 0, output
    page = site.read_text()
    assert page.count("<svg") >= 3 and "regress" in page.lower()

    exported = tmp_path / "history.parquet"
    code, output = mlonmcu("results", "export", "-H", nightly_home, "-o", exported)
    assert code == 0, output
    history = pd.read_parquet(exported)
    assert len(history) == 3 and sorted(history["Label"]) == ["n1", "n2", "n3"]
    assert history["Model Hash"].nunique() == 2


def test_bad_input_of_the_nightly_commands(nightly_home, tmp_path, mlonmcu):
    sweep = tmp_path / "nightly.yml"
    sweep.write_text(SWEEP)
    code, output = mlonmcu(
        "sweep", "run", sweep, "-H", nightly_home, "--db", "postgresql+psycopg://ci:s3cret@127.0.0.1:9/results"
    )
    assert code == 2 and "127.0.0.1:9" in output and "s3cret" not in output, output
    assert not any((nightly_home / "sessions").glob("[0-9]*")), "no session may start without its store"

    code, output = mlonmcu("flow", "load", "kws_dscnn", "-t", "spike", "-H", nightly_home)
    assert code == 0, output
    code, output = mlonmcu("flow", "load", "kws_dscnn", "-t", "qemu_rv32", "-H", nightly_home)
    assert code == 0, output
    code, output = mlonmcu("compare", "0", "1", "-H", nightly_home)
    assert code == 2 and "no run in common" in output, output
    code, output = mlonmcu("flow", "run", "--resume", "0", "-H", nightly_home)
    assert code == 0 and "session 0" in output, output  # finished: nothing to run, the same report
    assert len(pd.read_csv(nightly_home / "sessions" / "0" / "report.csv")) == 1
    code, output = mlonmcu("flow", "run", "kws_dscnn", "--resume", "0", "-H", nightly_home)
    assert code == 2 and "give no MODEL" in output, output
    code, output = mlonmcu("compare", "nosuchlabel", "1", "-H", nightly_home)
    assert code == 2 and "nosuchlabel" in output, output
    code, output = mlonmcu("compare", "baseline", "1", "-H", nightly_home)
    assert code == 2 and "not a sweep session" in output, output
    code, output = mlonmcu("compare", "0", "missing.csv", "-H", nightly_home)
    assert code == 2 and "no report file missing.csv" in output, output
    code, output = mlonmcu("compare", "0", "1", "--threshold", "Total ROOM=1%", "-H", nightly_home)
    assert code == 2 and "did you mean 'Total ROM'" in output, output
