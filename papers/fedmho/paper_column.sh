#!/usr/bin/env bash
# Table IV's rows at the PAPER profile (the paper's hyper-parameters unchanged) for one dataset and split, seed
# `seed`: partition, the parts (clients) and every column's server + evaluate, with the same stage scripts as the
# quick grid, under the experiment paper/<dataset>-<split>-s<seed> (run in papers/fedmho/). Meant for a GPU.
#   usage: bash paper_column.sh DATASET SPLIT [STEP...]
# STEP: `partition`, `part:NAME` (a name in `parts`) or a column id (in `columns` or `variants`); none = partition,
# the parts vgg9, cnn, cvae_small, cvae_large, then every Table IV column, one after another. Steps given one per
# process may run in parallel (gpu_slot.sh): each writes only its own files, so the results are those of one
# sequential call. The VGG-9 models (276 MB each) stay on the machine that ran them; the results come back.
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 DATASET SPLIT [STEP...]" >&2; exit 2; }
ds=$1; split=$2; shift 2
seed=$(python -c "import yaml; print(yaml.safe_load(open('params.yaml'))['seed'])")
run=paper/$ds-$split-s$seed
args=(--params params.yaml --data-root data/prepared --experiment "$run" --split "$split"
      --set "dataset=$ds" "seed=$seed" profile=${PROFILE:-paper} runtime.device=${DEVICE:-cuda})
steps=("$@")
if [[ ${#steps[@]} -eq 0 ]]; then
  steps=(partition part:vgg9 part:cnn part:cvae_small part:cvae_large
         $(python -c "import yaml; print(' '.join(c['id'] for c in yaml.safe_load(open('params.yaml'))['columns']))"))
fi
timed() { local s=$(date +%s); "$@"; echo "[paper_column] $(( $(date +%s) - s )) s: $step" >&2; }
for step in "${steps[@]}"; do
  case $step in
    partition) timed python -m osfl.stages.partition "${args[@]}" ;;
    part:*) timed python -m osfl.stages.train_part "${args[@]}" --part "${step#part:}" ;;
    *)
      # the column's method, tag, parts and settings, from params.yaml (columns, then variants)
      read -r method tag parts sets < <(python - "$step" <<'PY'
import sys, yaml
p = yaml.safe_load(open("params.yaml"))
col = next((c for c in p["columns"] + p.get("variants", []) if c["id"] == sys.argv[1]), None)
if col is None:
    sys.exit(f"paper_column.sh: unknown step {sys.argv[1]!r}; allowed: partition, part:NAME or a column id")
print(col["method"], col["tag"] or "-", f"{col['first']},{col['second']}", col["set"] or "")
PY
)
      [[ $tag == - ]] && tag=""
      extra=(); [[ -n $sets ]] && read -ra extra <<< "$sets"
      timed python -m osfl.stages.server "${args[@]}" ${extra[@]+"${extra[@]}"} --method "$method" --tag="$tag" \
        --parts "$parts"
      timed python -m osfl.stages.evaluate "${args[@]}" ${extra[@]+"${extra[@]}"} --method "$method" --tag="$tag" ;;
  esac
done
