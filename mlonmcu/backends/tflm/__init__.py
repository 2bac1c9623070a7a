"""TFLite Micro backend: interpreter firmware around a TFLM library built per target."""
