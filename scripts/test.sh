#!/usr/bin/env bash
# Runs every test: Python (unit, captures, language server), the extension build, and the editor
# end-to-end test in a real VS Code where Debian's chromium is installed (.ci/run installs it).
# GPU tests (marker `gpu`) skip themselves where no CUDA device is present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The real-code lint corpora's published archives (tests/lint/realworld): downloaded once, reused by later runs.
export VRAMLENS_CORPUS_CACHE="${VRAMLENS_CORPUS_CACHE:-$HOME/.cache/vramlens/lint-corpus}"
.venv/bin/python -m pytest -q "$@"
# Builds and checks vramlens.vsix once; the editor test below installs that same file.
bash scripts/test_extension.sh
if [ -x /usr/bin/chromium ]; then
  # Its tools (about 820 MB) go to a per-user cache outside the checkout, reused by later runs.
  VRAMLENS_VSIX=vramlens.vsix bash tests/editor/run_e2e.sh
else
  echo "editor end-to-end test skipped: no /usr/bin/chromium (apt-get install -y chromium libkrb5-dev)"
fi
