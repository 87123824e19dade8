#!/usr/bin/env bash
# Puts the language server into bundled/libs for the .vsix: the vramlens package from server/ and the pinned
# libraries of extension/bundled-requirements.txt, so the user's Python needs only torch.
# Needs a Python with pip (the repository's .venv when present) and the package index.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
rm -rf bundled
mkdir -p bundled/libs
"$python" -m pip install --quiet --disable-pip-version-check --no-compile --no-deps --only-binary=:all: \
  --target bundled/libs -r extension/bundled-requirements.txt
# Metadata folders and the pip-installed scripts are not needed to import the libraries.
rm -rf bundled/libs/bin bundled/libs/example.py  # example.py: nvidia-ml-py ships a demo at top level
cp -r server/vramlens bundled/libs/vramlens
find bundled -name __pycache__ -type d -prune -exec rm -rf {} +
