#!/usr/bin/env bash
# How many of PageRank's gathers (64-bit value loads) nvcc issues before an add, per variant of
# tuner/measure/kernels.cu's pagerank_sweep<W, C, DYN, DEFER, false>: 5-8 where a virtual warp of a
# static launch takes one vertex (the loop's loads grouped), 2-4 inside a chunk walk or a grab
# loop; the simulator's launch_costs.gather_group_size (16 and 4) reads these (docs/fidelity.md,
# "Adopted: PageRank's chunk walks gather in groups of 4"). Needs nvcc and cuobjdump; run from
# the repository root on a GPU machine:
#   bash bench/gpu/gather_groups.sh [ARCH]        (ARCH: default sm_90)
set -euo pipefail
arch=${1:-sm_90}
work=$(mktemp -d)
{
  echo '#include "tuner/measure/kernels.cu"'
  echo '#define INST(W,C,D,F) template __global__ void pagerank_sweep<W,C,D,F,false>(const int*, const int*, const rank_t*, const rank_t*, const rank_t*, rank_t*, rank_t*, rank_t, int, int, int*, int, int*, int);'
  echo 'INST(1,1,false,false) INST(1,1,false,true) INST(2,1,false,false) INST(2,8,false,false)'
  echo 'INST(8,1,false,false) INST(8,1,false,true) INST(8,1,true,false) INST(8,2,false,false)'
  echo 'INST(8,16,false,false) INST(8,16,true,false) INST(32,1,false,false) INST(32,4,false,false)'
} > "$work/inst.cu"
nvcc -std=c++17 -arch="$arch" -cubin -I. -o "$work/k.cubin" "$work/inst.cu"
cuobjdump -sass "$work/k.cubin" | python3 -c '
import re, sys
for part in re.split(r"\n\s*Function : ", sys.stdin.read())[1:]:
    m = re.match(r"_Z14pagerank_sweepILi(\d+)ELi(\d+)ELb(\d)ELb(\d)E", part)
    if not m:
        continue
    best = run = 0
    for op in re.findall(r"(LDG\.E[.\w]*|DADD)", part):
        if op == "DADD":
            run = 0
        elif ".64" in op:
            run += 1
            best = max(best, run)
    print("W=%s C=%s dynamic=%s defer=%s" % m.groups(), "value loads before an add:", best)
' | sort -t= -k2 -n
rm -rf "$work"
