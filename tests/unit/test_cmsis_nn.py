"""tflmi.kernels=cmsis_nn without a toolchain: which sources, which keys, which error."""

from pathlib import Path

import pytest

from mlonmcu.backends.tflm.backend import TflmiBackend
from mlonmcu.backends.tflm.cmsis_nn import DEFINITIONS, CmsisNn, replace_kernels
from mlonmcu.errors import StageError
from mlonmcu.setup.deps import Installed

KERNELS = "tensorflow/lite/micro/kernels"


def touch(root: Path, *paths: str) -> None:
    for path in paths:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("")


def test_each_kernel_with_a_cmsis_nn_version_is_swapped(tmp_path):
    touch(tmp_path, f"{KERNELS}/conv.cc", f"{KERNELS}/cmsis_nn/conv.cc", f"{KERNELS}/gather.cc")
    sources = [f"{KERNELS}/conv.cc", f"{KERNELS}/gather.cc", "tensorflow/lite/micro/micro_interpreter.cc"]
    assert replace_kernels(tmp_path, sources) == [
        f"{KERNELS}/cmsis_nn/conv.cc",
        f"{KERNELS}/gather.cc",
        "tensorflow/lite/micro/micro_interpreter.cc",
    ]
    with pytest.raises(StageError, match="cannot use CMSIS-NN"):
        replace_kernels(tmp_path / "elsewhere", sources)


def test_the_library_is_its_integer_sources(tmp_path):
    library, core = tmp_path / "cmsis_nn", tmp_path / "cmsis"
    touch(library, "Include/arm_nnfunctions.h", "Source/A/arm_convolve_s8.c", "Source/A/arm_convolve_f32.c")
    touch(library, "Source/A/arm_add_f16.c", "Source/N/arm_nntables_flt.c", "Source/N/arm_nntables.c")
    touch(library, "Source/Bindings/arm_py_module.cpp")
    (core / "CMSIS" / "Core" / "Include").mkdir(parents=True)
    spec = CmsisNn(library, core, ("a" * 40, "b" * 40)).library()
    assert spec.sources == ("Source/A/arm_convolve_s8.c", "Source/N/arm_nntables.c")
    assert spec.definitions == DEFINITIONS and str(core / "CMSIS" / "Core" / "Include") in spec.include_dirs
    with pytest.raises(StageError, match="not a CMSIS_6 checkout"):
        _ = CmsisNn(library, tmp_path / "nothing", ("a", "b")).sources


def test_only_cmsis_nn_runs_are_keyed_by_its_commits():
    components = {
        name: Installed(name, f"{name}-commit", f"/deps/{name}")
        for name in ("tflm", "flatbuffers", "gemmlowp", "cmsis_nn", "cmsis")
    }
    reference = TflmiBackend({}, components).versions(components)
    optimized = TflmiBackend({"tflmi.kernels": "cmsis_nn"}, components).versions(components)
    assert "cmsis_nn" not in reference and "cmsis" not in reference
    assert optimized["cmsis_nn"] == "cmsis_nn-commit" and optimized["cmsis"] == "cmsis-commit"


def test_cmsis_nn_kernels_without_the_component_say_how_to_get_it():
    backend = TflmiBackend({"tflmi.kernels": "cmsis_nn"}, {})
    with pytest.raises(StageError, match=r"needs component\(s\) cmsis_nn, cmsis: run `mlonmcu setup cmsis_nn`"):
        backend.cmsis_nn()


def test_muriscv_nn_is_its_integer_sources_through_the_cmsis_nn_glue(tmp_path):
    from mlonmcu.backends.tflm.muriscv_nn import VECTOR_HEADER, MuriscvNn

    root = tmp_path / "muriscv_nn"
    touch(root, "Include/CMSIS/NN/Include/arm_nnfunctions.h", "Source/C/muriscv_nn_convolve_s8.c")
    touch(root, "Source/S/muriscv_nn_svdf_get_buffer_sizes.c", "Source/S/muriscv_nn_svdf_get_buffer_sizes_s8.c")
    touch(root, "Source/A/muriscv_nn_add_f32.c")
    spec = MuriscvNn(root, "c" * 40).library()
    # the duplicate of the _s8 buffer-size file and float kernels stay out
    assert spec.sources == ("Source/C/muriscv_nn_convolve_s8.c", "Source/S/muriscv_nn_svdf_get_buffer_sizes_s8.c")
    assert str(root / "Include" / "CMSIS" / "NN") in spec.include_dirs  # "Include/arm_nnfunctions.h"
    assert spec.definitions == DEFINITIONS and str(VECTOR_HEADER) in spec.compile_flags
    assert "__riscv_vector" in VECTOR_HEADER.read_text()  # vector paths only where clang compiles V
    with pytest.raises(StageError, match="not a muRISCV-NN checkout"):
        _ = MuriscvNn(tmp_path / "nothing", "c").sources


def test_muriscv_nn_runs_are_keyed_by_its_commit_and_say_how_to_get_it():
    components = {name: Installed(name, f"{name}-commit", f"/deps/{name}") for name in ("tflm", "muriscv_nn")}
    versions = TflmiBackend({"tflmi.kernels": "muriscv_nn"}, components).versions(components)
    assert versions["muriscv_nn"] == "muriscv_nn-commit" and "cmsis_nn" not in versions
    with pytest.raises(StageError, match=r"needs component\(s\) muriscv_nn: run `mlonmcu setup muriscv_nn`"):
        TflmiBackend({"tflmi.kernels": "muriscv_nn"}, {}).muriscv_nn()


def test_the_tflm_library_is_keyed_by_the_kernel_library_its_glue_compiles_against(tmp_path):
    """The same swapped sources compiled against CMSIS-NN's or muRISCV-NN's headers are two libraries."""
    from mlonmcu.backends.tflm.backend import tflm_identity
    from mlonmcu.backends.tflm.muriscv_nn import MuriscvNn

    library, core, riscv = tmp_path / "cmsis_nn", tmp_path / "cmsis", tmp_path / "muriscv_nn"
    touch(library, "Include/arm_nnfunctions.h", "Source/A/arm_convolve_s8.c")
    (core / "CMSIS" / "Core" / "Include").mkdir(parents=True)
    touch(riscv, "Include/CMSIS/NN/Include/arm_nnfunctions.h", "Source/C/muriscv_nn_convolve_s8.c")
    cmsis = CmsisNn(library, core, ("a" * 40, "b" * 40)).library()
    muriscv = MuriscvNn(riscv, "c" * 40).library()
    sources = [f"{KERNELS}/cmsis_nn/conv.cc"]
    identities = {tflm_identity("tree", sources, k) for k in ([cmsis], [muriscv], [])}
    assert len(identities) == 3
