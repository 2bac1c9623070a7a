import numpy as np
import pytest

from mlonmcu.contracts import TensorInfo
from mlonmcu.data import bundled_models_dir
from mlonmcu.errors import ModelError
from mlonmcu.models.frontend import TfliteFrontend
from mlonmcu.models.model import expand_models, find_model, list_models
from mlonmcu.models.reference import reference_outputs
from mlonmcu.models.samples import dequantize, prepare_inputs, quantize

DIRS = [bundled_models_dir()]


def test_bundled_models_are_found_by_name_and_group():
    names = {m.name for m in list_models(DIRS)}
    assert {"kws_dscnn", "cnn_small", "kws_dscnn_fp32", "cnn_small_fp32"} <= names
    assert expand_models(["bundled", "kws_dscnn"], DIRS) == ["kws_dscnn", "cnn_small"]
    model = find_model("kws_dscnn", DIRS)
    assert model.path.name == "kws_dscnn.tflite" and model.input_dir is not None


def test_unknown_model_suggests_a_name():
    with pytest.raises(ModelError, match="did you mean 'kws_dscnn'"):
        find_model("kws_dsnn", DIRS)


def test_describe_reports_io_ops_and_macs():
    info = TfliteFrontend().describe(find_model("kws_dscnn", DIRS).path)
    assert info.inputs[0].shape == (1, 49, 10, 1) and info.inputs[0].dtype == "int8"
    assert info.inputs[0].quantized
    assert info.outputs[0].shape == (1, 8)
    assert "DEPTHWISE_CONV_2D" in info.operators
    assert info.macs == 488256  # matches resources/models/README.md


@pytest.mark.parametrize("content", [b"", b"garbage that is not a flatbuffer", b"\x00" * 64])
def test_corrupt_model_is_a_clear_error(tmp_path, content):
    path = tmp_path / "broken.tflite"
    path.write_bytes(content)
    with pytest.raises(ModelError, match=r"broken\.tflite"):
        TfliteFrontend().describe(path)


def test_truncated_model_is_a_clear_error(tmp_path):
    data = find_model("cnn_small", DIRS).path.read_bytes()
    path = tmp_path / "cut.tflite"
    path.write_bytes(data[: len(data) // 3])
    with pytest.raises(ModelError, match=r"cut\.tflite"):
        TfliteFrontend().describe(path)


def test_samples_from_model_directory_are_quantized():
    model = find_model("kws_dscnn", DIRS)
    info = TfliteFrontend().describe(model.path)
    samples, origin = prepare_inputs(model, info.inputs, 3)
    assert len(samples) == 3 and "from" in origin
    raw = np.fromfile(model.input_dir / "1.bin", dtype=np.float32).reshape(info.inputs[0].shape)
    assert samples[1][0].dtype == np.int8
    assert np.array_equal(samples[1][0], quantize(raw, info.inputs[0]))


def test_uint8_samples_use_the_input_quantization(tmp_path):
    tensor = TensorInfo("x", (1, 4), "int8", (1.0,), (-128,))
    (tmp_path / "input").mkdir()
    (tmp_path / "input" / "0.bin").write_bytes(bytes([0, 1, 128, 255]))
    (tmp_path / "m.tflite").write_bytes(b"")
    from mlonmcu.models.model import Model

    samples, _ = prepare_inputs(Model("m", tmp_path / "m.tflite", tmp_path), [tensor], 1)
    assert samples[0][0].tolist() == [[-128, -127, 0, 127]]


def test_random_samples_are_seeded():
    tensor = TensorInfo("x", (2, 3), "float32")
    model = find_model("kws_dscnn_fp32", DIRS)
    from mlonmcu.models.model import Model

    no_dir = Model(model.name, model.path, None)
    a, origin = prepare_inputs(no_dir, [tensor], 2)
    b, _ = prepare_inputs(no_dir, [tensor], 2)
    assert "random" in origin and np.array_equal(a[1][0], b[1][0])


def test_reference_outputs_match_the_bundled_reference_files():
    model = find_model("kws_dscnn", DIRS)
    info = TfliteFrontend().describe(model.path)
    samples, _ = prepare_inputs(model, info.inputs, 10)
    outputs, oracle = reference_outputs(model.path, samples)
    assert oracle == "litert"
    for n, out in enumerate(outputs):
        stored = np.fromfile(model.directory / "output_tflite" / f"{n}.bin", dtype=np.float32)
        assert np.allclose(dequantize(out[0], info.outputs[0]).reshape(-1), stored, atol=1e-6)


def _clear_field(buf: bytearray, table: int, field: int) -> None:
    """Make an optional flatbuffer field absent: zero its slot in the table's vtable."""
    import struct

    vtable = table - struct.unpack_from("<i", buf, table)[0]
    size = struct.unpack_from("<H", buf, vtable)[0]
    slot = vtable + 4 + 2 * field
    if slot < vtable + size:
        struct.pack_into("<H", buf, slot, 0)


def test_a_model_without_description_or_tensor_names_is_not_corrupt(tmp_path):
    """TFLM's test models leave optional strings out; that is valid, not a corrupt model."""
    import tflite

    buf = bytearray((DIRS[0] / "kws_dscnn" / "kws_dscnn.tflite").read_bytes())
    model = tflite.Model.GetRootAsModel(bytes(buf), 0)
    _clear_field(buf, model._tab.Pos, 3)  # Model.description
    subgraph = model.Subgraphs(0)
    for i in range(subgraph.TensorsLength()):
        _clear_field(buf, subgraph.Tensors(i)._tab.Pos, 3)  # Tensor.name
    path = tmp_path / "nameless.tflite"
    path.write_bytes(bytes(buf))
    assert tflite.Model.GetRootAsModel(bytes(buf), 0).Description() is None
    info = TfliteFrontend().describe(path)
    assert info.inputs[0].name.startswith("tensor") and info.inputs[0].shape == (1, 49, 10, 1)
    assert info.macs == TfliteFrontend().describe(DIRS[0] / "kws_dscnn" / "kws_dscnn.tflite").macs


def test_only_an_unparsable_flatbuffer_is_called_corrupt(tmp_path):
    data = (DIRS[0] / "kws_dscnn" / "kws_dscnn.tflite").read_bytes()
    path = tmp_path / "cut.tflite"
    path.write_bytes(data[: len(data) // 3])
    with pytest.raises(ModelError, match="corrupt TFLite model"):
        TfliteFrontend().describe(path)


def test_broken_quantization_is_named_before_any_backend_tries(tmp_path):
    """A dense layer whose weights got scale inf (catdog2 of the public mlonmcu-models): LiteRT
    and TFLM refuse it at Prepare; both backends say which tensors and what to do."""
    from tflite_builder import Op, build, const, q, write

    from mlonmcu.models.tflite_graph import read_graph, unrunnable_message

    weights = const(np.ones((4, 8), np.int8), float("inf"), 0)
    tensors = [q((1, 8), 0.05, 0), weights, q((1, 4), 0.1, 0)]
    model = write(tmp_path, "broken", build(tensors, [Op("FULLY_CONNECTED", [0, 1], [2])], [0], [2]))
    message = unrunnable_message(read_graph(model), "tvmaot")
    assert message.startswith("broken has broken quantization: tensor(s) 't1' (scale inf)")
    assert "re-convert the model" in message
    fine = write(tmp_path, "fine", build([q((1, 8), 0.05, 0), q((1, 8), 0.05, 0)], [Op("RELU", [0], [1])], [0], [1]))
    assert unrunnable_message(read_graph(fine), "tvmaot") == ""


def test_a_tensor_type_neither_backend_takes_is_named(tmp_path):
    """TFLM's audio preprocessors carry uint64 tensors (its Signal library's custom operators):
    the error names the type by the schema's name, on the LOAD side and in the graph reader."""
    import re

    from tflite_builder import Op, Tensor, build, write

    from mlonmcu.models.tflite_graph import read_graph

    tensors = [Tensor((4,), "uint64"), Tensor((4,), "uint64")]
    model = write(tmp_path, "wide", build(tensors, [Op("ABS", [0], [1])], [0], [1]))
    expected = re.escape("tensor 't0' has TFLite type UINT64 (12), which mlonmcu does not support")
    with pytest.raises(ModelError, match=expected):
        TfliteFrontend().describe(model)
    with pytest.raises(ModelError, match=expected):
        read_graph(model)
