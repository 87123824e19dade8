#!/usr/bin/env bash
# Runs every test. GPU tests (marker `gpu`) skip themselves where no CUDA device is present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m pytest -q "$@"
bash scripts/test_extension.sh
