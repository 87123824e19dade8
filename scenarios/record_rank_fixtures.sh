#!/usr/bin/env bash
# Records the multi-rank fixtures on a machine with two CUDA GPUs:
#   bash scenarios/record_rank_fixtures.sh OUTDIR
# ddp_uneven/: one node, two ranks (torchrun --standalone). ddp_two_nodes/: two torchrun launchers on
# this machine as two nodes (one GPU each, c10d rendezvous on 127.0.0.1), each writing its own folder.
set -u
out=${1:?usage: record_rank_fixtures.sh OUTDIR}
here=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="$here/server${PYTHONPATH:+:$PYTHONPATH}"
# NVLink multicast stays off: on a shared host it can take the GPUs out of service.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
vramlens() { python3 -m vramlens "$@"; }
mkdir -p "$out/ddp_two_nodes"
cd "$here"
# NCCL refuses two ranks on one device: with a single GPU both ranks share it over gloo.
gpus=$(python3 -c "import torch; print(torch.cuda.device_count())")
backend=(); [ "$gpus" -ge 2 ] || backend=(--backend gloo)
vramlens run -o "$out/ddp_uneven" --max-entries 20000 --memory-limit 2560MiB --timeout 120 \
  --torchrun --standalone --nproc-per-node 2 scenarios/ddp_uneven.py "${backend[@]}"
for node in 0 1; do
  CUDA_VISIBLE_DEVICES=$((node % gpus)) vramlens run -o "$out/ddp_two_nodes/node$node" --max-entries 20000 \
    --memory-limit 2560MiB --timeout 45 \
    --torchrun --nnodes 2 --node-rank "$node" --nproc-per-node 1 \
    --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:29533 --rdzv-id ddp-two-nodes \
    scenarios/ddp_uneven.py "${backend[@]}" > "$out/ddp_two_nodes/node$node.log" 2>&1 &
done
wait
