#!/usr/bin/env bash
# Records the real-workload corpus on a GPU machine in one call (see workloads/README.md):
#   bash workloads/record.sh OUT              # on the GPU machine, from the repository root
#   bash workloads/record.sh OUT --dry-run    # the same orchestration here, on the stand-in torch
# Then: python3 workloads/unpack.py OUT       # → tests/fixtures/realworld/
set -u
here=$(cd "$(dirname "$0")" && pwd)
exec "${PYTHON:-python3}" "$here/record.py" "$@"
