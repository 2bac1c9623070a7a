"""CLI behaviour that needs no toolchain: usage errors exit 2 before any run starts."""

import pytest

from mlonmcu.environment import Environment
from mlonmcu.session.session import FlowRequest, plan


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
    assert env.enabled["targets"] == ["host_x86"]
    code, output = mlonmcu("init", tmp_path / "h")
    assert code == 2 and "already exists" in output
    code, output = mlonmcu("init", tmp_path / "x", "--template", "nope")
    assert code == 2 and "valid: default, host" in output


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
