#!/usr/bin/env bash
# The test command: install, make sure the components are set up, lint and type-check the
# package, run every test (the 15 slowest are listed). Integration and fault-injection tests use
# the real TVM, GCC, Spike and QEMU; TFLM tests skip without a TFLM source (../shared/sources/
# sources.env gives them); the disk-full test needs root (a small tmpfs); the results-store
# tests also run against a throw-away PostgreSQL server, the dashboard test in a headless
# Chromium, the Dask test on a local scheduler with two workers.
set -euo pipefail
cd "$(dirname "$0")/.."
TEST_PACKAGES="postgresql chromium chromium-driver"
if [ "$(id -u)" = 0 ] && ! dpkg -s $TEST_PACKAGES >/dev/null 2>&1; then
  # what only the tests need: a real PostgreSQL for the results store, a headless Chromium for
  # the dashboard (without root these tests skip, saying so)
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends $TEST_PACKAGES >/dev/null
fi
SOURCES=../shared/sources/sources.env
if [ -f "$SOURCES" ]; then
  # the offline snapshots (TFLM, CMSIS-NN, muRISCV-NN, ...): setup installs them and their tests
  # run; with CI set, such a test that skips fails (tests/source_check.py)
  . "$SOURCES"
fi
bash scripts/install.sh
. .venv/bin/activate
mlonmcu setup --create
mlonmcu setup tf2onnx  # on request only (TensorFlow, in a venv of its own): the ONNX conversion tests use it
ruff check .
mypy
python -m pytest --durations=15 "$@"
