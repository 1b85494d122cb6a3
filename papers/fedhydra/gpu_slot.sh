#!/usr/bin/env bash
# One short GPU slot -> paper_column@<dataset>-<split> (run from the repository root on the GPU machine).
# Trains the clients once (paper_column.sh DATASET SPLIT), then runs the column's servers as parallel
# `paper_column.sh --skip-train` processes, at most $PACK at a time in the order given (each writes only its own
# method's files; the results are those of one sequential call), stops what is unfinished at $DEADLINE seconds after
# the start, and packs the stage's outputs, the logs and a timing summary into $OUT/column.tar.gz. Back home, unpack
# it in papers/fedhydra and record the stage with `dvc commit paper_column@<run>` (its cmd naming the methods that
# finished). Prints the packing measurement: the servers' wall time against the sum of their own seconds.
#   usage: bash papers/fedhydra/gpu_slot.sh DATASET SPLIT METHOD...   (env: PACK=4 DEADLINE=530 OUT=/tmp/out)
# SKIP_TRAIN=1 skips the training (the clients and partition of an earlier slot unpacked in papers/fedhydra).
set -u
t0=$(date +%s)
ds=$1; split=$2; shift 2
PACK=${PACK:-4}; DEADLINE=${DEADLINE:-530}; OUT=${OUT:-/tmp/out}
root=$PWD; run=$ds-$split; logs=$root/papers/fedhydra/slot-logs/$run
mkdir -p "$OUT" "$logs"
export PYTHONUNBUFFERED=1
left() { echo $(( DEADLINE - ($(date +%s) - t0) )); }
pack() {
  cd "$root/papers/fedhydra" || return
  python - "$run" "$logs" > "$logs/summary.txt" <<'PY'
import json, sys
from pathlib import Path
run, logs = sys.argv[1], Path(sys.argv[2])
spans = {}
for line in (logs / "spans.txt").read_text().splitlines() if (logs / "spans.txt").exists() else []:
    name, rc, start, end = line.split()
    spans[name] = (int(rc), int(start), int(end))
own = {}
for rec in sorted((Path("results/paper") / run / "runtime").glob("*.json")):
    own[rec.stem] = json.loads(rec.read_text()).get("seconds")
print("train seconds (own record):", own.get("clients"))
done = {n: s for n, s in spans.items() if s[0] == 0}
for name, (rc, start, end) in spans.items():
    print(f"{name}: rc {rc}, wall {end - start} s, own seconds {own.get(name)}")
if done:
    wall = max(s[2] for s in done.values()) - min(s[1] for s in done.values())
    total = sum(own.get(n) or 0 for n in done)
    print(f"servers finished: {len(done)}; packed wall {wall} s; sum of their own seconds {total:.1f} s")
PY
  cat "$logs/summary.txt"
  tar czf "$OUT/column.tar.gz" "data/partitions/paper/$run" "models/paper/$run" "results/paper/$run" \
    "slot-logs/$run" 2>/dev/null
  ls -la "$OUT"
}
cd papers/fedhydra
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > "$logs/gpu.txt" 2>&1
if [[ ${SKIP_TRAIN:-0} != 1 ]] && ! timeout -k 10 "$(left)" bash paper_column.sh "$ds" "$split" > "$logs/train.log" 2>&1; then
  echo "training failed or ran out of time"; tail -20 "$logs/train.log"; pack; exit 1
fi
export logs DEADLINE t0 ds split
printf '%s\n' "$@" | xargs -P "$PACK" -I{} bash -c '
  spec="$1"; name=${spec%%:*}; start=$(date +%s); rem=$(( DEADLINE - (start - t0) ))
  if (( rem > 5 )); then timeout -k 10 "$rem" bash paper_column.sh --skip-train "$ds" "$split" "$spec" \
       > "$logs/$name.log" 2>&1; rc=$?; else rc=124; fi
  echo "$name $rc $start $(date +%s)" >> "$logs/spans.txt"' _ {}
bash paper_column.sh --skip-train "$ds" "$split" > /dev/null 2>&1   # device.json from every record present
pack
