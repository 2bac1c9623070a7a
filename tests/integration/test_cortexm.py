"""Cortex-M: QEMU MPS2/MPS3 boards with plugin instruction counts, and the GDB `board` target."""

from __future__ import annotations

import socket
from pathlib import Path

import pandas as pd
import pytest
from helpers import FakeFirmwareBackend, home_with, shared_model

from mlonmcu.registry import BACKENDS

pytestmark = pytest.mark.integration

BOARDS = ["mps2_an385", "mps2_an386", "mps2_an500", "mps2_an505", "mps3_an547"]


class LoopBackend(FakeFirmwareBackend):
    """Test firmware whose inference is a counted Thumb loop: 2 instructions per iteration."""

    iterations = 0

    def run_body(self) -> str:
        return (
            f"unsigned int n = {self.iterations};\n"
            '__asm__ volatile("1: subs %0, %0, #1\\n bne 1b" : "+r"(n) : : "cc");\n'
            "return 0;"
        )


def register_counted(base: type, prefix: str) -> None:
    """Backends `<prefix>1000` and `<prefix>3000`: the loop of `base` run that many times."""
    for iterations in (1000, 3000):
        BACKENDS.register(
            type(f"{base.__name__}{iterations}", (base,), {"name": f"{prefix}{iterations}", "iterations": iterations})
        )


register_counted(LoopBackend, "loop")


class MixBackend(FakeFirmwareBackend):
    """A counted loop of two loads, a multiply-accumulate, a subtract and a taken branch."""

    iterations = 0

    def run_body(self) -> str:
        return (
            f"unsigned int n = {self.iterations}, a, b, acc = 0;\n"
            '__asm__ volatile("1: ldr %1, [%4]\\n ldr %2, [%4, #4]\\n mla %3, %1, %2, %3\\n'
            ' subs %0, %0, #1\\n bne 1b"\n'
            '                 : "+r"(n), "=&r"(a), "=&r"(b), "+r"(acc) : "r"(input) : "cc", "memory");\n'
            "return 0;"
        )


register_counted(MixBackend, "mix")


def latest(home: Path) -> pd.DataFrame:
    return pd.read_csv(home / "sessions" / "latest" / "report.csv")


def test_bundled_model_on_all_qemu_boards(integration_home, mlonmcu):
    args = ["flow", "run", "kws_dscnn", "-b", "tvmaot", "-f", "validate", "-H", integration_home]
    for board in BOARDS:
        args += ["-t", board]
    code, output = mlonmcu(*args)
    frame = latest(integration_home)
    assert code == 0, output
    assert set(frame.Target) == set(BOARDS)
    assert (frame.Validation == "pass").all() and (frame["Max Abs Error"] == 0).all()
    assert (frame.Counter == "qemu-plugin").all()
    # a whole inference ran (the M55 takes kws_dscnn in ~0.46 M instructions with MVE, the others > 1.3 M)
    assert (frame["Run Instructions"] > 300_000).all() and frame["Run Cycles"].isna().all()
    assert (frame["Total ROM"] > 10_000).all() and (frame["Total RAM"] > frame["Arena Size"]).all()


def test_instruction_counts_are_exact(integration_home, mlonmcu, tmp_path):
    home = home_with(integration_home, tmp_path, backends=["loop1000", "loop3000"])
    for _ in range(2):
        code, output = mlonmcu(
            "flow",
            "run",
            "kws_dscnn",
            "-b",
            "loop1000",
            "-b",
            "loop3000",
            "-t",
            "mps2_an385",
            "-t",
            "mps3_an547",
            "--no-cache",
            "-H",
            home,
        )
        assert code == 0, output
    sessions = [pd.read_csv(home / "sessions" / str(i) / "report.csv") for i in (0, 1)]
    first, second = (s.set_index(["Backend", "Target"])["Run Instructions"] for s in sessions)
    assert first.equals(second)  # deterministic: two runs, identical counts
    for target in ("mps2_an385", "mps3_an547"):
        # the loop is `subs; bne` per iteration: 2000 more iterations are exactly 4000 more instructions
        assert first[("loop3000", target)] - first[("loop1000", target)] == 4000


def test_estimated_cycles_weigh_each_instruction_with_the_cores_timings(integration_home, mlonmcu, tmp_path):
    """2000 more iterations of `ldr; ldr; mla; subs; bne` (targets/timing.py): on the M4
    2 + 1 (pipelined) + 1 + 1 + 1+2 (taken) = 8 cycles each, on the M3 9 (its MLA takes 2)."""
    home = home_with(integration_home, tmp_path, backends=["mix1000", "mix3000"])
    args = ("flow", "run", "kws_dscnn", "-b", "mix1000", "-b", "mix3000", "-t", "mps2_an385", "-t", "mps2_an386")
    code, output = mlonmcu(
        *args, "-c", "mps2_an385.estimate_cycles=1", "-c", "mps2_an386.estimate_cycles=1", "-H", home
    )
    assert code == 0, output
    frame = latest(home).set_index(["Backend", "Target"])
    assert set(frame["Counter"]) == {"qemu-plugin+timing"}
    assert "Estimated Cycles" in output  # in the terminal table
    for target, per_iteration in (("mps2_an385", 9), ("mps2_an386", 8)):
        more = frame["Estimated Cycles"][("mix3000", target)] - frame["Estimated Cycles"][("mix1000", target)]
        assert more == 2000 * per_iteration, target
        assert frame["Run Instructions"][("mix3000", target)] - frame["Run Instructions"][("mix1000", target)] == 10_000
    code, output = mlonmcu(*args[:5], "-t", "mps2_an386", "-H", home)  # off by default: counts unchanged
    plain = latest(home).set_index(["Backend", "Target"])
    assert code == 0 and plain["Counter"].iloc[0] == "qemu-plugin" and plain["Estimated Cycles"].isna().all()
    assert plain["Run Instructions"].iloc[0] == frame["Run Instructions"][("mix1000", "mps2_an386")]


def test_estimated_cycles_only_where_the_core_publishes_timings(integration_home, mlonmcu):
    code, output = mlonmcu(
        "flow", "run", "kws_dscnn", "-b", "tvmaot", "-t", "mps3_an547", "-c", "mps3_an547.estimate_cycles=1",
        "-H", integration_home,
    )  # fmt: skip
    assert code == 2, output
    assert "cortex-m55 has no published per-instruction cycle table" in output and "cortex-m4" in output


def test_firmware_too_large_fails_at_compile_with_sizes(integration_home, mlonmcu):
    code, _ = mlonmcu(
        "flow",
        "compile",
        "cnn_small_fp32",
        "-b",
        "tvmaot",
        "-t",
        "board",
        "-c",
        "board.core=cortex-m4",
        "-c",
        "board.memory=rom=0x08000000:16K,ram=0x20000000:64K",
        "-H",
        integration_home,
    )
    reason = latest(integration_home).iloc[0]["Reason"]
    assert code == 1 and "does not fit" in reason and "ROM overflowed by" in reason and "16384 bytes" in reason


def test_unknown_core_is_a_usage_error(integration_home, mlonmcu):
    code, output = mlonmcu(
        "flow", "run", "kws_dscnn", "-t", "board", "-c", "board.core=cortex-m99", "-H", integration_home
    )
    assert code == 2 and "cortex-m4" in output


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        return sock.getsockname()[1]


BOARD_M3 = ["-t", "board", "-c", "board.core=cortex-m3", "-c", "board.memory=mps2"]  # an MPS2-AN385


def qemu_board_args(port: int) -> list[str]:
    """`-t board` as an MPS2-AN385 (Cortex-M3) that QEMU plays behind its gdbstub."""
    return [*BOARD_M3, "-c", f"board.gdb_server={qemu_as_board(port)}", "-c", f"board.port={port}"]


def qemu_as_board(port: int, serial_port: int | None = None) -> str:
    """The command that makes QEMU play a real board: halted at start, a gdbstub, semihosting via GDB."""
    serial = f"tcp::{serial_port},server=on,wait=off" if serial_port else "none"
    return (
        f"qemu-system-arm -machine mps2-an385 -nographic -monitor none -serial {serial} "
        f"-semihosting-config enable=on,target=gdb -S -gdb tcp::{port}"
    )


@pytest.mark.parametrize("output", ["semihosting", "serial"])
def test_board_end_to_end_against_qemu_gdbstub(integration_home, mlonmcu, output):
    port = free_port()
    config = ["-c", f"board.gdb_server={qemu_as_board(port)}", "-c", f"board.port={port}"]
    if output == "serial":
        serial_port = free_port()
        config = [
            "-c",
            f"board.gdb_server={qemu_as_board(port, serial_port)}",
            "-c",
            f"board.port={port}",
            "-c",
            "board.uart=0x40004000",
            "-c",
            f"board.serial=socket://localhost:{serial_port}",
        ]
    code, text = mlonmcu(
        "flow",
        "run",
        "kws_dscnn",
        "-b",
        "tvmaot",
        "-t",
        "board",
        "-c",
        "board.core=cortex-m3",
        "-c",
        "board.memory=mps2",
        *config,
        "-f",
        "validate",
        "-H",
        integration_home,
    )
    row = latest(integration_home).iloc[0]
    assert code == 0, text
    assert row["Validation"] == "pass" and row["Max Abs Error"] == 0
    # QEMU models no DWT cycle counter: the firmware finds none and no figure is invented
    assert row["Counter"] == "none" and pd.isna(row["Run Cycles"]) and pd.isna(row["Run Instructions"])


def test_board_without_gdb_server_fails_fast(integration_home, mlonmcu):
    port = free_port()
    code, _ = mlonmcu(
        "flow",
        "run",
        "kws_dscnn",
        "-b",
        "tvmaot",
        *BOARD_M3,
        "-c",
        f"board.gdb_server=localhost:{port}",
        "-H",
        integration_home,
    )
    reason = latest(integration_home).iloc[0]["Reason"]
    assert code == 1 and f"no GDB server answering at localhost:{port}" in reason


def test_board_timeout_leaves_it_halted(integration_home, mlonmcu, tmp_path):
    from test_crash import HangingBackend  # noqa: F401 - registers the `hanging` backend

    home = home_with(integration_home, tmp_path, backends=["hanging"])
    code, _ = mlonmcu(
        "flow", "run", "kws_dscnn", "-b", "hanging", *qemu_board_args(free_port()), "-c", "board.timeout=5", "-H", home
    )
    reason = latest(home).iloc[0]["Reason"]
    assert code == 1 and reason.startswith("timeout") and "halted" in reason


@pytest.mark.slow
def test_mlperf_tiny_on_all_qemu_boards(integration_home, mlonmcu):
    models = [str(shared_model(m)) for m in ("aww", "resnet", "toycar")]
    args = ["flow", "run", *models, "-b", "tvmaot", "-f", "validate", "--parallel", "2", "-H", integration_home]
    for board in BOARDS:
        args += ["-t", board]
    code, output = mlonmcu(*args)
    frame = latest(integration_home)
    assert code == 0, output
    assert len(frame) == 15 and (frame["Max Abs Error"] == 0).all()


def test_dsp_kernels_are_exact_and_taken_only_where_the_core_has_dsp(integration_home, mlonmcu, tmp_path):
    """tvmaot's DSP kernels (integer/dsp.py, templates/tvmaot/mlonmcu_dsp.h): FULLY_CONNECTED,
    CONV_2D (SAME padding: border pixels with the input offset, interior ones without), depthwise,
    SUB and the pools. simd=auto lays them out for the core:
    the M4 runs them as simd=dsp does, bit-exact and in fewer instructions than the scalar kernels;
    the M3 has no DSP and runs the scalar kernels in their own layout (as simd=off does)."""
    import numpy as np
    from simd_cases import add_case, conv_case, depthwise_case, pool_case
    from tflite_builder import Op, build, const, q, write

    rng = np.random.default_rng(11)
    scales = list(rng.uniform(0.002, 0.02, 20))
    tensors = [
        q((2, 64), 0.04, -7),
        const(rng.integers(-127, 128, (20, 64)).astype(np.int8), scales, [0] * 20),
        const(rng.integers(-3000, 3000, 20).astype(np.int32), [0.04 * s for s in scales], [0] * 20),
        q((2, 20), 0.3, 5),
    ]
    fc = Op("FULLY_CONNECTED", [0, 1, 2], [3], {"FusedActivationFunction": 1}, "FullyConnectedOptions")
    dense = write(tmp_path, "dense_dsp", build(tensors, [fc], [0], [3]))
    scales = list(rng.uniform(0.002, 0.02, 12))
    tensors = [
        q((1, 9, 7, 8), 0.04, -7),
        const(rng.integers(-127, 128, (12, 3, 3, 8)).astype(np.int8), scales, [0] * 12),
        const(rng.integers(-3000, 3000, 12).astype(np.int32), [0.04 * s for s in scales], [0] * 12),
        q((1, 9, 7, 12), 0.2, -3),
    ]
    opts = {"Padding": 0, "StrideH": 1, "StrideW": 1, "FusedActivationFunction": 0}
    conv = write(tmp_path, "conv_dsp", build(tensors, [Op("CONV_2D", [0, 1, 2], [3], opts, "Conv2DOptions")], [0], [3]))
    # one input channel under a 4-wide kernel (aww's first layer): kernel rows as words, border
    # pixels through a zero-point padded window
    rows = write(tmp_path, "conv_rows_dsp", conv_case(rng, 16, 2, 0, input_shape=(1, 29, 10, 1), kernel=(10, 4)))
    # depthwise: channels in words (SMLABB/SMLATT, SXTAB16 adding the offset on the border; no
    # activation: SSAT), and channels that are not (the scalar MACs with SMMLAR requantization)
    words = write(tmp_path, "depthwise_dsp", depthwise_case(rng, 24, 1, 0, size=9, act=0))
    odd = write(tmp_path, "depthwise_odd_dsp", depthwise_case(rng, 13, 2, 1, size=9))
    # the C variants (templates/tvmaot/mlonmcu_dsp.h): SUB with RELU (SMMLAR, SSAT), pools over
    # 21 channels (words of 16, of 4 and one channel) with border windows
    sub = write(tmp_path, "sub_dsp", add_case((2, 9, 4), subtract=True, act=1))
    average = write(tmp_path, "average_pool_dsp", pool_case("AVERAGE_POOL_2D", (1, 7, 6, 21), (3, 3), 2, 0, act=3))
    largest = write(tmp_path, "max_pool_dsp", pool_case("MAX_POOL_2D", (1, 7, 6, 21), (3, 3), 2, 0, act=1))
    args = ["-t", "mps2_an386", "-t", "mps2_an385", "-f", "validate"]
    simd = ["-c", "tvmaot.simd=auto", "-c", "tvmaot.simd=dsp", "-c", "tvmaot.simd=off"]
    models = (dense, conv, rows, words, odd, sub, average, largest)
    code, output = mlonmcu("flow", "run", *models, "-b", "tvmaot", *args, *simd, "-H", integration_home)
    assert code == 0, output
    frame = pd.read_csv(integration_home / "sessions" / "latest" / "report.csv")
    assert (frame.Validation == "pass").all() and (frame["Max Abs Error"] == 0).all(), output
    counts = {
        (m, t, c.split("=")[-1]): n
        for m, t, c, n in zip(frame.Model, frame.Target, frame.Config, frame["Run Instructions"], strict=True)
    }
    bounds = [
        ("dense_dsp", 0.8),
        ("conv_dsp", 0.8),
        ("conv_rows_dsp", 0.9),
        ("depthwise_dsp", 0.8),
        ("depthwise_odd_dsp", 1.0),
        ("sub_dsp", 0.7),
        ("average_pool_dsp", 0.7),
        ("max_pool_dsp", 0.5),
    ]
    for model, bound in bounds:
        assert counts[(model, "mps2_an386", "dsp")] < bound * counts[(model, "mps2_an386", "off")], counts
        assert counts[(model, "mps2_an386", "auto")] == counts[(model, "mps2_an386", "dsp")]
        assert counts[(model, "mps2_an385", "auto")] == counts[(model, "mps2_an385", "off")]
