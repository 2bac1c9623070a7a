#!/usr/bin/env bash
# The test command: install, make sure the components are set up, lint and type-check the
# package, run every test. Integration and fault-injection tests use the real TVM, GCC, Spike and
# QEMU; TFLM tests skip without a TFLM source; the disk-full test needs root (a small tmpfs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
. .venv/bin/activate
mlonmcu setup --create
ruff check .
mypy
python -m pytest "$@"
