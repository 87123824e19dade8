#!/usr/bin/env bash
# Creates .venv with VRAM Lens and its test tools. Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
if ! .venv/bin/python -c "import vramlens, pygls, pytest_lsp, ipykernel, jupyter_client, nbformat" 2>/dev/null; then
  .venv/bin/pip install --quiet --disable-pip-version-check -e '.[test]'
fi
# The CPU build of torch lets the tests exercise the "no CUDA in this interpreter" path.
# torch is never a dependency of VRAM Lens itself: it lives in the user's interpreter.
if [ "${VRAMLENS_SKIP_TORCH:-0}" != 1 ] && ! .venv/bin/python -c "import torch" 2>/dev/null; then
  .venv/bin/pip install --quiet --disable-pip-version-check torch==2.13.0 \
    || echo "setup: torch (CPU build) could not be installed; the no-CUDA tests will be skipped" >&2
fi
