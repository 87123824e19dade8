#!/usr/bin/env bash
# Records the walkthrough's sample capture on a CUDA machine, from neutral folders, so that the capture that
# ships in the extension names no path of the machine it was made on:
#   bash scenarios/record_sample.sh OUTDIR      # → OUTDIR/sample/ (becomes tests/fixtures/captures/sample/)
set -u
out=$(mkdir -p "${1:?usage: record_sample.sh OUTDIR}" && cd "$1" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
work=/workspace/sample
mkdir -p "$work" /opt/vramlens
rm -rf /opt/vramlens/server && cp -r "$here/server" /opt/vramlens/server
cp "$here/scenarios/retained_references.py" "$work/"
cd "$work"
PYTHONPATH=/opt/vramlens/server python3 -m vramlens run -o "$out/sample" --max-entries 20000 --memory-limit 3GiB \
  retained_references.py
