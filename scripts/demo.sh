#!/usr/bin/env bash
# Sets up, then does the main job. With a CUDA GPU and a script: diagnose that script.
# Without one: analyze the real captures that ship with the project (recorded on H200s).
#   bash scripts/demo.sh                      # analyze the shipped captures
#   bash scripts/demo.sh train.py --bs 64     # on a GPU machine: run and diagnose train.py
# The script runs from the folder you called this from, in your interpreter: VRAMLENS_PYTHON if set,
# else the `python3` (or `python`) first on your PATH, e.g. your activated venv or conda env:
#   VRAMLENS_PYTHON=~/envs/torch/bin/python bash path/to/vramlens/scripts/demo.sh train.py
set -euo pipefail
caller_dir="$PWD"
repo="$(cd "$(dirname "$0")/.." && pwd)"
# Chosen before setup, whose venv must not stand in for the user's own (it lacks their libraries).
user_python="${VRAMLENS_PYTHON:-$(command -v python3 || command -v python || true)}"
(cd "$repo" && bash scripts/setup.sh)
vramlens="$repo/.venv/bin/vramlens"
if [ $# -gt 0 ]; then
  if [ -z "$user_python" ]; then
    echo "demo.sh: no python3 on PATH: set VRAMLENS_PYTHON to the interpreter that has torch" >&2
    exit 2
  fi
  echo "demo.sh: running $1 with $user_python (set VRAMLENS_PYTHON to choose another interpreter)" >&2
  cd "$caller_dir"
  exec "$vramlens" run --python "$user_python" --analyze "$@"
fi
cd "$repo"
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
