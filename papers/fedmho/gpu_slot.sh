#!/usr/bin/env bash
# One short GPU slot -> Table IV's rows at the paper profile (paper_column.sh), run from the repository root on the
# GPU machine. The steps of a wave run as parallel processes, at most $PACK at a time; waves run one after another
# (`--` separates them); a step may be a chain of steps in one quoted word ("part:cnn fedavg_vote"), run one after
# another in its process (logged under its first step's name); nothing starts after $DEADLINE seconds from the
# start, and what runs then is stopped. Each step writes only its own files, so the results are those of one
# sequential call. Packs results/paper/<run> and the logs (one per step, spans.txt: step, exit code, start, end)
# into $OUT/fedmho.tar.gz; the models stay there.
#   usage: bash papers/fedmho/gpu_slot.sh DATASET SPLIT STEP... [-- STEP...]...   (env: PACK=8 DEADLINE=530 OUT=/tmp/out)
#   e.g.   ... fmnist dir0.5 partition -- part:vgg9 part:cnn part:cvae_small part:cvae_large -- fedavg_vote fedmho ...
set -u
t0=$(date +%s)
ds=$1; split=$2; shift 2
PACK=${PACK:-8}; DEADLINE=${DEADLINE:-530}; OUT=${OUT:-/tmp/out}
cd papers/fedmho
seed=$(python -c "import yaml; print(yaml.safe_load(open('params.yaml'))['seed'])")
run=$ds-$split-s$seed; logs=slot-logs/$run
mkdir -p "$OUT" "$logs"
export PYTHONUNBUFFERED=1 logs DEADLINE t0 ds split
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > "$logs/gpu.txt" 2>&1
wave() {
  printf '%s\n' "$@" | xargs -P "$PACK" -I{} bash -c '
    step="$1"; name=${step%% *}; name=${name#part:}; start=$(date +%s); rem=$(( DEADLINE - (start - t0) ))
    if (( rem > 5 )); then timeout -k 10 "$rem" bash paper_column.sh "$ds" "$split" $step > "$logs/$name.log" 2>&1; rc=$?
    else rc=124; fi
    echo "${step// /+} $rc $start $(date +%s)" >> "$logs/spans.txt"' _ {}
}
steps=()
for a in "$@" --; do
  if [[ $a == -- ]]; then (( ${#steps[@]} )) && wave "${steps[@]}"; steps=()
  else steps+=("$a"); fi
done
cat "$logs/spans.txt"
tar czf "$OUT/fedmho.tar.gz" "results/paper/$run" "$logs" "data/partitions/paper/$run" 2>/dev/null
ls -la "$OUT"
