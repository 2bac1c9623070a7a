"""Backend `tflmi` with a real TensorFlow Lite Micro checkout (skipped when none is available).

CI cannot fetch from GitHub, so these tests need a TFLM source: either the one `mlonmcu setup`
installed, or MLONMCU_TFLM_SRC (with MLONMCU_FLATBUFFERS_SRC, MLONMCU_GEMMLOWP_SRC) naming
local checkouts, mirrors or URLs (`NAME=PATH[@REF]`, as for `setup --source`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import tflite
from helpers import installed_deps_dir, make_home, shared_model

from mlonmcu.environment import Environment
from mlonmcu.environment.home import resolve_home
from mlonmcu.setup import installer

pytestmark = [pytest.mark.integration, pytest.mark.tflm]

GIT_COMPONENTS = ("tflm", "flatbuffers", "gemmlowp")
CMSIS_COMPONENTS = ("cmsis_nn", "cmsis")
BUNDLED = Path(__file__).resolve().parents[2] / "resources" / "models"


def report(home: Path) -> pd.DataFrame:
    return pd.read_csv(home / "sessions" / "latest" / "report.csv")


def compile_logs(home: Path) -> str:
    logs = (home / "sessions" / "latest" / "runs").glob("*/logs/compile.log")
    return "\n".join(path.read_text() for path in logs)


def installed_or_skip(home: Path, components: tuple[str, ...], reason: str) -> None:
    """Install the git components (the first brings its companions) from MLONMCU_<NAME>_SRC
    when set; skip with `reason` when they are still missing."""
    env = Environment.load(home)
    if installer.environment_sources().get(components[0]):
        _, failed = installer.install(env, [components[0]])
        assert not failed, f"setup of {components[0]} from MLONMCU_*_SRC failed: {failed}"
    _, missing = installer.check(env, components)
    if missing:
        pytest.skip(reason)


@pytest.fixture(scope="session")
def tflm_home(integration_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A HOME with backend tflmi enabled and TFLM installed; its TFLM libraries (~5 min per
    target to build) live in the installed HOME's cache, as every later session's would."""
    installed = installed_deps_dir()
    sources = installer.environment_sources()
    root = tmp_path_factory.mktemp("tflm-home")
    if sources.get("tflm"):
        deps = root / "deps"
        deps.mkdir()
        for entry in installed.iterdir():  # the toolchains and simulators already set up
            if (
                entry.is_dir()
                and not entry.name.startswith(".")
                and entry.name not in GIT_COMPONENTS + CMSIS_COMPONENTS
            ):
                (deps / entry.name).symlink_to(entry)
    else:
        deps = installed
    home = make_home(root, backends=["tflmi", "tvmaot"], paths={"deps": str(deps)})
    installed_or_skip(
        home,
        GIT_COMPONENTS,
        "no TFLM source tree: set MLONMCU_TFLM_SRC, MLONMCU_FLATBUFFERS_SRC and MLONMCU_GEMMLOWP_SRC "
        "to local checkouts or mirrors, or run `mlonmcu setup tflm --source tflm=PATH ...`",
    )
    libraries = resolve_home(None) / "cache" / "libraries"
    libraries.mkdir(parents=True, exist_ok=True)
    (home / "cache").mkdir(exist_ok=True)
    (home / "cache" / "libraries").symlink_to(libraries, target_is_directory=True)
    return home


def test_tflmi_beside_tvmaot_on_host_and_spike(tflm_home, mlonmcu):
    args = ["flow", "run", "kws_dscnn", "-b", "tflmi", "-b", "tvmaot", "-t", "host_x86", "-t", "spike"]
    code, output = mlonmcu(*args, "-f", "validate", "-H", tflm_home)
    assert code == 0, output
    frame = report(tflm_home)
    assert sorted(zip(frame.Backend, frame.Target, strict=True)) == [
        ("tflmi", "host_x86"),
        ("tflmi", "spike"),
        ("tvmaot", "host_x86"),
        ("tvmaot", "spike"),
    ]
    assert (frame.Validation == "pass").all() and (frame["Max Abs Error"] == 0).all()
    tflm = frame[frame.Backend == "tflmi"].set_index("Target")
    tvm = frame[frame.Backend == "tvmaot"].set_index("Target")
    assert (tflm.Framework == "tflm").all()
    # the interpreter with reference kernels costs more than generated integer code
    assert tflm.loc["spike", "Run Instructions"] > 2 * tvm.loc["spike", "Run Instructions"]
    assert tflm.loc["spike", "Total ROM"] > tvm.loc["spike", "Total ROM"]
    # the automatic arena is what AllocateTensors needed on that target (ABIs differ)
    assert 5_000 < tflm.loc["spike", "Arena Size"] < 20_000
    assert tflm.loc["host_x86", "Arena Size"] >= tflm.loc["spike", "Arena Size"]


def test_host_py_computes_what_the_tflmi_firmware_computes(tflm_home, mlonmcu):
    """tflmi on host_py (TFLM's Python interpreter, no firmware): the outputs of the firmware on
    Spike, sample by sample; the arena is the host's (64-bit pointers, as on host_x86) plus the
    recording allocator the Python interpreter keeps in it (a few hundred bytes)."""
    args = ["flow", "run", "kws_dscnn", "-b", "tflmi", "-t", "spike", "-t", "host_x86", "-t", "host_py"]
    code, output = mlonmcu(*args, "-f", "validate", "-c", "validate.samples=3", "-H", tflm_home)
    assert code == 0, output
    frame = report(tflm_home).set_index("Target")
    assert (frame.Validation == "pass").all(), frame["Validation Detail"]
    firmware, python = (outputs(tflm_home, int(frame.loc[t, "Run"])) for t in ("spike", "host_py"))
    assert len(python) == 3 and all(np.array_equal(a, b) for a, b in zip(firmware, python, strict=True))
    host, interpreted = frame.loc["host_x86", "Arena Size"], frame.loc["host_py", "Arena Size"]
    assert host <= interpreted <= host + 1024, (host, interpreted)
    assert frame.loc["host_py", "Counter"] == "interpreter-wallclock"


def test_a_second_session_does_not_rebuild_the_library(tflm_home, mlonmcu):
    code, output = mlonmcu("flow", "run", "kws_dscnn", "-b", "tflmi", "-t", "spike", "-H", tflm_home)
    assert code == 0, output
    # the same operators (the library is keyed by the kernels the model needs), compiled again
    code, output = mlonmcu("flow", "run", "kws_dscnn", "-b", "tflmi", "-t", "spike", "--no-cache", "-H", tflm_home)
    assert code == 0, output
    logs = compile_logs(tflm_home)
    assert "tflm: reusing" in logs and "building tflm" not in logs
    assert report(tflm_home).iloc[0]["Run Instructions"] > 0


def with_operator(source: Path, target: Path, builtin: int) -> Path:
    """A copy of the model whose first operator code is replaced (both code fields, in place)."""
    data = bytearray(source.read_bytes())
    code = tflite.Model.GetRootAsModel(data, 0).OperatorCodes(0)
    table = code._tab
    deprecated, builtin_field = table.Offset(4), table.Offset(10)
    assert deprecated and builtin_field, "the model does not store the operator code fields"
    data[table.Pos + deprecated] = builtin
    data[table.Pos + builtin_field : table.Pos + builtin_field + 4] = builtin.to_bytes(4, "little")
    target.write_bytes(bytes(data))
    return target


def test_unsupported_operator_fails_at_build_naming_it(tflm_home, mlonmcu, tmp_path):
    model = with_operator(BUNDLED / "kws_dscnn" / "kws_dscnn.tflite", tmp_path / "odd.tflite", 10)
    code, _ = mlonmcu("flow", "build", model, "kws_dscnn", "-b", "tflmi", "-H", tflm_home)
    assert code == 1
    frame = report(tflm_home).set_index("Model")
    assert frame.loc["odd", "Failing"] and "no kernel for operator(s) HASHTABLE_LOOKUP" in frame.loc["odd", "Reason"]
    assert not frame.loc["kws_dscnn", "Failing"]


def test_arena_too_small_names_the_size_needed(tflm_home, mlonmcu):
    code, _ = mlonmcu(
        "flow", "run", "kws_dscnn", "-b", "tflmi", "-t", "spike", "-c", "tflmi.arena_size=1000", "-H", tflm_home
    )
    assert code == 1
    reason = report(tflm_home).iloc[0]["Reason"]
    assert "arena of 1000 bytes is too small: kws_dscnn needs" in reason


# instructions per inference and arena measured when TFLM was first built here (notes/tflm.md)
NOTES_SPIKE = {
    "aww": (45_569_929, 22_780),
    "vww": (114_001_883, 100_668),
    "resnet": (126_994_666, 54_360),
    "toycar": (2_510_406, 2_808),
}


@pytest.mark.slow
def test_mlperf_tiny_matches_the_reference_and_the_notes(tflm_home, mlonmcu):
    models = [shared_model(name) for name in NOTES_SPIKE]
    _, output = mlonmcu(
        "flow",
        "run",
        *models,
        "-b",
        "tflmi",
        "-t",
        "spike",
        "-f",
        "validate",
        "-c",
        "validate.samples=2",
        "-H",
        tflm_home,
    )
    frame = report(tflm_home).set_index("Model")
    for model, (instructions, arena) in NOTES_SPIKE.items():
        row = frame.loc[model]
        assert abs(row["Run Instructions"] / instructions - 1) < 0.02, (model, row["Run Instructions"])
        assert abs(row["Arena Size"] / arena - 1) < 0.02, (model, row["Arena Size"])
    exact = frame.drop(index="toycar")
    assert (exact.Validation == "pass").all() and (exact["Max Abs Error"] == 0).all(), output
    # FULLY_CONNECTED: TFLM requantizes in fixed point, LiteRT's reference kernels in double
    assert frame.loc["toycar", "Max Abs Error"] <= 3


@pytest.mark.slow
def test_toycar_equals_tvmaot_with_tflm_rounding(tflm_home, mlonmcu):
    """Two independent implementations of TFLM's FULLY_CONNECTED arithmetic agree bit for bit."""
    args = ["-t", "spike", "-f", "validate", "-c", "tvmaot.fc_requant=tflm", "-H", tflm_home]
    mlonmcu("flow", "run", shared_model("toycar"), "-b", "tflmi", "-b", "tvmaot", *args)
    frame = report(tflm_home).set_index("Backend")
    runs = tflm_home / "sessions" / "latest" / "runs"
    outputs = {b: np.load(runs / str(frame.loc[b, "Run"]) / "run" / "outputs.npz") for b in ("tflmi", "tvmaot")}
    assert len(outputs["tflmi"].files) == 10
    for key in outputs["tflmi"].files:
        assert np.array_equal(outputs["tflmi"][key], outputs["tvmaot"][key]), key


@pytest.mark.slow
def test_cortex_m_board_and_memory_overflow(tflm_home, mlonmcu):
    code, output = mlonmcu(
        "flow", "run", "kws_dscnn", "-b", "tflmi", "-t", "mps2_an385", "-f", "validate", "-H", tflm_home
    )
    assert code == 0, output
    row = report(tflm_home).iloc[0]
    assert row.Validation == "pass" and row["Max Abs Error"] == 0 and row["Run Instructions"] > 1_000_000
    code, _ = mlonmcu(
        "flow",
        "compile",
        "kws_dscnn",
        "-b",
        "tflmi",
        "-t",
        "board",
        "-c",
        "board.core=cortex-m3",
        "-c",
        "board.memory=rom=0x0:32K,ram=0x20000000:64K",
        "-c",
        "tflmi.arena_size=16000",
        "-H",
        tflm_home,
    )
    reason = report(tflm_home).iloc[0]["Reason"]
    assert code == 1 and "does not fit" in reason and "ROM overflowed by" in reason


@pytest.fixture(scope="session")
def cmsis_home(tflm_home: Path) -> Path:
    """tflm_home with CMSIS-NN and CMSIS_6 (from MLONMCU_CMSIS_NN_SRC / MLONMCU_CMSIS_SRC, or
    as `mlonmcu setup cmsis_nn` installed them)."""
    installed_or_skip(
        tflm_home,
        CMSIS_COMPONENTS,
        "no CMSIS-NN source tree: set MLONMCU_CMSIS_NN_SRC and MLONMCU_CMSIS_SRC to local checkouts or "
        "mirrors, or run `mlonmcu setup cmsis_nn --source cmsis_nn=PATH --source cmsis=PATH`",
    )
    return tflm_home


@pytest.mark.slow
@pytest.mark.cmsis_nn
def test_cmsis_nn_kernels_equal_the_reference_kernels(cmsis_home, mlonmcu):
    """tflmi.kernels=cmsis_nn: SIMD on the M4 (DSP) and the M55 (MVE), portable C on RISC-V;
    the outputs are the reference kernels' to the bit, in fewer instructions. The M55 build also
    covers GCC 12's vcvtne trap in resize_nearest_neighbor.cc (reference kernels too)."""
    targets = ["mps2_an386", "mps3_an547", "spike"]
    code, output = mlonmcu(
        "flow", "run", "kws_dscnn", "-b", "tflmi", *(a for t in targets for a in ("-t", t)), "-f", "validate",
        "-c", "tflmi.kernels=reference", "-c", "tflmi.kernels=cmsis_nn", "-c", "validate.samples=2",
        "-H", cmsis_home,
    )  # fmt: skip
    assert code == 0, output
    frame = report(cmsis_home)
    assert (frame.Validation == "pass").all() and (frame["Max Abs Error"] == 0).all(), output
    kernels = frame.Config.str.extract(r"tflmi.kernels=(\w+)")[0]
    for target in targets:
        runs = frame[frame.Target == target].assign(kernels=kernels).set_index("kernels")
        reference, optimized = (runs.loc[k] for k in ("reference", "cmsis_nn"))
        assert all(
            map(np.array_equal, outputs(cmsis_home, int(reference.Run)), outputs(cmsis_home, int(optimized.Run)))
        )
        speedup = reference["Run Instructions"] / optimized["Run Instructions"]
        assert speedup > {"mps2_an386": 3.0, "mps3_an547": 10.0, "spike": 1.5}[target], (target, speedup)
    logs = (cmsis_home / "sessions" / "latest" / "runs").glob("*/logs/build.log")
    assert any("cmsis_nn kernels" in path.read_text() for path in logs)


@pytest.fixture(scope="session")
def muriscv_nn_home(tflm_home: Path) -> Path:
    """tflm_home with muRISCV-NN (from MLONMCU_MURISCV_NN_SRC, or as `mlonmcu setup muriscv_nn` installed it)."""
    installed_or_skip(
        tflm_home,
        ("muriscv_nn",),
        "no muRISCV-NN source tree: set MLONMCU_MURISCV_NN_SRC to a local checkout or mirror, or run "
        "`mlonmcu setup muriscv_nn --source muriscv_nn=PATH`",
    )
    return tflm_home


@pytest.mark.slow
@pytest.mark.muriscv_nn
def test_muriscv_nn_kernels_equal_the_reference_kernels(muriscv_nn_home, mlonmcu):
    """tflmi.kernels=muriscv_nn: scalar C on rv32imc, RVV on rv32gcv (clang) at two VLENs; the
    outputs are the reference kernels' to the bit, and the vector library runs faster as VLEN grows."""
    common = ("flow", "run", "kws_dscnn", "-b", "tflmi", "-t", "spike", "-f", "validate", "-c", "validate.samples=2")
    code, output = mlonmcu(
        *common, "-c", "tflmi.kernels=reference", "-c", "tflmi.kernels=muriscv_nn", "-H", muriscv_nn_home
    )
    assert code == 0, output
    scalar = report(muriscv_nn_home).assign(kernels=lambda f: f.Config.str.extract(r"kernels=(\w+)")[0])
    scalar = scalar.set_index("kernels")
    code, output = mlonmcu(
        *common, "-c", "tflmi.kernels=muriscv_nn", "-c", "spike.arch=rv32gcv",
        "-c", "spike.vlen=128", "-c", "spike.vlen=512", "-H", muriscv_nn_home,
    )  # fmt: skip
    assert code == 0, output
    vector = report(muriscv_nn_home)
    vector = vector.assign(vlen=vector.Config.str.extract(r"vlen=(\d+)")[0].astype(int)).set_index("vlen")
    runs = [(muriscv_nn_home, int(scalar.loc[k].Run)) for k in ("reference", "muriscv_nn")]
    assert (scalar.Validation == "pass").all() and (vector.Validation == "pass").all(), output
    assert all(map(np.array_equal, outputs(*runs[0]), outputs(*runs[1])))
    reference, scalar_nn = (scalar.loc[k, "Run Instructions"] for k in ("reference", "muriscv_nn"))
    vector_nn = vector.loc[128, "Run Instructions"]
    assert reference > 1.5 * scalar_nn and scalar_nn > 1.5 * vector_nn, (reference, scalar_nn, vector_nn)
    assert vector.loc[512, "Run Instructions"] < vector.loc[128, "Run Instructions"]


def test_profile_shows_every_tflm_operator(tflm_home, mlonmcu):
    """-f profile on tflmi: each operator's Invoke in execution order, with the MACs the model
    says, summing to (almost) the whole inference."""
    code, output = mlonmcu("flow", "run", "kws_dscnn", "-b", "tflmi", "-t", "spike", "-f", "profile", "-H", tflm_home)
    assert code == 0, output
    row = report(tflm_home).iloc[0]
    table = pd.read_csv(tflm_home / "sessions" / "latest" / "runs" / str(int(row.Run)) / "postprocess" / "profile.csv")
    assert list(table["TFLite Ops"]) == [
        "CONV_2D", "DEPTHWISE_CONV_2D", "CONV_2D", "DEPTHWISE_CONV_2D", "CONV_2D",
        "AVERAGE_POOL_2D", "FULLY_CONNECTED", "RESHAPE", "SOFTMAX",
    ]  # fmt: skip
    assert (table.Instructions > 0).all() and table.loc[0, "MACs"] == 160000
    assert 0.9 < table.Instructions.sum() / row["Run Instructions"] <= 1.0


# TFLite Micro's own example and test models (in its source tree, not in this repository)
TFLM_MODELS = {
    "person_detect": "tensorflow/lite/micro/models/person_detect.tflite",
    "micro_speech_quantized": "tensorflow/lite/micro/examples/micro_speech/models/micro_speech_quantized.tflite",
    "keyword_scrambled_8bit": "tensorflow/lite/micro/models/keyword_scrambled_8bit.tflite",
    "trained_lstm_int8": "tensorflow/lite/micro/examples/mnist_lstm/trained_lstm_int8.tflite",
    "dtln_noise_suppression": "tensorflow/lite/micro/examples/dtln/dtln_noise_suppression.tflite",
}


def tflm_model(home: Path, name: str, into: Path) -> Path:
    source = Environment.load(home).deps_dir / "tflm" / TFLM_MODELS[name]
    if not source.is_file():
        pytest.skip(f"{source} is not in this TFLM checkout")
    target = into / name / f"{name}.tflite"
    target.parent.mkdir(parents=True)
    target.write_bytes(source.read_bytes())
    return target


def outputs(home: Path, run: int) -> list[np.ndarray]:
    with np.load(home / "sessions" / "latest" / "runs" / str(run) / "run" / "outputs.npz") as data:
        return [data[key] for key in sorted(data.files)]


def test_tflm_example_models_run_integer_on_tvmaot(tflm_home, mlonmcu, tmp_path):
    """Per-channel depthwise scales on axis 3 (person_detect) and a FULLY_CONNECTED over a 4-D
    input (micro_speech) — both rejected by TVM's importer — built from the flatbuffer."""
    models = [tflm_model(tflm_home, name, tmp_path) for name in ("person_detect", "micro_speech_quantized")]
    args = ["flow", "run", *models, "-b", "tvmaot", "-b", "tflmi", "-t", "spike", "-f", "validate"]
    code, output = mlonmcu(*args, "-c", "validate.samples=3", "-H", tflm_home)
    assert code == 0, output
    frame = report(tflm_home)
    tvm = frame[frame.Backend == "tvmaot"].set_index("Model")
    tflm = frame[frame.Backend == "tflmi"].set_index("Model")
    assert (tvm["Float Ops"] == "none").all(), tvm["Float Ops"]
    assert (tvm["Run Instructions"] < tflm["Run Instructions"]).all()
    speech = tvm.loc["micro_speech_quantized"]
    assert speech["Validation"] == "pass" and speech["Max Abs Error"] == 0
    # LiteRT refuses person_detect's scales: TFLM's Python interpreter is the oracle, and the report says so
    person = tvm.loc["person_detect"]
    assert person["Validation"] == "pass" and person["Oracle"] == "tflm-python", person["Validation Detail"]
    for model in tvm.index:  # and tvmaot computes what TFLM's reference kernels compute
        ours, theirs = outputs(tflm_home, int(tvm.loc[model, "Run"])), outputs(tflm_home, int(tflm.loc[model, "Run"]))
        assert all(np.array_equal(a, b) for a, b in zip(ours, theirs, strict=True)), model


def test_litert_crashing_on_a_model_hands_it_to_tflms_interpreter(tflm_home, mlonmcu, tmp_path):
    """LiteRT's reference SVDF kernel corrupts its heap on this valid model: in-process it took
    the whole session down; now the crash costs only LiteRT's turn and TFLM's Python
    interpreter judges the run."""
    from mlonmcu.errors import ModelError
    from mlonmcu.models.reference import LITERT, TFLM_PYTHON, _child, reference_outputs

    model = tflm_model(tflm_home, "keyword_scrambled_8bit", tmp_path)
    sample = [np.zeros((1, 96), np.int16)]
    with pytest.raises(ModelError, match=r"LiteRT's reference kernels crashed on keyword_scrambled_8bit\.tflite \(SIG"):
        _child(LITERT, model, [sample])
    assert reference_outputs(model, [sample])[1] == TFLM_PYTHON
    code, output = mlonmcu(
        "flow", "run", model, "kws_dscnn", "-b", "tvmaot", "-t", "spike", "-f", "validate", "-H", tflm_home
    )
    assert code == 0, output
    frame = report(tflm_home).set_index("Model")
    scrambled = frame.loc["keyword_scrambled_8bit"]
    assert scrambled["Validation"] == "pass" and scrambled["Oracle"] == TFLM_PYTHON, scrambled["Validation Detail"]
    assert frame.loc["kws_dscnn", "Validation"] == "pass" and frame.loc["kws_dscnn", "Oracle"] == LITERT


def test_recurrent_models_run_integer_and_equal_tflm(tflm_home, mlonmcu, tmp_path):
    """SVDF and UNIDIRECTIONAL_SEQUENCE_LSTM with their state carried from sample to sample:
    TFLM's two models (tflmi's arena search once crashed on the LSTM) and one-operator models
    over the parameters (rank, int16 state, batches, cell clip, time-major), judged by TFLM."""
    from tflite_builder import lstm_model, svdf_model, write

    models = [tflm_model(tflm_home, name, tmp_path) for name in ("keyword_scrambled_8bit", "trained_lstm_int8")]
    built = {
        "svdf_rank2_int16_state": svdf_model(batch=2, rank=2, state_dtype="int16"),
        "svdf_int8_state": svdf_model(batch=1, rank=1, state_dtype="int8"),
        "lstm_two_batches": lstm_model(batch=2, steps=3),
        "lstm_cell_clip": lstm_model(batch=1, steps=4, cell_clip=3.0),
        "lstm_time_major": lstm_model(batch=1, steps=5, time_major=True),
    }
    models += [write(tmp_path, name, model) for name, model in built.items()]
    args = ["flow", "run", *models, "-b", "tvmaot", "-b", "tflmi", "-t", "spike", "-f", "validate"]
    code, output = mlonmcu(*args, "-c", "validate.reference=tflm", "-c", "validate.samples=3", "-H", tflm_home)
    assert code == 0, output
    frame = report(tflm_home)
    assert (frame["Validation"] == "pass").all(), frame[["Model", "Backend", "Validation Detail"]]
    assert (frame["Max Abs Error"] == 0).all()
    tvm = frame[frame.Backend == "tvmaot"].set_index("Model")
    tflm = frame[frame.Backend == "tflmi"].set_index("Model")
    assert (tvm["Float Ops"] == "none").all(), tvm["Float Ops"]
    assert (tvm["Run Instructions"] < tflm["Run Instructions"]).all()


def test_tflm_is_the_oracle_where_litert_refuses(tflm_home, mlonmcu, tmp_path):
    """validate.reference=tflm: TFLM's reference kernels on the host judge person_detect."""
    model = tflm_model(tflm_home, "person_detect", tmp_path)
    args = ["flow", "run", model, "-b", "tvmaot", "-t", "spike", "-f", "validate"]
    code, output = mlonmcu(*args, "-c", "validate.reference=tflm", "-c", "validate.samples=2", "-H", tflm_home)
    assert code == 0, output
    row = report(tflm_home).iloc[0]
    assert row["Validation"] == "pass" and row["Max Abs Error"] == 0, row["Validation Detail"]
    assert "reference: TFLM on the host" in row["Validation Detail"]
    run_dir = tflm_home / "sessions" / "latest" / "runs" / "0"
    assert (run_dir / "oracle" / "run" / "outputs.npz").is_file()  # the oracle's own run, beside ours


def test_tflmi_names_a_hybrid_model(tflm_home, mlonmcu, tmp_path):
    from tflite_builder import hybrid_model

    code, _ = mlonmcu("flow", "build", hybrid_model(tmp_path), "-b", "tflmi", "-H", tflm_home)
    assert code == 1
    assert "hybrid (dynamic-range) quantized model" in report(tflm_home).iloc[0]["Reason"]


def test_a_prepare_that_aborts_is_not_called_an_arena_size(tflm_home, mlonmcu, tmp_path):
    """A SOFTMAX whose input scale TFLite refuses (its Prepare aborts on a failed check): the
    calibration firmware dies, and the reason says so instead of 'not enough bytes'."""
    from tflite_builder import Op, build, q, write

    tensors = [q((1, 10), 1e-9, 0), q((1, 10), 1 / 256, -128)]
    model = write(
        tmp_path, "tiny_softmax", build(tensors, [Op("SOFTMAX", [0], [1], {"Beta": 1.0}, "SoftmaxOptions")], [0], [1])
    )
    code, _ = mlonmcu("flow", "run", model, "-b", "tflmi", "-t", "host_x86", "-H", tflm_home)
    assert code == 1
    reason = report(tflm_home).iloc[0]["Reason"]
    assert "arena calibration firmware failed on host_x86" in reason and "SIGABRT" in reason, reason
    assert "not enough" not in reason


def test_kernels_holding_temporaries_get_an_arena_that_fits(tflm_home, mlonmcu, tmp_path):
    """A per-channel FULLY_CONNECTED, a 16x8 SOFTMAX and a 2-D LOG_SOFTMAX allocate persistent
    data while their Prepare holds temporaries; TFLM checks such a buffer against the head only.
    The metered arena once left those temporaries out, the bisection then tried arenas a few
    bytes too small and TFLM's planner crashed (SIGSEGV, store access faults). Now every one
    runs and is right, and an int8 EXP (TFLM's is float-only) is named a refusal, not a crash."""
    from simd_cases import dense_case
    from tflite_builder import Op, build, q, write

    built = {
        "dense_per_channel": dense_case(np.random.default_rng(0), 12, 64, True),
        "softmax_16x8": build(
            [q((2, 10), 0.0004, 0, "int16"), q((2, 10), 2.0**-15, 0, "int16")],
            [Op("SOFTMAX", [0], [1], {"Beta": 1.0}, "SoftmaxOptions", 3)],
            [0],
            [1],
        ),
        "log_softmax_2d": build(
            [q((2, 30), 0.3, 5), q((2, 30), 16 / 256, 127)], [Op("LOG_SOFTMAX", [0], [1])], [0], [1]
        ),
        "exp_int8": build([q((1, 8), 0.04, -7), q((1, 8), 0.05, 3)], [Op("EXP", [0], [1], version=2)], [0], [1]),
    }
    models = [write(tmp_path, name, model) for name, model in built.items()]
    args = ["flow", "run", *models, "-b", "tflmi", "-t", "spike", "-t", "host_x86", "-f", "validate"]
    code, _ = mlonmcu(*args, "-c", "validate.samples=2", "-H", tflm_home)
    assert code == 1  # the EXP runs fail
    frame = report(tflm_home).set_index(["Model", "Target"])
    ran = frame.drop(index="exp_int8", level="Model")
    assert (ran["Validation"] == "pass").all(), ran[["Validation", "Reason"]]
    for target in ("spike", "host_x86"):
        reason = frame.loc[("exp_int8", target), "Reason"]
        assert "AllocateTensors fails" in reason and "Prepare refuses" in reason, reason


def test_operators_litert_lacks_are_judged_by_tflm(tflm_home, mlonmcu, tmp_path):
    """Where LiteRT's reference kernels have none (int8 ELU, 16x8 TRANSPOSE_CONV; SUM returns −1s) or differ from
    TFLM (a 16x8 CONV_2D with an int32 bias: TFLM accumulates in int32; 16x8 MUL: 1 LSB), TFLM's
    are the oracle. (The 16x8 FULLY_CONNECTED follows `tvmaot.arithmetic`: see the next test.)"""
    from tflite_builder import Op, build, const, conv16_model, q, transpose_conv_model, write

    shape = (1, 6, 5, 8)
    models = {
        "elu": build([q(shape, 0.04, -7), q(shape, 0.05, 3)], [Op("ELU", [0], [1], version=2)], [0], [1]),
        "conv_16x8_int32_bias": conv16_model("int32", stride=2, padding=1),
        "transpose_conv_16x8": transpose_conv_model(3, 2, 0, (8, 6), dtype="int16"),
        "transpose_conv_16x8_stride3": transpose_conv_model(2, 3, 1, (11, 8), dtype="int16"),
        "sum_channels": build(
            [q(shape, 0.04, -7), const(np.array([3], np.int32)), q((1, 6, 5), 0.2, -10)],
            [Op("SUM", [0, 1], [2], {"KeepDims": False}, "ReducerOptions", 2)],
            [0],
            [2],
        ),
        "mul_16x8_broadcast": build(
            [q(shape, 0.0003, 0, "int16"), q((1, 1, 5, 8), 0.0005, 0, "int16"), q(shape, 0.0007, 0, "int16")],
            [Op("MUL", [0, 1], [2], {"FusedActivationFunction": 0}, "MulOptions", 3)],
            [0, 1],
            [2],
        ),
    }
    paths = [write(tmp_path, name, model) for name, model in models.items()]
    args = ["flow", "run", *paths, "-b", "tvmaot", "-t", "host_x86", "-f", "validate", "-c", "validate.reference=tflm"]
    code, output = mlonmcu(*args, "-c", "tvmaot.importer=direct", "-H", tflm_home)
    assert code == 0, output
    frame = report(tflm_home).set_index("Model")
    assert (frame["Validation"] == "pass").all(), frame["Validation Detail"]
    assert (frame["Max Abs Error"] == 0).all()
    assert (frame["Float Ops"] == "none").all()


def test_arithmetic_tflm_reproduces_tflm(tflm_home, mlonmcu, tmp_path):
    """tvmaot.arithmetic=tflm: where LiteRT and TFLM round differently (FULLY_CONNECTED, also
    16x8 — TFLM reduces the multiplier to 16 bits, LiteRT keeps 31 —, int8 LOGISTIC/TANH tables,
    SUB's scale ratios), TFLM's arithmetic — dtln (two LSTMs, FULLY_CONNECTED, LOGISTIC), the 16x8
    FULLY_CONNECTEDs and a 16x8 SUB are then bit-exact with TFLM, with LiteRT's they are not."""
    from tflite_builder import Op, build, dense16_model, q, write

    shape = (1, 6, 5, 8)
    models = [tflm_model(tflm_home, "dtln_noise_suppression", tmp_path)]
    for bias in ("int64", "int32"):
        models.append(write(tmp_path, f"fully_connected_16x8_{bias}_bias", dense16_model(bias)))
    # TFLM's SUB divides the scales in float32 (its ADD in double); these are seanet's sub1's
    x, y, out = (1, 2, 22, 32), (32,), (1, 2, 22, 32)
    scales = (0.0012579172616824508, 9.196187420457136e-06, 0.0009364741272293031)
    tensors = [q(shape, scale, 0, "int16") for shape, scale in zip((x, y, out), scales, strict=True)]
    sub = build(tensors, [Op("SUB", [0, 1], [2], {"FusedActivationFunction": 0}, "SubOptions", 3)], [0, 1], [2])
    models.append(write(tmp_path, "sub_16x8", sub))
    for op, scale, zero in (("LOGISTIC", 1 / 256, -128), ("TANH", 1 / 128, 0)):
        model = build([q(shape, 0.04, -7), q(shape, scale, zero)], [Op(op, [0], [1])], [0], [1])
        models.append(write(tmp_path, op.lower(), model))
    args = ["flow", "run", *models, "-b", "tvmaot", "-t", "host_x86", "-f", "validate", "-c", "validate.reference=tflm"]
    code, output = mlonmcu(*args, "-c", "tvmaot.arithmetic=tflm", "-c", "tvmaot.arithmetic=litert", "-H", tflm_home)
    assert code == 1, output  # dtln with LiteRT's rounding fails TFLM's validation, as it should
    frame = report(tflm_home)
    tflm = frame[frame.Config.str.contains("arithmetic=tflm")].set_index("Model")
    assert (tflm["Validation"] == "pass").all() and (tflm["Max Abs Error"] == 0).all(), tflm["Validation Detail"]
    litert = frame[frame.Config.str.contains("arithmetic=litert")].set_index("Model")
    assert litert.loc["dtln_noise_suppression", "Max Abs Error"] > 0  # the choice matters on this model
    assert litert.loc["fully_connected_16x8_int64_bias", "Max Abs Error"] > 0  # and on the 16x8 FC
    assert litert.loc["sub_16x8", "Max Abs Error"] > 0  # and on SUB
