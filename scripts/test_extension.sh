#!/usr/bin/env bash
# Builds the VS Code extension from a clean install: type check, bundle, package (.vsix).
# Needs Node >= 20 and the npm registry (npm ci); packaging itself is offline.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v npm >/dev/null 2>&1; then
  echo "test_extension: npm not found; install Node.js 20 or newer to build the extension" >&2
  exit 1
fi
# npm ci installs exactly package-lock.json, so a passing run here is the build a release gets.
npm ci --no-audit --no-fund --loglevel=error
npm run --silent typecheck
npm run --silent build
npm run --silent package
