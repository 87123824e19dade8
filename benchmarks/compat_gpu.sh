#!/usr/bin/env bash
# Everything the compatibility work measures on a CUDA machine, in parallel lanes, in one call:
#   bash benchmarks/compat_gpu.sh OUT [matrix|mechanism|resnet|large|timing]…   (default: all but timing)
# Programs run from neutral folders (/workspace/…, VRAM Lens from /opt/vramlens/server) so no capture
# names this repository. Results: OUT/*.txt, OUT/*.json, OUT/captures.tar.xz (small captures only).
set -u -o pipefail
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
out=$(mkdir -p "$1" && cd "$1" && pwd); shift
lanes=${*:-matrix mechanism resnet large}
repo=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
mkdir -p /opt/vramlens /workspace/compat /workspace/resnet /workspace/large
cp -r "$repo/server" /opt/vramlens/ && cp "$repo"/workloads/compat/*.py /workspace/compat/
mkdir -p /workspace/bench/benchmarks /workspace/bench/workloads && cp "$repo"/benchmarks/compat_*.py /workspace/bench/benchmarks/
ln -sfn /workspace/compat /workspace/bench/workloads/compat
cp /workspace/compat/resnet50_oom.py /workspace/resnet/
export PYTHONPATH=/opt/vramlens/server VRAMLENS_SERVER=/opt/vramlens/server
vl() { "$PY" -m vramlens "$@"; }

lane_mechanism() {
  m=/workspace/bench/benchmarks/compat_checkpoint_mechanism.py
  ( echo "-- transformers BERT-large, gradient_checkpointing_enable(), bf16 autocast"; "$PY" $m /workspace/compat/hf_bert_gc.py ) > /tmp/mech1 2>&1 &
  ( echo "-- minimal torch.utils.checkpoint loop"; "$PY" $m /workspace/compat/checkpoint_loop.py ) > /tmp/mech2 2>&1 &
  ( echo "-- the same loop, each checkpointed function keeping a temporary in a local (freed as its frame unwinds)"
    "$PY" $m /workspace/compat/checkpoint_loop.py --temporary ) > /tmp/mech3 2>&1 &
  wait; cat /tmp/mech1 /tmp/mech2 /tmp/mech3
}

lane_matrix() { "$PY" /workspace/bench/benchmarks/compat_matrix.py --lanes 5 ${MATRIX_ONLY:+--only "$MATRIX_ONLY"} --json /tmp/matrix.json; }

lane_timing() { "$PY" /workspace/bench/benchmarks/compat_matrix.py --no-compare --timing-repeats ${TIMING_REPEATS:-1} ${TIMING_ONLY:+--timing-only "$TIMING_ONLY"} --json /tmp/timing.json; cat /tmp/timing.json; }

lane_resnet() {
  cd /workspace/resnet || return 1
  read -r _ forward _ peak < <("$PY" resnet50_oom.py --measure --steps 2 --batch-size 64 | grep after_forward)
  echo "batch 64: after forward (highest) $forward, peak allocated $peak"
  # Caps from just under the forward's end to above the peak, in parallel: each run its own process and cap.
  low=$(( forward / 1048576 - 24 )); high=$(( peak / 1048576 + 96 ))
  for step in 0 1 2 3 4 5 6 7 8 9 10 11; do
    cap=$(( low + (high - low) * step / 11 ))
    ( "$PY" -m vramlens run -o /workspace/resnet/cap$cap --memory-limit ${cap}MiB resnet50_oom.py --batch-size 64 > /workspace/resnet/log$cap 2>&1 ) &
  done
  wait
  "$PY" - <<'PYEOF'
import glob, json, os, shutil
best = probes = None
for folder in sorted(glob.glob("/workspace/resnet/cap*"), key=lambda f: -int(f[len("/workspace/resnet/cap"):])):
    m = json.load(open(folder + "/capture.json")); oom = m.get("oom") or {}
    text = (m.get("exception") or {}).get("traceback") or ""
    where = "backward" if "loss.backward()" in text else ("forward" if text else "")
    print(os.path.basename(folder), m["status"], where, "ooms", oom.get("count"), "caught below python", oom.get("caught_below_python"),
          "census", m.get("census"), m.get("notes"))
    if m["status"] == "oom" and where == "backward" and best is None:
        best = folder
    if m["status"] == "completed" and oom.get("count") and probes is None:
        probes = folder
for name, folder in (("backward_oom", best), ("probes_only", probes)):
    if folder:
        shutil.copytree(folder, "/workspace/resnet/" + name)
        print(name, "=", folder)
PYEOF
  for name in backward_oom probes_only; do
    [ -d /workspace/resnet/$name ] || continue
    echo "== $name"; vl analyze /workspace/resnet/$name
    vl analyze --json /workspace/resnet/$name > /workspace/resnet/$name/analysis.json
  done
  tar -C /workspace/resnet -cJf "$out/resnet_captures.tar.xz" $(cd /workspace/resnet && ls -d backward_oom probes_only 2>/dev/null)
}

lane_pytest() { cd "$repo" && PYTHONPATH= "$PY" -m pytest -q -p no:cacheprovider -c /dev/null --rootdir . tests/gpu/test_compat.py; }

lane_large() {
  cd /workspace/large || return 1
  # The worst case for the loader: a stack at every entry (--free-stacks), deep Python stacks.
  time timeout 200 "$PY" -m vramlens run -o /workspace/large/deep150k_frees --free-stacks --max-entries 150000 /workspace/compat/many_allocations.py --steps 2000 --depth 60; echo "exit $?"
  time timeout 200 "$PY" -m vramlens run -o /workspace/large/deep150k --max-entries 150000 /workspace/compat/many_allocations.py --steps 2000 --depth 60; echo "exit $?"
  time timeout 300 "$PY" -m vramlens run -o /workspace/large/all1m_frees --stacks all --free-stacks --max-entries 1000000 /workspace/compat/many_allocations.py --steps 14000 --depth 10; echo "exit $?"
  ls -la /workspace/large/*/snapshot.pickle
  "$PY" /workspace/bench/benchmarks/compat_load_memory.py /workspace/large/deep150k_frees /workspace/large/deep150k /workspace/large/all1m_frees
  for cap in deep150k_frees deep150k all1m_frees; do
    echo "-- analyze $cap"
    "$PY" -c 'import resource, subprocess, sys, time
t = time.perf_counter(); r = subprocess.run([sys.executable, "-m", "vramlens", "analyze", sys.argv[1]], capture_output=True, text=True)
print("\n".join(r.stdout.splitlines()[:3]), r.stderr[-400:], sep="\n")
print(f"exit {r.returncode}, {time.perf_counter() - t:.1f} s, peak RSS {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.0f} MiB")' /workspace/large/$cap
  done
}

# Lanes run side by side; "timing" waits for the others and runs alone (step times need an idle GPU).
for lane in $lanes; do
  [ "$lane" = timing ] && continue
  ( "lane_$lane" > "$out/$lane.txt" 2>&1 ) &
done
wait
case " $lanes " in *" timing "*) lane_timing > "$out/timing.txt" 2>&1 ;; esac
ls -la "$out"
