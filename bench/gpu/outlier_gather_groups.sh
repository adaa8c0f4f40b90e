#!/usr/bin/env bash
# How many of PageRank's gathers (64-bit value loads) nvcc issues before an add in
# tuner/measure/kernels.cu's pagerank_outliers (a block's loop over a queued vertex's edges):
# on sm_90 at most 2, as inside a chunk walk (bench/gpu/gather_groups.sh), so the simulator
# times that loop in load groups of 4 (auxiliary_kernels.outlier_kernel). Needs nvcc and
# cuobjdump; run from the repository root on a GPU machine:
#   bash bench/gpu/outlier_gather_groups.sh [ARCH]        (ARCH: default sm_90)
set -euo pipefail
arch=${1:-sm_90}
work=$(mktemp -d)
echo '#include "tuner/measure/kernels.cu"' > "$work/inst.cu"
nvcc -std=c++17 -arch="$arch" -cubin -I. -o "$work/k.cubin" "$work/inst.cu"
cuobjdump -sass "$work/k.cubin" | python3 -c '
import re, sys
for part in re.split(r"\n\s*Function : ", sys.stdin.read())[1:]:
    name = part.split("\n", 1)[0].strip()
    if "pagerank_outliers" not in name:
        continue
    best = run = 0
    runs = []
    for op in re.findall(r"(LDG\.E[.\w]*|DADD)", part):
        if op == "DADD":
            if run:
                runs.append(run)
            run = 0
        elif ".64" in op:
            run += 1
            best = max(best, run)
    print("pagerank_outliers: value loads before an add: at most", best, "; runs", runs)
'
rm -rf "$work"
