#!/usr/bin/env bash
# Capture overhead on a GPU-bound training step: bare script, `vramlens run --no-census` and
# `vramlens run` (the census at the end and near the peak included), alternated.
#   bash benchmarks/capture_overhead.sh [ROUNDS] [STEP OPTIONS: --steps N --grow-mib M]
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="$here/server${PYTHONPATH:+:$PYTHONPATH}"
rounds=${1:-3}
shift || true
tmp=$(mktemp -d)
step="$here/benchmarks/capture_step.py"
median() { awk '/median_step_ms/ {print $2}'; }
for round in $(seq "$rounds"); do
  bare=$(python3 "$step" "$@" | median)
  plain=$(python3 -m vramlens run --no-census -o "$tmp/n$round" "$step" "$@" 2>/dev/null | median)
  census=$(python3 -m vramlens run -o "$tmp/c$round" "$step" "$@" 2>/dev/null | median)
  peaks=$(python3 -c "import json,os,sys; p=os.path.join(sys.argv[1],'census-peak.json'); print(json.load(open(p))['peaks_taken'] if os.path.exists(p) else 0)" "$tmp/c$round")
  echo "round $round: bare ${bare} ms/step, --no-census ${plain} ms/step, with the census ${census} ms/step ($peaks peak censuses)"
done
rm -rf "$tmp"
