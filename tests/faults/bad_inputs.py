"""Bad inputs a user can give, each with the exit code and the message they must get.

Shared by tests/faults/test_bad_inputs.py and benchmarks/faults.py. `{home}` is a HOME with
the installed components, `{tmp}` a scratch directory holding the files made by `prepare`.
Usage errors (2) must be found before any run starts; run failures (1) must name the cause.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

FLOW = ("flow", "run", "kws_dscnn", "-H", "{home}")


@dataclass(frozen=True)
class BadInput:
    what: str
    args: tuple[str, ...]
    code: int
    message: str  # a regular expression the output must match


def _flow(*extra: str) -> tuple[str, ...]:
    return (*FLOW, *extra)


BAD_INPUTS = (
    BadInput("unknown model", ("flow", "run", "no_such_model", "-H", "{home}"), 2, "unknown model 'no_such_model'"),
    BadInput("missing model file", ("flow", "run", "{tmp}/absent.tflite", "-H", "{home}"), 2, "does not exist"),
    BadInput("unknown backend", _flow("-b", "tvmoat"), 2, "unknown backend 'tvmoat'.*did you mean 'tvmaot'"),
    BadInput("unknown target", _flow("-t", "spik"), 2, "unknown target 'spik'"),
    BadInput("unknown feature", _flow("-f", "validat"), 2, "unknown feature 'validat'"),
    BadInput("unknown config scope", _flow("-c", "spkie.arch=rv32im"), 2, "no component 'spkie'"),
    BadInput("unknown config key", _flow("-c", "spike.arc=rv32im"), 2, "unknown config key 'spike.arc'"),
    BadInput("config without value", _flow("-c", "spike.arch"), 2, "expected KEY=VALUE"),
    BadInput("config without scope", _flow("-c", "arch=rv32im"), 2, "expected <component>.<option>"),
    BadInput("bad choice", _flow("-c", "mlif.optimize=O7"), 2, "bad value 'O7'.*O2, Os, O3"),
    BadInput("timeout 0", _flow("-c", "spike.timeout=0"), 2, "spike.timeout.*greater than 0"),
    BadInput("negative timeout", _flow("-c", "spike.timeout=-5"), 2, "greater than 0"),
    BadInput("timeout not a number", _flow("-c", "spike.timeout=soon"), 2, "expected float"),
    BadInput("repeat 0", _flow("-c", "mlif.repeat=0"), 2, "mlif.repeat.*at least 1"),
    BadInput("repeat -1", _flow("-c", "mlif.repeat=-1"), 2, "at least 1"),
    BadInput("repeat huge", _flow("-c", "mlif.repeat=100000"), 2, "at most 1000"),
    BadInput("debug not a bool", _flow("-c", "mlif.debug=perhaps"), 2, "expected bool"),
    BadInput("samples 0", _flow("-f", "validate", "-c", "validate.samples=0"), 2, "validate.samples.*at least 1"),
    BadInput("samples huge", _flow("-f", "validate", "-c", "validate.samples=100000"), 2, "at most 1000"),
    BadInput("negative atol", _flow("-f", "validate", "-c", "validate.atol=-1"), 2, "at least 0"),
    BadInput("negative stack", _flow("-c", "spike.stack_size=-1"), 2, "spike.stack_size.*at least 1024"),
    BadInput("tiny stack", _flow("-c", "spike.stack_size=16"), 2, "at least 1024"),
    BadInput("conv_block 17", _flow("-c", "tvmaot.conv_block=17"), 2, "tvmaot.conv_block.*at most 16"),
    BadInput("conv_pixels 7", _flow("-c", "tvmaot.conv_pixels=7"), 2, "valid values are 1, 2"),
    BadInput("dense_block 0", _flow("-c", "tvmaot.dense_block=0"), 2, "at least 1"),
    BadInput("quant mode", _flow("-c", "tvmaot.quant=float"), 2, "integer, qdq"),
    BadInput(
        "key for a target no run uses",
        _flow("-t", "spike", "-c", "qemu_rv32.arch=rv32im"),
        2,
        "qemu_rv32.arch: no run uses target qemu_rv32",
    ),
    BadInput(
        "key for a feature no run uses",
        _flow("-c", "validate.samples=3"),
        2,
        "validate.samples: no run uses feature validate",
    ),
    BadInput("component setting on the command line", _flow("-c", "spike.version=1"), 2, "setting of component spike"),
    BadInput("bad board memory", _flow("-t", "board", "-c", "board.memory=rom=1"), 2, "bad board.memory"),
    BadInput("board port out of range", _flow("-t", "board", "-c", "board.port=99999"), 2, "at most 65535"),
    BadInput("unknown board core", _flow("-t", "board", "-c", "board.core=cortex-a9"), 2, "valid values are"),
    BadInput("unwritable -o", _flow("-o", "/proc/r.csv"), 2, "cannot write the report to /proc/r.csv"),
    BadInput("-o is a directory", _flow("-o", "{tmp}"), 2, "use one of|is a directory"),
    BadInput("-o unknown format", _flow("-o", "{tmp}/r.pdf"), 2, r"use one of \.csv"),
    BadInput("mistyped -H", ("flow", "run", "kws_dscnn", "-H", "{tmp}/no-such-home"), 2, "no mlonmcu HOME at"),
    BadInput("-H for sessions", ("sessions", "-H", "{tmp}/no-such-home"), 2, "mlonmcu init"),
    BadInput("session path outside HOME", ("sessions", "show", "../../x/0", "-H", "{home}"), 2, "bad session"),
    BadInput("unknown session", ("sessions", "show", "99999", "-H", "{home}"), 2, "no session '99999'"),
    BadInput("unknown stage", ("flow", "lower", "kws_dscnn", "-H", "{home}"), 2, "No such command"),
    BadInput("unknown environment template", ("init", "{tmp}/new", "--template", "nope"), 2, "valid: default"),
    BadInput("init over an existing HOME", ("init", "{home}"), 2, "already exists"),
    BadInput("unknown component", ("setup", "-H", "{home}", "no_such_tool"), 2, "unknown component"),
    BadInput(
        "source for a non-git component", ("setup", "-H", "{home}", "--source", "cmake=/x"), 2, "not a git component"
    ),
    BadInput("malformed --source", ("setup", "-H", "{home}", "--source", "tflm"), 2, "expected NAME=URL_OR_PATH"),
    BadInput("parallel 0", _flow("--parallel", "0"), 2, "0 is not in the range"),
    BadInput("not a TFLite model", ("flow", "run", "{tmp}/text.tflite", "-H", "{home}"), 1, "not a TFLite model"),
    BadInput(
        "truncated flatbuffer", ("flow", "run", "{tmp}/truncated.tflite", "-H", "{home}"), 1, "corrupt TFLite model"
    ),
    BadInput("empty model file", ("flow", "run", "{tmp}/empty.tflite", "-H", "{home}"), 1, "not a TFLite model"),
    BadInput(
        "sample of the wrong size",
        ("flow", "run", "{tmp}/badsample/badsample.tflite", "-H", "{home}"),
        1,
        "sample .*0.bin has 3 bytes",
    ),
)


def prepare(tmp: Path, bundled_model: Path) -> None:
    """The files the bad inputs refer to."""
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "text.tflite").write_text("this is not a model")
    (tmp / "empty.tflite").write_bytes(b"")
    data = bundled_model.read_bytes()
    (tmp / "truncated.tflite").write_bytes(data[: len(data) // 3])
    broken = tmp / "badsample"
    (broken / "input").mkdir(parents=True, exist_ok=True)
    (broken / "badsample.tflite").write_bytes(data)
    (broken / "input" / "0.bin").write_bytes(b"abc")


def expand(args: tuple[str, ...], home: Path, tmp: Path) -> list[str]:
    return [a.format(home=home, tmp=tmp) for a in args]
