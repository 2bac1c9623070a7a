#!/usr/bin/env bash
# From a fresh checkout: install mlonmcu, set up toolchains and simulators, run the main job —
# the bundled int8 models through TVM on the Spike RISC-V simulator, validated — and print the report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
. .venv/bin/activate
mlonmcu setup --create
mlonmcu flow run bundled -b tvmaot -t spike -f validate "$@"
