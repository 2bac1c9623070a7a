"""End to end with the real TVM, GCC, Spike and QEMU (installed by `mlonmcu setup`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd
import pytest
from helpers import shared_model

pytestmark = pytest.mark.integration


def report(home: Path, session: str = "latest") -> pd.DataFrame:
    return pd.read_csv(home / "sessions" / session / "report.csv")


def size_a(elf: Path) -> dict[str, int]:
    out = subprocess.run(["riscv64-unknown-elf-size", "-A", str(elf)], capture_output=True, text=True, check=True)
    sizes = {}
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0].startswith(".") and parts[1].isdigit():
            sizes[parts[0]] = int(parts[1])
    return sizes


def test_bundled_int8_and_fp32_on_spike_qemu_and_host(integration_home, mlonmcu):
    _, output = mlonmcu(
        "flow",
        "run",
        "kws_dscnn",
        "kws_dscnn_fp32",
        "-b",
        "tvmaot",
        "-t",
        "spike",
        "-t",
        "qemu_rv32",
        "-t",
        "host_x86",
        "-f",
        "validate",
        "-H",
        integration_home,
    )
    frame = report(integration_home)
    assert len(frame) == 6, output
    assert not frame["Failing"].any(), frame[["Model", "Target", "Reason"]]
    for model, rows in frame.groupby("Model"):
        spike = rows[rows.Target == "spike"].iloc[0]
        qemu = rows[rows.Target == "qemu_rv32"].iloc[0]
        host = rows[rows.Target == "host_x86"].iloc[0]
        # the same firmware on two simulators: identical retired-instruction counts
        assert spike["Run Instructions"] == qemu["Run Instructions"] > 1_000_000, model
        # neither models time: an instruction count never stands in a cycles column
        assert pd.isna(rows[["Run Cycles", "Setup Cycles", "Total Cycles"]]).all().all(), model
        assert spike["Counter"] == "minstret" and host["Counter"] == "wallclock"
        assert pd.isna(host["Run Cycles"]) and host["Run Time [s]"] > 0  # no invented cycles on the host
        assert spike["Total ROM"] > 10_000 and spike["Total RAM"] > spike["Arena Size"] > 0
        assert spike["MACs"] == 488256 and spike["Model Size"] > 0
        # every sample of the bundled models agrees with LiteRT's reference kernels, on every target
        assert (rows["Validation"] == "pass").all() and (rows["Validation Detail"] == "10 samples").all(), model
    fp32 = frame[frame.Model == "kws_dscnn_fp32"]
    assert (fp32["Validation"] == "pass").all(), fp32[["Target", "Max Abs Error"]]
    # ROM/RAM come from the section headers and agree with `size -A`
    run = frame[(frame.Model == "kws_dscnn") & (frame.Target == "spike")].iloc[0]
    elf = integration_home / "sessions" / "latest" / "runs" / str(run["Run"]) / "compile" / "firmware.elf"
    sections = size_a(elf)
    assert run["ROM code"] == sections[".text"]
    assert run["ROM read-only"] == sections[".rodata"]
    assert run["ROM data"] == sections.get(".data", 0) + sections.get(".tohost", 0)
    assert run["RAM zero-init data"] == sections[".bss"]
    assert run["RAM stack"] == sections[".stack"]
    assert ".mlonmcu_samples" in sections  # in the image, but not counted as ROM
    # the run directory documents itself
    run_dir = elf.parents[1]
    assert (run_dir / "run.yml").is_file() and (run_dir / "manifest.yml").is_file()
    assert "spike" in (run_dir / "run.yml").read_text()


def test_second_session_reuses_the_cache(integration_home, mlonmcu, tmp_path):
    args = [
        "flow",
        "run",
        "cnn_small_fp32",
        "-b",
        "tvmaot",
        "-t",
        "spike",
        "-f",
        "validate",
        "-H",
        integration_home,
    ]
    assert mlonmcu(*args)[0] == 0
    first = report(integration_home).iloc[0]
    outputs = [tmp_path / "r.csv", tmp_path / "r.md", tmp_path / "r.json"]
    code, output = mlonmcu(*args, "--label", INJECTED, *(a for o in outputs for a in ("-o", o)))
    assert code == 0, output
    second = report(integration_home).iloc[0]
    assert second["Cached Stages"] == "load,build,compile,run"
    assert second["Run Instructions"] == first["Run Instructions"]
    assert second["Session"] == first["Session"] + 1
    for path in outputs:  # every -o is written, not just the last
        assert path.is_file() and str(path) in output, path
    assert pd.read_csv(outputs[0])["Label"].tolist() == [INJECTED]
    assert pd.read_json(outputs[2])["Run Instructions"].tolist() == [first["Run Instructions"]]
    assert "<img" not in render_markdown(outputs[1].read_text())  # the label is text, not HTML


INJECTED = "<img src=x onerror=alert(1)> | *bold*"


def render_markdown(text: str) -> str:
    """HTML as a Markdown viewer that passes raw HTML through (GitHub-like, tables on) renders it."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True}).enable("table").render(text)


def test_markdown_shows_model_names_as_text(tmp_path):
    from mlonmcu.report.report import export, to_frame

    frame = to_frame([{"Session": 0, "Run": 0, "Model": INJECTED, "Label": "[x](javascript:alert(1))"}])
    html = render_markdown(export(frame, tmp_path / "r.md").read_text())
    assert "<img" not in html and "<a " not in html and "<em>" not in html
    assert "&lt;img src=x onerror=alert(1)&gt; | *bold*" in html  # shown literally, in one cell


def test_bad_inputs_fail_their_run_only(integration_home, mlonmcu, tmp_path):
    corrupt = tmp_path / "corrupt.tflite"
    corrupt.write_bytes(b"this is not a model")
    code, output = mlonmcu(
        "flow", "run", corrupt, "cnn_small_fp32", "-b", "tvmaot", "-t", "spike", "-H", integration_home
    )
    assert code == 1, output
    frame = report(integration_home)
    bad = frame[frame.Model == "corrupt"].iloc[0]
    assert bad["Failing"] and "not a TFLite model" in bad["Reason"]
    good = frame[frame.Model == "cnn_small_fp32"].iloc[0]
    assert not good["Failing"] and good["Run Instructions"] > 0


def test_missing_toolchain_fails_fast_naming_setup(integration_home, mlonmcu, tmp_path):
    import yaml

    home = tmp_path / "home"
    home.mkdir()
    env = yaml.safe_load((integration_home / "environment.yml").read_text())
    env["components"]["riscv_gcc"] = {"path": str(tmp_path / "nowhere")}
    env["paths"]["cache"] = str(integration_home / "cache")
    (home / "environment.yml").write_text(yaml.safe_dump(env))
    code, _ = mlonmcu("flow", "run", "kws_dscnn_fp32", "-b", "tvmaot", "-t", "spike", "-t", "host_x86", "-H", home)
    assert code == 1
    frame = report(home)
    spike = frame[frame.Target == "spike"].iloc[0]
    assert spike["Failing"] and "riscv_gcc" in spike["Reason"] and "mlonmcu setup riscv_gcc" in spike["Reason"]
    assert not frame[frame.Target == "host_x86"].iloc[0]["Failing"]


def test_a_real_hybrid_model_is_named_as_such(integration_home, mlonmcu):
    hybrid = shared_model("aww_hybrid")
    code, _ = mlonmcu("flow", "build", hybrid, "-b", "tvmaot", "-H", integration_home)
    assert code == 1
    reason = report(integration_home).iloc[0]["Reason"]
    assert reason.startswith("aww_hybrid is a hybrid (dynamic-range) quantized model: CONV_2D")


def test_parallel_rerun_restores_cached_runs_without_workers(integration_home, monkeypatch):
    """A run the cache holds completely is restored in the orchestrator: no worker starts.
    (Spike: its counts are exact, so RUN is cached; a host run measures time and always runs.)"""
    from concurrent.futures import ProcessPoolExecutor

    from mlonmcu import api

    request = dict(
        home=integration_home, backends=["tvmaot"], targets=["spike"], config={"mlif.optimize": ["O2", "Os"]}
    )
    cold = api.flow(["cnn_small"], parallel=2, **request)
    assert not cold.failed, cold.report[["Reason"]]

    def refuse(*_args, **_kwargs):
        raise AssertionError("a fully cached run was sent to a worker process")

    monkeypatch.setattr(ProcessPoolExecutor, "submit", refuse)
    rerun = api.flow(["cnn_small"], parallel=2, **request)
    assert not rerun.failed, rerun.report[["Reason"]]
    assert list(rerun.report["Cached Stages"]) == ["load,build,compile,run"] * 2
    assert list(rerun.report["Run Instructions"]) == list(cold.report["Run Instructions"])


def test_tflm_oracle_without_tflm_says_no_reference(tmp_path, mlonmcu):
    """A HOME without TFLM: the oracle is named as what is missing, the run is not `fail`."""
    from helpers import installed_deps_dir, make_home

    deps = tmp_path / "deps"
    deps.mkdir()
    for entry in installed_deps_dir().iterdir():  # everything installed except TFLM's sources
        if entry.is_dir() and not entry.name.startswith(".") and entry.name not in ("tflm", "flatbuffers", "gemmlowp"):
            (deps / entry.name).symlink_to(entry)
    home = make_home(tmp_path / "home", paths={"deps": str(deps)})
    args = ["flow", "run", "kws_dscnn", "-b", "tvmaot", "-t", "spike", "-f", "validate"]
    code, output = mlonmcu(*args, "-c", "validate.reference=tflm", "-c", "validate.samples=1", "-H", home)
    assert code == 0, output
    row = report(home).iloc[0]
    assert row["Validation"] == "no reference"
    assert "TFLM oracle cannot run" in row["Validation Detail"] and "mlonmcu setup tflm" in row["Validation Detail"]


def test_a_model_litert_refuses_is_judged_by_tflms_python_interpreter(integration_home, mlonmcu, tmp_path):
    """LiteRT's reference resolver has no int8 ELU: TFLM's Python interpreter (PyPI tflite-micro)
    computes the references, the Oracle column names it, and the verdict is a real one."""
    import numpy as np
    import yaml
    from tflite_builder import Op, build, q, write

    from mlonmcu.errors import ModelError
    from mlonmcu.models.reference import LITERT, _child

    shape = (1, 6, 5, 8)
    model = write(
        tmp_path, "elu", build([q(shape, 0.04, -7), q(shape, 0.05, 3)], [Op("ELU", [0], [1], version=2)], [0], [1])
    )
    with pytest.raises(ModelError, match=r"LiteRT cannot load elu\.tflite"):
        _child(LITERT, model, [[np.zeros(shape, np.int8)]])
    args = ["flow", "run", model, "kws_dscnn", "-b", "tvmaot", "-t", "host_x86", "-t", "spike", "-f", "validate"]
    code, output = mlonmcu(*args, "-c", "tvmaot.importer=direct", "-c", "validate.samples=3", "-H", integration_home)
    assert code == 0, output
    frame = report(integration_home).set_index(["Model", "Target"])
    assert (frame["Validation"] == "pass").all(), frame["Validation Detail"]
    elu = frame.loc["elu"]
    assert (elu["Oracle"] == "tflm-python").all() and (elu["Max Abs Error"] == 0).all()
    assert elu["Validation Detail"].str.contains("TFLM's Python interpreter; LiteRT refused").all()
    assert (frame.loc["kws_dscnn", "Oracle"] == LITERT).all()
    run = yaml.safe_load((integration_home / "sessions" / "latest" / "runs" / "0" / "run.yml").read_text())
    assert run["components"]["tflm_python"]["version"]  # the oracle's version is recorded with the run


def test_host_py_runs_tflmi_in_tflms_python_interpreter_without_firmware(integration_home, mlonmcu):
    """host_py: no BUILD, no COMPILE (no TFLM source needed), validated outputs, the smallest arena
    TFLM allocates the model in, wall-clock time; a backend of another framework is refused by name."""
    from mlonmcu.backends.tflm import interpreter
    from mlonmcu.models.model import find_model

    args = [
        "flow",
        "run",
        "kws_dscnn",
        "kws_dscnn_fp32",
        "-b",
        "tflmi",
        "-b",
        "tvmaot",
        "-t",
        "host_py",
        "-f",
        "validate",
    ]
    code, output = mlonmcu(*args, "-c", "validate.samples=3", "-H", integration_home)
    assert code == 1, output  # the tvmaot rows fail
    frame = report(integration_home)
    tflm = frame[frame.Backend == "tflmi"].set_index("Model")
    assert (tflm["Validation"] == "pass").all(), tflm["Validation Detail"]
    assert (tflm["Counter"] == "interpreter-wallclock").all() and (tflm["Run Time [s]"] > 0).all()
    assert tflm["Total ROM"].isna().all() and tflm["Platform"].isna().all()  # no firmware: no ROM, no platform
    for name, row in tflm.iterrows():
        run_dir = integration_home / "sessions" / "latest" / "runs" / str(row["Run"])
        assert not (run_dir / "build").exists() and not (run_dir / "compile").exists()
        model = find_model(str(name), [Path(__file__).parents[2] / "resources" / "models"]).path
        arena = int(row["Arena Size"])
        interpreter.open_interpreter(model, arena)  # the model fits ...
        with pytest.raises(RuntimeError):  # ... and 16 bytes less do not
            interpreter.open_interpreter(model, arena - 16)
    tvm = frame[frame.Backend == "tvmaot"]
    assert tvm["Failing"].all() and tvm["Reason"].str.contains("use -b tflmi there, or -t host_x86").all()


def test_a_hybrid_model_is_named_as_such(integration_home, mlonmcu, tmp_path):
    from tflite_builder import hybrid_model

    code, _ = mlonmcu("flow", "build", hybrid_model(tmp_path), "-b", "tvmaot", "-H", integration_home)
    assert code == 1
    reason = report(integration_home).iloc[0]["Reason"]
    assert "hybrid (dynamic-range) quantized model: FULLY_CONNECTED" in reason and "full integer" in reason


@pytest.mark.parametrize(
    ("in_shape", "units", "activation"),
    [
        # a matmul with K = 1 (hello_world's first layer): TVM's reverse_compute_inline put the
        # fused bias and relu into the reduction's init too, and the outputs were wrong
        ((1, 1), 16, 1),
        # TFLite's FULLY_CONNECTED reads a [1, 3, 2, 4] input as [1, 24] (magic_wand, MNIST
        # models after a pooling layer); TVM's importer multiplied it as it is and refused it
        ((1, 3, 2, 4), 5, 0),
    ],
)
def test_float_dense_is_right(integration_home, mlonmcu, tmp_path, in_shape, units, activation):
    import numpy as np
    from tflite_builder import Op, Tensor, build, const, write

    rng = np.random.default_rng(3)
    inputs = int(np.prod(in_shape[1:]))
    tensors = [
        Tensor(in_shape, "float32"),
        const(rng.normal(size=(units, inputs)).astype(np.float32)),
        const(rng.normal(size=units).astype(np.float32)),
        Tensor((1, units), "float32"),
    ]
    fc = Op("FULLY_CONNECTED", [0, 1, 2], [3], {"FusedActivationFunction": activation}, "FullyConnectedOptions")
    model = write(tmp_path, "dense", build(tensors, [fc], [0], [3]))
    code, output = mlonmcu(
        "flow", "run", model, "-b", "tvmaot", "-t", "host_x86", "-f", "validate", "-H", integration_home
    )
    assert code == 0, output
    row = report(integration_home).iloc[0]
    assert row["Validation"] == "pass" and row["Max Abs Error"] < 1e-5, row["Validation Detail"]


def test_float_lstm_runs_and_keeps_its_state(integration_home, mlonmcu, tmp_path):
    """TVM's importer takes only the coupled-gate float LSTM and restarts it from zeros at every
    inference; TFLite carries the state from one Invoke to the next. tvmaot's own float LSTM
    kernel keeps it, so LiteRT's outputs over consecutive samples are met (trained_lstm, TFLM's
    mnist_lstm example, is such a model)."""
    import numpy as np
    from tflite_builder import float_lstm_model, write

    from mlonmcu.models.reference import reference_outputs

    built = {
        "float_lstm": float_lstm_model(batch=1, steps=5),
        "float_lstm_cifg": float_lstm_model(batch=2, steps=3, cifg=True),
        "float_lstm_clip_time_major": float_lstm_model(batch=1, steps=4, cell_clip=0.5, time_major=True),
    }
    models = [write(tmp_path, name, model) for name, model in built.items()]
    x = np.random.default_rng(1).uniform(-1, 1, (1, 5, 8)).astype(np.float32)
    (first, second), oracle = reference_outputs(models[0], [[x], [x]])
    assert oracle == "litert"
    assert not np.allclose(first[0], second[0]), "the same input twice: the state changes the outputs"
    args = ["flow", "run", *models, "-b", "tvmaot", "-t", "host_x86", "-f", "validate", "-c", "validate.samples=4"]
    code, output = mlonmcu(*args, "-H", integration_home)
    assert code == 0, output
    frame = report(integration_home)
    assert (frame["Validation"] == "pass").all(), frame[["Model", "Validation Detail"]]
    assert (frame["Max Abs Error"] < 1e-5).all(), frame[["Model", "Max Abs Error"]]


def test_one_firmware_for_two_shapes_gives_each_model_its_own_outputs(integration_home, mlonmcu, tmp_path):
    """An elementwise model over 2×160×8 values and its twin over 2×80×16 (same scales, same
    seeded samples) compile to the very same firmware and share its RUN; each must still get its
    outputs in its own shape (TFLM's seanet LEAKY_RELU tests are such twins)."""
    from tflite_builder import Op, build, q, write

    models = [
        write(tmp_path, name, build([q(shape, 0.04, -7), q(shape, 0.04, -7)], [Op("RELU", [0], [1])], [0], [1]))
        for name, shape in (("relu_wide", (1, 2, 160, 8)), ("relu_deep", (1, 2, 80, 16)))
    ]
    args = ["flow", "run", *models, "-b", "tvmaot", "-t", "spike", "-f", "validate"]
    code, output = mlonmcu(*args, "-H", integration_home)
    assert code == 0, output
    frame = report(integration_home)
    assert (frame["Validation"] == "pass").all(), frame[["Model", "Reason", "Validation Detail"]]
    runs = integration_home / "sessions" / "latest" / "runs"
    elves = [(runs / str(run) / "compile" / "firmware.elf").read_bytes() for run in frame["Run"]]
    assert elves[0] == elves[1]  # the twins the test is about: one firmware
