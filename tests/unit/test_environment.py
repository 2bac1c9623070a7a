import pytest
import yaml
from helpers import make_home

from mlonmcu.data import bundled_models_dir
from mlonmcu.environment import Environment
from mlonmcu.errors import ConfigError


def test_default_home_is_created_on_first_use(tmp_path, monkeypatch):
    monkeypatch.delenv("MLONMCU_HOME", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    env = Environment.load()
    assert env.home == tmp_path / "data" / "mlonmcu" and env.file.is_file()
    assert env.model_dirs[0] == bundled_models_dir()
    assert env.first("targets") == "spike"


def test_a_named_home_must_exist(tmp_path, monkeypatch):
    """A typo in -H or $MLONMCU_HOME must not silently start an empty HOME."""
    with pytest.raises(ConfigError, match=r"no mlonmcu HOME at .*typo.*mlonmcu init"):
        Environment.load(tmp_path / "typo")
    assert not (tmp_path / "typo").exists()
    monkeypatch.setenv("MLONMCU_HOME", str(tmp_path / "typo2"))
    with pytest.raises(ConfigError, match=r"MLONMCU_HOME"):
        Environment.load()
    assert Environment.load(tmp_path / "made", create=True).file.is_file()


def test_models_env_var_adds_directories(home, monkeypatch, tmp_path):
    monkeypatch.setenv("MLONMCU_MODELS", str(tmp_path))
    assert Environment.load(home).model_dirs[-1] == tmp_path.resolve()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"targets": ["spike", "spkie"]}, "unknown target 'spkie'.*did you mean 'spike'"),
        ({"config": {"mlif.optimize": "O9"}}, "bad value 'O9'.*O2, Os, O3"),
        ({"config": {"nope.key": 1}}, "no component 'nope'"),
        ({"components": {"spike": {"colour": "red"}}}, "unknown config key 'spike.colour'"),
        ({"bogus": 1}, "unknown key 'bogus'"),
    ],
)
def test_invalid_environment_names_key_and_choices(tmp_path, overrides, message):
    root = make_home(tmp_path / "h", **overrides)
    with pytest.raises(ConfigError, match=message):
        Environment.load(root)


def test_not_yaml(tmp_path):
    (tmp_path / "environment.yml").write_text("paths: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        Environment.load(tmp_path)


def test_relative_paths_are_relative_to_home(home):
    data = yaml.safe_load((home / "environment.yml").read_text())
    assert data["paths"]["cache"] == "cache"
    assert Environment.load(home).cache_dir == home / "cache"
