#!/usr/bin/env bash
# Prepare .gpu/ (git-ignored) for one GPU slot (docs/gpu-slot.md), from the repository root, with pip's registry
# reachable and FedHydra's data prepared (cd papers/fedhydra && dvc repro -s prepare@fmnist):
#   bash papers/gpu_prepare.sh [OUTPUT ...]     e.g. papers/fedhydra/models/paper/fmnist-dir0.5/clients
# 1. .gpu/whl/: dvc's and dvclive's dependency closure (the versions installed in .venv) for CPython 3.12 on x86-64,
#    minus the packages the lent machine already holds (papers/gpu_machine_packages.txt) and cryptography/asyncssh
#    (SSH remotes only); sdist-only packages are built into wheels here;
# 2. .gpu/fmnist.tar.xz: FedHydra's data/prepared/fmnist, the bytes its stages hash;
# 3. .gpu/outs/: each OUTPUT (a landed stage's output the queue reads) at its path, copied into place there.
set -euo pipefail
PY=${PY:-.venv/bin/python}
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
mkdir -p .gpu/whl
"$PY" - papers/gpu_machine_packages.txt > .gpu/closure.txt <<'PY'
import importlib.metadata as md, re, sys
from packaging.requirements import Requirement
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
have = {norm(l.strip()) for l in open(sys.argv[1]) if l.strip() and not l.startswith("#")} | {"cryptography", "asyncssh"}
env = {"extra": "", "python_version": "3.12", "python_full_version": "3.12.3", "sys_platform": "linux",
       "platform_system": "Linux", "os_name": "posix", "platform_machine": "x86_64", "implementation_name": "cpython",
       "platform_python_implementation": "CPython"}
seen, todo = {}, ["dvc", "dvclive"]
while todo:
    name = norm(todo.pop())
    if name in seen or name in have:
        continue
    dist = md.distribution(name)
    seen[name] = dist.version
    todo += [r.name for r in map(Requirement, dist.requires or []) if not r.marker or r.marker.evaluate(env)]
print("\n".join(f"{n}=={v}" for n, v in sorted(seen.items())))
PY
plat=(); for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 \
  manylinux2014_x86_64 manylinux1_x86_64 any; do plat+=(--platform "$p"); done
while read -r req; do  # one at a time: a package with no wheel for 3.12 is built here (pure Python ones)
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp "${plat[@]}" \
    -d .gpu/whl "$req" 2>/dev/null || python3 -m pip wheel -q --no-deps -w .gpu/whl "$req"
done < .gpu/closure.txt
tar cJf .gpu/fmnist.tar.xz -C papers/fedhydra/data/prepared fmnist
for out in "$@"; do mkdir -p ".gpu/outs/$(dirname "$out")" && cp -r "$out" ".gpu/outs/$(dirname "$out")/"; done
echo "$(ls .gpu/whl | wc -l) wheels ($(du -sh .gpu/whl | cut -f1)), data $(du -sh .gpu/fmnist.tar.xz | cut -f1), outs: ${*:-none}"
