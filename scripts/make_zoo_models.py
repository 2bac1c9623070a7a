#!/usr/bin/env python3
"""Convert common Keras architectures to int8 TFLite models for `benchmarks/coverage.py`.

DEV-ONLY SCRIPT. It needs TensorFlow, which is *not* a dependency of mlonmcu: install it into a
throw-away virtual environment and run the script with that interpreter:

    python3 -m venv /tmp/tfvenv
    /tmp/tfvenv/bin/pip install tensorflow-cpu==2.19.1
    /tmp/tfvenv/bin/python scripts/make_zoo_models.py --out /tmp/zoo-keras
    python benchmarks/coverage.py /tmp/zoo-keras

The models are untrained (seeded random weights): coverage and exactness do not need trained
weights, only the operators, shapes and quantization parameters real converters produce. Each is
converted with full-integer quantization (a representative dataset of seeded random inputs):
int8 interface and batch 1 by default, plus a float-interface variant (the converter's default
interface), 16x8 variants (int16 activations) and dynamic-batch variants. The files are written as DIR/NAME/NAME.tflite
and stay out of the repository.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import numpy as np
import tensorflow as tf

keras = tf.keras
layers = keras.layers


# Untrained, the applications' logits are nearly constant: a SOFTMAX on them gets an input scale
# so small that TFLite (and TFLite Micro) abort in its Prepare. Their heads end in the logits.
HEAD = {"weights": None, "classes": 10, "classifier_activation": None}


def mobilenet_v1() -> keras.Model:
    return keras.applications.MobileNet(input_shape=(96, 96, 3), alpha=0.25, **HEAD)


def mobilenet_v2() -> keras.Model:
    return keras.applications.MobileNetV2(input_shape=(96, 96, 3), alpha=0.35, **HEAD)


def mobilenet_v3_small() -> keras.Model:
    """Hard-swish activations and squeeze-excite blocks (hard-sigmoid × features)."""
    return keras.applications.MobileNetV3Small(input_shape=(96, 96, 3), alpha=0.75, include_preprocessing=False, **HEAD)


def efficientnet_like() -> keras.Model:
    """EfficientNet-lite-style blocks with swish (LOGISTIC × MUL) and squeeze-excite."""
    inputs = keras.Input((48, 48, 8))
    x = layers.Conv2D(16, 3, strides=2, padding="same")(inputs)
    x = layers.Activation("swish")(x)
    for filters in (16, 24):
        y = layers.DepthwiseConv2D(3, padding="same")(x)
        y = layers.Activation("swish")(y)
        se = layers.GlobalAveragePooling2D(keepdims=True)(y)
        se = layers.Conv2D(4, 1, activation="swish")(se)
        se = layers.Conv2D(y.shape[-1], 1, activation="sigmoid")(se)
        y = layers.Multiply()([y, se])
        y = layers.Conv2D(filters, 1)(y)
        x = layers.Add()([x, y]) if x.shape[-1] == filters else y
    x = layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, layers.Dense(10, activation="softmax")(x))


def resnet_skips() -> keras.Model:
    inputs = keras.Input((32, 32, 3))
    x = layers.Conv2D(16, 3, padding="same", activation="relu")(inputs)
    for filters, stride in ((16, 1), (32, 2)):
        y = layers.Conv2D(filters, 3, strides=stride, padding="same", activation="relu")(x)
        y = layers.Conv2D(filters, 3, padding="same")(y)
        shortcut = x if stride == 1 else layers.Conv2D(filters, 1, strides=stride)(x)
        x = layers.ReLU()(layers.Add()([y, shortcut]))
    x = layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, layers.Dense(10)(x))


def audio_1d_cnn() -> keras.Model:
    inputs = keras.Input((128, 10))
    x = layers.Conv1D(16, 5, strides=2, activation="relu")(inputs)
    x = layers.MaxPooling1D(2)(x)
    x = layers.Conv1D(32, 3, activation="relu", dilation_rate=2)(x)
    x = layers.GlobalAveragePooling1D()(x)
    return keras.Model(inputs, layers.Dense(6, activation="softmax")(x))


def attention_block() -> keras.Model:
    inputs = keras.Input((16, 32))
    x = layers.MultiHeadAttention(num_heads=2, key_dim=8)(inputs, inputs)
    x = layers.LayerNormalization()(layers.Add()([inputs, x]))
    x = layers.Dense(32, activation="relu")(x)
    x = layers.Flatten()(x)
    return keras.Model(inputs, layers.Dense(4)(x))


def upsampling() -> keras.Model:
    """Nearest and bilinear upsampling (RESIZE_*; Keras 3's UpSampling2D converts to TILE,
    which TFLite Micro lacks) of a strided convolution, concatenated with the input."""
    inputs = keras.Input((16, 16, 4))
    x = layers.Conv2D(8, 3, strides=2, padding="same", activation="relu")(inputs)
    nearest = layers.Resizing(16, 16, interpolation="nearest")(x)
    bilinear = layers.Resizing(16, 16, interpolation="bilinear")(x)
    x = layers.Concatenate()([nearest, bilinear, inputs])
    x = layers.Conv2D(4, 3, padding="same")(x)
    return keras.Model(inputs, x)


def prelu_pad_net() -> keras.Model:
    inputs = keras.Input((20, 20, 3))
    x = layers.ZeroPadding2D(((1, 2), (2, 1)))(inputs)
    x = layers.Conv2D(8, 3)(x)
    x = layers.PReLU(shared_axes=[1, 2])(x)
    x = layers.LeakyReLU(0.1)(layers.Conv2D(8, 3, strides=2)(x))
    x = layers.MaxPooling2D(2)(x)
    x = layers.Reshape((-1,))(x)
    return keras.Model(inputs, layers.Dense(5)(x))


MODELS: dict[str, Callable[[], keras.Model]] = {
    "keras_mobilenet_v1": mobilenet_v1,
    "keras_mobilenet_v2": mobilenet_v2,
    "keras_mobilenet_v3_small": mobilenet_v3_small,
    "keras_efficientnet_like": efficientnet_like,
    "keras_resnet_skips": resnet_skips,
    "keras_audio_1d_cnn": audio_1d_cnn,
    "keras_attention": attention_block,
    "keras_upsampling": upsampling,
    "keras_prelu_pad": prelu_pad_net,
}


def convert(model: keras.Model, interface: str, activations: str = "int8", batch: int | None = 1) -> bytes:
    """`batch`: the batch size the model is traced with, as MCU deployments fix it (TFLite Micro
    has static shapes); None keeps Keras' dynamic batch, whose SHAPE → STRIDED_SLICE → PACK
    chains the converter then leaves in front of every RESHAPE and attention head."""
    shape = (1, *model.input_shape[1:])
    rng = np.random.default_rng(0)

    def representative():
        for _ in range(32):
            yield [rng.uniform(-1.0, 1.0, shape).astype(np.float32)]

    if batch is not None:
        fixed = keras.models.clone_model(model, input_tensors=keras.Input(batch_shape=(batch, *model.input_shape[1:])))
        fixed.set_weights(model.get_weights())
        model = fixed
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = representative
    ops = tf.lite.OpsSet
    int16x8 = ops.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8
    converter.target_spec.supported_ops = [int16x8 if activations == "int16" else ops.TFLITE_BUILTINS_INT8]
    if interface != "float":
        converter.inference_input_type = tf.int16 if activations == "int16" else tf.int8
        converter.inference_output_type = converter.inference_input_type
    return converter.convert()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    keras.utils.set_random_seed(0)
    variants = {name: (make, "int8", "int8", 1) for name, make in MODELS.items()}
    variants["keras_mobilenet_v2_float_io"] = (mobilenet_v2, "float", "int8", 1)
    variants["keras_resnet_skips_16x8"] = (resnet_skips, "int16", "int16", 1)
    variants["keras_efficientnet_like_16x8"] = (efficientnet_like, "int16", "int16", 1)
    variants["keras_mobilenet_v1_dynamic_batch"] = (mobilenet_v1, "int8", "int8", None)
    variants["keras_attention_dynamic_batch"] = (attention_block, "int8", "int8", None)
    for name, (make, interface, activations, batch) in variants.items():
        target = args.out / name / f"{name}.tflite"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(convert(make(), interface, activations, batch))
        print(f"{target} ({target.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
