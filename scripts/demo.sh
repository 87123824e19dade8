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
# Real libraries (tests/fixtures/realworld): a Trainer's first step, Lightning keeping validation outputs,
# fine-tuning with dynamic padding that fragments — each cause measured by confirming runs.
for workload in hf_trainer_first_step lightning_val_outputs dynamic_padding_fragmentation; do
  echo "================ vramlens analyze tests/fixtures/realworld/$workload/capture"
  "$vramlens" analyze "tests/fixtures/realworld/$workload/capture"
done
echo "================ the diagnosis on the whole real-workload corpus (engine vs measured cause)"
.venv/bin/python benchmarks/realworld_diagnosis.py
echo "================ vramlens analyze tests/fixtures/ranks/two_gpu_nccl/ddp_uneven   (a torchrun launch, two H200s)"
"$vramlens" analyze tests/fixtures/ranks/two_gpu_nccl/ddp_uneven --source-root scenarios
echo "================ vramlens lint scenarios/"
"$vramlens" lint scenarios/ || true
