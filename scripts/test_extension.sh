#!/usr/bin/env bash
# Builds the VS Code extension from a clean install: type check, unit tests of the client's own logic
# (node --test), bundle, package (.vsix with the bundled language server).
# Needs Node >= 20, the npm registry (npm ci) and the package index (bundled server libraries).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v npm >/dev/null 2>&1; then
  echo "test_extension: npm not found; install Node.js 20 or newer to build the extension" >&2
  exit 1
fi
# npm ci installs exactly package-lock.json, so a passing run here is the build a release gets.
npm ci --no-audit --no-fund --loglevel=error
npm run --silent typecheck
npm run --silent test:unit
npm run --silent package
# The .vsix must carry the server and the report view's script, or the installed extension cannot start.
listing=$(unzip -l vramlens.vsix)
# So must the walkthrough's sample capture and pictures, the extension's own README and the licence notices.
for entry in extension/out/extension.js extension/media/dist/report.js extension/media/report.css \
             extension/bundled/libs/vramlens/__main__.py extension/bundled/libs/pygls/__init__.py \
             extension/media/sample/capture/capture.json extension/media/sample/capture/snapshot.pickle \
             extension/media/sample/retained_references.py extension/media/walkthrough/annotations.png \
             extension/media/walkthrough/report.png extension/media/THIRD_PARTY_NOTICES.md extension/readme.md; do
  grep -q " $entry\$" <<<"$listing" || { echo "test_extension: $entry missing from vramlens.vsix" >&2; exit 1; }
done
# The README's screenshots stay out of the package.
if grep -q "media/screenshots" <<<"$listing"; then
  echo "test_extension: media/screenshots must not be packaged (.vscodeignore)" >&2
  exit 1
fi
