import pytest

from mlonmcu import registry
from mlonmcu.config import Option, expand_matrix, parse_assignments, resolve
from mlonmcu.errors import ConfigError


def test_option_parses_types():
    assert Option("n", "int", 1, "").parse("0x10") == 16
    assert Option("b", "bool", False, "").parse("yes") is True
    assert Option("f", "float", 1.0, "").parse("2.5") == 2.5
    with pytest.raises(ConfigError, match="valid values are O2, Os"):
        Option("o", "choice", "O2", "", ("O2", "Os")).parse("O9", "mlif.optimize")
    with pytest.raises(ConfigError, match="expected int"):
        Option("n", "int", 1, "").parse("many", "mlif.repeat")


def test_repeated_key_gives_one_run_per_value():
    values = parse_assignments(["mlif.optimize=O2", "mlif.optimize=Os", "spike.arch=rv32imc"])
    assert values == {"mlif.optimize": ["O2", "Os"], "spike.arch": ["rv32imc"]}
    combos = expand_matrix(values)
    assert [c["mlif.optimize"] for c in combos] == ["O2", "Os"]


@pytest.mark.parametrize("bad", ["novalue", "=x", "nodot=1"])
def test_bad_assignment(bad):
    with pytest.raises(ConfigError):
        parse_assignments([bad])


def test_unknown_keys_name_valid_choices():
    with pytest.raises(ConfigError, match=r"no component 'spkie'.*did you mean 'spike'"):
        registry.check_key("spkie.arch")
    with pytest.raises(ConfigError, match=r"valid for mlif: mlif\.optimize"):
        registry.check_key("mlif.optimise")


def test_resolve_layers_defaults_environment_user():
    scopes = {"mlif": (Option("optimize", "choice", "O2", "", ("O2", "Os", "O3")), Option("repeat", "int", 1, ""))}
    config = resolve(scopes, {"mlif.repeat": 3}, {"mlif.optimize": "Os"})
    assert config == {"mlif.optimize": "Os", "mlif.repeat": 3}
