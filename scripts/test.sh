#!/usr/bin/env bash
# The test command: install, make sure the components are set up, run every test.
# Integration tests use the real TVM, GCC, Spike and QEMU; TFLM tests skip without a TFLM source.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
. .venv/bin/activate
mlonmcu setup
python -m pytest "$@"
