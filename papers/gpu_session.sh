#!/usr/bin/env bash
# The whole command of one GPU slot (run from the repository root on the lent machine; `carry` .gpu/):
#   D=480 bash papers/gpu_session.sh
# .gpu/ (git-ignored through .git/info/exclude) holds whl/ (the dvc/dvclive wheels the machine lacks),
# fmnist.tar.gz (data/prepared/fmnist of any paper: the same md5 everywhere) and, to skip FedHydra's training,
# column.tar.gz (an earlier slot's papers/fedhydra outputs). Runs FedHydra's Table 1 servers again on an earlier
# slot's clients beside FedMHO's CNN/CVAE parts and FEDCVAE (papers/<paper>/gpu_slot.sh); returns within D + 60 s:
# - every step is stopped by `timeout -k` at its slot's deadline (a process that ignores SIGTERM is killed);
# - the MPS control daemon's output goes to a file: a daemon that keeps the call's stdout open holds the call until
#   its limit, and a call that ends at its limit brings back nothing (session 16 lost its whole slot that way).
set -u
D=${D:-480}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .gpu/whl/*.whl \
  > /dev/null 2>&1 || { echo "wheels did not install"; exit 1; }
mkdir -p /tmp/bin && printf '#!/bin/sh\nexec %s "$@"\n' "$(command -v python3)" > /tmp/bin/python && chmod +x /tmp/bin/python
export PATH=/tmp/bin:$PATH PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
python -c "import torch, osfl, dvclive, sklearn; print(torch.__version__, torch.cuda.get_device_name())" || exit 1
for p in fedhydra fedmho; do mkdir -p papers/$p/data/prepared && tar xzf .gpu/fmnist.tar.gz -C papers/$p/data/prepared; done
[[ -f .gpu/column.tar.gz ]] && tar xzf .gpu/column.tar.gz -C papers/fedhydra
nvidia-cuda-mps-control -d > "$OUT/mps.txt" 2>&1 < /dev/null && echo "MPS on"
( OUT=$OUT/h SKIP_TRAIN=1 PACK=5 DEADLINE=$D timeout -k 10 $((D + 30)) bash papers/fedhydra/gpu_slot.sh fmnist dir0.5 \
    dense coboost fedhydra feddf fedavg ot fedhydra-literal:server.fedhydra.reading=literal dense-bn0:server.dense.bn=0 \
    fedhydra-ae:server.fedhydra.aggregation=ae > "$OUT/hydra.txt" 2>&1 < /dev/null ) &
# FedMHO: the CNN and CVAE parts and FEDCVAE in one chain; beside it, VGG-9's part for at most $VGG s (a timing probe:
# 5 clients x 200 epochs one by one cannot finish in one slot; its log gives the seconds per epoch)
VGG=${VGG:-150}
( cd papers/fedmho && timeout 60 bash paper_column.sh fmnist dir0.5 partition > /dev/null 2>&1 < /dev/null
  mkdir -p slot-logs/fmnist-dir0.5-s0
  timeout -k 10 "$VGG" bash paper_column.sh fmnist dir0.5 part:vgg9 > slot-logs/fmnist-dir0.5-s0/vgg9-probe.log 2>&1 \
    < /dev/null ) &
sleep 20
OUT=$OUT/m PACK=8 DEADLINE=$D timeout -k 10 $((D + 30)) bash papers/fedmho/gpu_slot.sh fmnist dir0.5 \
    "part:cnn part:cvae_small part:cvae_large fedcvae" > "$OUT/mho.txt" 2>&1 < /dev/null
wait
echo quit | nvidia-cuda-mps-control > /dev/null 2>&1
grep -v "it/s\]\|s/it\]" "$OUT/hydra.txt" "$OUT/mho.txt"
