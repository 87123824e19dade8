#!/usr/bin/env bash
# Records the test fixtures on a CUDA machine: one capture per expected cause.
#   bash scenarios/record_fixtures.sh OUTDIR
# Each capture is small on purpose (short runs, bounded history) so it can be committed.
set -u
out=${1:?usage: record_fixtures.sh OUTDIR}
here=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="$here/server${PYTHONPATH:+:$PYTHONPATH}"
vramlens() { python3 -m vramlens "$@"; }
mkdir -p "$out"
cd "$here"
vramlens run -o "$out/working_set" --max-entries 20000 --memory-limit 5GiB scenarios/working_set.py
vramlens run -o "$out/working_set_stacks_all" --stacks all --max-entries 20000 --memory-limit 5GiB scenarios/working_set.py
vramlens run -o "$out/retained_references" --max-entries 20000 --memory-limit 3GiB scenarios/retained_references.py
vramlens run -o "$out/fragmentation" --max-entries 20000 --memory-limit 1600MiB scenarios/fragmentation.py
vramlens run -o "$out/fragmentation_experiment" --max-entries 20000 --memory-limit 1600MiB \
  --try-alloc-conf expandable_segments:True scenarios/fragmentation.py
vramlens run -o "$out/working_set_experiment" --max-entries 20000 --memory-limit 5GiB \
  --try-alloc-conf expandable_segments:True scenarios/working_set.py
vramlens run -o "$out/outside_allocator" --max-entries 20000 scenarios/outside_allocator.py
vramlens run -o "$out/cached_not_leak" --max-entries 20000 scenarios/cached_not_leak.py
vramlens run -o "$out/no_problem" --max-entries 20000 scenarios/no_problem.py
# A raw snapshot dumped by a "server" that knows nothing of vramlens, from a folder of its own.
mkdir -p /srv/app && cp scenarios/server_dump.py /srv/app/server_dump.py
(cd /srv/app && python3 server_dump.py "$out/server_dump.pickle")
python3 -c "import torch; print(torch.cuda.get_device_properties(0).total_memory)" > "$out/server_dump.total_memory"
# Controlled experiments (vramlens experiment): the GPU tests run them and keep each experiment.json.
VRAMLENS_EXPERIMENT_RECORD="$out/experiments" python3 -m pytest tests/gpu/test_experiments.py -m gpu
