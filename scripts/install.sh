#!/usr/bin/env bash
# Install mlonmcu (editable, with test tools and the Dask executor) into ./.venv. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[dev,dask]'
echo "mlonmcu installed in $(pwd)/.venv (activate with: . .venv/bin/activate)"
