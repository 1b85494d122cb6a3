#!/usr/bin/env bash
# One Table 1 column at the PAPER profile (the paper's hyper-parameters unchanged): partition, local training and
# every method's server + evaluate for one dataset and split, with the same stage scripts as the quick pipeline,
# under the experiment paper/<dataset>-<split> (run in papers/fedhydra/). Meant for a GPU (auto: batched clients on CUDA).
#   usage: bash paper_column.sh [--skip-train] DATASET SPLIT [METHOD | METHOD-TAG:KEY=VALUE[,KEY=VALUE]...]
# METHOD-TAG:KEY=VALUE runs METHOD with those params overridden, written as METHOD-TAG (e.g.
# fedhydra-ae:server.fedhydra.aggregation=ae).
# --skip-train reuses the clients already in models/paper/<run>/clients (to run the servers in a second
# call, or in parallel processes: the results are the same as one sequential call).
set -euo pipefail
skip_train=0
if [[ "${1:-}" == "--skip-train" ]]; then skip_train=1; shift; fi
[[ $# -ge 2 ]] || { echo "usage: $0 [--skip-train] DATASET SPLIT [METHOD...]" >&2; exit 2; }
ds=$1; split=$2; shift 2
run=paper/$ds-$split
args=(--params params.yaml --data-root data/prepared --experiment "$run"
      --split "$split" --set "dataset=$ds" profile=${PROFILE:-paper} runtime.device=${DEVICE:-cuda})
timed() { local s=$(date +%s.%N); "$@"; echo "[paper_column] $(( $(date +%s) - ${s%.*} )) s: ${*:3:1} ${*: -1}" >&2; }
if [[ $skip_train == 0 ]]; then
  timed python -m osfl.stages.partition "${args[@]}"
  timed python -m osfl.stages.train_clients "${args[@]}"
fi
for spec in "$@"; do
  name=${spec%%:*}; method=${name%%-*}; extra=()
  if [[ "$spec" == *:* ]]; then
    IFS=, read -ra sets <<< "${spec#*:}"
    extra=(--set "${sets[@]}" --tag "${name#*-}")
  fi
  timed python -m osfl.stages.server "${args[@]}" --method "$method" "${extra[@]}"
  timed python -m osfl.stages.evaluate "${args[@]}" --method "$method" "${extra[@]}"
done
# where and how long: the device and seconds of every step, from the stages' runtime records, next to the results
python - "$run" <<'PY'
import json, sys
from pathlib import Path
run = sys.argv[1]
records = Path("results") / run / "runtime"
def info(record):
    d = json.loads(record.read_text())
    return {"seconds": d.get("seconds"), "runtime": d.get("runtime")}
out = {"train": info(records / "clients.json"),
       "servers": {p.stem: info(p) for p in sorted(records.glob("*.json")) if p.stem != "clients"}}
(Path("results") / run / "device.json").write_text(json.dumps(out, indent=2) + "\n")
PY
