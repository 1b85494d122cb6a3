#!/usr/bin/env bash
# The whole command of one GPU slot, run from the repository root on the lent machine (`carry: [".gpu"]`):
#   D=560 PROBE=150 bash papers/gpu_session.sh      (PROBE=0: no packing probe; PACK=6: steps at a time, default 4)
# .gpu/ (git-ignored) holds whl/ (dvc, dvclive and their needs, which the machine lacks), fmnist.tar.xz (FedHydra's
# data/prepared/fmnist, the bytes its stages hash), probe/ (the quick run's clients of fmnist-dir0.5) and, where the
# queue reads outputs landed earlier, outs/ (them at their paths, e.g. papers/fedhydra/models/paper/<run>/clients).
# 1. the packing probe (PROBE seconds at most): FedDF, DENSE and Co-Boosting at the quick profile on those clients,
#    one after another, then the three at once on the card (MPS on): the ratio of the two wall times (issue 41);
# 2. the campaign (campaign.yaml) in what is left of D: paper-profile stages to a deadline, four at a time, each
#    finished stage committed with DVC there and packed into $OUT/campaign.tar.gz (`python -m osfl.campaign land`).
# Every step is stopped at its deadline; the MPS daemon's output goes to a file (a daemon holding the call's stdout
# keeps the call open to its limit, and a call that ends at its limit brings nothing back).
set -u
T0=$(date +%s); D=${D:-540}; PROBE=${PROBE:-150}
left() { echo $(( D - ($(date +%s) - T0) )); }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .gpu/whl/*.whl \
  > "$OUT/pip.txt" 2>&1 || { echo "wheels did not install"; tail -5 "$OUT/pip.txt"; exit 1; }
mkdir -p /tmp/bin && printf '#!/bin/sh\nexec %s "$@"\n' "$(command -v python3)" > /tmp/bin/python && chmod +x /tmp/bin/python
export PATH=/tmp/bin:$PATH PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
python -c "import torch, osfl, dvc.repo, dvclive, sklearn; print(torch.__version__, torch.cuda.get_device_name())" || exit 1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
[[ -d .git ]] || { git init -q && git -c user.email=slot@osfl -c user.name=slot commit -q --allow-empty -m slot; }  # DVC, dvclive: a git work tree with a HEAD
H=papers/fedhydra
mkdir -p $H/data/prepared && tar xJf .gpu/fmnist.tar.xz -C $H/data/prepared || exit 1
[[ -d .gpu/outs ]] && cp -r .gpu/outs/. .  # outputs of landed stages the queue reads, at their paths (the clients)
nvidia-cuda-mps-control -d > "$OUT/mps.txt" 2>&1 < /dev/null && echo "MPS on"
echo "setup: $(( $(date +%s) - T0 )) s"

# 1. the packing probe
( (( PROBE > 0 )) || exit 0  # PROBE=0: no probe, the whole slot for the campaign
  cd $H || exit 1
  for e in probe-seq probe-pack; do
    mkdir -p models/$e data/partitions/$e && cp -r ../../.gpu/probe/clients models/$e/
    cp ../../.gpu/probe/partition.json data/partitions/$e/
  done
  args=(--params params.yaml --data-root data/prepared --split dir0.5 --set dataset=fmnist
        ${PROBE_SET:-profile=quick runtime.device=cuda} --method)
  ps=$(date +%s); p0=$(date +%s.%N)
  rem() { local r=$(( $1 - ($(date +%s) - ps) )); echo $(( r > 5 ? r : 5 )); }
  for m in feddf dense coboost; do
    rem=$(rem $(( PROBE * 2 / 3 )))
    timeout -k 5 $rem python -m osfl.stages.server "${args[@]}" $m --experiment probe-seq > /tmp/probe-seq-$m.log 2>&1
    echo "seq $m rc=$? $(date +%s.%N)"
  done > /tmp/probe.txt
  p1=$(date +%s.%N)
  for m in feddf dense coboost; do
    ( timeout -k 5 "$(rem "$PROBE")" python -m osfl.stages.server "${args[@]}" $m --experiment probe-pack > /tmp/probe-pack-$m.log 2>&1; echo "pack $m rc=$? $(date +%s.%N)" >> /tmp/probe.txt ) &
  done; wait
  p2=$(date +%s.%N)
  python - "$p0" "$p1" "$p2" > "$OUT/probe.json" <<'PY'
import json, sys
from pathlib import Path
p0, p1, p2 = map(float, sys.argv[1:4])
lines = [l.split() for l in Path("/tmp/probe.txt").read_text().splitlines()]
rc = {f"{w[0]} {w[1]}": int(w[2][3:]) for w in lines}
own = {e: {m: json.loads(f.read_text()).get("seconds") for m in ("feddf", "dense", "coboost")
           if (f := Path("results") / e / "runtime" / f"{m}.json").exists()} for e in ("probe-seq", "probe-pack")}
seq, pack = p1 - p0, p2 - p1
ok = all(v == 0 for v in rc.values()) and len(rc) == 6
print(json.dumps({"what": "FedDF, DENSE, Co-Boosting, quick profile, FedHydra's fmnist-dir0.5 quick clients, one after "
                  "another vs three at once (MPS on), one thread each", "sequential_wall_s": round(seq, 1),
                  "packed_wall_s": round(pack, 1), "ratio_sequential_over_packed": round(seq / pack, 2) if ok else None,
                  "exit_codes": rc, "own_seconds": own}, indent=1))
PY
  cat "$OUT/probe.json"
  for m in feddf dense coboost; do tail -2 /tmp/probe-seq-$m.log; done ) 2>&1
echo "probe done at $(( $(date +%s) - T0 )) s"

# 2. the campaign in what is left (KEEP seconds, default 30, kept for packing)
mins=$(python -c "print(max(0.5, ($(left) - ${KEEP:-30}) / 60))")
python -m osfl.campaign run "${QUEUE:-campaign.yaml}" --minutes "$mins" --out /tmp/camp --pack "${PACK:-4}" --max-mib 12 2>&1
cp /tmp/camp/campaign.tar.gz /tmp/camp/campaign.json "$OUT/" 2>/dev/null
tar czf "$OUT/logs.tar.gz" -C /tmp camp/logs $(cd /tmp && ls probe-*.log) 2>/dev/null
echo quit | nvidia-cuda-mps-control > /dev/null 2>&1
echo "done at $(( $(date +%s) - T0 )) s"
