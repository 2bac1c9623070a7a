#!/usr/bin/env python3
"""Regenerate mlonmcu's small bundled models under ``resources/models/``.

DEV-ONLY SCRIPT. It needs TensorFlow, which is *not* a dependency of mlonmcu: install it
into a throw-away virtual environment (never into the tool's environment) and run the
script with that interpreter from the repository root:

    python3 -m venv /tmp/tfvenv
    /tmp/tfvenv/bin/pip install tensorflow==2.19.1 pyyaml
    /tmp/tfvenv/bin/python scripts/make_resource_models.py            # -> resources/models/
    /tmp/tfvenv/bin/python scripts/make_resource_models.py --out DIR  # elsewhere

What it does, for each of two tiny networks (``kws_dscnn``, ``cnn_small``):

1. generates a synthetic but learnable classification task with numpy (fixed seed),
2. trains the Keras model for a few epochs (seconds, single-threaded, fixed seeds,
   deterministic ops),
3. converts the trained model twice with ``tf.lite.TFLiteConverter``: full-integer int8
   (per-channel weights, int8 input/output, representative dataset from the training set)
   as ``<name>`` and without quantization as the float32 twin ``<name>_fp32``,
4. writes the public "mlonmcu-models" layout for each: ``<name>.tflite``, ``definition.yml``,
   ``input/N.bin`` and ``output_tflite/N.bin`` (N = 0..9, held-out samples, the same ones for
   a model and its twin), plus ``modelgroups.yml`` and ``README.md``.

Sample-file convention (the same as the mlonmcu-models collection):

* ``input/N.bin``: float32 little-endian, the *unquantized* input, NHWC, batch 1. For the
  int8 models the int8 tensor is ``q = clip(round(x / scale) + zero_point, -128, 127)`` with
  the input quantization of ``definition.yml``. The stored values are snapped onto that int8
  grid (``x = (q - zero_point) * scale``), so any rounding convention gives the same ``q``.
* ``output_tflite/N.bin``: float32 little-endian. For the int8 models it is the int8 output
  dequantized, ``(q - zero_point) * scale`` computed in float32; for the fp32 twins the raw
  output. Outputs are computed with the TFLite interpreter's *reference* kernels
  (``OpResolverType.BUILTIN_REF``, the arithmetic TFLite Micro uses), not XNNPACK.

Re-running the script on the same machine reproduces byte-identical files (checked with
TensorFlow 2.19.1 on x86-64); a different TensorFlow version or CPU may change the trained
weights slightly.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
from pathlib import Path

# Must be set before TensorFlow is imported: CPU only, quiet, deterministic kernels.
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
os.environ.setdefault("TF_DETERMINISTIC_OPS", "1")

import keras  # Keras 3, installed with TensorFlow >= 2.16
import numpy as np
import tensorflow as tf
import yaml
from keras import layers

SEED = 20240611
NUM_SAMPLES = 10  # input/N.bin, output_tflite/N.bin for N in 0..NUM_SAMPLES-1
REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "resources" / "models"
SCRIPT_REL = "scripts/make_resource_models.py"

# ---------------------------------------------------------------------------------------
# Synthetic tasks
# ---------------------------------------------------------------------------------------

KWS_FRAMES, KWS_COEFFS = 49, 10
KWS_RANGE = (-4.0, 4.0)
KWS_BANDS = (1.0, 3.5, 6.0, 8.5)  # centre coefficient of the "keyword" energy
KWS_RATES = (2.5, 7.0)  # temporal modulation, cycles per 49-frame clip
KWS_CLASSES = [f"band{b}_{r}" for b in range(len(KWS_BANDS)) for r in ("slow", "fast")]


def make_kws_data(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """49x10 "MFCC" images: which of 4 coefficient bands x 2 modulation rates is present.

    Background: white noise plus a random per-coefficient offset and a slow random drift.
    "Keyword": a Gaussian bump over the coefficients around the class's band centre,
    modulated over time by a sinusoid of the class's rate (random phase, +-10 % rate
    jitter, random amplitude), inside a random 22..40-frame window.
    """
    t = np.arange(KWS_FRAMES, dtype=np.float64)[:, None]
    c = np.arange(KWS_COEFFS, dtype=np.float64)[None, :]
    y = rng.integers(0, len(KWS_CLASSES), size=n)
    x = np.empty((n, KWS_FRAMES, KWS_COEFFS, 1), dtype=np.float32)
    for i in range(n):
        band, rate = KWS_BANDS[y[i] // 2], KWS_RATES[y[i] % 2]
        rate *= rng.uniform(0.9, 1.1)
        length = rng.integers(22, 41)
        onset = rng.integers(0, KWS_FRAMES - length + 1)
        window = ((t >= onset) & (t < onset + length)).astype(np.float64)
        phase = rng.uniform(0.0, 2.0 * np.pi)
        amp = rng.uniform(0.7, 2.0)
        bump = np.exp(-((c - band) ** 2) / (2.0 * 0.9**2))
        signal = amp * bump * np.sin(2.0 * np.pi * rate * (t - onset) / KWS_FRAMES + phase)
        background = (
            rng.normal(0.0, 0.7, size=(KWS_FRAMES, KWS_COEFFS))
            + rng.normal(0.0, 0.4, size=(1, KWS_COEFFS))
            + rng.normal(0.0, 0.3) * np.sin(2.0 * np.pi * t / (2.0 * KWS_FRAMES) + rng.uniform(0, 6.3))
        )
        x[i, :, :, 0] = np.clip(signal * window + background, *KWS_RANGE)
    return x, y


IMG_SIZE = 32
IMG_RANGE = (0.0, 1.0)
SHAPE_CLASSES = ["disk", "square", "triangle", "hbar", "vbar", "cross"]


def _shape_mask(kind: str, xx: np.ndarray, yy: np.ndarray, cx: float, cy: float, s: float) -> np.ndarray:
    dx, dy = xx - cx, yy - cy
    if kind == "disk":
        return dx**2 + dy**2 <= s**2
    if kind == "square":
        return (np.abs(dx) <= 0.85 * s) & (np.abs(dy) <= 0.85 * s)
    if kind == "triangle":  # apex up, base down
        return (dy >= -s) & (dy <= s) & (np.abs(dx) <= 0.5 * (dy + s))
    thin = max(1.2, 0.3 * s)
    if kind == "hbar":
        return (np.abs(dx) <= s) & (np.abs(dy) <= thin)
    if kind == "vbar":
        return (np.abs(dy) <= s) & (np.abs(dx) <= thin)
    if kind == "cross":
        return ((np.abs(dx) <= s) & (np.abs(dy) <= thin)) | ((np.abs(dy) <= s) & (np.abs(dx) <= thin))
    raise ValueError(kind)


def make_shape_data(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """32x32 RGB images in [0, 1]: which of 6 shapes is drawn.

    Random background and foreground colours (with a minimum contrast), a random linear
    brightness gradient, random size (half-size 5..11 px) and position, Gaussian noise.
    """
    yy, xx = np.mgrid[0:IMG_SIZE, 0:IMG_SIZE].astype(np.float64) + 0.5
    y = rng.integers(0, len(SHAPE_CLASSES), size=n)
    x = np.empty((n, IMG_SIZE, IMG_SIZE, 3), dtype=np.float32)
    for i in range(n):
        while True:
            bg, fg = rng.uniform(0.0, 1.0, size=3), rng.uniform(0.0, 1.0, size=3)
            if np.abs(fg - bg).mean() >= 0.3:
                break
        s = rng.uniform(5.0, 11.0)
        cx, cy = rng.uniform(s + 1.0, IMG_SIZE - s - 1.0, size=2)
        mask = _shape_mask(SHAPE_CLASSES[y[i]], xx, yy, cx, cy, s)[..., None]
        gx, gy = rng.normal(0.0, 0.004, size=2)
        gradient = (gx * (xx - IMG_SIZE / 2) + gy * (yy - IMG_SIZE / 2))[..., None]
        img = np.where(mask, fg, bg) + gradient + rng.normal(0.0, 0.04, size=(IMG_SIZE, IMG_SIZE, 3))
        x[i] = np.clip(img, *IMG_RANGE)
    return x, y


# ---------------------------------------------------------------------------------------
# Networks
# ---------------------------------------------------------------------------------------


def build_kws_dscnn(batch_size: int | None = None) -> keras.Model:
    """DS-CNN (Zhang et al. 2017, as in MLPerf Tiny KWS), reduced to 32 channels, 2 DS blocks."""
    inp = keras.Input((KWS_FRAMES, KWS_COEFFS, 1), batch_size=batch_size, name="input")
    x = layers.Conv2D(32, (10, 4), strides=(2, 2), padding="same", activation="relu", name="conv1")(inp)
    for i in (1, 2):
        x = layers.DepthwiseConv2D((3, 3), padding="same", activation="relu", name=f"dw{i}")(x)
        x = layers.Conv2D(32, (1, 1), activation="relu", name=f"pw{i}")(x)
    x = layers.AveragePooling2D(pool_size=(25, 5), name="avgpool")(x)  # [1, 1, 1, 32]
    # Dense on the 4-D tensor (FULLY_CONNECTED with keep_num_dims) followed by an explicit
    # RESHAPE: a Flatten/Reshape *before* the Dense would be folded into FULLY_CONNECTED by
    # the converter, and the model is meant to contain a RESHAPE like the MLPerf Tiny DS-CNN.
    x = layers.Dense(len(KWS_CLASSES), name="fc")(x)  # [1, 1, 1, 8]
    x = layers.Reshape((len(KWS_CLASSES),), name="reshape")(x)
    out = layers.Softmax(name="softmax")(x)
    return keras.Model(inp, out, name="kws_dscnn")


def build_cnn_small(batch_size: int | None = None) -> keras.Model:
    """Small image CNN: conv, max-pool, residual block, depthwise, two-branch concat, mean, FC."""
    inp = keras.Input((IMG_SIZE, IMG_SIZE, 3), batch_size=batch_size, name="input")
    x = layers.Conv2D(12, (3, 3), padding="valid", activation="relu", name="conv1")(inp)  # 30x30x12
    x = layers.MaxPooling2D((2, 2), name="maxpool")(x)  # 15x15x12
    r = layers.Conv2D(12, (3, 3), padding="same", name="res_conv")(x)
    x = layers.Add(name="res_add")([x, r])
    x = layers.ReLU(name="res_relu")(x)
    x = layers.DepthwiseConv2D((3, 3), strides=2, padding="same", activation="relu", name="dw")(x)  # 8x8x12
    a = layers.Conv2D(16, (1, 1), activation="relu", name="branch_1x1")(x)
    b = layers.Conv2D(8, (3, 3), padding="same", activation="relu", name="branch_3x3")(x)
    x = layers.Concatenate(name="concat")([a, b])  # 8x8x24
    x = layers.GlobalAveragePooling2D(name="gap")(x)  # MEAN in TFLite
    x = layers.Dense(len(SHAPE_CLASSES), name="fc")(x)
    out = layers.Softmax(name="softmax")(x)
    return keras.Model(inp, out, name="cnn_small")


MODELS = {
    "kws_dscnn": {
        "build": build_kws_dscnn,
        "data": make_kws_data,
        "classes": KWS_CLASSES,
        "range": KWS_RANGE,
        "n_train": 6000,
        "n_test": 1500,
        "epochs": 10,
        "lr": 3e-3,
        "task": (
            "a synthetic keyword-spotting-like task: 49x10 'MFCC' images (49 frames x 10"
            " coefficients, values in [-4, 4]) of noise with a random drift, in which a"
            " 'keyword' is a Gaussian bump on one of 4 coefficient bands, modulated over time"
            " at one of 2 rates (slow/fast) inside a random window; 8 classes = band x rate"
        ),
        "input_description": "A 49x10 synthetic 'MFCC' image (frames x coefficients), float range [-4, 4].",
        "arch": (
            "DS-CNN: CONV_2D 10x4/2 (32 ch) -> 2 x [DEPTHWISE_CONV_2D 3x3 + CONV_2D 1x1 (32 ch),"
            " ReLU] -> AVERAGE_POOL_2D 25x5 -> FULLY_CONNECTED (8) -> RESHAPE -> SOFTMAX"
        ),
    },
    "cnn_small": {
        "build": build_cnn_small,
        "data": make_shape_data,
        "classes": SHAPE_CLASSES,
        "range": IMG_RANGE,
        "n_train": 6000,
        "n_test": 1500,
        "epochs": 15,
        "lr": 3e-3,
        "task": (
            "a synthetic shape-recognition task: 32x32 RGB images (values in [0, 1]) of one"
            " shape (disk, square, triangle, horizontal bar, vertical bar, cross) of random"
            " size, position and colour on a random-colour background with a brightness"
            " gradient and noise; 6 classes"
        ),
        "input_description": "A 32x32 RGB image (NHWC), float range [0, 1].",
        "arch": (
            "CONV_2D 3x3 valid (12 ch) -> MAX_POOL_2D 2x2 -> residual [CONV_2D 3x3 same (12 ch)"
            " + ADD, ReLU] -> DEPTHWISE_CONV_2D 3x3/2 -> CONCATENATION[CONV_2D 1x1 (16 ch),"
            " CONV_2D 3x3 same (8 ch)] -> MEAN (global average pool) -> FULLY_CONNECTED (6)"
            " -> SOFTMAX"
        ),
    },
}


# ---------------------------------------------------------------------------------------
# Conversion and TFLite helpers
# ---------------------------------------------------------------------------------------


def convert(model: keras.Model, x_calib: np.ndarray | None) -> bytes:
    """float32 TFLite model if x_calib is None, else full-integer int8 (per-channel weights)."""
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    if x_calib is not None:

        def representative_dataset():
            for i in range(len(x_calib)):
                yield [x_calib[i : i + 1]]

        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = representative_dataset
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = tf.int8
        converter.inference_output_type = tf.int8
    return converter.convert()


def ref_interpreter(buf: bytes) -> tf.lite.Interpreter:
    interp = tf.lite.Interpreter(
        model_content=buf,
        experimental_op_resolver_type=tf.lite.experimental.OpResolverType.BUILTIN_REF,
        num_threads=1,
    )
    interp.allocate_tensors()
    return interp


def quantize(x: np.ndarray, scale: float, zp: int) -> np.ndarray:
    q = np.round(x.astype(np.float32) / np.float32(scale)) + zp
    return np.clip(q, -128, 127).astype(np.int8)


def dequantize(q: np.ndarray, scale: float, zp: int) -> np.ndarray:
    return (q.astype(np.int32) - zp).astype(np.float32) * np.float32(scale)


def run_float_io(interp: tf.lite.Interpreter, x: np.ndarray) -> np.ndarray:
    """Run one sample given as float32; (de)quantize at the boundary if the model is int8."""
    inp, out = interp.get_input_details()[0], interp.get_output_details()[0]
    if inp["dtype"] == np.int8:
        scale, zp = inp["quantization"]
        interp.set_tensor(inp["index"], quantize(x, scale, zp))
    else:
        interp.set_tensor(inp["index"], x.astype(np.float32))
    interp.invoke()
    y = interp.get_tensor(out["index"])
    if out["dtype"] == np.int8:
        scale, zp = out["quantization"]
        return dequantize(y, scale, zp)
    return y.astype(np.float32)


def model_stats(interp: tf.lite.Interpreter) -> tuple[list[str], int, int]:
    """(builtin op names in order of first use, MACs, number of weight parameters)."""
    tensors = {t["index"]: t for t in interp.get_tensor_details()}
    ops: list[str] = []
    macs = 0
    params = 0
    for op in interp._get_ops_details():  # private, but the only op listing in the Python API
        name = op["op_name"]
        if name not in ops:
            ops.append(name)
        ins = [i for i in op["inputs"] if i >= 0]
        out_shape = tensors[op["outputs"][0]]["shape"]
        if name in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"):
            w = tensors[ins[1]]["shape"]
            params += int(np.prod(w)) + (int(np.prod(tensors[ins[2]]["shape"])) if len(ins) > 2 else 0)
        if name == "CONV_2D":  # weights [Cout, Kh, Kw, Cin]
            macs += int(np.prod(out_shape)) * int(w[1] * w[2] * w[3])
        elif name == "DEPTHWISE_CONV_2D":  # weights [1, Kh, Kw, Cout]
            macs += int(np.prod(out_shape)) * int(w[1] * w[2])
        elif name == "FULLY_CONNECTED":  # weights [Cout, Cin]
            macs += int(np.prod(out_shape)) * int(w[1])
    return ops, macs, params


class _Dumper(yaml.SafeDumper):
    """Safe YAML dumper writing lists of numbers (shapes, ranges) in flow style."""


def _represent_list(dumper: yaml.SafeDumper, data: list) -> yaml.Node:
    flow = bool(data) and all(isinstance(v, (int, float)) for v in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_Dumper.add_representer(list, _represent_list)


def sha1(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()


def qrange(scale: float, zp: int) -> list[float]:
    return [float(np.float32((-128 - zp) * scale)), float(np.float32((127 - zp) * scale))]


# ---------------------------------------------------------------------------------------
# Writing the mlonmcu-models layout
# ---------------------------------------------------------------------------------------


def write_model_dir(
    out_root: Path,
    name: str,
    buf: bytes,
    spec: dict,
    samples_x: np.ndarray,
    samples_y: np.ndarray,
    accuracy: float,
    n_test: int,
    twin_of: str | None,
) -> dict:
    mdir = out_root / name
    if mdir.exists():
        shutil.rmtree(mdir)
    (mdir / "input").mkdir(parents=True)
    (mdir / "output_tflite").mkdir()
    tfl = mdir / f"{name}.tflite"
    tfl.write_bytes(buf)

    interp = ref_interpreter(buf)
    ops, macs, params = model_stats(interp)
    inp, out = interp.get_input_details()[0], interp.get_output_details()[0]
    for n, x in enumerate(samples_x):
        x = x[None].astype("<f4")
        y = run_float_io(interp, x).astype("<f4")
        (mdir / "input" / f"{n}.bin").write_bytes(x.tobytes())
        (mdir / "output_tflite" / f"{n}.bin").write_bytes(y.tobytes())

    classes = spec["classes"]
    labels = ", ".join(f"{i}={c}" for i, c in enumerate(classes))
    sample_labels = ", ".join(classes[int(v)] for v in samples_y)
    if twin_of is None:
        kind = "Full-integer int8 quantized (per-channel weights, int8 input and output) version"
    else:
        kind = f"float32 twin of {twin_of} (the same trained Keras model converted without quantization);"
    description = (
        f"{kind} of mlonmcu's small bundled '{name.removesuffix('_fp32')}' model, trained for"
        f" a few epochs on {spec['task']}. Architecture: {spec['arch']}. {macs} MACs,"
        f" {params} weight parameters. Top-1 accuracy on {n_test} held-out samples"
        f" (LiteRT reference kernels): {accuracy:.4f}. input/N.bin: 10 held-out samples"
        f" ({sample_labels}), float32"
        + (", before quantization (snapped onto the input's int8 grid)" if twin_of is None else "")
        + "; output_tflite/N.bin: float32"
        + (" = the int8 output dequantized" if twin_of is None else " raw output")
        + ", computed with the TFLite interpreter's reference kernels"
        " (OpResolverType.BUILTIN_REF). Generated by " + SCRIPT_REL + "."
    )

    in_node = {
        "description": spec["input_description"],
        "example_input": {"path": "./input/"},
        "name": inp["name"],
        "shape": [int(d) for d in inp["shape"]],
    }
    out_node = {
        "description": f"The probability of each of the {len(classes)} classes ({labels}).",
        "name": out["name"],
        "shape": [int(d) for d in out["shape"]],
        "test_output_path": "./output_tflite/",
    }
    if inp["dtype"] == np.int8:
        (iscale, izp), (oscale, ozp) = inp["quantization"], out["quantization"]
        in_node.update(
            dtype="int8",
            range=[-128, 127],
            quantize={
                "scale": float(iscale),
                "zero_shift": int(izp),
                "dtype": "float32",
                "range": qrange(iscale, izp),
            },
        )
        out_node.update(
            dtype="int8",
            range=[-128, 127],
            dequantize={
                "scale": float(oscale),
                "zero_shift": int(ozp),
                "dtype": "float32",
                "range": qrange(oscale, ozp),
            },
        )
    else:
        in_node.update(dtype="float32", range=[float(v) for v in spec["range"]])
        out_node.update(dtype="float32", range=[0.0, 1.0])

    definition = {
        "benchmark": {f"synthetic held-out set ({n_test} samples)": {"top-1-accuracy": round(float(accuracy), 4)}},
        "description": description,
        "license": ["Apache-2.0"],
        "network": {
            "file_size_bytes": tfl.stat().st_size,
            "filename": tfl.name,
            "framework": "TensorFlow Lite",
            "hash": {"algorithm": "sha1", "value": sha1(tfl)},
            "provenance": SCRIPT_REL + f" (TensorFlow {tf.__version__}, seed {SEED})",
        },
        "network_parameters": {"input_nodes": [in_node], "output_nodes": [out_node]},
        "operators": {"TensorFlow Lite": ops},
    }
    with open(mdir / "definition.yml", "w") as f:
        yaml.dump(definition, f, Dumper=_Dumper, sort_keys=False, width=100)

    return {
        "name": name,
        "ops": ops,
        "macs": macs,
        "params": params,
        "size": tfl.stat().st_size,
        "accuracy": accuracy,
        "input": (
            inp["name"],
            [int(d) for d in inp["shape"]],
            str(np.dtype(inp["dtype"])),
            inp["quantization"],
        ),
        "output": (
            out["name"],
            [int(d) for d in out["shape"]],
            str(np.dtype(out["dtype"])),
            out["quantization"],
        ),
    }


def evaluate(buf: bytes, x: np.ndarray, y: np.ndarray) -> float:
    interp = ref_interpreter(buf)
    pred = np.array([np.argmax(run_float_io(interp, x[i : i + 1])) for i in range(len(x))])
    return float(np.mean(pred == y))


def pick_samples(y: np.ndarray, n_classes: int) -> np.ndarray:
    """Indices of NUM_SAMPLES held-out samples whose labels cycle through the classes."""
    picked: list[int] = []
    for n in range(NUM_SAMPLES):
        want = n % n_classes
        picked.append(next(i for i in range(len(y)) if y[i] == want and i not in picked))
    return np.array(picked)


def snap_to_grid(x: np.ndarray, scale: float, zp: int) -> np.ndarray:
    """Replace x by the float32 value of its int8 quantization (exactly quantizable)."""
    return dequantize(quantize(x, scale, zp), scale, zp)


def make_model(name: str, spec: dict, out_root: Path, seed: int) -> list[dict]:
    print(f"=== {name} ===", flush=True)
    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)
    x_train, y_train = spec["data"](spec["n_train"], rng)
    x_test, y_test = spec["data"](spec["n_test"], rng)

    model = spec["build"]()
    model.compile(
        optimizer=keras.optimizers.Adam(spec["lr"]),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    hist = model.fit(x_train, y_train, batch_size=64, epochs=spec["epochs"], shuffle=True, verbose=2)
    train_acc = float(hist.history["accuracy"][-1])
    keras_test_acc = float(model.evaluate(x_test, y_test, verbose=0)[1])
    print(f"{name}: Keras train accuracy {train_acc:.4f}, held-out {keras_test_acc:.4f}", flush=True)

    # Static batch size 1 for the deployed model: same layers, same weights.
    deploy = spec["build"](batch_size=1)
    deploy.set_weights(model.get_weights())

    buf_int8 = convert(deploy, x_train[:300])
    buf_fp32 = convert(deploy, None)

    in_q = ref_interpreter(buf_int8).get_input_details()[0]["quantization"]
    idx = pick_samples(y_test, len(spec["classes"]))
    samples = snap_to_grid(x_test[idx], *in_q)

    acc_int8 = evaluate(buf_int8, x_test, y_test)
    acc_fp32 = evaluate(buf_fp32, x_test, y_test)
    print(f"{name}: TFLite held-out accuracy int8 {acc_int8:.4f}, fp32 {acc_fp32:.4f}", flush=True)

    n_test = spec["n_test"]
    results = [
        write_model_dir(out_root, name, buf_int8, spec, samples, y_test[idx], acc_int8, n_test, None),
        write_model_dir(out_root, f"{name}_fp32", buf_fp32, spec, samples, y_test[idx], acc_fp32, n_test, name),
    ]
    for r in results:
        r["train_acc"] = train_acc
    return results


def write_readme(out_root: Path, results: list[dict]) -> None:
    rows = []
    for r in results:
        _, ishape, idtype, _ = r["input"]
        _, oshape, odtype, _ = r["output"]
        rows.append(
            f"| {r['name']} | {r['macs']:,} | {r['params']:,} | {r['size']:,} | {idtype} {ishape} |"
            f" {odtype} {oshape} | {r['accuracy']:.3f} |"
        )
    ops = {r["name"]: ", ".join(r["ops"]) for r in results}
    text = f"""# Bundled models

Two tiny networks shipped with mlonmcu so that it can be tried and tested without
downloading anything, each as a full-integer int8 model and its float32 twin. They are
trained for a few seconds on synthetic but learnable tasks, so their weights are not random
and their outputs are meaningful, but they are demonstration/test workloads, not useful
classifiers. The layout is that of the public `mlonmcu-models` collection (and of the
shared reference models).

| model | task | classes |
|---|---|---|
| kws_dscnn | keyword-spotting-like: 49x10 "MFCC" image, which coefficient band (4) x \
modulation rate (2) carries the "keyword" | {", ".join(KWS_CLASSES)} |
| cnn_small | 32x32 RGB image, which shape is drawn (random size, position, colours, \
gradient, noise) | {", ".join(SHAPE_CLASSES)} |

| model | MACs | weight params | .tflite bytes | input | output | held-out top-1 |
|---|---|---|---|---|---|---|
{chr(10).join(rows)}

MACs count CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED multiply-accumulates; held-out
top-1 is measured with the TFLite reference kernels on 1500 synthetic samples not used for
training.

Operators:
- kws_dscnn(_fp32): {ops["kws_dscnn"]}
- cnn_small(_fp32): {ops["cnn_small"]}

## Files

`<name>/<name>.tflite`, `<name>/definition.yml` (description, license, file size and sha1,
input/output tensor names, shapes, dtypes, quantization, operators), `<name>/input/N.bin` and
`<name>/output_tflite/N.bin` for N = 0..9, and `modelgroups.yml` (`bundled`,
`bundled_fp32`).

Sample files (same convention as `mlonmcu-models`), all little-endian float32, NHWC, batch 1:
- `input/N.bin`: the input *before* quantization. For the int8 models the tensor to feed is
  `q = clip(round(x / scale) + zero_point, -128, 127)` (`quantize` in definition.yml); the
  values lie exactly on that int8 grid, so the rounding mode does not matter. A model and its
  twin use the same ten held-out samples (labels cycling through the classes).
- `output_tflite/N.bin`: for the int8 models the int8 output dequantized,
  `(q - zero_point) * scale` (`dequantize` in definition.yml); for the fp32 twins the raw
  output. They were computed with the TFLite interpreter's **reference kernels**
  (`OpResolverType.BUILTIN_REF`, the arithmetic TFLite Micro uses), so re-quantized they are
  an exact int8 reference.

## Regenerating

Dev-only; TensorFlow is not a dependency of mlonmcu. From the repository root:

```
python3 -m venv /tmp/tfvenv
/tmp/tfvenv/bin/pip install tensorflow=={tf.__version__} pyyaml
/tmp/tfvenv/bin/python {SCRIPT_REL}
```

Seeds are fixed and training is single-threaded with deterministic ops: on the same machine
and TensorFlow version the files are reproduced byte for byte.

License: Apache-2.0.
"""
    (out_root / "README.md").write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output directory (default: {DEFAULT_OUT})")
    args = parser.parse_args()

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.experimental.enable_op_determinism()

    out_root: Path = args.out
    out_root.mkdir(parents=True, exist_ok=True)
    results: list[dict] = []
    for i, (name, spec) in enumerate(MODELS.items()):
        results += make_model(name, spec, out_root, SEED + i)

    (out_root / "modelgroups.yml").write_text(
        "bundled: [kws_dscnn, cnn_small]\nbundled_fp32: [kws_dscnn_fp32, cnn_small_fp32]\n"
    )
    write_readme(out_root, results)

    for r in results:
        print(
            f"{r['name']}: ops={r['ops']} MACs={r['macs']} params={r['params']} size={r['size']} B"
            f" train_acc={r['train_acc']:.4f} heldout_acc={r['accuracy']:.4f}"
            f"\n  input={r['input']}\n  output={r['output']}"
        )


if __name__ == "__main__":
    main()
