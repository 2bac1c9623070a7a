import pytest

from mlonmcu import registry
from mlonmcu.config import Option, expand_matrix, parse_assignments, resolve
from mlonmcu.errors import ConfigError


def test_option_parses_types():
    assert Option("n", int, 1, "").parse("0x10") == 16
    assert Option("b", bool, False, "").parse("yes") is True
    assert Option("f", float, 1.0, "").parse("2.5") == 2.5
    with pytest.raises(ConfigError, match="valid values are O2, Os"):
        Option("o", str, "O2", "", choices=("O2", "Os")).parse("O9", "mlif.optimize")
    with pytest.raises(ConfigError, match="expected int"):
        Option("n", int, 1, "").parse("many", "mlif.repeat")
    with pytest.raises(ConfigError, match="expected int"):
        Option("n", int, 1, "").parse(2.5, "mlif.repeat")
    with pytest.raises(ConfigError, match="expected float"):
        Option("t", float, 1.0, "").parse("nan", "spike.timeout")


def test_option_ranges_name_key_value_and_valid_range():
    repeat = Option("repeat", int, 1, "", min=1, max=1000)
    assert repeat.parse("1000") == 1000
    with pytest.raises(
        ConfigError, match=r"bad value '0' for config key 'mlif.repeat': must be at least 1 \(valid: 1 to 1000\)"
    ):
        repeat.parse("0", "mlif.repeat")
    with pytest.raises(ConfigError, match="must be at most 1000"):
        repeat.parse("1001", "mlif.repeat")
    timeout = Option("timeout", float, 1.0, "", above=0)
    with pytest.raises(ConfigError, match="must be greater than 0"):
        timeout.parse("0", "spike.timeout")
    assert timeout.parse("0.5") == 0.5
    assert "int >= 1 and <= 1000" in repeat.describe()


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("spike.timeout", "0", "greater than 0"),
        ("spike.timeout", "-3", "greater than 0"),
        ("mlif.repeat", "0", "at least 1"),
        ("mlif.repeat", "-1", "at least 1"),
        ("validate.samples", "0", "at least 1"),
        ("validate.samples", "100000", "at most 1000"),
        ("spike.stack_size", "-1", "at least 1024"),
        ("mps2_an385.stack_size", "12", "at least 1024"),
        ("tvmaot.conv_block", "-1", "at least 0"),
        ("tvmaot.conv_block", "17", "at most 16"),
        ("tvmaot.conv_pixels", "7", "valid values are 1, 2, 3, 4"),
        ("tvmaot.depthwise_pixels", "3", "valid values are 0, 1, 2"),
        ("tvmaot.dense_block", "0", "at least 1"),
        ("tflmi.arena_size", "-1", "at least 0"),
        ("board.port", "70000", "at most 65535"),
        ("board.core", "cortex-a53", "valid values are cortex-m0"),
        ("board.memory", "rom=bogus", "bad board.memory"),
        ("board.timeout", "0", "greater than 0"),
        ("validate.atol", "-1", "at least 0"),
        ("mlif.debug", "maybe", "expected bool"),
    ],
)
def test_every_declared_range_is_enforced(key, value, message):
    with pytest.raises(ConfigError, match=message):
        registry.check_key(key).parse(value, key)


def test_every_option_default_is_valid():
    for scope, options in registry.option_scopes().items():
        for option in options:
            if option.default is not None:
                assert option.parse(option.default, f"{scope}.{option.name}") == option.default


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
    scopes = {"mlif": (Option("optimize", str, "O2", "", choices=("O2", "Os", "O3")), Option("repeat", int, 1, ""))}
    config = resolve(scopes, {"mlif.repeat": 3}, {"mlif.optimize": "Os"})
    assert config == {"mlif.optimize": "Os", "mlif.repeat": 3}
