"""CLI behaviour that needs no toolchain: usage errors exit 2 before any run starts."""

import pytest

from mlonmcu.environment import Environment
from mlonmcu.session.plan import FlowRequest, plan


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["no_such_model"], "unknown model 'no_such_model'"),
        (["kws_dscnn", "-b", "tvmoat"], "unknown backend 'tvmoat'.*did you mean 'tvmaot'"),
        (["kws_dscnn", "-t", "spik"], "unknown target 'spik'.*did you mean 'spike'"),
        (["kws_dscnn", "-f", "validat"], "unknown feature 'validat'"),
        (["kws_dscnn", "-c", "spike.arc=rv32im"], "unknown config key 'spike.arc'"),
        (["kws_dscnn", "-c", "mlif.optimize=O7"], "bad value 'O7'"),
        (["kws_dscnn", "-o", "report.pdf"], "use one of"),
    ],
)
def test_usage_errors_exit_2(home, mlonmcu, args, message):
    import re

    code, output = mlonmcu("flow", "run", *args, "-H", home)
    assert code == 2, output
    assert re.search(message, output), output
    assert not any((home / "sessions").glob("[0-9]*")), "a usage error must not leave a session behind"


def test_help_everywhere(mlonmcu):
    for command in (
        ["--help"],
        ["flow", "run", "--help"],
        ["setup", "--help"],
        ["sessions", "--help"],
        ["init", "--help"],
        ["models", "--help"],
        ["env", "--help"],
        ["cleanup", "--help"],
    ):
        code, output = mlonmcu(*command)
        assert code == 0 and "Usage" in output


def test_init_renders_a_template(tmp_path, mlonmcu):
    code, output = mlonmcu("init", tmp_path / "h", "--template", "host")
    assert code == 0, output
    env = Environment.load(tmp_path / "h")
    assert env.enabled["targets"] == ["host_x86", "host_py"]
    code, output = mlonmcu("init", tmp_path / "h")
    assert code == 2 and "already exists" in output
    code, output = mlonmcu("init", tmp_path / "x", "--template", "nope")
    assert code == 2 and "valid: default, host" in output


def test_init_takes_the_home_as_minus_h_like_every_other_command(tmp_path, mlonmcu):
    code, output = mlonmcu("init", "-H", tmp_path / "h", "--template", "host")
    assert code == 0, output
    assert Environment.load(tmp_path / "h").enabled["targets"] == ["host_x86", "host_py"]
    code, output = mlonmcu("init", tmp_path / "a", "-H", tmp_path / "b")
    assert code == 2 and "two homes given" in output


def test_models_lists_bundled(home, mlonmcu):
    code, output = mlonmcu("models", "-H", home, "--detailed")
    assert code == 0
    assert "kws_dscnn" in output and "cnn_small_fp32" in output and "group bundled" in output


def test_matrix_multiplies_and_deduplicates(home, tmp_path):
    env = Environment.load(home)
    request = FlowRequest(
        models=["kws_dscnn"],
        backends=["tvmaot"],
        targets=["spike", "host_x86"],
        config={"spike.arch": ["rv32imc", "rv32imafc"], "mlif.optimize": ["O2", "Os"]},
    )
    specs = plan(env, request, 0, tmp_path / "runs")
    # spike: 2 archs × 2 levels; host ignores spike.arch: 2 levels only
    assert len(specs) == 6
    host = [s for s in specs if s.target == "host_x86"]
    assert sorted(s.user_config["mlif.optimize"] for s in host) == ["O2", "Os"]
    assert all("spike.arch" not in s.user_config for s in host)
    assert [s.run for s in specs] == list(range(6))
    # the effective config holds exactly the options of the run's components, with defaults filled in
    assert specs[0].config["spike.timeout"] == 600.0
    assert "validate.samples" not in specs[0].config
    assert "spike.timeout" not in host[0].config


def test_target_not_enabled_is_a_usage_error(tmp_path, mlonmcu):
    code, _ = mlonmcu("init", tmp_path / "h", "--template", "host")
    code, output = mlonmcu("flow", "run", "kws_dscnn", "-t", "spike", "-H", tmp_path / "h")
    assert code == 2 and "not enabled" in output


def test_key_that_no_run_reads_is_a_usage_error(home, mlonmcu):
    code, output = mlonmcu("flow", "run", "kws_dscnn", "-t", "spike", "-c", "qemu_rv32.arch=rv32im", "-H", home)
    assert code == 2 and "qemu_rv32.arch: no run uses target qemu_rv32" in output
    # read by one run of the matrix: fine (the other run does not get it)
    env = Environment.load(home)
    request = FlowRequest(["kws_dscnn"], ["tvmaot"], ["spike", "qemu_rv32"], config={"qemu_rv32.arch": ["rv32im"]})
    specs = plan(env, request, 0, home / "runs")
    assert [s.user_config for s in specs] == [{}, {"qemu_rv32.arch": "rv32im"}]


def test_validate_samples_beyond_the_model_says_how_many_run(home, mlonmcu, tmp_path, caplog):
    import logging
    import shutil

    from mlonmcu.data import bundled_models_dir

    model = tmp_path / "few" / "few"
    shutil.copytree(bundled_models_dir() / "kws_dscnn", model.parent / "few")
    (model.parent / "few" / "kws_dscnn.tflite").rename(model.parent / "few" / "few.tflite")
    for extra in sorted((model.parent / "few" / "input").glob("*.bin"))[3:]:
        extra.unlink()
    env = Environment.load(home)
    request = FlowRequest(
        [str(model.parent / "few" / "few.tflite")], ["tvmaot"], ["spike"], ["validate"], {"validate.samples": ["20"]}
    )
    with caplog.at_level(logging.WARNING, logger="mlonmcu"):
        plan(env, request, 0, tmp_path / "runs")
    assert "validate.samples=20: model few has 3 samples; 3 will run" in caplog.text


def test_two_models_of_one_name_stay_distinguishable(home, tmp_path):
    import shutil

    from mlonmcu.data import bundled_models_dir

    paths = []
    for where in ("a", "b"):
        (tmp_path / where).mkdir()
        paths.append(shutil.copy(bundled_models_dir() / "kws_dscnn" / "kws_dscnn.tflite", tmp_path / where))
    specs = plan(Environment.load(home), FlowRequest(paths, ["tvmaot"], ["spike"]), 0, tmp_path / "runs")
    from mlonmcu.session.run import base_row

    rows = [base_row(s) for s in specs]
    assert [r["Model"] for r in rows] == ["kws_dscnn", "kws_dscnn"]
    assert rows[0]["Model Path"] != rows[1]["Model Path"] and rows[0]["Model Hash"] == rows[1]["Model Hash"]


def test_env_shows_paths_and_config(home, mlonmcu):
    code, output = mlonmcu("env", "-H", home)
    assert code == 0
    assert f"home:      {home}" in output and "config:    mlif.optimize=O2" in output and "targets:" in output


def test_sessions_and_cleanup_on_an_empty_home(home, mlonmcu):
    code, output = mlonmcu("sessions", "-H", home)
    assert code == 0 and "no sessions in" in output
    code, output = mlonmcu("cleanup", "--keep", "0", "--cache", "-H", home)
    assert code == 0 and "removed 0 session(s)" in output and "emptied the cache: 0 entries" in output
    code, output = mlonmcu("sessions", "show", "latest", "-H", home)
    assert code == 2 and "no session 'latest'" in output
