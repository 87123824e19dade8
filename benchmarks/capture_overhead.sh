#!/usr/bin/env bash
# Capture overhead on a GPU-bound training step: bare script vs `vramlens run`, alternated.
#   bash benchmarks/capture_overhead.sh [ROUNDS]
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="$here/server${PYTHONPATH:+:$PYTHONPATH}"
rounds=${1:-3}
tmp=$(mktemp -d)
for round in $(seq "$rounds"); do
  bare=$(python3 "$here/benchmarks/capture_step.py" | awk '/median_step_ms/ {print $2}')
  captured=$(python3 -m vramlens run -o "$tmp/c$round" "$here/benchmarks/capture_step.py" 2>/dev/null | awk '/median_step_ms/ {print $2}')
  echo "round $round: bare ${bare} ms/step, under capture ${captured} ms/step"
done
rm -rf "$tmp"
