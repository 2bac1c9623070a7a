"""Vector ISAs on Spike and QEMU: clang-built firmware, VLEN as a setting, tvmaot's RVV kernels
bit-exact with LiteRT at every VLEN, the same counts on both simulators, scalar ISAs untouched."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from simd_cases import add_case, conv_case, dense_case, depthwise_case, exact_counts, pool_case
from tflite_builder import write

pytestmark = pytest.mark.integration

RNG = np.random.default_rng(23)


CASES = {
    "conv_70_same_stride1": lambda: conv_case(RNG, 70, 1, 0),  # two weight blocks: 64 + 6 output channels
    "conv_9_valid_stride2": lambda: conv_case(RNG, 9, 2, 1),
    "conv_dilated_same": lambda: conv_case(RNG, 12, 1, 0, dilation=2),
    "conv_per_tensor_left_shift": lambda: conv_case(RNG, 8, 1, 0, per_tensor=True, big_scale=True),
    "depthwise_70_same": lambda: depthwise_case(RNG, 70, 1, 0),
    "depthwise_13_valid_stride2": lambda: depthwise_case(RNG, 13, 2, 1),
    "dense_70_per_channel": lambda: dense_case(RNG, 70, 37, True),
    "dense_10_per_tensor": lambda: dense_case(RNG, 10, 64, False),
    "add_strips": lambda: add_case((1, 5, 7, 6)),
    "sub_relu": lambda: add_case((2, 9, 4), subtract=True, act=1),
    # border windows (whole-window pools keep clang's vectorization of the scalar kernel)
    "average_pool_same_relu6": lambda: pool_case("AVERAGE_POOL_2D", (1, 7, 6, 21), (3, 3), 2, 0, act=3),
    "max_pool_same_relu": lambda: pool_case("MAX_POOL_2D", (1, 7, 6, 21), (3, 3), 2, 0, act=1),
}
# (arch, VLEN): V at its smallest and a wide one; Zve32x at VLEN 32 (four int32 lanes: many strips)
VECTOR_CORES = [("rv32gcv", 128), ("rv32gcv", 512), ("rv32imc_zve32x", 32)]


def _config(arch: str, vlen: int) -> dict[str, list[str]]:
    return {"spike.arch": [arch], "spike.vlen": [str(vlen)]}


@pytest.fixture(scope="module")
def kernel_reports(integration_home: Path, tmp_path_factory: pytest.TempPathFactory):
    from mlonmcu import api

    directory = tmp_path_factory.mktemp("rvv")
    paths = [str(write(directory, name, make())) for name, make in CASES.items()]
    reports = {}
    for arch, vlen in VECTOR_CORES:
        result = api.flow(
            paths,
            home=integration_home,
            backends=["tvmaot"],
            targets=["spike"],
            features=["validate"],
            config={**_config(arch, vlen), "tvmaot.importer": ["direct"], "tvmaot.simd": ["auto", "off"]},
            parallel=2,
        )
        reports[(arch, vlen)] = result.report
    return reports


@pytest.mark.parametrize(("arch", "vlen"), VECTOR_CORES)
def test_rvv_kernels_are_bit_exact_at_every_vlen(kernel_reports, arch, vlen):
    report = kernel_reports[(arch, vlen)]
    assert len(report) == 2 * len(CASES)
    counts = exact_counts(report)
    faster = counts["auto"] < counts["off"]  # the vector kernels ran, not the scalar ones
    # not the dense cases: their vector store loop keeps LiteRT's full rounding emulation (clang
    # vectorizes it), the scalar kernel takes the fast path, and on these small layers the scalar
    # kernel can win (below VLEN 128 it always does: four int32 lanes)
    faster = faster[~faster.index.str.startswith("dense")]
    assert faster.all(), counts


def test_vector_firmware_counts_agree_between_simulators_and_fall_with_vlen(integration_home: Path, mlonmcu):
    import pandas as pd

    code, output = mlonmcu(
        "flow", "run", "kws_dscnn", "-b", "tvmaot", "-t", "spike", "-t", "qemu_rv32", "-f", "validate",
        "-c", "spike.arch=rv32gcv", "-c", "qemu_rv32.arch=rv32gcv",
        "-c", "spike.arch=rv32imc_zve32x", "-c", "qemu_rv32.arch=rv32imc_zve32x",
        "-c", "spike.vlen=128", "-c", "spike.vlen=512", "-c", "qemu_rv32.vlen=128", "-c", "qemu_rv32.vlen=512",
        "-c", "validate.samples=2", "-H", integration_home,
    )  # fmt: skip
    assert code == 0, output
    frame = pd.read_csv(integration_home / "sessions" / "latest" / "report.csv")
    assert (frame["Validation"] == "pass").all() and len(frame) == 8
    frame["VLEN"] = frame["Config"].str.extract(r"vlen=(\d+)")[0].astype(int)
    frame["ISA"] = frame["Config"].str.extract(r"arch=(\w+)")[0]
    counts = frame.pivot_table(index=["ISA", "VLEN"], columns="Target", values="Run Instructions")
    assert (counts["spike"] == counts["qemu_rv32"]).all(), counts  # one ELF, the same count
    for isa in ("rv32gcv", "rv32imc_zve32x"):
        assert counts.loc[(isa, 512), "spike"] < counts.loc[(isa, 128), "spike"] * 0.8, counts
    assert frame.groupby("ISA")["Total ROM"].nunique().eq(1).all()  # VLEN is a RUN setting: one firmware
    runs = integration_home / "sessions" / "latest" / "runs"
    assert all("clang version" in (runs / str(r) / "run.yml").read_text() for r in frame["Run"])  # recorded
    compiled = [runs / str(r) / "logs" / "compile.log" for r in frame["Run"]]
    assert any("The C compiler identification is Clang" in log.read_text() for log in compiled if log.is_file())


def test_scalar_isas_build_as_before(integration_home: Path, mlonmcu):
    """The RVV variants are compiled out on rv32imc: simd=auto gives simd=off's exact count."""
    import pandas as pd

    code, output = mlonmcu(
        "flow", "run", "kws_dscnn", "-b", "tvmaot", "-t", "spike", "-c", "tvmaot.simd=auto", "-c", "tvmaot.simd=off",
        "-H", integration_home,
    )  # fmt: skip
    assert code == 0, output
    frame = pd.read_csv(integration_home / "sessions" / "latest" / "report.csv")
    assert frame["Run Instructions"].nunique() == 1, frame[["Config", "Run Instructions"]]
    logs = [integration_home / "sessions" / "latest" / "runs" / str(r) / "logs" / "compile.log" for r in frame["Run"]]
    compiled = [log.read_text() for log in logs if log.is_file()]  # (a run restored from the cache has none)
    assert all("The C compiler identification is GNU" in text for text in compiled)
    auto = frame[frame["Config"].str.contains("simd=auto")]["Run"].iloc[0]
    kernels = integration_home / "sessions" / "latest" / "runs" / str(auto) / "build" / "tvmaot_kernels.c"
    assert "#if defined(__riscv_vector)" in kernels.read_text()  # there, but not for this ISA
