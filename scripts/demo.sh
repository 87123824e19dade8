#!/usr/bin/env bash
# Sets up, then does the main job. With a CUDA GPU and a script: diagnose that script.
# Without one: analyze the real captures that ship with the project (recorded on H200s).
#   bash scripts/demo.sh                      # analyze the shipped captures
#   bash scripts/demo.sh train.py --bs 64     # on a GPU machine: run and diagnose train.py
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
vramlens=.venv/bin/vramlens
if [ $# -gt 0 ]; then
  exec "$vramlens" run --analyze "$@"
fi
for capture in fragmentation working_set retained_references; do
  echo "================ vramlens analyze tests/fixtures/captures/$capture"
  "$vramlens" analyze "tests/fixtures/captures/$capture" --source-root scenarios
done
echo "================ vramlens analyze tests/fixtures/ranks/two_gpu_nccl/ddp_uneven   (a torchrun launch, two H200s)"
"$vramlens" analyze tests/fixtures/ranks/two_gpu_nccl/ddp_uneven --source-root scenarios
echo "================ vramlens lint scenarios/"
"$vramlens" lint scenarios/ || true
